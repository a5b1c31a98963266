"""What every scheme stands on: programs start once, timers and messages are freed, apps
use only the public view, paths are enumerated for them, single-path routing spreads,
unknown events and undefined groups are errors, and loops end by time-to-live."""

import ast
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import isthmus
from isthmus import Link, Simulation, Topology
from isthmus.control import Controller, ControlPlane, SwitchAgent
from isthmus.control.apps.single_path import SinglePath
from isthmus.control.events import decode
from isthmus.results import summarize

PACKAGE = Path(isthmus.__file__).parent
REPO = PACKAGE.parent.parent


def fabric(**kwargs) -> Simulation:
    return Simulation(Topology.leaf_spine(2, 2, 2, fabric_link=Link("10Gbps", "1us")), **kwargs)


class Ticker(Controller):
    def __init__(self):
        self.starts = 0
        self.ticks = []

    def on_start(self):
        self.starts += 1
        self.every("1ms", lambda: self.ticks.append(self.now))


def test_programs_start_once_when_a_run_is_split_into_segments():
    sim = fabric()
    plane = ControlPlane(sim)
    ticker = plane.add(Ticker())
    single = plane.add(SinglePath())
    plane.run("3ms")
    entries_after_first = len(sim.entries()["entry"])
    plane.run("7ms")
    plane.run("10ms")
    assert ticker.starts == 1
    assert ticker.ticks == [i * 1_000_000_000 for i in range(1, 11)]
    # 4 hosts: 12 ordered pairs, each with an entry per switch on its path, once.
    assert len(sim.entries()["entry"]) == entries_after_first
    assert single.sim is sim
    # A program added later starts at the next run, once.
    late = plane.add(Ticker())
    plane.run("12ms")
    assert late.starts == 1 and late.ticks == [11_000_000_000, 12_000_000_000]


class Chatter(SwitchAgent):
    """Two agents bounce one message back and forth `rounds` times."""

    def __init__(self, switch, rounds: int, samples: list):
        super().__init__(switch)
        self.rounds = rounds
        self.samples = samples
        self.received = 0

    def on_start(self):
        if self.switch.name == "leaf0":
            self.switch.send("leaf1", 0)

    def on_message(self, sender, message):
        self.received += 1
        if message % 20_000 == 0:
            self.samples.append(tracemalloc.get_traced_memory()[0])
        if message < self.rounds:
            self.switch.send(sender, message + 1)


def test_a_long_chatty_run_stays_flat():
    rounds = int(os.environ.get("ISTHMUS_LONG_MESSAGES", 100_000))
    sim = fabric()
    plane = ControlPlane(sim, agent_latency="1us")
    samples: list[int] = []
    agents = plane.add_agents(Chatter, ["leaf0", "leaf1"], rounds=rounds, samples=samples)
    # One-shot timers too, each firing before the next is set.
    keeper = plane.add(Controller())
    fired = [0]  # a count, not a list of times: the test itself must not grow

    def again():
        fired[0] += 1
        if fired[0] < rounds // 10:
            keeper.after("5us", again)

    keeper.after("5us", again)
    tracemalloc.start()
    try:
        plane.run(f"{rounds * 2}us")
    finally:
        tracemalloc.stop()
    assert sum(a.received for a in agents) == rounds + 1
    assert fired[0] == rounds // 10
    assert plane.live_timers == 0 and sim._engine.live_control_timers() == 0
    # Memory after the first sample stays within 256 KiB however many messages pass.
    assert max(samples[1:]) - samples[1] < 256 * 1024, samples


PRIVATE_OF_BASE = {"_plane", "_clock"}


def private_uses(path: Path) -> list[str]:
    """`x._name` where x is not `self`, and `self._plane` / `self._clock`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__"):
            continue
        owner = node.value
        own = isinstance(owner, ast.Name) and owner.id == "self"
        if not own or name in PRIVATE_OF_BASE:
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_app_reaches_into_private_attributes():
    sources = [
        *sorted((PACKAGE / "control" / "apps").glob("*.py")),
        *sorted((REPO / "examples").glob("*.py")),
    ]
    assert len(sources) >= 5
    offenders = [use for path in sources for use in private_uses(path)]
    assert offenders == []


def test_the_private_use_check_catches_what_it_should(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("class A:\n    def f(self):\n        self._plane.x\n        self.sim._engine\n")
    assert len(private_uses(bad)) == 2


def test_controllers_enumerate_paths_and_ports_publicly():
    sim = Simulation(Topology.fat_tree(4))
    plane = ControlPlane(sim)
    app = plane.add(Controller())
    ports = app.ports
    # Host 0 and host 15 sit in different pods: 4 shortest paths through 4 cores.
    paths = app.paths(0, 15)
    assert len(paths) == 4 and all(len(p) == 7 for p in paths)
    cores = {ports.names[p[3]] for p in paths}
    assert len(cores) == 4 and all(name.startswith("core") for name in cores)
    k = app.k_shortest_paths(0, 15, 6)
    assert len(k) == 6 and [len(p) for p in k[:4]] == [7] * 4 and all(len(p) > 7 for p in k[4:])
    assert sorted(map(tuple, k[:4])) == sorted(map(tuple, paths))
    for path in k:
        assert len(set(path)) == len(path), "loop-free"
        assert all(ports.kinds[n] == "switch" for n in path[1:-1]), "hosts never relay"
    # The port map is symmetric: the far end of the far end is where we started.
    port_map = ports.port_map()
    assert len(port_map) == len(sim.ports()["node"])
    for (node, port), (peer, back) in port_map.items():
        assert port_map[(peer, back)] == (node, port)
    assert app.graph().number_of_nodes() == len(ports.names)
    with pytest.raises(ValueError, match="dst must be a host number"):
        app.paths(0, 99)
    with pytest.raises(ValueError, match="the same host"):
        app.k_shortest_paths(3, 3, 2)


def test_single_path_routing_spreads_host_pairs_over_every_core():
    sim = Simulation(Topology.fat_tree(8), routing="single_path")
    rng = np.random.default_rng(5)
    hosts = 128
    pairs = set()
    while len(pairs) < 600:
        a, b = (int(x) for x in rng.integers(hosts, size=2))
        if a // 16 != b // 16:
            pairs.add((a, b))
    for a, b in sorted(pairs):
        # Two flows per pair: a pair must keep one path whatever its ports.
        for _ in range(2):
            sim.add_udp_flow(a, b, "1Gbps", size=1472, arrivals="constant")
    sim.run("5ms", stop_when_flows_finish=True)
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    core_nodes = [i for i, n in enumerate(names) if n.startswith("core")]
    assert len(core_nodes) == 16
    carried = [int(ports["tx_packets"][ports["node"] == c].sum()) for c in core_nodes]
    assert sum(carried) == 2 * len(pairs)
    assert all(c > 0 for c in carried), carried
    # 1200 packets over 16 cores: none far from its 75 if the spread is even.
    assert max(carried) < 3 * 75, carried


def test_a_pair_keeps_one_path_under_single_path_routing():
    sim = Simulation(Topology.fat_tree(4), routing="single_path")
    for port in range(40):
        flow = sim.add_udp_flow(0, 15, "1Gbps", size=1472, arrivals="constant")
        assert flow == port
    sim.run("5ms", stop_when_flows_finish=True)
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    used = [
        n
        for i, n in enumerate(names)
        if n.startswith("core") and ports["tx_packets"][ports["node"] == i].sum()
    ]
    assert len(used) == 1


def test_an_unknown_event_kind_is_an_error_not_a_silent_loss():
    columns = {name: np.zeros(1, dtype=np.uint32) for name in ("time_ps", "timer", "switch")}
    columns["kind"] = np.array([9], dtype=np.uint8)
    with pytest.raises(ValueError, match="kind 9"):
        decode(columns)


def test_entries_need_their_groups_and_meters_defined():
    sim = fabric()
    plane = ControlPlane(sim)
    app = plane.add(Controller())
    with pytest.raises(ValueError, match="group 4 is not defined on switch 'leaf0'"):
        app.install("leaf0", 5, dst=2, group=4)
    with pytest.raises(ValueError, match="meter 2 is not defined"):
        app.install("leaf0", 5, dst=2, output=2, meter=2)
    app.select_group("leaf0", 4, [2, 3])
    app.meter("leaf0", 2, "1Gbps")
    app.install("leaf0", 5, dst=2, group=4, meter=2)


def test_a_forwarding_loop_is_cut_by_ttl_and_reported():
    sim = fabric(ttl=16)
    sim.add_flow_entry("leaf0", 10, dst=2, output=2)  # up to spine 0 ...
    sim.add_flow_entry("spine0", 10, dst=2, output=0)  # ... and straight back
    sim.add_udp_flow(0, 2, "1Gbps", size=5 * 1472, arrivals="constant")
    sim.run("1ms")
    assert sim.node_drops()["ttl_drops"].sum() == 5
    assert sim.packet_hops == 5 * 16
    summary = summarize(sim, scenario="loop", wall_s=1.0)
    assert summary["loops"] == 5 and summary["flows_unfinished"] == 1
    with pytest.raises(
        ValueError, match=r"Simulation: ttl: Input should be greater than or equal to 1"
    ):
        fabric(ttl=0)


def test_per_flow_entries_at_scale_route_every_flow_by_its_own_entry():
    """10^4 exact-match entries on one switch: each flow takes the port its entry says."""
    sim = Simulation(Topology.leaf_spine(4, 2, 2, fabric_link=Link("10Gbps", "1us")))
    flows = 10_000
    for flow in range(flows):
        sim.add_flow_entry("leaf0", 10, flow=flow, src=0, output=2 + flow % 4)
    for flow in range(flows):
        sim.add_udp_flow(0, 2, "1Gbps", size=100, start=f"{flow}us", arrivals="constant")
    sim.run("50ms", stop_when_flows_finish=True)
    uplinks = sim.ports("leaf0")["tx_packets"][2:6]
    assert uplinks.tolist() == [flows // 4] * 4
    entries = sim.entries()
    assert len(entries["entry"]) == flows and np.all(entries["packets"] == 1)


class Watcher(SwitchAgent):
    def __init__(self, switch):
        super().__init__(switch)
        self.crossings = []

    def on_start(self):
        self.switch.watch_flows()

    def on_flow_crossing(self, event):
        self.crossings.append((event.flow, event.src, event.in_port))


def test_an_agent_counts_the_flows_crossing_its_switch_only():
    sim = fabric()
    plane = ControlPlane(sim)
    (agent,) = plane.add_agents(Watcher, ["leaf0"])
    a = sim.add_udp_flow(0, 2, "1Gbps", size=50 * 1472, arrivals="constant")  # crosses leaf0
    b = sim.add_udp_flow(3, 1, "1Gbps", size=20 * 1472, arrivals="constant")  # into leaf0
    sim.add_udp_flow(2, 3, "1Gbps", size=10 * 1472, arrivals="constant")  # leaf1 only
    c = sim.add_tcp_flow(1, 0, "100KB", transport="tcp")  # within leaf0, both directions
    assert plane.run("10ms", stop_when_flows_finish=True)
    rows = agent.switch.flows()
    seen = {(f, s) for f, s in zip(rows["flow"].tolist(), rows["src"].tolist(), strict=True)}
    assert seen == {(a, 0), (b, 3), (c, 1), (c, 0)}
    # One crossing event per flow and direction, the first packet's ingress port.
    assert sorted((f, s) for f, s, _ in agent.crossings) == sorted(seen)
    first_port = {(f, s): port for f, s, port in agent.crossings}
    assert first_port[(a, 0)] == 0  # from host 0's port
    assert first_port[(b, 3)] in (2, 3)  # down from a spine
    flows = sim.flows()
    for flow in (a, b):
        row = rows["flow"].tolist().index(flow)
        # Every packet of a lossless UDP flow crossed, with its wire bytes.
        assert rows["packets"][row] == flows["packets_sent"][flow]
        assert rows["bytes"][row] == flows["bytes_sent"][flow] + 28 * flows["packets_sent"][flow]
    (idle,) = plane.add_agents(SwitchAgent, ["leaf1"])
    with pytest.raises(ValueError, match="'leaf1' is not watching its flows"):
        idle.switch.flows()


class ClassMarker(SwitchAgent):
    """Marks class 0 at 5 packets on its switch's port 0, leaves class 1 unmarked."""

    def on_start(self):
        self.switch.set_ecn(0, "5pkts", traffic_class=0)


def test_an_agent_sets_ecn_marking_per_port_and_class():
    from isthmus.queues import Wfq

    sim = Simulation(
        Topology.leaf_spine(1, 2, 2, fabric_link=Link("10Gbps", "1us")),
        switch_queue="300pkts",
        scheduler=Wfq(kind="wfq", weights=[1, 1]),
    )
    plane = ControlPlane(sim)
    (agent,) = plane.add_agents(ClassMarker, ["leaf0"])
    # Two DCTCP senders into host 0, one per class: host 1 beside it and host 2 across
    # the spine; they meet only at leaf 0's port 0.
    for src, cls in ((1, 0), (2, 1)):
        flow = sim.add_tcp_flow(src, 0, "3MB", transport="dctcp")
        sim.set_priority(flow, cls)
    assert plane.run("50ms", stop_when_flows_finish=True)
    queues = agent.switch.queues()
    port0 = queues["port"] == 0
    marks = dict(
        zip(queues["class"][port0].tolist(), queues["aqm_marks"][port0].tolist(), strict=True)
    )
    assert marks[0] > 0 and marks[1] == 0, marks
    assert agent.switch.ecn(0, traffic_class=0)["kind"] == "ramp"
    assert agent.switch.ecn(0, traffic_class=1)["kind"] == "drop_tail"
    assert agent.switch.ecn(1)["kind"] == "drop_tail"  # another port: untouched
    # Setting the whole port again clears the per-class setting.
    agent.switch.set_ecn(0, "20pkts")
    plane.run("51ms")
    assert agent.switch.ecn(0, traffic_class=1)["kmin"] == ("packets", 20)
    with pytest.raises(ValueError, match="traffic_class 2 does not exist"):
        agent.switch.set_ecn(0, "5pkts", traffic_class=2)
