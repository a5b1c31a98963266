"""Holt-Winters additive exponential smoothing: a level, a trend and, when a season
length m is given, m seasonal offsets, each corrected by a share of every one-step
error.

1. Initial state (at the step before the first row): without a season, the level and
   trend of a least-squares line through the first (up to 10) rows; with one, the
   trend is the change between the means of the first two seasons divided by m, the
   level is that line extended back one step, and each seasonal offset is the mean
   of its position's two deviations from the line, centred to sum to zero.
2. For each row y, with p its position in the season:
   error e = y − (level + trend + season[p]);
   level ← level + trend + alpha·e;  trend ← trend + alpha·beta·e;
   season[p] ← season[p] + gamma·e.
   (The classical forms l = alpha(y − s) + (1 − alpha)(l + b), b = beta(Δl) + (1 − beta)b,
   s = gamma(y − l − b) + (1 − gamma)s reduce to exactly these.)
3. h steps ahead: level + h·trend + season[position of that step].
4. Parameters not given are fitted to the least squared one-step error on the
   history: every combination on a coarse grid in [0, 1] is run at once (vectorised
   over candidates), then a finer grid around the best, four times.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from isthmus.predict.arrays import whole
from isthmus.predict.base import UnivariateForecaster

_COARSE = np.array([0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0])
_ALPHA_FLOOR = 0.01  # alpha = 0 would freeze the level at its initial guess forever


def initial_state(y: np.ndarray, season: int) -> tuple[float, float, np.ndarray]:
    """(level, trend, seasonal offsets) at the step before y[0]; season 1 means none."""
    if season == 1:
        head = y[: min(len(y), 10)]
        t = np.arange(len(head))
        slope = float(np.polyfit(t, head, 1)[0]) if len(head) > 1 else 0.0
        intercept = float(head.mean() - slope * t.mean())
        return intercept - slope, slope, np.zeros(1)
    first, second = y[:season].mean(), y[season : 2 * season].mean()
    slope = (second - first) / season
    centre = (season - 1) / 2
    line = first + slope * (np.arange(2 * season) - centre)
    offsets = (y[: 2 * season] - line).reshape(2, season).mean(axis=0)
    return float(first + slope * (-1 - centre)), float(slope), offsets - offsets.mean()


def one_step_sse(y: np.ndarray, season: int, params: np.ndarray) -> np.ndarray:
    """Sum of squared one-step errors over `y` for each (alpha, beta, gamma) row of
    `params`, all candidates advanced together."""
    level0, trend0, offsets0 = initial_state(y, season)
    alpha, beta, gamma = params.T
    alpha_beta = alpha * beta
    level = np.full(len(params), level0)
    trend = np.full(len(params), trend0)
    offsets = np.tile(offsets0, (len(params), 1))
    sse = np.zeros(len(params))
    with np.errstate(over="ignore", invalid="ignore"):
        for t, value in enumerate(y.tolist()):
            p = t % season
            error = value - level - trend - offsets[:, p]
            sse += error * error
            level += trend + alpha * error
            trend += alpha_beta * error
            offsets[:, p] += gamma * error
    return np.where(np.isfinite(sse), sse, np.inf)


def fit_parameters(
    y: np.ndarray, season: int, fixed: tuple[float | None, float | None, float | None]
) -> tuple[float, float, float]:
    floors = (_ALPHA_FLOOR, 0.0, 0.0)
    free = [fix is None and not (i == 2 and season == 1) for i, fix in enumerate(fixed)]

    def candidates(axes: list[np.ndarray]) -> np.ndarray:
        return np.array(list(itertools.product(*axes)))

    def axis(i: int, values: np.ndarray) -> np.ndarray:
        if not free[i]:
            return np.array([fixed[i] if fixed[i] is not None else 0.0])
        return np.unique(np.clip(values, floors[i], 1.0))

    grid = candidates([axis(i, _COARSE) for i in range(3)])
    best = grid[np.argmin(one_step_sse(y, season, grid))]
    step = 0.05
    for _ in range(4):
        grid = candidates([axis(i, best[i] + step * np.arange(-2, 3)) for i in range(3)])
        best = grid[np.argmin(one_step_sse(y, season, grid))]
        step /= 2
    return float(best[0]), float(best[1]), float(best[2])


class HoltWintersModel:
    def __init__(
        self, season: int, alpha: float | None, beta: float | None, gamma: float | None
    ) -> None:
        self.season = season
        self.fixed = (alpha, beta, gamma)
        self.alpha = self.beta = self.gamma = 0.0
        self.level = self.trend = 0.0
        self.offsets = np.zeros(season)
        self.position = 0

    @property
    def needs(self) -> int:
        return 2 * self.season if self.season > 1 else 2

    def fit(self, y: np.ndarray) -> None:
        if len(y) < self.needs:
            raise ValueError(
                f"history has {len(y)} rows but Holt-Winters with season {self.season} "
                f"needs at least {self.needs} to start from; give a longer history"
            )
        self.alpha, self.beta, self.gamma = fit_parameters(y, self.season, self.fixed)
        self.restart(y)

    def restart(self, y: np.ndarray) -> None:
        self.level, self.trend, self.offsets = initial_state(y, self.season)
        self.position = 0
        self.observe(y)

    def observe(self, y: np.ndarray) -> None:
        alpha, alpha_beta, gamma = self.alpha, self.alpha * self.beta, self.gamma
        level, trend, position, season = self.level, self.trend, self.position, self.season
        offsets = self.offsets.tolist()
        for value in y.tolist():
            error = value - level - trend - offsets[position]
            level += trend + alpha * error
            trend += alpha_beta * error
            offsets[position] += gamma * error
            position = (position + 1) % season
        self.level, self.trend, self.position = level, trend, position
        self.offsets = np.array(offsets)

    def forecast(self, steps: int) -> np.ndarray:
        ahead = np.arange(1, steps + 1)
        return (
            self.level
            + ahead * self.trend
            + self.offsets[(self.position + ahead - 1) % self.season]
        )


class HoltWinters(UnivariateForecaster):
    """season: rows per season (e.g. 24 for hourly data with a daily cycle); None for
    Holt's level-and-trend model. alpha, beta, gamma: smoothing weights in [0, 1] for
    level, trend and season; None fits them per target. Plus the Forecaster options."""

    kind = "holt_winters"

    def __init__(
        self,
        *,
        season: int | None = None,
        alpha: float | None = None,
        beta: float | None = None,
        gamma: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.season = None if season is None else whole(season, "season", minimum=2, example=24)
        for field, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= 1
            ):
                raise ValueError(f"{field} must be in [0, 1], got {value!r}; pass e.g. {field}=0.1")
        if gamma is not None and season is None:
            raise ValueError(
                "gamma weights the seasonal offsets; give season=… with it, or drop it"
            )
        self.alpha, self.beta, self.gamma = alpha, beta, gamma

    @property
    def name(self) -> str:
        return self.kind if self.season is None else f"holt_winters(season={self.season})"

    def _new_model(self) -> HoltWintersModel:
        return HoltWintersModel(self.season or 1, self.alpha, self.beta, self.gamma)
