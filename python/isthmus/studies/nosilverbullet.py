"""No silver bullet: no one queueing configuration wins every objective.

Reproduces the six pairwise experiments of Sivaraman, Winstein, Subramanian and
Balakrishnan, "No Silver Bullet: Extending SDN to the Data Plane" (HotNets 2013), as
the authors' ns-2 scripts set them up:

    server ──(1 ms)── switch ══(bottleneck, 74 ms)══ client      (150 ms minimum RTT)

1. Links: a fixed 15 Mbit/s bottleneck, or the Verizon LTE downlink trace (the one
   shipped: mahimahi's Verizon-LTE-short, 140 s long, 5.0 Mbit/s on average, replayed
   in a loop; the paper's 1000 s Sprout trace is not available here) with ACKs back over
   a fixed 100 Mbit/s reverse path; the same 150 ms minimum RTT as the fixed link,
   where the scripts' LTE runs have about 302 ms (`DEPARTURES` lists every way this
   set-up differs from the scripts). Buffers effectively unlimited (100,000 packets),
   receive window unlimited.
2. Configurations: CoDel+FCFS (one FIFO under CoDel, 5 ms target, 100 ms interval),
   CoDel+FQ (fair queueing, each flow's queue under CoDel), Bufferbloat+FQ (the same
   FQ, no AQM), CoDel alone (a FIFO under CoDel) and drop-tail (a FIFO, no AQM). FQ is
   per flow (the scripts' stochastic FQ has 1024 bins: with two flows a collision has
   probability 1/1024).
3. TCP as the scripts run it: NewReno without SACK, 1210 B segments (40 B of headers
   here, 50 B there), initial window 2, initial RTO 3 s, minimum RTO 200 ms, an ACK
   per segment.
4. Traffic (long-running flows start at random in the first second): bulk = one
   long-running TCP transfer, scored by throughput; web = one
   persistent connection per client that fetches pages one after another (page sizes
   drawn from the bundled Facebook web-server distribution plus 16,384 B, in place of
   the scripts' Allman/ICSI table; exponential OFF periods of mean 0.2 s), scored by
   the 99.9th-percentile page completion time over the pages of all seeds pooled
   (index floor(0.999 n)); interactive = a long-running TCP flow scored by throughput
   over its round-trip time (mean one-way delay of its data plus the 75 ms way back).
5. Experiments (each runs both configurations of its pair): 1a CoDel+FCFS vs CoDel+FQ,
   2 bulk, LTE; 1b the same pair, 1 bulk + 1 web, 15 Mbit/s; 2a Bufferbloat+FQ vs
   CoDel+FQ, bulk + web, LTE; 2b the same pair, 2 interactive, 15 Mbit/s; 3a / 3b CoDel
   vs drop-tail, one long flow scored as bulk (3a) and as interactive (3b), LTE.
   1b and 2a add our own per-class data plane as an extra row (web in a strict-priority
   class above bulk, drop-tail), labelled as ours.
6. A configuration wins an objective only where the 95 % interval of the difference
   (over seeds for means; a seed bootstrap for the pooled web tail) excludes zero.

The slides give two cells, both from 1b: CoDel+FCFS bulk 3.9 Mbit/s and web tail 43 s;
CoDel+FQ 11.2 Mbit/s and 21 s.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from isthmus import _core
from isthmus.control import ControlPlane
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, better_pooled, cell
from isthmus.queues import CoDel, DropTail, Fq, StrictPriority
from isthmus.simulation import Simulation
from isthmus.studies import Claim, Departure, StudyTable
from isthmus.topology import Link, Topology
from isthmus.transport import TcpParams
from isthmus.workload import size_distribution

NAME = "nosilverbullet"
TITLE = 'Sivaraman et al., "No Silver Bullet: Extending SDN to the Data Plane" (HotNets 2013)'
DEPARTURES = (
    Departure(
        "traffic",
        "The LTE runs (1a, 2a, 3a, 3b) replay Sprout's 1000 s verizon4g downlink trace",
        "mahimahi's Verizon-LTE-short downlink: 140 s long, 5.0 Mbit/s on average, "
        "replayed in a loop",
        "Sprout's trace is not available here; Verizon-LTE-short is the Verizon LTE "
        "downlink trace bundled with isthmus (isthmus.link_traces)",
        "not run",
    ),
    Departure(
        "topology",
        "In the scripts' LTE runs the bottleneck's delay applies in both directions: "
        "about 302 ms minimum RTT",
        "150 ms minimum RTT on the LTE link as on the fixed one (74 ms each way on the "
        "bottleneck, 1 ms access link); the interactive score adds 75 ms for the way back "
        "on both links",
        "The study uses one topology for both links (the fixed link's delays); not yet "
        "changed to the scripts' LTE delay. The minimum RTT bears on every LTE result: "
        "window growth, CoDel's 100 ms interval against the RTT, the interactive score",
        "not run",
    ),
    Departure(
        "traffic",
        "Web page sizes from the Allman/ICSI table (tcl/ex/congctrl/flowcdf-allman-icsi.tcl "
        "in the authors' ns-2 repository: 90th percentile 30 KB, largest 3.3 GB), plus "
        "16,384 B",
        "The bundled Facebook web-server distribution (meta_webserver_all__parsimon) plus "
        "the scripts' 16,384 B: 90th percentile 79 KB, largest 19.8 MB",
        "The Allman/ICSI table is not bundled with isthmus. The two differ in both body and "
        "tail, and the web tail (99.9th percentile page time) is set by the tail",
        "not run",
    ),
    Departure(
        "run length",
        "1a and 1b run 1000 s, 2a, 2b, 3a and 3b 250 s",
        "100 s a run in every experiment (--quick: 20 s)",
        "Cost: 1b and 2a run 74 seeds at three configurations each; at 100 s the full "
        "study takes about 2.5 minutes here. Shorter runs hold fewer pages a seed and "
        "weigh the first second's start-up more",
        "not run",
    ),
    Departure(
        "metric",
        "A page ends when its sender receives the ACK of its last byte; bulk throughput "
        "counts the 50 B of headers of every packet",
        "A page ends (and its OFF period starts) when the receiver has its last byte, "
        "about one way (75 ms here) before its ACK reaches the sender; bulk throughput "
        "counts payload only, 1210 of every 1260 B the scripts would count: 4 % below "
        "their measure for the same packets",
        "The engine's message and flow counters measure what the receiver got. If the "
        "slides' bulk cells (3.9, 11.2 Mbit/s) were measured as the scripts measure, they "
        "count headers and ours do not",
        "not run",
    ),
    Departure(
        "transport",
        "ns-2's TCP (as Linux by default) restarts its window after an idle period longer "
        "than its RTO (slow-start restart)",
        "The hosts' TCP does not (TcpParams' slow_start_after_idle is off, the engine's "
        "default; the linux profile has it on): a web connection keeps the window of its "
        "last page across OFF periods (mean 0.2 s, near the 200 ms minimum RTO)",
        "The study's TcpParams list the scripts' parameters and leave this one at the "
        "engine's default. Without the restart, pages that follow an OFF period longer "
        "than the RTO finish sooner than in the scripts, which bears on the web tails of "
        "1b and 2a",
        "not run",
    ),
    Departure(
        "packet size",
        "1210 B segments with 50 B of headers",
        "1210 B segments with 40 B of headers",
        "The engine's TCP/IP header is 40 B; the difference is 0.8 % of a packet",
        "not run",
    ),
    Departure(
        "decision rule",
        "Stochastic fair queueing with 1024 bins",
        "A queue per flow",
        "With at most two flows, two share a bin with probability 1/1024",
        "not run",
    ),
    Departure(
        "traffic",
        "The scripts' long-running flows do not start at random",
        "Bulk and interactive flows start at random in the first second",
        "So that seeds differ",
        "not run",
    ),
)

CODEL = CoDel(kind="codel", target="5ms", interval="100ms")
UNLIMITED = "100000pkts"
CONFIGURATIONS = {
    "CoDel+FCFS": dict(scheduler=None, aqm=CODEL),
    "CoDel+FQ": dict(scheduler=Fq(kind="fq"), aqm=CODEL),
    "Bufferbloat+FQ": dict(scheduler=Fq(kind="fq"), aqm=DropTail()),
    "CoDel": dict(scheduler=None, aqm=CODEL),
    "drop-tail": dict(scheduler=None, aqm=DropTail()),
    "Per-class SP (ours)": dict(
        scheduler=StrictPriority(kind="strict_priority", classes=2), aqm=DropTail()
    ),
}
# (pair, workloads, link, how a lone long flow is scored)
EXPERIMENTS = {
    "1a": (("CoDel+FCFS", "CoDel+FQ"), ("bulk", "bulk"), "lte"),
    "1b": (("CoDel+FCFS", "CoDel+FQ", "Per-class SP (ours)"), ("bulk", "web"), "fixed"),
    "2a": (("Bufferbloat+FQ", "CoDel+FQ", "Per-class SP (ours)"), ("bulk", "web"), "lte"),
    "2b": (("Bufferbloat+FQ", "CoDel+FQ"), ("interactive", "interactive"), "fixed"),
    "3a": (("CoDel", "drop-tail"), ("bulk",), "lte"),
    "3b": (("CoDel", "drop-tail"), ("interactive",), "lte"),
}
# The slides' two known cells (experiment 1b): bulk Mbit/s, web tail s.
PAPER = {("CoDel+FCFS", "bulk"): 3.9, ("CoDel+FCFS", "web"): 43.0}
PAPER.update({("CoDel+FQ", "bulk"): 11.2, ("CoDel+FQ", "web"): 21.0})
TCP = TcpParams(
    mss="1210B",
    initial_cwnd=2,
    initial_rto="3s",
    min_rto="200ms",
    sack=False,
    ack_every=1,
    rwnd="1GB",
    timestamps=False,
)
WEB_EXTRA_BYTES = 16_384
WEB_OFF_MEAN_S = 0.2
REVERSE_S = 0.075
FULL = {"seconds": 100.0, "seeds": {"1b": 74, "2a": 74}, "other_seeds": 10}
QUICK = {"seconds": 20.0, "seeds": {"1b": 8, "2a": 8}, "other_seeds": 3}
SERVER, CLIENT = 0, 1
HIGHER_IS_BETTER = {"bulk": True, "interactive": True, "web": False}
UNITS = {"bulk": "Mbit/s", "interactive": "Mbit/s/s", "web": "s"}


def topology(link: str) -> Topology:
    bottleneck = Link("15Mbps", "74ms") if link == "fixed" else Link("100Mbps", "74ms")
    return Topology.custom(
        ["server", "client"],
        ["switch"],
        [("server", "switch", Link("100Mbps", "1ms")), ("switch", "client", bottleneck)],
    )


def run_one(experiment: str, config: str, seed: int, seconds: float) -> dict:
    """One configuration in one experiment: each flow's score, and the web pages'
    completion times."""
    _, workloads, link = EXPERIMENTS[experiment]
    spec = CONFIGURATIONS[config]
    sim = Simulation(
        topology(link),
        seed=seed,
        host_queue=UNLIMITED,
        switch_queue=UNLIMITED,
        tcp=TCP,
        **spec,
    )
    if link == "lte":
        sim.set_link_trace("switch", "client", "Verizon-LTE-short.down")
    stop = round(seconds * 1e12)
    flows = []
    for i, workload in enumerate(workloads):
        if workload == "web":
            rng = np.random.default_rng([seed, 2013, i])
            dist = size_distribution("meta_webserver_all__parsimon")
            pages = int(seconds / WEB_OFF_MEAN_S) + 10
            sizes = _core.sample_sizes(dist.text, dist.unit_bytes, pages, seed, 2013 + i)
            thinks = np.round(rng.exponential(WEB_OFF_MEAN_S, size=pages) * 1e12)
            flow = sim.add_message_flow(
                SERVER,
                CLIENT,
                sizes.astype(np.uint64) + WEB_EXTRA_BYTES,
                thinks.astype(np.uint64),
                stop=stop,
                transport="tcp",
            )
            # The per-class data plane serves web above bulk.
            sim.set_priority(flow, 0)
        else:
            # Long-running flows start at random in the first second, so seeds differ.
            start = float(np.random.default_rng([seed, 17, i]).uniform(0.0, 1.0))
            flow = sim.add_tcp_flow(
                SERVER, CLIENT, "100GB", start=round(start * 1e12), transport="tcp"
            )
            sim.set_priority(flow, 1)
        flows.append((workload, flow))
    ControlPlane(sim).run(stop)
    table = sim.flows()
    out: dict = {
        "scores": [],
        "pages_s": [],
        "timeouts": int(table["timeouts"].sum()),
        "drops": int(sim.ports()["drop_packets"].sum()),
    }
    for workload, flow in flows:
        if workload == "web":
            m = sim.messages()
            mine = (m["flow"] == flow) & (m["finish_ps"] >= 0)
            out["pages_s"] += ((m["finish_ps"][mine] - m["start_ps"][mine]) / 1e12).tolist()
            continue
        lived = seconds - table["start_ps"][flow] / 1e12
        mbps = table["bytes_delivered"][flow] * 8 / lived / 1e6
        if workload == "bulk":
            out["scores"].append(("bulk", float(mbps)))
        else:
            one_way = table["delay_sum_ps"][flow] / max(table["delay_packets"][flow], 1) / 1e12
            out["scores"].append(("interactive", float(mbps / (one_way + REVERSE_S))))
    return out


def seeds_for(experiment: str, settings: dict, first: int) -> list[int]:
    n = settings["seeds"].get(experiment, settings["other_seeds"])
    return list(range(first, first + n))


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Every experiment, both (or all) configurations, over its seeds (74 for 1b and 2a
    in full; `seeds` picks the first seed, so `--seeds 5` starts at 1 as every study
    does)."""
    return [
        Job(
            e,
            c,
            s,
            run_one,
            {"experiment": e, "config": c, "seed": s, "seconds": settings["seconds"]},
        )
        for e, (configs, _, _) in EXPERIMENTS.items()
        for c in configs
        for s in seeds_for(e, settings, seeds[0])
    ]


def _per_seed(results: Results, experiment: str, config: str, workload: str) -> list[float]:
    """The workload's score in each seed (the mean over its flows of that kind)."""
    return [
        float(np.mean([v for w, v in scores if w == workload]))
        for scores in results.values("scores", experiment=experiment, scheme=config)
    ]


def pooled_tail(pages: list[list[float]]) -> float:
    """The 99.9th percentile of every seed's page times pooled: index floor(0.999 n)."""
    pooled = np.sort(np.concatenate([np.asarray(p, dtype=float) for p in pages]))
    if pooled.size == 0:
        return float("nan")
    return float(pooled[min(int(np.floor(0.999 * pooled.size)), pooled.size - 1)])


def _duel(results: Results, experiment: str, workload: str) -> tuple[str | None, str]:
    """The configuration of the experiment's pair that is better for `workload` (None
    where the 95 % interval of the difference includes zero), and the evidence."""
    first, second = EXPERIMENTS[experiment][0][:2]
    if workload == "web":
        a, b = (results.values("pages_s", experiment=experiment, scheme=c) for c in (first, second))
        judge = partial(better_pooled, a=a, b=b, statistic=pooled_tail)
    else:
        a, b = (_per_seed(results, experiment, c, workload) for c in (first, second))
        judge = partial(better, a=a, b=b)
    judge = partial(judge, names=(first, second), unit=f" {UNITS[workload]}")
    # Both sides judged on the one interval of first - second.
    lower = not HIGHER_IS_BETTER[workload]
    won = judge(f"{first} wins", lower_is_better=lower)
    lost = judge(f"{second} wins", lower_is_better=not lower)
    return (first if won.holds else second if lost.holds else None), won.evidence


def verdicts(results: Results) -> dict[tuple[str, str], str | None]:
    """For each (experiment, workload objective): the winning configuration of the
    paper's pair, or None where the interval includes zero."""
    return {key: winner for key, (winner, _) in _duels(results).items()}


def _duels(results: Results) -> dict[tuple[str, str], tuple[str | None, str]]:
    return {
        (experiment, workload): _duel(results, experiment, workload)
        for experiment, (_, workloads, _) in EXPERIMENTS.items()
        for workload in dict.fromkeys(workloads)
    }


def table(results: Results) -> StudyTable:
    rows = []
    for experiment, (configs, workloads, link) in EXPERIMENTS.items():
        seeds = len(results.distinct("seed", experiment=experiment))
        for config in configs:
            for workload in dict.fromkeys(workloads):
                if workload == "web":
                    pages = results.values("pages_s", experiment=experiment, scheme=config)
                    ours = f"{pooled_tail(pages):.2f} s (n={sum(len(p) for p in pages)})"
                else:
                    per_seed = _per_seed(results, experiment, config, workload)
                    ours = f"{cell(per_seed, 2)} {UNITS[workload]}"
                paper = PAPER.get((config, workload)) if experiment == "1b" else None
                rows.append(
                    [
                        f"{experiment} {link} {workload} | {config}",
                        ours,
                        "" if paper is None else f"{paper:g}",
                        str(seeds),
                    ]
                )
    duels = _duels(results)
    claims = [
        Claim(
            f"{experiment}: one of {' and '.join(EXPERIMENTS[experiment][0][:2])} is better "
            f"for {workload}",
            winner is not None,
            f"winner: {winner or 'neither (the 95 % interval includes zero)'}; {evidence}",
        )
        for (experiment, workload), (winner, evidence) in duels.items()
    ]
    decided = {k: w for k, (w, _) in duels.items() if w is not None}
    sides: dict[tuple[str, ...], set[str]] = {}
    for (experiment, _), winner in decided.items():
        sides.setdefault(EXPERIMENTS[experiment][0][:2], set()).add(winner)
    claims.append(
        Claim(
            "No silver bullet: within one pair, the better configuration depends on the "
            "workload or the link",
            any(len(s) > 1 for s in sides.values()),
            "decided: " + (", ".join(f"{e} {w}: {v}" for (e, w), v in decided.items()) or "none"),
        )
    )
    return StudyTable(
        title=(
            f"No silver bullet: six pairwise experiments, {results.settings['seconds']:g} s a "
            "run, 150 ms minimum RTT"
        ),
        columns=["experiment link objective | configuration", "ours", "slides", "seeds"],
        rows=rows,
        claims=claims,
        notes=[
            "bulk: throughput (Mbit/s, mean ± 95 % interval over seeds); web: 99.9th "
            "percentile of every seed's page times pooled (s, n pages); interactive: "
            "throughput / RTT (Mbit/s per s). A configuration wins only where the 95 % "
            "interval of the difference excludes zero (Welch over seeds; for the web tail "
            "a seed bootstrap). The slides give two cells, both from 1b.",
            "LTE = mahimahi's Verizon-LTE-short downlink (140 s, 5.0 Mbit/s mean, looped) "
            "in place of the 1000 s Sprout trace; web pages from the Facebook web-server "
            "distribution + 16,384 B in place of the Allman/ICSI table (docs/nosilverbullet.md).",
        ],
    )
