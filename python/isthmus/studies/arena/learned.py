"""Learned schemes in the arena: trained on training traffic before they are scored,
then scored on the arena's own traffic, which they never trained on.

A learned scheme registers a `Learning`: `train` runs before any of its cells (one job
a seed, its result kept with the study's), `attach` puts what it learned on a cell's
built run. Both learners train on web search over the leaf-spine at training seeds
and are judged on held-out web search:

- ACC (`ACC`): its shared Q-network pre-trained (`pretrain_on`, as `isthmus reproduce
  acc` pre-trains on incast mixes), its learning curve a greedy evaluation on held-out
  web search beside every static template held there.
- IBCN (`IBCN`): its LSTM fitted on the switches' queues polled under plain BCN (as
  the paper collects its training set before IBCN acts), one model every switch
  shares so that it runs on every fabric, early-stopped on a validation run; its
  learning curve the held-out forecast error after 1, 2, 4, ... training runs,
  beside persistence's (the last poll), the forecast it must beat to have learned
  anything."""

from __future__ import annotations

import base64
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from isthmus.studies.arena.scenarios import build

if TYPE_CHECKING:
    from isthmus.control import ControlPlane
    from isthmus.experiments import Results
    from isthmus.simulation import Simulation
    from isthmus.studies import Claim
    from isthmus.studies.arena.schemes import Scheme


@dataclass(frozen=True)
class Learning:
    """How a learned scheme learns: `train(scheme, seed, **settings)` on training
    traffic returns what it learned as JSON, with its cost (`wall_s`) and learning curve
    (`curve`, beside `held_out_static`); `attach(sim, trained, seed)` puts it on a
    cell's built run and returns the run's control plane; `judge(runs, results)`, from
    its training jobs' results, whether it learned what it should (a claim) and its
    learning curve in words (a note)."""

    name: str
    """The learner's name, which keys its number of training episodes in the study's
    settings (`training_episodes`)."""
    train: Callable[..., dict]
    attach: Callable[[Simulation, dict, int], ControlPlane]
    judge: Callable[[str, Results], tuple[Claim, str]]
    on_every_switch: bool
    """Whether it runs an agent on every switch (ACC), so it combines with no other
    scheme that does."""


TRAINING = "training"
"""The experiment name of learned schemes' training jobs."""
TRAINING_FABRIC = "leafspine"
TRAINING_WORKLOAD = "websearch"
HELD_OUT_LOAD = 0.5
"""The load of the held-out web search the learning curve is measured on (the training
episodes draw theirs from the study's loads)."""


def train_acc(
    scheme: Scheme, seed: int, episodes: int, episode_ms: float, loads: list[float]
) -> dict:
    """ACC's shared network pre-trained on `episodes` runs of web search on the
    leaf-spine, each `episode_ms` long at a load drawn from `loads`, over the scheme's
    own network (DCQCN senders, PFC), keeping the episode's network that did best on a
    validation run of web search; traffic seeds (training, validation, held out) are
    drawn from streams of `seed`, so never the arena's own (its seeds are small
    integers)."""
    from isthmus.studies.acc.pretraining import pretrain_on

    stop = {"stop": f"{episode_ms}ms"}
    held_out, validation = (
        int(draw) for draw in np.random.default_rng([seed, 2022]).integers(2**31, size=2)
    )

    def training_run(rng: np.random.Generator) -> Simulation:
        load = float(rng.choice(loads))
        traffic_seed = int(rng.integers(2**31))
        return build(TRAINING_WORKLOAD, TRAINING_FABRIC, scheme, load, traffic_seed, **stop)[1]

    def held_out_run() -> Simulation:
        return build(TRAINING_WORKLOAD, TRAINING_FABRIC, scheme, HELD_OUT_LOAD, held_out, **stop)[1]

    def validation_run() -> Simulation:
        return build(TRAINING_WORKLOAD, TRAINING_FABRIC, scheme, HELD_OUT_LOAD, validation, **stop)[
            1
        ]

    return pretrain_on(training_run, held_out_run, seed, episodes, episode_ms, validation_run)


def attach_acc(sim: Simulation, trained: dict, seed: int) -> ControlPlane:
    """ACC's agents on every switch, their shared network `trained`'s, learning on
    online with exploration at its floor (as `isthmus reproduce acc` evaluates it), on
    the run's control plane beside its other programs (a combination's path scheme)."""
    from isthmus.studies.acc.testbed import control

    plane, _ = control(sim, "ACC", trained, seed, train=True)
    return plane


def judge_acc(scheme: str, results: Results) -> tuple[Claim, str]:
    """After its training, the greedy reward of the ACC it kept on held-out web search
    comes within `CONVERGED_WITHIN` of the best template held there (what it should
    reach), and its learning curve (first, last and kept episode) beside that
    template's and the cost."""
    from isthmus.experiments.verdicts import cell
    from isthmus.studies.acc.pretraining import kept_reward, pretraining_claim

    runs = results.select(experiment=TRAINING, scheme=scheme)
    traffic = f"web search at load {HELD_OUT_LOAD} on the {TRAINING_FABRIC}"
    note = (
        f"{scheme}'s training ({len(runs[0]['curve'])} episodes of web search on the "
        f"{TRAINING_FABRIC}, {cell([r['wall_s'] for r in runs], 0)} s of CPU): greedy "
        f"reward on held-out {traffic}, after the first episode "
        f"{cell([r['curve'][0] for r in runs], 3)}, after the last "
        f"{cell([r['curve'][-1] for r in runs], 3)}, of the episode kept (the best on "
        f"validation traffic: episodes {', '.join(str(r['kept']) for r in runs)}) "
        f"{cell([kept_reward(r) for r in runs], 3)}; the best static template's there "
        f"{cell([max(r['held_out_static']) for r in runs], 3)}"
    )
    learner = "ACC" if scheme == "acc" else f"{scheme}'s ACC"
    return pretraining_claim(results, traffic, learner, scheme=scheme), note


ACC = Learning("acc", train_acc, attach_acc, judge_acc, on_every_switch=True)


IBCN_APP = {
    "name": "ibcn",
    "model": "lstm",
    "model_options": {"layers": 4},
    "interval": "100us",
    "window": 10,
    "horizon": 5,
}
"""IBCN as the arena runs it: polls every switch every 100 us (its paper's 1 s scaled
by 10^-4), and a 4-layer LSTM (the paper's) forecasts each switch's next 5 queue sizes
from its last 10 polls."""


def train_ibcn(
    scheme: Scheme, seed: int, episodes: int, episode_ms: float, loads: list[float]
) -> dict:
    """IBCN's forecaster fitted on every switch's queue polled every interval in
    `episodes` runs of web search on the leaf-spine (plain BCN, each `episode_ms` of
    traffic at a load drawn from `loads`), one series a switch and run (`fit_segments`:
    one model every switch shares), early-stopped on a validation run's; its learning
    curve the WAPE of its forecasts of a held-out run after 1, 2, 4, ... of the runs,
    beside persistence's. Traffic seeds are drawn from streams of `seed`, never the
    arena's."""
    from isthmus.control.forecasts import app_forecaster

    started = time.process_time()
    draws = np.random.default_rng([seed, 2017])
    held_out_seed, validation_seed = (int(d) for d in draws.integers(2**31, size=2))
    runs = [
        _polled_queues(scheme, float(draws.choice(loads)), int(draws.integers(2**31)), episode_ms)
        for _ in range(episodes)
    ]
    validation = _polled_queues(scheme, HELD_OUT_LOAD, validation_seed, episode_ms)
    held_out = _polled_queues(scheme, HELD_OUT_LOAD, held_out_seed, episode_ms)
    sizes = sorted({*(2**i for i in range(episodes.bit_length()) if 2**i < episodes), episodes})
    window, horizon = IBCN_APP["window"], IBCN_APP["horizon"]
    contexts, actual = _windows(held_out, window, horizon)
    curve = []
    for size in sizes:
        model = app_forecaster(
            IBCN_APP["model"],
            IBCN_APP["model_options"],
            window=window,
            horizon=horizon,
            seed=seed,
            device="cpu",
        )
        model.fit_segments(_series(runs[:size]), _series([validation]))
        # As the app forecasts: negative forecasts cut to 0.
        predicted = np.maximum(model.predict_batch(contexts[:, :, None])[:, :, 0], 0.0)
        curve.append(_wape(actual, predicted))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ibcn.pt"
        model.save(path)
        saved = base64.b64encode(path.read_bytes()).decode()
    return {
        "model": saved,
        "curve": curve,
        "curve_runs": sizes,
        "persistence_wape": _wape(actual, np.repeat(contexts[:, -1:], horizon, 1)),
        "epochs": model.training_run.epochs,
        "best_epoch": model.training_run.best_epoch,
        "training_polls": sum(len(run) for run in runs),
        "wall_s": time.process_time() - started,
    }


def _polled_queues(scheme: Scheme, load: float, traffic_seed: int, episode_ms: float) -> np.ndarray:
    """Polls x switches: every switch's queue (its fullest port's, packets) polled
    every IBCN interval in one run of web search on the leaf-spine, under the scheme's
    network with no IBCN acting (plain BCN)."""
    from isthmus.studies.acc.testbed import own_plane
    from isthmus.studies.ibcn.prediction import QueuePoller

    spec, sim = build(
        TRAINING_WORKLOAD, TRAINING_FABRIC, scheme, load, traffic_seed, stop=f"{episode_ms}ms"
    )
    poller = own_plane(sim).add(QueuePoller(IBCN_APP["interval"]))
    spec.execute(sim)
    return np.array(poller.rows)


def _series(runs: list[np.ndarray]) -> list[np.ndarray]:
    """One segment (polls x 1) per switch and run."""
    return [run[:, [column]] for run in runs for column in range(run.shape[1])]


def _windows(polls: np.ndarray, window: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (switch, origin) of `polls`: the `window` polls before it (n x window) and
    the `horizon` polls from it (n x horizon)."""
    origins = range(window, len(polls) - horizon + 1)
    contexts = np.array([polls[t - window : t, s] for s in range(polls.shape[1]) for t in origins])
    actual = np.array([polls[t : t + horizon, s] for s in range(polls.shape[1]) for t in origins])
    return contexts, actual


def _wape(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Weighted absolute percentage error, the IBCN study's ranking error (%)."""
    from isthmus.studies.ibcn.prediction import errors

    return errors(actual, predicted)["wape_pct"]


def attach_ibcn(sim: Simulation, trained: dict, seed: int) -> ControlPlane:
    """IBCN with `trained`'s forecaster on the run's control plane (made, with no
    latency, if it has none), beside its other programs."""
    from isthmus.control.apps.ibcn import Ibcn
    from isthmus.predict.neural import NeuralForecaster
    from isthmus.studies.acc.testbed import own_plane

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ibcn.pt"
        path.write_bytes(base64.b64decode(trained["model"]))
        model = NeuralForecaster.load(path)
    plane = own_plane(sim)
    plane.add(Ibcn(forecaster=model, interval=IBCN_APP["interval"]))
    return plane


def judge_ibcn(scheme: str, results: Results) -> tuple[Claim, str]:
    """After its training, IBCN's forecasts of held-out web search's queues beat
    persistence's (what a forecaster must do to have learned anything), and its
    learning curve in words."""
    from isthmus.experiments.verdicts import cell, exceeds

    runs = results.select(experiment=TRAINING, scheme=scheme)
    traffic = f"web search at load {HELD_OUT_LOAD} on the {TRAINING_FABRIC}"
    learner = "IBCN" if scheme == "ibcn" else f"{scheme}'s IBCN"
    # Paired: both forecast the same held-out run of each seed.
    claim = exceeds(
        f"After training on web search, {learner}'s forecaster forecasts the switches' "
        f"queues of a held-out {traffic} with a lower WAPE than persistence (the last "
        "poll); persistence's WAPE less the forecaster's, in points",
        [r["persistence_wape"] - r["curve"][-1] for r in runs],
        0.0,
        unit=" points",
    )
    sizes = runs[0]["curve_runs"]
    points = ", ".join(
        f"{size} {'run' if size == 1 else 'runs'} {cell([r['curve'][i] for r in runs], 1)}"
        for i, size in enumerate(sizes)
    )
    note = (
        f"{scheme}'s training ({sizes[-1]} runs of web search on the {TRAINING_FABRIC}, "
        f"{cell([r['training_polls'] for r in runs], 0)} polls of every switch, "
        f"{cell([r['wall_s'] for r in runs], 0)} s of CPU, best epoch "
        f"{', '.join(str(r['best_epoch']) for r in runs)}): WAPE (%) forecasting held-out "
        f"{traffic} after {points}; persistence's {cell([r['persistence_wape'] for r in runs], 1)}"
    )
    return claim, note


IBCN = Learning("ibcn", train_ibcn, attach_ibcn, judge_ibcn, on_every_switch=False)
