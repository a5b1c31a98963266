"""Natural demands of flows: the rate each would get if only the host NICs limited it,
by Hedera's max-min estimator (Al-Fares et al., NSDI 2010, Fig. 7). Hedera places
elephants by them; OFPT provisions bandwidth for them.

Repeat until nothing changes: share each sender's capacity equally among its flows not
yet limited elsewhere, then cap every over-subscribed receiver at its capacity, giving
its receiver-limited flows an equal share.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def estimate_demands(flows: list[tuple[int, int]]) -> list[float]:
    """Natural demands, as fractions of a host NIC, of flows given as (src, dst) pairs
    (Hedera's demand estimator, Fig. 7 of the paper)."""
    demand = [0.0] * len(flows)
    converged = [False] * len(flows)
    by_src: dict[int, list[int]] = defaultdict(list)
    by_dst: dict[int, list[int]] = defaultdict(list)
    for i, (src, dst) in enumerate(flows):
        by_src[src].append(i)
        by_dst[dst].append(i)
    for _ in range(10 * len(flows) + 10):
        before = list(demand)
        for members in by_src.values():
            fixed = sum(demand[i] for i in members if converged[i])
            open_ = [i for i in members if not converged[i]]
            for i in open_:
                demand[i] = (1.0 - fixed) / len(open_)
        for members in by_dst.values():
            if sum(demand[i] for i in members) <= 1.0:
                continue
            limited = set(members)
            share = 1.0 / len(limited)
            while True:
                small = {i for i in limited if demand[i] < share}
                if not small:
                    break
                limited -= small
                share = (1.0 - sum(demand[i] for i in members if i not in limited)) / len(limited)
            for i in limited:
                demand[i] = share
                converged[i] = True
        if np.allclose(before, demand, atol=1e-12):
            break
    return demand
