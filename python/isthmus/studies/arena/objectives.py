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
    # What the network does (False: what simulating it costs this machine, which the
    # no-silver-bullet claims leave out).
    network: bool = True


# What each paper scores its scheme by, for everyone.
OBJECTIVES = (
    Objective("slowdown_mean", "FCT slowdown, mean", "slowdown", True, 2, True),
    Objective("slowdown_p99", "FCT slowdown, p99", "p99", True, 1, True),
    Objective("small_slowdown_p99", "slowdown p99, flows < 100 KB", "small p99", True, 1),
    Objective("large_slowdown_mean", "slowdown mean, flows > 1 MB", "large", True, 2),
    Objective("goodput_gbps", "goodput (Gb/s)", "goodput", False, 2, True),
    Objective("bisection_fraction", "fraction of bisection bandwidth", "bisection", False, 3),
    Objective("jain", "Jain fairness of flow throughputs", "fairness", False, 3),
    Objective("queue_wait_us", "mean queueing delay per hop (us)", "queueing", True, 2, True),
    Objective("drops", "packets dropped", "drops", True, 0),
    Objective(
        "cpu_per_simulated_s",
        "CPU s per simulated s (control programs included)",
        "cpu",
        True,
        1,
        network=False,
    ),
)
