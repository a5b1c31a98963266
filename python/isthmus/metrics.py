"""Flow-completion metrics as the field reports them.

FCT runs from a flow's start (for TCP, the SYN: the handshake is included) to the
moment its last byte reaches the receiver. Slowdown divides it by the flow's ideal
time alone in the network: size at its source's access-link rate plus the unloaded
round trip of a 1500 B packet out and a 40 B ACK back along its route. Percentiles are
nearest-rank. Buckets are the reference benchmark's: < 100 KB, 100 KB–1 MB, > 1 MB.
"""

from __future__ import annotations

import math

import numpy as np

from isthmus.simulation import Simulation
from isthmus.units import PS_PER_SECOND

BUCKETS = ("all", "lt100KB", "100KB-1MB", "gt1MB")


def flow_times(sim: Simulation) -> dict[str, np.ndarray]:
    """Per flow: fct_ps and ideal_ps (-1 / NaN-free), and slowdown (NaN if unfinished)."""
    return completion_times(sim, sim.flows())


def completion_times(
    sim: Simulation, flows: dict[str, np.ndarray], rate_scale: float = 1.0
) -> dict[str, np.ndarray]:
    """`flow_times` of a flow table with `sim`'s flows, wherever they ran (an emulated
    network measures its own starts and finishes), on links `rate_scale` times slower
    than `sim`'s."""
    finished = flows["finish_ps"] >= 0
    fct = np.where(finished, flows["finish_ps"] - flows["start_ps"], -1)
    rtts: dict[tuple[int, int], int] = {}
    base = np.empty(len(fct), dtype=np.int64)
    for i, pair in enumerate(zip(flows["src"].tolist(), flows["dst"].tolist(), strict=True)):
        if pair not in rtts:
            rtts[pair] = sim.base_rtt(*pair)
        base[i] = rtts[pair]
    rates = sim.topology.access_rates()[flows["src"]] / rate_scale if len(fct) else np.zeros(0)
    ideal = flows["size_bytes"] * 8 / rates * PS_PER_SECOND + base
    slowdown = np.where(finished, fct / ideal, np.nan)
    # A timed (iperf-like) flow has no size until its time is up: no ideal yet either.
    known = ideal < 2.0**62
    ideal_ps = np.where(known, np.round(np.where(known, ideal, 0)), -1).astype(np.int64)
    return {"fct_ps": fct, "ideal_ps": ideal_ps, "slowdown": slowdown}


def nearest_rank(sorted_values: np.ndarray, q: float) -> float | None:
    if len(sorted_values) == 0:
        return None
    return float(sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)])


def bucket_of(sizes: np.ndarray) -> np.ndarray:
    return np.where(sizes < 100_000, 1, np.where(sizes <= 1_000_000, 2, 3))


def slowdown_summary(sizes: np.ndarray, slowdown: np.ndarray) -> dict[str, dict]:
    """Mean, p50, p99 and p99.9 slowdown of finished flows, overall and per size
    bucket."""
    done = ~np.isnan(slowdown)
    buckets = bucket_of(sizes)
    out = {}
    for index, name in enumerate(BUCKETS):
        chosen = done if index == 0 else done & (buckets == index)
        values = np.sort(slowdown[chosen])
        out[name] = {
            "n": int(len(values)),
            "mean": float(values.mean()) if len(values) else None,
            "p50": nearest_rank(values, 0.50),
            "p99": nearest_rank(values, 0.99),
            "p999": nearest_rank(values, 0.999),
        }
    return out
