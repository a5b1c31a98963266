"""Hedera: dynamic flow scheduling for data-center networks (Al-Fares, Radhakrishnan,
Raghavan, Huang, Vahdat; NSDI 2010), with its Global First Fit placer.

1. Every `period` (5 s in the paper; scaled by `time_scale`, since simulated networks
   run for milliseconds), poll every flow's byte counter and compute its rate over the
   period.
2. Flows sending at least `elephant_fraction` (10 %) of their host's NIC rate are
   elephants; everything else stays on ECMP.
3. Estimate each elephant's natural demand, the rate it would get if only host NICs
   limited it, with the paper's max-min demand estimator: repeatedly share each
   sender's capacity among its unconverged flows, then cap each receiver at its
   capacity, giving receiver-limited flows an equal share, until nothing changes.
4. Place the elephants not yet placed by Global First Fit (the paper's Fig. 8), largest
   demand first: take the first equal-cost shortest path whose every link has its
   demand left beside the reservations already held, reserve the demand on it and
   install the flow's entries along it; a flow no path fits stays on ECMP and is tried
   again at the next poll. A placed flow keeps its path and its reservation ("if
   f.assigned then return old path assignment").
5. The entries go in make-before-break: every hop but the first at once, the first hop
   (where the flow leaves its ECMP path) one control round trip later, so the flow is
   diverted only onto a path whose every entry is in place; the ECMP route it leaves is
   never removed.
6. When a flow ends, its reservation is released and its entries deleted ("reservations
   are cleared when flows expire").

The paper's other placer, Simulated Annealing, is not implemented.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from isthmus.control.apps.parameters import Fraction, Period, Priority, checked
from isthmus.control.demands import estimate_demands
from isthmus.control.events import FlowFinished
from isthmus.control.plane import Controller
from isthmus.network_metrics import arrived_bytes
from isthmus.simulation import FOREVER_PS
from isthmus.units import format_time, time_ps

__all__ = ["Hedera", "Placement", "estimate_demands"]


@dataclass(frozen=True)
class Placement:
    """An elephant's path (node indices, host to host), the capacity reserved for it on
    every link of the path (bit/s), and its entries ((switch, entry), first hop first)."""

    path: list[int]
    reserved: float
    entries: list[tuple[int, int]]


class Hedera(Controller):
    @checked
    def __init__(
        self,
        period: Period = "5s",
        time_scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1e-3,
        elephant_fraction: Fraction = 0.1,
        priority: Priority = 100,
    ):
        scaled = time_ps(period) * time_scale
        if not 1 <= scaled < FOREVER_PS:
            raise ValueError(
                f"period x time_scale must be a duration from 1 ps to "
                f"{format_time(FOREVER_PS - 1)}, got {scaled:g} ps"
            )
        self.period = int(scaled)
        self.elephant_fraction = elephant_fraction
        self.priority = priority
        self.placed: dict[int, Placement] = {}
        """The flows placed and not yet ended, by flow id."""
        self.placements = 0
        """Flows placed so far (each once: a placed flow is never moved)."""
        self._last_bytes: np.ndarray | None = None

    def on_start(self) -> None:
        ports = self.ports
        self._capacity = {}
        links = self.topology.links()
        for a, b, rate in zip(
            links["a"].tolist(), links["b"].tolist(), links["rate_bps"].tolist(), strict=True
        ):
            self._capacity[(a, b)] = self._capacity[(b, a)] = float(rate)
        self._nic = {}
        for address, node in enumerate(ports.host_node):
            self._nic[address] = self._capacity[(node, ports.neighbours[node][0])]
        self.every(self.period, self.schedule)

    def reserved(self) -> dict[tuple[int, int], float]:
        """Capacity reserved on each directed link (bit/s) by the flows placed."""
        total: dict[tuple[int, int], float] = {}
        for placement in self.placed.values():
            for hop in itertools.pairwise(placement.path):
                total[hop] = total.get(hop, 0.0) + placement.reserved
        return total

    def schedule(self) -> None:
        flows = self.flow_table()
        # What reached the receivers, as a switch's byte counters see it: the in-order
        # count would credit a period with bytes held behind a hole before it.
        delivered = arrived_bytes(flows)
        last = self._last_bytes if self._last_bytes is not None else np.zeros_like(delivered)
        if len(last) < len(delivered):
            last = np.concatenate([last, np.zeros(len(delivered) - len(last))])
        rate = (delivered - last) * 8 / (self.period / 1e12)
        self._last_bytes = delivered
        active = flows["finish_ps"] < 0
        src, dst = flows["src"].tolist(), flows["dst"].tolist()
        elephants = [
            f
            for f in np.flatnonzero(active).tolist()
            if rate[f] >= self.elephant_fraction * self._nic[src[f]]
        ]
        if not any(f not in self.placed for f in elephants):
            return
        # Demands are estimated over every elephant (a new one's depends on the others);
        # only the new ones are placed, beside the reservations the placed ones hold.
        demands = estimate_demands([(src[f], dst[f]) for f in elephants])
        used = self.reserved()
        new = [i for i, f in enumerate(elephants) if f not in self.placed]
        for i in sorted(new, key=lambda i: (-demands[i], elephants[i])):
            flow = elephants[i]
            need = demands[i] * self._nic[src[flow]]
            for path in self.paths(src[flow], dst[flow]):
                hops = list(itertools.pairwise(path))
                if all(used.get(h, 0.0) + need <= self._capacity[h] for h in hops):
                    for h in hops:
                        used[h] = used.get(h, 0.0) + need
                    self._place(flow, src[flow], path, need)
                    break

    def _place(self, flow: int, src: int, path: list[int], need: float) -> None:
        """Installs `flow`'s entries along `path`, make-before-break (step 5)."""
        hops = self.ports.path_ports(path)
        # The entries from the second switch on go in now; the first hop's (where the
        # flow leaves its ECMP path) once they are confirmed, one control round trip
        # later (the plane's latency: Controller has no public view of it yet).
        confirmed = 2 * self.control_latency
        entries = [
            (
                switch,
                self.install(
                    switch,
                    self.priority,
                    extra_delay=confirmed if i == 0 else 0,
                    flow=flow,
                    src=src,
                    output=port,
                ),
            )
            for i, (switch, port) in reversed(list(enumerate(hops)))
        ]
        self.placed[flow] = Placement(path, need, entries[::-1])
        self.placements += 1

    def on_flow_finished(self, event: FlowFinished) -> None:
        placement = self.placed.pop(event.flow, None)
        if placement is None:
            return
        for switch, entry in placement.entries:
            self.delete(switch, entry)
