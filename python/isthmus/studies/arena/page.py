"""The arena's standings as files: Parquet for SQL (`isthmus query` or DuckDB), and one
self-contained HTML page with a heat map of scheme x workload per objective and group,
each cell's number, interval and verdict on hover, and on a click its runs (every
seed's figures, and the scenario that runs the cell alone), written from stored results
without re-running anything (`isthmus reproduce arena --from FOLDER --figures DIR`)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import numpy as np

from isthmus.report_interactive import figure_div
from isthmus.studies.arena.objectives import OBJECTIVES


def write_parquet(rows: list[dict], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {key: [row[key] for row in rows] for key in rows[0]} if rows else {}
    pq.write_table(pa.table(columns), path)
    return path


def _relative(values: list[float], lower_is_better: bool) -> list[float]:
    """Each value's shortfall from its column's best, as a fraction of the best (0: the
    best, 1: twice as bad or worse), for colour: near-equal values look alike."""
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return [float("nan")] * len(values)
    best = min(finite) if lower_is_better else max(finite)

    def shortfall(v: float) -> float:
        if not np.isfinite(v):
            return float("nan")
        gap = v - best if lower_is_better else best - v
        return min(1.0, gap / abs(best)) if best else (0.0 if gap == 0 else 1.0)

    return [shortfall(v) for v in values]


# Fills the panel under a heat map with the clicked cell's runs, from RUNS (the page's
# own data: no server, no re-run).
_CLICK_THROUGH = """
const RUNS = %s;
const OBJECTIVES = %s;
function esc(t) {
  return String(t).replace(/[&<>]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"})[c]);
}
function showRuns(panel, scheme, variant) {
  const cell = (RUNS[variant] || {})[scheme];
  if (!cell) { panel.innerHTML = ""; return; }
  let html = "<h3>" + esc(scheme) + " on " + esc(variant) + "</h3>";
  if (cell.refused) html += "<p>cannot run: " + esc(cell.refused) + "</p>";
  if (cell.seeds.length) {
    html += "<table border='1' cellpadding='3'><tr><th>objective</th>";
    for (const seed of cell.seeds) html += "<th>seed " + seed + "</th>";
    html += "</tr>";
    for (const [key, label] of OBJECTIVES) {
      html += "<tr><td>" + esc(label) + "</td>";
      for (const v of cell.values[key]) html += "<td>" + (v === null ? "" : v) + "</td>";
      html += "</tr>";
    }
    html += "</table>";
  }
  if (cell.scenario) {
    html += "<details><summary>the scenario that runs this cell alone: save it as " +
      "cell.toml, then isthmus run cell.toml --seed N</summary><pre>" +
      esc(cell.scenario) + "</pre></details>";
  } else if (cell.how) {
    html += "<p>" + esc(cell.how) + "</p>";
  }
  panel.innerHTML = html;
}
document.querySelectorAll(".plotly-graph-div").forEach(function (div) {
  const panel = document.createElement("div");
  div.parentNode.insertBefore(panel, div.nextSibling);
  div.on("plotly_click", function (event) {
    const point = event.points[0];
    showRuns(panel, point.y, point.x);
  });
});
"""


def _runs(records: list[dict], scenarios: dict[tuple[str, str], str | None]) -> dict:
    """variant -> scheme -> that cell's runs: seeds, each objective's value per seed,
    why it could not run, and its scenario (None: a learned scheme, attached from
    Python after its training)."""
    out: dict[str, dict[str, dict]] = {}
    for record in records:
        variant, scheme, result = record["variant"], record["scheme"], record["result"]
        cell = out.setdefault(variant, {}).setdefault(
            scheme,
            {"seeds": [], "values": {o.key: [] for o in OBJECTIVES}, "refused": ""},
        )
        if "refused" in result:
            cell["refused"] = result["refused"]
            continue
        cell["seeds"].append(record["seed"])
        for objective in OBJECTIVES:
            value = result.get(objective.key)
            finite = value is not None and np.isfinite(value)
            cell["values"][objective.key].append(
                round(float(value), objective.digits + 2) if finite else None
            )
    for (variant, scheme), text in scenarios.items():
        if variant in out and scheme in out[variant]:
            if text is None:
                out[variant][scheme]["how"] = (
                    f"{scheme} is learned: what it learned is attached from Python after "
                    "its training job (isthmus.studies.arena.learned)"
                )
            else:
                out[variant][scheme]["scenario"] = text
    return out


def write_page(
    rows: list[dict],
    path: Path,
    records: list[dict] = (),
    scenarios: dict[tuple[str, str], str | None] | None = None,
) -> Path:
    """The page: one heat map per objective and group, and under each the runs of the
    cell last clicked (`records`: the cells' job records; `scenarios`: (variant,
    scheme) -> the scenario that runs that cell alone)."""
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    parts = []
    for objective in OBJECTIVES:
        key, label = objective.key, objective.label
        lower, digits = objective.lower_is_better, objective.digits
        for group in dict.fromkeys(r["group"] for r in rows):
            chosen = [r for r in rows if r["objective"] == key and r["group"] == group]
            variants = list(dict.fromkeys(r["variant"] for r in chosen))
            schemes = list(dict.fromkeys(r["scheme"] for r in chosen))
            at = {(r["scheme"], r["variant"]): r for r in chosen}
            means = {
                v: [at[(s, v)]["mean"] if (s, v) in at else np.nan for s in schemes]
                for v in variants
            }
            shortfalls = {v: _relative(column, lower) for v, column in means.items()}
            colour = [[shortfalls[v][i] for v in variants] for i in range(len(schemes))]
            text, hover = [], []
            for i, scheme in enumerate(schemes):
                line_text, line_hover = [], []
                for variant in variants:
                    mean, row = means[variant][i], at.get((scheme, variant))
                    if row is None or row["refused"]:
                        line_text.append("cannot run" if row else "")
                        line_hover.append(escape(row["refused"]) if row else "")
                        continue
                    if not np.isfinite(mean):
                        line_text.append("n/a")
                        line_hover.append("no such flows in this workload")
                        continue
                    star = " *" if row["winner"] else ""
                    line_text.append(f"{mean:.{digits}f}{star}")
                    verdict = {True: "winner", False: "beaten", None: "no verdict"}[row["winner"]]
                    spread = row["half_width"]
                    interval = f" ± {spread:.{digits}f}" if np.isfinite(spread) else ""
                    line_hover.append(
                        f"{mean:.{digits}f}{interval} over {row['seeds']} seeds: {verdict}"
                    )
                text.append(line_text)
                hover.append(line_hover)
            figure = go.Figure(
                go.Heatmap(
                    z=colour,
                    x=variants,
                    y=schemes,
                    text=text,
                    texttemplate="%{text}",
                    customdata=hover,
                    hovertemplate="%{y} on %{x}<br>%{customdata}<extra></extra>",
                    colorscale="RdYlGn_r",
                    zmin=0,
                    zmax=1,
                    showscale=False,
                )
            )
            figure.update_layout(
                title=f"{label} ({'lower' if lower else 'higher'} is better): {group}",
                height=120 + 40 * len(schemes),
                margin={"l": 140, "r": 20, "t": 60, "b": 120},
            )
            parts.append(figure_div(figure))
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Isthmus arena</title>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        "<h1>Isthmus arena</h1><p>Each heat map compares one group's schemes on one "
        "objective: green is the best of the workload's column, red twice as bad or worse; "
        "* marks the "
        "schemes no other beats beyond the 95 % interval of the difference (ties are "
        "ties). Hover for the interval and the verdict, click for the cell's runs (every "
        "seed, and the scenario that runs it alone); the same table is arena.parquet."
        "</p>"
        + "".join(parts)
        + "<script type='text/javascript'>"
        + _CLICK_THROUGH
        % (
            _script_json(_runs(list(records), scenarios or {})),
            _script_json([[o.key, o.label] for o in OBJECTIVES]),
        )
        + "</script></body></html>"
    )
    path.write_text(page)
    return path


def _script_json(value: object) -> str:
    """JSON safe inside a <script> element (no "</" can close it)."""
    return json.dumps(value).replace("</", "<\\/")


def write_markdown(rows: list[dict], path: Path) -> Path:
    """The standings as Markdown, one table per group and objective: workloads down,
    schemes across, each cell the mean over seeds, in bold where the scheme is among
    the winners (docs/arena.md carries it)."""
    lines = []
    for group in dict.fromkeys(r["group"] for r in rows):
        lines += [f"### {group}", ""]
        for objective in OBJECTIVES:
            chosen = [r for r in rows if r["group"] == group and r["objective"] == objective.key]
            variants = list(dict.fromkeys(r["variant"] for r in chosen))
            schemes = list(dict.fromkeys(r["scheme"] for r in chosen))
            at = {(r["scheme"], r["variant"]): r for r in chosen}
            better = "lower" if objective.lower_is_better else "higher"
            lines += [f"{objective.label} ({better} is better)", ""]
            lines.append("| workload / fabric | " + " | ".join(schemes) + " |")
            lines.append("| --- |" + " --- |" * len(schemes))
            for variant in variants:
                cells = [_markdown_cell(at.get((s, variant)), objective.digits) for s in schemes]
                lines.append(f"| {variant} | " + " | ".join(cells) + " |")
            lines.append("")
    path.write_text("\n".join(lines))
    return path


def _markdown_cell(row: dict | None, digits: int) -> str:
    if row is None:
        return ""
    if row["refused"]:
        return "cannot run"
    if not np.isfinite(row["mean"]):
        return "n/a"
    text = f"{row['mean']:.{digits}f}"
    return f"**{text}**" if row["winner"] else text
