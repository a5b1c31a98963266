"""The programmable data plane end to end: schedulers and AQMs under real traffic."""

import numpy as np
import pytest

from isthmus import Link, ScenarioError, Simulation, Topology, parse_scenario, units
from isthmus.bench import scenario_path
from isthmus.metrics import flow_times, slowdown_summary
from isthmus.queues import CoDel, Drr, Fq, Pifo, StrictPriority, Wfq
from isthmus.scenario import load_scenario


def star(senders: int, bottleneck: str = "1Gbps") -> Topology:
    """`senders` hosts at 10 Gb/s into a switch whose port to `rx` is the bottleneck."""
    hosts = [f"h{i}" for i in range(senders)] + ["rx"]
    links = [(f"h{i}", "s", Link("10Gbps", "1us")) for i in range(senders)]
    return Topology.custom(hosts, ["s"], [*links, ("s", "rx", Link(bottleneck, "1us"))])


def bottleneck_row(sim: Simulation, queues: dict) -> np.ndarray:
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    port = next(
        i
        for i, (n, p) in enumerate(zip(ports["node"], ports["peer_node"], strict=True))
        if names[n] == "s" and names[p] == "rx"
    )
    return np.flatnonzero(queues["port_index"] == port)


def test_codel_holds_a_saturating_flows_standing_sojourn_near_its_target():
    results = {}
    for name, aqm in (
        ("drop_tail", None),
        ("codel", CoDel(kind="codel", target="500us", interval="5ms")),
    ):
        sim = Simulation(star(1), switch_queue="3000pkts", host_queue="3000pkts", aqm=aqm)
        sim.add_tcp_flow(0, 1, "200MB", transport="tcp")
        sim.run("300ms")
        before = sim.queues()
        sim.run("800ms")
        after = sim.queues()
        row = bottleneck_row(sim, after)
        sojourn = (after["sojourn_ps"][row] - before["sojourn_ps"][row]) / (
            after["dequeued"][row] - before["dequeued"][row]
        )
        goodput = sim.flows()["bytes_delivered"][0] * 8 / 0.8 / 1e9
        results[name] = (float(sojourn[0]) / 1e6, goodput, int(after["aqm_drops"][row][0]))
    codel_us, codel_goodput, codel_drops = results["codel"]
    assert 250 < codel_us < 1000, f"CoDel sojourn {codel_us:.0f} us, target 500 us"
    assert codel_drops > 0
    assert results["drop_tail"][0] > 10 * codel_us, "without CoDel the queue must stand far higher"
    assert codel_goodput > 0.95 * 1e9 * 1460 / 1500 / 1e9, "CoDel must keep the link busy"


def test_fq_gives_backlogged_flows_equal_shares():
    sim = Simulation(star(4, "2Gbps"), switch_queue="1000pkts", scheduler=Fq(kind="fq"))
    for i, rate in enumerate(["1Gbps", "2Gbps", "3Gbps", "4Gbps"]):
        sim.add_udp_flow(i, 4, rate, stop="20ms", arrivals="constant")
    sim.run("5ms")
    before = sim.flows()["bytes_delivered"].copy()
    sim.run("15ms")
    gbps = (sim.flows()["bytes_delivered"] - before) * 8 / 0.01 / 1e9
    fair = 2 * 1472 / 1500 / 4
    assert np.all(np.abs(gbps / fair - 1) < 0.02), gbps


def test_strict_priority_starves_nothing_it_should_not():
    sim = Simulation(
        star(2), switch_queue="500pkts", scheduler=StrictPriority(kind="strict_priority", classes=2)
    )
    high = sim.add_udp_flow(0, 2, "800Mbps", stop="20ms", arrivals="constant")
    low = sim.add_udp_flow(1, 2, "800Mbps", stop="20ms", arrivals="constant")
    sim.set_priority(high, 0)
    sim.set_priority(low, 1)
    sim.run("20ms")
    flows = sim.flows()
    # The high class is served whenever it waits: it loses nothing; the low class gets the rest.
    assert flows["packets_dropped"][high] == 0
    assert flows["bytes_delivered"][high] / flows["bytes_sent"][high] > 0.99
    rest = (1e9 - 0.8e9) * 0.02 / 8
    assert abs(flows["bytes_delivered"][low] - rest * 1472 / 1500) / rest < 0.1
    q = sim.queues()
    rows = bottleneck_row(sim, q)
    assert list(q["class"][rows]) == [0, 1]
    assert q["buffer_drops"][rows][0] == 0 and q["buffer_drops"][rows][1] > 0


@pytest.mark.parametrize(
    "scheduler",
    [Wfq(kind="wfq", weights=[1, 3]), Drr(kind="drr", quanta=["1500B", "4500B"])],
)
def test_wfq_and_drr_split_a_bottleneck_by_weight(scheduler):
    sim = Simulation(star(2), switch_queue="500pkts", scheduler=scheduler)
    for host in range(2):
        flow = sim.add_udp_flow(host, 2, "2Gbps", stop="30ms", arrivals="poisson")
        sim.set_priority(flow, host)
    sim.run("10ms")
    before = sim.flows()["bytes_delivered"].copy()
    sim.run("30ms")
    got = sim.flows()["bytes_delivered"] - before
    assert abs(got[1] / got[0] - 3) < 0.1, got


@pytest.mark.parametrize("budgets", [["10ms", "0s"], ["0s", "10ms"]])
def test_a_deadline_pifo_serves_the_class_with_the_smaller_budget_first(budgets):
    # Two UDP flows, one per class, overload a 1 Gb/s bottleneck (2 x 0.9 Gb/s). The
    # budgets differ by more than the 200-packet queue's 2.4 ms: every deadline of the
    # urgent class comes before every waiting one of the other, which takes what is left
    # of the link and overflows (a PIFO pushes out its worst deadline).
    pifo = Pifo(kind="pifo", rank="deadline", budgets=budgets)
    sim = Simulation(star(2), switch_queue="200pkts", scheduler=pifo)
    for host in range(2):
        flow = sim.add_udp_flow(host, 2, "900Mbps", stop="20ms", arrivals="poisson")
        sim.set_priority(flow, host)
    sim.run("30ms")
    flows = sim.flows()
    delay = flows["delay_sum_ps"] / flows["delay_packets"]
    lost = 1 - flows["bytes_delivered"] / flows["bytes_sent"]
    urgent = budgets.index("0s")
    late = 1 - urgent
    assert delay[urgent] < 0.2 * delay[late], delay
    assert lost[urgent] < 0.01 and lost[late] > 0.05, lost
    queues = sim.queues()
    rows = bottleneck_row(sim, queues)
    assert list(queues["class"][rows]) == [0, 1]
    assert queues["buffer_drops"][rows][urgent] == 0 < queues["buffer_drops"][rows][late]


def test_pifo_srpt_lowers_small_flow_fct_on_the_web_search_workload():
    means = {}
    for name, scheduler in (("fifo", None), ("srpt", Pifo(kind="pifo", rank="remaining_size"))):
        scenario = load_scenario(scenario_path("small"))
        network = scenario.network.model_copy(update={"scheduler": scheduler})
        sim = scenario.model_copy(update={"network": network}).build(
            base=scenario_path("small").parent
        )
        assert sim.run("1s", stop_when_flows_finish=True)
        summary = slowdown_summary(sim.flows()["size_bytes"], flow_times(sim)["slowdown"])
        means[name] = summary["lt100KB"]["mean"]
    assert means["srpt"] < 0.8 * means["fifo"], means


def test_queueing_changes_at_runtime_and_keeps_waiting_packets():
    sim = Simulation(star(2), switch_queue="1000pkts")
    for i in range(2):
        sim.add_udp_flow(i, 2, "900Mbps", stop="10ms", arrivals="constant")
    sim.run("5ms")
    queued = sim.queues()
    row = bottleneck_row(sim, queued)
    waiting = int(queued["queue_packets"][row][0])
    assert waiting > 100
    sim.configure_queue("s", limit="1000pkts", scheduler=Fq(kind="fq"), port=2)
    after = sim.queues()
    assert int(after["queue_packets"][bottleneck_row(sim, after)][0]) == waiting
    assert sim.run("40ms", stop_when_flows_finish=True)
    assert sim.live_packets == 0
    with pytest.raises(ValueError, match="port 7 does not exist on switch 's'"):
        sim.configure_queue("s", limit="10pkts", port=7)


def test_scenario_queueing_is_validated_with_the_field_named():
    base = """
name = "q"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 1
[network]
{network}
[run]
duration = "1ms"
"""
    ok = parse_scenario(
        base.format(
            network='scheduler = { kind = "drr", quanta = ["1500B", "3000B"] }\naqm = { kind = "codel" }'
        )
    )
    sim = ok.build()
    # Switch ports take the scenario's scheduler and AQM; host NICs stay FIFO drop-tail.
    assert sim.port_queue_config("leaf0", 0)["scheduler"]["kind"] == "drr"
    assert sim.port_queue_config("leaf0", 0)["aqm"]["kind"] == "codel"
    assert sim.port_queue_config("h0", 0)["scheduler"]["kind"] == "fifo"
    assert sim.port_queue_config("h0", 0)["aqm"]["kind"] == "drop_tail"
    with pytest.raises(ScenarioError, match=r"network\.scheduler\.quanta\.0: .*has no unit"):
        parse_scenario(base.format(network='scheduler = { kind = "drr", quanta = [1500] }'))
    with pytest.raises(ScenarioError, match=r"network\.aqm: .*'wred'"):
        parse_scenario(base.format(network='aqm = { kind = "wred" }'))
    with pytest.raises(ScenarioError, match=r"network: .*ecn_threshold .* or aqm, not both"):
        parse_scenario(base.format(network='ecn_threshold = "65pkts"\naqm = { kind = "codel" }'))
    bad_red = 'aqm = { kind = "red", min = "50pkts", max = "20pkts" }'
    with pytest.raises(ScenarioError, match="RED needs min below max"):
        parse_scenario(base.format(network=bad_red)).build()


def test_a_trace_driven_link_delivers_exactly_its_opportunities(tmp_path):
    from isthmus.link_traces import load_trace

    topo = Topology.custom(
        ["a", "b"], ["s"], [("a", "s", Link("100Mbps", "1us")), ("s", "b", Link("100Mbps", "5ms"))]
    )
    (tmp_path / "constant.txt").write_text("1\n")
    for trace, base in (("constant.txt", tmp_path), ("Verizon-LTE-short.down", tmp_path)):
        sim = Simulation(topo, switch_queue="100000pkts")
        sim.set_link_trace("s", "b", trace, base=base)
        # 50 Mb/s keeps the queue from ever running dry after the first millisecond.
        sim.add_udp_flow(0, 1, "50Mbps", stop="3s", arrivals="constant")
        sim.run("2005ms")
        millis = load_trace(trace, base).astype(np.int64)
        period = int(millis[-1])
        # Opportunities in [1 ms, 2000 ms], the trace repeating with its last timestamp.
        times = np.concatenate([millis + k * period for k in range(2000 // period + 1)])
        expected = int(np.sum((times >= 1) & (times <= 2000)))
        assert sim.flows()["packets_delivered"][0] == expected, trace
    with pytest.raises(ValueError, match="no link trace 'nope'"):
        sim.set_link_trace("s", "b", "nope")
    with pytest.raises(ValueError, match="no link between 'a' and 'b'"):
        sim.set_link_trace("a", "b", trace)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_shared_buffer_queues_settle_at_the_dynamic_threshold(alpha):
    """N overloaded ports each hold alpha * (B - N q): q = alpha B / (1 + N alpha)."""
    buffer = 300_000
    hosts = ["in0", "in1", "out0", "out1"]
    links = [(h, "s", Link("10Gbps", "1us")) for h in hosts[:2]] + [
        ("s", h, Link("1Gbps", "1us")) for h in hosts[2:]
    ]
    for congested in (1, 2):
        sim = Simulation(
            Topology.custom(hosts, ["s"], links),
            switch_queue="100000pkts",
            shared_buffer=f"{buffer}B",
            buffer_alpha=alpha,
        )
        for i in range(congested):
            sim.add_udp_flow(i, 2 + i, "5Gbps", stop="20ms", arrivals="constant")
        sim.run("10ms")
        ports = sim.ports()
        names = sim.topology.nodes()["name"]
        held = [
            int(ports["queue_bytes"][i])
            for i in range(len(ports["node"]))
            if names[ports["node"][i]] == "s" and names[ports["peer_node"][i]].startswith("out")
        ]
        expected = alpha * buffer / (1 + congested * alpha)
        for q in held[:congested]:
            assert abs(q - expected) <= 1500, (alpha, congested, held, expected)


def test_pfc_makes_an_incast_lossless_from_python_and_scenarios():
    senders = 8
    topo = star(senders, "10Gbps")
    for pfc in (None, ("30KB", "15KB", [0])):
        sim = Simulation(topo, switch_queue="300pkts", host_queue="100000pkts", pfc=pfc)
        for i in range(senders):
            sim.add_udp_flow(i, senders, "5Gbps", stop="3ms")
        assert sim.run("1s", stop_when_flows_finish=True)
        ports = sim.ports()
        if pfc is None:
            assert ports["drop_packets"].sum() > 0
        else:
            assert ports["drop_packets"].sum() == 0
            assert ports["pfc_pauses"].sum() > 0
            assert ports["pfc_pauses"].sum() == ports["pfc_resumes"].sum()
    text = """
name = "p"
[topology]
kind = "ring"
switches = 3
[network]
pfc = { xoff = "10KB", xon = "20KB" }
[run]
duration = "1ms"
"""
    with pytest.raises(ScenarioError, match="PFC needs 0 < xon <= xoff"):
        parse_scenario(text).build()


def test_aqm_bcn_and_dcqcn_defaults_are_the_engines():
    from isthmus.queues import Pie, queue_config
    from isthmus.scenario import BcnModel, BcnTraffic

    codel = queue_config("100pkts", None, CoDel(kind="codel"))["aqm"]
    # RFC 8289's 5 ms and 100 ms; RFC 8033's 15 ms, 15 ms, 0.125, 1.25, 150 ms.
    assert (codel["target"], codel["interval"]) == (5_000_000_000, 100_000_000_000)
    pie = queue_config("100pkts", None, Pie(kind="pie"))["aqm"]
    assert pie == {
        "kind": "pie",
        "target": 15_000_000_000,
        "t_update": 15_000_000_000,
        "alpha": 0.125,
        "beta": 1.25,
        "max_burst": 150_000_000_000,
        "ecn": False,
    }
    point = BcnModel()
    assert (point.pm, point.q_eq, point.q_sc, point.w) == (0.01, 20.0, 90.0, 2.0)
    source = BcnTraffic(kind="bcn", pattern="permutation", fair_share="1Gbps", stop="1ms")
    assert units.rate_bps(source.ru) == 3_000_000 and (source.gi, source.gd) == (4.0, 0.02)


def test_a_device_queue_sits_below_the_discipline_and_refuses_pfc():
    def most_queued(device_queue: int) -> tuple[int, int]:
        sim = Simulation(
            Topology.leaf_spine(1, 2, 2, fabric_link=Link("10Gbps", "1us")),
            switch_queue="50pkts",
            device_queue=device_queue,
        )
        for src in (1, 2):
            sim.add_udp_flow(src, 0, "10Gbps", stop="2ms", arrivals="constant")
        sim.run("3ms")
        ports = sim.ports()
        return int(ports["max_queue_packets"].max()), int(ports["drop_packets"].sum())

    assert most_queued(0)[0] == 50 and most_queued(100)[0] == 150
    assert most_queued(100)[1] > 0
    assert sim_config_device_queue() == 100
    with pytest.raises(ValueError, match="device_queue and pfc do not combine"):
        Simulation(Topology.leaf_spine(1, 2, 2), device_queue=10, pfc=("30KB", "15KB", [0]))


def sim_config_device_queue() -> int:
    sim = Simulation(Topology.leaf_spine(1, 2, 2), device_queue=100)
    return sim.port_queue_config("leaf0", 0)["device_queue"]


def test_a_timed_flow_still_running_has_no_ideal_time_yet():
    sim = Simulation(Topology.ring(3, 1))
    sim.add_bulk_flow(0, 1, "1s", transport="tcp")
    sim.add_tcp_flow(0, 2, "10KB", transport="tcp")
    sim.run("10ms")
    times = flow_times(sim)
    assert times["ideal_ps"][0] == -1 and np.isnan(times["slowdown"][0])
    assert times["ideal_ps"][1] > 0 and times["slowdown"][1] >= 1


def test_parallel_links_between_two_switches_share_the_traffic():
    """ACC's testbed joins each leaf to a spine by several links: a custom topology may
    list a pair more than once, and ECMP spreads flows over every parallel link."""
    link = Link("10Gbps", "1us")
    hosts = ["a", "b", "c", "d"]
    links = [("a", "l0", link), ("b", "l0", link), ("c", "l1", link), ("d", "l1", link)]
    links += [("l0", "s", link)] * 4 + [("l1", "s", link)] * 4
    sim = Simulation(Topology.custom(hosts, ["l0", "l1", "s"], links), seed=2)
    for i in range(32):
        sim.add_udp_flow(i % 2, 2 + i % 2, "200Mbps", stop="1ms")
    sim.run("2ms")
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    uplinks = (ports["node"] == names.index("l0")) & (ports["peer_node"] == names.index("s"))
    carried = ports["tx_bytes"][uplinks]
    assert len(carried) == 4 and carried.sum() >= 32 * 200e6 / 8 * 1e-3 * 0.99
    # 32 flows hashed onto 4 links: each link carries some (8 on average).
    assert carried.min() > 0.2 * carried.mean(), carried
