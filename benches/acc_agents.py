"""What ACC's agents cost: one pre-training episode of the ACC study (its 24-server
fabric, an incast mix, every switch's agent learning online), with one shared network
or with per-queue learners.

    python benches/acc_agents.py shared 200       # model, simulated ms
    python benches/acc_agents.py per-queue 200

Prints the wall seconds per 100 simulated ms, and how much of the run was the agents'
Python step. Time whole processes, alternating the two models, for a ratio.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def episode(model: str, span_ms: float, seed: int = 1) -> tuple[float, float]:
    """Wall seconds of the run, and of it the seconds spent in the agents' steps."""
    import torch

    from isthmus.control.apps.acc import Acc
    from isthmus.studies.acc.testbed import control, network
    from isthmus.studies.acc.traffic import incast_mix

    torch.set_num_threads(1)
    sim = network(seed)
    incast_mix(sim, np.random.default_rng([seed, 2021]), 0.0, span_ms / 1e3)
    plane, agents = control(sim, "ACC", None, seed, train=True, model=model)
    in_step = [0.0]
    original = Acc.step

    def timed(agent: Acc) -> None:
        started = time.perf_counter()
        original(agent)
        in_step[0] += time.perf_counter() - started

    for agent in agents:
        agent.step = timed.__get__(agent)
    started = time.perf_counter()
    plane.run(f"{span_ms}ms")
    return time.perf_counter() - started, in_step[0]


if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else "shared"
    span_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 200.0
    wall, agents = episode(model, span_ms)
    print(
        f"{model}: {wall / span_ms * 100:.2f} wall s per 100 simulated ms, "
        f"{agents / wall:.0%} of it in the agents' step"
    )
