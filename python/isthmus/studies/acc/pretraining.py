"""ACC's offline pre-training on incast mixes and its learning curve (greedy reward on a
held-out mix)."""

from __future__ import annotations

import time

import numpy as np

from isthmus.control import ControlPlane
from isthmus.control.apps.acc import model_states
from isthmus.experiments import Results
from isthmus.experiments.verdicts import cell, within
from isthmus.learning.ecn_queues import NUM_TEMPLATES
from isthmus.studies import Claim
from isthmus.studies.acc.best_static import TemplateEcn, loaded_reward
from isthmus.studies.acc.testbed import TESTBED, FabricSize, control, models_json, network
from isthmus.studies.acc.traffic import incast_mix


def pretrain(seed: int, episodes: int, episode_ms: float, size: FabricSize = TESTBED) -> dict:
    """Offline pre-training on incast mixes on a fabric of `size`, the episodes one run
    of the same learners (weights, replay memory and exploration carry over); returns
    the models (which fit that fabric only) in JSON form, the learning curve and the
    cost. The curve is a greedy evaluation after each episode on one held-out incast
    mix, over loaded queues only (`loaded_reward`); beside it, every template held on
    that mix (`static_on_incast`), the best of which is what the curve should reach."""
    rng = np.random.default_rng([seed, 2021])
    held_out = int(np.random.default_rng([seed, 2022]).integers(2**31))
    learners: dict = {}
    curve, simulated, started = [], 0.0, time.perf_counter()
    for _ in range(episodes):
        sim = network(int(rng.integers(2**31)), size=size)
        incast_mix(sim, rng, 0.0, episode_ms / 1e3)
        plane, agents = control(sim, "ACC", None, seed, train=True)
        for agent in agents:
            if agent.switch.name in learners:
                agent.carry_on(learners[agent.switch.name])
        plane.run(f"{episode_ms}ms")
        simulated += episode_ms / 1e3
        learners = {a.switch.name: a.dqn for a in agents}
        models = {"models": models_json(model_states(agents))}
        curve.append(greedy_on_incast(held_out, episode_ms, models, size))
    wall = time.perf_counter() - started
    return {
        **models,
        "curve": curve,
        "held_out_static": [
            static_on_incast(held_out, episode_ms, t, size) for t in range(NUM_TEMPLATES)
        ],
        "simulated_s": simulated,
        "wall_s": wall,
        "busy_intervals": int(sum(a.busy_intervals for a in agents)),
    }


def greedy_on_incast(seed: int, span_ms: float, trained: dict, size: FabricSize) -> float:
    """The learners of `trained` acting greedily, without training, on the incast mix of
    `seed`: their mean reward over loaded queues."""
    sim = network(seed, size=size)
    incast_mix(sim, np.random.default_rng([seed, 2023]), 0.0, span_ms / 1e3)
    plane, agents = control(sim, "ACC", trained, seed, train=False, greedy=True)
    plane.run(f"{span_ms}ms")
    return loaded_reward(agents)


def static_on_incast(seed: int, span_ms: float, template: int, size: FabricSize) -> float:
    """One template held on every port over the incast mix of `seed` (the held-out mix
    the learning curve is measured on): the same score, the yardstick the curve should
    reach."""
    sim = network(seed, size=size)
    incast_mix(sim, np.random.default_rng([seed, 2023]), 0.0, span_ms / 1e3)
    plane = ControlPlane(sim)
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


def pretraining_claim(results: Results) -> Claim:
    """Pre-trained ACC acting greedily on a mix it never trained on earns within
    `CONVERGED_WITHIN` of the best template held there."""
    runs = results.select(experiment="training")
    statement = (
        f"After pre-training, ACC's greedy reward on a held-out incast mix is within "
        f"{CONVERGED_WITHIN} of the best static template's there"
    )
    gaps = [r["curve"][-1] - max(r["held_out_static"]) for r in runs]
    return within(statement, gaps, CONVERGED_WITHIN, "greedy − best static")
