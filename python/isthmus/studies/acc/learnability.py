"""The known case ACC must learn first: one bottleneck whose best ECN template a sweep
finds, and the learner trained there then acting greedily on held-out traffic."""

from __future__ import annotations

import time

import numpy as np

from isthmus.control import ControlPlane, SwitchAgent
from isthmus.control.apps.acc import model_states
from isthmus.experiments import Results
from isthmus.experiments.verdicts import cell, within
from isthmus.learning.ecn_queues import (
    NUM_TEMPLATES,
    templates,
)
from isthmus.simulation import Simulation
from isthmus.studies import Claim
from isthmus.studies.acc.best_static import TemplateEcn
from isthmus.studies.acc.testbed import HOST_BPS, control, models_json, network
from isthmus.topology import Link, Topology

LEARNABILITY_SPAN_MS = 50.0
"""How long each template, and then the trained learner, is scored on the bottleneck."""
BOTTLENECK_SENDERS = 4
BOTTLENECK_FLOW_BYTES = 10**12
"""Longer than any run: the senders stay backlogged."""


def one_bottleneck(seed: int, senders: int = BOTTLENECK_SENDERS) -> Simulation:
    """The known case: `senders` hosts each with one long DCQCN flow through one switch
    into h0 at 25 Gb/s, on the study's buffers and PFC. Its best template is found by
    holding each one (`static_sweep`)."""
    hosts = [f"h{i}" for i in range(senders + 1)]
    star = Topology.custom(hosts, ["s1"], [(h, "s1", Link("25Gbps", "1us")) for h in hosts])
    sim = network(seed, topology=star)
    for src in range(1, senders + 1):
        sim.add_dcqcn_flow(src, 0, BOTTLENECK_FLOW_BYTES)
    return sim


def bottleneck_reward(agent: SwitchAgent, sim: Simulation) -> float:
    """The mean reward of the switch's queue towards h0, its first fifth (warm-up) left
    out."""
    port = int(np.flatnonzero(agent.switch.ports()["peer_node"] == sim.node_index("h0"))[0])
    series = np.array([r[port] for r in agent.rewards])
    return float(series[len(series) // 5 :].mean())


def static_sweep(seed: int, span_ms: float) -> list[float]:
    """Every template held on the bottleneck for `span_ms`: its reward, by template."""
    scores = []
    for template in range(NUM_TEMPLATES):
        sim = one_bottleneck(seed)
        plane = ControlPlane(sim)
        (agent,) = plane.add_agents(TemplateEcn, template=template)
        plane.run(f"{span_ms}ms")
        scores.append(bottleneck_reward(agent, sim))
    return scores


def train_on_bottleneck(seed: int, train_ms: float) -> dict:
    """ACC's learners trained online on the bottleneck for `train_ms`."""
    sim = one_bottleneck(seed)
    plane, (agent,) = control(sim, "ACC", None, seed, train=True)
    plane.run(f"{train_ms}ms")
    return {"models": models_json(model_states([agent]))}


def greedy_on_bottleneck(seed: int, span_ms: float, trained: dict) -> float:
    """The trained learners acting greedily (no exploration, no training) on the
    bottleneck for `span_ms`: the bottleneck queue's mean reward."""
    sim = one_bottleneck(seed)
    plane, (agent,) = control(sim, "ACC", trained, seed, train=False, greedy=True)
    plane.run(f"{span_ms}ms")
    return bottleneck_reward(agent, sim)


def run_learnability(seed: int, train_ms: float, span_ms: float) -> dict:
    """The known answer against what the learner found: the template sweep on held-out
    traffic (another seed), and the learner trained on this seed then greedy there."""
    held_out = seed + 1000
    static = static_sweep(held_out, span_ms)
    started = time.perf_counter()
    trained = train_on_bottleneck(seed, train_ms)
    train_wall = time.perf_counter() - started
    return {
        "static": static,
        "greedy": greedy_on_bottleneck(held_out, span_ms, trained),
        "train_wall_s": train_wall,
    }


def _template_label(index: int) -> str:
    kmin, kmax, pmax = templates(HOST_BPS)[index]
    return f"#{index} ({kmin // 1000}/{kmax // 1000} KB, {pmax:.0%})"


LEARNED_WITHIN = 0.01
"""How close to the best static template's reward a learner must come."""


def learnability_claim(results: Results) -> Claim:
    runs = results.select(experiment="learnability")
    statement = (
        f"On one bottleneck, ACC's greedy learner earns within {LEARNED_WITHIN} of the best "
        "static template (the known answer, found by a sweep)"
    )
    gaps = [r["greedy"] - max(r["static"]) for r in runs]
    return within(statement, gaps, LEARNED_WITHIN, "greedy − best static")


def learnability_rows(results: Results) -> list[list[str]]:
    runs = results.select(experiment="learnability")
    best = [int(np.argmax(r["static"])) for r in runs]
    shown = ", ".join(sorted({_template_label(t) for t in best}))
    return [
        [
            "bottleneck reward | best static",
            cell([max(r["static"]) for r in runs], 3),
            shown,
            "",
            "",
        ],
        [
            "bottleneck reward | median template",
            cell([float(np.median(r["static"])) for r in runs], 3),
            "",
            "",
            "",
        ],
        ["bottleneck reward | ACC greedy", cell([r["greedy"] for r in runs], 3), "", "", ""],
    ]
