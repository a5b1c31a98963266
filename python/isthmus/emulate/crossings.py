"""Per-flow counters on an emulated switch (`SwitchHandle.watch_flows`): what it forwarded
of each flow direction, by which port each came in and by which it left, read from the
switch's own OpenFlow counters.

A watched switch counts every direction of the scenario's flows twice, in two tables of
its own (`isthmus.emulate.seam`'s pipeline): on the way in, one entry per (direction,
ingress port) in the first table; on the way out, one entry per (direction, egress
port) in the last, which every output of the pipeline passes through (the output port
rides in a register). Neither changes where a packet goes. Counters are read when a
program asks and every `POLL_PS` while the network runs; a direction's times are those
of the reads that saw its counters grow, so `first_ps` and `last_ps` are at most one
read late (and Open vSwitch's counters lag its datapath by up to `COUNT_MS`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isthmus.control.events import FlowCrossing
from isthmus.emulate.network import host_mac
from isthmus.emulate.system import EmulationError

POLL_PS = 200_000_000_000
"""How often the run reads a watched switch's flow counters (0.2 s)."""
COUNT_MS = 100
"""How often Open vSwitch adds its datapath's packets to the OpenFlow counters while
flows are watched (ms; 500 by default): a count read lags the packets by at most this."""
MAX_ENTRIES = 50_000
"""The most counting entries a watched switch holds (two per direction and port)."""
WATCH_BIT = 1 << 63
"""Set in the cookie of every counting entry, and in no other entry's."""
EGRESS_BIT = 1 << 62
PORT_BITS = 16
TRANSPORT_MATCH = {6: ("tcp_src", "tcp_dst"), 17: ("udp_src", "udp_dst")}


@dataclass(frozen=True)
class Direction:
    """One way of one flow: its packets from host `src` to host `dst`."""

    flow: int
    src: int
    dst: int
    src_port: int
    dst_port: int
    proto: int

    def match(self) -> dict:
        names = TRANSPORT_MATCH[self.proto]
        return {
            "eth_src": host_mac(self.src),
            "eth_dst": host_mac(self.dst),
            "eth_type": 0x0800,
            "ip_proto": self.proto,
            names[0]: self.src_port,
            names[1]: self.dst_port,
        }


def directions(flows: dict[str, np.ndarray]) -> list[Direction]:
    """Both ways of each of the scenario's flows, in flow order: its data, then what
    comes back (a TCP flow's acknowledgements; nothing for a UDP stream)."""
    out = []
    for flow in range(len(flows["src"])):
        src, dst = int(flows["src"][flow]), int(flows["dst"][flow])
        sport, dport = int(flows["src_port"][flow]), int(flows["dst_port"][flow])
        proto = 17 if bool(flows["datagram"][flow]) else 6
        out.append(Direction(flow, src, dst, sport, dport, proto))
        out.append(Direction(flow, dst, src, dport, sport, proto))
    return out


def cookie(index: int, port: int, *, egress: bool) -> int:
    """The cookie of the counting entry of direction `index` at local port `port`."""
    return WATCH_BIT | (EGRESS_BIT if egress else 0) | index << PORT_BITS | port


def decode(value: int) -> tuple[int, int, bool]:
    """(direction index, local port, egress) of a counting entry's cookie."""
    return (
        (value & ~(WATCH_BIT | EGRESS_BIT)) >> PORT_BITS,
        value & ((1 << PORT_BITS) - 1),
        bool(value & EGRESS_BIT),
    )


@dataclass
class _Seen:
    """What the reads so far saw of one direction at one switch."""

    first_ps: int
    last_ps: int
    in_port: int
    out_port: int
    ingress: dict[int, int] = field(default_factory=dict)
    """Packets counted in, by port."""
    egress: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Packets and bytes counted out, by port."""


class FlowWatch:
    """One watched switch's counting entries and what their counters showed."""

    def __init__(self, switch: int, name: str, num_ports: int, ways: list[Direction]):
        entries = 2 * len(ways) * num_ports
        if entries > MAX_ENTRIES:
            raise EmulationError(
                f"watching the flows of '{name}' takes {entries} counting entries (two per "
                f"flow direction and port), more than the {MAX_ENTRIES} an emulated switch "
                "is given; watch fewer switches' flows or emulate fewer flows"
            )
        self.switch = switch
        self.num_ports = num_ports
        self.ways = ways
        self._seen: dict[int, _Seen] = {}

    def entries(self) -> list[tuple[int, bool, dict]]:
        """(cookie, egress, match) of every counting entry; the match leaves out the
        port, which the caller puts in its place (ingress port, or output register)."""
        return [
            (cookie(i, port, egress=egress), egress, way.match() | {"port": port})
            for i, way in enumerate(self.ways)
            for egress in (False, True)
            for port in range(self.num_ports)
        ]

    def update(self, counters: list[tuple[int, int, int]], now: int) -> list[FlowCrossing]:
        """Folds one read of every counting entry, (cookie, packets, bytes), in; returns
        the crossing of each direction seen for the first time."""
        grown_in: dict[int, dict[int, int]] = {}
        grown_out: dict[int, dict[int, int]] = {}
        totals_in: dict[int, dict[int, int]] = {}
        totals_out: dict[int, dict[int, tuple[int, int]]] = {}
        for value, packets, octets in counters:
            index, port, egress = decode(value)
            if not packets:
                continue
            seen = self._seen.get(index)
            if egress:
                before = seen.egress.get(port, (0, 0))[0] if seen else 0
                totals_out.setdefault(index, {})[port] = (packets, octets)
                if packets > before:
                    grown_out.setdefault(index, {})[port] = packets - before
            else:
                before = seen.ingress.get(port, 0) if seen else 0
                totals_in.setdefault(index, {})[port] = packets
                if packets > before:
                    grown_in.setdefault(index, {})[port] = packets - before
        events = []
        for index in sorted(grown_in.keys() | grown_out.keys()):
            seen = self._seen.get(index)
            ins, outs = grown_in.get(index, {}), grown_out.get(index, {})
            if seen is None:
                # A direction some read saw arrive and not yet leave has no egress yet.
                if not ins or not outs:
                    continue
                seen = self._seen[index] = _Seen(now, now, _most(ins), _most(outs))
                way = self.ways[index]
                events.append(FlowCrossing(now, self.switch, way.flow, way.src, seen.in_port))
            seen.last_ps = now
            if ins:
                seen.in_port = _most(ins)
            if outs:
                seen.out_port = _most(outs)
        for index, seen in self._seen.items():
            seen.ingress.update(totals_in.get(index, {}))
            seen.egress.update(totals_out.get(index, {}))
        return events

    def rows(self) -> dict[str, np.ndarray]:
        """The simulator's crossing table: one row per direction seen, by first seen."""
        order = sorted(self._seen, key=lambda i: (self._seen[i].first_ps, self.ways[i].flow, i))
        ways, seen = [self.ways[i] for i in order], [self._seen[i] for i in order]
        return {
            "flow": np.array([w.flow for w in ways], dtype=np.uint32),
            "src": np.array([w.src for w in ways], dtype=np.uint32),
            "dst": np.array([w.dst for w in ways], dtype=np.uint32),
            "in_port": np.array([s.in_port for s in seen], dtype=np.uint16),
            "out_port": np.array([s.out_port for s in seen], dtype=np.uint16),
            "packets": np.array([sum(p for p, _ in s.egress.values()) for s in seen], np.uint64),
            "bytes": np.array([sum(b for _, b in s.egress.values()) for s in seen], np.uint64),
            "first_ps": np.array([s.first_ps for s in seen], dtype=np.uint64),
            "last_ps": np.array([s.last_ps for s in seen], dtype=np.uint64),
        }


def _most(grown: dict[int, int]) -> int:
    """The port most of the newest packets took (the lowest of equals)."""
    return min(grown, key=lambda port: (-grown[port], port))
