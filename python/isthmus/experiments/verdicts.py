"""What a study says from its seeds: a figure as a table cell with its 95 % interval,
and claims that one scheme is better than another judged on the interval of the
difference, never on one seed.

A difference of means is judged on Welch's t interval (no equal variances assumed); a
difference of a statistic pooled over seeds (a 99.9th percentile of every seed's
samples) on a bootstrap over seeds. With fewer than two seeds on a side there is no
spread to estimate: the claim is refused (`holds` None), not judged on a zero-width
interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from isthmus.compare import mean_interval, welch_interval
from isthmus.experiments.tables import Claim

BOOTSTRAP_DRAWS = 1000
MIN_SEEDS = 2


def cell(values: Sequence[float], digits: int = 1, scale: float = 1.0) -> str:
    """The mean of the finite `values` (times `scale`) ± the half-width of its 95 %
    t-interval; one value alone, without an interval; 'n/a' when none is finite."""
    finite = [v * scale for v in values if np.isfinite(v)]
    if not finite:
        return "n/a"
    mean, half = mean_interval(finite)
    if len(finite) < MIN_SEEDS:
        return f"{mean:,.{digits}f}"
    return f"{mean:,.{digits}f} ± {half:,.{digits}f}"


def refused(statement: str, counts: dict[str, int]) -> Claim:
    shown = ", ".join(f"{name} {n}" for name, n in counts.items())
    return Claim(
        statement,
        None,
        f"no verdict: seeds per side {shown}; a verdict needs {MIN_SEEDS} or more "
        "(--seeds 5 for intervals)",
    )


def _judged(low: float, high: float, lower_is_better: bool) -> bool:
    """Whether the interval of A − B lies wholly on A's better side of zero."""
    return high < 0 if lower_is_better else low > 0


def better(
    statement: str,
    a: Sequence[float],
    b: Sequence[float],
    *,
    lower_is_better: bool,
    names: tuple[str, str] = ("A", "B"),
    digits: int = 2,
    unit: str = "",
    note: str = "",
) -> Claim:
    """Claims A is better than B: it holds when the 95 % Welch interval of mean(A) −
    mean(B) lies wholly on A's better side of zero. `note` (the paper's figures) closes
    the evidence."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < MIN_SEEDS or len(y) < MIN_SEEDS:
        return refused(statement, {names[0]: len(x), names[1]: len(y)})
    interval = welch_interval(y, x)  # of mean(x) - mean(y)
    assert interval is not None
    low, high = interval
    return Claim(
        statement,
        _judged(low, high, lower_is_better),
        f"{names[0]} {x.mean():,.{digits}f}{unit}, {names[1]} {y.mean():,.{digits}f}{unit}; "
        f"{names[0]} − {names[1]} 95 % interval [{low:,.{digits}f}, {high:,.{digits}f}]"
        f" over {len(x)} and {len(y)} seeds" + (f" ({note})" if note else ""),
    )


def bootstrap_interval(
    a: Sequence[Sequence[float]],
    b: Sequence[Sequence[float]],
    statistic: Callable[[list[Sequence[float]]], float],
    seed: int = 0,
) -> tuple[float, float]:
    """95 % interval of statistic(A) − statistic(B), each side a list of per-seed sample
    sets, by resampling seeds with replacement (`BOOTSTRAP_DRAWS` draws)."""
    rng = np.random.default_rng(seed)
    differences = []
    for _ in range(BOOTSTRAP_DRAWS):
        pick_a = [a[i] for i in rng.integers(len(a), size=len(a))]
        pick_b = [b[i] for i in rng.integers(len(b), size=len(b))]
        differences.append(statistic(pick_a) - statistic(pick_b))
    low, high = np.percentile(differences, [2.5, 97.5])
    return float(low), float(high)


def better_pooled(
    statement: str,
    a: Sequence[Sequence[float]],
    b: Sequence[Sequence[float]],
    statistic: Callable[[list[Sequence[float]]], float],
    *,
    lower_is_better: bool,
    names: tuple[str, str] = ("A", "B"),
    digits: int = 2,
    unit: str = "",
) -> Claim:
    """Claims A is better than B on a statistic pooled over seeds (each side a list of
    per-seed sample sets): judged on a bootstrap over seeds."""
    if len(a) < MIN_SEEDS or len(b) < MIN_SEEDS:
        return refused(statement, {names[0]: len(a), names[1]: len(b)})
    low, high = bootstrap_interval(a, b, statistic)
    return Claim(
        statement,
        _judged(low, high, lower_is_better),
        f"{names[0]} {statistic(list(a)):,.{digits}f}{unit}, "
        f"{names[1]} {statistic(list(b)):,.{digits}f}{unit}; {names[0]} − {names[1]} 95 % "
        f"seed-bootstrap interval [{low:,.{digits}f}, {high:,.{digits}f}] over {len(a)} and "
        f"{len(b)} seeds",
    )


def within(statement: str, gaps: Sequence[float], tolerance: float, what: str) -> Claim:
    """Holds when the 95 % interval of `gaps` (A − B per seed, higher better) lies above
    −`tolerance`: A comes within `tolerance` of B or beats it; `what` names A − B."""
    if len(gaps) < MIN_SEEDS:
        return refused(statement, {"seeds": len(gaps)})
    mean, half = mean_interval(gaps)
    return Claim(
        statement,
        mean - half > -tolerance,
        f"{what} {mean:+.4f}, 95 % interval [{mean - half:+.4f}, {mean + half:+.4f}] "
        f"over {len(gaps)} seeds",
    )


def exceeds(
    statement: str,
    values: Sequence[float],
    bound: float,
    *,
    digits: int = 1,
    scale: float = 1.0,
    unit: str = "",
) -> Claim:
    """Holds when the 95 % interval of the mean of `values` (one per seed) lies wholly
    above `bound`: a threshold judged like a comparison, not on a mean alone."""
    if len(values) < MIN_SEEDS:
        return refused(statement, {"seeds": len(values)})
    mean, half = mean_interval(values)
    low, high = (mean - half) * scale, (mean + half) * scale
    return Claim(
        statement,
        bool(mean - half > bound),
        f"{mean * scale:.{digits}f}{unit}, 95 % interval [{low:.{digits}f}, {high:.{digits}f}] "
        f"against {bound * scale:.{digits}f}{unit} over {len(values)} seeds",
    )


def over_seeds(statement: str, holds: bool, evidence: str, seeds: int) -> Claim:
    """A claim judged on all seeds' runs together (no packet lost, no flow below a
    floor, a decision read from per-seed intervals); no verdict under `MIN_SEEDS` seeds,
    as for comparisons."""
    if seeds < MIN_SEEDS:
        return refused(statement, {"seeds": seeds})
    return Claim(statement, bool(holds), evidence)


def all_of(statement: str, claims: Sequence[Claim]) -> Claim:
    """A claim that holds where each of `claims` holds: no verdict where any has none."""
    verdicts = [c.holds for c in claims]
    holds = None if None in verdicts or not claims else all(verdicts)
    return Claim(statement, holds, "; ".join(c.evidence for c in claims))


def unbeaten(
    samples: dict[str, Sequence[float]], *, lower_is_better: bool
) -> tuple[list[str], str] | None:
    """The contenders no other beats: B beats A when the 95 % Welch interval of
    mean(B) − mean(A) lies wholly on B's better side of zero, so a tie (an interval
    across zero) beats nobody. Contenders without a finite value drop out. Returns the
    unbeaten in the given order and, per beaten one, who beat it; None (no verdict)
    when fewer than two contenders have finite values, or one has them from fewer than
    `MIN_SEEDS` seeds."""
    finite = {
        name: np.asarray([v for v in values if np.isfinite(v)], dtype=float)
        for name, values in samples.items()
    }
    finite = {name: values for name, values in finite.items() if len(values)}
    # One contender alone is beaten by nobody and wins nothing.
    if len(finite) < 2 or any(len(values) < MIN_SEEDS for values in finite.values()):
        return None
    beaten: dict[str, list[str]] = {}
    for a, xa in finite.items():
        for b, xb in finite.items():
            if a == b:
                continue
            interval = welch_interval(xa, xb)  # of mean(b) - mean(a)
            if interval is not None and _judged(*interval, lower_is_better):
                beaten.setdefault(a, []).append(b)
    winners = [name for name in finite if name not in beaten]
    why = "; ".join(f"{a} beaten by {', '.join(bs)}" for a, bs in beaten.items())
    return winners, why
