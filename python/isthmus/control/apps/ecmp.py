"""ECMP as a controller app: per-flow hashing over equal-cost shortest paths.

1. At start, find for every switch and every destination host the egress ports that
   lie on a shortest (fewest-hop) path.
2. Install on every switch, for every destination, a select group over those ports
   (equal weights) and an entry `dst = host -> group`.
3. Switches then hash each flow's 5-tuple (salted per switch) onto one of the ports:
   a flow keeps its path, different flows spread.

The same forwarding as the engine's built-in `ecmp` routing, expressed as flow
entries, so controllers can start from it and override single flows.
"""

from __future__ import annotations

from isthmus.control.plane import Controller
from isthmus.control.routing import next_hop_ports


class Ecmp(Controller):
    def __init__(self, priority: int = 1):
        self.priority = priority

    def on_start(self) -> None:
        groups: dict[int, int] = {}
        for (switch, dst), hops in sorted(next_hop_ports(self.ports).items()):
            if not hops:
                continue
            group = groups.get(switch, 0)
            groups[switch] = group + 1
            self.select_group(switch, group, hops)
            self.install(switch, self.priority, dst=dst, group=group)
