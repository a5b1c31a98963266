"""Linear fit over the window: extrapolate the least-squares line through the last
`window` rows.

1. Keep the last `window` values.
2. Fit value = a + b·i by least squares, i = 0 … window−1 (oldest to newest).
3. h steps ahead: a + b·(window − 1 + h).
There is nothing to learn from a history beyond its last window; fit() only fills it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from isthmus.predict.base import UnivariateForecaster


class LineModel:
    def __init__(self, window: int) -> None:
        self.window = window
        self.values = np.zeros(0)
        i = np.arange(window, dtype=np.float64)
        centred = i - i.mean()
        # slope = weights · values, a fixed linear map of the window, computed once.
        self._slope_weights = centred / (centred @ centred)
        self._centre = i.mean()

    @property
    def needs(self) -> int:
        return self.window

    def fit(self, y: np.ndarray) -> None:
        if len(y) < self.window:
            raise ValueError(
                f"history has {len(y)} rows but the linear fit reads a window of "
                f"{self.window}; give a longer history or a smaller window"
            )
        self.restart(y)

    def restart(self, y: np.ndarray) -> None:
        self.values = y[-self.window :].copy()

    def observe(self, y: np.ndarray) -> None:
        self.values = np.concatenate([self.values, y])[-self.window :]

    def forecast(self, steps: int) -> np.ndarray:
        slope = float(self._slope_weights @ self.values)
        mean = float(self.values.mean())
        at = self.window - 1 + np.arange(1, steps + 1)
        return mean + slope * (at - self._centre)


class LinearFit(UnivariateForecaster):
    """window: rows the line is fitted through (at least 2). Plus the Forecaster
    options (lead, horizon, targets, scaling, smoothing)."""

    kind = "linear"

    def __init__(self, *, window: int = 10, **options: Any) -> None:
        super().__init__(window=window, **options)
        if self.window < 2:
            raise ValueError(
                f"window must be at least 2 for a line, got {self.window}; pass e.g. window=10"
            )

    def _new_model(self) -> LineModel:
        return LineModel(self.window)
