"""The study's traffic: pre-training incast mixes, the heterogeneous phases and the
two-sender messages."""

from __future__ import annotations

import numpy as np

from isthmus import _core
from isthmus.simulation import Simulation
from isthmus.studies.acc.testbed import HOST_BPS
from isthmus.workload import size_distribution

MESSAGE_SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def _add(sim: Simulation, src, dst, size, start) -> None:
    for s, d, n, t in zip(src, dst, size, start, strict=True):
        sim.add_dcqcn_flow(int(s), int(d), int(n), start=int(t))


def incast_mix(sim: Simulation, rng: np.random.Generator, start_s: float, span_s: float) -> None:
    """One pre-training episode's traffic: q flows from p senders into one receiver at
    an offered load in 10-90 % of its link."""
    hosts = sim.topology.num_hosts
    receiver = int(rng.integers(hosts))
    others = np.array([h for h in range(hosts) if h != receiver])
    p = int(rng.integers(2, len(others) + 1))
    q = int(rng.integers(1, 1001))
    load = rng.uniform(0.1, 0.9)
    senders = rng.choice(others, size=p, replace=False)
    sizes = np.exp(rng.uniform(np.log(10e3), np.log(10e6), size=q)).astype(np.int64)
    spread = min(span_s, sizes.sum() * 8 / (load * HOST_BPS))
    starts = start_s + np.sort(rng.uniform(0, spread, size=q))
    _add(sim, rng.choice(senders, size=q), np.full(q, receiver), sizes, starts * 1e12)


def phase_sizes(name: str, offered_bytes: int, seed: int, stream: int) -> np.ndarray:
    """Flow sizes drawn in turn from the CDF `name` until they add up to `offered_bytes`
    exactly: the last one is cut to what is left (any other is the CDF's). Counting
    bytes, not flows: with a heavy tail (data mining: 2 % of flows carry 87 % of the
    bytes), n = load / mean size flows offered from a fifth to three times the stated
    load, seed to seed (20 ms phases, seeds 1-10)."""
    dist = size_distribution(name)
    n = max(16, 2 * int(offered_bytes / dist.mean_bytes))
    while True:
        # The engine's draws are one stream: a longer draw extends a shorter one.
        sizes = _core.sample_sizes(dist.text, dist.unit_bytes, n, seed, stream).astype(np.int64)
        total = np.cumsum(sizes)
        if total[-1] >= offered_bytes:
            break
        n *= 2
    last = int(np.searchsorted(total, offered_bytes))
    sizes = sizes[: last + 1].copy()
    sizes[-1] -= int(total[last]) - offered_bytes
    return sizes[sizes > 0]


HETEROGENEOUS_PHASES = (("websearch", 0.4), ("datamining", 0.7))
"""The first two phases' size distributions and loads, as fractions of the hosts' total
link capacity (hosts x 25 Gb/s) offered in flow bytes over the phase."""


def heterogeneous(sim: Simulation, rng: np.random.Generator, phase_s: float) -> None:
    """Three phases of all-to-all traffic, each its own mix: flows between random pairs
    of distinct hosts, starting uniformly over their phase, whose sizes add up to the
    phase's load x hosts x 25 Gb/s x the phase (`phase_sizes`); then incast bursts."""
    hosts = sim.topology.num_hosts
    capacity = hosts * HOST_BPS
    for phase, (name, load) in enumerate(HETEROGENEOUS_PHASES):
        sizes = phase_sizes(name, round(load * capacity * phase_s / 8), sim.seed, phase)
        n = len(sizes)
        src = rng.integers(hosts, size=n)
        dst = (src + rng.integers(1, hosts, size=n)) % hosts
        starts = (phase + np.sort(rng.uniform(0, 1, size=n))) * phase_s
        _add(sim, src, dst, sizes, starts * 1e12)
    # Phase 3: 8-to-1 incast bursts of 500 KB, one every 500 us, to random receivers.
    bursts = int(phase_s / 500e-6)
    for b in range(bursts):
        receiver = int(rng.integers(hosts))
        senders = rng.choice([h for h in range(hosts) if h != receiver], size=8, replace=False)
        start = (2 * phase_s + b * 500e-6) * 1e12
        _add(sim, senders, np.full(8, receiver), np.full(8, 500_000), np.full(8, start))


def messages(sim: Simulation, rng: np.random.Generator, load: float, span_s: float) -> None:
    """Two senders (leaf1, leaf2) to one receiver (h0), sizes in equal numbers."""
    mean = float(np.mean(MESSAGE_SIZES))
    n = max(1, int(load * HOST_BPS * span_s / 8 / mean))
    sizes = rng.choice(MESSAGE_SIZES, size=n)
    starts = np.sort(rng.uniform(0, span_s, size=n))
    src = rng.choice([6, 12], size=n)
    _add(sim, src, np.zeros(n, dtype=int), sizes, starts * 1e12)
