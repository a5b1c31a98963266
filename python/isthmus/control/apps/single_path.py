"""Single-path routing: one fixed shortest path per pair of hosts (the "single-path
TCP" baseline of Hedera, MPTCP and OFPT).

1. At start, for every ordered pair of hosts, walk from the source towards the
   destination, at each switch picking one of the shortest-path egress ports with the
   pair's own seeded random draw, so pairs spread over the paths but each pair keeps one.
2. Install an entry `src = a, dst = b -> output port` on every switch of that path.
3. Every packet between a and b, in every flow, then takes that one path.
"""

from __future__ import annotations

import numpy as np

from isthmus.control.apps.parameters import Priority, checked
from isthmus.control.plane import Controller
from isthmus.control.routing import check_installs, next_hop_ports


class SinglePath(Controller):
    @checked
    def __init__(self, priority: Priority = 1):
        self.priority = priority

    def on_attach(self) -> None:
        hosts = len(self.ports.host_node)
        why = f"one or more per ordered pair of hosts: {hosts} x {hosts - 1} at least"
        check_installs("single-path routing", hosts * (hosts - 1), why)

    def on_start(self) -> None:
        ports = self.ports
        hops = next_hop_ports(ports)
        rng = np.random.default_rng([self.seed, 0x5199])
        hosts = len(ports.host_node)
        for src in range(hosts):
            for dst in range(hosts):
                if src != dst:
                    self._install_pair(src, dst, hops, rng)

    def _install_pair(self, src: int, dst: int, hops: dict, rng: np.random.Generator) -> None:
        ports = self.ports
        node = ports.neighbours[ports.host_node[src]][0]
        target = ports.host_node[dst]
        while node != target:
            choices = hops[(node, dst)]
            port = choices[int(rng.integers(len(choices)))]
            self.install(node, self.priority, src=src, dst=dst, output=port)
            node = ports.neighbours[node][port]
