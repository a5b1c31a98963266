"""OFPT: OpenFlow-based parallel transport (Liu, Xu, Hu, Hu, Chen, "OFPT: OpenFlow based
Parallel Transport in Datacenters", KSII Trans. Internet and Information Systems 10(10),
2016).

1. Global view, refreshed on every invocation: the capacity c(e) of every directed link,
   its traffic over the latest window of at least half a polling period (a round that
   follows another sooner keeps the older measurement), and every flow's source,
   destination, size and bytes delivered. Flows announced below `long_flow` bytes are
   short: they ride the ECMP entries installed at start and count as background
   traffic, so a link offers long flows c(e) less what it carried beyond what OFPT
   provisioned on it.
2. Invoked on a long flow's arrival, on a long flow's completion and every `period`:
   the unfinished long flows, sorted minimum remaining time first (MRTF: remaining bytes
   over demand).
3. Demands: each long flow's natural demand (Hedera's max-min estimator over the host
   NICs, `isthmus.control.demands`). Commodities: ToR pairs, the demands of the flows
   between the same two ToRs summed, over every shortest path between those ToRs
   (cached). The FPTAS for maximum concurrent flow (`isthmus.control.mcf`, accuracy ε)
   routes λ of every demand; where a pair spreads over more paths than its flows have
   subflows, the paths carrying most are kept and the FPTAS runs again on them.
4. Bandwidth provision: the pair's paths are dealt to its flows, at most one per
   subflow (a flow keeps those it already uses; the rest, the fullest first, each to
   the flow whose demand its paths cover least); then an exact linear program
   (`isthmus.control.provision`) sets the rates: every pair the largest common fraction
   of its demand the capacities allow on those paths, then what is left in MRTF order,
   so the flow nearest completion is served first and no capacity idles.
5. Enforcement: an MPTCP connection's subflow k is pinned to its path by entries
   matching the flow, its source and the subflow's source port, its ACKs to the same
   path backwards (so they load the links `ack_reserve` set aside for them, not links
   ECMP would hash them onto), and paced at the path's rate (`pace_subflow`); subflows
   without a path get no new data. A single-path flow gets its best path and `pace`.
6. Incremental update: only subflows whose path changed are moved, existing flows with
   the largest remaining time first, then new flows with the smallest first. A move is
   seamless (SFMM, `Controller.migrate`): the new entries go in at a lower priority; one
   control round trip later the old entries leave the first hop and every switch the
   new path shares with the old, so the new path takes effect everywhere at once; the
   rest of the old path leaves once no packet can still use it. A complete path is
   installed throughout.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field

from isthmus.control.apps.ecmp import check_ecmp_fits, install_ecmp
from isthmus.control.apps.parameters import Bytes, Period, Priority, checked
from isthmus.control.demands import estimate_demands
from isthmus.control.events import FlowArrival, FlowFinished
from isthmus.control.mcf import Commodity, max_concurrent_flow
from isthmus.control.plane import Controller
from isthmus.control.provision import FlowPaths, provision
from isthmus.units import size_bytes, time_ps

MPTCP_PORT_STEP = 1000
"""An MPTCP connection's subflow k sends from its source port + 1000 k (the engine's rule)."""


@dataclass
class _Subflow:
    path: list[int] | None = None
    entries: list[tuple[int, int]] = field(default_factory=list)
    """(switch, entry) of the data path, first hop first."""
    back: list[tuple[int, int]] = field(default_factory=list)
    """(switch, entry) of the ACKs' way back along the same path."""
    rate: float | None = None
    """The rate it is paced at; None until OFPT first paces it (the transport's own)."""
    priority: int = 0


@dataclass
class _LongFlow:
    flow: int
    src: int
    dst: int
    size: int
    src_port: int
    subflows: list[_Subflow]
    demand: float = 0.0
    remaining: float = 0.0
    new: bool = True

    @property
    def multipath(self) -> bool:
        return len(self.subflows) > 1


class Ofpt(Controller):
    @checked
    def __init__(
        self,
        period: Period = "10ms",
        long_flow: Bytes = "100KB",
        epsilon: Annotated[float, Field(gt=0, lt=1 / 3)] = 0.1,
        priority: Priority = 60000,
        ecmp_priority: Priority = 1,
        ack_reserve: Annotated[float, Field(ge=0, lt=1)] = 0.03,
    ):
        self.period = time_ps(period)
        self.long_flow = size_bytes(long_flow)
        self.epsilon = epsilon
        if not ecmp_priority < priority:
            raise ValueError(
                f"priority must lie above ecmp_priority ({ecmp_priority}), got {priority}"
            )
        self.priority = priority
        self.ecmp_priority = ecmp_priority
        self.ack_reserve = ack_reserve
        self.flows: dict[int, _LongFlow] = {}
        self.rounds = 0
        self.migrations = 0
        self.last_throughput = 0.0
        """λ of the latest round: the fraction of every pair's demand the FPTAS routes."""
        self.last_provisioned = 0.0
        """The fraction of every pair's demand the latest round provisioned on the paths
        its flows were given (the exact LP, `isthmus.control.provision`)."""
        self.round_cpu_seconds: list[float] = []
        """Controller CPU time of each round (view, FPTAS, provisioning, commands)."""
        self.background_window = 0
        """The window (ps) the background traffic in use was measured over; 0: none yet."""
        self._pending = False
        self._ports_table: dict[str, np.ndarray] | None = None
        self._tor_paths: dict[tuple[int, int], list[list[int]]] = {}

    # ---- view --------------------------------------------------------------------------

    def on_attach(self) -> None:
        check_ecmp_fits(self, "OFPT (over ECMP)")

    def on_start(self) -> None:
        install_ecmp(self, self.ecmp_priority)
        ports = self.port_stats()
        self._edges = list(zip(ports["node"].tolist(), ports["peer_node"].tolist(), strict=True))
        if len(set(self._edges)) < len(self._edges):
            raise ValueError(
                "OFPT routes over node paths and needs at most one link between two nodes; "
                "this topology has parallel links"
            )
        for node in self.ports.host_node:
            if len(self.ports.neighbours[node]) != 1:
                raise ValueError(
                    f"OFPT needs every host on one link to its ToR; "
                    f"'{self.ports.names[node]}' has {len(self.ports.neighbours[node])}"
                )
        self._capacity = ports["rate_bps"].astype(np.float64)
        self._edge_index = {edge: i for i, edge in enumerate(self._edges)}
        self._last_tx = ports["tx_bytes"].astype(np.float64)
        self._last_poll = self.now
        self._background_bps = np.zeros_like(self._capacity)
        self._tor = [self.ports.neighbours[node][0] for node in self.ports.host_node]
        self._nic = np.array(
            [
                self._capacity[self._edge_index[(node, tor)]]
                for node, tor in zip(self.ports.host_node, self._tor, strict=True)
            ]
        )
        self.every(self.period, self.schedule)

    def _background(self) -> np.ndarray:
        """Per directed link, the traffic OFPT did not provision (bps), measured over the
        latest window of at least half a polling period (none measured: zero). A round
        an arrival triggers microseconds after another keeps the estimate it had: a
        window that short reads bursts, not load."""
        elapsed = self.now - self._last_poll
        if 2 * elapsed < self.period:
            return self._background_bps
        tx = self.port_stats()["tx_bytes"].astype(np.float64)
        measured = (tx - self._last_tx) * 8 / (elapsed / 1e12)
        self._last_tx, self._last_poll = tx, self.now
        provisioned = np.zeros_like(tx)
        for flow in self.flows.values():
            for sub in flow.subflows:
                if sub.path is not None and sub.rate:
                    for edge in itertools.pairwise(sub.path):
                        provisioned[self._edge_index[edge]] += sub.rate
        # The ACK allowance already covers the reverse traffic's acknowledgements.
        acks = self.ack_reserve * self._capacity
        self._background_bps = np.maximum(measured - provisioned - acks, 0.0)
        self.background_window = elapsed
        return self._background_bps

    def _paths_between(self, flow: _LongFlow) -> list[list[int]]:
        """Every shortest switch path between the flow's two ToRs (cached per pair)."""
        key = (self._tor[flow.src], self._tor[flow.dst])
        if key not in self._tor_paths:
            self._tor_paths[key] = [p[1:-1] for p in self.paths(flow.src, flow.dst)]
        return self._tor_paths[key]

    # ---- events ------------------------------------------------------------------------

    def on_flow_arrival(self, event: FlowArrival) -> None:
        if event.size < self.long_flow:
            return
        # A flow's ports and subflows never change: the table is read again only for
        # flows added since, not on every arrival.
        if self._ports_table is None or event.flow >= len(self._ports_table["src_port"]):
            self._ports_table = self.flow_table()
        table = self._ports_table
        subflows = int(table["subflows"][event.flow])
        self.flows[event.flow] = _LongFlow(
            flow=event.flow,
            src=event.src,
            dst=event.dst,
            size=event.size,
            src_port=int(table["src_port"][event.flow]),
            subflows=[_Subflow(priority=self.priority) for _ in range(subflows)],
        )
        self._soon()

    def on_flow_finished(self, event: FlowFinished) -> None:
        flow = self.flows.pop(event.flow, None)
        if flow is None:
            return
        for sub in flow.subflows:
            for switch, entry in sub.entries + sub.back:
                self.delete(switch, entry)
        self._soon()

    def _soon(self) -> None:
        """One round after the events of this instant, however many asked for it."""
        if not self._pending:
            self._pending = True
            self.after(0, self.schedule)

    # ---- one round ---------------------------------------------------------------------

    def schedule(self) -> None:
        self._pending = False
        background = self._background()
        if not self.flows:
            return
        started = time.process_time()
        self.rounds += 1
        table = self.flow_table()
        flows = list(self.flows.values())
        natural = estimate_demands([(f.src, f.dst) for f in flows])
        delivered = table["bytes_delivered"]
        for f, share in zip(flows, natural, strict=True):
            nic = min(self._nic[f.src], self._nic[f.dst]) * (1 - self.ack_reserve)
            f.demand = share * nic
            f.remaining = max(f.size - int(delivered[f.flow]), 0)
        flows.sort(key=lambda f: (f.remaining / f.demand, f.flow))
        usable = self._capacity * (1 - self.ack_reserve)
        available = np.maximum(usable - background, 0.01 * self._capacity)
        plan = self._provision(flows, available)
        self._enforce(flows, plan)
        self.round_cpu_seconds.append(time.process_time() - started)

    def _provision(
        self, flows: list[_LongFlow], available: np.ndarray
    ) -> dict[int, list[tuple[list[int], float]]]:
        """(switch path, rate) per subflow for every flow, steps 3-4."""
        pairs: dict[tuple[int, int], list[_LongFlow]] = {}
        for f in flows:  # MRTF order, kept inside each pair
            pairs.setdefault((self._tor[f.src], self._tor[f.dst]), []).append(f)
        fabric = {key: members for key, members in pairs.items() if key[0] != key[1]}
        plan: dict[int, list[tuple[list[int], float]]] = {}
        for (src_tor, dst_tor), members in pairs.items():
            if src_tor == dst_tor:  # no fabric link: only the NICs limit them
                for f in members:
                    plan[f.flow] = [([src_tor], f.demand)]
        if not fabric:
            return plan
        keys = list(fabric)
        candidates = [self._paths_between(fabric[k][0]) for k in keys]
        solution = self._solve(keys, fabric, candidates, available)
        self.last_throughput = solution[0]
        routed = [f for f in flows if f.flow not in plan]  # MRTF order
        path_sets: dict[int, list[list[int]]] = {}
        for (paths, flow_on_path), key in zip(solution[1], keys, strict=True):
            path_sets.update(self._deal(fabric[key], paths, flow_on_path))
        group = {key: i for i, key in enumerate(keys)}
        rates = provision(
            available,
            [
                FlowPaths(
                    demand=f.demand,
                    group=group[(self._tor[f.src], self._tor[f.dst])],
                    paths=[
                        [self._edge_index[e] for e in itertools.pairwise(p)]
                        for p in path_sets[f.flow]
                    ],
                    previous=self._previous_rates(f, path_sets[f.flow]),
                )
                for f in routed
            ],
        )
        self.last_provisioned = rates.fraction
        for f, per_path in zip(routed, rates.rates, strict=True):
            # A path given no rate stays the subflow's (paced to nothing): dropping it
            # would free the subflow for another path and migrate it at every round
            # whose optimum happens to leave that path empty.
            plan[f.flow] = [
                (path, float(rate)) for path, rate in zip(path_sets[f.flow], per_path, strict=True)
            ]
        return plan

    def _solve(self, keys, fabric, candidates, available):
        def commodities(path_sets):
            return [
                Commodity(
                    demand=sum(f.demand for f in fabric[key]),
                    paths=[[self._edge_index[e] for e in itertools.pairwise(p)] for p in paths],
                )
                for key, paths in zip(keys, path_sets, strict=True)
            ]

        capacity = dict(enumerate(available.tolist()))
        free = max_concurrent_flow(capacity, commodities(candidates), self.epsilon)
        top, steady = [], []
        for key, paths, flow_on_path in zip(keys, candidates, free.path_flows, strict=True):
            room = sum(len(f.subflows) for f in fabric[key])
            ranked = [paths[i] for i in np.argsort(-flow_on_path, kind="stable").tolist()]
            top.append(ranked[:room])
            used = [s.path for f in fabric[key] for s in f.subflows if s.path in paths]
            unique = [p for i, p in enumerate(used) if p not in used[:i]]
            steady.append((unique + [p for p in ranked if p not in unique])[:room])
        # Incremental update: keep the paths in use unless moving gains more than ε.
        kept = max_concurrent_flow(capacity, commodities(steady), self.epsilon)
        if min(kept.throughput, 1.0) < (1 - self.epsilon) * min(free.throughput, 1.0):
            steady = top
            kept = max_concurrent_flow(capacity, commodities(top), self.epsilon)
        return kept.throughput, list(zip(steady, kept.path_flows, strict=True))

    @staticmethod
    def _previous_rates(f: _LongFlow, paths: list[list[int]]) -> list[float]:
        """The rate each of `paths` carried for `f` until now (0 where none of its
        subflows was on it)."""
        rate: dict[tuple[int, ...], float] = {}
        for sub in f.subflows:
            if sub.path is not None and sub.rate:
                rate[tuple(sub.path)] = rate.get(tuple(sub.path), 0.0) + sub.rate
        return [rate.pop(tuple(p), 0.0) for p in paths]

    @staticmethod
    def _deal(members, paths, flow_on_path) -> dict[int, list[list[int]]]:
        """The paths each flow of a pair may use, at most one per subflow: a flow keeps
        the pair's paths it already uses (no needless migration); the rest go, the
        fullest first, each to the flow whose demand the paths it holds cover least
        (so no flow is left fragments it has no subflows for); then a flow with
        subflows to spare shares the pair's other paths, fullest first (where a pair
        has more flows than paths, every flow may use every path)."""
        held: dict[int, list[int]] = {f.flow: [] for f in members}
        covered = {f.flow: 0.0 for f in members}
        taken: set[int] = set()
        index = {tuple(p): i for i, p in enumerate(paths)}

        def give(f, i: int) -> None:
            held[f.flow].append(i)
            covered[f.flow] += float(flow_on_path[i])
            taken.add(i)

        for f in members:
            for s in f.subflows:
                i = index.get(tuple(s.path)) if s.path else None
                if i is not None and i not in held[f.flow] and len(held[f.flow]) < len(f.subflows):
                    give(f, i)
        for i in np.argsort(-flow_on_path, kind="stable").tolist():
            if i in taken:
                continue
            open_ = [f for f in members if len(held[f.flow]) < len(f.subflows)]
            if not open_:
                break
            give(max(open_, key=lambda f: f.demand - covered[f.flow]), i)
        ranked = np.argsort(-flow_on_path, kind="stable").tolist()
        for f in members:
            spare = [i for i in ranked if i not in held[f.flow]]
            held[f.flow] += spare[: len(f.subflows) - len(held[f.flow])]
        return {f.flow: [paths[i] for i in held[f.flow]] for f in members}

    def _enforce(self, flows: list[_LongFlow], plan) -> None:
        old = sorted((f for f in flows if not f.new), key=lambda f: -f.remaining / f.demand)
        new = [f for f in flows if f.new]
        for f in old + new:
            f.new = False
            assigned = plan.get(f.flow, [])
            if not f.multipath:
                assigned = sorted(assigned, key=lambda a: -a[1])[:1]
            slots = self._slots(f, assigned)
            for k, sub in enumerate(f.subflows):
                path, rate = slots[k]
                self._place(f, k, sub, path)
                rate = rate if path is not None else 0.0
                if sub.rate != rate:
                    sub.rate = rate
                    self._pace(f, k, rate)

    @staticmethod
    def _slots(f: _LongFlow, assigned) -> list[tuple[list[int] | None, float]]:
        """(path, rate) per subflow: a subflow whose path is still assigned keeps it."""
        slots: list[tuple[list[int] | None, float] | None] = [None] * len(f.subflows)
        waiting = []
        for path, rate in assigned:
            keeper = next(
                (k for k, s in enumerate(f.subflows) if s.path == path and slots[k] is None),
                None,
            )
            if keeper is None:
                waiting.append((path, rate))
            else:
                slots[keeper] = (path, rate)
        free = [k for k, slot in enumerate(slots) if slot is None]
        for k, item in zip(free, waiting, strict=False):
            slots[k] = item
        return [slot if slot is not None else (None, 0.0) for slot in slots]

    def _place(self, f: _LongFlow, k: int, sub: _Subflow, path: list[int] | None) -> None:
        if path is None or path == sub.path:
            return
        full = [self.ports.host_node[f.src], *path, self.ports.host_node[f.dst]]
        port = f.src_port + MPTCP_PORT_STEP * k if f.multipath else None
        back = full[::-1]
        if sub.entries:
            sub.priority -= 1
            sub.entries = self.migrate(f.flow, sub.entries, full, sub.priority, src_port=port)
            sub.back = self.migrate(f.flow, sub.back, back, sub.priority, dst_port=port)
            self.migrations += 1
        else:
            sub.entries = self.install_path(f.flow, full, sub.priority, src_port=port)
            sub.back = self.install_path(f.flow, back, sub.priority, dst_port=port)
        sub.path = path

    def _pace(self, f: _LongFlow, k: int, rate: float) -> None:
        bps = int(rate)
        if f.multipath:
            self.pace_subflow(f.flow, k, bps)
        else:
            # A flow left no capacity still trickles (1 Mb/s) rather than stall.
            self.pace(f.flow, max(bps, 1_000_000))
