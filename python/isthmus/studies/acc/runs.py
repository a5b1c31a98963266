"""The evaluation runs: heterogeneous traffic, messages and RDMA/TCP sharing, per scheme."""

from __future__ import annotations

import numpy as np

from isthmus.network_metrics import arrived_bytes
from isthmus.queues import Drr
from isthmus.simulation import Simulation
from isthmus.studies.acc.network import HOST_BPS, TESTBED, control, network
from isthmus.studies.acc.traffic import MESSAGE_SIZES, heterogeneous, messages

SHARING_QUANTA = ["10500B", "4500B"]


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
