"""score(): how well each forecaster predicts one series, the way Diolkos evaluates
(`forecast_test`: steps 1-3, every forecast kept, for other metrics).

1. Split the series in time order: first 20% test, next 60% train, last 20%
   validation (fractions=… changes the shares).
2. Fit every model on the training rows only (its normalisation too), timing it.
   Each is also handed the validation rows: the neural nets stop training when their
   error on them stops falling; the statistical models ignore them. No model sees a
   test row while fitting.
3. Walk through the test rows. The first origin is the first row at which every
   model has seen enough: at least `window` rows, and what each model's state needs
   (e.g. two seasons for seasonal Holt-Winters). Each model is reset to the test rows
   up to that origin; then at every origin t it predicts rows t+lead … t+lead+horizon−1,
   and is updated with row t+1. No model ever sees a row after its origin, and all
   models are scored at the same origins on the same rows.
4. Compare with the test rows as given (with smoothing=…, the models read smoothed
   rows but are scored against the raw ones; to score against a smoothed series
   instead, pass moving_average(series, width)) over every origin, step and target:
   MAE and SDAE of the absolute relative error in percent (pairs whose actual value is
   0 are left out and counted), MSE in the data's units squared, training time in
   seconds and the mean time of one predict() call in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from isthmus.predict.arrays import matrix
from isthmus.predict.base import Forecaster
from isthmus.predict.metrics import mae_pct, mse, sdae_pct
from isthmus.predict.models import ModelSpec, make
from isthmus.predict.splits import DIOLKOS_SPLIT, split_rows
from isthmus.predict.windows import Windowing


@dataclass(frozen=True)
class TestForecasts:
    """What every model forecast on the test rows (steps 1-3 of the module's protocol)."""

    actual: np.ndarray
    """The test rows forecast, at every origin: origins x horizon x targets."""
    predicted: dict[str, np.ndarray]
    """Each model's forecasts, by name, shaped as `actual`."""
    train_s: dict[str, float]
    infer_s: dict[str, float]
    """Each model's predict() time over every origin, in seconds."""
    setup: dict


def forecast_test(
    series: np.ndarray,
    models: Sequence[ModelSpec] | Mapping[str, ModelSpec],
    window: int,
    lead: int = 1,
    horizon: int = 1,
    *,
    targets: Sequence[int] | None = None,
    smoothing: int | None = None,
    fractions: tuple[float, float, float] = DIOLKOS_SPLIT,
) -> TestForecasts:
    """Steps 1-3 of the protocol for `series`, every forecast kept. `models` as for
    `score`, or a mapping from the name to show to a spec (two variants of one model)."""
    data = matrix(series, "series")
    windowing = Windowing(window, lead, horizon)
    if isinstance(models, (str, bytes)) or not models:
        raise ValueError("models must be a non-empty list, e.g. models=['ewma', 'arar']")
    cut = split_rows(len(data), fractions)
    train, test, validation = data[cut.train], data[cut.test], data[cut.validation]
    options = {
        "window": window,
        "lead": lead,
        "horizon": horizon,
        "targets": targets,
        "smoothing": smoothing,
    }
    if isinstance(models, Mapping):
        forecasters = {name: make(spec, **options) for name, spec in models.items()}
    else:
        made = [make(spec, **options) for spec in models]
        names = [f.name for f in made]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                f"models has {', '.join(repeated)} more than once; give each model once, "
                "or different parameters"
            )
        forecasters = dict(zip(names, made, strict=True))

    train_s = {}
    for name, forecaster in forecasters.items():
        started = time.perf_counter()
        forecaster.fit(train, validation)
        train_s[name] = time.perf_counter() - started

    first = max(f.min_context for f in forecasters.values()) - 1
    origins = windowing.origins(len(test), first=first)
    if len(origins) == 0:
        raise ValueError(
            f"the test segment has {len(test)} rows but the first forecast needs "
            f"{first + 1} rows of context plus lead {lead} + horizon {horizon} - 1 more; "
            "give a longer series or a smaller window, lead, horizon or season"
        )
    chosen = next(iter(forecasters.values())).targets
    actual = test[windowing.target_rows(origins)][:, :, chosen]
    predicted, infer_s = {}, {}
    for name, forecaster in forecasters.items():
        predicted[name], infer_s[name] = _walk(forecaster, test, origins)
    setup = {
        "window": window,
        "lead": lead,
        "horizon": horizon,
        "targets": chosen,
        "smoothing": smoothing,
        "rows": {
            "test": len(test),
            "train": len(train),
            "validation": cut.validation.stop - cut.validation.start,
        },
        "first_origin": int(origins[0]),
        "origins": len(origins),
        "zero_actuals_left_out": int(np.count_nonzero(actual == 0)),
    }
    return TestForecasts(actual, predicted, train_s, infer_s, setup)


def score(
    series: np.ndarray,
    models: Sequence[ModelSpec] | Mapping[str, ModelSpec],
    window: int,
    lead: int = 1,
    horizon: int = 1,
    *,
    targets: Sequence[int] | None = None,
    smoothing: int | None = None,
    fractions: tuple[float, float, float] = DIOLKOS_SPLIT,
) -> dict:
    """{"models": {name: {"mae_pct", "sdae_pct", "mse", "train_s", "infer_ms"}},
    "setup": {…}} for `series` (a 1-D series or timesteps × variables). `models` are
    registered names ("ewma", "arar", "gru", …; see MODELS) or factories
    taking the Forecaster options (e.g. functools.partial(HoltWinters, season=24)), or
    a mapping from names to them; window, lead, horizon, targets and smoothing are
    passed to each."""
    run = forecast_test(
        series,
        models,
        window,
        lead,
        horizon,
        targets=targets,
        smoothing=smoothing,
        fractions=fractions,
    )
    origins = run.setup["origins"]
    results = {
        name: {
            "mae_pct": mae_pct(run.actual, predicted),
            "sdae_pct": sdae_pct(run.actual, predicted),
            "mse": mse(run.actual, predicted),
            "train_s": run.train_s[name],
            "infer_ms": 1000 * run.infer_s[name] / origins,
        }
        for name, predicted in run.predicted.items()
    }
    return {"models": results, "setup": run.setup}


def _walk(
    forecaster: Forecaster, test: np.ndarray, origins: np.ndarray
) -> tuple[np.ndarray, float]:
    """Forecasts at each origin (origins × horizon × targets) and the total predict time."""
    forecaster.reset(test[: origins[0] + 1])
    predicted = np.empty((len(origins), forecaster.horizon, len(forecaster.targets)))
    spent = 0.0
    for i, origin in enumerate(origins):
        started = time.perf_counter()
        predicted[i] = forecaster.predict()
        spent += time.perf_counter() - started
        if i + 1 < len(origins):
            forecaster.update(test[origin + 1])
    return predicted, spent
