"""Chronological splits of a snapshot history into test, train and validation rows.

Diolkos splits each switch's history in time order: the first 20% of snapshots are
the test set, the next 60% the training set and the last 20% the validation set. The
segments are contiguous and never shuffled; forecasting examples are cut inside one
segment at a time (see windows.py), so none reads or answers a row of another.
Boundaries are rounded to the nearest row: test ends at round(n·f_test), train at
round(n·(f_test + f_train)).
"""

from __future__ import annotations

from dataclasses import dataclass

from isthmus.predict.arrays import whole

DIOLKOS_SPLIT: tuple[float, float, float] = (0.2, 0.6, 0.2)  # test, train, validation


@dataclass(frozen=True)
class Split:
    test: slice
    train: slice
    validation: slice


def split_rows(rows: int, fractions: tuple[float, float, float] = DIOLKOS_SPLIT) -> Split:
    """Row ranges of the test, train and validation segments, in that time order."""
    whole(rows, "rows", minimum=3, example=100)
    if len(fractions) != 3 or any(
        isinstance(f, bool) or not isinstance(f, (int, float)) or f <= 0 for f in fractions
    ):
        raise ValueError(
            f"fractions must be three positive shares (test, train, validation), got "
            f"{fractions!r}; pass e.g. fractions={DIOLKOS_SPLIT}"
        )
    if abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(
            f"fractions must sum to 1, got {fractions!r} (sum {sum(fractions):g}); "
            f"pass e.g. fractions={DIOLKOS_SPLIT}"
        )
    test_end = round(rows * fractions[0])
    train_end = round(rows * (fractions[0] + fractions[1]))
    if not 0 < test_end < train_end < rows:
        raise ValueError(
            f"{rows} rows are too few to split {fractions!r} with every segment "
            "non-empty; give more rows"
        )
    return Split(slice(0, test_end), slice(test_end, train_end), slice(train_end, rows))
