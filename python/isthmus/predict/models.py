"""The forecasters by name, as score() and a command line refer to them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from isthmus.predict.arar import Arar
from isthmus.predict.arma import Arma
from isthmus.predict.base import Forecaster
from isthmus.predict.ewma import Ewma
from isthmus.predict.holt_winters import HoltWinters
from isthmus.predict.linear import LinearFit
from isthmus.predict.neural import BiLstm, Dense, Gru, Lstm, Rnn, SkipLstm
from isthmus.registry import Registry

MODELS: Registry[type[Forecaster]] = Registry(
    "model",
    {
        "ewma": Ewma,
        "holt_winters": HoltWinters,
        "linear": LinearFit,
        "arma": Arma,
        "arar": Arar,
        # Neural (neural.py): Diolkos's and IBCN's networks.
        "dense": Dense,
        "rnn": Rnn,
        "gru": Gru,
        "lstm": Lstm,
        "skip_lstm": SkipLstm,
        "bilstm": BiLstm,
    },
)

ModelSpec = str | Callable[..., Forecaster]

NEURAL = ("dense", "rnn", "gru", "lstm", "skip_lstm", "bilstm")
"""The forecasters that need PyTorch (the `neural` extra)."""


def torch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def make(spec: ModelSpec, **options: Any) -> Forecaster:
    """A forecaster from a registered name ("arar") or any callable that takes the
    Forecaster options as keywords and returns one (a class, or e.g.
    functools.partial(HoltWinters, season=24))."""
    if isinstance(spec, str):
        return MODELS.lookup(spec)(**options)
    if not callable(spec):
        raise ValueError(
            f"models entries must be names or Forecaster factories, got {spec!r}; "
            f"use one of {', '.join(MODELS)}"
        )
    model = spec(**options)
    if not isinstance(model, Forecaster):
        raise ValueError(
            f"model factory {spec!r} returned {type(model).__name__}, not a Forecaster; "
            "pass a Forecaster subclass or a partial of one"
        )
    return model
