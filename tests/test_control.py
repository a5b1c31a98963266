"""The control plane from Python: controllers, agents, their isolation, and the baselines."""

import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import Controller, ControlPlane, SwitchAgent
from isthmus.control.apps.ecmp import Ecmp
from isthmus.control.apps.single_path import SinglePath


def fabric(**kwargs) -> Simulation:
    """2 spines, 2 leaves, 2 hosts per leaf, all 10 Gb/s."""
    return Simulation(Topology.leaf_spine(2, 2, 2, fabric_link=Link("10Gbps", "1us")), **kwargs)


class Reactive(Controller):
    """Installs an entry for each new flow at the switch that asks, then resubmits."""

    def __init__(self):
        self.asked = []

    def on_packet_in(self, event):
        self.asked.append((event.switch, event.flow))
        self.install(event.switch, 10, flow=event.flow, src=event.src)
        self.packet_out(event.buffer)


def test_a_packet_in_per_switch_then_entries_carry_the_flow():
    sim = fabric()
    plane = ControlPlane(sim)
    for name in ("leaf0", "leaf1", "spine0", "spine1"):
        plane.set_miss(name, "controller")
    app = plane.add(Reactive())
    sim.add_udp_flow(0, 2, "1Gbps", size=100 * 1472, arrivals="constant")
    assert plane.run("10ms")
    assert len(app.asked) == 3 and len(set(app.asked)) == 3
    assert sim.flows()["packets_delivered"][0] == 100


class Watcher(Controller):
    def __init__(self):
        self.events = []

    def on_start(self):
        self.idle = self.install("leaf0", 5, dst=2, output=2, idle_timeout="1ms")
        self.every("1ms", lambda: self.events.append(("tick", self.now)))

    def on_entry_removed(self, event):
        self.events.append((event.reason, event.entry, event.time))

    def on_flow_arrival(self, event):
        self.events.append(("arrival", event.flow, event.src, event.dst, event.size))

    def on_flow_finished(self, event):
        self.events.append(("finished", event.flow))


def test_handlers_see_arrivals_completions_timeouts_and_ticks():
    sim = fabric()
    plane = ControlPlane(sim)
    app = plane.add(Watcher())
    sim.add_udp_flow(0, 2, "1Gbps", size=50 * 1472, start="100us", arrivals="constant")
    plane.run("3500us")
    kinds = [e[0] for e in app.events]
    assert ("arrival", 0, 0, 2, 50 * 1472) in app.events
    assert ("finished", 0) in app.events
    assert kinds.count("tick") == 3
    removed = [e for e in app.events if e[0] == "idle_timeout"]
    assert len(removed) == 1 and removed[0][1] == app.idle
    # The last of 50 packets leaves at about 0.69 ms: idle for 1 ms after that.
    assert 1_600_000_000 < removed[0][2] < 1_800_000_000


class Mover(Controller):
    """Pins flow 0 to spine 0, then moves it to spine 1 at 5 ms."""

    def __init__(self, make_before_break: bool):
        self.mbb = make_before_break

    def on_start(self):
        for name in ("leaf0", "leaf1", "spine0", "spine1"):
            self.set_miss(name, "drop")
        # ACKs come back over spine 0 all along.
        self.install_path(0, ["h2", "leaf1", "spine0", "leaf0", "h0"], 10)
        self.old = self.install_path(0, ["h0", "leaf0", "spine0", "leaf1", "h2"], 10)
        self.after("5ms", self.move)

    def move(self):
        new_path = ["h0", "leaf0", "spine1", "leaf1", "h2"]
        if self.mbb:
            self.migrate(0, self.old, new_path, priority=5)
        else:
            for switch, entry in self.old:
                self.delete(switch, entry)
            self.install_path(0, new_path, 5, extra_delay="100us")


def migrated(latency: str, transport: str, make_before_break: bool) -> Simulation:
    sim = fabric(ecn_threshold="65pkts")
    plane = ControlPlane(sim, control_latency=latency)
    plane.add(Mover(make_before_break))
    # Starts after the paths land; every switch drops on a miss, so a packet that finds
    # its entry gone is lost.
    if transport == "udp":
        sim.add_udp_flow(0, 2, "9Gbps", size="20MB", start="200us", arrivals="constant")
    else:
        sim.add_tcp_flow(0, 2, "20MB", start="200us", transport="dctcp")
    assert plane.run("1s", stop_when_flows_finish=True)
    spine1 = sim.topology.nodes()["name"].index("spine1")
    assert sim.ports()["tx_packets"][sim.ports()["node"] == spine1].sum() > 1000
    return sim


@pytest.mark.parametrize("latency", ["0us", "1us", "50us"])
@pytest.mark.parametrize("transport", ["dctcp", "udp"])
def test_migration_loses_nothing_at_any_control_latency(latency, transport):
    sim = migrated(latency, transport, make_before_break=True)
    drops = sim.node_drops()["rule_drops"].sum() + sim.ports()["drop_packets"].sum()
    assert drops == 0
    flows = sim.flows()
    if transport == "udp":
        assert flows["packets_delivered"][0] == flows["packets_sent"][0]
    else:
        assert flows["retransmissions"][0] == 0
    # The old path's entries are gone; the reverse path and the new path remain.
    assert len(sim.entries()["entry"]) == 6


def test_break_before_make_loses_packets():
    sim = migrated("50us", "dctcp", make_before_break=False)
    drops = sim.node_drops()["rule_drops"].sum() + sim.ports()["drop_packets"].sum()
    assert drops > 0 and sim.flows()["retransmissions"][0] > 0


class Scheduler(Controller):
    """Holds every flow on arrival; releases flow 0 at 2 ms and paces flow 1."""

    def on_flow_arrival(self, event):
        self.hold(event.flow)
        if event.flow == 0:
            self.after("2ms", lambda: self.release(0))
        else:
            self.pace(event.flow, "1Gbps")
            self.release(event.flow)


def test_hold_release_and_pace_from_a_controller():
    sim = fabric(ecn_threshold="65pkts")
    plane = ControlPlane(sim)
    plane.add(Scheduler())
    sim.add_tcp_flow(0, 2, "500KB")
    sim.add_tcp_flow(1, 3, "500KB")
    assert plane.run("1s", stop_when_flows_finish=True)
    flows = sim.flows()
    assert flows["first_delivery_ps"][0] > 2_000_000_000
    paced_ms = flows["finish_ps"][1] / 1e9
    assert 4.0 < paced_ms < 4.4  # 500 KB at 1 Gb/s with 40 B of headers per 1460 B


class Probe(SwitchAgent):
    def __init__(self, switch):
        super().__init__(switch)
        self.inbox = []

    def on_start(self):
        if self.switch.name == "leaf0":
            self.after("1ms", lambda: self.switch.send("leaf1", ("hello", self.now)))

    def on_message(self, sender, message):
        self.inbox.append((sender, message, self.now))


def test_agents_see_only_their_switch_and_talk_with_latency():
    sim = fabric()
    plane = ControlPlane(sim, agent_latency="20us")
    agents = {a.switch.name: a for a in plane.add_agents(Probe)}
    assert set(agents) == {"leaf0", "leaf1", "spine0", "spine1"}
    handle = agents["leaf0"].switch
    leaf0 = sim.topology.nodes()["name"].index("leaf0")
    assert np.all(handle.ports()["node"] == leaf0) and handle.num_ports == 4
    # The handle offers nothing that reaches another switch or the simulation.
    public = {name for name in dir(handle) if not name.startswith("_")}
    assert public == {
        "name",
        "num_ports",
        "now",
        "neighbours",
        "ports",
        "queues",
        "entries",
        "installed",
        "watch_flows",
        "flows",
        "install",
        "delete",
        "select_group",
        "packet_out",
        "set_ecn",
        "ecn",
        "send",
        # Its own distance vector, and the services agents share (a service answers
        # each switch about itself: see ControlPlane.shared).
        "hops_via",
        "shared",
    }
    with pytest.raises(AttributeError):
        handle.sim  # noqa: B018
    # Nor does the agent itself hold anything of the global view.
    agent = agents["leaf0"]
    assert not hasattr(agent, "_plane") and not hasattr(agent, "sim")
    for value in vars(agent).values():
        assert not isinstance(value, ControlPlane | Simulation), value
    # Its queue rows are its own ports, numbered locally.
    assert sorted(set(handle.queues()["port"].tolist())) == [0, 1, 2, 3]
    other = plane.add(Controller()).install("leaf1", 1, dst=0, output=2)
    with pytest.raises(ValueError, match="not on switch 'leaf0'"):
        handle.delete(other)
    with pytest.raises(ValueError, match="unknown entry field"):
        handle.install(1, switch="leaf1", output=0)
    plane.run("2ms")
    assert agents["leaf1"].inbox == [("leaf0", ("hello", 1_000_000_000), 1_020_000_000)]


def test_ecmp_app_spreads_flows_and_single_path_pins_each_pair():
    for app, spread in ((Ecmp(), True), (SinglePath(), False)):
        sim = fabric()
        plane = ControlPlane(sim)
        plane.set_miss("leaf0", "drop")
        plane.add(app)
        rng = np.random.default_rng(1)
        for _ in range(400):
            sim.add_udp_flow(0, 2, "1Gbps", size=1472, start=f"{int(rng.integers(1000))}us")
        assert plane.run("5ms", stop_when_flows_finish=True)
        assert sim.flows()["packets_delivered"].sum() == 400
        ports = sim.ports()
        leaf0 = sim.topology.nodes()["name"].index("leaf0")
        uplinks = ports["tx_packets"][(ports["node"] == leaf0) & (ports["port"] >= 2)]
        if spread:
            assert abs(uplinks[0] - 200) < 40, uplinks
        else:
            assert sorted(uplinks.tolist()) == [0, 400]


def test_bad_control_commands_are_refused_clearly():
    sim = fabric()
    plane = ControlPlane(sim)
    app = plane.add(Controller())
    with pytest.raises(ValueError, match="no node named 'leaf7'"):
        app.install("leaf7", 1, output=0)
    with pytest.raises(ValueError, match="port 9 does not exist on switch 'leaf0'"):
        app.install("leaf0", 1, output=9)
    with pytest.raises(ValueError, match="is a host"):
        app.install("h0", 1, output=0)
    with pytest.raises(ValueError, match="at most one action"):
        app.install("leaf0", 1, output=0, drop=True)
    with pytest.raises(ValueError, match="flow 4 does not exist"):
        app.hold(4)
    with pytest.raises(ValueError, match="has no link to"):
        app.install_path(0, ["h0", "leaf0", "leaf1", "h2"], 1)


def test_hedera_demand_estimator_is_max_min_fair_at_the_nics():
    from isthmus.control.apps.hedera import estimate_demands

    # One sender to two receivers; a second sender into one of them.
    assert estimate_demands([(0, 1), (0, 2), (3, 1)]) == pytest.approx([0.5, 0.5, 0.5])
    # Four senders into one receiver: a quarter each.
    assert estimate_demands([(i, 9) for i in range(4)]) == pytest.approx([0.25] * 4)
    # A receiver-limited flow frees its sender's capacity for the sender's other flow.
    flows = [(0, 5), (1, 5), (1, 6)]
    demands = estimate_demands(flows)
    assert demands == pytest.approx([0.5, 0.5, 0.5])
    rng = np.random.default_rng(4)
    flows = [tuple(rng.choice(12, size=2, replace=False).tolist()) for _ in range(40)]
    demands = estimate_demands(flows)
    for host in range(12):
        assert sum(d for (s, _), d in zip(flows, demands, strict=True) if s == host) <= 1 + 1e-9
        assert sum(d for (_, r), d in zip(flows, demands, strict=True) if r == host) <= 1 + 1e-9


def fat_tree_permutation_goodput(use_hedera: bool, seed: int) -> tuple[float, int]:
    from isthmus.control.apps.hedera import Hedera

    topo = Topology.fat_tree(4, Link("10Gbps", "1us"), Link("10Gbps", "1us"))
    sim = Simulation(topo, seed=seed, ecn_threshold="65pkts")
    for h in range(16):
        sim.add_tcp_flow(h, (h + 4) % 16, "1GB", transport="dctcp")  # every flow leaves its pod
    plane = ControlPlane(sim)
    app = plane.add(Hedera(period="5s", time_scale=1e-3)) if use_hedera else None
    plane.run("20ms")
    before = sim.flows()["bytes_delivered"].copy()
    plane.run("60ms")
    gbps = (sim.flows()["bytes_delivered"] - before).sum() * 8 / 0.04 / 1e9
    return gbps, app.placements if app else 0


def test_hedera_moves_colliding_elephants_and_raises_throughput_over_ecmp():
    for seed in (1, 2):
        ecmp, _ = fat_tree_permutation_goodput(False, seed)
        hedera, placements = fat_tree_permutation_goodput(True, seed)
        assert placements > 0
        assert hedera > 1.1 * ecmp, f"seed {seed}: Hedera {hedera:.1f} vs ECMP {ecmp:.1f} Gb/s"


@pytest.mark.parametrize("topology", ["ring", "mesh"])
def test_l2_learning_delivers_everything_on_loops_without_a_storm(topology):
    from isthmus.control.apps.l2_learning import L2Learning

    topo = Topology.ring(6, 2) if topology == "ring" else Topology.mesh(4, 3)
    sim = Simulation(topo, seed=1)
    hosts = topo.num_hosts
    for src in range(hosts):
        for dst in range(hosts):
            if src != dst:
                sim.add_udp_flow(src, dst, "100Mbps", size=20 * 1472, start=f"{src * 50}us")
    plane = ControlPlane(sim)
    app = plane.add(L2Learning())
    assert plane.run("50ms", stop_when_flows_finish=True)
    flows = sim.flows()
    assert np.all(flows["bytes_delivered"] == 20 * 1472)
    assert sim.live_packets == 0
    # No storm: a flooded packet crosses each spanning-tree link and each host link at
    # most once, so hops stay below (hosts + switches) per packet sent; a loop would
    # multiply them without bound.
    originals = hosts * (hosts - 1) * 20
    switches = topo.num_nodes - hosts
    assert sim.packet_hops <= originals * (hosts + switches)
    assert app.floods > 0
    # Once both ends are learned, packets bypass the controller.
    assert app.packet_ins < originals * switches / 4, (app.packet_ins, originals)


class RateWatcher(Controller):
    def __init__(self):
        self.rates = []

    def on_start(self):
        self.entry = self.install("leaf0", 5, dst=2, output=2)
        self.every("1ms", self.sample)
        self.after("1500us", lambda: self.modify("leaf0", self.entry, output=3))

    def sample(self):
        self.rates.append(self.flow_stats()["rate_bps"][0])


def test_flow_rates_over_the_last_interval_and_entry_modification():
    sim = fabric()
    plane = ControlPlane(sim)
    app = plane.add(RateWatcher())
    sim.add_udp_flow(0, 2, "2Gbps", stop="3ms", arrivals="constant")
    plane.run("3ms")
    # 2 Gb/s of 1500 B datagrams carries 1472 B of payload each: 1.963 Gb/s of goodput.
    assert all(abs(r - 2e9 * 1472 / 1500) / 2e9 < 0.02 for r in app.rates[1:]), app.rates
    ports = sim.ports()
    leaf0 = sim.topology.nodes()["name"].index("leaf0")
    uplinks = ports["tx_packets"][(ports["node"] == leaf0) & (ports["port"] >= 2)]
    assert uplinks[0] > 0 and uplinks[1] > 0
