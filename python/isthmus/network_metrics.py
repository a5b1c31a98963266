"""Throughput, fairness, utilization and queue metrics of a simulation, as the field
reports them (FCT and slowdown are in `isthmus.metrics`).

- Flow throughput: size over completion time, for finished flows (bit/s).
- Host throughput: bytes delivered to each host over the simulated time (bit/s).
- A flow's rate over a window (from one reading to a later one): the bytes that
  arrived at its receiver in between (`arrived_bytes`), never the in-order bytes
  delivered, which can exceed the link (see `arrived_bytes`).
- Bisection bandwidth: the capacity of the minimum cut between the first and the
  second half of the hosts in address order (for the bundled builders, hosts are
  numbered rack by rack, so this is the cut the literature means); a run's aggregate
  delivered throughput is reported as a fraction of it.
- Jain's fairness index: (Σx)² / (n·Σx²), 1 when all shares are equal, 1/n when one
  takes everything.
- Queue distributions: percentiles of each port's sampled queue (needs
  `sample_interval`).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from isthmus.simulation import Simulation
from isthmus.topology import Topology
from isthmus.units import PS_PER_SECOND


def switch_ports(sim: Simulation) -> np.ndarray:
    """Which rows of `sim.ports()` are switch ports (the rest are hosts' NICs)."""
    return np.array(sim.topology.nodes()["kind"])[sim.ports()["node"]] == "switch"


def jain_index(shares: np.ndarray) -> float:
    """Jain's fairness index of non-negative shares (1.0 for none or all zero)."""
    x = np.asarray(shares, dtype=np.float64)
    if np.any(x < 0):
        raise ValueError("fairness shares must be non-negative")
    squares = float(np.sum(x * x))
    return 1.0 if squares == 0 else float(np.sum(x) ** 2 / (len(x) * squares))


def flow_throughput_bps(sim: Simulation) -> np.ndarray:
    """Per flow: size × 8 / FCT for finished flows, NaN for the others."""
    flows = sim.flows()
    fct = flows["finish_ps"] - flows["start_ps"]
    done = (flows["finish_ps"] >= 0) & (fct > 0)
    rate = np.full(len(fct), np.nan)
    rate[done] = flows["size_bytes"][done] * 8 / (fct[done] / PS_PER_SECOND)
    return rate


def host_throughput_bps(sim: Simulation) -> np.ndarray:
    """Per host: bytes delivered to it over the simulated time, as bit/s."""
    flows = sim.flows()
    delivered = np.bincount(
        flows["dst"], weights=flows["bytes_delivered"], minlength=sim.topology.num_hosts
    )
    return delivered * 8 / (max(sim.now, 1) / PS_PER_SECOND)


def arrived_bytes(flows: dict[str, np.ndarray]) -> np.ndarray:
    """Per flow of a flow table (`Simulation.flows()`): the payload bytes that have
    reached its receiver so far, duplicates included (`bytes_received`), as float64.

    Difference two readings of it for a flow's rate over a window. What arrives in a
    window crossed the receiver's link inside it (a packet straddling the window's
    start aside), so the rate never exceeds that link, nor the path's bottleneck beyond
    what was queued past the bottleneck when the window opened. The in-order count,
    `bytes_delivered`, can exceed both at any multiple: bytes that arrived behind a lost
    packet count in the window where its retransmission fills the hole. The price is
    the duplicates (retransmissions of bytes the receiver already had): 0-0.13 % of a
    Diolkos surge flow's bytes, 1.5-4.3 % with ECMP, Hedera or MPTCP-8 on OFPT's
    lossy fat-tree. From a flow's start to any time, `bytes_delivered` is the goodput
    and is the counter to use."""
    return flows["bytes_received"].astype(np.float64)


def bisection_bandwidth_bps(topology: Topology) -> float:
    """Capacity (bit/s, one direction) of the minimum cut separating hosts
    0..n/2-1 from hosts n/2..n-1."""
    n = topology.num_hosts
    if n < 2:
        raise ValueError("a bisection needs at least 2 hosts")
    nodes = topology.nodes()
    links = topology.links()
    g = nx.DiGraph()
    for a, b, rate in zip(links["a"], links["b"], links["rate_bps"], strict=True):
        for u, v in ((int(a), int(b)), (int(b), int(a))):
            # Parallel links add their capacities.
            capacity = g[u][v]["capacity"] + int(rate) if g.has_edge(u, v) else int(rate)
            g.add_edge(u, v, capacity=capacity)
    hosts = [int(h) for h in nodes["host_node"]]
    for h in hosts[: n // 2]:
        g.add_edge("left", h, capacity=float("inf"))
    for h in hosts[n // 2 :]:
        g.add_edge(h, "right", capacity=float("inf"))
    return float(nx.maximum_flow_value(g, "left", "right"))


def bisection_fraction(sim: Simulation) -> float:
    """Aggregate delivered throughput of the run as a fraction of the bisection
    bandwidth (both directions of the cut count, so the fabric's ceiling is 1)."""
    total = float(host_throughput_bps(sim).sum())
    return total / (2 * bisection_bandwidth_bps(sim.topology))


def link_utilization(sim: Simulation) -> np.ndarray:
    """Per egress port: the fraction of the simulated time its transmitter was busy."""
    return sim.ports()["busy_ps"] / max(sim.now, 1)


def queue_percentiles(
    sim: Simulation, percentiles: tuple[float, ...] = (50, 90, 99, 100)
) -> dict[str, np.ndarray]:
    """Per port, the given percentiles of its sampled queue (packets): columns
    `p50`, `p90`, ... shaped (ports,). Needs the simulation's `sample_interval`."""
    samples = sim.samples()
    if samples is None:
        raise ValueError("queue distributions need sampling: Simulation(sample_interval=...)")
    queue = samples["queue_packets"]
    return {f"p{p:g}": np.percentile(queue, p, axis=0, method="lower") for p in percentiles}
