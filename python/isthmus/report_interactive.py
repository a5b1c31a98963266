"""The report's interactive plots (Plotly): hover names the flow or the switch port and
its value, drag zooms, double-click resets. The static PNGs stay for papers; these are
for looking. Plotly's library is embedded once in the page, so it works offline.

- Slowdown of every finished transfer against its size (log axes), one trace per run
  (datagram streams left out); hover: run, flow id, size, completion time, slowdown.
- Throughput out of switch ports and the longest switch queue over time, per run.
- Per-port utilization over time, switch egress ports named switch->peer; hover: the
  port, the time and the utilization.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from isthmus.report import Run

MOST_HEAT_MAPS = 12


def figure_div(figure) -> str:
    """A plotly figure as an HTML fragment, for a page that embeds plotly.js once."""
    return figure.to_html(full_html=False, include_plotlyjs=False, config={"responsive": True})


def _layout(figure, title: str, x: str, y: str) -> None:
    figure.update_layout(
        title=title,
        xaxis_title=x,
        yaxis_title=y,
        height=420,
        margin={"l": 70, "r": 30, "t": 50, "b": 60},
        legend={"orientation": "h", "y": -0.25},
    )


def slowdown_scatter(runs: list[Run]) -> str:
    import plotly.graph_objects as go

    figure = go.Figure()
    for run in runs:
        fct = np.asarray(run.flows["fct_ps"], dtype=np.float64)
        # Datagram streams have no completion time worth plotting (timed, not sized).
        done = (fct >= 0) & ~np.asarray(run.flows["datagram"], dtype=bool)
        if not done.any():
            continue
        size = np.asarray(run.flows["size_bytes"], dtype=np.float64)[done]
        slowdown = np.asarray(run.flows["slowdown"], dtype=np.float64)[done]
        flow = np.asarray(run.flows["flow_id"])[done]
        figure.add_trace(
            go.Scattergl(
                x=size,
                y=slowdown,
                mode="markers",
                marker={"size": 4, "opacity": 0.6},
                name=run.name,
                customdata=np.stack([flow, fct[done] / 1e6], axis=1),
                hovertemplate=(
                    f"{html.escape(run.name)}<br>flow %{{customdata[0]}}<br>size %{{x:,.0f}} B"
                    "<br>FCT %{customdata[1]:,.1f} us<br>slowdown %{y:.2f}<extra></extra>"
                ),
            )
        )
    _layout(figure, "Slowdown of every finished flow", "flow size (bytes)", "slowdown")
    figure.update_xaxes(type="log")
    figure.update_yaxes(type="log")
    return figure_div(figure)


def time_series(runs: list[Run]) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Throughput out of switch ports", "Longest switch queue"),
    )
    for run in runs:
        if run.series is None:
            continue
        t_ms, rate, longest = run.switch_series()
        name = html.escape(run.name)
        for col, x, y, unit, digits in (
            (1, t_ms[1:], rate, "Gbit/s", 2),
            (2, t_ms, longest, "packets", 0),
        ):
            figure.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    name=f"{run.name} {unit}",
                    hovertemplate=f"%{{x:.3f}} ms: %{{y:.{digits}f}} {unit}<extra>{name}</extra>",
                ),
                row=1,
                col=col,
            )
    _layout(figure, "Throughput and queues over time", "time (ms)", "")
    figure.update_xaxes(title_text="time (ms)", rangemode="tozero")
    figure.update_yaxes(title_text="Gbit/s", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title_text="packets", rangemode="tozero", row=1, col=2)
    return figure_div(figure)


def utilization_heatmap(run: Run) -> str:
    """Switch ports x time, or one column of whole-run utilization without a series."""
    import plotly.graph_objects as go

    switch = run.switch_ports()
    if run.series is not None:
        rates = np.asarray(run.ports["rate_bps"], dtype=np.float64)[switch]
        t, tx = run.series_matrix("tx_bytes")
        busy = np.diff(tx[:, switch], axis=0) * 8 / np.diff(t)[:, None] / rates
        x: list | np.ndarray = t[1:] * 1e3
        when, x_title = "%{x:.3f} ms", "time (ms)"
    else:
        busy = np.asarray(run.ports["utilization"], dtype=np.float64)[switch][None, :]
        x, when, x_title = ["whole run"], "whole run", ""
    names = [
        f"{a}->{b}"
        for a, b, keep in zip(run.ports["node_name"], run.ports["peer_name"], switch, strict=True)
        if keep
    ]
    figure = go.Figure(
        go.Heatmap(
            z=busy.T,
            x=x,
            y=names,
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            colorbar={"title": "utilization"},
            hovertemplate="%{y}<br>" + when + "<br>utilization %{z:.2f}<extra></extra>",
        )
    )
    _layout(figure, f"Utilization: {run.name}", x_title, "switch egress port")
    figure.update_layout(height=max(420, 14 * len(names) + 120))
    return figure_div(figure)


def section(runs: list[Run]) -> str:
    """The interactive plots as one HTML section, Plotly's library included once."""
    from plotly.offline import get_plotlyjs

    parts = [slowdown_scatter(runs), time_series(runs)]
    parts += [utilization_heatmap(run) for run in runs[:MOST_HEAT_MAPS]]
    return (
        f'<h2>Interactive plots</h2><script type="text/javascript">{get_plotlyjs()}</script>'
        + "".join(f'<div class="plot">{p}</div>' for p in parts)
    )
