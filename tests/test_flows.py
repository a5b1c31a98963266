"""Generated flow workloads: patterns, arrival processes, sizes, and scenario blocks."""

import numpy as np
import pytest
from scipy import stats

from isthmus import ScenarioError, Topology, parse_scenario
from isthmus.flows import Batch, Incast, OnOff, Profile, SizeRange, generate_flows

TOPO = Topology.leaf_spine(2, 4, 8)


def test_incast_batches_start_together_from_distinct_senders():
    flows = generate_flows(
        TOPO,
        pattern=Incast(receiver=3, senders=20),
        arrivals=Batch(count=5),
        sizes=SizeRange(min="64KB", max="64KB"),
        start="1ms",
        stop="2ms",
    )
    assert len(flows["src"]) == 100
    assert np.all(flows["start_ps"] == 1_000_000_000)
    assert np.all(flows["dst"] == 3) and np.all(flows["size_bytes"] == 64_000)
    senders, counts = np.unique(flows["src"], return_counts=True)
    assert len(senders) == 20 and 3 not in senders and np.all(counts == 5)


def test_uniform_sizes_pass_a_kolmogorov_smirnov_test():
    flows = generate_flows(
        TOPO,
        pattern="permutation",
        arrivals=Batch(count=200),
        sizes=SizeRange(min="10KB", max="10MB"),
        stop="1us",
    )
    sizes = flows["size_bytes"]
    assert stats.kstest(sizes, stats.uniform(10_000, 10_000_000 - 10_000).cdf).pvalue > 0.001
    # A permutation: each host sends to exactly one other and receives from exactly one.
    pairs = set(zip(flows["src"].tolist(), flows["dst"].tolist(), strict=True))
    assert len(pairs) == 32 and sorted(d for _, d in pairs) == list(range(32))


def test_a_surge_profile_doubles_the_arrival_rate_in_the_middle_third():
    flows = generate_flows(
        TOPO,
        pattern="random",
        arrivals=Profile(flows_per_second=[1000, 2000, 1000]),
        stop="3s",
        seed=5,
    )
    counts = np.bincount((flows["start_ps"] // 10**12).astype(int), minlength=3)
    for got, want in zip(counts, [1000, 2000, 1000], strict=True):
        assert abs(got - want) < 4 * np.sqrt(want), counts


def test_on_off_arrivals_are_log_normal_inside_on_periods():
    arrivals = OnOff(
        on={"mean": "20ms", "sigma": 0.5},
        off={"mean": "50ms", "sigma": 0.1},
        gap={"mean": "200us", "sigma": 0.8},
    )
    flows = generate_flows(TOPO, pattern="permutation", arrivals=arrivals, stop="20s", seed=2)
    gaps = np.diff(np.sort(flows["start_ps"][flows["src"] == 0]).astype(float))
    inside = gaps[gaps < 5e9]  # OFF periods (about 50 ms) are far longer than 5 ms
    # Log-normal gaps: their logarithms are normal with sigma 0.8 (truncated by the ON
    # period's end, which shortens only the last gap of each period).
    assert abs(np.log(inside).std() - 0.8) < 0.05
    assert abs(inside.mean() / 200e6 - 1) < 0.1


def test_scenario_flow_blocks_run_and_bad_blocks_name_their_field():
    text = """
    name = "flows-test"
    [topology]
    kind = "leaf_spine"
    spines = 2
    leaves = 2
    hosts_per_leaf = 4
    [network]
    ecn_threshold = "65pkts"
    [[traffic]]
    kind = "flows"
    pattern = { kind = "incast", receiver = 0, senders = 6 }
    arrivals = { kind = "batch", count = 2 }
    sizes = { min = "20KB", max = "200KB" }
    stop = "1ms"
    [[traffic]]
    kind = "flows"
    pattern = "all_to_all"
    arrivals = { kind = "poisson", load = 0.2 }
    stop = "2ms"
    transport = "mptcp"
    [run]
    duration = "500ms"
    stop_when = "flows_finished"
    """
    sim = parse_scenario(text).build()
    assert sim.run("500ms", stop_when_flows_finish=True)
    flows = sim.flows()
    assert np.all(flows["bytes_delivered"] == flows["size_bytes"])
    assert np.sum(flows["dst"] == 0) >= 12
    with pytest.raises(ScenarioError, match=r"traffic\[0\]: receiver 9 does not exist"):
        parse_scenario(text.replace("receiver = 0", "receiver = 9")).build()
    with pytest.raises(ScenarioError, match=r"traffic\.0\.sizes: max \(2KB\) must not"):
        parse_scenario(text.replace('max = "200KB"', 'max = "2KB"'))
    with pytest.raises(ScenarioError, match=r"senders must be between 1 and 7"):
        parse_scenario(text.replace("senders = 6", "senders = 8")).build()


def test_dcqcn_flows_from_a_scenario_block():
    text = """
    name = "flows-test"
    [topology]
    kind = "leaf_spine"
    spines = 1
    leaves = 2
    hosts_per_leaf = 4
    host_link = { rate = "40Gbps", delay = "1us" }
    fabric_link = { rate = "40Gbps", delay = "1us" }
    [network]
    switch_queue = "2MB"
    aqm = { kind = "ramp", kmin = "5KB", kmax = "200KB", pmax = 0.01 }
    pfc = { xoff = "40KB", xon = "20KB", lossless = [0] }
    [[traffic]]
    kind = "flows"
    pattern = { kind = "incast", receiver = 7, senders = 4 }
    arrivals = { kind = "batch", count = 3 }
    sizes = { min = "10KB", max = "1MB" }
    stop = "1us"
    transport = "dcqcn"
    [run]
    duration = "100ms"
    """
    sim = parse_scenario(text).build()
    assert sim.run("100ms", stop_when_flows_finish=True)
    assert sim.ports()["drop_packets"].sum() == 0
    assert len(sim.flows()["src"]) == 12


def test_a_pattern_name_that_needs_fields_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"Stride\(stride=4\)"):
        generate_flows(TOPO, pattern="stride", arrivals=Batch(), stop="1ms")


INCAST = """
name = "incast-rounds"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 24
[network]
switch_queue = "{queue}"
ecn_threshold = "20pkts"
[tcp]
initial_cwnd = 2
[[traffic]]
kind = "incast"
receiver = 0
senders = {senders}
size = "32KB"
rounds = 10
gap = "50us"
transport = "{transport}"
[run]
duration = "2s"
"""


def _incast_round_ms(transport: str, senders: int = 40, queue: str = "100pkts") -> np.ndarray:
    text = INCAST.format(transport=transport, senders=senders, queue=queue)
    sim = parse_scenario(text).build()
    assert sim.run("2s", stop_when_flows_finish=True)
    rounds = sim.incast_rounds()
    flows = sim.flows()
    assert len(rounds["round"]) == 10 and np.all(rounds["finish_ps"] > 0)
    # Synchronized: every response of a round starts at the round's start, and a round
    # starts 50 us after the previous one's last byte.
    starts = flows["start_ps"].reshape(10, senders)
    assert np.all(starts == rounds["start_ps"][:, None])
    assert np.all(rounds["start_ps"][1:] == rounds["finish_ps"][:-1] + 50_000_000)
    assert len(np.unique(flows["src"])) == senders and 0 not in flows["src"]
    return (rounds["finish_ps"] - rounds["start_ps"]) / 1e9


def test_incast_rounds_are_synchronized_and_tcp_collapses_where_dctcp_does_not():
    # 40 × 32 KB into 100 packets of buffer, initial windows of 2 segments (the setting
    # of the incast studies): TCP's synchronized windows overflow the buffer and a
    # response times out (min RTO 5 ms); DCTCP's marks at 20 packets keep it short.
    ideal_ms = 40 * 32_000 / 1460 * 1500 * 8 / 10e9 * 1e3
    tcp = _incast_round_ms("tcp")
    dctcp = _incast_round_ms("dctcp")
    assert np.all(dctcp >= ideal_ms) and np.all(tcp >= ideal_ms)
    assert np.median(dctcp) < 2 * ideal_ms, dctcp
    assert np.median(tcp) > 5.0, tcp


def test_timed_bulk_sources_send_until_their_deadline_in_whole_writes():
    text = """
    name = "iperf"
    [topology]
    kind = "leaf_spine"
    spines = 2
    leaves = 2
    hosts_per_leaf = 2
    [network]
    ecn_threshold = "65pkts"
    [[traffic]]
    kind = "flows"
    pattern = "permutation"
    arrivals = { kind = "batch", count = 1 }
    duration = "5ms"
    start = "1ms"
    stop = "2ms"
    [run]
    duration = "1s"
    """
    sim = parse_scenario(text).build()
    assert sim.run("1s", stop_when_flows_finish=True)
    flows = sim.flows()
    assert np.all(flows["size_bytes"] % (128 * 1024) == 0)
    assert np.all(flows["bytes_delivered"] == flows["size_bytes"])
    life_ms = (flows["finish_ps"] - flows["start_ps"]) / 1e9
    # DCTCP keeps the queues short, so what is in flight at the deadline drains fast.
    assert np.all((life_ms > 5.0) & (life_ms < 5.5)), life_ms
    # A permutation on a full-bisection fabric: each source near its 10 Gb/s access rate
    # unless ECMP collides two on one spine link.
    gbps = flows["size_bytes"] * 8 / (life_ms / 1e3) / 1e9
    assert np.all(gbps < 10) and np.median(gbps) > 4, gbps
    bad = text.replace('duration = "5ms"', 'duration = "5ms"\n    sizes = "websearch"')
    with pytest.raises(ScenarioError, match="sizes or duration"):
        parse_scenario(bad)
    bad = text.replace('{ kind = "batch", count = 1 }', '{ kind = "poisson", load = 0.5 }')
    with pytest.raises(ScenarioError, match="timed sources"):
        parse_scenario(bad)
