"""ACC's offline pre-training on incast mixes and its learning curve (greedy reward on a
held-out mix)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from isthmus.control.apps.acc import model_states
from isthmus.experiments import Results
from isthmus.experiments.verdicts import cell, within
from isthmus.learning.ecn_queues import NUM_TEMPLATES
from isthmus.simulation import Simulation
from isthmus.studies import Claim
from isthmus.studies.acc.best_static import TemplateEcn, loaded_reward
from isthmus.studies.acc.testbed import (
    TESTBED,
    FabricSize,
    control,
    models_json,
    network,
    own_plane,
)
from isthmus.studies.acc.traffic import incast_mix


def pretrain(seed: int, episodes: int, episode_ms: float, size: FabricSize = TESTBED) -> dict:
    """Offline pre-training on incast mixes on a fabric of `size` (`pretrain_on`);
    returns the models (which fit that fabric only) in JSON form, the learning curve
    on one held-out incast mix and the cost."""
    held_out = int(np.random.default_rng([seed, 2022]).integers(2**31))

    def training_run(rng: np.random.Generator) -> Simulation:
        sim = network(int(rng.integers(2**31)), size=size)
        incast_mix(sim, rng, 0.0, episode_ms / 1e3)
        return sim

    def held_out_run() -> Simulation:
        sim = network(held_out, size=size)
        incast_mix(sim, np.random.default_rng([held_out, 2023]), 0.0, episode_ms / 1e3)
        return sim

    return pretrain_on(training_run, held_out_run, seed, episodes, episode_ms)


def pretrain_on(
    training_run: Callable[[np.random.Generator], Simulation],
    held_out_run: Callable[[], Simulation],
    seed: int,
    episodes: int,
    episode_ms: float,
    validation_run: Callable[[], Simulation] | None = None,
) -> dict:
    """Pre-training, the episodes one run of the same learners (weights, replay memory
    and exploration carry over), each on `training_run(rng)`'s network and traffic
    (its draws from one stream of `seed`). Returns the models in JSON form, the
    learning curve and the cost. The curve is a greedy evaluation after each episode
    on `held_out_run()` (traffic never trained on), over loaded queues only
    (`loaded_reward`); beside it, every template held on that traffic
    (`held_out_static`), the best of which is what the curve should reach.

    The models returned are the last episode's, or, given `validation_run` (traffic
    neither trained nor judged on), those of the episode whose greedy reward there was
    highest: a DQN's greedy policy swings between episodes, and choosing the checkpoint
    on validation traffic is the usual guard against keeping a swing's low. `kept`
    names that episode (from 1); its point on the curve is what the learner is judged
    by, the held-out traffic having had no say in the choice."""
    rng = np.random.default_rng([seed, 2021])
    learners: dict = {}
    curve, validation, simulated, started = [], [], 0.0, time.perf_counter()
    agents: list = []
    kept, models = 0, {}
    for episode in range(1, episodes + 1):
        sim = training_run(rng)
        plane, agents = control(sim, "ACC", None, seed, train=True)
        for agent in agents:
            if agent.switch.name in learners:
                agent.carry_on(learners[agent.switch.name])
        plane.run(f"{episode_ms}ms")
        simulated += episode_ms / 1e3
        learners = {a.switch.name: a.dqn for a in agents}
        latest = {"models": models_json(model_states(agents))}
        curve.append(greedy_on(held_out_run(), episode_ms, latest))
        if validation_run is not None:
            validation.append(greedy_on(validation_run(), episode_ms, latest))
        if validation_run is None or validation[-1] > max(validation[:-1], default=-np.inf):
            kept, models = episode, latest
    wall = time.perf_counter() - started
    return {
        **models,
        "curve": curve,
        "kept": kept,
        **({"validation": validation} if validation_run is not None else {}),
        "held_out_static": [static_on(held_out_run(), episode_ms, t) for t in range(NUM_TEMPLATES)],
        "simulated_s": simulated,
        "wall_s": wall,
        "busy_intervals": int(sum(a.busy_intervals for a in agents)),
    }


def kept_reward(training: dict) -> float:
    """The held-out greedy reward of the models a training kept (its last episode's
    where it predates `kept`)."""
    return training["curve"][training.get("kept", len(training["curve"])) - 1]


def greedy_on(sim: Simulation, span_ms: float, trained: dict) -> float:
    """The learners of `trained` acting greedily, without training, for `span_ms` on
    `sim` (its network and traffic, their random streams from its seed): their mean
    reward over loaded queues."""
    plane, agents = control(sim, "ACC", trained, sim.seed, train=False, greedy=True)
    plane.run(f"{span_ms}ms")
    return loaded_reward(agents)


def static_on(sim: Simulation, span_ms: float, template: int) -> float:
    """One template held on every port of `sim` for `span_ms` (the held-out traffic
    the learning curve is measured on): the same score, the yardstick the curve
    should reach."""
    plane = own_plane(sim)
    agents = plane.add_agents(TemplateEcn, template=template)
    plane.run(f"{span_ms}ms")
    return loaded_reward(agents)


CONVERGED_WITHIN = 0.01
"""How close to the held-out mix's best static template the curve must come to count
as converged (as the bottleneck check's `LEARNED_WITHIN`)."""


def converged_after(curve: list[float], best_static: float) -> int | None:
    """The first episode (from 1) after which the greedy reward came within
    `CONVERGED_WITHIN` of `best_static`; None if it never did."""
    for episode, reward in enumerate(curve, start=1):
        if reward >= best_static - CONVERGED_WITHIN:
            return episode
    return None


def pretraining_rows(results: Results) -> list[list[str]]:
    """The curve's start and end beside the held-out mix's best and median template."""
    runs = results.select(experiment="training")
    return [
        [
            "pre-training, held-out incast mix reward | ACC greedy, first -> last episode",
            cell([r["curve"][0] for r in runs], 3),
            cell([r["curve"][-1] for r in runs], 3),
            "",
            "",
        ],
        [
            "pre-training, held-out incast mix reward | best static, median template",
            cell([max(r["held_out_static"]) for r in runs], 3),
            cell([float(np.median(r["held_out_static"])) for r in runs], 3),
            "",
            "",
        ],
    ]


def pretraining_claim(
    results: Results, traffic: str = "incast mix", learner: str = "ACC", **where
) -> Claim:
    """Pre-trained ACC (`learner`: what the table calls it) acting greedily on `traffic`
    it never trained on earns within `CONVERGED_WITHIN` of the best template held there
    (the training jobs `where` selects, among the study's "training" ones)."""
    runs = results.select(experiment="training", **where)
    statement = (
        f"After pre-training, {learner}'s greedy reward on a held-out {traffic} is within "
        f"{CONVERGED_WITHIN} of the best static template's there"
    )
    gaps = [kept_reward(r) - max(r["held_out_static"]) for r in runs]
    return within(statement, gaps, CONVERGED_WITHIN, "greedy − best static")
