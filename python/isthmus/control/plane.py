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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from isthmus.control.events import (
    EntryRemoved,
    FlowArrival,
    FlowFinished,
    PacketIn,
    Tick,
    decode,
)
from isthmus.queues import queue_config
from isthmus.simulation import Simulation
from isthmus.units import limit as units_limit
from isthmus.units import rate_bps, size_bytes, time_ps


class PortMap:
    """Local port numbers between neighbouring nodes: port k of a node faces the k-th
    link touching it, in the topology's link order."""

    def __init__(self, sim: Simulation):
        nodes = sim.topology.nodes()
        links = sim.topology.links()
        self.names: list[str] = list(nodes["name"])
        self.index = {name: i for i, name in enumerate(self.names)}
        self.kinds: list[str] = list(nodes["kind"])
        self.host_node = [int(n) for n in nodes["host_node"]]
        self.neighbours: list[list[int]] = [[] for _ in self.names]
        for a, b in zip(links["a"].tolist(), links["b"].tolist(), strict=True):
            self.neighbours[a].append(b)
            self.neighbours[b].append(a)

    def node(self, node: int | str) -> int:
        if isinstance(node, str):
            if node not in self.index:
                raise ValueError(f"no node named {node!r} in the topology")
            return self.index[node]
        if not 0 <= node < len(self.names):
            raise ValueError(
                f"node {node} does not exist; nodes are numbered 0..{len(self.names) - 1}"
            )
        return node

    def port_towards(self, node: int, neighbour: int) -> int:
        try:
            return self.neighbours[node].index(neighbour)
        except ValueError:
            raise ValueError(
                f"'{self.names[node]}' has no link to '{self.names[neighbour]}'"
            ) from None

    def path_ports(self, path: list[int | str]) -> list[tuple[int, int]]:
        """(switch, egress port) for every switch on a node path from host to host."""
        nodes = [self.node(n) for n in path]
        if len(nodes) < 3 or self.kinds[nodes[0]] != "host" or self.kinds[nodes[-1]] != "host":
            raise ValueError("a path runs from a host through switches to a host")
        return [
            (nodes[i], self.port_towards(nodes[i], nodes[i + 1])) for i in range(1, len(nodes) - 1)
        ]


class _Program:
    """What controllers and agents share: timers and the current time."""

    _plane: ControlPlane

    @property
    def now(self) -> int:
        return self._plane.sim.now

    def every(
        self, period: int | str, callback: Callable[[], Any], first: int | str | None = None
    ) -> int:
        """Calls `callback()` every `period` from `first` (default: one period from now)."""
        period_ps = time_ps(period)
        start = self.now + period_ps if first is None else time_ps(first)
        return self._plane._timer(start, period_ps, callback)

    def after(self, delay: int | str, callback: Callable[[], Any]) -> int:
        """Calls `callback()` once, `delay` from now."""
        return self._plane._timer(self.now + time_ps(delay), None, callback)

    def cancel(self, timer: int) -> None:
        self._plane.sim._engine.cancel_control_timer(timer)

    def on_start(self) -> None:
        """Called once when the run begins."""


class Controller(_Program):
    """A control program with the global view: it may read and command everything."""

    @property
    def sim(self) -> Simulation:
        return self._plane.sim

    def on_packet_in(self, event: PacketIn) -> None:
        """A switch sent a packet up (table miss or a to-controller action)."""

    def on_flow_arrival(self, event: FlowArrival) -> None:
        """A flow opened; `event.size` is what the application announced."""

    def on_flow_finished(self, event: FlowFinished) -> None:
        """A flow's last byte reached its receiver."""

    def on_entry_removed(self, event: EntryRemoved) -> None:
        """An entry timed out or was deleted."""

    # ---- commands (each after the control latency, plus `extra_delay`) ----------------

    def install(
        self, switch: int | str, priority: int, *, extra_delay: int | str = 0, **kwargs
    ) -> int:
        """Installs a flow entry; returns its id. Match fields: in_port, src, dst, proto,
        src_port, dst_port, flow. Action: output=port, group=id, drop=True,
        controller=True, flood=True, or none for default routing; optional set_priority, meter,
        idle_timeout, hard_timeout (durations)."""
        return self._plane._install(self._plane.ports.node(switch), priority, extra_delay, kwargs)

    def delete(self, switch: int | str, entry: int, *, extra_delay: int | str = 0) -> None:
        self._plane._engine_call("delete_entry", extra_delay, self._plane.ports.node(switch), entry)

    def modify(self, switch: int | str, entry: int, **action) -> None:
        """Replaces an entry's action (output, group, drop, controller, flood, or none
        for default routing; set_priority, meter), keeping its match and counters."""
        self._plane._engine_call("modify_entry", 0, self._plane.ports.node(switch), entry, **action)

    def select_group(
        self, switch: int | str, group: int, ports: list[int], weights: list[int] | None = None
    ) -> None:
        """Group `group` hashes flows over `ports`, in proportion to `weights`."""
        weights = weights if weights is not None else [1] * len(ports)
        self._plane._engine_call(
            "set_select_group", 0, self._plane.ports.node(switch), group, ports, weights
        )

    def failover_group(self, switch: int | str, group: int, ports: list[int]) -> None:
        """Group `group` sends out of the first of `ports` whose link is up."""
        self._plane._engine_call(
            "set_failover_group", 0, self._plane.ports.node(switch), group, ports
        )

    def meter(
        self, switch: int | str, meter: int, rate: int | str, burst: int | str = "15KB"
    ) -> None:
        self._plane._engine_call(
            "set_meter", 0, self._plane.ports.node(switch), meter, rate_bps(rate), size_bytes(burst)
        )

    def packet_out(self, buffer: int, port: int | None = None) -> None:
        """Sends a packet-in's packet out of `port`, or back through the flow table."""
        self._plane._claim(buffer)
        self._plane._engine_call("packet_out", 0, buffer, port)

    def flood(self, buffer: int) -> None:
        """Sends a packet-in's packet out of every flood port of its switch but the one
        it came in on."""
        self._plane._claim(buffer)
        self._plane._engine_call("flood_out", 0, buffer)

    def set_flood_ports(self, switch: int | str, ports: list[int]) -> None:
        """Restricts where `switch` floods (to a spanning tree's ports, say)."""
        self._plane._engine_call("set_flood_ports", 0, self._plane.ports.node(switch), ports)

    def drop(self, buffer: int) -> None:
        self._plane._claim(buffer)
        self._plane._engine_call("drop_buffer", 0, buffer)

    def hold(self, flow: int) -> None:
        """Stops a flow's sender from sending new data."""
        self._plane._engine_call("hold", 0, flow)

    def release(self, flow: int) -> None:
        self._plane._engine_call("release", 0, flow)

    def pace(self, flow: int, rate: int | str | None) -> None:
        """Spaces a flow's packets at `rate` (None: unpaced)."""
        self._plane._engine_call("pace", 0, flow, None if rate is None else rate_bps(rate))

    def set_bcn_queue(self, switch: int | str, port: int, queue: float | None) -> None:
        """Feeds the BCN congestion point of a switch port a queue value (packets) in
        place of the measured queue, e.g. a prediction; None measures again."""
        self._plane._engine_call("set_bcn_queue", 0, self._plane.ports.node(switch), port, queue)

    def set_link(self, link: int, up: bool) -> None:
        self._plane._engine_call("set_link", 0, link, up)

    def configure_queue(
        self, switch: int | str, *, limit: str, scheduler=None, aqm=None, port: int | None = None
    ) -> None:
        """Replaces the queueing (limit, `isthmus.queues` scheduler and AQM) of one port
        or every port of a switch."""
        config = queue_config(limit, scheduler, aqm)
        self._plane._engine_call("configure_queue", 0, self._plane.ports.node(switch), config, port)

    def set_ecn_threshold(
        self, switch: int | str, threshold: str | None, port: int | None = None
    ) -> None:
        """Makes the port's (or every port's) AQM DCTCP's step marker at `threshold`
        ("65pkts", "100KB"), or drop-tail with None; scheduler and limit stay."""
        node = self._plane.ports.node(switch)
        port_rows = np.flatnonzero(self.sim.ports()["node"] == node)
        first = self.sim._engine.queue_config(int(port_rows[port if port is not None else 0]))
        aqm = {"kind": "drop_tail"}
        if threshold is not None:
            k = units_limit(threshold)
            aqm = {"kind": "ramp", "kmin": k, "kmax": k, "pmax": 1.0}
        self._plane._engine_call("configure_queue", 0, node, {**first, "aqm": aqm}, port)

    # ---- paths -------------------------------------------------------------------------

    def install_path(
        self, flow: int, path: list[int | str], priority: int, *, extra_delay: int | str = 0
    ) -> list[tuple[int, int]]:
        """Entries steering `flow`'s packets from the path's first host along it; returns
        (switch, entry) pairs in path order."""
        src = self._plane.ports.host_node.index(self._plane.ports.node(path[0]))
        return [
            (
                switch,
                self._plane._install(
                    switch, priority, extra_delay, {"flow": flow, "src": src, "output": port}
                ),
            )
            for switch, port in self._plane.ports.path_ports(path)
        ]

    def migrate(
        self, flow: int, old: list[tuple[int, int]], new_path: list[int | str], priority: int
    ) -> list[tuple[int, int]]:
        """Moves `flow` from the entries `old` (from `install_path`) onto `new_path`,
        make-before-break: the new path is installed at every hop first (at `priority`,
        below the old entries'); one control round trip later the old entry at the first
        hop goes, so no new packet takes the old path; one more round trip later, when
        the old path has drained, the rest go. Returns the new entries."""
        rtt = 2 * self._plane.latency
        new = self.install_path(flow, new_path, priority)
        for hop, (switch, entry) in enumerate(old):
            self.delete(switch, entry, extra_delay=rtt if hop == 0 else 2 * rtt)
        return new

    # ---- statistics --------------------------------------------------------------------

    def port_stats(self) -> dict[str, np.ndarray]:
        return self.sim.ports()

    def entry_stats(self) -> dict[str, np.ndarray]:
        return self.sim._engine.entry_table()

    def flow_stats(self) -> dict[str, np.ndarray]:
        """Per-flow records, plus `rate_bps`: goodput since this controller's previous
        call (since the start, on the first)."""
        flows = self.sim.flows()
        now = self.now
        delivered = flows["bytes_delivered"].astype(np.float64)
        last_time, last = getattr(self, "_flow_stats_last", (0, np.zeros(0)))
        previous = np.zeros_like(delivered)
        previous[: len(last)] = last
        elapsed = max(now - last_time, 1)
        flows["rate_bps"] = (delivered - previous) * 8 / (elapsed / 1e12)
        self._flow_stats_last = (now, delivered)
        return flows


class SwitchHandle:
    """One switch, as its agent may see and command it. It exposes no other switch and
    no way to reach one except `send`."""

    __slots__ = ("__plane", "__switch", "__ports")

    def __init__(self, plane: ControlPlane, switch: int):
        self.__plane = plane
        self.__switch = switch
        self.__ports = np.flatnonzero(plane.sim.ports()["node"] == switch)

    @property
    def name(self) -> str:
        return self.__plane.ports.names[self.__switch]

    @property
    def num_ports(self) -> int:
        return len(self.__ports)

    @property
    def now(self) -> int:
        return self.__plane.sim.now

    def neighbours(self) -> list[str]:
        """Names of the nodes on this switch's ports, in port order."""
        p = self.__plane.ports
        return [p.names[n] for n in p.neighbours[self.__switch]]

    def ports(self) -> dict[str, np.ndarray]:
        """This switch's rows of the port counters, in port order."""
        return {k: v[self.__ports] for k, v in self.__plane.sim.ports().items()}

    def entries(self) -> dict[str, np.ndarray]:
        table = self.__plane.sim._engine.entry_table()
        mine = table["switch"] == self.__switch
        return {k: v[mine] for k, v in table.items()}

    def install(self, priority: int, **kwargs) -> int:
        """As `Controller.install`, on this switch only."""
        return self.__plane._install(self.__switch, priority, 0, kwargs)

    def delete(self, entry: int) -> None:
        if entry not in self.entries()["entry"]:
            raise ValueError(f"entry {entry} is not on switch '{self.name}'")
        self.__plane._engine_call("delete_entry", 0, self.__switch, entry)

    def select_group(self, group: int, ports: list[int], weights: list[int] | None = None) -> None:
        weights = weights if weights is not None else [1] * len(ports)
        self.__plane._engine_call("set_select_group", 0, self.__switch, group, ports, weights)

    def packet_out(self, event: PacketIn, port: int | None = None) -> None:
        """Releases a packet this switch sent up."""
        if event.switch != self.__switch:
            raise ValueError(f"that packet-in came from another switch, not '{self.name}'")
        self.__plane._claim(event.buffer)
        self.__plane._engine_call("packet_out", 0, event.buffer, port)

    def send(self, to: str, message: Any) -> None:
        """Delivers `message` to the agent on switch `to` after the agent channel's
        latency."""
        self.__plane._send(self.name, to, message)


class SwitchAgent(_Program):
    """A control program on one switch, with that switch's view only."""

    def __init__(self, switch: SwitchHandle):
        self.switch = switch

    def on_packet_in(self, event: PacketIn) -> None:
        """This switch sent a packet up."""

    def on_message(self, sender: str, message: Any) -> None:
        """Another switch's agent sent a message."""


class ControlPlane:
    """Runs control programs against a simulation."""

    def __init__(
        self,
        sim: Simulation,
        *,
        control_latency: int | str = 0,
        agent_latency: int | str = "10us",
    ):
        self.sim = sim
        self.latency = time_ps(control_latency)
        self.agent_latency = time_ps(agent_latency)
        self.ports = PortMap(sim)
        self.controllers: list[Controller] = []
        self.agents: dict[int, SwitchAgent] = {}
        self._timers: dict[int, Callable[[], Any]] = {}
        self._claimed: set[int] = set()

    def add(self, controller: Controller) -> Controller:
        controller._plane = self
        self.controllers.append(controller)
        return controller

    def add_agents(
        self, agent_type: type[SwitchAgent], switches: list[int | str] | None = None, **kwargs
    ) -> list[SwitchAgent]:
        """One `agent_type(handle, **kwargs)` per switch (default: every switch)."""
        chosen = (
            [self.ports.node(s) for s in switches]
            if switches is not None
            else [i for i, kind in enumerate(self.ports.kinds) if kind == "switch"]
        )
        made = []
        for switch in chosen:
            if self.ports.kinds[switch] != "switch":
                raise ValueError(f"'{self.ports.names[switch]}' is a host; agents run on switches")
            agent = agent_type(SwitchHandle(self, switch), **kwargs)
            agent._plane = self
            self.agents[switch] = agent
            made.append(agent)
        return made

    def set_miss(self, switch: int | str, miss: str) -> None:
        """What `switch` does on a table miss: "route", "controller" or "drop"."""
        self.sim._engine.set_miss(self.ports.node(switch), miss)

    # ---- running -----------------------------------------------------------------------

    def run(self, until: int | str, *, stop_when_flows_finish: bool = False) -> bool:
        """Runs the simulation to `until` with the programs in the loop; returns whether
        every flow has finished."""
        engine = self.sim._engine
        end = time_ps(until)
        engine.attach_control(True)
        try:
            for program in [*self.controllers, *self.agents.values()]:
                program.on_start()
            while engine.run_until_control(end, stop_when_flows_finish):
                self._dispatch(engine.take_control_events())
        finally:
            engine.attach_control(False)
        return engine.unfinished_flows == 0

    def _dispatch(self, columns: dict[str, np.ndarray]) -> None:
        flows = self.sim.flows() if np.any(columns["kind"] == 2) else {}
        for event in decode(columns, flows):
            if isinstance(event, Tick):
                self._timers[event.timer]()
            elif isinstance(event, PacketIn):
                self._packet_in(event)
            else:
                name = {
                    FlowArrival: "on_flow_arrival",
                    FlowFinished: "on_flow_finished",
                    EntryRemoved: "on_entry_removed",
                }[type(event)]
                for controller in self.controllers:
                    getattr(controller, name)(event)

    def _packet_in(self, event: PacketIn) -> None:
        for controller in self.controllers:
            controller.on_packet_in(event)
        agent = self.agents.get(event.switch)
        if agent is not None:
            agent.on_packet_in(event)
        if event.buffer not in self._claimed:
            # Nobody took the packet: it is dropped, not kept forever.
            self.sim._engine.drop_buffer(0, event.buffer)
        self._claimed.discard(event.buffer)

    # ---- plumbing for the programs -------------------------------------------------------

    def _timer(self, first: int, period: int | None, callback: Callable[[], Any]) -> int:
        timer = self.sim._engine.add_control_timer(first, period)
        self._timers[timer] = callback
        return timer

    def _engine_call(self, method: str, extra_delay: int | str, *args, **kwargs) -> None:
        getattr(self.sim._engine, method)(self.latency + time_ps(extra_delay), *args, **kwargs)

    def _install(self, switch: int, priority: int, extra_delay: int | str, kwargs: dict) -> int:
        for key in ("idle_timeout", "hard_timeout"):
            if kwargs.get(key) is not None:
                kwargs[key] = time_ps(kwargs[key])
        unknown = set(kwargs) - _ENTRY_FIELDS
        if unknown:
            raise ValueError(
                f"unknown entry field(s) {', '.join(sorted(unknown))}; "
                f"use {', '.join(sorted(_ENTRY_FIELDS))}"
            )
        delay = self.latency + time_ps(extra_delay)
        return self.sim._engine.add_entry(delay, switch, priority, **kwargs)

    def _claim(self, buffer: int) -> None:
        self._claimed.add(buffer)

    def _send(self, sender: str, to: str, message: Any) -> None:
        target = self.ports.node(to)
        if target not in self.agents:
            raise ValueError(f"no agent runs on '{to}'")
        agent = self.agents[target]
        self._timer(
            self.sim.now + self.agent_latency, None, lambda: agent.on_message(sender, message)
        )


_ENTRY_FIELDS = {
    "in_port",
    "src",
    "dst",
    "proto",
    "src_port",
    "dst_port",
    "flow",
    "output",
    "group",
    "drop",
    "controller",
    "set_priority",
    "meter",
    "idle_timeout",
    "hard_timeout",
}
