"""The port map: which local port of each node faces which neighbour, as the engine
numbers them and control programs see them."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from isthmus.arguments import shown

if TYPE_CHECKING:  # built from a simulation or a control seam; only its topology is read
    from isthmus.control.seam import Seam
    from isthmus.simulation import Simulation


class PortMap:
    """Local port numbers between neighbouring nodes: port k of a node faces the k-th
    link touching it, in the topology's link order."""

    def __init__(self, network: Simulation | Seam):
        nodes = network.topology.nodes()
        links = network.topology.links()
        self.names: list[str] = list(nodes["name"])
        self.index = {name: i for i, name in enumerate(self.names)}
        self.kinds: list[str] = list(nodes["kind"])
        self.host_node = [int(n) for n in nodes["host_node"]]
        self.neighbours: list[list[int]] = [[] for _ in self.names]
        for a, b in zip(links["a"].tolist(), links["b"].tolist(), strict=True):
            self.neighbours[a].append(b)
            self.neighbours[b].append(a)

    @functools.cached_property
    def switch_ports(self) -> frozenset[tuple[int, int]]:
        """Every (switch node, local port), by number."""
        return frozenset(
            (node, port)
            for node, kind in enumerate(self.kinds)
            if kind == "switch"
            for port in range(len(self.neighbours[node]))
        )

    def node(self, node: int | str, name: str = "node") -> int:
        """The index of `node` (a name or a node number); `name` is the argument it came
        as, for the message if it names no node."""
        if isinstance(node, str):
            if node not in self.index:
                raise ValueError(f"{name}: no node named {shown(node)} in the topology")
            return self.index[node]
        if isinstance(node, bool) or not isinstance(node, int | np.integer):
            raise ValueError(f"{name} must be a node name or number, got {shown(node)}")
        if not 0 <= node < len(self.names):
            raise ValueError(
                f"{name}: node {node} does not exist; nodes are numbered 0..{len(self.names) - 1}"
            )
        return int(node)

    def port_towards(self, node: int, neighbour: int) -> int:
        try:
            return self.neighbours[node].index(neighbour)
        except ValueError:
            raise ValueError(
                f"'{self.names[node]}' has no link to '{self.names[neighbour]}'"
            ) from None

    def peer(self, node: int | str, port: int) -> tuple[int, int]:
        """(neighbour node, its port) at the other end of `node`'s local port `port`."""
        index = self.node(node)
        if isinstance(port, bool) or not isinstance(port, int | np.integer):
            raise ValueError(f"port must be a local port number, got {shown(port)}")
        if not 0 <= port < len(self.neighbours[index]):
            raise ValueError(
                f"port {port} does not exist on '{self.names[index]}' "
                f"(it has ports 0..{len(self.neighbours[index]) - 1})"
            )
        other = self.neighbours[index][port]
        # Parallel links: the k-th link between the two ends pairs with the k-th back.
        nth = self.neighbours[index][:port].count(other)
        back = [p for p, n in enumerate(self.neighbours[other]) if n == index][nth]
        return other, back

    def port_map(self) -> dict[tuple[str, int], tuple[str, int]]:
        """(node, local port) -> (neighbour, its port), by node name, for every port."""
        return {
            (self.names[n], port): (self.names[peer], back)
            for n in range(len(self.names))
            for port in range(len(self.neighbours[n]))
            for peer, back in [self.peer(n, port)]
        }

    def path_ports(self, path: list[int | str]) -> list[tuple[int, int]]:
        """(switch, egress port) for every switch on a node path from host to host."""
        if not isinstance(path, list | tuple):
            raise ValueError(f"path must be a list of nodes, got {shown(path)}")
        nodes = [self.node(n, f"path[{i}]") for i, n in enumerate(path)]
        if len(nodes) < 3 or self.kinds[nodes[0]] != "host" or self.kinds[nodes[-1]] != "host":
            raise ValueError("a path runs from a host through switches to a host")
        return [
            (nodes[i], self.port_towards(nodes[i], nodes[i + 1])) for i in range(1, len(nodes) - 1)
        ]
