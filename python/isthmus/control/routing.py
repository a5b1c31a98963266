"""Shortest paths over the topology as control programs see it: for every switch and
destination host, the local ports that lie on a fewest-hop path (hosts never relay)."""

from __future__ import annotations

from collections import deque

from isthmus.portmap import PortMap

# Flow entries (and groups) an app may install across the network: the engine keeps
# each in memory (a hundred-odd bytes), and the app installs each by a call.
MAX_INSTALLED_ENTRIES = 10_000_000


def check_installs(app: str, entries: int, why: str) -> None:
    """Refuses an app that would install more than MAX_INSTALLED_ENTRIES entries."""
    if entries > MAX_INSTALLED_ENTRIES:
        raise ValueError(
            f"{app} would install {entries} entries ({why}); at most "
            f"{MAX_INSTALLED_ENTRIES} in the network: use a smaller fabric, or the "
            "engine's built-in routing (network.routing) instead of the app"
        )


def next_hop_ports(ports: PortMap) -> dict[tuple[int, int], list[int]]:
    """(switch node, destination host address) -> egress ports on shortest paths."""
    table: dict[tuple[int, int], list[int]] = {}
    for address, target in enumerate(ports.host_node):
        distance = {target: 0}
        frontier = deque([target])
        while frontier:
            node = frontier.popleft()
            if node != target and ports.kinds[node] == "host":
                continue
            for peer in ports.neighbours[node]:
                if peer not in distance:
                    distance[peer] = distance[node] + 1
                    frontier.append(peer)
        for node, kind in enumerate(ports.kinds):
            if kind != "switch" or node not in distance:
                continue
            table[(node, address)] = [
                port
                for port, peer in enumerate(ports.neighbours[node])
                if distance.get(peer, -1) == distance[node] - 1
                and (peer == target or ports.kinds[peer] == "switch")
            ]
    return table
