"""Hedera: dynamic flow scheduling for data-center networks (Al-Fares, Radhakrishnan,
Raghavan, Huang, Vahdat; NSDI 2010).

1. Every `period` (5 s in the paper; scaled by `time_scale`, since simulated networks
   run for milliseconds), poll every flow's byte counter and compute its rate over the
   period.
2. Flows sending at least `elephant_fraction` (10 %) of their host's NIC rate are
   elephants; everything else stays on ECMP.
3. Estimate each elephant's natural demand, the rate it would get if only host NICs
   limited it, with the paper's max-min demand estimator: repeatedly share each
   sender's capacity among its unconverged flows, then cap each receiver at its
   capacity, giving receiver-limited flows an equal share, until nothing changes.
4. Place elephants by Global First Fit, largest demand first: take the first
   equal-cost shortest path whose every link still has room for the flow's demand,
   reserve it, and install entries for the flow along it (replacing its previous
   placement); a flow no path fits stays where it is.
"""

from __future__ import annotations

import itertools
from typing import Annotated

import numpy as np
from pydantic import Field

from isthmus.control.apps.parameters import Fraction, Period, Priority, checked
from isthmus.control.demands import estimate_demands
from isthmus.control.plane import Controller
from isthmus.network_metrics import arrived_bytes
from isthmus.simulation import FOREVER_PS
from isthmus.units import format_time, time_ps


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
        self.placed: dict[int, list[tuple[int, int]]] = {}
        self.placements = 0
        self._last_bytes: np.ndarray | None = None

    def on_start(self) -> None:
        ports = self.ports
        self._capacity = {}
        links = self.sim.topology.links()
        for a, b, rate in zip(
            links["a"].tolist(), links["b"].tolist(), links["rate_bps"].tolist(), strict=True
        ):
            self._capacity[(a, b)] = self._capacity[(b, a)] = float(rate)
        self._nic = {}
        for address, node in enumerate(ports.host_node):
            self._nic[address] = self._capacity[(node, ports.neighbours[node][0])]
        self.every(self.period, self.schedule)

    def schedule(self) -> None:
        flows = self.sim.flows()
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
        if not elephants:
            return
        demands = estimate_demands([(src[f], dst[f]) for f in elephants])
        residual = dict(self._capacity)
        order = sorted(range(len(elephants)), key=lambda i: -demands[i])
        for i in order:
            flow = elephants[i]
            need = demands[i] * self._nic[src[flow]]
            for path in self.paths(src[flow], dst[flow]):
                hops = list(itertools.pairwise(path))
                if all(residual[h] >= need for h in hops):
                    for h in hops:
                        residual[h] -= need
                    self._place(flow, path)
                    break

    def _place(self, flow: int, path: list[int]) -> None:
        names = [self.ports.names[n] for n in path]
        old = self.placed.get(flow)
        if old is not None and [s for s, _ in old] == path[1:-1]:
            return
        self.placed[flow] = self.install_path(flow, names, self.priority)
        self.placements += 1
        for switch, entry in old or []:
            self.delete(switch, entry)
