"""The premise of ACC, tested: for DCQCN at high link speed a static ECN marking cannot
be good everywhere, because LOW thresholds cost throughput (the senders' cuts empty the
queue and the link idles) while HIGH ones cost latency (a standing queue) (Yan et al.,
SIGCOMM '21, Fig. 2).

The sweep point, on the paper's kind of setup:

    h1 ─┐
    h2 ─┼── s1 ──> h0        every link `rate_gbps`, 1 us; the study's 12 MB shared
    ... │                    buffer and PFC on class 0 (`network`)
    hn ─┘

1. `senders` hosts each start one long DCQCN flow (line-rate start, Zhu et al.'s
   reaction-point parameters) to h0; they stay backlogged all run.
2. Every switch port marks with one static ramp: Kmin = `kmin_kb`, Kmax = 4 x Kmin,
   Pmax = 20 % — the deployed DCQCN profile's shape (100 KB / 400 KB / 20 % at 25 Gb/s,
   `dcqcn_marker("production")`), which is also ACC's templates' first Kmax factor.
   Kmin is given in absolute bytes, not scaled with the rate: the sweep asks what a
   given threshold does at each speed.
3. After a warm-up (the first half of the span), the bottleneck port s1 -> h0 is
   measured: utilisation (wire bytes it sent over its capacity), goodput fraction
   (payload bytes that arrived at h0, `arrived_bytes`, over capacity: at most
   1000 / 1040 with 1000 B payloads), its queue sampled every `SAMPLE_US` (mean and
   99th percentile), ECN marks, and PFC pauses sent anywhere.

The warm-up is long because the start is violent: n senders at line rate with alpha 1
halve their rates at every CNP until the queue drains, then climb back by 40 Mb/s
steps; at 100 Gb/s with 8 senders the link ran about a third full for the first 10 ms
and about 82 % for the next 10, whatever the threshold, and full only from about 25 ms:
a 20 ms span measures that start, not the threshold.

What the sweep shows, and where the engine's DCQCN departs from the premise, is in
docs/acc.md ("The premise").
"""

from __future__ import annotations

import numpy as np

from isthmus.compare import mean_interval
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import MIN_SEEDS, cell, refused
from isthmus.network_metrics import arrived_bytes
from isthmus.queues import Ramp
from isthmus.simulation import Simulation
from isthmus.studies import Claim
from isthmus.studies.acc.testbed import network
from isthmus.topology import Link, Topology
from isthmus.units import PS_PER_SECOND

PREMISE_FLOW_BYTES = 10**13
"""Longer than any run: the senders stay backlogged."""
KMAX_FACTOR = 4
PMAX = 0.2
WARMUP_FRACTION = 0.5
SAMPLE_US = 5
SWITCH_BUFFER = "12MB"
"""The switch ports' limit in `network` (the shared buffer bounds them first)."""
LINK_DELAY = "1us"


def premise_star(seed: int, rate_gbps: float, senders: int) -> Simulation:
    """`senders` hosts with one long DCQCN flow each into h0 through one switch, every
    link at `rate_gbps`, on the study's buffers and PFC, the queue sampled."""
    hosts = [f"h{i}" for i in range(senders + 1)]
    link = Link(f"{rate_gbps:g}Gbps", LINK_DELAY)
    star = Topology.custom(hosts, ["s1"], [(h, "s1", link) for h in hosts])
    sim = network(seed, sample_interval=f"{SAMPLE_US}us", topology=star)
    for src in range(1, senders + 1):
        sim.add_dcqcn_flow(src, 0, PREMISE_FLOW_BYTES)
    return sim


def marking(kmin_kb: float) -> Ramp:
    """The static ramp of the sweep at `kmin_kb`: Kmax = `KMAX_FACTOR` x Kmin, `PMAX`."""
    kmin = round(kmin_kb * 1000)
    return Ramp(kind="ramp", kmin=f"{kmin}B", kmax=f"{KMAX_FACTOR * kmin}B", pmax=PMAX)


def _readings(sim: Simulation, port: int) -> dict[str, float]:
    ports = sim.ports()
    return {
        "arrived": float(arrived_bytes(sim.flows()).sum()),
        "tx_bytes": float(ports["tx_bytes"][port]),
        "marks": float(ports["ecn_marks"][port]),
        "pauses": float(ports["pfc_pauses"].sum()),
    }


def run_premise(
    seed: int, rate_gbps: float, senders: int, kmin_kb: float | None, span_ms: float
) -> dict:
    """One point of the static-threshold sweep (module docstring): `kmin_kb` None runs
    without marking. Figures are of the measured window (after the warm-up)."""
    sim = premise_star(seed, rate_gbps, senders)
    if kmin_kb is not None:
        sim.configure_queue("s1", limit=SWITCH_BUFFER, aqm=marking(kmin_kb))
    ports = sim.ports()
    port = int(
        np.flatnonzero(
            (ports["node"] == sim.node_index("s1")) & (ports["peer_node"] == sim.node_index("h0"))
        )[0]
    )
    warmup_ps = round(span_ms * WARMUP_FRACTION * 1e9)
    end_ps = round(span_ms * 1e9)
    sim.run(warmup_ps, chunks=1)
    before = _readings(sim, port)
    sim.run(end_ps, chunks=1)
    after = _readings(sim, port)
    capacity_bytes = rate_gbps * 1e9 / 8 * (end_ps - warmup_ps) / PS_PER_SECOND
    samples = sim.samples()
    assert samples is not None
    measured = samples["time_ps"] > warmup_ps
    queue = samples["queue_bytes"][measured, port].astype(np.float64)
    return {
        "seed": seed,
        "rate_gbps": rate_gbps,
        "senders": senders,
        "kmin_kb": kmin_kb,
        "utilisation": (after["tx_bytes"] - before["tx_bytes"]) / capacity_bytes,
        "goodput_fraction": (after["arrived"] - before["arrived"]) / capacity_bytes,
        "queue_kb_mean": float(queue.mean()) / 1000,
        "queue_kb_p99": float(np.percentile(queue, 99)) / 1000,
        "marks": int(after["marks"] - before["marks"]),
        "pfc_pauses": int(after["pauses"] - before["pauses"]),
    }


PREMISE_SCHEME = "DCQCN static ECN"
PREMISE_MIN_COST = 0.05
"""How much of the link the lowest Kmin must lose against the best for the premise to
hold: five points of utilisation, well beyond the sweep's seed-to-seed spread."""


def premise_variant(rate_gbps: float, senders: int, kmin_kb: float) -> str:
    return f"{rate_gbps:g} Gb/s {senders}:1, Kmin {kmin_kb:g} KB"


def premise_jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Every sweep point (rate x senders x Kmin) for every seed."""
    return [
        Job(
            "premise",
            PREMISE_SCHEME,
            seed,
            run_premise,
            {
                "seed": seed,
                "rate_gbps": rate,
                "senders": senders,
                "kmin_kb": kmin,
                "span_ms": settings["premise_ms"],
            },
            premise_variant(rate, senders, kmin),
        )
        for rate in settings["premise_rates"]
        for senders in settings["premise_senders"]
        for kmin in settings["premise_kmin_kb"]
        for seed in seeds
    ]


def _points(results: Results) -> dict[tuple[float, int, float], list[dict]]:
    """Each sweep point's results over seeds, in the order the jobs were declared."""
    points: dict[tuple[float, int, float], list[dict]] = {}
    for record in results.matching(experiment="premise"):
        params = record["result"]
        key = (params["rate_gbps"], params["senders"], params["kmin_kb"])
        points.setdefault(key, []).append(params)
    return points


def premise_rows(results: Results) -> list[list[str]]:
    """One row a sweep point: utilisation (%), mean and 99th-percentile queue (KB), seeds."""
    return [
        [
            f"premise {premise_variant(*key)}, util % | queue KB mean | p99 | {PREMISE_SCHEME}",
            cell([r["utilisation"] for r in runs], 1, scale=100),
            cell([r["queue_kb_mean"] for r in runs]),
            cell([r["queue_kb_p99"] for r in runs]),
            str(len(runs)),
        ]
        for key, runs in _points(results).items()
    ]


def premise_claim(results: Results, rate_gbps: float | None = None) -> Claim:
    """At `rate_gbps` (the highest swept by default), for every sender count: the lowest
    Kmin's utilisation falls more than `PREMISE_MIN_COST` below the best Kmin's (the one
    of highest mean utilisation), judged on the 95 % interval of the per-seed difference
    (best − lowest, same seed). Choosing the best from the same runs favours it a little;
    the margin is there to outweigh that."""
    points = _points(results)
    rates = sorted({rate for rate, _, _ in points})
    rate = rate_gbps if rate_gbps is not None else (rates[-1] if rates else 0.0)
    kmins = sorted({kmin for r, _, kmin in points if r == rate})
    lowest = kmins[0] if kmins else 0.0
    statement = (
        f"DCQCN at {rate:g} Gb/s: the lowest Kmin ({lowest:g} KB) costs more than "
        f"{PREMISE_MIN_COST:.0%} of the link against the best (the paper's premise, Fig. 2)"
    )
    evidence, verdicts = [], []
    for senders in sorted({n for r, n, _ in points if r == rate}):
        by_kmin = {kmin: points[(rate, senders, kmin)] for kmin in kmins}
        best = max(kmins, key=lambda k: np.mean([r["utilisation"] for r in by_kmin[k]]))
        paired = {r["seed"]: r["utilisation"] for r in by_kmin[lowest]}
        gaps = [r["utilisation"] - paired[r["seed"]] for r in by_kmin[best] if r["seed"] in paired]
        if len(gaps) < MIN_SEEDS:
            return refused(statement, {f"{senders}:1": len(gaps)})
        mean, half = mean_interval(gaps)
        verdicts.append(mean - half > PREMISE_MIN_COST)
        evidence.append(
            f"{senders}:1: best Kmin {best:g} KB − {lowest:g} KB utilisation {mean:+.3f}, "
            f"95 % interval [{mean - half:+.3f}, {mean + half:+.3f}] over {len(gaps)} seeds"
        )
    if not verdicts:
        return refused(statement, {"seeds": 0})
    return Claim(statement, all(verdicts), "; ".join(evidence))
