"""score(): how well each forecaster predicts one series, the way Diolkos evaluates.

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
from collections.abc import Sequence

import numpy as np

from isthmus.predict.arrays import matrix
from isthmus.predict.base import Forecaster
from isthmus.predict.metrics import mae_pct, mse, sdae_pct
from isthmus.predict.models import ModelSpec, make
from isthmus.predict.splits import DIOLKOS_SPLIT, split_rows
from isthmus.predict.windows import Windowing


def score(
    series: np.ndarray,
    models: Sequence[ModelSpec],
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
    taking the Forecaster options (e.g. functools.partial(HoltWinters, season=24));
    window, lead, horizon, targets and smoothing are passed to each."""
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
    forecasters = [make(spec, **options) for spec in models]
    names = [f.name for f in forecasters]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(
            f"models has {', '.join(repeated)} more than once; give each model once, "
            "or different parameters"
        )

    train_s = []
    for forecaster in forecasters:
        started = time.perf_counter()
        forecaster.fit(train, validation)
        train_s.append(time.perf_counter() - started)

    first = max(f.min_context for f in forecasters) - 1
    origins = windowing.origins(len(test), first=first)
    if len(origins) == 0:
        raise ValueError(
            f"the test segment has {len(test)} rows but the first forecast needs "
            f"{first + 1} rows of context plus lead {lead} + horizon {horizon} - 1 more; "
            "give a longer series or a smaller window, lead, horizon or season"
        )
    chosen = forecasters[0].targets
    actual = test[windowing.target_rows(origins)][:, :, chosen]
    left_out = int(np.count_nonzero(actual == 0))

    results = {}
    for forecaster, fit_time in zip(forecasters, train_s, strict=True):
        predicted, infer_s = _walk(forecaster, test, origins)
        results[forecaster.name] = {
            "mae_pct": mae_pct(actual, predicted),
            "sdae_pct": sdae_pct(actual, predicted),
            "mse": mse(actual, predicted),
            "train_s": fit_time,
            "infer_ms": 1000 * infer_s / len(origins),
        }
    return {
        "models": results,
        "setup": {
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
            "zero_actuals_left_out": left_out,
        },
    }


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
