"""Moving-average smoothing, trailing (causal): the smoothed value at t is the mean of
rows t-w+1 … t, never of later rows, so smoothing cannot carry a future value into a
forecast's inputs. Diolkos smooths with w = 75. Until w rows have been seen the mean is
over the rows there are.

The smoother is streaming: it remembers the last w-1 rows, so smoothing a history
and then its continuation row by row gives the same values as smoothing it all at once.
"""

from __future__ import annotations

import numpy as np

from isthmus.predict.arrays import matrix, whole


class MovingAverage:
    def __init__(self, width: int) -> None:
        self.width = whole(width, "smoothing", minimum=1, example=75)
        self._tail: np.ndarray | None = None

    def restart(self, rows: np.ndarray) -> np.ndarray:
        """Forget earlier rows and smooth `rows` as the start of a series."""
        self._tail = None
        return self.push(rows)

    def push(self, rows: np.ndarray) -> np.ndarray:
        """Smooth `rows`, which follow every row seen since the last restart."""
        if self.width == 1 and len(rows) == 1:
            # One row is its own mean: what the sums below give, exactly, for less.
            return np.array(rows, dtype=np.float64)
        tail = self._tail if self._tail is not None else rows[:0]
        joined = np.concatenate([tail, rows])
        sums = np.cumsum(np.vstack([np.zeros((1, joined.shape[1])), joined]), axis=0)
        ends = np.arange(len(tail) + 1, len(joined) + 1)
        starts = np.maximum(ends - self.width, 0)
        # The tail holds at most width-1 rows, so a row whose window reaches back before
        # it is one near the series start, where the mean is over the rows there are.
        smoothed = (sums[ends] - sums[starts]) / (ends - starts)[:, None]
        self._tail = joined[len(joined) - (self.width - 1) :] if self.width > 1 else joined[:0]
        return smoothed


def moving_average(series: object, width: int) -> np.ndarray:
    """The trailing moving average of a whole series (1-D, or timesteps × variables),
    in the shape given: e.g. to score forecasts against a smoothed series rather than
    the raw one, smooth it first and pass the result to score()."""
    data = matrix(series, "series")
    smoothed = MovingAverage(width).restart(data)
    return smoothed[:, 0] if np.ndim(series) == 1 else smoothed
