"""Windowing: which past rows a forecast reads and which future rows it answers.

An example is anchored at an origin t, the last row it may read. Its inputs are rows
t-window+1 … t and its targets rows t+lead … t+lead+horizon-1, so every target lies
strictly after every input. Examples are cut from one contiguous segment at a time
(a train, validation or test split), and an example whose targets would run past the
segment's end is not made: that is how no value from beyond a split boundary, or from
the future of an origin, reaches training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isthmus.predict.arrays import columns, matrix, whole


@dataclass(frozen=True)
class Windowing:
    """window: rows a forecast is conditioned on (Diolkos's BS, IBCN's W);
    lead: steps from the last input row to the first forecast row (Diolkos's N; 1 is
    the next step); horizon: consecutive rows forecast (Diolkos's O, IBCN's k)."""

    window: int = 1
    lead: int = 1
    horizon: int = 1

    def __post_init__(self) -> None:
        whole(self.window, "window", minimum=1, example=10)
        whole(self.lead, "lead", minimum=1, example=1)
        whole(self.horizon, "horizon", minimum=1, example=1)

    @property
    def span(self) -> int:
        """Rows one example covers, first input to last target."""
        return self.window + self.lead + self.horizon - 1

    def origins(self, rows: int, first: int | None = None) -> np.ndarray:
        """Every origin of a segment of `rows` rows whose targets fit inside it, from
        `first` (default: the first with a full window) on."""
        start = self.window - 1 if first is None else max(first, self.window - 1)
        return np.arange(start, rows - self.lead - self.horizon + 1)

    def input_rows(self, origins: np.ndarray) -> np.ndarray:
        """(examples × window) row indices each example reads."""
        return np.asarray(origins)[:, None] + np.arange(1 - self.window, 1)

    def target_rows(self, origins: np.ndarray) -> np.ndarray:
        """(examples × horizon) row indices each example answers."""
        return np.asarray(origins)[:, None] + self.lead + np.arange(self.horizon)


def examples(
    segment: object, windowing: Windowing, targets: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Supervised pairs from one contiguous segment: inputs (examples × window ×
    variables), targets (examples × horizon × target columns) and each example's origin.
    Call it once per split, never on rows that span a split boundary."""
    data = matrix(segment, "segment")
    chosen = columns(targets, "targets", data.shape[1])
    origins = windowing.origins(len(data))
    if len(origins) == 0:
        raise ValueError(
            f"segment has {len(data)} rows but one example spans {windowing.span} "
            f"(window {windowing.window} + lead {windowing.lead} + horizon "
            f"{windowing.horizon} - 1); use a longer segment or a smaller window"
        )
    inputs = data[windowing.input_rows(origins)]
    answers = data[windowing.target_rows(origins)][:, :, chosen]
    return inputs, answers, origins
