"""L2 learning switch: the default behaviour of Ryu's "simple switch", made loop-safe.

1. At start, send every table miss to the controller, and compute a spanning tree of
   the switches (breadth-first from the first switch); each switch floods only out of
   its host ports and its tree links, so a flood reaches every host exactly once even
   on rings and meshes.
2. On a packet-in at switch s from port p: learn that the packet's source host sits
   behind p at s.
3. If the destination has been learned at s, install an entry (in_port = p, src, dst
   -> the learned port) and send the packet there; otherwise flood it.
4. Every later packet of that host pair through s takes the entry, without the
   controller.

Addresses are host numbers (the simulator's stand-in for MAC addresses).
"""

from __future__ import annotations

from collections import deque

from isthmus.control.apps.parameters import Period, Priority, checked
from isthmus.control.events import PacketIn
from isthmus.control.plane import Controller


class L2Learning(Controller):
    @checked
    def __init__(self, priority: Priority = 1, idle_timeout: Period | None = None):
        self.priority = priority
        self.idle_timeout = idle_timeout
        self.learned: dict[int, dict[int, int]] = {}
        self.packet_ins = 0
        self.floods = 0

    def on_start(self) -> None:
        ports = self.ports
        switches = [i for i, kind in enumerate(ports.kinds) if kind == "switch"]
        tree = self.spanning_tree(switches)
        for switch in switches:
            self.set_miss(switch, "controller")
            flood = [
                port
                for port, peer in enumerate(ports.neighbours[switch])
                if ports.kinds[peer] == "host" or (switch, peer) in tree
            ]
            self.set_flood_ports(switch, flood)
            self.learned[switch] = {}

    def spanning_tree(self, switches: list[int]) -> set[tuple[int, int]]:
        """Links (both directions) of a breadth-first spanning tree of the switches."""
        ports = self.ports
        edges: set[tuple[int, int]] = set()
        seen = {switches[0]}
        frontier = deque([switches[0]])
        while frontier:
            node = frontier.popleft()
            for peer in ports.neighbours[node]:
                if ports.kinds[peer] == "switch" and peer not in seen:
                    seen.add(peer)
                    edges |= {(node, peer), (peer, node)}
                    frontier.append(peer)
        return edges

    def on_packet_in(self, event: PacketIn) -> None:
        self.packet_ins += 1
        table = self.learned[event.switch]
        table[event.src] = event.in_port
        out = table.get(event.dst)
        if out is None:
            self.floods += 1
            self.flood(event.buffer)
            return
        self.install(
            event.switch,
            self.priority,
            in_port=event.in_port,
            src=event.src,
            dst=event.dst,
            output=out,
            idle_timeout=self.idle_timeout,
        )
        self.packet_out(event.buffer, out)
