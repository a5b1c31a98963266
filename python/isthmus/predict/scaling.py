"""Normalisation: a per-column affine map z = (x - offset) / scale, fitted on training
rows only and then frozen, so validation and test rows are expressed in the training
data's units and never shape them.

"zscore" uses each column's training mean and standard deviation, "minmax" its training
minimum and range (training rows land in [0, 1]; later rows may fall outside it). A
constant column gets scale 1 rather than a division by zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Scaling = Literal["zscore", "minmax"]
SCALINGS: tuple[str, ...] = ("zscore", "minmax")


@dataclass(frozen=True)
class Scaler:
    offset: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, kind: Scaling | None, training: np.ndarray) -> Scaler:
        """The map for `kind` fitted on `training` (rows × columns); None is identity."""
        if kind is None:
            width = training.shape[1]
            return cls(np.zeros(width), np.ones(width))
        if kind == "zscore":
            offset, spread = training.mean(axis=0), training.std(axis=0)
        elif kind == "minmax":
            offset = training.min(axis=0)
            spread = training.max(axis=0) - offset
        else:
            raise ValueError(
                f"scaling must be one of {', '.join(SCALINGS)} or None, got {kind!r}; "
                "pass e.g. scaling='zscore'"
            )
        return cls(offset, np.where(spread > 0, spread, 1.0))

    def transform(self, rows: np.ndarray) -> np.ndarray:
        return (rows - self.offset) / self.scale

    def inverse(self, values: np.ndarray, columns: Sequence[int]) -> np.ndarray:
        """Back to data units, for `values` whose last axis holds `columns`."""
        return values * self.scale[list(columns)] + self.offset[list(columns)]
