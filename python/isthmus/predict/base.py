"""The forecaster interface every model in isthmus.predict implements.

A forecaster is fitted on a history (timesteps × variables: for Diolkos one column
per port of a switch, for IBCN a single queue-size column), then kept current online
and asked for the future:

1. fit(history, validation) learns the model's parameters, and the normalisation, from
   the history alone; a model that tunes on held-out rows (the neural nets' early
   stopping) scores itself on `validation`, which it never trains on. Its state then
   stands at the history's last row.
2. update(new_observations) appends rows that follow; parameters stay as fitted
   (refit on a newer history, e.g. a ReplayDB's latest rows, to retrain).
3. reset(context) keeps the parameters but restarts the state from `context`: how a
   model fitted on one segment is evaluated on another that does not follow it.
4. predict(horizon) returns horizon × targets values, for the rows lead, lead+1, …
   steps after the last row observed.

Each observed row passes through the same steps before the model sees it: an
optional trailing moving average (smoothing), then the per-column affine
normalisation frozen at fit time (scaling). Forecasts are mapped back to data units.
Which columns are forecast is `targets` (default: all); a model may read every column
(a multivariate model reads the whole switch) or only the targets' own pasts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from isthmus.predict.arrays import columns, matrix, whole
from isthmus.predict.scaling import SCALINGS, Scaler, Scaling
from isthmus.predict.smoothing import MovingAverage
from isthmus.predict.windows import Windowing

F = TypeVar("F", bound="Forecaster")


class Forecaster(ABC):
    """Options shared by every model:

    window, lead, horizon: see `Windowing`. A window model (linear fit, neural nets)
        reads exactly the last `window` rows; a recursive model (EWMA, Holt-Winters,
        ARMA, ARAR) carries state through every row since fit or reset, and `window` is
        then the fewest rows it must have seen before it forecasts.
    targets: the columns to forecast, by index; None forecasts every column.
    scaling: "zscore", "minmax" or None, fitted on the history given to fit().
    smoothing: width of a trailing moving average applied to what the model reads
        (Diolkos uses 75); None reads the raw rows. Forecasts are of the smoothed
        series, in data units.
    """

    kind: ClassVar[str]

    def __init__(
        self,
        *,
        window: int = 1,
        lead: int = 1,
        horizon: int = 1,
        targets: Sequence[int] | None = None,
        scaling: Scaling | None = "zscore",
        smoothing: int | None = None,
    ) -> None:
        self.windowing = Windowing(window, lead, horizon)
        self._targets_option = None if targets is None else list(targets)
        if scaling is not None and scaling not in SCALINGS:
            raise ValueError(
                f"scaling must be one of {', '.join(SCALINGS)} or None, got {scaling!r}; "
                "pass e.g. scaling='zscore'"
            )
        self.scaling = scaling
        self.smoothing = None if smoothing is None else MovingAverage(smoothing).width
        self.targets: list[int] = []
        self.scaler: Scaler | None = None
        self._smoother: MovingAverage | None = None
        self._width = 0
        self._observed = 0

    @property
    def name(self) -> str:
        """The model and whatever non-default parameters tell it apart."""
        return self.kind

    @property
    def window(self) -> int:
        return self.windowing.window

    @property
    def lead(self) -> int:
        return self.windowing.lead

    @property
    def horizon(self) -> int:
        return self.windowing.horizon

    @property
    def fitted(self) -> bool:
        return self.scaler is not None

    @property
    def variables(self) -> int:
        """How many columns the model was fitted on (0 before fit)."""
        return self._width

    @property
    def min_context(self) -> int:
        """Rows that must be observed since fit or reset before predict() may be called."""
        return max(self.window, self._needs() if self.fitted else 1)

    def fit(self: F, history: object, validation: object | None = None) -> F:
        """Learn from `history`; `validation` (rows of the same variables, e.g. the
        Diolkos split's validation segment) is only scored on, by models that tune on
        held-out rows: it is smoothed from its own first row, as a separate segment, and
        scaled with the history's statistics, so it shapes neither the normalisation nor
        the training examples. Models with nothing to tune ignore it."""
        data = matrix(history, "history")
        held_out = (
            None if validation is None else matrix(validation, "validation", columns=data.shape[1])
        )
        self._start_fit(data.shape[1])
        seen = self._smoother.restart(data) if self._smoother else data
        scaler = Scaler.fit(self.scaling, seen)
        if held_out is not None and self.smoothing:
            held_out = MovingAverage(self.smoothing).restart(held_out)
        self._fit_validated(
            scaler.transform(seen), None if held_out is None else scaler.transform(held_out)
        )
        self.scaler = scaler
        self._observed = len(data)
        return self

    def _start_fit(self, width: int) -> None:
        """Readies a fit on `width` columns: its targets, and a fresh smoother. Unfitted
        until the model's own fit succeeds, so a failed fit leaves nothing that
        predict() would mistake for a fitted model."""
        self.scaler = None
        self.targets = columns(self._targets_option, "targets", width)
        self._width = width
        self._smoother = MovingAverage(self.smoothing) if self.smoothing else None

    def update(self, new_observations: object) -> None:
        """Feed rows that follow the last one observed (one snapshot, or rows of them)."""
        rows = self._checked(new_observations, "new_observations")
        self._observe(self._seen(rows, restart=False))
        self._observed += len(rows)

    def reset(self, context: object) -> None:
        """Keep the fitted parameters; restart the state from `context` alone."""
        rows = self._checked(context, "context")
        if len(rows) < self._needs():
            raise ValueError(
                f"context has {len(rows)} rows but {self.name} needs at least "
                f"{self._needs()} to restart from; give a longer context"
            )
        self._restart(self._seen(rows, restart=True))
        self._observed = len(rows)

    def predict(self, horizon: int | None = None) -> np.ndarray:
        """Forecasts (horizon × targets) for lead … lead+horizon-1 steps ahead."""
        if not self.fitted:
            raise ValueError(f"{self.name} is not fitted; call fit(history) before predict()")
        steps = self.horizon if horizon is None else whole(horizon, "horizon", minimum=1, example=1)
        if self._observed < self.min_context:
            raise ValueError(
                f"{self.name} has observed {self._observed} rows since fit/reset but needs "
                f"{self.min_context} (window {self.window}); update() it with more rows first"
            )
        ahead = self._forecast(self.lead, steps)
        assert self.scaler is not None
        return self.scaler.inverse(ahead, self.targets)

    def _checked(self, values: object, field: str) -> np.ndarray:
        if not self.fitted:
            raise ValueError(f"{self.name} is not fitted; call fit(history) first")
        return matrix(values, field, columns=self._width)

    def _seen(self, rows: np.ndarray, *, restart: bool) -> np.ndarray:
        """Rows as the model sees them: smoothed, then scaled."""
        assert self.scaler is not None
        if self._smoother:
            rows = self._smoother.restart(rows) if restart else self._smoother.push(rows)
        return self.scaler.transform(rows)

    # What a model implements; all data it sees is smoothed and scaled already.

    @abstractmethod
    def _fit(self, data: np.ndarray) -> None:
        """Learn from the whole (rows × variables) training history and stand at its end."""

    def _fit_validated(self, data: np.ndarray, validation: np.ndarray | None) -> None:
        """_fit() for a model that tunes on held-out rows (None when none were given).
        The statistical models fit by likelihood or least squares on the history alone
        and have no training run to stop early, so by default validation goes unused."""
        self._fit(data)

    @abstractmethod
    def _observe(self, rows: np.ndarray) -> None:
        """Advance the state over rows that follow."""

    @abstractmethod
    def _restart(self, rows: np.ndarray) -> None:
        """Rebuild the state from these rows alone, keeping the parameters."""

    @abstractmethod
    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        """(horizon × targets) forecasts for lead … lead+horizon-1 steps ahead. Given
        both, a direct model (one output per step it was trained for) need not make
        the steps before `lead` that a recursive model passes through."""

    def _needs(self) -> int:
        """Rows the fitted model must have seen before it can forecast."""
        return 1


class StatelessForecaster(Forecaster):
    """A forecaster that learns nothing and keeps no state, for oracles and fixed
    references (a forecast from a known schedule, a constant): it implements only
    _forecast. Reads raw rows (no scaling, no smoothing)."""

    def __init__(self, **options: Any) -> None:
        options.update(scaling=None, smoothing=None)
        super().__init__(**options)

    def _fit(self, data: np.ndarray) -> None:
        """Nothing to learn."""

    def _observe(self, rows: np.ndarray) -> None:
        """No state to advance."""

    def _restart(self, rows: np.ndarray) -> None:
        """No state to rebuild."""


class SeriesModel(Protocol):
    """One univariate model: the unit a per-target forecaster runs once per column."""

    @property
    def needs(self) -> int: ...

    def fit(self, y: np.ndarray) -> None: ...

    def restart(self, y: np.ndarray) -> None: ...

    def observe(self, y: np.ndarray) -> None: ...

    def forecast(self, steps: int) -> np.ndarray:
        """Forecasts for 1 … steps ahead."""
        ...


class UnivariateForecaster(Forecaster):
    """One independent model per target column, each reading only that column's past:
    the statistical forecasters. `per_target` holds the fitted models in target order."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.per_target: list[SeriesModel] = []

    @abstractmethod
    def _new_model(self) -> SeriesModel:
        """A fresh, unfitted model for one column."""

    def _fit(self, data: np.ndarray) -> None:
        self.per_target = []
        for c in self.targets:
            model = self._new_model()
            model.fit(data[:, c])
            self.per_target.append(model)

    def _observe(self, rows: np.ndarray) -> None:
        for c, model in zip(self.targets, self.per_target, strict=True):
            model.observe(rows[:, c])

    def _restart(self, rows: np.ndarray) -> None:
        for c, model in zip(self.targets, self.per_target, strict=True):
            model.restart(rows[:, c])

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        steps = lead + horizon - 1
        return np.column_stack([model.forecast(steps)[lead - 1 :] for model in self.per_target])

    def _needs(self) -> int:
        return max(model.needs for model in self.per_target)
