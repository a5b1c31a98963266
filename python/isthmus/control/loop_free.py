"""Which ports a switch may send a packet for a host out of, from its own distance
vector alone, so that per-switch choices never form a forwarding loop.

A switch knows, as any routing protocol's table tells it, how many hops a packet for
host h travels if it leaves by port p (`hops_via`, ports × hosts): one plus the
neighbour's own distance to h. Its own distance is the least over its ports. Port p is
allowed for h when the neighbour behind it is

1. strictly closer to h (a shortest-path port), or
2. exactly as far as this switch, and later in the name order of switches.

Each hop then lowers (distance to h, minus the name's rank) in lexicographic order, so
a packet can never return to a switch it crossed, whatever each switch picks among its
allowed ports and whenever it changes its mind: loop freedom is a property of the
rule, not of agreement between switches. Switches that only follow shortest paths keep
it too. Rule 2 is what lets a flow take a longer way round (on a ring, the far side).
Hosts never relay: a port to a host is allowed only for that host.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from isthmus.portmap import PortMap

UNREACHABLE = np.iinfo(np.int32).max // 2


def node_host_distances(ports: PortMap) -> np.ndarray:
    """Hops from every node to every host (nodes × hosts) through switches only;
    UNREACHABLE where no such path exists. A host is 0 hops from itself."""
    distances = np.full((len(ports.names), len(ports.host_node)), UNREACHABLE, dtype=np.int32)
    for host, node in enumerate(ports.host_node):
        distances[node, host] = 0
        frontier = deque([node])
        while frontier:
            at = frontier.popleft()
            if at != node and ports.kinds[at] != "switch":
                continue  # another host: it receives but never relays
            for peer in ports.neighbours[at]:
                if distances[peer, host] == UNREACHABLE:
                    distances[peer, host] = distances[at, host] + 1
                    frontier.append(peer)
    return distances


def hops_via_ports(ports: PortMap, distances: np.ndarray, switch: int) -> np.ndarray:
    """(ports × hosts) hops to each host leaving `switch` by each of its ports."""
    via = np.full((len(ports.neighbours[switch]), distances.shape[1]), UNREACHABLE, np.int32)
    for port, peer in enumerate(ports.neighbours[switch]):
        if ports.kinds[peer] == "switch":
            via[port] = np.minimum(distances[peer] + 1, UNREACHABLE)
        else:
            via[port, ports.host_node.index(peer)] = 1
    return via


def allowed_ports(hops_via: np.ndarray, own_name: str, neighbour_names: list[str]) -> np.ndarray:
    """(ports × hosts) booleans: may a packet for host h leave by port p (see the
    module docstring)."""
    if hops_via.shape[0] != len(neighbour_names):
        raise ValueError(
            f"hops_via has {hops_via.shape[0]} ports but {len(neighbour_names)} neighbour "
            "names were given; give one name per port"
        )
    own = hops_via.min(axis=0)
    reachable = hops_via < UNREACHABLE
    closer = reachable & (hops_via == own)
    later = np.array([name > own_name for name in neighbour_names])[:, None]
    level = reachable & (hops_via == own + 1) & later
    return closer | level
