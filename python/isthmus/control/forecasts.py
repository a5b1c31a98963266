"""A shared inference service for per-switch forecasters: every switch's forecast of a
decision round computed in one call, each switch reading back only its own.

Agents submit their forecaster (kept current by update() at every sample) at sampling
time; the first agent to ask for its forecast at decision time runs the whole round:
the switches' Dense nets of one shape as one batched product per layer
(`NeuralForecaster.predict_many`), every other model once. Answers are kept per switch
name and handed only to the agent whose `SwitchHandle` asks, so the service batches the
work without giving any agent another switch's view.

It also carries models trained centrally to the switches: `push(switch, model)` before
a run, `pushed(handle)` by the agent on that switch.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from isthmus.control.plane import SwitchHandle
from isthmus.predict.base import Forecaster
from isthmus.predict.models import MODELS, ModelSpec, make
from isthmus.predict.neural import NeuralForecaster

SERVICE_KEY = "isthmus.forecasts"


def app_forecaster(
    model: ModelSpec, model_options: dict[str, Any] | None, **settings: Any
) -> Forecaster:
    """An app's forecaster: `model` (a name of `isthmus.predict.MODELS`, or a callable)
    made with the app's `settings` (window, horizon, ...) over its `model_options`. An
    option the forecaster refuses is refused naming model_options, the app parameter
    it came from."""
    if isinstance(model, str) and model not in MODELS:
        return make(model)  # refused, naming the model and those there are
    options = dict(model_options or {})
    twice = sorted(set(options) & set(settings))
    if twice:
        raise ValueError(
            f"model_options: {', '.join(twice)} are the app's own parameters; give them "
            "as such, not among the model's options"
        )
    name = model if isinstance(model, str) else getattr(model, "__name__", "given")
    try:
        return make(model, **options, **settings)
    except (TypeError, ValueError) as e:
        raise ValueError(f"model_options (of the {name} forecaster): {e}") from None


class ForecastService:
    def __init__(self) -> None:
        self._pending: dict[str, Forecaster] = {}
        self._answers: dict[str, np.ndarray] = {}
        self._pushed: dict[str, Forecaster] = {}
        self.round_seconds: list[float] = []
        """Wall time of each batched round (every switch's forecasts)."""

    def push(self, switch: str, model: Forecaster) -> None:
        """Give switch `switch` a fitted model (trained centrally) to use from its start.
        A model keeps one switch's state: push each switch its own (copy.deepcopy)."""
        if not model.fitted:
            raise ValueError(f"the model pushed to '{switch}' is not fitted; fit it first")
        if any(m is model and s != switch for s, m in self._pushed.items()):
            raise ValueError(
                f"that model was pushed to another switch already; push '{switch}' its own "
                "copy (copy.deepcopy(model)): a model follows one switch's rows"
            )
        self._pushed[switch] = model

    def pushed(self, handle: SwitchHandle) -> Forecaster | None:
        return self._pushed.get(handle.name)

    def submit(self, handle: SwitchHandle, model: Forecaster) -> None:
        """This switch wants a forecast this round from `model`, current to its newest
        row."""
        self._pending[handle.name] = model

    def forecast(self, handle: SwitchHandle) -> np.ndarray:
        """This switch's forecast (horizon × targets) of the current round."""
        if handle.name not in self._answers:
            if handle.name not in self._pending:
                raise ValueError(f"'{handle.name}' asked for a forecast it did not submit")
            self._run_round()
        return self._answers.pop(handle.name)

    def _run_round(self) -> None:
        started = time.perf_counter()
        names = list(self._pending)
        neural = [n for n in names if isinstance(self._pending[n], NeuralForecaster)]
        for name in names:
            if name not in neural:
                self._answers[name] = self._pending[name].predict()
        if neural:
            models = [self._pending[n] for n in neural]
            answers = NeuralForecaster.predict_many(models)  # type: ignore[arg-type]
            self._answers.update(zip(neural, answers, strict=True))
        self._pending.clear()
        self.round_seconds.append(time.perf_counter() - started)
