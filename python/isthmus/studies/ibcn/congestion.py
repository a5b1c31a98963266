"""IBCN's congestion-management experiments: BCN driven by forecast queues against plain
BCN and against no congestion management, on the paper's three-tier network
(`prediction.tree`, 200-packet buffers) with the paper's 64 B packets (section V: TCP
segments of 24 B payload and 40 B of headers; `packet_bytes` sets another size, as the
study's 1500 B sensitivity rows do).

1. Scenario 1, transactions: the 48 other hosts each run a persistent TCP connection
   to h0 or h1 (alternately) whose application writes 10 KB, waits a think time
   uniform in 1-5 ms after the transaction reached the receiver, and writes the next
   (`Simulation.add_message_flow`). Measured after the warm-up: transactions per
   second, their goodput (Gb/s), and the mean one-way packet delay (us).
2. Scenario 2, continuous senders: the same 48 connections each send without pause
   (iperf-like, starting at random in the first millisecond) for the whole run,
   holding the bottleneck at 99.9 % or more (the
   paper's loaded link); measured: the mean goodput of the 40 sources that share the
   bottleneck, its standard deviation across them (% of the mean), the total goodput
   per interval with its standard deviation over time (% of the mean), and the
   bottleneck's utilisation.
3. Load sweep: scenario 1 with exponential think times whose mean makes the offered
   load L x the 1 Gb/s bottleneck (the agg0-edge0 link the 40 sources outside edge0
   cross; L = 10-90 %); measured: goodput.

Schemes: `none` (BCN off), `bcn` (congestion points on, every connection behind a BCN
rate regulator: `Simulation.regulate_with_bcn`), and `ibcn-MODEL` (the same, and the
`Ibcn` controller feeding the points forecasts from MODEL); a STOPped regulator restarts
at `prediction.RESTART_BPS`, the 40 remote sources' fair share of the bottleneck (the
prediction half's rule too). The IBCN controller fits its model on the run's first
`training_polls` polls (plain BCN meanwhile), then forecasts the next k = 5 polls from
the last W = 10 every poll; measurement starts after training, at the same time for
every scheme.

Time scales: `scaled` polls every 1 ms with STOP pauses of 200-800 us (the paper's
1 s and 200-800 ms scaled by 10^-3, as the prediction half scales its 500 ms); `paper`
polls every 1 s with the paper's 200-800 ms pauses, run for BCN and IBCN-LSTM only
(60 polls to train on are a minute of simulated time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isthmus.control import ControlPlane
from isthmus.control.apps.ibcn import Ibcn
from isthmus.network_metrics import arrived_bytes
from isthmus.simulation import Simulation
from isthmus.studies.ibcn.prediction import (
    BCN,
    BOTTLENECK_BPS,
    HORIZON,
    MODEL_OPTIONS,
    NEURAL,
    REMOTE_SOURCES,
    RESTART_BPS,
    WINDOW,
    tree,
)

SOURCES = range(2, 50)
DESTINATIONS = 2
TRANSACTION_BYTES = 10_000
THINK_RANGE_S = (1e-3, 5e-3)
# TCP NewReno with the usual 200 ms minimum retransmission timeout (Linux's
# TCP_RTO_MIN); the paper names no TCP settings.
TCP = {"min_rto": "200ms", "initial_rto": "1s"}
# Full segments on the wire: the paper's section V fixes 64 B packets; 1500 B (the
# Ethernet MTU) is run beside it as a sensitivity setting.
PACKET_BYTES = 64
TCP_HEADER_BYTES = 40
SCHEMES = ("none", "bcn", *(f"ibcn-{m}" for m in MODEL_OPTIONS))


@dataclass(frozen=True)
class TimeScale:
    name: str
    interval_s: float
    min_pause: str
    max_pause: str
    training_polls: int
    measure_s: float

    @property
    def warmup_s(self) -> float:
        return self.training_polls * self.interval_s


SCALED = TimeScale("scaled", 1e-3, "200us", "800us", 500, 2.0)
PAPER = TimeScale("paper", 1.0, "200ms", "800ms", 75, 20.0)
QUICK_SCALED = TimeScale("scaled", 1e-3, "200us", "800us", 100, 0.3)


def _ps(seconds: float) -> int:
    return round(seconds * 1e12)


def network(seed: int, scheme: str, packet_bytes: int = PACKET_BYTES) -> Simulation:
    """The tree, BCN points on every switch port unless `none`, TCP segments of
    `packet_bytes` on the wire (payload and the 40 B of IPv4 and TCP headers)."""
    bcn = None if scheme == "none" else dict(BCN)
    tcp = {**TCP, "mss": f"{packet_bytes - TCP_HEADER_BYTES}B"}
    return Simulation(tree(), seed=seed, switch_queue="200pkts", bcn=bcn, tcp=tcp)


@dataclass(frozen=True)
class Workload:
    """Scenario 1 by default; `continuous` senders (scenario 2); or transactions at an
    offered `load` (the sweep)."""

    continuous: bool = False
    load: float | None = None


def add_sources(
    sim: Simulation, scheme: str, scale: TimeScale, end_s: float, workload: Workload
) -> list[int]:
    """The 48 connections of a scenario; returns their flow ids."""
    rng = np.random.default_rng([sim.seed, 1709])
    load = workload.load
    flows = []
    for i, src in enumerate(SOURCES):
        dst = i % DESTINATIONS
        if workload.continuous:
            # Staggered starts (uniform in the first millisecond), so seeds differ.
            start = rng.uniform(0.0, 1e-3)
            flow = sim.add_bulk_flow(
                src, dst, _ps(end_s - start), start=_ps(start), transport="tcp"
            )
        else:
            if load is None:
                count = int(end_s / THINK_RANGE_S[0]) + 1
                thinks_s = rng.uniform(*THINK_RANGE_S, size=count)
            else:
                per_source_bps = load * BOTTLENECK_BPS / REMOTE_SOURCES
                mean_s = TRANSACTION_BYTES * 8 / per_source_bps
                count = int(4 * end_s / mean_s) + 16
                thinks_s = rng.exponential(mean_s, size=count)
            thinks = np.round(thinks_s * 1e12).astype(np.uint64)
            sizes = np.full(len(thinks), TRANSACTION_BYTES, dtype=np.uint64)
            flow = sim.add_message_flow(src, dst, sizes, thinks, stop=_ps(end_s))
        if scheme != "none":
            sim.regulate_with_bcn(
                flow,
                fair_share=f"{RESTART_BPS:.0f}bps",
                min_pause=scale.min_pause,
                max_pause=scale.max_pause,
            )
        flows.append(flow)
    return flows


def _bottleneck_port(sim: Simulation) -> int:
    """The port row of the agg0 -> edge0 link."""
    ports = sim.ports()
    agg0, edge0 = sim.node_index("agg0"), sim.node_index("edge0")
    return int(np.flatnonzero((ports["node"] == agg0) & (ports["peer_node"] == edge0))[0])


def controller(scheme: str, scale: TimeScale, epochs: int) -> Ibcn | None:
    if not scheme.startswith("ibcn-"):
        return None
    model = scheme.removeprefix("ibcn-")
    options = dict(MODEL_OPTIONS[model])
    if model in NEURAL:
        options["epochs"] = epochs
    return Ibcn(
        model=model,
        interval=_ps(scale.interval_s),
        window=WINDOW,
        horizon=HORIZON,
        training_polls=scale.training_polls,
        model_options=options,
    )


@dataclass
class Snapshot:
    """Counters at one instant: per-flow bytes that reached the receivers
    (`network_metrics.arrived_bytes`: the rate between two snapshots cannot exceed the
    links, as one of in-order bytes can when a hole fills) and packet delays."""

    time_s: float
    arrived: np.ndarray
    delay_sum_ps: np.ndarray
    delay_packets: np.ndarray

    @classmethod
    def of(cls, sim: Simulation, flows: list[int]) -> Snapshot:
        table = sim.flows()
        return cls(
            sim.now / 1e12,
            arrived_bytes(table)[flows],
            table["delay_sum_ps"][flows].astype(float),
            table["delay_packets"][flows].astype(float),
        )


def scenario(
    seed: int,
    scheme: str,
    scale: TimeScale,
    epochs: int,
    workload: Workload,
    bins: int = 20,
    packet_bytes: int = PACKET_BYTES,
) -> dict:
    """One run of a workload under a scheme with `packet_bytes` packets, measured in
    `bins` intervals."""
    end_s = scale.warmup_s + scale.measure_s
    sim = network(seed, scheme, packet_bytes)
    flows = add_sources(sim, scheme, scale, end_s, workload)
    plane = ControlPlane(sim)
    ibcn = controller(scheme, scale, epochs)
    if ibcn is not None:
        plane.add(ibcn)
    plane.run(_ps(scale.warmup_s))
    bottleneck = _bottleneck_port(sim)
    sent_before = int(sim.ports()["tx_bytes"][bottleneck])
    drops_before = int(sim.ports()["drop_packets"].sum())
    timeouts_before = int(sim.flows()["timeouts"][flows].sum())
    snapshots = [Snapshot.of(sim, flows)]
    for b in range(1, bins + 1):
        plane.run(_ps(scale.warmup_s + scale.measure_s * b / bins))
        snapshots.append(Snapshot.of(sim, flows))
    first, last = snapshots[0], snapshots[-1]
    seconds = last.time_s - first.time_s
    per_source_bps = (last.arrived - first.arrived) * 8 / seconds
    # The sources that share the bottleneck (the ones outside edge0): the 8 on edge0
    # reach the destinations without it and would measure the wiring, not the scheme.
    remote = per_source_bps[len(SOURCES) - REMOTE_SOURCES :]
    per_bin_bps = np.array(
        [
            (b.arrived.sum() - a.arrived.sum()) * 8 / (b.time_s - a.time_s)
            for a, b in zip(snapshots, snapshots[1:], strict=False)
        ]
    )
    packets = last.delay_packets.sum() - first.delay_packets.sum()
    delay_us = (last.delay_sum_ps.sum() - first.delay_sum_ps.sum()) / max(packets, 1) / 1e6
    messages = sim.messages()
    finish = messages["finish_ps"]
    window = (finish >= first.time_s * 1e12) & (finish < last.time_s * 1e12)
    flow_table = sim.flows()
    out = {
        "seed": seed,
        "scheme": scheme,
        "scale": scale.name,
        "packet_bytes": packet_bytes,
        "goodput_gbps": float(per_source_bps.sum() / 1e9),
        "bottleneck_util_pct": float(
            (int(sim.ports()["tx_bytes"][bottleneck]) - sent_before)
            * 8
            / seconds
            / BOTTLENECK_BPS
            * 100
        ),
        "per_source_mbps": float(remote.mean() / 1e6),
        "source_std_pct": float(remote.std() / max(remote.mean(), 1e-9) * 100),
        "time_std_pct": float(per_bin_bps.std() / max(per_bin_bps.mean(), 1e-9) * 100),
        "delay_us": float(delay_us),
        "tps": float(window.sum() / seconds),
        "transaction_ms": float(
            np.mean(finish[window] - messages["start_ps"][window]) / 1e9 if window.any() else 0.0
        ),
        "drops": int(sim.ports()["drop_packets"].sum()) - drops_before,
        "timeouts": int(flow_table["timeouts"][flows].sum()) - timeouts_before,
    }
    if scheme != "none":
        bcn = sim.bcn()
        out["feedback"] = {k: int(bcn[k].sum()) for k in ("positive", "normal", "stop")}
    if ibcn is not None:
        out["rounds_predicted"] = ibcn.rounds_predicted
        out["control_bytes"] = ibcn.control_bytes
    return out


def run_scenario(
    seed: int,
    scheme: str,
    scale: dict,
    epochs: int,
    workload: dict,
    packet_bytes: int = PACKET_BYTES,
) -> dict:
    """Job: `scenario` from JSON arguments (a `TimeScale`'s and a `Workload`'s fields)."""
    return scenario(
        seed,
        scheme,
        TimeScale(**scale),
        epochs,
        Workload(**workload),
        packet_bytes=packet_bytes,
    )
