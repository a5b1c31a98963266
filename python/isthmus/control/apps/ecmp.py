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

from isthmus.control.apps.parameters import Priority, checked
from isthmus.control.plane import Controller
from isthmus.control.routing import check_installs, next_hop_ports


def check_ecmp_fits(controller: Controller, app: str) -> None:
    """Refuses a network whose ECMP groups and entries (steps 1-2) are too many."""
    kinds = controller.ports.kinds
    switches, hosts = kinds.count("switch"), kinds.count("host")
    why = f"a group and an entry per switch and destination: {switches} x {hosts}, twice"
    check_installs(app, 2 * switches * hosts, why)


def install_ecmp(controller: Controller, priority: int) -> None:
    """Puts ECMP's groups and per-destination entries on every switch (steps 1-2);
    controllers that steer some flows themselves start from it."""
    groups: dict[int, int] = {}
    for (switch, dst), hops in sorted(next_hop_ports(controller.ports).items()):
        if not hops:
            continue
        group = groups.get(switch, 0)
        groups[switch] = group + 1
        controller.select_group(switch, group, hops)
        controller.install(switch, priority, dst=dst, group=group)


class Ecmp(Controller):
    @checked
    def __init__(self, priority: Priority = 1):
        self.priority = priority

    def on_attach(self) -> None:
        check_ecmp_fits(self, "ECMP")

    def on_start(self) -> None:
        install_ecmp(self, self.priority)
