"""ACC's offline pre-training on incast mixes and its learning curve (greedy reward on a
held-out mix)."""

from __future__ import annotations

import time

import numpy as np

from isthmus.control.apps.acc import Acc
from isthmus.studies.acc.network import TESTBED, FabricSize, control, models_json, network
from isthmus.studies.acc.traffic import incast_mix


def pretrain(seed: int, episodes: int, episode_ms: float, size: FabricSize = TESTBED) -> dict:
    """Offline pre-training on incast mixes on a fabric of `size`, the episodes one run
    of the same learners (weights, replay memory and exploration carry over); returns
    the models (which fit that fabric only) in JSON form, the learning curve and the
    cost. The curve is a greedy evaluation after each episode on one held-out incast
    mix, over busy queues only (`busy_reward`)."""
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
        models = {"models": models_json({n: d.state_dict() for n, d in learners.items()})}
        curve.append(greedy_on_incast(held_out, episode_ms, models, size))
    return {
        **models,
        "curve": curve,
        "simulated_s": simulated,
        "wall_s": time.perf_counter() - started,
        "steps": int(sum(a.dqn.steps for a in agents)),
        "busy_intervals": int(sum(np.sum(a.dqn.visits) for a in agents)),
    }


def greedy_on_incast(seed: int, span_ms: float, trained: dict, size: FabricSize) -> float:
    """The learners of `trained` acting greedily, without training, on the incast mix of
    `seed`: their mean reward over busy queues."""
    sim = network(seed, size=size)
    incast_mix(sim, np.random.default_rng([seed, 2023]), 0.0, span_ms / 1e3)
    plane, agents = control(sim, "ACC", trained, seed, train=False, greedy=True)
    plane.run(f"{span_ms}ms")
    return busy_reward(agents)


def busy_reward(agents: list[Acc]) -> float:
    """The agents' mean reward over their busy queues' intervals (an idle queue scores
    its empty-queue term whatever its template: averaging it in measures the traffic,
    not the learners); NaN when no queue was busy."""
    busy = [r[b] for a in agents for r, b in zip(a.rewards, a.busy, strict=True)]
    values = np.concatenate(busy) if busy else np.array([])
    return float(values.mean()) if values.size else float("nan")
