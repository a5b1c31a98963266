"""A rate over a window counts the bytes that arrived in it (`arrived_bytes`), which no
window can push past the links; the in-order count can, when a retransmission fills a
hole and releases the bytes held behind it."""

from __future__ import annotations

import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import Controller, ControlPlane
from isthmus.network_metrics import arrived_bytes
from isthmus.studies import ofpt
from isthmus.studies.ibcn import congestion

PAYLOAD_SHARE = 1460 / 1500
PACKET_BITS = 1500 * 8


def in_order_bytes(flows: dict[str, np.ndarray]) -> np.ndarray:
    """The counter window rates used to read: in order, each byte once."""
    return flows["bytes_delivered"].astype(np.float64)


def _lossy_flow_readings(bin_ps: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """One TCP flow from a 10 Gb/s host through a 30-packet switch buffer onto a 1 Gb/s
    link: slow start overflows the buffer, SACK repairs the holes. Both counters of the
    flow at the end of each bin."""
    topology = Topology.custom(
        ["h0", "h1"],
        ["s"],
        [("h0", "s", Link("10Gbps", "10us")), ("s", "h1", Link("1Gbps", "10us"))],
    )
    sim = Simulation(topology, seed=1, switch_queue="30pkts")
    flow = sim.add_tcp_flow(0, 1, "5MB", transport="tcp")
    arrived, in_order = [], []
    for b in range(bins + 1):
        sim.run(b * bin_ps)
        flows = sim.flows()
        arrived.append(arrived_bytes(flows)[flow])
        in_order.append(in_order_bytes(flows)[flow])
    assert sim.flows()["retransmissions"][flow] > 0, "the test needs losses"
    return np.array(arrived), np.array(in_order)


def test_arrived_bytes_never_outrun_the_link_where_in_order_bytes_do():
    bin_ps, bins = 200_000_000, 250  # 200 us bins over 50 ms
    arrived, in_order = _lossy_flow_readings(bin_ps, bins)
    seconds = bin_ps / 1e12
    # One packet more than the link carries in a bin: one that straddles its start.
    ceiling_bps = 1e9 * PAYLOAD_SHARE + PACKET_BITS / seconds
    in_order_bps = np.diff(in_order) * 8 / seconds
    arrived_bps = np.diff(arrived) * 8 / seconds
    assert in_order_bps.max() > 5 * ceiling_bps, "a hole's release shows as a burst"
    assert arrived_bps.max() <= ceiling_bps
    # Nothing is lost from the count: each byte arrived in some window.
    assert arrived[-1] >= in_order[-1] == 5_000_000


def _ofpt_fabric(counter) -> dict:
    """OFPT's fabric measurement on a k=4 fat-tree, MPTCP with 4 subflows over ECMP,
    measured from 20 to 30 ms with `counter` as the study's byte counter."""
    topology = Topology.fat_tree(4, ofpt.LINK, ofpt.LINK)
    pairs = ofpt.traffic(topology.num_hosts, "one-to-one", 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ofpt, "arrived_bytes", counter)
        return ofpt.run_fabric(topology, "MPTCP-4", pairs, 1, {"warmup_ms": 20, "duration_ms": 30})


def test_ofpt_study_never_measures_a_flow_above_its_nic():
    # A permutation's natural demand is the whole NIC: utilisation is goodput / NIC.
    ceiling = PAYLOAD_SHARE + PACKET_BITS / (1e9 * 0.010)
    assert max(_ofpt_fabric(in_order_bytes)["flow_utilisation"]) > 1.5
    measured = _ofpt_fabric(arrived_bytes)
    assert max(measured["flow_utilisation"]) <= ceiling
    assert measured["throughput"] <= ceiling


def _ibcn_continuous(counter) -> dict:
    """IBCN's scenario 2 (48 continuous senders to h0 and h1) without congestion
    management, at the quick scale and 1500 B packets (whose bursts the old counter
    over-measured), with `counter` as the study's byte counter."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(congestion, "arrived_bytes", counter)
        return congestion.scenario(
            1,
            "none",
            congestion.QUICK_SCALED,
            epochs=1,
            workload=congestion.Workload(continuous=True),
            packet_bytes=1500,
        )


def test_ibcn_study_never_measures_more_than_the_destinations_links_carry():
    # Every byte reaches h0 or h1 over its own 1 Gb/s link; a packet may straddle
    # each end of the window on each.
    seconds = congestion.QUICK_SCALED.measure_s
    ceiling_gbps = 2 * (PAYLOAD_SHARE + 2 * PACKET_BITS / (1e9 * seconds))
    assert _ibcn_continuous(in_order_bytes)["goodput_gbps"] > ceiling_gbps
    assert _ibcn_continuous(arrived_bytes)["goodput_gbps"] <= ceiling_gbps


class RatePoller(Controller):
    """Reads `flow_stats` every 200 us, as a controller polling its switches would."""

    def __init__(self) -> None:
        super().__init__()
        self.rates: list[float] = []

    def on_start(self) -> None:
        self.every("200us", lambda: self.rates.append(float(self.flow_stats()["rate_bps"][0])))


def test_a_controller_s_flow_rates_never_outrun_the_link():
    # The lossy flow of the first test, polled by a controller: a hole's release used
    # to read as a burst of several times the link.
    topology = Topology.custom(
        ["h0", "h1"],
        ["s"],
        [("h0", "s", Link("10Gbps", "10us")), ("s", "h1", Link("1Gbps", "10us"))],
    )
    sim = Simulation(topology, seed=1, switch_queue="30pkts")
    sim.add_tcp_flow(0, 1, "5MB", transport="tcp")
    plane = ControlPlane(sim)
    poller = plane.add(RatePoller())
    plane.run("50ms")
    assert sim.flows()["retransmissions"][0] > 0, "the test needs losses"
    ceiling_bps = 1e9 * PAYLOAD_SHARE + PACKET_BITS / 200e-6
    assert len(poller.rates) >= 200 and max(poller.rates) <= ceiling_bps
