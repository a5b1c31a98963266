"""Comparing two sets of runs (typically the same scenarios under two schemes, over
several seeds): per headline figure, the mean of each side, the difference B − A and
its 95% confidence interval (Welch's t interval, which does not assume equal
variances). Eighteen figures are tested at once, so a difference is called significant
only when Welch's test rejects it under Holm's step-down correction for all the figures
compared (family-wise error 5 %); its interval then excludes zero too. With one run on
a side there is no spread to estimate: the difference is shown without an interval and
never called significant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats

from isthmus.inputs import shown_path
from isthmus.run_files import SUMMARY, flatten, number, read_summary, run_folders

FIGURES = (
    ("mean_fct_us", "mean FCT (us)"),
    ("slowdown_all_mean", "slowdown mean"),
    ("slowdown_all_p50", "slowdown p50"),
    ("slowdown_all_p99", "slowdown p99"),
    ("slowdown_all_p999", "slowdown p99.9"),
    ("slowdown_lt100KB_p99", "slowdown p99 < 100 KB"),
    ("slowdown_gt1MB_mean", "slowdown mean > 1 MB"),
    ("flows_unfinished", "unfinished flows"),
    ("packets_dropped", "drops"),
    ("ecn_marks", "ECN marks"),
    ("timeouts", "timeouts"),
    ("max_switch_queue_packets", "longest switch queue"),
    ("mean_queue_wait_us", "mean queue wait (us)"),
    ("p99_queue_wait_us", "p99 queue wait (us)"),
    ("p99_switch_queue_wait_us", "p99 switch queue wait (us)"),
    ("max_link_utilization", "max link utilization"),
    ("bisection_fraction", "fraction of bisection"),
    ("flow_throughput_jain", "throughput fairness (Jain)"),
    ("out_of_order_packets", "out-of-order packets"),
    ("pfc_pauses", "PFC pauses"),
)


@dataclass(frozen=True)
class Difference:
    figure: str
    label: str
    mean_a: float
    mean_b: float
    low: float | None
    high: float | None
    n_a: int = 0
    n_b: int = 0
    p_value: float | None = None
    significant: bool = False
    """Rejected by Welch's test under Holm's correction across the compared figures."""

    @property
    def delta(self) -> float:
        return self.mean_b - self.mean_a


def holm(p_values: list[float | None], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise `alpha`
    (None: untested, never rejected)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    rejected = [False] * len(p_values)
    for rank, (p, i) in enumerate(tested):
        if p > alpha / (len(tested) - rank):
            break
        rejected[i] = True
    return rejected


def mean_interval(values, level: float = 0.95) -> tuple[float, float]:
    """The mean of `values` and the half-width of its t confidence interval (0 for one
    value: no spread to estimate)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("mean_interval needs at least one value")
    if len(x) < 2:
        return float(x.mean()), 0.0
    half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean()), float(half)


def welch_interval(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Confidence interval of mean(b) − mean(a) (None with fewer than two of each)."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    delta = b.mean() - a.mean()
    if va + vb == 0:
        return (delta, delta)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stats.t.ppf(0.5 + level / 2, dof) * math.sqrt(va + vb)
    return (delta - half, delta + half)


def _figures(path: Path) -> dict[str, list[float]]:
    """Each figure's values across the runs under `path` (runs without it left out); a
    figure that is not a number is an error naming the run's summary."""
    values: dict[str, list[float]] = {key: [] for key, _ in FIGURES}
    for folder in run_folders(path):
        summary = flatten(read_summary(folder))
        where = f"run summary {shown_path(folder / SUMMARY)}"
        for key, found in values.items():
            value = number(summary.get(key), key, where)
            if value is not None:
                found.append(value)
    return values


def compare(a: Path, b: Path) -> list[Difference]:
    """Every headline figure both sides report, A's runs against B's."""
    side_a, side_b = _figures(a), _figures(b)
    out = []
    for key, label in FIGURES:
        xa = np.array(side_a[key], dtype=np.float64)
        xb = np.array(side_b[key], dtype=np.float64)
        if len(xa) == 0 or len(xb) == 0:
            continue
        interval = welch_interval(xa, xb)
        low, high = interval if interval is not None else (None, None)
        p = None
        if interval is not None:
            same = xa.var(ddof=1) + xb.var(ddof=1) == 0
            p = (
                float(xa.mean() == xb.mean())
                if same
                else float(stats.ttest_ind(xa, xb, equal_var=False).pvalue)
            )
        out.append(
            Difference(
                key, label, float(xa.mean()), float(xb.mean()), low, high, len(xa), len(xb), p
            )
        )
    rejected = holm([d.p_value for d in out])
    return [replace(d, significant=r) for d, r in zip(out, rejected, strict=True)]
