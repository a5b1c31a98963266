"""Each bundled scenario states what a correct run shows; these tests hold it to that."""

import math

import numpy as np

from isthmus import load_scenario
from isthmus.units import time_ps


def run(scenario_path, name, **network):
    scenario = load_scenario(scenario_path(name))
    if network:
        scenario = scenario.model_copy(
            update={"network": scenario.network.model_copy(update=network)}
        )
    sim = scenario.build()
    sim.run(time_ps(scenario.run.duration), stop_when_flows_finish=True)
    return sim


def host_ports(sim):
    ports = sim.ports()
    return ports, np.isin(ports["node"], sim.topology.nodes()["host_node"])


def test_leafspine_udp_delivers_everything_and_nics_wait_as_md1(scenario_path):
    sim = run(scenario_path, "leafspine-udp")
    flows = sim.flows()
    ports, nic = host_ports(sim)
    assert sim.unfinished_flows == 0
    assert ports["drop_packets"].sum() == 0
    assert np.array_equal(flows["bytes_delivered"], flows["bytes_sent"])
    utilization = ports["busy_ps"][nic] / time_ps("20ms")
    assert np.all(np.abs(utilization - 0.6) < 0.02), utilization
    wait_us = ports["wait_ps"][nic].sum() / ports["tx_packets"][nic].sum() / 1e6
    assert abs(wait_us - 0.9) / 0.9 < 0.03, wait_us
    # The tail too: M/D/1's 99th percentile wait at load 0.6 (1.2 us service).
    p99_us = sim.queue_wait_quantile(0.99, "hosts") / 1e6
    theory_us = md1_wait_quantile(0.99, 0.6) * 1.2
    assert abs(p99_us - theory_us) / theory_us < 0.05, (p99_us, theory_us)
    # Switch links run faster than the NICs feeding them: most packets never wait there.
    assert sim.queue_wait_quantile(0.5, "switches") == 0.0


def md1_wait_quantile(q: float, load: float) -> float:
    """The q-quantile of an M/D/1 queue's wait, in service times, by bisection on
    Erlang's formula for its distribution."""

    def cdf(x: float) -> float:
        return (1 - load) * sum(
            (load * (k - x)) ** k / math.factorial(k) * math.exp(-load * (k - x))
            for k in range(math.floor(x) + 1)
        )

    low, high = 0.0, 30.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if cdf(middle) < q else (low, middle)
    return low


def test_incast_drops_the_excess_at_the_last_hop_only(scenario_path):
    sim = run(scenario_path, "incast-udp")
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    dropping = {
        (names[n], names[m])
        for n, m, d in zip(ports["node"], ports["peer_node"], ports["drop_packets"], strict=True)
        if d
    }
    assert dropping == {("leaf0", "h0")}
    flows = sim.flows()
    dropped = ports["drop_packets"].sum() / flows["packets_sent"].sum()
    assert 0.33 < dropped < 0.375
    last_hop = (ports["node"] == names.index("leaf0")) & (ports["peer_node"] == names.index("h0"))
    assert ports["busy_ps"][last_hop][0] / sim.now > 0.97


def test_fattree_permutation_collides_under_ecmp_but_not_when_sprayed(scenario_path):
    ecmp = run(scenario_path, "fattree-permutation-udp")
    delivered = ecmp.flows()["bytes_delivered"] / ecmp.flows()["bytes_sent"]
    assert ecmp.ports()["drop_packets"].sum() > 0
    assert np.sum(delivered == 1.0) >= 4 and np.sum(delivered < 0.7) >= 2
    sprayed = run(scenario_path, "fattree-permutation-udp", routing="spray")
    assert sprayed.ports()["drop_packets"].sum() == 0
    assert np.all(sprayed.flows()["bytes_delivered"] == sprayed.flows()["bytes_sent"])


def test_forecast_recorder_surges_in_the_middle_third_within_link_rates():
    from isthmus.experiments.recorded_series import record, switch_throughput

    recording = record(seed=1)
    # One packet on the wire at a sample boundary: 1500 B per 250 us sample.
    slack = 1500 * 8 / 250e-6
    assert np.all(recording.throughput_bps <= recording.rate_bps + slack)
    uplinks = [i for i, peer in enumerate(recording.port_peer) if peer.startswith("spine")]
    leaf0_up = [i for i in uplinks if recording.port_node[i] == "leaf0"]
    carried = recording.throughput_bps[:, leaf0_up].sum(axis=1)
    thirds = [part.mean() for part in np.array_split(carried, 3)]
    assert thirds[1] > 1.5 * thirds[0], thirds
    assert switch_throughput(recording, "leaf0").shape[1] == 10


def test_dctcp_fig17_reproduces_what_ns3s_dctcp_example_states(scenario_path):
    """ns-3's examples/tcp/dctcp-example states 23 / 471 / 74 Mb/s per S1 / S2 / S3
    sender, Jain's index above 0.99 per group, and about 200 us and 1 ms of queueing
    in the queue discipline (its device queue apart) at T1 -> T2 and T2 -> R1; within
    10 % per group, 20 % for the queues."""
    spec = load_scenario(scenario_path("dctcp-fig17"))
    sim = spec.build(base=scenario_path("dctcp-fig17").parent)
    names = sim.topology.nodes()["name"]
    sim.run("4s")
    before = sim.flows()["bytes_delivered"].astype(np.float64)
    bottlenecks = (("T1", "T2", 10e9), ("T2", "r1", 1e9))
    waiting = {b[:2]: [] for b in bottlenecks}
    for step in range(1, 101):
        sim.run(time_ps("4s") + step * time_ps("10ms"))
        for a, b, _ in bottlenecks:
            queues = sim.queues(a)
            port = sim.port_towards(a, b)
            waiting[(a, b)].append(
                queues["queue_packets"][
                    queues["port_index"] == queues["port_index"].min() + port
                ].sum()
            )
    mbps = (sim.flows()["bytes_delivered"] - before) * 8 / 1e6
    for group, expected in ((slice(0, 10), 23), (slice(10, 30), 471), (slice(30, 40), 74)):
        rates = mbps[group]
        assert abs(rates.mean() - expected) / expected < 0.10, (group, rates.mean())
        assert rates.sum() ** 2 / (len(rates) * (rates**2).sum()) > 0.99
    for (a, b, rate), expected_us in zip(bottlenecks, (200, 1000), strict=True):
        delay_us = np.mean(waiting[(a, b)]) * 1500 * 8 / rate * 1e6
        assert 0.8 * expected_us < delay_us < 1.2 * expected_us, (a, b, delay_us)
    assert sim.ports()["drop_packets"].sum() == 0
    assert names.index("r1") == 40
