"""HTML reports of run folders: one self-contained page that opens with interactive
plots (`isthmus.report_interactive`) and keeps the static ones (embedded as PNG data,
and written beside it for papers).

Plots, each with one line or bar group per run:
- slowdown by flow-size bucket (mean and p99);
- FCT CDFs (log scale);
- throughput over time: bytes leaving switch ports per sample interval, summed;
- queue over time: the longest switch queue at each sample;
- queue length distribution: the CDF of every sampled switch-port queue;
- per-port utilization heat map: switch ports × time (each run's own panel), or one
  row of whole-run utilization when the run has no time series.

With several runs the page opens with a side-by-side table of their headline figures.
"""

from __future__ import annotations

import base64
import html
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display, and the same output everywhere

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from isthmus.inputs import shortened, shown_path  # noqa: E402
from isthmus.metrics import BUCKETS  # noqa: E402
from isthmus.report_interactive import section as interactive_section  # noqa: E402
from isthmus.run_files import (  # noqa: E402
    NUMBERS,
    SUMMARY,
    TEXT,
    TRUTH_VALUES,
    WHOLE_NUMBERS,
    is_run_folder,
    json_kind,
    number,
    read_summary,
    read_table,
    table_path,
)
from isthmus.units import PS_PER_SECOND  # noqa: E402

HEADLINES = (
    ("flows", "flows"),
    ("flows_finished", "finished"),
    ("mean_fct_us", "mean FCT (us)"),
    ("slowdown.all.p50", "slowdown p50"),
    ("slowdown.all.p99", "slowdown p99"),
    ("slowdown.all.p999", "slowdown p99.9"),
    ("packets_dropped", "drops"),
    ("ecn_marks", "ECN marks"),
    ("max_link_utilization", "max link utilization"),
    ("bisection_fraction", "fraction of bisection"),
    ("timeouts", "timeouts"),
    ("wall_s", "wall s"),
)


FLOW_COLUMNS = {
    "flow_id": WHOLE_NUMBERS,
    "size_bytes": NUMBERS,
    "fct_ps": NUMBERS,
    "slowdown": NUMBERS,
    "datagram": TRUTH_VALUES,
}
PORT_COLUMNS = {
    "node_name": TEXT,
    "peer_name": TEXT,
    "role": TEXT,
    "rate_bps": NUMBERS,
    "utilization": NUMBERS,
}
SERIES_COLUMNS = {
    "time_ps": WHOLE_NUMBERS,
    "port_index": WHOLE_NUMBERS,
    "tx_bytes": NUMBERS,
    "queue_packets": NUMBERS,
}


class Run:
    """One run folder's tables, read once and checked: what the plots need is there, of
    the right kind (`isthmus.run_files`)."""

    def __init__(self, folder: Path) -> None:
        folder = Path(folder)
        if not is_run_folder(folder):
            raise ValueError(
                f"{shown_path(folder)} is not a run folder (no summary.json); give run folders"
            )
        self.name = folder.name
        self.summary = read_summary(folder)
        self.where = f"run summary {shown_path(folder / SUMMARY)}"
        self.slowdowns = _slowdowns(self.summary, self.where)
        self.flows = read_table(folder, "flows", FLOW_COLUMNS).to_pydict()
        self.ports = read_table(folder, "ports", PORT_COLUMNS).to_pydict()
        self.series = None
        if os.path.lexists(folder / "timeseries.parquet"):
            series = read_table(folder, "timeseries", SERIES_COLUMNS).to_pydict()
            self._check_series(series, table_path(folder, "timeseries"))
            # Rates need two samples: with fewer there is nothing to plot over time.
            if len(set(series["time_ps"])) >= 2:
                self.series = series

    def _check_series(self, series: dict[str, list], path: Path) -> None:
        """Every sample names a port of ports.parquet, and the samples make a grid of
        times by ports (what `series_matrix` lays out) no larger than the table."""
        ports = len(self.ports["role"])
        indices = series["port_index"]  # Python integers: any width, compared exactly
        if indices and (min(indices) < 0 or max(indices) >= ports):
            raise ValueError(
                f"run table {shown_path(path)}: port_index runs from {min(indices)} to "
                f"{max(indices)}, but ports.parquet has ports 0 to {ports - 1}"
            )
        times = len(set(series["time_ps"]))
        if times * ports > len(indices):
            raise ValueError(
                f"run table {shown_path(path)}: {len(indices)} rows do not hold each of the "
                f"{ports} ports at each of its {times} sample times"
            )

    def headline(self, dotted: str) -> object:
        value: object = self.summary
        for key in dotted.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def switch_ports(self) -> np.ndarray:
        """Which egress ports belong to switches (every role but "host")."""
        return np.array([r != "host" for r in self.ports["role"]], dtype=bool)

    def switch_series(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sample times in ms, Gbit/s leaving switch ports over each interval ending at
        times[1:], the longest switch queue in packets at each time)."""
        switch = self.switch_ports()
        t, tx = self.series_matrix("tx_bytes")
        rate = np.diff(tx[:, switch].sum(axis=1)) * 8 / np.diff(t) / 1e9
        _, q = self.series_matrix("queue_packets")
        return t * 1e3, rate, q[:, switch].max(axis=1, initial=0)

    def series_matrix(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(sample times in s, samples × ports) of a time-series column."""
        assert self.series is not None
        times = np.asarray(self.series["time_ps"])
        ports = np.asarray(self.series["port_index"], dtype=np.int64)
        values = np.asarray(self.series[column], dtype=np.float64)
        stamps = np.unique(times)
        matrix = np.zeros((len(stamps), len(self.ports["role"])))
        matrix[np.searchsorted(stamps, times), ports] = values
        return stamps / PS_PER_SECOND, matrix


def _slowdowns(summary: dict, where: str) -> dict[str, tuple[float, float]]:
    """Each size class's (mean, p99) slowdown from a summary, 0 where no flow finished."""
    classes = summary.get("slowdown", {})
    if not isinstance(classes, dict):
        raise ValueError(
            f"{where}: slowdown is {json_kind(classes)}, not an object of size classes"
        )
    out = {}
    for bucket in BUCKETS:
        figures = classes.get(bucket, {})
        if not isinstance(figures, dict):
            raise ValueError(f"{where}: slowdown.{bucket} is {json_kind(figures)}, not an object")
        mean, p99 = (
            number(figures.get(s), f"slowdown.{bucket}.{s}", where) for s in ("mean", "p99")
        )
        out[bucket] = (mean or 0.0, p99 or 0.0)
    return out


def _slowdown_plot(runs: list[Run], ax: plt.Axes) -> None:
    width = 0.8 / len(runs)
    x = np.arange(len(BUCKETS))
    for i, run in enumerate(runs):
        means = [run.slowdowns[b][0] for b in BUCKETS]
        p99 = [run.slowdowns[b][1] for b in BUCKETS]
        bars = ax.bar(x + i * width, means, width, label=f"{run.name} mean")
        ax.scatter(x + i * width, p99, marker="_", s=300, color=bars.patches[0].get_facecolor())
    ax.set_xticks(x + width * (len(runs) - 1) / 2, BUCKETS)
    # Slowdowns span orders of magnitude between size classes: a log axis from 1 (when
    # any flow finished at all).
    if any(bar.get_height() > 0 for container in ax.containers for bar in container):
        ax.set_yscale("log")
        ax.set_ylim(bottom=1)
    ax.set_ylabel("slowdown (bar: mean, tick: p99)")
    ax.set_title("Slowdown by flow size")
    _legend(ax)


def _fct_cdf_plot(runs: list[Run], ax: plt.Axes) -> None:
    for run in runs:
        fct = np.asarray(run.flows["fct_ps"], dtype=np.float64)
        fct = np.sort(fct[fct >= 0]) / 1e6
        if len(fct):
            ax.step(fct, np.arange(1, len(fct) + 1) / len(fct), where="post", label=run.name)
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of finished flows")
    ax.set_title("FCT CDF")
    _legend(ax)


def _series_plots(runs: list[Run], throughput: plt.Axes, queue: plt.Axes) -> None:
    for run in runs:
        if run.series is None:
            continue
        t_ms, rate, longest = run.switch_series()
        throughput.plot(t_ms[1:], rate, label=run.name)
        queue.plot(t_ms, longest, label=run.name)
    throughput.set_title("Throughput out of switch ports")
    throughput.set_xlabel("time (ms)")
    throughput.set_ylabel("Gbit/s")
    queue.set_title("Longest switch queue")
    queue.set_xlabel("time (ms)")
    queue.set_ylabel("packets")
    for ax in (throughput, queue):
        if ax.lines:
            ax.set_ylim(bottom=0)
            ax.set_xlim(left=0)
            _legend(ax)
        else:
            ax.text(0.5, 0.5, "no time series (set telemetry.sample_interval)", ha="center")


def _queue_cdf_plot(runs: list[Run], ax: plt.Axes) -> None:
    for run in runs:
        if run.series is None:
            continue
        _, q = run.series_matrix("queue_packets")
        busy = q[:, run.switch_ports()]
        values = np.sort(busy[busy > 0])
        if len(values):
            share = np.count_nonzero(busy) / busy.size
            # Among all samples of all switch ports: the zero samples sit at the start.
            ax.step(values, 1 - share + share * np.arange(1, len(values) + 1) / len(values),
                    where="post", label=run.name)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("queue (packets), samples of every switch port")
    ax.set_ylabel("fraction of samples")
    ax.set_title("Queue length distribution")
    if ax.lines:
        _legend(ax)
    else:
        ax.text(0.5, 0.5, "no queued samples (or no time series)", ha="center")


def _heatmap(run: Run, ax: plt.Axes) -> None:
    switch = run.switch_ports()
    rates = np.asarray(run.ports["rate_bps"], dtype=np.float64)[switch]
    if run.series is not None:
        t, tx = run.series_matrix("tx_bytes")
        busy = np.diff(tx[:, switch], axis=0) * 8 / np.diff(t)[:, None] / rates
        image = ax.imshow(
            busy.T, aspect="auto", origin="lower", vmin=0, vmax=1, cmap="viridis",
            extent=(t[0] * 1e3, t[-1] * 1e3, 0, busy.shape[1]),
        )  # fmt: skip
        ax.set_xlabel("time (ms)")
    else:
        image = ax.imshow(
            np.asarray(run.ports["utilization"])[switch][:, None],
            aspect="auto", origin="lower", vmin=0, vmax=1, cmap="viridis",
        )  # fmt: skip
        ax.set_xticks([])
        ax.set_xlabel("whole run")
    # Rows named by the port's switch and what it faces, thinned to stay legible.
    names = [
        f"{a}->{b}"
        for a, b, keep in zip(run.ports["node_name"], run.ports["peer_name"], switch, strict=True)
        if keep
    ]
    step = max(1, -(-len(names) // 24))
    ax.set_yticks(np.arange(0, len(names), step) + 0.5, names[::step], fontsize="x-small")
    ax.set_ylabel("switch egress port")
    ax.set_title(f"Utilization: {run.name}")
    plt.colorbar(image, ax=ax, label="utilization")


def _legend(ax: plt.Axes) -> None:
    """A legend beside the plot, never over its data (none when nothing is plotted)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _save(fig: plt.Figure, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(path.read_bytes()).decode()


def _table(runs: list[Run]) -> str:
    head = "".join(f"<th>{html.escape(r.name)}</th>" for r in runs)
    rows = []
    for key, label in HEADLINES:
        cells = "".join(f"<td>{_fmt(r.headline(key))}</td>" for r in runs)
        rows.append(f"<tr><th>{html.escape(label)}</th>{cells}</tr>")
    return f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>"


def _fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    # A hand-edited summary may hold anything here: a cell shows its start.
    return html.escape(shortened(str(value), 60))


SEED_SUFFIX = re.compile(r",?seed\d+$")
MOST_HEAT_MAPS = 12


def _expand(folders: list[Path]) -> tuple[list[Run], dict[str, list[Run]]]:
    """The runs to report, and the sweeps' runs grouped by swept value (a sweep folder
    holds one run folder per point and seed, named `FIELD=VALUE,...,seedN`)."""
    runs: list[Run] = []
    groups: dict[str, list[Run]] = {}
    for folder in map(Path, folders):
        if is_run_folder(folder) or not os.path.isdir(folder):
            runs.append(Run(folder))
            continue
        try:
            points = sorted(p for p in folder.iterdir() if is_run_folder(p))
        except OSError as e:
            raise ValueError(f"{shown_path(folder)} cannot be read: {e.strerror}") from None
        if not points:
            runs.append(Run(folder))  # not a run folder: Run says so
        for point in points:
            run = Run(point)
            runs.append(run)
            value = SEED_SUFFIX.sub("", point.name) or folder.name
            groups.setdefault(f"{folder.name}: {value}", []).append(run)
    return runs, groups


def _sweep_table(groups: dict[str, list[Run]]) -> str:
    """Each swept value's headline figures: mean ± 95 % interval across its seeds."""
    from isthmus.compare import mean_interval

    head = "".join(
        f"<th>{html.escape(name)} (n = {len(runs)})</th>" for name, runs in groups.items()
    )
    rows = []
    for key, label in HEADLINES:
        cells = []
        for runs in groups.values():
            figures = (number(r.headline(key), key, r.where) for r in runs)
            values = [v for v in figures if v is not None]
            if not values:
                cells.append("<td>–</td>")
                continue
            mean, half = mean_interval(values)
            cells.append(f"<td>{mean:.4g} ± {half:.2g}</td>")
        rows.append(f"<tr><th>{html.escape(label)}</th>{''.join(cells)}</tr>")
    return (
        "<h2>By swept value: mean ± 95 % interval across seeds</h2>"
        f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>"
    )


def write_report(folders: list[Path], out: Path) -> Path:
    """Writes `out`/report.html and `out`/plots/*.png for run folders, or sweep folders
    (their runs, and a table by swept value across seeds); returns the page's path."""
    if not folders:
        raise ValueError("give at least one run folder")
    runs, groups = _expand(folders)
    try:
        return _write(runs, groups, [Path(f).name for f in folders], Path(out))
    except OSError as e:
        raise ValueError(
            f"the report cannot be written to {shown_path(out)}: {e.strerror}; give --out a "
            "folder that can be written"
        ) from None


def _write(runs: list[Run], groups: dict[str, list[Run]], shown: list[str], out: Path) -> Path:
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    images: list[tuple[str, str]] = []

    fig, ax = plt.subplots(figsize=(7, 4))
    _slowdown_plot(runs, ax)
    images.append(("Slowdown by flow size", _save(fig, plots / "slowdown.png")))
    fig, ax = plt.subplots(figsize=(7, 4))
    _fct_cdf_plot(runs, ax)
    images.append(("FCT CDF", _save(fig, plots / "fct_cdf.png")))
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
    _series_plots(runs, a, b)
    images.append(("Throughput and queues", _save(fig, plots / "timeseries.png")))
    fig, ax = plt.subplots(figsize=(7, 4))
    _queue_cdf_plot(runs, ax)
    images.append(("Queue length distribution", _save(fig, plots / "queue_cdf.png")))
    for i, run in enumerate(runs[:MOST_HEAT_MAPS]):
        fig, ax = plt.subplots(figsize=(7, 4))
        _heatmap(run, ax)
        images.append((f"Utilization: {run.name}", _save(fig, plots / f"utilization_{i}.png")))

    figures = "".join(
        f'<figure><img alt="{html.escape(t)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(t)}</figcaption></figure>"
        for t, data in images
    )
    title = "Isthmus report: " + ", ".join(shown[:4]) + (" ..." if len(shown) > 4 else "")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 2em; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
figure {{ margin: 1em 0; }} img {{ max-width: 100%; }} .plot {{ margin: 1em 0; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
{_sweep_table(groups) if groups else ""}
{_table(runs)}
{interactive_section(runs)}
<h2>Static plots (PNG, also in plots/)</h2>
{figures}
</body></html>
"""
    page_path = out / "report.html"
    page_path.write_text(page)
    return page_path
