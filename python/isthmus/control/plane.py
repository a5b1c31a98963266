"""The control plane: the loop that hands engine events to control programs and their
commands back to the engine.

Two kinds of programs run on it:

- a `Controller` sees the whole network and may command any switch and host;
- a `SwitchAgent` lives on one switch. It is handed a `SwitchHandle` that reads only
  its own switch's ports and entries and commands only its own switch; agents talk to
  each other only by `send`, which delivers after the agent channel's latency.

Every command takes effect after the control channel's latency (`control_latency` of
the `ControlPlane`, default 0). Handlers are methods named after the events
(`on_packet_in`, `on_flow_arrival`, `on_flow_finished`, `on_entry_removed`); timers call
the function they were set with.

Lifecycle: `on_attach()` runs as a program is added, before anything runs (where it
refuses a network it cannot serve); `on_start()` runs once per program, at the first
`ControlPlane.run` after the program was added; running in segments (`run("1ms")`,
then `run("2ms")`) continues the same programs, timers and entries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from isthmus import arguments
from isthmus.arguments import U8, U32, whole
from isthmus.control.commands import (
    Command,
    ConfigureQueue,
    DeleteEntry,
    DropBuffer,
    FloodOut,
    Hold,
    InstallEntry,
    ModifyEntry,
    Pace,
    PaceSubflow,
    PacketOut,
    Release,
    RetirePath,
    SetAqm,
    SetBcnPredictions,
    SetFailoverGroup,
    SetFloodPorts,
    SetLink,
    SetMeter,
    SetSelectGroup,
    local_port,
    queue_value,
    switch_node,
)
from isthmus.control.events import (
    EntryRemoved,
    Event,
    FlowArrival,
    FlowCrossing,
    FlowFinished,
    PacketIn,
    Tick,
)
from isthmus.control.loop_free import hops_via_ports, node_host_distances
from isthmus.control.paths import Paths
from isthmus.control.seam import EngineSeam, RunRequest, Seam
from isthmus.network_metrics import arrived_bytes
from isthmus.portmap import PortMap
from isthmus.queues import ramp_marker
from isthmus.simulation import Simulation, instant
from isthmus.topology import Topology

MISS_POLICIES = ("route", "controller", "drop")


class _Clock:
    """Time and timers, and nothing else of the plane: what an agent's base class holds."""

    __slots__ = ("__plane",)

    def __init__(self, plane: ControlPlane):
        self.__plane = plane

    @property
    def now(self) -> int:
        return self.__plane.seam.now

    def timer(self, first: int, period: int | None, callback: Callable[[], Any]) -> int:
        return self.__plane._timer(first, period, callback)

    def cancel(self, timer: int) -> None:
        self.__plane._cancel(timer)


class _Program:
    """What controllers and agents share: timers and the current time."""

    _clock: _Clock

    @property
    def now(self) -> int:
        return self._clock.now

    def every(
        self, period: int | str, callback: Callable[[], Any], first: int | str | None = None
    ) -> int:
        """Calls `callback()` every `period` from `first` (default: one period from now)."""
        # A period past the end of time would wrap the engine's next firing around.
        period_ps = instant(arguments.duration(period, "period"), "period")
        if period_ps <= 0:
            raise ValueError(f"period: a timer's period must be positive, got {period!r}")
        arguments.callable_argument(callback, "callback")
        if first is None:
            start = instant(self.now + period_ps, "period")
        else:
            start = instant(arguments.duration(first, "first"), "first")
        return self._clock.timer(start, period_ps, callback)

    def after(self, delay: int | str, callback: Callable[[], Any]) -> int:
        """Calls `callback()` once, `delay` from now."""
        arguments.callable_argument(callback, "callback")
        return self._clock.timer(
            instant(self.now + arguments.duration(delay, "delay"), "delay"), None, callback
        )

    def cancel(self, timer: int) -> None:
        """Stops a timer (a one-shot timer that already fired: nothing happens)."""
        self._clock.cancel(whole(timer, "timer", 0, U32, "a timer id"))

    def on_attach(self) -> None:
        """Called as the program is added, before anything runs: it sees the network
        (not yet the run) and may refuse one it cannot serve with a ValueError."""

    def on_start(self) -> None:
        """Called once, at the first run after the program was added."""


class Controller(_Program):
    """A control program with the global view: it may read and command everything.

    The view, all public: `sim` (the simulation: flows, ports, queues, entries),
    `topology` and `graph()`, `ports` (the port map: neighbours, `peer`, `port_map()`,
    `path_ports`), `paths(src, dst)` (every shortest path between two hosts) and
    `k_shortest_paths(src, dst, k)`, `set_miss` (the table-miss policy)."""

    _plane: ControlPlane

    @property
    def sim(self) -> Simulation:
        return self._plane.simulation("simulation (`self.sim`)")

    @property
    def control_latency(self) -> int:
        """One way between this controller and a switch (ps): a command takes effect
        this long after it is issued, and a switch's answer takes as long back."""
        return self._plane.latency

    @property
    def seed(self) -> int:
        """The run's seed: what a controller draws at random, it draws from this."""
        return self._plane.seam.seed

    @property
    def topology(self) -> Topology:
        return self._plane.seam.topology

    def graph(self) -> nx.MultiGraph:
        """The topology as a networkx graph (nodes by name, with kind; links with rate
        and delay)."""
        return self._plane.seam.topology.to_networkx()

    @property
    def ports(self) -> PortMap:
        """Which local port of each node faces which neighbour."""
        return self._plane.ports

    def paths(self, src: int, dst: int) -> list[list[int]]:
        """Every fewest-hop path from host `src` to host `dst`, as node indices from the
        source host's node to the destination's, in a fixed order."""
        return self._plane.paths.shortest(src, dst)

    def k_shortest_paths(self, src: int, dst: int, k: int) -> list[list[int]]:
        """Up to `k` loop-free paths from host `src` to host `dst`, shortest first (hosts
        never relay), as node indices."""
        return self._plane.paths.k_shortest(src, dst, k)

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        """The plane's service under `key` (see `ControlPlane.shared`): e.g. the
        `ForecastService` a controller pushes centrally trained models through."""
        return self._plane.shared(key, factory)

    def set_miss(self, switch: int | str, miss: str) -> None:
        """What `switch` does on a table miss: "route" (default shortest-path routing),
        "controller" (a packet-in) or "drop". Takes effect at once."""
        self._plane.set_miss(switch, miss)

    def on_packet_in(self, event: PacketIn) -> None:
        """A switch sent a packet up (table miss or a to-controller action)."""

    def on_flow_arrival(self, event: FlowArrival) -> None:
        """A flow opened; `event.size` is what the application announced."""

    def on_flow_finished(self, event: FlowFinished) -> None:
        """A flow's last byte reached its receiver."""

    def on_entry_removed(self, event: EntryRemoved) -> None:
        """An entry timed out or was deleted."""

    def on_flow_crossing(self, event: FlowCrossing) -> None:
        """A switch whose flows an agent watches forwarded a flow's first packet."""

    # ---- commands (each after the control latency, plus `extra_delay`) ----------------

    def issue(self, command: Command, *, extra_delay: int | str = 0) -> int | None:
        """Checks `command` (an `isthmus.control.commands` object) against the network
        and sends it; it takes effect after the control latency plus `extra_delay`. An
        `InstallEntry` answers with the entry's id."""
        return self._plane.issue(command, extra_delay=extra_delay)

    def install(
        self, switch: int | str, priority: int, *, extra_delay: int | str = 0, **kwargs
    ) -> int:
        """Installs a flow entry; returns its id. Match fields: in_port, src, dst, proto,
        src_port, dst_port, flow. Action: output=port, group=id, drop=True,
        controller=True, flood=True, or none for default routing; optional set_priority, meter,
        idle_timeout, hard_timeout (durations)."""
        return self.issue(InstallEntry(switch, priority, kwargs), extra_delay=extra_delay)

    def delete(self, switch: int | str, entry: int, *, extra_delay: int | str = 0) -> None:
        self.issue(DeleteEntry(switch, entry), extra_delay=extra_delay)

    def modify(self, switch: int | str, entry: int, **action) -> None:
        """Replaces an entry's action (output, group, drop, controller, flood, or none
        for default routing; set_priority, meter), keeping its match and counters."""
        self.issue(ModifyEntry(switch, entry, action))

    def select_group(
        self, switch: int | str, group: int, ports: list[int], weights: list[int] | None = None
    ) -> None:
        """Group `group` (0..MAX_GROUP_ID) hashes flows over `ports`, in proportion to
        `weights` (default: equal)."""
        self.issue(SetSelectGroup(switch, group, ports, weights))

    def failover_group(self, switch: int | str, group: int, ports: list[int]) -> None:
        """Group `group` (0..MAX_GROUP_ID) sends out of the first of `ports` whose link
        is up."""
        self.issue(SetFailoverGroup(switch, group, ports))

    def meter(
        self, switch: int | str, meter: int, rate: int | str, burst: int | str = "15KB"
    ) -> None:
        """Meter `meter` (0..MAX_METER_ID) polices to `rate` with a `burst` bucket."""
        self.issue(SetMeter(switch, meter, rate, burst))

    def packet_out(self, buffer: int, port: int | None = None) -> None:
        """Sends a packet-in's packet out of `port`, or back through the flow table."""
        self.issue(PacketOut(buffer, port))

    def flood(self, buffer: int) -> None:
        """Sends a packet-in's packet out of every flood port of its switch but the one
        it came in on."""
        self.issue(FloodOut(buffer))

    def set_flood_ports(self, switch: int | str, ports: list[int]) -> None:
        """Restricts where `switch` floods (to a spanning tree's ports, say)."""
        self.issue(SetFloodPorts(switch, ports))

    def drop(self, buffer: int) -> None:
        self.issue(DropBuffer(buffer))

    def hold(self, flow: int) -> None:
        """Stops a flow's sender from sending new data."""
        self.issue(Hold(flow))

    def release(self, flow: int) -> None:
        self.issue(Release(flow))

    def pace(self, flow: int, rate: int | str | None) -> None:
        """Spaces a flow's packets at `rate` (None: unpaced)."""
        self.issue(Pace(flow, rate))

    def pace_subflow(self, flow: int, subflow: int, rate: int | str | None) -> None:
        """Spaces new segments of MPTCP connection `flow`'s subflow `subflow` at `rate`;
        a rate of 0 gives the subflow no new data, None lets its window decide."""
        self.issue(PaceSubflow(flow, subflow, rate))

    def set_bcn_queue(self, switch: int | str, port: int, queue: float | None) -> None:
        """Feeds the BCN congestion point of a switch port one queue value (packets) in
        place of the measured queue; None measures again."""
        net = self._plane.ports
        node = switch_node(net, switch)
        port = local_port(net, node, port)
        values = None if queue is None else [queue_value(queue, "queue")]
        self.set_bcn_predictions({(node, port): values})

    def set_bcn_predictions(
        self, predictions: dict[tuple[int | str, int], list[float] | None]
    ) -> None:
        """Gives BCN congestion points, keyed (switch, port), predicted queue values
        (packets), all in one command: the class most of them fall in decides each
        point's feedback and their mean replaces the queue in e (IBCN); None measures
        again."""
        self.issue(SetBcnPredictions(predictions))

    def set_link(self, link: int, up: bool) -> None:
        self.issue(SetLink(link, up))

    def configure_queue(
        self, switch: int | str, *, limit: str, scheduler=None, aqm=None, port: int | None = None
    ) -> None:
        """Replaces the queueing (limit, `isthmus.queues` scheduler and AQM) of one port
        or every port of a switch."""
        self.issue(ConfigureQueue(switch, limit, scheduler, aqm, port))

    def set_ecn_threshold(
        self,
        switch: int | str,
        threshold: str | None,
        port: int | None = None,
        traffic_class: int | None = None,
    ) -> None:
        """Makes the port's (or every port's) AQM DCTCP's step marker at `threshold`
        ("65pkts", "100KB"), or drop-tail with None; with `traffic_class`, that class's
        queue only. Scheduler and limit stay."""
        aqm = _marking(threshold, threshold, 1.0, ("threshold", "threshold"))
        self.issue(SetAqm(switch, aqm, port, traffic_class))

    # ---- paths -------------------------------------------------------------------------

    def install_path(
        self,
        flow: int,
        path: list[int | str],
        priority: int,
        *,
        extra_delay: int | str = 0,
        src_port: int | None = None,
        dst_port: int | None = None,
    ) -> list[tuple[int, int]]:
        """Entries steering `flow`'s packets from the path's first host along it (only
        those from `src_port` or to `dst_port` if given: one MPTCP subflow, or its
        ACKs on the way back); returns (switch, entry) pairs in path order."""
        ports = self._plane.ports
        hops = ports.path_ports(path)
        src = ports.host_node.index(ports.node(path[0], "path[0]"))
        match = {"flow": flow, "src": src}
        if src_port is not None:
            match["src_port"] = src_port
        if dst_port is not None:
            match["dst_port"] = dst_port
        return [
            (switch, self.install(switch, priority, extra_delay=extra_delay, **match, output=port))
            for switch, port in hops
        ]

    def migrate(
        self,
        flow: int,
        old: list[tuple[int, int]],
        new_path: list[int | str],
        priority: int,
        *,
        src_port: int | None = None,
        dst_port: int | None = None,
    ) -> list[tuple[int, int]]:
        """Moves `flow` from the entries `old` (from `install_path`, first hop first)
        onto `new_path`, make-before-break and without loss at any control latency: the
        new path is installed at every hop first (at `priority`); one control round trip
        later (the switches' confirmations) the old entry at the first hop goes, so no
        new packet takes the old path; the rest of the old path goes once the packets
        already on it have left it (the engine waits out the path's worst-case transit
        and checks its queues for the flow). Where the new path meets the old one again
        further on (a fat-tree's source aggregation switch, leaving towards another
        core), the old entry there, a priority above the new one, would hold the flow on
        its old path until it drained, and a busy flow keeps that path from draining: it
        goes with the first hop, and a packet that took the old first hops meets the new
        path's entries there, already in place (both paths shortest, so no loop).
        Returns the new entries."""
        retire = self._plane.check(RetirePath(flow, old))
        new = self.install_path(flow, new_path, priority, src_port=src_port, dst_port=dst_port)
        rtt = 2 * self._plane.latency
        self._plane.send(retire, extra_delay=rtt)
        shared = {switch for switch, _ in new}
        for node, entry in retire.entries[1:]:
            if node in shared:
                self.delete(node, entry, extra_delay=rtt)
        return new

    # ---- statistics --------------------------------------------------------------------

    # Each read is a statistics request to every switch and its reply (OpenFlow's
    # multipart messages), counted in the plane's `reads_sent`.

    def flow_table(self) -> dict[str, np.ndarray]:
        """Per-flow records: `Simulation.flows()`'s columns (an emulated network gives
        those it measures: ends, ports, size, start, finish, bytes received so far)."""
        self._plane.count_read()
        return self._plane.seam.flow_rows()

    def port_stats(self) -> dict[str, np.ndarray]:
        self._plane.count_read()
        return self._plane.seam.port_rows()

    def entry_stats(self) -> dict[str, np.ndarray]:
        self._plane.count_read()
        return self._plane.seam.entry_rows()

    def flow_stats(self) -> dict[str, np.ndarray]:
        """Per-flow records, plus `rate_bps`: the rate its bytes reached the receiver
        since this controller's previous call (since the start, on the first), counted as
        `network_metrics.arrived_bytes` counts them, so it never exceeds the link."""
        flows = self.flow_table()
        now = self.now
        delivered = arrived_bytes(flows)
        last_time, last = getattr(self, "_flow_stats_last", (0, np.zeros(0)))
        previous = np.zeros_like(delivered)
        previous[: len(last)] = last
        elapsed = max(now - last_time, 1)
        flows["rate_bps"] = (delivered - previous) * 8 / (elapsed / 1e12)
        self._flow_stats_last = (now, delivered)
        return flows


class SwitchHandle:
    """One switch, as its agent may see and command it: its own ports, queues, entries
    and marking, and messages to other agents. It exposes no other switch, and reads its
    own rows without reading the rest of the network's."""

    __slots__ = ("__plane", "__switch", "__installed")

    def __init__(self, plane: ControlPlane, switch: int):
        self.__plane = plane
        self.__switch = switch
        self.__installed: set[int] = set()

    @property
    def name(self) -> str:
        return self.__plane.ports.names[self.__switch]

    @property
    def num_ports(self) -> int:
        return len(self.__plane.ports.neighbours[self.__switch])

    @property
    def now(self) -> int:
        return self.__plane.seam.now

    def neighbours(self) -> list[str]:
        """Names of the nodes on this switch's ports, in port order."""
        p = self.__plane.ports
        return [p.names[n] for n in p.neighbours[self.__switch]]

    def ports(self) -> dict[str, np.ndarray]:
        """This switch's port counters, one row per port in port order."""
        return self.__plane.seam.port_rows(self.__switch)

    def queues(self) -> dict[str, np.ndarray]:
        """This switch's queue counters, one row per (port, class); `port` is local."""
        sim = self.__plane.simulation("queue counters")
        rows = sim.queues(self.__switch)
        first = sim._engine.global_port(self.__switch, 0)
        rows["port"] = (rows.pop("port_index") - first).astype(np.uint16)
        return rows

    def watch_flows(self) -> None:
        """Starts per-flow counters on this switch: from now on `flows()` lists what each
        flow sent through it, and the agent's `on_flow_crossing` hears of each new one."""
        self.__plane.seam.watch_flows(self.__switch)

    def flows(self) -> dict[str, np.ndarray]:
        """The flows this switch forwarded since `watch_flows`, one row per flow and
        direction: flow, src, dst, in_port, out_port (of its latest packet), packets,
        bytes, first_ps, last_ps."""
        return self.__plane.seam.crossing_rows(self.__switch)

    def entries(self) -> dict[str, np.ndarray]:
        """Every entry on this switch (whoever installed it), in match order."""
        return self.__plane.seam.entry_rows(self.__switch)

    def installed(self) -> list[int]:
        """Entries this agent installed (some may still be on their way) and that have
        not left the switch, oldest first."""
        return sorted(self.__installed)

    def _forget(self, entry: int) -> None:
        """The plane's notice that an entry left the switch."""
        self.__installed.discard(entry)

    def install(self, priority: int, **kwargs) -> int:
        """As `Controller.install`, on this switch only."""
        entry = self.__plane.issue(InstallEntry(self.__switch, priority, kwargs))
        self.__installed.add(entry)
        return entry

    def delete(self, entry: int) -> None:
        entry = whole(entry, "entry", 0, U32, "an entry id")
        # Its own entries it knows without reading the table (an install still on its
        # way is applied before this delete: commands keep their order).
        if entry not in self.__installed and entry not in self.entries()["entry"]:
            raise ValueError(f"entry {entry} is not on switch '{self.name}'")
        self.__plane.issue(DeleteEntry(self.__switch, entry))

    def select_group(self, group: int, ports: list[int], weights: list[int] | None = None) -> None:
        """As `Controller.select_group`, on this switch only."""
        self.__plane.issue(SetSelectGroup(self.__switch, group, ports, weights))

    def packet_out(self, event: PacketIn, port: int | None = None) -> None:
        """Releases a packet this switch sent up."""
        if not isinstance(event, PacketIn):
            raise ValueError(f"event must be a PacketIn, got {arguments.shown(event)}")
        if event.switch != self.__switch:
            raise ValueError(f"that packet-in came from another switch, not '{self.name}'")
        self.__plane.issue(PacketOut(event.buffer, port))

    def set_ecn(
        self,
        port: int | None,
        kmin: str | None,
        kmax: str | None = None,
        pmax: float = 1.0,
        traffic_class: int | None = None,
    ) -> None:
        """ECN marking on local port `port` (None: every port): probability rising from 0
        at `kmin` to `pmax` at `kmax` and 1 above (DCTCP's step when kmin = kmax, the
        default), or no marking (drop-tail) with `kmin` None. With `traffic_class`, only
        that class's queue of the port; without, every class (per-class settings go)."""
        aqm = _marking(kmin, kmax or kmin, pmax)
        self.__plane.issue(SetAqm(self.__switch, aqm, port, traffic_class))

    def ecn(self, port: int, traffic_class: int = 0) -> dict:
        """The AQM class `traffic_class`'s queue on local port `port` runs (kind, and
        kmin / kmax / pmax for a marker)."""
        port = local_port(self.__plane.ports, self.__switch, port)
        traffic_class = whole(traffic_class, "traffic_class", 0, U8, "a traffic class")
        config = self.__plane.simulation("queue settings").port_queue_config(self.__switch, port)
        per_class = config.get("class_aqm", [])
        if traffic_class < len(per_class) and per_class[traffic_class] is not None:
            return per_class[traffic_class]
        return config["aqm"]

    def send(self, to: str, message: Any) -> None:
        """Delivers `message` to the agent on switch `to` after the agent channel's
        latency."""
        self.__plane._send(self.name, to, message)

    def hops_via(self) -> np.ndarray:
        """This switch's distance vector: (ports × hosts) hops a packet for each host
        travels leaving by each port (`isthmus.control.loop_free.UNREACHABLE` where a
        port leads nowhere near it), what a routing protocol's table tells a switch."""
        return self.__plane._hops_via(self.__switch)

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        """The plane-wide service registered under `key` (made by `factory()` on first
        use): how agents share a resource such as a batched inference server. A service
        must answer each agent about its own switch only; see `ControlPlane.shared`."""
        return self.__plane.shared(key, factory)


class SwitchAgent(_Program):
    """A control program on one switch, with that switch's view only: it holds its
    `SwitchHandle` (`self.switch`) and a clock for timers, and nothing that reaches the
    rest of the network."""

    def __init__(self, switch: SwitchHandle):
        self.switch = switch

    def on_packet_in(self, event: PacketIn) -> None:
        """This switch sent a packet up."""

    def on_message(self, sender: str, message: Any) -> None:
        """Another switch's agent sent a message."""

    def on_entry_removed(self, event: EntryRemoved) -> None:
        """An entry of this switch timed out or was deleted."""

    def on_flow_crossing(self, event: FlowCrossing) -> None:
        """This switch (once watching, see `SwitchHandle.watch_flows`) forwarded the
        first packet of a flow in one direction."""


class ControlPlane:
    """Runs control programs against a network: a `Simulation`, or any other `Seam`
    (an emulated network of real switches, `isthmus.emulate`)."""

    def __init__(
        self,
        sim: Simulation | Seam,
        *,
        control_latency: int | str = 0,
        agent_latency: int | str = "10us",
    ):
        """`sim`: the simulation to control, or another network's `Seam`."""
        if isinstance(sim, Simulation):
            seam: Seam = EngineSeam(sim)
        elif isinstance(sim, Seam):
            seam = sim
        else:
            raise ValueError(
                f"sim must be a Simulation (or another network's control Seam), got "
                f"{arguments.shown(sim)}"
            )
        self.seam = seam
        """Where checked commands go and time, events and counters come from."""
        self.sim: Simulation | None = sim if isinstance(sim, Simulation) else None
        self.latency = instant(
            arguments.duration(control_latency, "control_latency"), "control_latency"
        )
        self.agent_latency = instant(
            arguments.duration(agent_latency, "agent_latency"), "agent_latency"
        )
        self.ports = PortMap(seam)
        self.paths = Paths(self.ports)
        self.commands_sent = 0
        """Commands the programs sent through the seam (OpenFlow's flow-mods, group-mods,
        meter-mods, packet-outs and the like); counter reads are `reads_sent`."""
        self.reads_sent = 0
        """Statistics requests the controllers sent, one per switch a read covers (each
        with its reply); an agent reading its own switch's counters sends none."""
        self._switches = sum(kind == "switch" for kind in self.ports.kinds)
        self.controllers: list[Controller] = []
        self.agents: dict[int, SwitchAgent] = {}
        # Timer id -> (callback, periodic); a one-shot timer leaves when it fires.
        self._timers: dict[int, tuple[Callable[[], Any], bool]] = {}
        self._claimed: set[int] = set()
        self._unstarted: list[_Program] = []
        self._services: dict[str, Any] = {}
        self._host_distances: np.ndarray | None = None

    def add(self, controller: Controller) -> Controller:
        if not isinstance(controller, Controller):
            raise ValueError(f"controller must be a Controller, got {arguments.shown(controller)}")
        controller._plane = self
        controller._clock = _Clock(self)
        controller.on_attach()
        self.controllers.append(controller)
        self._unstarted.append(controller)
        return controller

    def add_agents(
        self, agent_type: type[SwitchAgent], switches: list[int | str] | None = None, **kwargs
    ) -> list[SwitchAgent]:
        """One `agent_type(handle, **kwargs)` per switch (default: every switch)."""
        if not (isinstance(agent_type, type) and issubclass(agent_type, SwitchAgent)):
            raise ValueError(
                f"agent_type must be a SwitchAgent subclass, got {arguments.shown(agent_type)}"
            )
        if switches is None:
            chosen = [i for i, kind in enumerate(self.ports.kinds) if kind == "switch"]
        elif isinstance(switches, str | bytes) or not hasattr(switches, "__iter__"):
            raise ValueError(
                "switches must be a list of switch names or numbers, got "
                f"{arguments.shown(switches)}"
            )
        else:
            chosen = [self.ports.node(s, f"switches[{i}]") for i, s in enumerate(switches)]
        # Every switch is checked before any agent is made.
        for switch in chosen:
            name = self.ports.names[switch]
            if self.ports.kinds[switch] != "switch":
                raise ValueError(f"switches: '{name}' is a host; agents run on switches")
            if switch in self.agents or chosen.count(switch) > 1:
                raise ValueError(f"switches: '{name}' already has an agent")
        made = []
        for switch in chosen:
            agent = agent_type(SwitchHandle(self, switch), **kwargs)
            agent._clock = _Clock(self)
            agent.on_attach()
            self.agents[switch] = agent
            self._unstarted.append(agent)
            made.append(agent)
        return made

    def shared(self, key: str, factory: Callable[[], Any]) -> Any:
        """The service registered under `key`, made by `factory()` the first time. The
        sanctioned way for agents to share something without sharing views: a service
        is handed each agent's own `SwitchHandle` and must keep its answers per switch
        (e.g. one forward pass of a model for every switch, each switch reading back
        only its own rows)."""
        if key not in self._services:
            self._services[key] = factory()
        return self._services[key]

    def _hops_via(self, switch: int) -> np.ndarray:
        if self._host_distances is None:
            self._host_distances = node_host_distances(self.ports)
        return hops_via_ports(self.ports, self._host_distances, switch)

    def set_miss(self, switch: int | str, miss: str) -> None:
        """What `switch` does on a table miss: "route", "controller" or "drop"."""
        node = switch_node(self.ports, switch)
        self.seam.set_miss(node, arguments.text(miss, "miss", MISS_POLICIES))

    def simulation(self, what: str) -> Simulation:
        """The simulation this plane runs, for a program that reads `what` of it; on
        another network, an error saying that network cannot show it."""
        if self.sim is None:
            raise self.seam.unsupported(what)
        return self.sim

    # ---- running -----------------------------------------------------------------------

    def run(
        self,
        until: int | str,
        *,
        stop_when_flows_finish: bool = False,
        chunks: int = 1,
        on_progress: Callable[[int], None] | None = None,
    ) -> bool:
        """Runs the simulation to `until` with the programs in the loop, in `chunks`
        equal steps of simulated time with `on_progress(now)` after each; returns whether
        every flow has finished. Programs added since the last run start first."""
        request = RunRequest(until, stop_when_flows_finish, chunks, on_progress)
        return self.seam.run(request, self._start, self._dispatch)

    def _start(self) -> None:
        starting, self._unstarted = self._unstarted, []
        for program in starting:
            program.on_start()

    def _dispatch(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, Tick):
                # A timer cancelled by a handler earlier in the same batch does not fire
                # (a live network can report a tick and the event that cancels it at once).
                timer = self._timers.get(event.timer)
                if timer is None:
                    continue
                callback, periodic = timer
                if not periodic:
                    del self._timers[event.timer]
                callback()
            elif isinstance(event, PacketIn):
                self._packet_in(event)
            elif isinstance(event, FlowCrossing):
                for controller in self.controllers:
                    controller.on_flow_crossing(event)
                if event.switch in self.agents:
                    self.agents[event.switch].on_flow_crossing(event)
            else:
                if isinstance(event, EntryRemoved) and event.switch in self.agents:
                    agent = self.agents[event.switch]
                    agent.switch._forget(event.entry)
                    agent.on_entry_removed(event)
                for controller in self.controllers:
                    if isinstance(event, FlowArrival):
                        controller.on_flow_arrival(event)
                    elif isinstance(event, FlowFinished):
                        controller.on_flow_finished(event)
                    else:
                        controller.on_entry_removed(event)

    def _packet_in(self, event: PacketIn) -> None:
        for controller in self.controllers:
            controller.on_packet_in(event)
        agent = self.agents.get(event.switch)
        if agent is not None:
            agent.on_packet_in(event)
        if event.buffer not in self._claimed:
            # Nobody took the packet: it is dropped, not kept forever.
            self.seam.send(0, DropBuffer(event.buffer))
        self._claimed.discard(event.buffer)

    # ---- plumbing for the programs -------------------------------------------------------

    def _timer(self, first: int, period: int | None, callback: Callable[[], Any]) -> int:
        timer = self.seam.add_timer(first, period)
        self._timers[timer] = (callback, period is not None)
        return timer

    def _cancel(self, timer: int) -> None:
        self.seam.cancel_timer(timer)
        self._timers.pop(timer, None)

    def count_read(self) -> None:
        """A controller read every switch's counters: one request to each."""
        self.reads_sent += self._switches

    @property
    def live_timers(self) -> int:
        """Timers that can still fire (one-shot timers leave once they fired)."""
        return len(self._timers)

    def check(self, command: Command) -> Command:
        """`command` checked against this network, in engine terms."""
        if not isinstance(command, Command):
            raise ValueError(
                "command must be one of isthmus.control.commands (InstallEntry, SetAqm, "
                f"Pace, ...), got {arguments.shown(command)}"
            )
        return command.checked(self.ports)

    def issue(self, command: Command, *, extra_delay: int | str = 0) -> int | None:
        """Checks `command` and sends it: it takes effect after the control latency plus
        `extra_delay`. An `InstallEntry` answers with the entry's id."""
        return self.send(self.check(command), extra_delay=extra_delay)

    def send(self, checked: Command, *, extra_delay: int | str = 0) -> int | None:
        """Sends a command `check` returned through the seam."""
        if isinstance(checked, PacketOut | FloodOut | DropBuffer):
            self._claimed.add(checked.buffer)
        answer = self.seam.send(self._delay(extra_delay), checked)
        self.commands_sent += 1
        return answer

    def _delay(self, extra_delay: int | str) -> int:
        """The control latency plus `extra_delay`, refused if it would land a command
        past the end of simulated time."""
        delay = self.latency + arguments.duration(extra_delay, "extra_delay")
        instant(self.seam.now + delay, "extra_delay")
        return delay

    def _send(self, sender: str, to: str, message: Any) -> None:
        target = self.ports.node(to, "to")
        if target not in self.agents:
            raise ValueError(f"to: no agent runs on '{self.ports.names[target]}'")
        agent = self.agents[target]
        self._timer(
            self.seam.now + self.agent_latency, None, lambda: agent.on_message(sender, message)
        )


def _marking(
    kmin: str | None, kmax: str | None, pmax: float, names: tuple[str, str] = ("kmin", "kmax")
) -> dict:
    """The AQM of an ECN setting: a ramp from `kmin` to `kmax`, or drop-tail with None."""
    return {"kind": "drop_tail"} if kmin is None else ramp_marker(kmin, kmax or kmin, pmax, names)
