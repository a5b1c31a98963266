"""What every arena run is scored by: the objectives the schemes' papers score their
own scheme by, for everyone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Objective:
    """A figure every run is scored by: its key in a run's result, its label and short
    name, which way is better, its digits, and whether the console table shows it (the
    page and the Parquet file show all)."""

    key: str
    label: str
    short: str
    lower_is_better: bool
    digits: int
    shown: bool = False
    # What the network does (False: what the scheme costs its controller or this
    # machine, which the no-silver-bullet claims and the win counts leave out).
    network: bool = True
    # Counted over finished flows only (completion times, their throughputs).
    finished_flows_only: bool = False


# What each paper scores its scheme by, for everyone.
_FCT = {"finished_flows_only": True}
OBJECTIVES = (
    Objective("slowdown_mean", "FCT slowdown, mean", "slowdown", True, 2, shown=True, **_FCT),
    Objective("slowdown_p99", "FCT slowdown, p99", "p99", True, 1, shown=True, **_FCT),
    Objective("small_slowdown_p99", "slowdown p99, flows < 100 KB", "small p99", True, 1, **_FCT),
    Objective("large_slowdown_mean", "slowdown mean, flows > 1 MB", "large", True, 2, **_FCT),
    Objective("goodput_gbps", "goodput (Gb/s)", "goodput", False, 2, shown=True),
    Objective("bisection_fraction", "fraction of bisection bandwidth", "bisection", False, 3),
    Objective("jain", "Jain fairness of flow throughputs", "fairness", False, 3, **_FCT),
    Objective("queue_wait_us", "mean queueing delay per hop (us)", "queueing", True, 2, shown=True),
    Objective("queue_wait_p99_us", "p99 queueing delay per hop (us)", "queue p99", True, 1),
    Objective("drops", "packets dropped", "drops", True, 0),
    Objective(
        "commands",
        "control commands sent (flow, group and meter changes, packet-outs)",
        "commands",
        True,
        0,
        network=False,
    ),
    Objective(
        "reads",
        "counter reads (a statistics request to a switch and its reply)",
        "reads",
        True,
        0,
        network=False,
    ),
    Objective(
        "training_s",
        "training before the run, CPU s (learned schemes; on training traffic)",
        "training",
        True,
        0,
        network=False,
    ),
    Objective(
        "wall_per_simulated_s",
        "wall-clock s per simulated s (control programs included)",
        "wall",
        True,
        1,
        network=False,
    ),
)
