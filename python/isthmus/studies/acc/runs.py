"""The evaluation runs: heterogeneous traffic, messages and RDMA/TCP sharing, per scheme;
and the template sweep on training traffic that picks best static's template
(`best_static`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from isthmus.network_metrics import arrived_bytes, switch_ports
from isthmus.queues import Drr
from isthmus.simulation import Simulation
from isthmus.studies.acc.best_static import (
    BEST_STATIC,
    CANDIDATES,
    TRAINING_SEED_OFFSET,
    loaded_reward,
    winner,
)
from isthmus.studies.acc.testbed import HOST_BPS, TESTBED, control, network
from isthmus.studies.acc.traffic import MESSAGE_SIZES, heterogeneous, messages

SHARING_QUANTA = ["10500B", "4500B"]


def downlink_ports(sim: Simulation) -> np.ndarray:
    """The ToR (leaf) ports that face a host, as global port indices: where all-to-all
    traffic and every incast converge on their receiver. Uplinks and spine ports run at
    4 times a host link's rate, two links for every leaf-spine pair, over equal-cost
    paths: the queues a marking setting decides build here (the paper's 'congested ToR
    port')."""
    ports = sim.ports()
    kinds = np.asarray(sim.topology.nodes()["kind"])
    node, peer = ports["node"].astype(int), ports["peer_node"].astype(int)
    return np.flatnonzero((kinds[node] == "switch") & (kinds[peer] == "host"))


def _rates(tx_bytes: np.ndarray, time_ps: np.ndarray, rate_bps: np.ndarray) -> np.ndarray:
    """Each sample interval's transmit rate over `rate_bps`, from cumulative bytes."""
    interval_s = np.diff(time_ps, prepend=0) / 1e12
    sent = np.diff(tx_bytes.astype(np.float64), axis=0, prepend=0)
    return sent * 8 / np.maximum(interval_s, 1e-12)[:, None] / rate_bps


def tor_downlinks(sim: Simulation, phases: np.ndarray) -> dict:
    """The congested ToR ports' figures from the run's samples: every leaf port facing a
    host (`downlink_ports`), its queue's mean and p99 over all (sample, port) pairs, its
    utilisation, and the hottest downlink's queue (at each sample the longest downlink
    queue, whichever port holds it; the mean over samples); each also per phase
    (`phases`: each sample's phase, 0 to its maximum). Every downlink rather than one
    picked by its queue: a port picked under one scheme is not the congested one under
    another, and with random pairs no port is congested throughout; the hottest downlink
    is the congested port at each instant, by the same rule for every scheme."""
    samples = sim.samples()
    down = downlink_ports(sim)
    queue_kb = samples["queue_bytes"][:, down] / 1e3
    rates = sim.ports()["rate_bps"][down].astype(np.float64)
    use = _rates(samples["tx_bytes"][:, down], samples["time_ps"], rates)
    hottest = queue_kb.max(axis=1)
    each = range(int(phases.max()) + 1)
    return {
        "downlink_queue_kb": float(queue_kb.mean()),
        "downlink_queue_kb_p99": float(np.percentile(queue_kb, 99)),
        "downlink_utilisation_pct": float(use.mean() * 100),
        "hottest_downlink_queue_kb": float(hottest.mean()),
        "phase_downlink_queue_kb": [float(queue_kb[phases == p].mean()) for p in each],
        "phase_downlink_queue_kb_p99": [
            float(np.percentile(queue_kb[phases == p], 99)) for p in each
        ],
        "phase_downlink_utilisation_pct": [float(use[phases == p].mean() * 100) for p in each],
        "phase_hottest_downlink_queue_kb": [float(hottest[phases == p].mean()) for p in each],
    }


def run_heterogeneous(seed: int, scheme: str, phase_ms: float, trained: dict | None = None) -> dict:
    """The three phases under `scheme`, sampled every 100 us: the mean queue over every
    switch port and the fabric links' utilisation; the paper's congested ToR ports
    (`tor_downlinks`); each per phase; and the learners' reward over loaded queues
    (`reward`), the template sweep's score."""
    sim = network(seed, sample_interval="100us")
    heterogeneous(sim, np.random.default_rng([seed, 3]), phase_ms / 1e3)
    plane, agents = control(sim, scheme, trained, seed, train=True)
    end_ms = 3 * phase_ms
    plane.run(f"{end_ms}ms")
    samples = sim.samples()
    switch = switch_ports(sim)
    queue_kb = samples["queue_bytes"][:, switch].mean(axis=1) / 1e3
    ports = sim.ports()
    fabric_ports = switch & (ports["rate_bps"] > HOST_BPS)
    tx = samples["tx_bytes"][:, fabric_ports].sum(axis=1)
    capacity = ports["rate_bps"][fabric_ports].sum()
    utilisation = _rates(tx[:, None], samples["time_ps"], capacity)[:, 0]
    # A sample closes the interval before it: one at a phase's end belongs to that phase.
    phases = np.minimum(((samples["time_ps"] - 1) / 1e9 // phase_ms).astype(int), 2)
    flows = sim.flows()
    return {
        "queue_kb": float(queue_kb.mean()),
        "queue_kb_p99": float(np.percentile(queue_kb, 99)),
        "utilisation_pct": float(utilisation.mean() * 100),
        "phase_queue_kb": [float(queue_kb[phases == p].mean()) for p in range(3)],
        "phase_utilisation_pct": [float(utilisation[phases == p].mean() * 100) for p in range(3)],
        **tor_downlinks(sim, phases),
        "reward": loaded_reward(agents),
        "goodput_gbps": float(flows["bytes_delivered"].sum() * 8 / (end_ms / 1e3) / 1e9),
        "finished": int((flows["finish_ps"] >= 0).sum()),
        "flows": int(len(flows["finish_ps"])),
        "drops": int(sim.ports()["drop_packets"].sum()),
        "series_queue_kb": queue_kb[:: max(1, len(queue_kb) // 150)].round(2).tolist(),
    }


def run_messages(
    seed: int, scheme: str, load: float, span_ms: float, trained: dict | None = None
) -> dict:
    """Two senders to h0 under `scheme`: completion times per size, and the congested
    ToR port (leaf0's port to h0, the only one these messages converge on): its queue's
    mean, standard deviation and p99 over 20 us samples and its utilisation; and the
    learners' reward over loaded queues (`reward`), the sweep's score."""
    sim = network(seed, sample_interval="20us")
    messages(sim, np.random.default_rng([seed, 5, int(load * 100)]), load, span_ms / 1e3)
    plane, agents = control(sim, scheme, trained, seed, train=True)
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
    samples = sim.samples()
    queue_kb = samples["queue_bytes"][:, bottleneck] / 1e3
    out["queue_kb_mean"] = float(queue_kb.mean())
    out["queue_kb_std"] = float(queue_kb.std())
    out["queue_kb_p99"] = float(np.percentile(queue_kb, 99))
    use = _rates(samples["tx_bytes"][:, [bottleneck]], samples["time_ps"], HOST_BPS)
    out["utilisation_pct"] = float(use.mean() * 100)
    out["reward"] = loaded_reward(agents)
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


SWEPT = {"heterogeneous": run_heterogeneous, "messages": run_messages}
"""The experiments best static is swept on, by name, and their runs."""


def sweep_templates(
    seed: int, experiment: str, candidates: Sequence[int] = CANDIDATES, **params
) -> dict:
    """Best static's training: each of `candidates` held on every port through the run
    of `experiment` (`SWEPT`, with `params`) on training traffic, seed +
    `TRAINING_SEED_OFFSET`; scored by the learners' reward over loaded queues. Returns the
    scores by template (NaN where not swept), the winner (`template`, what `control`
    holds for best static) and the training seed."""
    run = SWEPT[experiment]
    training = seed + TRAINING_SEED_OFFSET
    scores = [float("nan")] * len(CANDIDATES)
    for template in candidates:
        result = run(seed=training, scheme=BEST_STATIC, trained={"template": template}, **params)
        scores[template] = result["reward"]
    return {"scores": scores, "template": winner(scores), "training_seed": training}
