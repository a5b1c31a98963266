"""EWMA: the exponentially weighted moving average as a forecaster.

1. The level starts at the first value observed.
2. Each new value y moves it by a fraction alpha of the surprise:
   level ← level + alpha · (y − level).
3. Every step ahead is forecast as the current level (the model has no trend).
4. Unless alpha is given, fit() picks the alpha in [0.01, 1] with the least squared
   one-step-ahead error on the history: a grid of 100 values, then a finer one around
   the best.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from isthmus.predict.arrays import fraction
from isthmus.predict.base import UnivariateForecaster

_COARSE = np.linspace(0.01, 1.0, 100)


def one_step_sse(y: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """Sum of squared one-step errors over `y` for each candidate alpha at once."""
    level = np.full(len(alphas), y[0])
    sse = np.zeros(len(alphas))
    for value in y[1:]:
        error = value - level
        sse += error * error
        level += alphas * error
    return sse


def best_alpha(y: np.ndarray) -> float:
    coarse = _COARSE[np.argmin(one_step_sse(y, _COARSE))]
    fine = np.clip(coarse + np.linspace(-0.01, 0.01, 21), 0.01, 1.0)
    return float(fine[np.argmin(one_step_sse(y, fine))])


class EwmaModel:
    def __init__(self, alpha: float | None) -> None:
        self.alpha = alpha
        self.level = 0.0

    @property
    def needs(self) -> int:
        return 1

    def fit(self, y: np.ndarray) -> None:
        if self.alpha is None:
            if len(y) < 2:
                raise ValueError(
                    "history has 1 row; fitting EWMA's alpha needs at least 2, or pass alpha=…"
                )
            self.alpha = best_alpha(y)
        self.restart(y)

    def restart(self, y: np.ndarray) -> None:
        self.level = float(y[0])
        self.observe(y[1:])

    def observe(self, y: np.ndarray) -> None:
        alpha, level = self.alpha, self.level
        assert alpha is not None
        for value in y.tolist():
            level += alpha * (value - level)
        self.level = level

    def forecast(self, steps: int) -> np.ndarray:
        return np.full(steps, self.level)


class Ewma(UnivariateForecaster):
    """alpha: smoothing weight in (0, 1] given to each new value; None fits it per
    target. Plus the Forecaster options (window, lead, horizon, targets, scaling,
    smoothing)."""

    kind = "ewma"

    def __init__(self, *, alpha: float | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.alpha = None if alpha is None else fraction(alpha, "alpha", example=0.3)

    @property
    def name(self) -> str:
        return self.kind if self.alpha is None else f"ewma(alpha={self.alpha:g})"

    def _new_model(self) -> EwmaModel:
        return EwmaModel(self.alpha)

    def _observe(self, rows: np.ndarray) -> None:
        # Every target's level at once: the same arithmetic as each model's observe(),
        # element by element, without a Python call per target and row.
        models = self.per_target
        alphas = np.array([model.alpha for model in models])
        levels = np.array([model.level for model in models])
        for row in rows[:, self.targets]:
            levels += alphas * (row - levels)
        for model, level in zip(models, levels.tolist(), strict=True):
            model.level = level

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        # Every step ahead is each target's level: one (horizon × targets) array.
        levels = np.array([model.level for model in self.per_target])
        return np.repeat(levels[None, :], horizon, axis=0)
