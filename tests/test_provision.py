"""The provisioning LP: every commodity the same largest fraction of its demand, the
rest in priority order, no capacity idle that a flow could use; and OFPT's dealing of a
pair's paths leaves no flow fragments it has no subflows for."""

from __future__ import annotations

import numpy as np
import pytest

from isthmus.control.apps.ofpt import Ofpt, _LongFlow, _Subflow
from isthmus.control.provision import FlowPaths, provision


def test_groups_share_one_fraction_and_the_earlier_flow_of_a_group_wins_the_rest():
    # Edge 0 (capacity 3) is shared by group 0's two flows and group 1's one flow.
    capacity = np.array([3.0, 10.0])
    flows = [
        FlowPaths(demand=2.0, group=0, paths=[[0]]),
        FlowPaths(demand=2.0, group=0, paths=[[0]]),
        FlowPaths(demand=2.0, group=1, paths=[[0, 1]]),
    ]
    result = provision(capacity, flows)
    # Concurrent: t (2 + 2) + t 2 <= 3, so t = 0.5; group 0 gets 2, group 1 gets 1.
    assert result.fraction == pytest.approx(0.5)
    rates = [float(r.sum()) for r in result.rates]
    assert rates[2] == pytest.approx(1.0)
    # Within group 0, the first (nearest completion) takes what it can: all of its 2.
    assert rates[0] == pytest.approx(2.0)
    assert rates[1] == pytest.approx(0.0, abs=1e-9)


def test_capacity_left_goes_to_whoever_can_use_it():
    # Group 1's flow has a private path (edge 1) beside the shared edge 0.
    capacity = np.array([1.0, 5.0])
    flows = [
        FlowPaths(demand=1.0, group=0, paths=[[0]]),
        FlowPaths(demand=4.0, group=1, paths=[[0], [1]]),
    ]
    result = provision(capacity, flows)
    assert result.fraction == pytest.approx(1.0)
    rates = [r.tolist() for r in result.rates]
    assert sum(rates[0]) == pytest.approx(1.0)
    assert rates[1][1] == pytest.approx(4.0)
    load = rates[0][0] + rates[1][0]
    assert load <= 1.0 + 1e-9


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="demand"):
        provision(np.array([1.0]), [FlowPaths(demand=0.0, group=0, paths=[[0]])])
    with pytest.raises(ValueError, match="path"):
        provision(np.array([1.0]), [FlowPaths(demand=1.0, group=0, paths=[])])


# Round 2 of k=8 one-to-one, seed 1: a ToR pair with two flows of 970 Mb/s and 8
# subflows each, the FPTAS's flow on the pair's 16 paths (Mb/s). Handing the fullest
# paths to the first flow left the second 11 fragments for 8 subflows: 747 of 970.
PAIR_FLOW = np.array(
    [256.0, 124.0, 251.6, 135.0, 153.0, 114.9, 118.7, 119.0]
    + [122.5, 86.9, 75.8, 61.6, 98.1, 44.8, 83.5, 75.8]
)


def _pair(subflows: int = 8) -> list[_LongFlow]:
    return [
        _LongFlow(
            flow=i,
            src=i,
            dst=10 + i,
            size=1,
            src_port=1,
            subflows=[_Subflow() for _ in range(subflows)],
            demand=970.0,
        )
        for i in range(2)
    ]


def test_a_pairs_paths_are_dealt_so_every_flow_gets_its_share():
    members = _pair()
    paths = [[100 + i] for i in range(len(PAIR_FLOW))]
    dealt = Ofpt._deal(members, paths, PAIR_FLOW)
    assert all(len(dealt[f.flow]) <= len(f.subflows) for f in members)
    assert not set(map(tuple, dealt[0])) & set(map(tuple, dealt[1]))
    # Each path an edge of its own whose capacity is what the FPTAS put on it.
    capacity = np.zeros(200)
    capacity[100:116] = PAIR_FLOW
    result = provision(
        capacity,
        [FlowPaths(demand=f.demand, group=0, paths=dealt[f.flow]) for f in members],
    )
    total = PAIR_FLOW.sum()
    for f, rates in zip(members, result.rates, strict=True):
        # The pair's paths carry 0.99 of its demand; dealt evenly, so does each flow.
        assert rates.sum() >= 0.97 * f.demand, (f.flow, rates.sum())
    assert sum(r.sum() for r in result.rates) == pytest.approx(min(total, 1940.0), rel=1e-6)


def test_a_flow_keeps_the_paths_it_already_uses():
    members = _pair()
    paths = [[100 + i] for i in range(len(PAIR_FLOW))]
    members[1].subflows[0].path = paths[0]  # the fullest path, in use by the second flow
    dealt = Ofpt._deal(members, paths, PAIR_FLOW)
    assert paths[0] in dealt[1]
    assert paths[0] not in dealt[0]


def test_where_flows_outnumber_paths_every_flow_may_use_every_path():
    members = _pair(subflows=4)
    paths = [[100], [101], [102]]
    dealt = Ofpt._deal(members, paths, np.array([5.0, 9.0, 1.0]))
    for f in members:
        assert sorted(dealt[f.flow]) == paths


@pytest.mark.parametrize("before", [0, 1])
def test_among_equal_answers_a_flows_rate_stays_on_the_paths_it_had(before):
    # Two disjoint paths, either alone enough: the optimum is not unique, and the rate
    # must not jump to the other path from one round to the next.
    capacity = np.array([10.0, 10.0])
    previous = [0.0, 0.0]
    previous[before] = 4.0
    flows = [FlowPaths(demand=4.0, group=0, paths=[[0], [1]], previous=previous)]
    rates = provision(capacity, flows).rates[0]
    assert rates[before] == pytest.approx(4.0)
    assert rates[1 - before] == pytest.approx(0.0, abs=1e-9)


def test_keeping_a_rate_never_outweighs_the_earlier_flow():
    # The later flow had the shared edge; the earlier one still takes it.
    capacity = np.array([1.0])
    flows = [
        FlowPaths(demand=1.0, group=0, paths=[[0]], previous=[0.0]),
        FlowPaths(demand=1.0, group=0, paths=[[0]], previous=[1.0]),
    ]
    rates = [float(r.sum()) for r in provision(capacity, flows).rates]
    assert rates == pytest.approx([1.0, 0.0], abs=1e-9)
