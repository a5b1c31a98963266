"""What a control program may ask of the network, one typed object per kind of command.

A controller builds a command and hands it to `ControlPlane.issue`, which checks it
against the network (`checked`: names resolved to node indices, ports to the ports the
switch has, rates and sizes to engine units, every value in its range, a wrong one named
with the fix) and sends it through the plane's seam to whatever carries it out: the
engine here, switches over OpenFlow elsewhere. A command says what should hold, never
how the back-end gets there: `SetAqm` changes a port's marking and nothing else, so no
program reads a configuration, edits it and writes it back.

The methods of `Controller` and `SwitchHandle` (`install`, `set_ecn`, `pace`, ...) build
these objects; a program may also build them itself.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from isthmus import arguments
from isthmus.arguments import MAX_GROUP_ID, MAX_METER_ID, U8, U16, U32, whole
from isthmus.portmap import PortMap
from isthmus.queues import queue_config
from isthmus.simulation import ENTRY_ACTION, ENTRY_FIELDS, entry_fields


class Command(ABC):
    """A request to the network; `checked` returns it in engine terms or raises a
    ValueError naming the field."""

    @abstractmethod
    def checked(self, net: PortMap) -> Command:
        """This command with every field checked against `net`, in engine terms."""


# ---- flow table ------------------------------------------------------------------------


@dataclass(frozen=True)
class InstallEntry(Command):
    """A flow entry on `switch`. `fields`: match (in_port, src, dst, proto, src_port,
    dst_port, flow), action (output=port, group=id, drop=True, controller=True,
    flood=True, or none for default routing), and optional set_priority, meter,
    idle_timeout, hard_timeout. The back-end answers with the entry's id."""

    switch: int | str
    priority: int
    fields: Mapping[str, Any] = field(default_factory=dict)

    def checked(self, net: PortMap) -> InstallEntry:
        node = switch_node(net, self.switch)
        priority = whole(self.priority, "priority", 0, U16, "an entry's priority")
        checked = entry_fields(
            dict(self.fields), ENTRY_FIELDS, net.names[node], len(net.neighbours[node])
        )
        return InstallEntry(node, priority, checked)


@dataclass(frozen=True)
class DeleteEntry(Command):
    switch: int | str
    entry: int

    def checked(self, net: PortMap) -> DeleteEntry:
        return DeleteEntry(switch_node(net, self.switch), _entry(self.entry))


@dataclass(frozen=True)
class ModifyEntry(Command):
    """Replaces an entry's action (output, group, drop, controller, flood, or none for
    default routing; set_priority, meter), keeping its match, priority and counters."""

    switch: int | str
    entry: int
    action: Mapping[str, Any] = field(default_factory=dict)

    def checked(self, net: PortMap) -> ModifyEntry:
        node = switch_node(net, self.switch)
        action = entry_fields(
            dict(self.action), ENTRY_ACTION, net.names[node], len(net.neighbours[node])
        )
        return ModifyEntry(node, _entry(self.entry), action)


@dataclass(frozen=True)
class RetirePath(Command):
    """Takes a migrated flow off its old path without loss: the first of `entries`
    ((switch, entry) pairs, first hop first) goes at once, the rest once the packets
    already past the first hop have left the path."""

    flow: int
    entries: Sequence[tuple[int | str, int]]

    def checked(self, net: PortMap) -> RetirePath:
        entries = self.entries
        if isinstance(entries, str | bytes) or not hasattr(entries, "__iter__"):
            raise ValueError(
                "old must be the flow's (switch, entry) pairs from install_path, got "
                f"{arguments.shown(entries)}"
            )
        entries = list(entries)
        if not entries:
            raise ValueError("old: migrate needs the flow's old entries (from install_path)")
        retired = []
        for i, pair in enumerate(entries):
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise ValueError(
                    f"old[{i}] must be a (switch, entry) pair, got {arguments.shown(pair)}"
                )
            node = switch_node(net, pair[0], f"old[{i}]'s switch")
            retired.append((node, whole(pair[1], f"old[{i}]'s entry", 0, U32, "an entry id")))
        return RetirePath(_flow(self.flow), retired)


# ---- groups, meters, flooding ------------------------------------------------------------


@dataclass(frozen=True)
class SetSelectGroup(Command):
    """Group `group` hashes flows over `ports` in proportion to `weights` (default:
    equal)."""

    switch: int | str
    group: int
    ports: Sequence[int]
    weights: Sequence[int] | None = None

    def checked(self, net: PortMap) -> SetSelectGroup:
        node = switch_node(net, self.switch)
        group = whole(self.group, "group", 0, MAX_GROUP_ID, "a group id")
        ports = local_ports(net, node, self.ports, "ports")
        weights = [1] * len(ports) if self.weights is None else self.weights
        weights = arguments.whole_list(weights, "weights", 0, U32, "a weight")
        if len(weights) != len(ports):
            raise ValueError(
                f"weights: give one weight per port ({len(ports)} ports, {len(weights)} weights)"
            )
        if not any(weights):
            raise ValueError("weights: a select group needs at least one weight above zero")
        return SetSelectGroup(node, group, ports, weights)


@dataclass(frozen=True)
class SetFailoverGroup(Command):
    """Group `group` sends out of the first of `ports` whose link is up."""

    switch: int | str
    group: int
    ports: Sequence[int]

    def checked(self, net: PortMap) -> SetFailoverGroup:
        node = switch_node(net, self.switch)
        group = whole(self.group, "group", 0, MAX_GROUP_ID, "a group id")
        return SetFailoverGroup(node, group, local_ports(net, node, self.ports, "ports"))


@dataclass(frozen=True)
class SetMeter(Command):
    """Meter `meter` polices to `rate` with a `burst` bucket."""

    switch: int | str
    meter: int
    rate: int | str
    burst: int | str = "15KB"

    def checked(self, net: PortMap) -> SetMeter:
        node = switch_node(net, self.switch)
        meter = whole(self.meter, "meter", 0, MAX_METER_ID, "a meter id")
        return SetMeter(
            node, meter, arguments.rate(self.rate, "rate"), arguments.size(self.burst, "burst")
        )


@dataclass(frozen=True)
class SetFloodPorts(Command):
    """Where `switch` floods (a spanning tree's ports, to keep floods loop-free)."""

    switch: int | str
    ports: Sequence[int]

    def checked(self, net: PortMap) -> SetFloodPorts:
        node = switch_node(net, self.switch)
        return SetFloodPorts(node, local_ports(net, node, self.ports, "ports", min_length=0))


# ---- packet-ins ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PacketOut(Command):
    """A packet-in's packet out of `port`, or back through the flow table with None."""

    buffer: int
    port: int | None = None

    def checked(self, net: PortMap) -> PacketOut:
        port = arguments.optional_whole(self.port, "port", 0, U16, "a local port")
        return PacketOut(_buffer(self.buffer), port)


@dataclass(frozen=True)
class FloodOut(Command):
    """A packet-in's packet out of every flood port of its switch but its own."""

    buffer: int

    def checked(self, net: PortMap) -> FloodOut:
        return FloodOut(_buffer(self.buffer))


@dataclass(frozen=True)
class DropBuffer(Command):
    buffer: int

    def checked(self, net: PortMap) -> DropBuffer:
        return DropBuffer(_buffer(self.buffer))


# ---- hosts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hold(Command):
    """Stops a flow's sender from sending new data (data already sent still flows)."""

    flow: int

    def checked(self, net: PortMap) -> Hold:
        return Hold(_flow(self.flow))


@dataclass(frozen=True)
class Release(Command):
    flow: int

    def checked(self, net: PortMap) -> Release:
        return Release(_flow(self.flow))


@dataclass(frozen=True)
class Pace(Command):
    """Spaces a flow's packets at `rate` (None: unpaced)."""

    flow: int
    rate: int | str | None

    def checked(self, net: PortMap) -> Pace:
        bps = None if self.rate is None else arguments.rate(self.rate, "rate")
        return Pace(_flow(self.flow), bps)


@dataclass(frozen=True)
class PaceSubflow(Command):
    """Spaces MPTCP connection `flow`'s subflow `subflow` at `rate`: 0 gives it no new
    data, None lets its window decide."""

    flow: int
    subflow: int
    rate: int | str | None

    def checked(self, net: PortMap) -> PaceSubflow:
        subflow = whole(self.subflow, "subflow", 0, U8, "a subflow of an MPTCP connection")
        rate = self.rate
        bps = None if rate is None else 0 if rate == 0 else arguments.rate(rate, "rate")
        return PaceSubflow(_flow(self.flow), subflow, bps)


# ---- links and queues ------------------------------------------------------------------------


@dataclass(frozen=True)
class SetLink(Command):
    link: int
    up: bool

    def checked(self, net: PortMap) -> SetLink:
        link = whole(self.link, "link", 0, U32, "a link index of topology.links()")
        return SetLink(link, arguments.flag(self.up, "up"))


@dataclass(frozen=True)
class ConfigureQueue(Command):
    """Replaces the whole queueing (limit, `isthmus.queues` scheduler and AQM) of one
    port of `switch` (None: every port)."""

    switch: int | str
    limit: str
    scheduler: Mapping[str, Any] | None = None
    aqm: Mapping[str, Any] | None = None
    port: int | None = None

    def checked(self, net: PortMap) -> ConfigureQueue:
        node = switch_node(net, self.switch)
        port = None if self.port is None else local_port(net, node, self.port)
        return ConfigureQueue(node, self.limit, self.scheduler, self.aqm, port)

    def config(self) -> dict:
        """The engine's form of the queueing."""
        return queue_config(self.limit, self.scheduler, self.aqm)


@dataclass(frozen=True)
class SetAqm(Command):
    """Changes only the AQM (an `isthmus.queues` AQM, e.g. `ramp_marker`) of one port of
    `switch` (None: every port), of every class's queue (`traffic_class` None: per-class
    settings go) or of one class's; each port keeps its own scheduler and limit."""

    switch: int | str
    aqm: Mapping[str, Any]
    port: int | None = None
    traffic_class: int | None = None

    def checked(self, net: PortMap) -> SetAqm:
        node = switch_node(net, self.switch)
        port = None if self.port is None else local_port(net, node, self.port)
        traffic_class = self.traffic_class
        if traffic_class is not None:
            traffic_class = whole(traffic_class, "traffic_class", 0, U8, "a traffic class")
        if not isinstance(self.aqm, Mapping) or "kind" not in self.aqm:
            raise ValueError(
                "aqm must be an AQM from isthmus.queues (drop_tail(), ramp_marker(...), "
                f"red(...), ...), got {arguments.shown(self.aqm)}"
            )
        return SetAqm(node, dict(self.aqm), port, traffic_class)


@dataclass(frozen=True)
class SetBcnPredictions(Command):
    """Predicted queue values (packets) for BCN congestion points keyed (switch, port),
    all in one command: the class most of them fall in decides each point's feedback
    and their mean replaces the queue in e (IBCN); None measures again."""

    predictions: Mapping[tuple[int | str, int], Sequence[float] | None]

    def checked(self, net: PortMap) -> SetBcnPredictions:
        predictions = self.predictions
        if not isinstance(predictions, Mapping):
            raise ValueError(
                "predictions must be a dict {(switch, port): [queue values] or None}, "
                f"got {arguments.shown(predictions)}"
            )
        points: dict[tuple[int | str, int], Sequence[float] | None] = {}
        known = net.switch_ports
        for key, values in predictions.items():
            # A program predicting every port each poll sends thousands of values: the
            # common forms (a (node, port) pair of ints, a list of floats) pass on a
            # quick look; anything else gets the full check and its message.
            if (
                type(key) is tuple
                and len(key) == 2
                and type(key[0]) is int
                and type(key[1]) is int
                and key in known
            ):
                node, port = key
                if type(values) is list and all(
                    type(v) is float and 0.0 <= v < math.inf for v in values
                ):
                    points[key] = list(values)
                    continue
            elif not isinstance(key, tuple) or len(key) != 2:
                raise ValueError(
                    f"predictions: each key is a (switch, port) pair, got {arguments.shown(key)}"
                )
            else:
                node = switch_node(net, key[0], "predictions' switch")
                port = local_port(net, node, key[1], "predictions' port")
            if values is not None:
                if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
                    raise ValueError(
                        f"predictions[{key!r}] must be a list of queue values (packets) or "
                        f"None, got {arguments.shown(values)}"
                    )
                values = [
                    queue_value(v, f"predictions[{key!r}][{i}]") for i, v in enumerate(values)
                ]
            points[(node, port)] = values
        return SetBcnPredictions(points)


# ---- checks shared by the commands -------------------------------------------------------------


def switch_node(net: PortMap, switch: object, name: str = "switch") -> int:
    """The node index of switch `switch` (a name or a node number)."""
    node = net.node(switch, name)
    if net.kinds[node] != "switch":
        raise ValueError(f"{name}: '{net.names[node]}' is a host, not a switch")
    return node


def local_port(net: PortMap, node: int, port: object, name: str = "port") -> int:
    """A local port of `node`, checked against the ports it has."""
    last = len(net.neighbours[node]) - 1
    return whole(port, name, 0, last, f"a port of switch '{net.names[node]}'")


def local_ports(
    net: PortMap, node: int, ports: object, name: str, min_length: int = 1
) -> list[int]:
    """A list of local ports of `node`, checked against the ports it has."""
    last = len(net.neighbours[node]) - 1
    where = f"a port of switch '{net.names[node]}'"
    return arguments.whole_list(ports, name, 0, last, where, min_length=min_length)


def queue_value(value: object, name: str) -> float:
    """A queue size in packets, as BCN predictions give them."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not (math.isfinite(value) and value >= 0)
    ):
        raise ValueError(
            f"{name}: predicted BCN queues must be finite, non-negative numbers of packets, "
            f"got {arguments.shown(value)}"
        )
    return float(value)


def _entry(entry: object) -> int:
    return whole(entry, "entry", 0, U32, "an entry id")


def _flow(flow: object) -> int:
    return whole(flow, "flow", 0, U32, "a flow id")


def _buffer(buffer: object) -> int:
    return whole(buffer, "buffer", 0, U32, "a packet-in's buffer")
