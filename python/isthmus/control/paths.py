"""Paths between hosts as control programs enumerate them: every fewest-hop path, and
the k shortest loop-free paths. Hosts never relay; results are cached per host pair and
come in a fixed order, so apps that pick "the first path that fits" are deterministic."""

from __future__ import annotations

import itertools

import networkx as nx

from isthmus.arguments import shown, whole
from isthmus.control.routing import next_hop_ports
from isthmus.portmap import PortMap

# The most paths `k_shortest` lists: far more than any scheme spreads a flow over.
MAX_PATHS = 10_000


class Paths:
    def __init__(self, ports: PortMap):
        self._ports = ports
        self._hops: dict[tuple[int, int], list[int]] | None = None
        self._shortest: dict[tuple[int, int], list[list[int]]] = {}
        self._graph: nx.Graph | None = None

    def _check(self, src: int, dst: int) -> None:
        hosts = len(self._ports.host_node)
        for name, host in (("src", src), ("dst", dst)):
            if isinstance(host, bool) or not isinstance(host, int) or not 0 <= host < hosts:
                raise ValueError(
                    f"{name} must be a host number in 0..{hosts - 1}, got {shown(host)}"
                )
        if src == dst:
            raise ValueError(f"src and dst are the same host ({src}): there is no path")

    def shortest(self, src: int, dst: int) -> list[list[int]]:
        """Every fewest-hop path from host `src` to host `dst` (node indices)."""
        self._check(src, dst)
        key = (src, dst)
        if key not in self._shortest:
            if self._hops is None:
                self._hops = next_hop_ports(self._ports)
            ports, hops = self._ports, self._hops
            goal = ports.host_node[dst]

            def extend(path: list[int]) -> list[list[int]]:
                node = path[-1]
                if node == goal:
                    return [path]
                return [
                    p
                    for port in hops[(node, dst)]
                    for p in extend([*path, ports.neighbours[node][port]])
                ]

            start = ports.host_node[src]
            self._shortest[key] = extend([start, ports.neighbours[start][0]])
        return [list(p) for p in self._shortest[key]]

    def k_shortest(self, src: int, dst: int, k: int) -> list[list[int]]:
        """Up to `k` loop-free paths from host `src` to host `dst`, shortest first, ties
        in a fixed order (node indices)."""
        self._check(src, dst)
        k = whole(k, "k", 1, MAX_PATHS, "paths to list")
        ports = self._ports
        if self._graph is None:
            graph = nx.Graph()
            for node, peers in enumerate(ports.neighbours):
                for peer in peers:
                    graph.add_edge(node, peer)
            self._graph = graph
        # Other hosts may not relay: search on the switches plus the two end hosts.
        a, b = ports.host_node[src], ports.host_node[dst]
        keep = [n for n, kind in enumerate(ports.kinds) if kind == "switch" or n in (a, b)]
        view = self._graph.subgraph(keep)
        return [list(p) for p in itertools.islice(nx.shortest_simple_paths(view, a, b), k)]
