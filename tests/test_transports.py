"""Datacenter transports from Python: DCQCN with its marking profiles."""

import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import Controller, ControlPlane
from isthmus.transport import dcqcn_marker


def test_dcqcn_marker_profiles_scale_with_link_rate():
    paper = dcqcn_marker("paper", "40Gbps")
    assert (paper.kmin, paper.kmax, paper.pmax) == ("5KB", "200KB", 0.01)
    prod = dcqcn_marker("production", "100Gbps")
    assert (prod.kmin, prod.kmax, prod.pmax) == ("400000B", "1600000B", 0.2)
    with pytest.raises(ValueError, match="profile must be one of"):
        dcqcn_marker("fast", "40Gbps")


def test_a_lossless_dcqcn_incast_finishes_near_line_rate():
    topo = Topology.leaf_spine(1, 2, 4, Link("40Gbps", "1us"), Link("40Gbps", "1us"))
    sim = Simulation(
        topo,
        aqm=dcqcn_marker("production", "40Gbps"),
        switch_queue="2MB",
        pfc=("40KB", "20KB", [0]),
    )
    for host in range(4):
        sim.add_dcqcn_flow(host, 4, "5MB")
    assert sim.run("1s", stop_when_flows_finish=True)
    ports = sim.ports()
    assert ports["drop_packets"].sum() == 0
    assert ports["pfc_pauses"].sum() > 0
    # 20 MB through one 40 Gb/s port: 4 ms at line rate (1000 B payload per 1040 B).
    last_ms = sim.flows()["finish_ps"].max() / 1e9
    assert 4.0 < last_ms < 4.0 * 1.15, last_ms
    assert np.all(sim.flows()["bytes_delivered"] == 5_000_000)


@pytest.mark.parametrize("rate", ["100Mbps", "1Gbps", "10Gbps", "100Gbps"])
def test_a_lone_dcqcn_flow_never_times_out_whatever_its_path_s_rate(rate):
    # Its receiver ACKs every 16th packet; a fixed 1 ms timer from the first unacked
    # packet fired before each ACK below 133 Mb/s (10,000 timeouts at 100 Mb/s, never
    # finishing). The timer runs from each ACK request and scales with the path.
    topo = Topology.leaf_spine(1, 2, 1, Link(rate, "1us"), Link(rate, "1us"))
    sim = Simulation(topo)
    sim.add_dcqcn_flow(0, 1, "1MB")
    assert sim.run("10s", stop_when_flows_finish=True)
    flows = sim.flows()
    assert flows["timeouts"][0] == flows["retransmissions"][0] == 0
    assert flows["bytes_sent"][0] == 1_000_000
    # 1000 B of payload per 1040 B packet at line rate, and three hops of latency.
    ideal_ps = 1_000_000 * 1.04 * 8 / Link(rate).as_core()[0] * 1e12
    assert flows["finish_ps"][0] < 1.1 * ideal_ps


def star_incast(senders: int, **network) -> Simulation:
    hosts = [f"h{i}" for i in range(senders)] + ["rx"]
    links = [(f"h{i}", "s", Link("10Gbps", "1us")) for i in range(senders)]
    topo = Topology.custom(hosts, ["s"], [*links, ("s", "rx", Link("10Gbps", "1us"))])
    sim = Simulation(topo, host_queue="64MB", **network)
    for i in range(senders):
        sim.add_dcqcn_flow(i, senders, "100KB")
    assert sim.run("1s", stop_when_flows_finish=True)
    return sim


@pytest.mark.parametrize(
    "network",
    [
        # Deep egress limits under a 12 MB shared buffer: the switch holds the whole
        # incast (12 MB: 9.6 ms at 10 Gb/s).
        dict(switch_queue="12MB", shared_buffer="12MB", pfc=("100KB", "80KB", [0], 0.125)),
        # The default 250-packet limit, which the lossless class passes: the shared
        # buffer bounds its queue, not the limit.
        dict(shared_buffer="12MB", pfc=("100KB", "80KB", [0], 0.125)),
        # No shared buffer: what every ingress may send before its pause bounds it.
        dict(pfc=("100KB", "80KB", [0])),
    ],
    ids=["deep-limits", "default-limits", "no-shared-buffer"],
)
def test_a_lossless_120_to_1_dcqcn_incast_never_times_out(network):
    # A request can wait longer than 1 ms without being lost: InfiniBand's timeout,
    # twice the path's packet lifetime, waits for it. A 1 ms timer from the first
    # unacknowledged packet timed out 838 times in the first network, resent 4.8x the
    # data and ended 14 % later, 0 dropped; a lifetime sized by the 250-packet limit
    # timed out 604 times in the second.
    sim = star_incast(120, **network)
    flows, ports = sim.flows(), sim.ports()
    assert ports["drop_packets"].sum() == 0 and ports["pfc_pauses"].sum() > 0
    assert flows["timeouts"].sum() == flows["retransmissions"].sum() == 0
    assert np.all(flows["bytes_sent"] == 100_000)
    ideal_ps = 120 * 100_000 * 1.04 * 8 / 10e9 * 1e12
    assert flows["finish_ps"].max() < 1.02 * ideal_ps


def test_dcqcn_recovers_every_real_loss():
    # No PFC and 100 KB of switch buffer: the incast's first bursts overflow it, and
    # resent packets are lost again (a gap is NAKed once: the timer finds the rest).
    sim = star_incast(32, switch_queue="100KB")
    flows, ports = sim.flows(), sim.ports()
    assert ports["drop_packets"].sum() > 0
    assert np.all(flows["bytes_delivered"] == 100_000)
    assert flows["retransmissions"].sum() > 0


class PredictsCongestion(Controller):
    """Tells the bottleneck's BCN point the queue will be 60 packets (the IBCN hook)."""

    def on_start(self):
        self.set_bcn_queue("s", 2, 60.0)


def test_bcn_sources_back_off_on_a_supplied_queue_value():
    hosts = ["a", "b", "rx"]
    links = [(h, "s", Link("1Gbps", "1us")) for h in hosts]
    delivered = {}
    for predicted in (False, True):
        sim = Simulation(Topology.custom(hosts, ["s"], links), switch_queue="1000pkts", bcn={})
        for host in range(2):
            sim.add_bcn_flow(
                host, 2, fair_share="500Mbps", stop="50ms", max_pause="1ms", min_pause="0s"
            )
        plane = ControlPlane(sim)
        if predicted:
            plane.add(PredictsCongestion())
        plane.run("50ms")
        delivered[predicted] = sim.flows()["bytes_delivered"].sum()
        feedback = sim.bcn()
        if predicted:
            # Every feedback frame carries e = -(60 - 20 + w * 0) or so: NORMAL, never STOP.
            assert feedback["normal"].sum() > 0 and feedback["stop"].sum() == 0
    assert delivered[True] < 0.5 * delivered[False], delivered
    with pytest.raises(ValueError, match="unknown BCN field"):
        Simulation(Topology.custom(hosts, ["s"], links), bcn={"qeq": 10})


def _star(**bcn) -> Simulation:
    hosts = ["a", "b", "rx"]
    links = [(h, "s", Link("1Gbps", "1us")) for h in hosts]
    return Simulation(Topology.custom(hosts, ["s"], links), switch_queue="1000pkts", bcn=bcn)


def test_a_bcn_source_sends_its_packet_size_at_its_offered_load():
    sim = _star()
    flow = sim.add_bcn_flow(
        0, 2, fair_share="1Gbps", stop="20ms", packet_size="64B", offered_load="100Mbps"
    )
    sim.run("21ms")
    flows = sim.flows()
    # 100 Mb/s of 64 B datagrams for 20 ms: 3906 of them, 36 B of payload each.
    assert abs(int(flows["packets_sent"][flow]) - 3906) <= 1
    assert int(flows["bytes_sent"][flow]) == 36 * int(flows["packets_sent"][flow])
    with pytest.raises(ValueError, match="exceeds the source's line rate"):
        sim.add_bcn_flow(1, 2, fair_share="1Gbps", stop="30ms", offered_load="2Gbps")


class Predicts(Controller):
    """Gives the bottleneck's congestion point fixed predictions (k = 3)."""

    def __init__(self, values):
        self.values = values

    def on_start(self):
        self.set_bcn_predictions({("s", 2): self.values})


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([5.0, 10.0, 95.0], None),  # most below Qeq: nothing for an unregulated source
        ([30.0, 40.0, 95.0], "normal"),
        ([95.0, 100.0, 10.0], "stop"),
        ([95.0, 30.0], "stop"),  # a tie goes to the more congested class
    ],
)
def test_the_majority_of_the_predictions_decides_the_feedback(values, kind):
    sim = _star(pm=1.0)
    sim.add_bcn_flow(0, 2, fair_share="500Mbps", stop="1ms", min_pause="0s", max_pause="0s")
    plane = ControlPlane(sim)
    plane.add(Predicts(values))
    plane.run("1ms")
    feedback = sim.bcn()
    sent = {k: int(feedback[k].sum()) for k in ("positive", "normal", "stop")}
    if kind is None:
        assert sum(sent.values()) == 0, sent
    else:
        assert sent[kind] > 0 and sum(sent.values()) == sent[kind], sent


def test_a_stopped_source_pauses_for_the_configured_time():
    # Every arrival is sampled and predicted at Qsc: each burst the source sends is
    # STOPped, then it waits 20 ms. In 50 ms it sends two bursts of a few packets (those
    # out before the STOP frame returns) instead of 4000 packets.
    sim = _star(pm=1.0)
    sim.add_bcn_flow(0, 2, fair_share="1Gbps", stop="50ms", min_pause="20ms", max_pause="20ms")
    plane = ControlPlane(sim)
    plane.add(Predicts([100.0]))
    plane.run("50ms")
    flows = sim.flows()
    assert int(sim.bcn()["stop"].sum()) >= 3
    assert int(flows["packets_sent"][0]) < 20
    assert 40e9 <= int(flows["last_delivery_ps"][0]) < 41e9


def test_bcn_predictions_are_checked():
    sim = _star()
    plane = ControlPlane(sim)
    controller = plane.add(Controller())
    with pytest.raises(ValueError, match="at least one value"):
        controller.set_bcn_predictions({("s", 2): []})
    with pytest.raises(ValueError, match="finite, non-negative"):
        controller.set_bcn_predictions({("s", 2): [float("nan")]})
    # By node number too, the form a program predicting every port sends in bulk.
    s = sim.node_index("s")
    for bad in ([float("nan")], [float("inf")], [-1.0], [1.0, -0.5]):
        with pytest.raises(ValueError, match=rf"predictions\[\({s}, 2\)\]\[\d\]: .*finite"):
            controller.set_bcn_predictions({(s, 2): bad})
    with pytest.raises(ValueError, match="at least one value"):
        controller.set_bcn_predictions({(s, 2): []})
    with pytest.raises(ValueError, match="predictions' port"):
        controller.set_bcn_predictions({(s, 99): [1.0]})
    with pytest.raises(ValueError, match="predictions' switch must be a node name or number"):
        controller.set_bcn_predictions({(True, 2): [1.0]})
    # NumPy numbers are numbers (taken through the full check).
    controller.set_bcn_predictions({(np.int64(s), 2): [np.float64(3.0), 4]})
    plain = ControlPlane(
        Simulation(Topology.custom(["a", "b"], ["s"], [("a", "s", Link()), ("s", "b", Link())]))
    )
    with pytest.raises(ValueError, match="no BCN congestion points"):
        plain.add(Controller()).set_bcn_predictions({("s", 1): [3.0]})


def _spread_transfer_ms(transport: str) -> float:
    """Four hosts on one leaf each send 10 MB to a host on the other leaf over four
    10 Gb/s spines; returns when the last byte arrives."""
    topo = Topology.leaf_spine(4, 2, 4, Link("40Gbps", "1us"), Link("10Gbps", "1us"))
    sim = Simulation(topo, switch_queue="100pkts", seed=2, tcp={"mptcp_subflows": 8})
    for host in range(4):
        sim.add_tcp_flow(host, host + 4, "10MB", transport=transport)
    assert sim.run("1s", stop_when_flows_finish=True)
    flows = sim.flows()
    assert np.all(flows["bytes_delivered"] == 10_000_000)
    return flows["finish_ps"].max() / 1e9


def test_mptcp_spreads_over_spines_that_single_path_flows_collide_on():
    # 40 MB over 40 Gb/s of spine: at best 8.2 ms of frames. With one path per flow,
    # ECMP collisions leave some spines idle; MPTCP's subflows use them all.
    tcp_ms = _spread_transfer_ms("tcp")
    mptcp_ms = _spread_transfer_ms("mptcp")
    best_ms = 40e6 * 8 / 40e9 * 1e3 * 1500 / 1460
    assert best_ms < mptcp_ms < 1.15 * best_ms, (mptcp_ms, best_ms)
    assert mptcp_ms < tcp_ms, (mptcp_ms, tcp_ms)


def test_mptcp_subflow_count_is_validated():
    topo = Topology.leaf_spine(1, 1, 2)
    with pytest.raises(ValueError, match="mptcp_subflows"):
        Simulation(topo, tcp={"mptcp_subflows": 17})
    with pytest.raises(ValueError, match="transport must be one of tcp, dctcp, cubic, mptcp"):
        Simulation(topo).add_tcp_flow(0, 1, "1MB", transport="quic")


def test_a_pause_threshold_that_follows_the_free_buffer_is_set_from_a_scenario():
    """`[network.pfc] free_fraction`: the ingress pause threshold shrinks as the shared
    buffer fills (the Rust test checks the physics); here, that the setting arrives and
    that bad values are refused by name."""
    from isthmus import ScenarioError, parse_scenario

    text = """
name = "pfc-dynamic"
topology = { kind = "ring", switches = 3, hosts_per_switch = 3 }
[network]
shared_buffer = "200KB"
buffer_alpha = 8.0
pfc = { xoff = "30KB", xon = "15KB", lossless = [0], free_fraction = 0.125 }
[[traffic]]
kind = "incast"
receiver = 0
senders = 7
size = "200KB"
rounds = 1
transport = "dctcp"
[run]
duration = "50ms"
"""
    scenario = parse_scenario(text)
    assert scenario.network.pfc.free_fraction == 0.125
    sim = scenario.build()
    sim.run("50ms")
    assert sim.ports()["pfc_pauses"].sum() > 0
    with pytest.raises(ScenarioError, match="free_fraction"):
        parse_scenario(text.replace("free_fraction = 0.125", "free_fraction = 2"))
    with pytest.raises(ValueError, match="give the switches a shared_buffer"):
        Simulation(Topology.ring(3, 1), pfc=("30KB", "15KB", [0], 0.125))


def test_an_rdma_nic_lets_a_small_message_past_big_ones_whatever_its_queue_discipline():
    """Two 10 MB DCQCN flows from one host, each at line rate, and a 10 KB message
    behind them. An RDMA NIC builds a queue pair's next packet only when its last has
    left, so its queue holds one packet per queue pair, and the message waits for its
    share, not for a backlog, in a FIFO NIC as in a round-robin one (`host_scheduler`).
    (When the senders filled a FIFO NIC with their backlog, the message took 114 us
    there and 13.7 us round robin.)"""
    from isthmus.queues import Fq

    def small_message_us(host_scheduler) -> tuple[float, int]:
        link, fabric = Link("25Gbps", "1us"), Link("100Gbps", "1us")
        sim = Simulation(
            Topology.leaf_spine(1, 2, 2, link, fabric),
            host_queue="100000pkts",
            host_scheduler=host_scheduler,
        )
        sim.add_dcqcn_flow(0, 2, "10MB")
        sim.add_dcqcn_flow(0, 3, "10MB")
        small = sim.add_dcqcn_flow(0, 2, "10KB", start="100us")
        sim.run("20ms")
        flows, ports = sim.flows(), sim.ports()
        assert sim.unfinished_flows == 0
        nic = ports["node"] == sim.topology.nodes()["host_node"][0]
        waited = (flows["finish_ps"][small] - flows["start_ps"][small]) / 1e6
        return waited, int(ports["max_queue_packets"][nic][0])

    for host_scheduler in (None, Fq(kind="fq")):
        waited_us, most_queued = small_message_us(host_scheduler)
        # Three flows share 25 Gb/s: 10 KB takes about 3 x 3.3 us, plus the path.
        assert waited_us < 20, (host_scheduler, waited_us)
        assert most_queued <= 3, (host_scheduler, most_queued)


def test_a_message_flow_writes_each_message_after_the_last_completes_and_its_think_time():
    hosts = ["a", "b"]
    sim = Simulation(Topology.custom(hosts, ["s"], [("a", "s", Link()), ("s", "b", Link())]))
    thinks = np.array([2, 3, 4]) * 1_000_000_000  # 2, 3, 4 ms
    flow = sim.add_message_flow(0, 1, [30_000, 1_000, 500_000], thinks, stop="1s")
    sim.run("100ms")
    m = sim.messages()
    assert m["index"].tolist() == [0, 1, 2] and set(m["flow"].tolist()) == {flow}
    assert m["size"].tolist() == [30_000, 1_000, 500_000]
    assert (m["finish_ps"] > m["start_ps"]).all()
    assert (m["start_ps"][1:] == m["finish_ps"][:-1] + thinks[:-1]).all()
    row = {k: v[flow] for k, v in sim.flows().items()}
    assert row["size_bytes"] == 531_000 and row["bytes_delivered"] == 531_000
    assert row["finish_ps"] >= m["finish_ps"][-1], "closed after the last message"
    assert row["timeouts"] == 0


def test_message_flows_and_bcn_regulation_refuse_what_they_cannot_do():
    sim = _star()
    with pytest.raises(ValueError, match="one entry per message: 2 sizes, 1 think"):
        sim.add_message_flow(0, 2, [1, 2], [1])
    with pytest.raises(ValueError, match="message 1 has size 0"):
        sim.add_message_flow(0, 2, [1, 0], [1, 1])
    with pytest.raises(ValueError, match="transport must be tcp, dctcp or cubic"):
        sim.add_message_flow(0, 2, [1], [1], transport="mptcp")
    udp = sim.add_udp_flow(0, 2, "1Gbps", stop="1ms")
    with pytest.raises(ValueError, match="not a TCP connection"):
        sim.regulate_with_bcn(udp, fair_share="1Gbps")
    with pytest.raises(ValueError, match="flow 9 does not exist"):
        sim.regulate_with_bcn(9, fair_share="1Gbps")
    hosts = ["a", "b"]
    plain = Simulation(Topology.custom(hosts, ["s"], [("a", "s", Link()), ("s", "b", Link())]))
    tcp = plain.add_tcp_flow(0, 1, "10KB", transport="tcp")
    with pytest.raises(ValueError, match="BCN congestion points are off"):
        plain.regulate_with_bcn(tcp, fair_share="1Gbps")


def test_bcn_regulated_tcp_senders_keep_the_queue_off_the_buffer_limit():
    """Eight long-running TCP senders into one 1 Gb/s port with a 1000-packet buffer:
    alone they fill it and lose packets; behind BCN regulators (restarting at 100 Mb/s
    after a STOP, below the 125 Mb/s fair share so a STOP frees capacity) the queue
    stays far below the limit with nothing lost and the port still busy."""
    senders = [f"h{i}" for i in range(8)]
    topology = Topology.custom(
        [*senders, "rx"], ["s"], [(h, "s", Link("1Gbps", "1us")) for h in [*senders, "rx"]]
    )

    def run(regulated: bool) -> dict:
        sim = Simulation(topology, switch_queue="1000pkts", bcn={}, sample_interval="1ms")
        for src in range(len(senders)):
            flow = sim.add_bulk_flow(src, len(senders), "40ms", transport="tcp")
            if regulated:
                sim.regulate_with_bcn(
                    flow, fair_share="100Mbps", min_pause="100us", max_pause="200us"
                )
        sim.run("40ms")
        ports = sim.ports()
        rx, switch = sim.node_index("rx"), sim.node_index("s")
        port = int(np.flatnonzero((ports["node"] == switch) & (ports["peer_node"] == rx))[0])
        return {
            "peak": int(ports["max_queue_packets"][port]),
            "drops": int(ports["drop_packets"].sum()),
            "gbps": sim.flows()["bytes_delivered"].sum() * 8 / 0.04 / 1e9,
            "feedback": {k: int(v.sum()) for k, v in sim.bcn().items() if k != "port_index"},
        }

    free, regulated = run(False), run(True)
    assert free["peak"] == 1000 and free["drops"] > 0, free
    assert regulated["drops"] == 0 and regulated["peak"] < 400, regulated
    assert regulated["gbps"] > 0.9, regulated
    assert regulated["feedback"]["normal"] > 0 and regulated["feedback"]["stop"] > 0
