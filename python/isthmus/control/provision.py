"""Rates for flows over fixed path sets, as a linear program (HiGHS through scipy).

Each flow has a demand, a group (the commodity it belongs to, e.g. a ToR pair) and the
paths it may use, each a list of edge indices. Two programs run in turn:

1. The largest common fraction t <= 1 such that every group gets t of its summed demand
   within the capacities, no flow above its own demand (maximum concurrent flow over
   the groups, exact).
2. With every group held at t, the capacity left is handed out in the caller's priority
   order: the objective weighs flow i by 2 - i / n, so where two flows compete for the
   same capacity the earlier one wins it, and no capacity a flow could use idles. A
   term worth less than any of those choices (0.5 / n a unit) rewards every path's
   rate up to its previous one: the optimum is rarely unique, and a solver's arbitrary
   vertex would move a flow's whole rate from one subflow to another every round,
   faster than a subflow's window can follow.

A greedy split of a group's paths between its flows (the largest first, to the first
flow) leaves later flows more path fragments than they have subflows; the program
gives every flow what its paths allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, csc_matrix, csr_matrix, hstack, vstack

Path = Sequence[int]


@dataclass(frozen=True)
class FlowPaths:
    demand: float
    """The most the flow can use (capacity units, > 0)."""
    group: int
    """The commodity the flow belongs to: groups share the concurrent fraction."""
    paths: Sequence[Path]
    """Edge indices of each path the flow may use (at least one)."""
    previous: Sequence[float] | None = None
    """The rate each path had before (capacity units), if any: among equally good
    answers the program keeps closest to it, so a flow's rate does not jump between
    its paths from one round to the next."""


@dataclass(frozen=True)
class Provision:
    fraction: float
    """t: the fraction of its demand every group gets at least."""
    rates: list[np.ndarray]
    """Per flow, the rate on each of its paths (capacity units)."""


def provision(capacity: np.ndarray, flows: Sequence[FlowPaths]) -> Provision:
    """Rates for `flows` (in priority order) within `capacity` (per edge index)."""
    if not flows:
        return Provision(fraction=1.0, rates=[])
    unit = float(np.max(capacity))
    if not unit > 0:
        raise ValueError("capacity must have a positive edge")
    cap = np.asarray(capacity, dtype=np.float64) / unit
    demand = np.array([f.demand for f in flows]) / unit
    if np.any(~np.isfinite(demand)) or np.any(demand <= 0):
        raise ValueError("every flow's demand must be positive and finite")
    if any(not f.paths for f in flows):
        raise ValueError("every flow needs at least one path")
    flow_of_var = np.repeat(np.arange(len(flows)), [len(f.paths) for f in flows])
    variables = len(flow_of_var)
    edge_rows, edge_cols = [], []
    var = 0
    for f in flows:
        for path in f.paths:
            edge_rows.extend(path)
            edge_cols.extend([var] * len(path))
            var += 1
    # Columns: one per (flow, path), then t.
    columns = variables + 1
    load = coo_matrix((np.ones(len(edge_rows)), (edge_rows, edge_cols)), shape=(len(cap), columns))
    per_flow = coo_matrix(
        (np.ones(variables), (flow_of_var, np.arange(variables))), shape=(len(flows), columns)
    )
    groups = sorted({f.group for f in flows})
    group_index = {g: i for i, g in enumerate(groups)}
    group_of_flow = np.array([group_index[f.group] for f in flows])
    group_demand = np.bincount(group_of_flow, weights=demand, minlength=len(groups))
    # t D_g - Σ_{f in g} Σ_p x_fp <= 0
    concurrent = coo_matrix(
        (
            np.concatenate([-np.ones(variables), group_demand]),
            (
                np.concatenate([group_of_flow[flow_of_var], np.arange(len(groups))]),
                np.concatenate([np.arange(variables), np.full(len(groups), variables)]),
            ),
        ),
        shape=(len(groups), columns),
    )
    a_ub = vstack([load, per_flow, concurrent]).tocsr()
    b_ub = np.concatenate([cap, demand, np.zeros(len(groups))])
    bounds = [(0.0, None)] * variables + [(0.0, 1.0)]
    cost = np.zeros(columns)
    cost[-1] = -1.0
    first = _solve(cost, a_ub, b_ub, bounds)
    fraction = float(first[-1])
    # Hold every group at (just under, for round-off) the fraction found; hand out the rest.
    bounds[-1] = (fraction * (1 - 1e-9), 1.0)
    weight = 2.0 - np.arange(len(flows)) / len(flows)
    # Columns y (one per path, after t): y <= x and y <= the path's previous rate, so
    # Σ y is the rate kept where it was.
    previous = (
        np.concatenate(
            [
                np.zeros(len(f.paths)) if f.previous is None else np.asarray(f.previous, float)
                for f in flows
            ]
        )
        / unit
    )
    if len(previous) != variables:
        raise ValueError("a flow's previous rates must be one per path")
    kept = coo_matrix(
        (
            np.concatenate([-np.ones(variables), np.ones(variables)]),
            (
                np.concatenate([np.arange(variables), np.arange(variables)]),
                np.concatenate([np.arange(variables), columns + np.arange(variables)]),
            ),
        ),
        shape=(variables, columns + variables),
    )
    a_sticky = vstack([hstack([a_ub, csr_matrix((a_ub.shape[0], variables))]), kept]).tocsr()
    stickiness = 0.5 / len(flows)
    cost = np.concatenate([-weight[flow_of_var], [0.0], np.full(variables, -stickiness)])
    sticky_bounds = bounds + [(0.0, max(float(v), 0.0)) for v in previous]
    second = _solve(cost, a_sticky, np.concatenate([b_ub, np.zeros(variables)]), sticky_bounds)[
        :columns
    ]
    rates = _within(np.maximum(second[:-1], 0.0), load.tocsc()[:, :variables], cap)
    over = np.bincount(flow_of_var, weights=rates, minlength=len(flows)) / demand
    rates = rates / np.maximum(over, 1.0)[flow_of_var] * unit
    bounds_of_flow = np.concatenate([[0], np.cumsum([len(f.paths) for f in flows])])
    return Provision(
        fraction=fraction,
        rates=[rates[a:b] for a, b in zip(bounds_of_flow[:-1], bounds_of_flow[1:], strict=True)],
    )


def _within(rates: np.ndarray, load: csc_matrix, cap: np.ndarray) -> np.ndarray:
    """The solver's answer scaled into the capacities: it meets them only to its
    feasibility tolerance (about 1e-7 of the largest), which a paced host would overrun."""
    used = load @ rates
    ratio = np.where(used > cap, cap / np.maximum(used, 1e-300), 1.0)
    # A path (a column of `load`) takes the tightest ratio of its edges.
    scale = np.ones_like(rates)
    for path in range(load.shape[1]):
        edges = load.indices[load.indptr[path] : load.indptr[path + 1]]
        if len(edges):
            scale[path] = ratio[edges].min()
    return rates * scale


def _solve(cost: np.ndarray, a_ub: csr_matrix, b_ub: np.ndarray, bounds) -> np.ndarray:
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"the provisioning LP did not solve: {result.message}")
    return result.x


__all__ = ["FlowPaths", "Provision", "provision"]
