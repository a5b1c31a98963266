"""A tiny study for the experiment framework's tests: jobs that take a known time,
fail, kill their own process, or take another job's result."""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, cell
from isthmus.studies import StudyTable

NAME = "toy"
TITLE = "a toy study"
FULL = {"draws": 50, "schemes": ["fast", "slow"], "sleep_s": 0.0}
QUICK = {"draws": 20, "schemes": ["fast", "slow"], "sleep_s": 0.0}
DEPARTURES = ()


def draw(scheme: str, seed: int, draws: int, sleep_s: float) -> dict:
    """Mean of `draws` exponential samples, scheme 'slow' twice the mean of 'fast'."""
    time.sleep(sleep_s)
    rng = np.random.default_rng([seed, len(scheme)])
    scale = 2.0 if scheme == "slow" else 1.0
    return {"mean": float(rng.exponential(scale, draws).mean()), "pid": os.getpid()}


def total(seed: int, parts: dict) -> dict:
    return {"total": parts["mean"] * 10}


def fail(seed: int) -> dict:
    raise RuntimeError(f"job for seed {seed} broke")


def die(seed: int) -> dict:
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    out = [
        Job(
            "draws",
            scheme,
            seed,
            draw,
            {
                "scheme": scheme,
                "seed": seed,
                "draws": settings["draws"],
                "sleep_s": settings["sleep_s"],
            },
        )
        for seed in seeds
        for scheme in settings["schemes"]
    ]
    out += [
        Job(
            "totals",
            "fast",
            seed,
            total,
            {"seed": seed},
            needs={"parts": f"draws | fast | seed {seed}"},
        )
        for seed in seeds
    ]
    return out


def table(results: Results) -> StudyTable:
    rows = [
        [scheme, cell(results.values("mean", experiment="draws", scheme=scheme), digits=4)]
        for scheme in results.distinct("scheme", experiment="draws")
    ]
    rows.append(["totals", cell(results.values("total", experiment="totals"), digits=4)])
    claim = better(
        "fast is faster than slow",
        results.values("mean", experiment="draws", scheme="fast"),
        results.values("mean", experiment="draws", scheme="slow"),
        lower_is_better=True,
        names=("fast", "slow"),
    )
    return StudyTable("toy", ["scheme", "mean"], rows, [claim])
