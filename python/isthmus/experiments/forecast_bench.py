"""The forecasting benchmark: every forecaster scored on real traffic series for
several (window BS, lead N, horizon O) settings, as Diolkos's Table 1 (MAE % ± SDAE
per model) and IBCN's Table IV (error % per algorithm) report them.

Besides the shipped real traces, it scores series recorded from an Isthmus simulation
(`recorded_series`): per-port throughput of a leaf switch and the busiest queue.

Seasonal Holt-Winters runs with the series' daily season (288 five-minute steps, 24
hourly ones) where one is known or given. The neural nets run at their defaults (32
hidden units, Adam, at most 100 epochs with early stopping after 10 without progress
on the validation split, one CPU thread): --quick, all of it, measured 68 s on a
2-core CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from isthmus.predict.holt_winters import HoltWinters
from isthmus.predict.models import MODELS, ModelSpec
from isthmus.predict.scoring import score
from isthmus.predict.series import bundled_traces, load_trace
from isthmus.predict.smoothing import moving_average

SETTINGS: tuple[tuple[int, int, int], ...] = ((10, 1, 1), (30, 5, 5))
QUICK_SETTINGS: tuple[tuple[int, int, int], ...] = ((10, 1, 1),)
QUICK_ROWS = 4000
"""--quick scores the last this many rows of each series."""

RECORDED_SMOOTHING = 20

DAILY_SEASON = {"cortez-eu-5min": 288, "cortez-eu-hourly": 24, "jiang-hourly": 24}


@dataclass(frozen=True)
class Series:
    name: str
    values: np.ndarray
    season: int | None


def bundled_series() -> list[Series]:
    return [Series(n, load_trace(n), DAILY_SEASON.get(n)) for n in bundled_traces()]


def recorded_series(seed: int = 1) -> list[Series]:
    """leaf0's port throughputs and the busiest queue from the forecast-recorder
    scenario (isthmus.experiments.recorded_series)."""
    from isthmus.experiments.recorded_series import busiest_queue, record, switch_throughput

    recording = record(seed)
    # 250 us counters are bursty (a port is idle in many samples); like Diolkos, which
    # smooths its counters, score a trailing moving average (20 samples: 5 ms).
    return [
        Series(
            "isthmus-leaf0-throughput",
            moving_average(switch_throughput(recording, "leaf0"), RECORDED_SMOOTHING),
            None,
        ),
        Series(
            "isthmus-busiest-queue",
            moving_average(busiest_queue(recording), RECORDED_SMOOTHING),
            None,
        ),
    ]


def model_specs(season: int | None, models: list[str] | None = None) -> list[ModelSpec]:
    """The named forecasters (default: every registered one), plus seasonal Holt-Winters
    when Holt-Winters runs and a season is known."""
    chosen = list(MODELS) if models is None else models
    unknown = [m for m in chosen if m not in MODELS]
    if unknown or not chosen:
        raise ValueError(
            f"unknown model(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(MODELS)}"
        )
    specs: list[ModelSpec] = list(chosen)
    if season is not None and "holt_winters" in chosen:
        specs.append(partial(HoltWinters, season=season))
    return specs


def run(
    series: list[Series],
    *,
    quick: bool = False,
    settings: tuple[tuple[int, int, int], ...] | None = None,
    models: list[str] | None = None,
    on_result: Callable[[str, tuple[int, int, int]], None] = lambda name, setting: None,
) -> list[dict]:
    """One result per (series, setting): {"series", "window", "lead", "horizon",
    "models": {name: {"mae_pct", "sdae_pct", "mse", "train_s", "infer_ms"}}}."""
    chosen = settings or (QUICK_SETTINGS if quick else SETTINGS)
    results = []
    for s in series:
        values = s.values[-QUICK_ROWS:] if quick else s.values
        specs = model_specs(s.season, models)
        for window, lead, horizon in chosen:
            scored = score(values, specs, window, lead, horizon)
            results.append(
                {
                    "series": s.name,
                    "window": window,
                    "lead": lead,
                    "horizon": horizon,
                    "models": scored["models"],
                    "setup": scored["setup"],
                }
            )
            on_result(s.name, (window, lead, horizon))
    return results
