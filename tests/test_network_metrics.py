"""Throughput, fairness, bisection, utilization, queue and reordering metrics."""

import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.network_metrics import (
    bisection_bandwidth_bps,
    bisection_fraction,
    flow_throughput_bps,
    host_throughput_bps,
    jain_index,
    link_utilization,
    queue_percentiles,
)


def test_jain_index_on_known_shares():
    assert jain_index(np.array([5.0, 5.0, 5.0, 5.0])) == pytest.approx(1.0)
    assert jain_index(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    assert jain_index(np.array([2.0, 1.0])) == pytest.approx(9 / 10)
    with pytest.raises(ValueError, match="non-negative"):
        jain_index(np.array([1.0, -1.0]))


def test_bisection_bandwidth_of_full_and_oversubscribed_fabrics():
    ten = Link("10Gbps", "1us")
    assert bisection_bandwidth_bps(Topology.fat_tree(4, ten, ten)) == 8 * 10e9
    full = Topology.leaf_spine(2, 4, 8, ten, Link("40Gbps", "1us"))
    assert bisection_bandwidth_bps(full) == 16 * 10e9
    # One spine: each of the left half's two leaves has 40 Gb/s up for 80 Gb/s of hosts.
    half = Topology.leaf_spine(1, 4, 8, ten, Link("40Gbps", "1us"))
    assert bisection_bandwidth_bps(half) == 2 * 40e9


def test_a_permutation_on_a_fat_tree_and_its_fraction_of_bisection():
    sim = Simulation(Topology.fat_tree(4), switch_queue="100pkts", tcp={"mptcp_subflows": 8})
    for h in range(16):
        sim.add_tcp_flow(h, (h + 8) % 16, "20MB", transport="mptcp")
    assert sim.run("1s", stop_when_flows_finish=True)
    fraction = bisection_fraction(sim)
    rates = flow_throughput_bps(sim)
    # Never above the fabric; MPTCP fills most of it (Raiciu et al. 2011).
    assert 0.5 < fraction <= 1.0
    assert np.all(rates <= 10e9) and np.all(host_throughput_bps(sim) <= 10e9)
    assert jain_index(rates) > 0.8
    assert np.all((link_utilization(sim) >= 0) & (link_utilization(sim) <= 1))


def test_sampled_queue_percentiles_are_ordered_and_below_the_true_peak():
    topo = Topology.leaf_spine(1, 2, 8)
    sim = Simulation(topo, ecn_threshold="20pkts", sample_interval="10us")
    for h in range(1, 8):
        sim.add_tcp_flow(h, 0, "2MB")
    assert sim.run("100ms", stop_when_flows_finish=True)
    q = queue_percentiles(sim)
    assert np.all(q["p50"] <= q["p90"]) and np.all(q["p90"] <= q["p99"])
    assert np.all(q["p100"] <= sim.ports()["max_queue_packets"])
    # The receiver's port held the DCTCP queue: its median sits near K = 20.
    busiest = int(np.argmax(q["p50"]))
    assert 5 <= q["p50"][busiest] <= 40
    with pytest.raises(ValueError, match="sample_interval"):
        queue_percentiles(Simulation(topo))


def test_packet_spraying_reorders_and_flow_hashing_does_not():
    # Four flows leaf0 -> leaf1 over four 10 Gb/s spines: sprayed packets meet different
    # queues on different spines and arrive out of order; a hashed flow keeps one path.
    # Deep buffers, so no loss causes the reordering.
    counts = {}
    ten = Link("10Gbps", "1us")
    for routing in ("ecmp", "spray"):
        sim = Simulation(
            Topology.leaf_spine(4, 2, 4, ten, ten),
            routing=routing,
            switch_queue="2000pkts",
            host_queue="2000pkts",
        )
        for h in range(4):
            sim.add_tcp_flow(h, 4 + h, "5MB", transport="tcp")
        assert sim.run("1s", stop_when_flows_finish=True)
        assert sim.flows()["packets_dropped"].sum() == 0
        counts[routing] = int(sim.flows()["out_of_order"].sum())
    assert counts["ecmp"] == 0 and counts["spray"] > 0, counts
