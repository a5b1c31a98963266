"""Forecast error metrics, over every (origin, step ahead, target) value at once.

- Diolkos reports the absolute relative error |predicted − actual| / |actual| in
  percent: MAE is its mean, SDAE its standard deviation (population, ddof = 0).
- IBCN reports the average relative error: the same mean, as a fraction.
- MSE is the mean squared error in the data's units squared.

Zero actual values: a relative error is undefined where the actual value is 0, so
the relative metrics leave those pairs out (MSE keeps them). `relative_errors` says
how many were left out; when every actual value is 0 the relative metrics are NaN.
Report MSE beside them for series that sit at zero often, such as queue sizes.
"""

from __future__ import annotations

import numpy as np


def _pair(actual: object, predicted: object) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(actual, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if a.shape != p.shape:
        raise ValueError(
            f"actual has shape {a.shape} but predicted has {p.shape}; give one prediction "
            "per actual value"
        )
    if a.size == 0:
        raise ValueError("actual is empty; give at least one value to score")
    for field, values in (("actual", a), ("predicted", p)):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{field} holds NaN or infinite values; drop or fill them first")
    return a.reshape(-1), p.reshape(-1)


def relative_errors(actual: object, predicted: object) -> tuple[np.ndarray, int]:
    """|predicted − actual| / |actual| for each pair with a non-zero actual value, and
    the number of pairs left out because their actual value is 0."""
    a, p = _pair(actual, predicted)
    nonzero = a != 0
    return np.abs(p[nonzero] - a[nonzero]) / np.abs(a[nonzero]), int(np.sum(~nonzero))


def _mean_or_nan(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def mae_pct(actual: object, predicted: object) -> float:
    """Diolkos's MAE: mean absolute relative error, in percent."""
    return 100 * _mean_or_nan(relative_errors(actual, predicted)[0])


def sdae_pct(actual: object, predicted: object) -> float:
    """Diolkos's SDAE: standard deviation of the absolute relative error, in percent."""
    errors = relative_errors(actual, predicted)[0]
    return 100 * float(errors.std()) if errors.size else float("nan")


def average_relative_error(actual: object, predicted: object) -> float:
    """IBCN's average relative error: mean |predicted − actual| / |actual|, a fraction."""
    return _mean_or_nan(relative_errors(actual, predicted)[0])


def mse(actual: object, predicted: object) -> float:
    """Mean squared error, in the data's units squared."""
    a, p = _pair(actual, predicted)
    return float(np.mean((p - a) ** 2))
