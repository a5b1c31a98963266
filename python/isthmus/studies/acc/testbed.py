"""The study's network (the testbed's Clos, buffers, PFC, DCQCN hosts) and the schemes
attached to it: static ECN profiles or ACC's agents, with models carried as JSON."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np

from isthmus.control import ControlPlane
from isthmus.control.apps.acc import ACC_DQN, ACC_SHARED_DQN, Acc, Model
from isthmus.queues import Fq
from isthmus.simulation import Simulation
from isthmus.studies.acc.best_static import BEST_STATIC, ScoredEcn, TemplateEcn
from isthmus.topology import Link, Topology
from isthmus.transport import dcqcn_marker

HOST_BPS = 25e9


@dataclass(frozen=True)
class FabricSize:
    """A two-tier Clos of servers at 25 Gb/s, each leaf with two 100 Gb/s links to
    every spine; the defaults are the testbed's (2 spines, 4 leaves, 6 servers a leaf:
    24 hosts), what the study's figures use. Other sizes give other incast degrees;
    learners pre-trained on one size fit that size only."""

    spines: int = 2
    leaves: int = 4
    hosts_per_leaf: int = 6


TESTBED = FabricSize()


def fabric(size: FabricSize = TESTBED) -> Topology:
    return Topology.leaf_spine(
        size.spines,
        size.leaves,
        size.hosts_per_leaf,
        Link("25Gbps", "1us"),
        Link("100Gbps", "1us"),
        links_per_pair=2,
    )


def network(
    seed: int,
    sample_interval: str | None = None,
    scheduler=None,
    size: FabricSize = TESTBED,
    topology: Topology | None = None,
) -> Simulation:
    """The study's network (hosts, buffers, PFC) on a fabric of `size` (the testbed's
    by default), or on `topology`."""
    return Simulation(
        topology or fabric(size),
        seed=seed,
        host_queue="64MB",
        host_scheduler=Fq(kind="fq"),
        switch_queue="12MB",
        shared_buffer="12MB",
        buffer_alpha=1.0,
        pfc=("1MB", "800KB", [0], 0.125),
        sample_interval=sample_interval,
        scheduler=scheduler,
    )


class StaticEcn(ScoredEcn):
    """Sets every port of its switch to a DCQCN marking profile once (and scores its
    queues as the learners would)."""

    def __init__(self, switch, profile: str, **options):
        super().__init__(switch, **options)
        self.profile = profile

    def marking(self, rate_bps: float) -> tuple[str, str, float]:
        ramp = dcqcn_marker(self.profile, int(rate_bps))
        return ramp.kmin, ramp.kmax, ramp.pmax


def control(
    sim: Simulation,
    scheme: str,
    trained: dict | None,
    seed: int,
    train: bool,
    classes: tuple[int, ...] = (0,),
    greedy: bool = False,
    model: Model = "shared",
):
    """Attaches the scheme (ACC's learners those of `trained`, a pre-training's result,
    or untrained; `greedy`: never exploring; best static's template `trained`'s, a
    template sweep's result) to `sim`'s control plane, or a new one if it has none
    (other programs on it go on running beside); returns the plane and its agents. Torch
    runs on one thread, its global generator seeded from `seed`: a run does not depend
    on what ran before it."""
    plane = own_plane(sim)
    if scheme == "ACC":
        import torch

        torch.set_num_threads(1)
        torch.manual_seed(seed)
        pretrained = None if trained is None else state_dicts(trained["models"])
        # Online after pre-training: exploration at its floor from the start.
        settings = ACC_SHARED_DQN if model == "shared" else ACC_DQN
        if greedy:
            settings = settings.model_copy(update={"epsilon_start": 0.0, "epsilon_min": 0.0})
        elif pretrained is not None:
            settings = settings.model_copy(update={"epsilon_start": 0.02})
        agents = plane.add_agents(
            Acc,
            pretrained=pretrained,
            settings=settings,
            seed=seed,
            train=train,
            classes=classes,
            model=model,
        )
    elif scheme == BEST_STATIC:
        # `trained`: the template sweep's result on training traffic (or one template's).
        agents = plane.add_agents(TemplateEcn, template=trained["template"])
    else:
        profile = {"SECN1": "paper", "SECN2": "production"}[scheme]
        agents = plane.add_agents(StaticEcn, profile=profile, classes=classes)
    return plane, agents


def own_plane(sim: Simulation) -> ControlPlane:
    """`sim`'s control plane, made if it has none."""
    if sim.control_plane is None:
        sim.control_plane = ControlPlane(sim)
    return sim.control_plane


def models_json(state: dict) -> dict:
    """State dicts (nested, by name) as JSON: each tensor its dtype, shape and raw bytes
    in base64 (exact, and a fifth the size of the values written out)."""
    if isinstance(state, dict):
        return {name: models_json(value) for name, value in state.items()}
    raw = state.detach().cpu().contiguous().numpy().tobytes()
    dtype = str(state.dtype).removeprefix("torch.")
    return {"tensor": dtype, "shape": list(state.shape), "base64": base64.b64encode(raw).decode()}


def state_dicts(models: dict) -> dict:
    """The state dicts `models_json` wrote, as tensors."""
    import torch

    if "tensor" in models:
        values = np.frombuffer(base64.b64decode(models["base64"]), dtype=models["tensor"])
        return torch.from_numpy(values.copy()).reshape(models["shape"])
    return {name: state_dicts(value) for name, value in models.items()}
