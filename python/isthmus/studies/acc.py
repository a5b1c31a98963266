"""ACC (Yan et al., "ACC: Automatic ECN Tuning for High-Speed Datacenter Networks",
SIGCOMM 2021): per-switch multi-agent Double DQN tuning ECN, against the two static
settings DCQCN deployments use.

    spine0        spine1          2 x 100 Gb/s from every leaf to every spine
    leaf0 leaf1 leaf2 leaf3       (4 uplinks per leaf)
    6 servers per leaf at 25 Gb/s (h0-h23)

1. The network: the testbed's two-tier Clos, 1 us links; each switch a 12 MB shared
   buffer (dynamic threshold, alpha 1); PFC on the RDMA class with Xoff at 1/8 of the
   free buffer (at most 1 MB, resume at 80 % of it); DCQCN senders (g = 1/256) whose
   NICs serve their queue pairs round robin.
2. Schemes: SECN1 (Kmin 5 KB, Kmax 200 KB, Pmax 1 %: the DCQCN paper), SECN2 (Kmin
   100 KB, Kmax 400 KB scaled by link rate / 25 Gb/s, Pmax 20 %: the production
   profile), and ACC (`isthmus.control.apps.acc`: an agent per switch, a learner per
   egress queue, 1 ms control interval).
3. ACC's learners are pre-trained offline on incast mixes (each episode: p senders in
   [2, 23], q flows in [1, 1000], sizes log-uniform in 10 KB-10 MB, offered load 10-90 %
   of the receiver's link) in a job of their own per seed, whose result (stored as
   JSON) holds the models; ACC's evaluation jobs load that seed's and go on learning
   online (epsilon at its floor) on traffic they were not trained on:
   a. Heterogeneous traffic whose mix changes every phase (the paper: every 100 s;
      here every 20 ms): web search at 40 % load, data mining at 70 %, then 8-to-1
      incast bursts of 500 KB; all-to-all random pairs. Measured: the mean switch queue
      and fabric utilisation over time, and the phases' goodput.
   b. Two senders to one receiver, messages of 1 KB, 10 KB, 100 KB, 1 MB and 10 MB in
      equal numbers, Poisson arrivals at 20 % and 60 % of the receiver's link: mean, p99
      and p99.9 completion time per size, normalised to ACC's, and the bottleneck
      queue's mean and standard deviation.
   c. RDMA and TCP sharing under DWRR 70/30: 2 or 7 senders each send a long DCQCN flow
      (lossless class 0) and a long DCTCP flow (class 1) into one receiver; measured
      over the second half: RDMA's share of the receiver's link, the bottleneck queue,
      the total goodput. ACC tunes both classes here, learning online from scratch.
4. Training cost: simulated seconds and wall seconds of pre-training, and the learning
   curve (mean reward per episode).
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isthmus import _core
from isthmus.compare import mean_interval
from isthmus.control import ControlPlane, SwitchAgent
from isthmus.control.apps.acc import ACC_DQN, Acc
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import MIN_SEEDS, better, cell, refused
from isthmus.network_metrics import arrived_bytes
from isthmus.queues import Drr, Fq
from isthmus.rl.ecn_queues import (
    COUNTERS,
    NUM_TEMPLATES,
    QueueObserver,
    queue_ref_bytes,
    templates,
)
from isthmus.simulation import Simulation
from isthmus.studies import Claim, Departure, StudyTable
from isthmus.topology import Link, Topology
from isthmus.transport import dcqcn_marker
from isthmus.units import time_ps
from isthmus.workload import size_distribution

NAME = "acc"
TITLE = "ACC (Yan et al.): multi-agent Double DQN tuning ECN, against static ECN (SECN1, SECN2)"
DEPARTURES = (
    Departure(
        "topology",
        "64 servers",
        "24 servers: 2 spines, 4 leaves of 6 servers at 25 Gb/s, 2 x 100 Gb/s from each "
        "leaf to each spine; pre-training incasts therefore have at most 23 senders",
        "The testbed's two-tier Clos as this study builds it (FabricSize); a larger "
        "fabric multiplies the learners and the traffic to simulate, and learners "
        "pre-trained on one size fit that size only",
        "not run",
    ),
    Departure(
        "topology",
        "Dual-homed servers",
        "Single-homed servers: one 25 Gb/s link each",
        "Left out (docs/acc.md, 'Not done')",
        "not run",
    ),
    Departure(
        "time scale",
        "The heterogeneous traffic changes mix every 100 s",
        "Every 20 ms (--quick: 4 ms); each phase still thousands of round trips at these rates",
        "Simulated time: 100 s phases of a 24-server fabric at 25-100 Gb/s, three schemes "
        "and five seeds, are far beyond this study's budget",
        "not run",
    ),
    Departure(
        "time scale",
        "No control interval given for its switch CPUs",
        "1 ms: each queue's learner observes, acts and trains once a millisecond",
        "A millisecond is tens of DCQCN rate-increase periods and CNP intervals, so a "
        "template's effect shows within the interval that chose it; on the bottleneck, "
        "learners at 100 us settled 0.008-0.016 below the best template, at 1 ms within "
        "0.0003 (a one-off comparison, docs/acc.md)",
        "not run (the 100 us against 1 ms comparison is not a row of the study)",
    ),
    Departure(
        "training data",
        "One model trained offline for hours, installed on every switch",
        "Per seed, 30 pre-training episodes of 200 ms on random incast mixes (6 simulated "
        "s, about 106 wall s; about 3,300 busy intervals for each of 56 learners), then "
        "online learning with epsilon at its floor on the evaluation traffic; the RDMA/TCP "
        "sharing runs learn online from scratch",
        "Cost on this project's 2-core machine. Pre-training does not yet improve the "
        "learners on held-out traffic, so the fabric rows test an undertrained ACC",
        "not run (the 'bottleneck reward' rows train 3 simulated s online on one switch: a "
        "check that the learner finds a known best template, not the paper's training)",
    ),
    Departure(
        "control scope",
        "One learned model shared by every switch",
        "A learner (its own Q-network, target network, replay memory and epsilon) per "
        "egress queue, stacked per switch; a global memory shares transitions between "
        "switches",
        "Queues of different rates and classes learn separately without link rate or "
        "class in the state; one network per switch or for all is listed as not done",
        "not run",
    ),
    Departure(
        "decision rule",
        "A reward weighing utilisation against queue length, in no form this study could place",
        "0.5 x utilisation + 0.5 x (1 - log2(1 + q / q_ref)), q the interval's mean queue, "
        "q_ref = 100 KB x link rate / 25 Gb/s: 1 for a full link with an empty queue, 0.5 "
        "at q_ref, still falling for megabyte queues",
        "A queue term that keeps falling lets a learner in a deep queue see a better "
        "choice nearby (the earlier q_ref / (q_ref + q) levelled off). The results depend "
        "on this weighting, which was not tuned against the paper's figures",
        "not run",
    ),
    Departure(
        "metric",
        "The congested ToR port's queue and utilisation",
        "The mean queue over every switch port and the fabric links' utilisation "
        "(heterogeneous traffic); the bottleneck port's queue only in the two-sender runs",
        "Not yet measured per congested port (docs/acc.md, 'Not done'); an average over "
        "mostly idle ports may dilute a difference between schemes",
        "not run",
    ),
    Departure(
        "baseline",
        "Static ECN settings SECN1 and SECN2 on the fabric, and a static-threshold sweep "
        "whose throughput/latency trade-off is the premise (Fig. 2)",
        "SECN1 and SECN2 only; no best-static row (the sweep's winner on training "
        "traffic, evaluated on test traffic) on the fabric. The sweep runs on one "
        "bottleneck only, where the lowest Kmin costs no throughput, the opposite of "
        "Fig. 2",
        "Not built yet (docs/acc.md, 'Not done'). Without it, ACC against SECN1 and SECN2 "
        "does not say whether learning beats the best fixed template",
        "not run on the fabric ('bottleneck reward | best static' and 'bottleneck reward "
        "| median template' are the 32-template sweep on one switch)",
    ),
)

SCHEMES = ("SECN1", "SECN2", "ACC")
HOST_BPS = 25e9
MESSAGE_SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
# The paper's end-to-end result at 60 % load: queue mean / std (KB).
PAPER_QUEUE_60 = {"ACC": (5.6, 13.3), "SECN1": (20.4, 49.6), "SECN2": (37.5, 109.3)}
FULL = {
    "learn_ms": 3000.0,
    "episodes": 30,
    "episode_ms": 200.0,
    "phase_ms": 20.0,
    "message_ms": 500.0,
    "loads": (0.2, 0.6),
    "incasts": (2, 7),
    "sharing_ms": 20.0,
}
QUICK = {
    "learn_ms": 3000.0,
    "episodes": 3,
    "episode_ms": 20.0,
    "phase_ms": 4.0,
    "message_ms": 40.0,
    "loads": (0.6,),
    "incasts": (7,),
    "sharing_ms": 4.0,
}
# DWRR between the RDMA class (0) and the TCP class (1): 70 / 30.
SHARING_QUANTA = ["10500B", "4500B"]


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


class HoldTemplate(SwitchAgent):
    """Holds one ECN template on every port and scores every queue each `interval` with
    the learners' own reward (`rewards`, one array an interval, as `Acc.rewards`)."""

    def __init__(self, switch, template: int, interval: str = "1ms"):
        super().__init__(switch)
        self.template, self.interval = template, interval
        self.rewards: list[np.ndarray] = []

    def on_start(self) -> None:
        rates = self.switch.ports()["rate_bps"].astype(np.float64)
        for port, rate in enumerate(rates):
            kmin, kmax, pmax = templates(rate)[self.template]
            self.switch.set_ecn(port, f"{kmin}B", f"{kmax}B", pmax)
        self.observer = QueueObserver(rates, queue_ref_bytes(rates))
        self.held = np.full(len(rates), self.template)
        self.observer.observe(self._counters(), 0, self.held)
        self.every(self.interval, self.step)

    def _counters(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.switch.queues().items() if k in COUNTERS}

    def step(self) -> None:
        _, rewards, _ = self.observer.observe(self._counters(), time_ps(self.interval), self.held)
        self.rewards.append(rewards)


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
        (agent,) = plane.add_agents(HoldTemplate, template=template)
        plane.run(f"{span_ms}ms")
        scores.append(bottleneck_reward(agent, sim))
    return scores


def train_on_bottleneck(seed: int, train_ms: float) -> dict:
    """ACC's learners trained online on the bottleneck for `train_ms`."""
    sim = one_bottleneck(seed)
    plane, (agent,) = control(sim, "ACC", None, seed, train=True)
    plane.run(f"{train_ms}ms")
    return {"models": models_json({agent.switch.name: agent.dqn.state_dict()})}


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


class StaticEcn(SwitchAgent):
    """Sets every port of its switch to a DCQCN marking profile once."""

    def __init__(self, switch, profile: str):
        super().__init__(switch)
        self.profile = profile

    def on_start(self) -> None:
        for port, rate in enumerate(self.switch.ports()["rate_bps"].tolist()):
            ramp = dcqcn_marker(self.profile, int(rate))
            self.switch.set_ecn(port, ramp.kmin, ramp.kmax, ramp.pmax)


def control(
    sim: Simulation,
    scheme: str,
    trained: dict | None,
    seed: int,
    train: bool,
    classes: tuple[int, ...] = (0,),
    greedy: bool = False,
):
    """Attaches the scheme (ACC's learners those of `trained`, a pre-training's result,
    or untrained; `greedy`: never exploring); returns the plane and its agents. Torch
    runs on one thread, its global generator seeded from `seed`: a run does not depend
    on what ran before it."""
    plane = ControlPlane(sim)
    if scheme == "ACC":
        import torch

        torch.set_num_threads(1)
        torch.manual_seed(seed)
        pretrained = None if trained is None else state_dicts(trained["models"])
        # Online after pre-training: exploration at its floor from the start.
        settings = ACC_DQN
        if greedy:
            settings = settings.model_copy(update={"epsilon_start": 0.0, "epsilon_min": 0.0})
        elif pretrained is not None:
            settings = settings.model_copy(update={"epsilon_start": 0.02})
        agents = plane.add_agents(
            Acc, pretrained=pretrained, settings=settings, seed=seed, train=train, classes=classes
        )
    else:
        profile = {"SECN1": "paper", "SECN2": "production"}[scheme]
        agents = plane.add_agents(StaticEcn, profile=profile)
    return plane, agents


def _add(sim: Simulation, src, dst, size, start) -> None:
    for s, d, n, t in zip(src, dst, size, start, strict=True):
        sim.add_dcqcn_flow(int(s), int(d), int(n), start=int(t))


def incast_mix(sim: Simulation, rng: np.random.Generator, start_s: float, span_s: float) -> None:
    """One pre-training episode's traffic: q flows from p senders into one receiver at
    an offered load in 10-90 % of its link."""
    hosts = sim.topology.num_hosts
    receiver = int(rng.integers(hosts))
    others = np.array([h for h in range(hosts) if h != receiver])
    p = int(rng.integers(2, len(others) + 1))
    q = int(rng.integers(1, 1001))
    load = rng.uniform(0.1, 0.9)
    senders = rng.choice(others, size=p, replace=False)
    sizes = np.exp(rng.uniform(np.log(10e3), np.log(10e6), size=q)).astype(np.int64)
    spread = min(span_s, sizes.sum() * 8 / (load * HOST_BPS))
    starts = start_s + np.sort(rng.uniform(0, spread, size=q))
    _add(sim, rng.choice(senders, size=q), np.full(q, receiver), sizes, starts * 1e12)


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


def _cdf_sizes(name: str, n: int, seed: int, stream: int) -> np.ndarray:
    dist = size_distribution(name)
    return _core.sample_sizes(dist.text, dist.unit_bytes, n, seed, stream).astype(np.int64)


def heterogeneous(sim: Simulation, rng: np.random.Generator, phase_s: float) -> None:
    """Three phases of all-to-all traffic, each its own mix."""
    hosts = sim.topology.num_hosts
    capacity = hosts * HOST_BPS
    for phase, (name, load) in enumerate((("websearch", 0.4), ("datamining", 0.7))):
        mean = size_distribution(name).mean_bytes
        n = max(1, int(load * capacity * phase_s / 8 / mean))
        sizes = _cdf_sizes(name, n, sim.seed, phase)
        src = rng.integers(hosts, size=n)
        dst = (src + rng.integers(1, hosts, size=n)) % hosts
        starts = (phase + np.sort(rng.uniform(0, 1, size=n))) * phase_s
        _add(sim, src, dst, sizes, starts * 1e12)
    # Phase 3: 8-to-1 incast bursts of 500 KB, one every 500 us, to random receivers.
    bursts = int(phase_s / 500e-6)
    for b in range(bursts):
        receiver = int(rng.integers(hosts))
        senders = rng.choice([h for h in range(hosts) if h != receiver], size=8, replace=False)
        start = (2 * phase_s + b * 500e-6) * 1e12
        _add(sim, senders, np.full(8, receiver), np.full(8, 500_000), np.full(8, start))


def messages(sim: Simulation, rng: np.random.Generator, load: float, span_s: float) -> None:
    """Two senders (leaf1, leaf2) to one receiver (h0), sizes in equal numbers."""
    mean = float(np.mean(MESSAGE_SIZES))
    n = max(1, int(load * HOST_BPS * span_s / 8 / mean))
    sizes = rng.choice(MESSAGE_SIZES, size=n)
    starts = np.sort(rng.uniform(0, span_s, size=n))
    src = rng.choice([6, 12], size=n)
    _add(sim, src, np.zeros(n, dtype=int), sizes, starts * 1e12)


def _switch_ports(sim: Simulation) -> np.ndarray:
    ports = sim.ports()
    kinds = sim.topology.nodes()["kind"]
    return np.array([kinds[int(n)] == "switch" for n in ports["node"]])


def run_heterogeneous(seed: int, scheme: str, phase_ms: float, trained: dict | None = None) -> dict:
    sim = network(seed, sample_interval="100us")
    heterogeneous(sim, np.random.default_rng([seed, 3]), phase_ms / 1e3)
    plane, _ = control(sim, scheme, trained, seed, train=True)
    end_ms = 3 * phase_ms
    plane.run(f"{end_ms}ms")
    samples = sim.samples()
    switch = _switch_ports(sim)
    queue_kb = samples["queue_bytes"][:, switch].mean(axis=1) / 1e3
    ports = sim.ports()
    fabric_ports = switch & (ports["rate_bps"] > HOST_BPS)
    tx = samples["tx_bytes"][:, fabric_ports].sum(axis=1).astype(np.float64)
    interval_s = np.diff(samples["time_ps"], prepend=0) / 1e12
    capacity = ports["rate_bps"][fabric_ports].sum()
    utilisation = np.diff(tx, prepend=0) * 8 / np.maximum(interval_s, 1e-12) / capacity
    phases = np.minimum((samples["time_ps"] / 1e9 // phase_ms).astype(int), 2)
    flows = sim.flows()
    return {
        "queue_kb": float(queue_kb.mean()),
        "queue_kb_p99": float(np.percentile(queue_kb, 99)),
        "utilisation_pct": float(utilisation.mean() * 100),
        "phase_queue_kb": [float(queue_kb[phases == p].mean()) for p in range(3)],
        "phase_utilisation_pct": [float(utilisation[phases == p].mean() * 100) for p in range(3)],
        "goodput_gbps": float(flows["bytes_delivered"].sum() * 8 / (end_ms / 1e3) / 1e9),
        "finished": int((flows["finish_ps"] >= 0).sum()),
        "flows": int(len(flows["finish_ps"])),
        "drops": int(sim.ports()["drop_packets"].sum()),
        "series_queue_kb": queue_kb[:: max(1, len(queue_kb) // 150)].round(2).tolist(),
    }


def run_messages(
    seed: int, scheme: str, load: float, span_ms: float, trained: dict | None = None
) -> dict:
    sim = network(seed, sample_interval="20us")
    messages(sim, np.random.default_rng([seed, 5, int(load * 100)]), load, span_ms / 1e3)
    plane, _ = control(sim, scheme, trained, seed, train=True)
    plane.run(f"{span_ms}ms")
    flows = sim.flows()
    done = flows["finish_ps"] >= 0
    fct_us = (flows["finish_ps"] - flows["start_ps"]) / 1e6
    out: dict = {"unfinished": int((~done).sum())}
    for size in MESSAGE_SIZES:
        pick = done & (flows["size_bytes"] == size)
        values = fct_us[pick]
        out[str(size)] = {
            "n": int(pick.sum()),
            "mean": float(values.mean()) if values.size else float("nan"),
            "p99": float(np.percentile(values, 99)) if values.size else float("nan"),
            "p999": float(np.percentile(values, 99.9)) if values.size else float("nan"),
        }
    ports = sim.ports()
    leaf0, h0 = sim.node_index("leaf0"), sim.node_index("h0")
    bottleneck = int(np.flatnonzero((ports["node"] == leaf0) & (ports["peer_node"] == h0))[0])
    queue_kb = sim.samples()["queue_bytes"][:, bottleneck] / 1e3
    out["queue_kb_mean"] = float(queue_kb.mean())
    out["queue_kb_std"] = float(queue_kb.std())
    out["drops"] = int(ports["drop_packets"].sum())
    return out


def run_sharing(seed: int, scheme: str, senders: int, span_ms: float) -> dict:
    """RDMA (DCQCN, lossless class 0) and TCP (DCTCP, class 1) under DWRR 70/30: each of
    `senders` hosts sends one long flow of each into h0. ACC tunes both classes' queues
    and learns them online from scratch (its pre-trained learners cover class 0 only)."""
    sim = network(seed, sample_interval="20us", scheduler=Drr(kind="drr", quanta=SHARING_QUANTA))
    rng = np.random.default_rng([seed, 7, senders])
    # Senders on the other leaves than h0's: their flows cross the fabric.
    hosts = TESTBED.leaves * TESTBED.hosts_per_leaf
    others = rng.choice(np.arange(TESTBED.hosts_per_leaf, hosts), size=senders, replace=False)
    span = span_ms / 1e3
    rdma, tcp = [], []
    for src in others.tolist():
        rdma.append(sim.add_dcqcn_flow(src, 0, int(HOST_BPS * span / 8)))
        flow = sim.add_bulk_flow(src, 0, f"{span_ms}ms", transport="dctcp")
        sim.set_priority(flow, 1)
        tcp.append(flow)
    plane, _ = control(sim, scheme, None, seed, train=True, classes=(0, 1))
    plane.run(f"{span_ms / 2}ms")
    before = arrived_bytes(sim.flows())
    plane.run(f"{span_ms}ms")
    delivered = arrived_bytes(sim.flows()) - before
    seconds = span / 2
    rdma_bps = delivered[rdma].sum() * 8 / seconds
    tcp_bps = delivered[tcp].sum() * 8 / seconds
    ports = sim.ports()
    leaf0, h0 = sim.node_index("leaf0"), sim.node_index("h0")
    bottleneck = int(np.flatnonzero((ports["node"] == leaf0) & (ports["peer_node"] == h0))[0])
    samples = sim.samples()
    late = samples["time_ps"] >= span_ms / 2 * 1e9
    queue_kb = samples["queue_bytes"][late, bottleneck] / 1e3
    return {
        "rdma_gbps": float(rdma_bps / 1e9),
        "tcp_gbps": float(tcp_bps / 1e9),
        "rdma_share_pct": float(rdma_bps / max(rdma_bps + tcp_bps, 1.0) * 100),
        "queue_kb_mean": float(queue_kb.mean()),
        "drops": int(ports["drop_packets"].sum()),
    }


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Each seed's pre-training, then every evaluation run; ACC's take that seed's models
    (but in the sharing runs, where it learns from scratch)."""
    training = {
        s: Job(
            "training",
            "ACC",
            s,
            pretrain,
            {"seed": s, "episodes": settings["episodes"], "episode_ms": settings["episode_ms"]},
        )
        for s in seeds
    }

    def job(experiment: str, run, seed: int, scheme: str, variant: str = "", **params) -> Job:
        pretrained = scheme == "ACC" and experiment != "sharing"
        needs = {"trained": training[seed].name} if pretrained else {}
        given = {"seed": seed, "scheme": scheme, **params}
        return Job(experiment, scheme, seed, run, given, variant, needs)

    span = LEARNABILITY_SPAN_MS
    out = [
        Job(
            "learnability",
            "ACC",
            s,
            run_learnability,
            {"seed": s, "train_ms": settings["learn_ms"], "span_ms": span},
        )
        for s in seeds
    ]
    out += list(training.values())
    for s in seeds:
        for scheme in SCHEMES:
            out.append(
                job("heterogeneous", run_heterogeneous, s, scheme, phase_ms=settings["phase_ms"])
            )
            out += [
                job(
                    "messages",
                    run_messages,
                    s,
                    scheme,
                    f"load {load:.0%}",
                    load=load,
                    span_ms=settings["message_ms"],
                )
                for load in settings["loads"]
            ]
            out += [
                job(
                    "sharing",
                    run_sharing,
                    s,
                    scheme,
                    f"{n}:1",
                    senders=n,
                    span_ms=settings["sharing_ms"],
                )
                for n in settings["incasts"]
            ]
    return out


def _size_label(size: int) -> str:
    return f"{size // 1_000_000} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def _message_rows(results: Results, load: float) -> list[list[str]]:
    """The bottleneck queue per scheme at one load, and the baselines' completion times
    as multiples of ACC's in the same seed."""
    rows = []
    acc = results.select(experiment="messages", variant=f"load {load:.0%}", scheme="ACC")
    for scheme in SCHEMES:
        mine = results.select(experiment="messages", variant=f"load {load:.0%}", scheme=scheme)
        paper = PAPER_QUEUE_60.get(scheme) if load == 0.6 else None
        rows.append(
            [
                f"messages {load:.0%} queue KB mean / std | {scheme}",
                cell([r["queue_kb_mean"] for r in mine]),
                cell([r["queue_kb_std"] for r in mine]),
                "" if paper is None else f"{paper[0]} / {paper[1]}",
                "",
            ]
        )
        if scheme == "ACC":
            continue
        for size in map(str, MESSAGE_SIZES):
            ratios = [
                cell(
                    [
                        r[size][stat] / a[size][stat]
                        for r, a in zip(mine, acc, strict=True)
                        if a[size][stat] > 0
                    ],
                    2,
                )
                for stat in ("mean", "p99", "p999")
            ]
            rows.append(
                [
                    f"messages {load:.0%} FCT / ACC's, {_size_label(int(size))} | {scheme}",
                    *ratios,
                    str(sum(r[size]["n"] for r in mine)),
                ]
            )
    return rows


def table(results: Results) -> StudyTable:
    settings = results.settings

    def queues(experiment: str, key: str, scheme: str, **where) -> list[float]:
        return results.values(key, experiment=experiment, scheme=scheme, **where)

    rows = [
        [
            f"heterogeneous | {scheme}",
            *(
                cell(queues("heterogeneous", key, scheme))
                for key in ("queue_kb", "utilisation_pct", "goodput_gbps")
            ),
            "",
        ]
        for scheme in SCHEMES
    ]
    for load in settings["loads"]:
        rows += _message_rows(results, load)
    for senders in settings["incasts"]:
        for scheme in SCHEMES:
            mine = results.select(experiment="sharing", variant=f"{senders}:1", scheme=scheme)
            rows.append(
                [
                    f"RDMA/TCP {senders}:1, RDMA share % | queue KB | Gb/s | {scheme}",
                    cell([r["rdma_share_pct"] for r in mine]),
                    cell([r["queue_kb_mean"] for r in mine]),
                    cell([r["rdma_gbps"] + r["tcp_gbps"] for r in mine], 2),
                    "",
                ]
            )

    def shorter(statement: str, worse: str, experiment: str, key: str, **where) -> Claim:
        return better(
            statement,
            queues(experiment, key, "ACC", **where),
            queues(experiment, key, worse, **where),
            lower_is_better=True,
            names=("ACC", worse),
            digits=1,
            unit=" KB",
        )

    claims = []
    for worse in ("SECN1", "SECN2"):
        claims.append(
            shorter(
                f"Heterogeneous traffic: ACC keeps switch queues shorter than {worse} (paper: "
                "an order of magnitude)",
                worse,
                "heterogeneous",
                "queue_kb",
            )
        )
        if 0.6 in settings["loads"]:
            claims.append(
                shorter(
                    f"Messages at 60 %: ACC's bottleneck queue is shorter than {worse}'s "
                    f"(paper: 5.6 KB vs {PAPER_QUEUE_60[worse][0]} KB)",
                    worse,
                    "messages",
                    "queue_kb_mean",
                    variant="load 60%",
                )
            )
    rows += _learnability_rows(results)
    claims.append(_learnability_claim(results))
    training = results.select(experiment="training")
    notes = [
        "Heterogeneous rows: ours, mean switch-port queue (KB) | fabric utilisation (%) | "
        "goodput (Gb/s). Message rows: queue mean | std (KB) | the paper's at 60 %; FCT "
        "rows: mean | p99 | p99.9 as multiples of ACC's in the same seed | messages "
        "completed. Mean ± 95 % t-interval over seeds.",
        f"Pre-training: {settings['episodes']} incast-mix episodes of "
        f"{settings['episode_ms']} ms, "
        f"{np.mean([t['simulated_s'] for t in training]):.3f} simulated s and "
        f"{np.mean([t['wall_s'] for t in training]):.0f} wall s per seed, "
        f"{np.mean([t['busy_intervals'] for t in training]):,.0f} busy learner-intervals; "
        "greedy reward on a held-out incast mix over busy queues, after the first episode "
        "-> after the last: "
        + ", ".join(f"{c[0]:.3f} -> {c[-1]:.3f}" for c in (t["curve"] for t in training) if c),
        f"One bottleneck: {BOTTLENECK_SENDERS} long DCQCN flows through one switch into one "
        f"25 Gb/s host; each of the {NUM_TEMPLATES} templates held for "
        f"{LEARNABILITY_SPAN_MS:g} ms, and ACC trained online for "
        f"{settings['learn_ms']:g} ms then greedy for {LEARNABILITY_SPAN_MS:g} ms, both on "
        "held-out traffic (another seed); reward as the learners', warm-up fifth left out.",
    ]
    return StudyTable(
        title="ACC: learned ECN tuning against static ECN (SECN1, SECN2), DCQCN over PFC",
        columns=["figure | scheme", "ours", "", "", "n"],
        rows=rows,
        claims=claims,
        notes=notes,
    )


def _learnability_rows(results: Results) -> list[list[str]]:
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


def _template_label(index: int) -> str:
    kmin, kmax, pmax = templates(HOST_BPS)[index]
    return f"#{index} ({kmin // 1000}/{kmax // 1000} KB, {pmax:.0%})"


LEARNED_WITHIN = 0.01
"""How close to the best static template's reward a learner must come."""


def _learnability_claim(results: Results) -> Claim:
    runs = results.select(experiment="learnability")
    statement = (
        f"On one bottleneck, ACC's greedy learner earns within {LEARNED_WITHIN} of the best "
        "static template (the known answer, found by a sweep)"
    )
    gaps = [r["greedy"] - max(r["static"]) for r in runs]
    if len(gaps) < MIN_SEEDS:
        return refused(statement, {"seeds": len(gaps)})
    mean, half = mean_interval(gaps)
    return Claim(
        statement,
        mean - half > -LEARNED_WITHIN,
        f"greedy − best static {mean:+.4f}, 95 % interval [{mean - half:+.4f}, "
        f"{mean + half:+.4f}] over {len(gaps)} seeds",
    )


def figures(results: Results, folder: Path) -> list[Path]:
    """The learning curves of pre-training, and the mean switch queue over the
    heterogeneous run per scheme (first seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn: list[Path] = []
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for r in results.matching(experiment="training"):
        curve = r["result"]["curve"]
        ax.plot(range(1, len(curve) + 1), curve, label=f"seed {r['seed']}")
    ax.set_xlabel("pre-training episode")
    ax.set_ylabel("greedy reward, held-out mix, busy queues")
    ax.set_title("ACC pre-training on incast mixes")
    drawn.append(_save(fig, ax, folder / "acc_learning.png"))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    phase_ms = results.settings["phase_ms"]
    first = min(results.seeds)
    for scheme in SCHEMES:
        for r in results.select(experiment="heterogeneous", scheme=scheme, seed=first):
            series = r["series_queue_kb"]
            t = np.linspace(0, 3 * phase_ms, len(series))
            ax.plot(t, series, label=scheme)
    for boundary in (phase_ms, 2 * phase_ms):
        ax.axvline(boundary, color="grey", linewidth=0.8)
    ax.set_xlabel("time (ms): web search, data mining, incast")
    ax.set_ylabel("mean switch queue (KB)")
    ax.set_ylim(bottom=0)
    ax.set_title("Heterogeneous traffic")
    drawn.append(_save(fig, ax, folder / "acc_queues.png"))
    return drawn


def _save(fig, ax, path: Path) -> Path:
    """The legend beside the plot, not over the data; PNG at 120 dpi."""
    import matplotlib.pyplot as plt

    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
