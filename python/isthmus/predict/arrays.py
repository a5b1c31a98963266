"""Checks at the forecasting library's boundary: every array that enters is a finite
float matrix with one row per timestep, and every count is a whole number in range,
or one ValueError names the field and the fix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def whole(value: object, field: str, *, minimum: int, example: int) -> int:
    """`value` as an int ≥ `minimum`; bools and fractions are refused, not rounded."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(
            f"{field} must be a whole number ≥ {minimum}, got {value!r}; "
            f"pass e.g. {field}={example}"
        )
    return int(value)


def fraction(value: object, field: str, *, example: float) -> float:
    """`value` as a float in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(
            f"{field} must be a number in (0, 1], got {value!r}; pass e.g. {field}={example}"
        )
    return float(value)


def matrix(values: object, field: str, *, columns: int | None = None) -> np.ndarray:
    """`values` as a float64 (timesteps × variables) array.

    A 1-D array is one variable over time when `columns` is None or 1, and one
    snapshot (a single row) when `columns` > 1: a univariate series is most naturally
    a flat array, and a switch snapshot most naturally one row of its ports.
    """
    try:
        data = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{field} must be numbers (a 1-D series or a timesteps × variables array), "
            f"got {type(values).__name__}; convert it with numpy.asarray(..., dtype=float)"
        ) from None
    if data.ndim == 0:
        data = data.reshape(1, 1)
    elif data.ndim == 1:
        data = data.reshape(1, -1) if columns is not None and columns > 1 else data[:, None]
    elif data.ndim != 2:
        raise ValueError(
            f"{field} must be 1-D or 2-D (timesteps × variables), got {data.ndim}-D; "
            "reshape it to one row per timestep"
        )
    if data.shape[0] == 0:
        raise ValueError(f"{field} is empty; give at least one timestep")
    if columns is not None and data.shape[1] != columns:
        raise ValueError(
            f"{field} has {data.shape[1]} variables per timestep but the model was fitted "
            f"on {columns}; give rows of {columns} values"
        )
    if not np.isfinite(data).all():
        row, col = np.argwhere(~np.isfinite(data))[0]
        raise ValueError(
            f"{field}: row {row} column {col} is {data[row, col]}; "
            "fill or drop missing and infinite values first"
        )
    return data


def columns(values: Sequence[int] | None, field: str, available: int) -> list[int]:
    """Column indices, each in range and none repeated; None means all of them."""
    if values is None:
        return list(range(available))
    chosen = list(values)
    if not chosen:
        raise ValueError(f"{field} is empty; name at least one column, e.g. {field}=[0]")
    for c in chosen:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < available:
            raise ValueError(
                f"{field} has {c!r}, which is not a column of data with {available} "
                f"variables; use indices 0..{available - 1}"
            )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"{field} repeats a column ({chosen}); list each column once")
    return [int(c) for c in chosen]
