"""ReplayDB: one switch's recent telemetry snapshots, the training data of a
per-switch forecaster.

A snapshot is one row of values (e.g. each port's throughput) at a timestamp. The
store keeps the latest `capacity` snapshots in time order: when it is full the oldest
is dropped, and a snapshot not strictly later than the newest one stored is refused,
so the rows always read oldest to newest without sorting or gaps in order. Two ways
to draw training data from it:

- split(): the whole store cut chronologically into test, train and validation rows
  (Diolkos: first 20% test, next 60% train, last 20% validation);
- latest(m): the newest m snapshots, the rolling mode for online training, where a
  model is refitted every so often on the most recent window of the network.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from isthmus.predict.arrays import matrix, whole
from isthmus.predict.splits import DIOLKOS_SPLIT, split_rows


class Segments(NamedTuple):
    """Snapshot values (rows × columns) of each segment, in time order."""

    test: np.ndarray
    train: np.ndarray
    validation: np.ndarray


class ReplayDB:
    """capacity: the most snapshots kept; columns: how many values a snapshot holds,
    or their names (e.g. port names); switch: whose snapshots these are, for messages."""

    def __init__(self, capacity: int, columns: int | Sequence[str], *, switch: str = "") -> None:
        self.capacity = whole(capacity, "capacity", minimum=1, example=10_000)
        if isinstance(columns, (int, np.integer)) and not isinstance(columns, bool):
            width = whole(columns, "columns", minimum=1, example=48)
            self.columns = [str(i) for i in range(width)]
        else:
            self.columns = [str(c) for c in columns]
            if not self.columns:
                raise ValueError("columns is empty; give a count or names, e.g. columns=48")
        self.switch = switch
        self._times = np.zeros(self.capacity)
        self._values = np.zeros((self.capacity, len(self.columns)))
        self._start = 0  # slot of the oldest snapshot
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def full(self) -> bool:
        return self._count == self.capacity

    def add(self, time: float, snapshot: object) -> None:
        """Store one snapshot taken at `time`, later than every one stored."""
        row = matrix(snapshot, "snapshot", columns=len(self.columns))
        if len(row) != 1:
            raise ValueError(
                f"snapshot must be one row of {len(self.columns)} values, got {len(row)} "
                "rows; use extend(times, snapshots) for several"
            )
        if type(time) not in (int, float):  # any other form: the general path's checks
            self.extend([time], row)
            return
        stamp = float(time)
        newest = self._times[(self._start + self._count - 1) % self.capacity]
        if not (np.isfinite(stamp) and (not self._count or stamp > newest)):
            self._check_times(np.array([stamp]), rows=1)  # raises, saying what is wrong
        self._put(stamp, row[0])

    def extend(self, times: object, snapshots: object) -> None:
        """Store snapshots (rows × columns) taken at increasing `times`."""
        stamps = np.asarray(times, dtype=np.float64).reshape(-1)
        rows = matrix(snapshots, "snapshots", columns=len(self.columns))
        self._check_times(stamps, len(rows))
        for stamp, row in zip(stamps, rows, strict=True):
            self._put(stamp, row)

    def _check_times(self, stamps: np.ndarray, rows: int) -> None:
        """Refuses times that are not one per row, finite, each after the one before."""
        if len(stamps) != rows:
            raise ValueError(
                f"times has {len(stamps)} entries but snapshots has {rows} rows; "
                "give one time per snapshot"
            )
        if not np.all(np.isfinite(stamps)):
            raise ValueError("times must be finite numbers; drop snapshots without a time")
        newest = self._times[self._slots(1)] if self._count else np.array([-np.inf])
        previous = np.concatenate([newest, stamps[:-1]])
        late = np.flatnonzero(stamps <= previous)
        if len(late):
            i = late[0]
            raise ValueError(
                f"ReplayDB{' ' + repr(self.switch) if self.switch else ''}: snapshot time "
                f"{stamps[i]:g} is not after the previous time {previous[i]:g}; "
                "add snapshots in strictly increasing time order"
            )

    def _put(self, stamp: float, row: np.ndarray) -> None:
        slot = (self._start + self._count) % self.capacity
        if self.full:
            self._start = (self._start + 1) % self.capacity  # drop the oldest
        else:
            self._count += 1
        self._times[slot] = stamp
        self._values[slot] = row

    def _slots(self, m: int) -> np.ndarray:
        """The slots of the newest `m` snapshots (all, if fewer are stored), oldest
        first."""
        first = self._count - min(m, self._count)
        return (self._start + np.arange(first, self._count)) % self.capacity

    def _ordered(self, array: np.ndarray) -> np.ndarray:
        return array[self._slots(self._count)]

    @property
    def times(self) -> np.ndarray:
        """Timestamps, oldest first (a copy)."""
        return self._ordered(self._times)

    @property
    def values(self) -> np.ndarray:
        """Snapshots (rows × columns), oldest first (a copy)."""
        return self._ordered(self._values)

    def latest(self, m: int) -> np.ndarray:
        """The newest m snapshots, oldest first; all of them while fewer are stored."""
        return self._values[self._slots(whole(m, "m", minimum=1, example=1000))]

    def split(self, fractions: tuple[float, float, float] = DIOLKOS_SPLIT) -> Segments:
        """Test, train and validation rows in time order (Diolkos: 20/60/20)."""
        if self._count < 3:
            raise ValueError(
                f"ReplayDB holds {self._count} snapshots; a split needs at least 3, add more first"
            )
        cut = split_rows(self._count, fractions)
        values = self.values
        return Segments(values[cut.test], values[cut.train], values[cut.validation])
