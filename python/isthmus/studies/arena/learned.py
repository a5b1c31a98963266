"""Learned schemes in the arena: trained on training traffic before they are scored,
then scored on the arena's own traffic, which they never trained on.

A learned scheme registers a `Learning`: `train` runs before any of its cells (one job
a seed, its result kept with the study's), `attach` puts what it learned on a cell's
built run. ACC's is the only one yet: its shared Q-network pre-trained on web search
over the leaf-spine at training seeds (`pretrain_on`, as `isthmus reproduce acc`
pre-trains on incast mixes), its learning curve a greedy evaluation on held-out web
search beside every static template held there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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

    train: Callable[..., dict]
    attach: Callable[[Simulation, dict, int], ControlPlane]
    judge: Callable[[str, Results], tuple[Claim, str]]


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


ACC = Learning(train_acc, attach_acc, judge_acc)
