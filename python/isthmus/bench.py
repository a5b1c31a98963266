"""The reference benchmark, `leafspine-websearch` (ARCHITECTURE.md section 6): run one
size of it and report speed and flow-completion figures in the layout other tools read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from isthmus.metrics import flow_times, slowdown_summary
from isthmus.results import peak_rss_mb
from isthmus.scenario import load_scenario
from isthmus.units import time_ps

SIZES = ("small", "medium", "large", "xl512", "xl1024", "xl10240")


def scenario_path(size: str) -> Path:
    if size not in SIZES:
        raise ValueError(f"unknown benchmark size {size!r}; choose one of {', '.join(SIZES)}")
    folder = resources.files("isthmus") / "scenarios"
    return Path(str(folder / f"leafspine-websearch-{size}.toml"))


def run_benchmark(
    size: str, on_progress: Callable[[int, int], None] | None = None, threads: int = 1
) -> dict:
    """Runs one size, in `threads` partitions side by side (1: the sequential engine);
    `on_progress(finished_flows, flows)` is called as it goes."""
    path = scenario_path(size)
    scenario = load_scenario(path)
    started = time.perf_counter()
    sim = scenario.build(base=path.parent)
    if threads > 1:
        sim.set_partitions(threads, threads)
    built = time.perf_counter()

    def progress(_now: int) -> None:
        if on_progress is not None:
            on_progress(sim.num_flows - sim.unfinished_flows, sim.num_flows)

    sim.run(time_ps(scenario.run.duration), stop_when_flows_finish=True, on_progress=progress)
    wall = time.perf_counter() - built
    flows = sim.flows()
    times = flow_times(sim)
    finished = times["fct_ps"] >= 0
    return {
        "size": size,
        "threads": threads,
        "flows": sim.num_flows,
        "finished": int(finished.sum()),
        "wall_s": round(wall, 4),
        "setup_s": round(built - started, 4),
        "events": sim.events_processed,
        "packet_hops": sim.packet_hops,
        "events_per_s": round(sim.events_processed / wall),
        "packet_hops_per_s": round(sim.packet_hops / wall),
        # The figure that compares across simulators (htsim counts two events per hop).
        "ns_per_packet_hop": round(wall * 1e9 / sim.packet_hops, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "packets_delivered": int(flows["packets_delivered"].sum()),
        "packets_dropped": int(sim.ports()["drop_packets"].sum()),
        "mean_fct_us": float(times["fct_ps"][finished].mean() / 1e6) if finished.any() else None,
        "slowdown": slowdown_summary(flows["size_bytes"], times["slowdown"]),
    }


def format_rows(result: dict) -> list[tuple[str, str]]:
    """The benchmark's figures as (name, value) rows for a table."""

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    rows = [
        ("flows finished", f"{result['finished']} / {result['flows']}"),
        ("mean FCT", f"{result['mean_fct_us']:.1f} us" if result["mean_fct_us"] else "-"),
    ]
    labels = {"all": "all", "lt100KB": "< 100 KB", "100KB-1MB": "100 KB-1 MB", "gt1MB": "> 1 MB"}
    for key, label in labels.items():
        s = result["slowdown"][key]
        rows.append(
            (
                f"slowdown {label} (n={s['n']})",
                f"mean {fmt(s['mean'])}  p50 {fmt(s['p50'])}  p99 {fmt(s['p99'])}",
            )
        )
    rows += [
        ("packets delivered", f"{result['packets_delivered']:,}"),
        ("packets dropped", f"{result['packets_dropped']:,}"),
        ("events", f"{result['events']:,}"),
        ("packet-hops", f"{result['packet_hops']:,}"),
        ("wall clock (run)", f"{result['wall_s']:.3f} s  (+ {result['setup_s']:.3f} s setup)"),
        ("events per second", f"{result['events_per_s']:,}"),
        ("packet-hops per second", f"{result['packet_hops_per_s']:,}"),
        ("ns per packet-hop", f"{result['ns_per_packet_hop']:.1f}"),
        ("peak memory", f"{result['peak_rss_mb']:.0f} MB"),
    ]
    return rows
