"""Maximum concurrent multicommodity flow over given path sets, usable without a
simulation: the Garg-Könemann FPTAS (in the engine, `isthmus_core::mcf`) and the exact
linear program it approximates, for checking it.

A problem is a capacity per edge and commodities, each a demand and the paths it may
use (lists of edge keys). The answer routes λ·d_j for every commodity j at once within
the capacities, with λ as large as possible.

The FPTAS needs the optimum λ* to be at least 1 for its bound; a first pass with the
demands scaled so that λ* <= 1 finds a feasible λ1 <= λ*, and the second pass runs on
demands scaled by λ1, where λ* / λ1 >= 1. Its answer is within (1 - ε)³ >= 1 - 3ε of
the optimum.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from isthmus import _core

Edge = Hashable


@dataclass(frozen=True)
class Commodity:
    demand: float
    paths: Sequence[Sequence[Edge]]


@dataclass(frozen=True)
class ConcurrentFlow:
    throughput: float
    """λ: the least fraction of its demand any commodity gets."""
    path_flows: list[np.ndarray]
    """Per commodity, the flow on each of its paths (capacity units)."""
    phases: int
    """FPTAS phases over both passes: the measure of its work."""


class _Problem:
    """A problem in the engine's form: edges numbered, paths in CSR, capacities scaled
    to at most 1 (so δ / c(e) stays far from underflow)."""

    def __init__(self, capacity: Mapping[Edge, float], commodities: Sequence[Commodity]):
        if not commodities:
            raise ValueError("a multicommodity flow problem needs at least one commodity")
        index: dict[Edge, int] = {}
        commodity_paths, edge_offsets, path_edges = [0], [0], []
        for j, commodity in enumerate(commodities):
            if not commodity.paths:
                raise ValueError(f"commodity {j} has no path")
            for path in commodity.paths:
                if not path:
                    raise ValueError(f"commodity {j} has an empty path")
                for edge in path:
                    if edge not in capacity:
                        raise ValueError(f"commodity {j} uses edge {edge!r}, which has no capacity")
                    path_edges.append(index.setdefault(edge, len(index)))
                edge_offsets.append(len(path_edges))
            commodity_paths.append(len(edge_offsets) - 1)
        self.edges = list(index)
        raw = np.array([float(capacity[e]) for e in self.edges])
        if np.any(~np.isfinite(raw)) or np.any(raw <= 0):
            raise ValueError("every capacity a path uses must be positive and finite")
        self.unit = float(raw.max())
        self.capacity = raw / self.unit
        self.demand = np.array([float(c.demand) for c in commodities]) / self.unit
        if np.any(~np.isfinite(self.demand)) or np.any(self.demand <= 0):
            raise ValueError("every demand must be positive and finite")
        self.commodity_paths = np.array(commodity_paths, dtype=np.uint64)
        self.edge_offsets = np.array(edge_offsets, dtype=np.uint64)
        self.path_edges = np.array(path_edges, dtype=np.uint32)

    def bottlenecks(self) -> np.ndarray:
        starts = self.edge_offsets[:-1].astype(np.intp)
        return np.minimum.reduceat(self.capacity[self.path_edges], starts)

    def solve(self, demand: np.ndarray, epsilon: float) -> tuple[np.ndarray, int]:
        return _core.max_concurrent_flow(
            self.capacity,
            demand,
            self.commodity_paths,
            self.edge_offsets,
            self.path_edges,
            epsilon,
        )

    def throughput(self, flow: np.ndarray) -> float:
        starts = self.commodity_paths[:-1].astype(np.intp)
        return float(np.min(np.add.reduceat(flow, starts) / self.demand))

    def split(self, flow: np.ndarray) -> list[np.ndarray]:
        bounds = self.commodity_paths.astype(np.intp)
        return [flow[a:b] * self.unit for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def max_concurrent_flow(
    capacity: Mapping[Edge, float], commodities: Sequence[Commodity], epsilon: float = 0.1
) -> ConcurrentFlow:
    """Routes every commodity's demand concurrently at the largest common fraction λ the
    FPTAS finds (within 1 - 3ε of the optimum)."""
    if not 0 < epsilon < 1 / 3:
        raise ValueError(f"epsilon must be in (0, 1/3), got {epsilon}")
    problem = _Problem(capacity, commodities)
    # λ* <= U: no commodity gets more than the sum of its paths' bottlenecks.
    starts = problem.commodity_paths[:-1].astype(np.intp)
    upper = float(np.min(np.add.reduceat(problem.bottlenecks(), starts) / problem.demand))
    first, phases_first = problem.solve(problem.demand * upper, epsilon)
    lower = problem.throughput(first)
    second, phases_second = problem.solve(problem.demand * lower, epsilon)
    flow = second if problem.throughput(second) >= lower else first
    return ConcurrentFlow(
        throughput=problem.throughput(flow),
        path_flows=problem.split(flow),
        phases=phases_first + phases_second,
    )


def optimal_concurrent_flow(
    capacity: Mapping[Edge, float], commodities: Sequence[Commodity]
) -> ConcurrentFlow:
    """The exact optimum, by linear programming (HiGHS through scipy): maximise λ
    subject to Σ_{p in P_j} x_p >= λ d_j for every commodity and Σ_{p ∋ e} x_p <= c(e)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    problem = _Problem(capacity, commodities)
    paths = len(problem.edge_offsets) - 1
    lengths = np.diff(problem.edge_offsets.astype(np.intp))
    path_of_entry = np.repeat(np.arange(paths), lengths)
    # Rows: one per edge (load <= capacity), one per commodity (λ d_j - flow <= 0).
    edge_rows = coo_matrix(
        (np.ones(len(problem.path_edges)), (problem.path_edges.astype(np.intp), path_of_entry)),
        shape=(len(problem.edges), paths + 1),
    )
    per_path = np.diff(problem.commodity_paths.astype(np.intp))
    commodity_of_path = np.repeat(np.arange(len(per_path)), per_path)
    rows = np.concatenate([commodity_of_path, np.arange(len(per_path))])
    cols = np.concatenate([np.arange(paths), np.full(len(per_path), paths)])
    values = np.concatenate([-np.ones(paths), problem.demand])
    demand_rows = coo_matrix((values, (rows, cols)), shape=(len(per_path), paths + 1))
    cost = np.zeros(paths + 1)
    cost[-1] = -1.0
    result = linprog(
        cost,
        A_ub=vstack([edge_rows, demand_rows]).tocsr(),
        b_ub=np.concatenate([problem.capacity, np.zeros(len(per_path))]),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"the exact LP did not solve: {result.message}")
    flow = result.x[:-1]
    return ConcurrentFlow(
        throughput=problem.throughput(flow), path_flows=problem.split(flow), phases=0
    )


__all__ = ["Commodity", "ConcurrentFlow", "max_concurrent_flow", "optimal_concurrent_flow"]
