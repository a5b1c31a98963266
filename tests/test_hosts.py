"""Host profiles: the datacenter default and Linux-like hosts (small-queue backpressure,
Linux's timers), selectable per scenario and overridable field by field."""

import numpy as np
import pytest

from isthmus import Link, Simulation, Topology, parse_scenario
from isthmus.transport import HOST_PROFILES, TcpParams
from isthmus.units import time_ps


def lone_flow(tcp: TcpParams, rate: str = "1Gbps") -> tuple[float, int, int]:
    """One TCP flow alone on an idle path for 50 ms: (fraction of line rate delivered,
    drops at its own NIC, drops anywhere)."""
    topo = Topology.leaf_spine(1, 2, 1, host_link=Link(rate, "1us"), fabric_link=Link(rate, "1us"))
    sim = Simulation(topo, tcp=tcp)
    sim.add_tcp_flow(0, 1, "1GB", transport="tcp")
    sim.run("50ms")
    line = Link(rate).as_core()[0]
    goodput = sim.flows()["bytes_delivered"][0] * 8 / 0.05 / line
    ports = sim.ports()
    nic = ports["node"] == sim.topology.nodes()["host_node"][0]
    return goodput, int(ports["drop_packets"][nic].sum()), int(ports["drop_packets"].sum())


@pytest.mark.parametrize("rate", ["1Gbps", "10Gbps"])
def test_small_queues_keep_a_lone_flow_from_dropping_at_its_own_nic(rate):
    goodput, nic_drops, drops = lone_flow(TcpParams.for_profile("linux"), rate)
    assert goodput >= 0.95 and nic_drops == 0 and drops == 0, (goodput, nic_drops)
    # The same hosts without backpressure overflow their own NIC in slow start.
    unbounded = TcpParams.for_profile("linux", small_queue_time=None)
    goodput_without, nic_drops_without, _ = lone_flow(unbounded, rate)
    assert nic_drops_without > 0 and goodput_without <= goodput


def two_way(rate: str, hosts_per_leaf: int = 1) -> tuple[list[float], int, int]:
    """Every host sends a long TCP flow to every host on the other leaf for 50 ms under
    the `linux` profile, over a fabric fast enough that the host links are the
    bottlenecks: (each host's outgoing payload as a fraction of line rate, drops at host
    NICs, drops anywhere)."""
    line = Link(rate).as_core()[0]
    fabric = Link(f"{line * hosts_per_leaf}bps", "1us")
    topo = Topology.leaf_spine(
        1, 2, hosts_per_leaf, host_link=Link(rate, "1us"), fabric_link=fabric
    )
    sim = Simulation(topo, tcp=TcpParams.for_profile("linux"))
    hosts = 2 * hosts_per_leaf
    for src in range(hosts):
        for dst in range(hosts):
            if (src < hosts_per_leaf) != (dst < hosts_per_leaf):
                sim.add_tcp_flow(src, dst, "1GB", transport="tcp")
    sim.run("50ms")
    flows, ports = sim.flows(), sim.ports()
    sent = [
        flows["bytes_delivered"][flows["src"] == h].sum() * 8 / 0.05 / line for h in range(hosts)
    ]
    nics = np.isin(ports["node"], sim.topology.nodes()["host_node"])
    return sent, int(ports["drop_packets"][nics].sum()), int(ports["drop_packets"].sum())


@pytest.mark.parametrize("rate", ["1Gbps", "10Gbps"])
def test_a_linux_host_sending_and_receiving_at_once_never_drops_at_its_own_nic(rate):
    # One flow each way on one path: each host's NIC carries its data and the ACKs of
    # the reverse flow. Counting those ACKs against the reverse sender's small queue
    # held each direction to 0.42 of the link, and the NICs dropped 444 packets each.
    # The ceiling is 2 x 1448 B of payload per 2 x 1500 B data + one 52 B ACK: 0.949.
    sent, nic_drops, drops = two_way(rate)
    assert nic_drops == 0 and drops == 0
    assert min(sent) >= 0.92, sent


@pytest.mark.parametrize("rate", ["1Gbps", "10Gbps"])
def test_a_full_linux_nic_holds_its_hosts_packets_instead_of_dropping_them(rate):
    # Four hosts a side, four flows out of and into each: four small queues fill the
    # 250-packet NIC, so its room, not each flow's limit, stops the senders.
    sent, nic_drops, drops = two_way(rate, hosts_per_leaf=4)
    assert nic_drops == 0, (sent, drops)
    # The receivers' links are bottlenecks too (four senders each): losses there, and
    # their recovery, cost a little.
    assert np.mean(sent) >= 0.85, (sent, drops)


def linux_flow(host_queue: str, size: str, until: str, trace: str | None = None):
    """One `linux`-profile TCP flow of `size` from h0, whose NIC queue holds
    `host_queue` (and whose uplink follows `trace`), run until it ends or `until`."""
    topo = Topology.leaf_spine(1, 2, 1, Link("10Gbps", "1us"), Link("10Gbps", "1us"))
    sim = Simulation(topo, host_queue=host_queue, tcp=TcpParams.for_profile("linux"))
    if trace is not None:
        sim.set_link_trace("h0", "leaf0", trace)
    sim.add_tcp_flow(0, 1, size)
    finished = sim.run(until, stop_when_flows_finish=True)
    return sim, finished


def test_a_held_packet_reaching_an_idle_nic_leaves_the_small_queue_count():
    # A one-packet NIC queue in front of a trace-driven link (which may serve a packet
    # in no time): packets the host held meet an idle transmitter. Counted as waiting
    # at the NIC for ever, they stopped the sender at 660,288 bytes.
    sim, finished = linux_flow("1pkts", "3MB", "20s", trace="Verizon-LTE-short.up")
    assert finished and sim.flows()["bytes_delivered"][0] == 3_000_000


def test_a_packet_no_empty_nic_queue_could_hold_is_dropped_not_held():
    # 1000 bytes of NIC queue take no 1500-byte packet: held, the first one waited for
    # ever and the packets behind it went around it; dropped, it is counted.
    sim, _ = linux_flow("1000B", "1MB", "50ms")
    ports = sim.ports()
    nic = ports["node"] == sim.topology.nodes()["host_node"][0]
    assert ports["drop_packets"][nic].sum() > 0


def message_times_ms(think: str, **overrides) -> list[float]:
    """Four 2 MB messages on one persistent CUBIC connection (10 Gb/s, 1 ms round trip:
    a 1.25 MB window fills the path), each written `think` after the last arrived:
    each message's completion time."""
    topo = Topology.leaf_spine(1, 2, 1, Link("10Gbps", "125us"), Link("10Gbps", "125us"))
    sim = Simulation(topo, tcp=TcpParams.for_profile("linux", **overrides))
    sim.add_message_flow(0, 1, [2_000_000] * 4, [time_ps(think)] * 4, transport="cubic")
    assert sim.run("10s", stop_when_flows_finish=True)
    messages = sim.messages()
    return list((messages["finish_ps"] - messages["start_ps"]) / 1e9)


def test_a_linux_connection_idle_longer_than_its_rto_slow_starts_again():
    # The first message slow-starts (after the handshake) in about 12 ms. Idle for 1 s
    # (its RTO is the 200 ms floor), the window restarts from 10 segments, so every later
    # message slow-starts too; without the restart it keeps the window and takes ~2 ms.
    first, *later = message_times_ms("1s")
    assert all(0.7 * first < t < first for t in later), (first, later)
    first, *later = message_times_ms("1s", slow_start_after_idle=False)
    assert all(t < 0.25 * first for t in later), (first, later)
    # Idle for less than the RTO: the window stays.
    first, *later = message_times_ms("100ms")
    assert all(t < 0.25 * first for t in later), (first, later)
    assert not TcpParams().slow_start_after_idle


def test_profiles_hold_their_documented_values_and_take_overrides():
    linux = TcpParams.for_profile("linux")
    assert (linux.min_rto, linux.initial_rto, linux.ack_every) == ("200ms", "1s", 2)
    assert (linux.delayed_ack_timeout, linux.small_queue_time) == ("40ms", "1ms")
    assert TcpParams.for_profile("datacenter") == TcpParams()
    assert TcpParams.for_profile("linux", ack_every=1).ack_every == 1
    assert set(HOST_PROFILES) == {"datacenter", "linux"}
    with pytest.raises(ValueError, match="unknown host profile 'bsd'"):
        TcpParams.for_profile("bsd")


SCENARIO = """
name = "hosts"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 1
{extra}
[run]
duration = "1ms"
"""


def test_scenarios_choose_a_profile_and_override_single_fields():
    linux = parse_scenario(
        SCENARIO.format(extra='[hosts]\nprofile = "linux"\n[tcp]\nack_every = 1')
    )
    params = linux.tcp_params()
    assert params.min_rto == "200ms" and params.ack_every == 1
    assert params.small_queue_time == "1ms"
    default = parse_scenario(SCENARIO.format(extra=""))
    assert default.tcp_params() == TcpParams()
    sim = linux.build()
    assert sim.tcp.min_rto == "200ms"
    with pytest.raises(ValueError, match="hosts.profile: Input should be 'datacenter' or 'linux'"):
        parse_scenario(SCENARIO.format(extra='[hosts]\nprofile = "windows"'))


def short_flows_through_red(ect_control: bool):
    """100 short DCTCP flows open through RED queues (ECN, 20/60 packets, no hard drop,
    as ns-3's DCTCP example) that four long DCTCP flows keep in the marking region."""
    from isthmus.queues import Red

    topo = Topology.leaf_spine(1, 2, 8, fabric_link=Link("10Gbps", "1us"))
    red = Red(kind="red", min="20pkts", max="60pkts", max_p=1.0, ecn=True, hard_drop=False)
    sim = Simulation(topo, switch_queue="250pkts", aqm=red, tcp=TcpParams(ect_control=ect_control))
    for h in range(4):
        sim.add_tcp_flow(h, 8 + h, "1GB", transport="dctcp")
    new = [
        sim.add_tcp_flow(
            4 + i % 4, 8 + i % 8, "20KB", start=f"{2000 + 50 * i}us", transport="dctcp"
        )
        for i in range(100)
    ]
    sim.run("30ms")
    flows = sim.flows()
    return flows, new, int(sim.ports()["drop_packets"].sum())


def test_ecn_capable_handshakes_are_marked_not_dropped_by_red():
    flows, new, drops = short_flows_through_red(ect_control=False)
    # Not ECN-capable, SYNs and pure ACKs are RED's to drop: handshakes time out.
    assert drops > 0 and flows["timeouts"][new].sum() > 0
    flows, new, drops = short_flows_through_red(ect_control=True)
    assert drops == 0 and flows["timeouts"][new].sum() == 0
    assert (flows["finish_ps"][new] > 0).all()
    assert TcpParams.for_profile("linux").ect_control


def test_the_timestamps_option_adds_its_12_bytes_to_every_segment():
    def sender_nic(tcp: TcpParams) -> tuple[int, int]:
        sim = Simulation(Topology.leaf_spine(1, 2, 1), tcp=tcp)
        sim.add_tcp_flow(0, 1, "1448000B", transport="tcp")  # 1000 full segments
        assert sim.run("1s", stop_when_flows_finish=True)
        ports = sim.ports()
        nic = ports["node"] == sim.topology.nodes()["host_node"][0]
        return int(ports["tx_packets"][nic][0]), int(ports["tx_bytes"][nic][0])

    packets, wire = sender_nic(TcpParams(mss="1448B"))
    packets_ts, wire_ts = sender_nic(TcpParams(mss="1448B", timestamps=True))
    assert packets == packets_ts == 1001  # the SYN and 1000 segments (FIN on the last)
    assert wire_ts - wire == 12 * packets
    # Linux's profile fills a 1500 B packet: 1448 B of payload, 52 B of headers.
    linux = TcpParams.for_profile("linux")
    assert linux.timestamps and linux.mss == "1448B"


def stall_after_three_losses(sack: bool) -> tuple[int, dict]:
    """A long TCP flow loses three consecutive segments of one window (its path is cut
    for 3.6 us, three packet times at 10 Gb/s); returns how long (ps) after the cut the
    receiver's in-order delivery takes to resume at speed (more than 100 KB in a 50 us
    step, after the data already past the cut has drained), and the flow's record."""
    topo = Topology.leaf_spine(
        1, 2, 1, host_link=Link("10Gbps", "50us"), fabric_link=Link("10Gbps", "50us")
    )
    tcp = TcpParams(sack=sack, rwnd="600KB")
    sim = Simulation(topo, tcp=tcp, switch_queue="1000pkts", host_queue="1000pkts")
    flow = sim.add_tcp_flow(0, 1, "20MB", transport="tcp")
    sim.run("3ms")
    link = sim.link_index("leaf0", "spine0")
    sim.set_link_up(link, False)
    cut = sim.now
    sim.run(cut + 3_600_000)
    sim.set_link_up(link, True)
    step, delivered, stalled, resumed = (
        50_000_000,
        sim.flows()["bytes_delivered"][flow],
        False,
        None,
    )
    while resumed is None and sim.now < cut + 20_000_000_000:
        sim.run(sim.now + step)
        gained = int(sim.flows()["bytes_delivered"][flow] - delivered)
        delivered += gained
        stalled = stalled or gained == 0
        if stalled and gained > 100_000:
            resumed = sim.now - cut
    assert resumed is not None, "delivery never resumed"
    sim.run("100ms", stop_when_flows_finish=True)
    record = {k: int(v[flow]) for k, v in sim.flows().items()}
    return resumed, record


def test_sack_recovers_three_losses_in_a_window_in_one_round_trip():
    newreno_stall, newreno = stall_after_three_losses(sack=False)
    sack_stall, sacked = stall_after_three_losses(sack=True)
    for record in (newreno, sacked):
        assert record["timeouts"] == 0 and record["finish_ps"] > 0
    # The base round trip is 8 links x 50 us; the loss shows one round trip after the
    # cut. From then NewReno repairs one segment per round trip (three), SACK all three
    # in its first: it resumes within three round trips of the cut, NewReno about four.
    rtt = 400_000_000
    assert sacked["retransmissions"] == 3, sacked["retransmissions"]
    assert sack_stall < 3 * rtt < newreno_stall, (sack_stall, newreno_stall)
    assert sack_stall - rtt < 0.6 * (newreno_stall - rtt), (sack_stall, newreno_stall)
    assert TcpParams.for_profile("linux").sack


def test_a_window_the_receiver_caps_stops_growing_with_cwnd_validation():
    def cwnd_after(validation: bool) -> int:
        sim = Simulation(
            Topology.leaf_spine(1, 2, 1), tcp=TcpParams(rwnd="64KB", cwnd_validation=validation)
        )
        flow = sim.add_tcp_flow(0, 1, "1GB", transport="tcp")
        sim.run("20ms")
        return sim.tcp_window(flow)["cwnd_bytes"]

    # The 64 KB receive window limits the flight: without validation cwnd grows on every
    # ACK regardless; with it, cwnd stays within reach of what the flow can use.
    assert cwnd_after(True) <= 2 * 64_000 + 2 * 1460
    assert cwnd_after(False) > 10 * 64_000
    assert TcpParams.for_profile("linux").cwnd_validation
