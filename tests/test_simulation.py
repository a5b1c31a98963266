"""The Python API: units at the boundary, telemetry as arrays, determinism, export."""

import networkx as nx
import numpy as np
import pytest

from isthmus import Link, Simulation, Topology, load_scenario


def small_sim(**kwargs) -> Simulation:
    return Simulation(Topology.leaf_spine(2, 2, 4), **kwargs)


def test_packets_are_conserved_as_seen_from_python():
    sim = small_sim(seed=5, switch_queue="20pkts")
    for src in range(4):
        sim.add_udp_flow(src, 4, "6Gbps", stop="1ms")  # 24 Gb/s into one 10 Gb/s host
    for t in ("200us", "600us", "1ms"):
        sim.run(t)
        flows, ports = sim.flows(), sim.ports()
        sent = flows["packets_sent"].sum()
        assert (
            sent
            == flows["packets_delivered"].sum() + ports["drop_packets"].sum() + sim.live_packets
        )
    assert sim.ports()["drop_packets"].sum() > 0
    assert sim.run("2ms", stop_when_flows_finish=True)
    assert sim.live_packets == 0


def test_telemetry_columns_are_numpy_arrays_of_one_row_per_port_and_flow():
    sim = small_sim(sample_interval="10us")
    sim.add_udp_flow(0, 5, "1Gbps", size="100KB")
    sim.run("1ms")
    ports, flows, samples = sim.ports(), sim.flows(), sim.samples()
    n_ports = 2 * len(sim.topology.links()["a"])
    assert all(isinstance(v, np.ndarray) and len(v) == n_ports for v in ports.values())
    assert all(isinstance(v, np.ndarray) and len(v) == 1 for v in flows.values())
    assert samples["queue_bytes"].shape == (100, n_ports)
    assert np.all(np.diff(samples["time_ps"]) == 10_000_000)
    assert flows["bytes_delivered"][0] == 100_000
    # tx_bytes only grows; the final sample does not exceed the final counter.
    assert np.all(np.diff(samples["tx_bytes"], axis=0) >= 0)
    assert np.all(samples["tx_bytes"][-1] <= ports["tx_bytes"])


def test_a_size_bounded_flow_finishes_and_records_its_times():
    sim = small_sim()
    sim.add_udp_flow(0, 6, "10Gbps", size="1MB", start="10us", arrivals="constant")
    assert sim.run("5ms", stop_when_flows_finish=True)
    f = sim.flows()
    assert f["start_ps"][0] == 10_000_000
    assert f["bytes_delivered"][0] == 1_000_000
    # 1 MB at 10 Gb/s is ~ 0.82 ms of datagrams (1472 B payload per 1500 B on the wire).
    duration_us = (f["finish_ps"][0] - f["start_ps"][0]) / 1e6
    assert 815 < duration_us < 830
    assert sim.unfinished_flows == 0


def run_scenario(scenario_path, seed):
    sim = load_scenario(scenario_path("leafspine-udp")).build(seed=seed)
    sim.run("3ms")
    return sim.flows(), sim.ports()


def test_same_seed_gives_identical_results_and_seeds_differ(scenario_path):
    (f1, p1), (f2, p2), (f3, _) = (run_scenario(scenario_path, s) for s in (4, 4, 5))
    for key in f1:
        np.testing.assert_array_equal(f1[key], f2[key])
    for key in p1:
        np.testing.assert_array_equal(p1[key], p2[key])
    assert not np.array_equal(f1["dst"], f3["dst"]) or not np.array_equal(
        f1["bytes_sent"], f3["bytes_sent"]
    )


def test_networkx_export_matches_the_topology():
    topo = Topology.leaf_spine(4, 3, 5, fabric_link=Link("100Gbps", "500ns"))
    g = topo.to_networkx()
    assert g.number_of_nodes() == 4 + 3 + 15
    assert g.number_of_edges() == 15 + 12
    assert g.nodes["h7"]["address"] == 7 and g.nodes["h7"]["kind"] == "host"
    assert g.nodes["spine2"]["role"] == "spine"
    assert g.edges["leaf1", "spine3", 0] == {"rate_bps": 100_000_000_000, "delay_ps": 500_000}
    assert nx.shortest_path_length(g, "h0", "h14") == 4
    assert sorted(g.neighbors("h7")) == ["leaf1"]


@pytest.mark.parametrize(
    ("build", "hosts", "switches"),
    [
        (lambda: Topology.fat_tree(4), 16, 20),
        (lambda: Topology.three_tier(1, 2, 5, 10), 50, 8),
        (lambda: Topology.vl2(4, 4, 20), 80, 10),
        (lambda: Topology.ring(6, 2), 12, 6),
        (lambda: Topology.mesh(4, 3), 12, 4),
    ],
)
def test_every_builder_routes_traffic_between_all_racks(build, hosts, switches):
    topo = build()
    assert topo.num_hosts == hosts
    assert topo.num_nodes - topo.num_hosts == switches
    sim = Simulation(topo, seed=2)
    for src in range(hosts):
        sim.add_udp_flow(src, (src + hosts // 2) % hosts, "100Mbps", size="3KB")
    assert sim.run("1ms", stop_when_flows_finish=True)
    assert sim.flows()["bytes_delivered"].sum() == hosts * 3000


def test_flow_entries_steer_and_validate():
    sim = small_sim()
    # leaf0 ports: 0-3 hosts, 4-5 spines. Drop everything to host 5 at leaf0.
    sim.add_flow_entry("leaf0", 10, dst=5, drop=True)
    sim.add_udp_flow(0, 5, "1Gbps", size="15KB")
    sim.add_udp_flow(0, 6, "1Gbps", size="15KB")
    sim.run("1ms")
    assert list(sim.flows()["bytes_delivered"]) == [0, 15_000]
    with pytest.raises(ValueError, match="at most one action"):
        sim.add_flow_entry("leaf0", 1, output=4, drop=True)
    with pytest.raises(ValueError, match="is a host"):
        sim.add_flow_entry("h0", 1, output=0)
    with pytest.raises(ValueError, match="no node named 'leaf9'"):
        sim.add_flow_entry("leaf9", 1, output=0)


def test_bad_api_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="unknown routing 'ospf'"):
        small_sim(routing="ospf")
    sim = small_sim()
    with pytest.raises(ValueError, match="dst host 8 does not exist; hosts are numbered 0..7"):
        sim.add_udp_flow(0, 8, "1Gbps", stop="1ms")
    with pytest.raises(ValueError, match="needs a size, a stop time"):
        sim.add_udp_flow(0, 1, "1Gbps")
    with pytest.raises(ValueError, match="arrivals must be one of"):
        sim.add_udp_flow(0, 1, "1Gbps", stop="1ms", arrivals="bursty")
    sim.run("1ms")
    with pytest.raises(ValueError, match="is in the past"):
        sim.add_udp_flow(0, 1, "1Gbps", start="10us", stop="2ms")
    with pytest.raises(ValueError, match="before the current time"):
        sim.run("10us")


def test_a_simulation_shows_its_network_and_results_in_a_notebook():
    sim = Simulation(Topology.ring(3, 1))
    before = sim._repr_html_()
    assert "<td>3</td>" in before and "flows finished" not in before
    sim.add_tcp_flow(0, 1, "100KB")
    sim.run("10ms")
    after = sim._repr_html_()
    assert "<td>1 / 1</td>" in after and "<td>100,000</td>" in after


def test_queue_wait_quantiles_refuse_bad_input_and_read_nothing_before_a_packet_leaves():
    sim = small_sim(seed=2)
    assert sim.queue_wait_quantile(0.99) is None
    with pytest.raises(ValueError, match=r"q = 1\.5: a quantile is between 0 and 1"):
        sim.queue_wait_quantile(1.5)
    with pytest.raises(ValueError, match="at = 'spines': choose 'all', 'switches' or 'hosts'"):
        sim.queue_wait_quantile(0.5, "spines")
    # 24 Gb/s into one 10 Gb/s host link: the switch queue fills, so its tail waits, and
    # the quantiles of every hop lie between the switches' and the NICs' extremes.
    for src in range(4):
        sim.add_udp_flow(src, 4, "6Gbps", stop="1ms")
    sim.run("1ms")
    switch_p99 = sim.queue_wait_quantile(0.99, "switches")
    assert switch_p99 > 0
    assert sim.queue_wait_quantile(0.0, "all") == 0.0
    assert sim.queue_wait_quantile(0.5, "switches") <= switch_p99
    assert sim.queue_wait_quantile(1.0, "all") == max(
        sim.queue_wait_quantile(1.0, "switches"), sim.queue_wait_quantile(1.0, "hosts")
    )
