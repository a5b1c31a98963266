"""No silver bullet: no one queueing configuration wins every objective.

Reproduces the six pairwise experiments of Sivaraman, Winstein, Subramanian and
Balakrishnan, "No Silver Bullet: Extending SDN to the Data Plane" (HotNets 2013), as
the authors' ns-2 scripts set them up (github.com/hbatmit/ns2.35, branch
sdn-data-plane-hotnets13-reproduce, tcl/ex/congctrl/: `result_scripts/*.sh`,
`mixed_sims.tcl`, `longrunning_sims.tcl`, `remy2.tcl`, `sender-app.tcl`, `stats.tcl`):

    server ──(1 Gbit/s, 1 ms)── switch ══(bottleneck)══ client

1. Links: a fixed 15 Mbit/s bottleneck, 74 ms each way (150 ms minimum RTT); or the
   Verizon LTE downlink trace (the one shipped: mahimahi's Verizon-LTE-short, 140 s
   long, 5.0 Mbit/s on average, replayed in a loop, in place of Sprout's 1000 s
   verizon4g trace) with ACKs back at 5.5 Mbit/s, 152 ms minimum RTT as in the scripts
   (their trace link ignores its delay, so their 150 ms is all on the way back; here
   75 ms each way). `DEPARTURES` lists every way this set-up differs from the scripts.
   Buffers effectively unlimited (100,000 packets), receive window unlimited.
2. Configurations: CoDel+FCFS (one FIFO under CoDel, 5 ms target, 100 ms interval),
   CoDel+FQ (fair queueing, each flow's queue under CoDel), Bufferbloat+FQ (the same
   FQ, no AQM), CoDel alone (a FIFO under CoDel) and drop-tail (a FIFO, no AQM). FQ is
   per flow (the scripts' stochastic FQ has 1024 bins: with two flows a collision has
   probability 1/1024).
3. TCP as the scripts run it: NewReno without SACK, 1210 B segments with the timestamps
   option (52 B of headers here, 50 B there), initial window 2, initial RTO 3 s, minimum
   RTO 200 ms, an ACK per segment, and slow-start restart after an idle RTO (ns-2's
   default, which the scripts keep; the engine's restart is Linux's).
4. Traffic (long-running flows start at random in the first second): bulk = one
   long-running TCP transfer, scored by throughput counted as the scripts count it
   (every delivered segment as 1260 B: payload and 50 B of headers); web = one
   persistent connection that fetches pages one after another: sizes drawn from the
   Allman/ICSI table the scripts sample (`studies/data/allman_icsi__ns2remy.txt`) plus
   16,384 B, rounded up to whole segments; the first page after half an OFF period, each
   next one an exponential OFF period (mean 0.2 s) after the sender has the ACK of the
   last one's last byte. A page's time runs from its start to that ACK (the receiver's
   last byte plus the ACK's way back), and the page still in progress at the end counts
   with its elapsed time if any of it has arrived, as the scripts' `dumpstats` does.
   Web is scored by the 99.9th percentile of the page times of all seeds pooled (index
   floor(0.999 n)); interactive = a long-running TCP flow scored by throughput (as bulk)
   over its round-trip time (mean one-way delay of its data plus the ACK's way back).
5. Experiments (each runs both configurations of its pair, for as long as the scripts
   run it): 1a CoDel+FCFS vs CoDel+FQ, 2 bulk, LTE, 1000 s; 1b the same pair, 1 bulk +
   1 web, 15 Mbit/s, 1000 s; 2a Bufferbloat+FQ vs CoDel+FQ, bulk + web, LTE, 250 s; 2b
   the same pair, 2 interactive, 15 Mbit/s, 250 s; 3a / 3b CoDel vs drop-tail, one long
   flow scored as bulk (3a) and as interactive (3b), LTE, 250 s. 1b and 2a add our own
   per-class data plane as an extra row (web in a strict-priority class above bulk,
   drop-tail), labelled as ours.
6. A configuration wins an objective only where the 95 % interval of the difference
   (over seeds for means; a seed bootstrap for the pooled web tail) excludes zero.
7. Sensitivity: the pairs of 1b and 2a run again with the study's earlier choices where
   they could change a verdict: the Facebook web-server page sizes in place of the
   Allman/ICSI table, no slow-start restart, and 100 s runs (the last not in --quick).

The slides give two cells, both from 1b: CoDel+FCFS bulk 3.9 Mbit/s and web tail 43 s;
CoDel+FQ 11.2 Mbit/s and 21 s.
"""

from __future__ import annotations

from functools import cache, partial
from pathlib import Path

import numpy as np

from isthmus import _core
from isthmus.control import ControlPlane
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, better_pooled, cell, over_seeds
from isthmus.queues import CoDel, DropTail, Fq, StrictPriority
from isthmus.simulation import Simulation
from isthmus.studies import Departure, StudyTable
from isthmus.topology import Link, Topology
from isthmus.transport import TcpParams
from isthmus.units import rate_bps, time_ps
from isthmus.workload import SizeDistribution, size_distribution

NAME = "nosilverbullet"
TITLE = 'Sivaraman et al., "No Silver Bullet: Extending SDN to the Data Plane" (HotNets 2013)'
DEPARTURES = (
    Departure(
        "traffic",
        "The LTE runs (1a, 2a, 3a, 3b) replay Sprout's 1000 s verizon4g downlink trace "
        "(link/trace_data/downlink-verizon4g.pps in the authors' ns-2 repository)",
        "mahimahi's Verizon-LTE-short downlink: 140 s long, 5.0 Mbit/s on average, "
        "replayed in a loop",
        "The verizon4g file's content is not in the copy of the authors' repository "
        "available here; Verizon-LTE-short is the Verizon LTE downlink trace bundled with "
        "isthmus (isthmus.link_traces)",
        "not run",
    ),
    Departure(
        "topology",
        "In the LTE runs the trace link ignores its 150 ms delay (ns-2's TraceLink "
        "delivers each packet at the trace's next opportunity), so the 150 ms lies on the "
        "ACKs' way back only: 152 ms minimum RTT with the two 1 ms access links",
        "The same 152 ms, as 75 ms each way on the bottleneck (ACKs back at the scripts' "
        "5.5 Mbit/s)",
        "One link carries both directions here, with one delay. Nothing measured depends "
        "on the split: TCP sees the round trip, CoDel the queue's sojourn time, and the "
        "interactive score adds the data's one-way delay to the ACK's way back",
        "not run: no measure depends on the split",
    ),
    Departure(
        "transport",
        "ns-2's slow-start restart (slow_start_restart_, on by default and in the "
        "scripts): the retransmission timer, restarted by the ACK of the last byte, "
        "expires with nothing outstanding and sets the window to 1 segment, ssthresh "
        "unchanged; again every RTO while idle",
        "The engine's restart, Linux's (slow_start_after_idle): a sender idle longer than "
        "its RTO since its last data halves its window once per RTO idle, down to the "
        "initial window (2 segments), ssthresh at least 3/4 of the window",
        "The engine has one restart rule, Linux's; ns-2's would be an engine change. "
        "Here a restart follows a shorter idle spell (counted from the last data sent, "
        "one round trip before its ACK) but starts from a larger window",
        "[no slow-start restart] rows: 1b and 2a without any restart (the engine's "
        "default, the study's earlier setting)",
    ),
    Departure(
        "packet size",
        "1210 B segments with 50 B of headers (40 B and the 10 B timestamps option)",
        "1210 B segments with 52 B of headers (40 B and the 12 B timestamps option)",
        "The engine's timestamps option takes 12 B with its padding, as on the wire; "
        "the difference is 0.16 % of a packet",
        "not run",
    ),
    Departure(
        "metric",
        "A page ends at the first 5 ms poll (sender-app.tcl's checkinterval) after its "
        "sender has the ACK of its last byte; its OFF period starts there",
        "A page ends when its sender has that ACK, taken as the receiver's last byte plus "
        "the ACK's way back on an empty path (75.03 ms fixed, 76.08 ms LTE); its OFF "
        "period starts there",
        "The engine records a message's completion at the receiver. Only ACKs travel "
        "back, so their way back has no queue to speak of; the 5 ms poll adds 0-5 ms to "
        "page times whose tails are seconds",
        "not run",
    ),
    Departure(
        "metric",
        "2b and 3b report an interactive flow's throughput and its mean RTT (the "
        "sender's RTT estimate, polled every 5 ms) apart; the paper's objective is "
        "throughput over delay",
        "One score: throughput over RTT, with the RTT the mean one-way delay of the "
        "flow's data packets plus the ACK's way back",
        "The engine records each packet's one-way delay, not the sender's RTT samples; "
        "the two differ in weighting (per packet here, per 5 ms there)",
        "not run",
    ),
    Departure(
        "run length",
        "74 seeds of 1b and 2a; one seed of 1a, 2b, 3a and 3b",
        "The seeds given (--seeds N), at least 5: N seeds of every experiment",
        "Cost: a 1000 s run of 1b takes 3 s here (12 s with the per-class row): 5 "
        "seeds of the whole study take 3 minutes on one core, 74 seeds 75 minutes. One "
        "seed gives no interval to judge a verdict by",
        "--seeds 74 (run for docs/nosilverbullet.md)",
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
        "The long-running flows start at 0 s",
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
# (configurations, the first two the paper's pair; workloads; link)
EXPERIMENTS = {
    "1a": (("CoDel+FCFS", "CoDel+FQ"), ("bulk", "bulk"), "lte"),
    "1b": (("CoDel+FCFS", "CoDel+FQ", "Per-class SP (ours)"), ("bulk", "web"), "fixed"),
    "2a": (("Bufferbloat+FQ", "CoDel+FQ", "Per-class SP (ours)"), ("bulk", "web"), "lte"),
    "2b": (("Bufferbloat+FQ", "CoDel+FQ"), ("interactive", "interactive"), "fixed"),
    "3a": (("CoDel", "drop-tail"), ("bulk",), "lte"),
    "3b": (("CoDel", "drop-tail"), ("interactive",), "lte"),
}
# The scripts' settings ("" names them) and the study's earlier choices, each run again
# on the pair of the experiments named (the sensitivity rows; `seconds` replaces the
# experiment's run length).
VARIANTS = {
    "": {"sizes": "icsi", "restart": True},
    "Facebook sizes": {"sizes": "facebook", "restart": True},
    "no slow-start restart": {"sizes": "icsi", "restart": False},
    "100 s runs": {"sizes": "icsi", "restart": True, "seconds": 100.0},
}
SENSITIVITY = {v: ("1b", "2a") for v in VARIANTS if v}
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
    timestamps=True,  # the scripts set Agent/TCP timestamps_ true
    slow_start_after_idle=True,  # ns-2's Agent/TCP slow_start_restart_ default
)
MSS = TCP.as_core()["mss"]
# The scripts count 50 B of headers a segment (opt(hdrsize)): 1260 B a segment.
SCRIPTS_SEGMENT_BYTES = MSS + 50
ACK_BYTES = 40 + 12  # a pure ACK's headers with the timestamps option
ACCESS = Link("1Gbps", "1ms")  # the scripts' accessrate and accessdelay
BOTTLENECK = {
    "fixed": Link("15Mbps", "74ms"),
    # Their 150 ms on the way back only (the trace link ignores its delay); here 75 ms
    # each way, the same round trip. 5.5 Mbit/s: vz4gdown.tcl's bneck, the ACKs' rate.
    "lte": Link("5.5Mbps", "75ms"),
}
LTE_TRACE = "Verizon-LTE-short.down"
SIZES_ICSI = Path(__file__).parent / "data" / "allman_icsi__ns2remy.txt"
SIZES_FACEBOOK = "meta_webserver_all__parsimon"
WEB_EXTRA_BYTES = 16_384  # the scripts' -flowoffset
WEB_OFF_MEAN_S = 0.2
# How long each experiment runs (the scripts' lengths in full), the fewest seeds it
# runs (`--seeds` may ask for more), and the sensitivity variants run (the quick run's
# are 20 s long already).
FULL = {
    "seconds": {"1a": 1000.0, "1b": 1000.0, "2a": 250.0, "2b": 250.0, "3a": 250.0, "3b": 250.0},
    "seeds": {},
    "other_seeds": 5,
    "sensitivity": list(SENSITIVITY),
}
QUICK = {
    "seconds": {e: 20.0 for e in EXPERIMENTS},
    "seeds": {"1b": 8, "2a": 8},
    "other_seeds": 3,
    "sensitivity": ["Facebook sizes", "no slow-start restart"],
}
SERVER, CLIENT = 0, 1
HIGHER_IS_BETTER = {"bulk": True, "interactive": True, "web": False}
UNITS = {"bulk": "Mbit/s", "interactive": "Mbit/s/s", "web": "s"}


def topology(link: str) -> Topology:
    return Topology.custom(
        ["server", "client"],
        ["switch"],
        [("server", "switch", ACCESS), ("switch", "client", BOTTLENECK[link])],
    )


def ack_way_back(link: str) -> float:
    """Seconds from the client's sending a pure ACK to the server's having it, with no
    queue on the way (only ACKs travel it): store-and-forward over the bottleneck's
    reverse direction, then the access link."""
    hops = (BOTTLENECK[link], ACCESS)
    return sum(time_ps(h.delay) / 1e12 + ACK_BYTES * 8 / rate_bps(h.rate) for h in hops)


@cache
def page_sizes(sizes: str) -> SizeDistribution:
    return size_distribution(str(SIZES_ICSI) if sizes == "icsi" else SIZES_FACEBOOK)


def web_pages(sizes: str, count: int, seed: int, stream: int) -> np.ndarray:
    """`count` page sizes as the scripts send them: a draw plus 16,384 B, rounded up to
    whole segments (sender-app.tcl sends whole packets)."""
    dist = page_sizes(sizes)
    drawn = _core.sample_sizes(dist.text, dist.unit_bytes, count, seed, stream)
    wanted = drawn.astype(np.uint64) + WEB_EXTRA_BYTES
    return (wanted + MSS - 1) // MSS * MSS


def scripts_mbps(payload_bytes: float, seconds: float) -> float:
    """Throughput as the scripts count it: each delivered segment as 1260 B."""
    return payload_bytes / MSS * SCRIPTS_SEGMENT_BYTES * 8 / seconds / 1e6


def run_one(experiment: str, config: str, seed: int, seconds: float, variant: str = "") -> dict:
    """One configuration in one experiment: each flow's score, and the web pages'
    times (to the sender's ACK of their last byte)."""
    _, workloads, link = EXPERIMENTS[experiment]
    setting = VARIANTS[variant]
    sim = Simulation(
        topology(link),
        seed=seed,
        host_queue=UNLIMITED,
        switch_queue=UNLIMITED,
        tcp=TCP.model_copy(update={"slow_start_after_idle": setting["restart"]}),
        **CONFIGURATIONS[config],
    )
    if link == "lte":
        sim.set_link_trace("switch", "client", LTE_TRACE)
    stop = round(seconds * 1e12)
    back = ack_way_back(link)
    flows = []
    for i, workload in enumerate(workloads):
        if workload == "web":
            rng = np.random.default_rng([seed, 2013, i])
            pages = int(seconds / WEB_OFF_MEAN_S) + 10
            # The next page's OFF period starts when the sender has the ACK of the last
            # byte: the receiver's last byte plus the ACK's way back.
            offs = rng.exponential(WEB_OFF_MEAN_S, size=pages)
            flow = sim.add_message_flow(
                SERVER,
                CLIENT,
                web_pages(setting["sizes"], pages, seed, 2013 + i),
                np.round((offs + back) * 1e12).astype(np.uint64),
                start=round(0.5 * rng.exponential(WEB_OFF_MEAN_S) * 1e12),
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
            out["pages_s"] += _page_times(sim.messages(), table, flow, stop, back)
            continue
        lived = seconds - table["start_ps"][flow] / 1e12
        mbps = scripts_mbps(float(table["bytes_delivered"][flow]), float(lived))
        if workload == "bulk":
            out["scores"].append(("bulk", mbps))
        else:
            one_way = table["delay_sum_ps"][flow] / max(table["delay_packets"][flow], 1) / 1e12
            out["scores"].append(("interactive", float(mbps / (one_way + back))))
    return out


def _page_times(messages: dict, table: dict, flow: int, stop: int, back: float) -> list[float]:
    """Each finished page's time to the sender's ACK of its last byte; and, as the
    scripts' dumpstats, the page in progress at the end with its elapsed time if any of
    it has arrived."""
    mine = messages["flow"] == flow
    done = mine & (messages["finish_ps"] >= 0)
    times = ((messages["finish_ps"][done] - messages["start_ps"][done]) / 1e12 + back).tolist()
    arrived = int(table["bytes_delivered"][flow]) - int(messages["size"][done].sum())
    open_pages = mine & (messages["finish_ps"] < 0) & (messages["start_ps"] < stop)
    if arrived > 0 and open_pages.any():
        times.append(float((stop - messages["start_ps"][open_pages].min()) / 1e12))
    return times


def seeds_for(experiment: str, settings: dict, seeds: list[int]) -> list[int]:
    """The seeds given, or more where the settings ask for more (the quick run's
    pooled web tails need pages from 8 seeds)."""
    n = max(len(seeds), settings["seeds"].get(experiment, settings["other_seeds"]))
    return list(range(seeds[0], seeds[0] + n))


def _runs(settings: dict) -> list[tuple[str, str, str]]:
    """(experiment, variant, configuration) of every row: the scripts' settings for
    every configuration, then each sensitivity variant the settings name for the pair."""
    main = [(e, "", c) for e, (configs, _, _) in EXPERIMENTS.items() for c in configs]
    again = [
        (e, v, c)
        for v in settings["sensitivity"]
        for e in SENSITIVITY[v]
        for c in EXPERIMENTS[e][0][:2]
    ]
    return main + again


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Every experiment, both (or all) configurations, over the seeds given (at least 5
    in full; the scripts ran 74 seeds of 1b and 2a, which `--seeds 74` does), then the
    sensitivity rows."""
    return [
        Job(
            e,
            c,
            s,
            run_one,
            {
                "experiment": e,
                "config": c,
                "seed": s,
                "seconds": VARIANTS[v].get("seconds", settings["seconds"][e]),
                "variant": v,
            },
            variant=v,
        )
        for e, v, c in _runs(settings)
        for s in seeds_for(e, settings, seeds)
    ]


def _per_seed(
    results: Results, experiment: str, config: str, workload: str, variant: str = ""
) -> list[float]:
    """The workload's score in each seed (the mean over its flows of that kind)."""
    return [
        float(np.mean([v for w, v in scores if w == workload]))
        for scores in results.values(
            "scores", experiment=experiment, scheme=config, variant=variant
        )
    ]


def pooled_tail(pages: list[list[float]]) -> float:
    """The 99.9th percentile of every seed's page times pooled: index floor(0.999 n)."""
    pooled = np.sort(np.concatenate([np.asarray(p, dtype=float) for p in pages]))
    if pooled.size == 0:
        return float("nan")
    return float(pooled[min(int(np.floor(0.999 * pooled.size)), pooled.size - 1)])


def _duel(
    results: Results, experiment: str, workload: str, variant: str = ""
) -> tuple[str | None, str]:
    """The configuration of the experiment's pair that is better for `workload` (None
    where the 95 % interval of the difference includes zero), and the evidence."""
    first, second = EXPERIMENTS[experiment][0][:2]
    where = {"experiment": experiment, "variant": variant}
    if workload == "web":
        a, b = (results.values("pages_s", scheme=c, **where) for c in (first, second))
        judge = partial(better_pooled, a=a, b=b, statistic=pooled_tail)
    else:
        a, b = (_per_seed(results, experiment, c, workload, variant) for c in (first, second))
        judge = partial(better, a=a, b=b)
    judge = partial(judge, names=(first, second), unit=f" {UNITS[workload]}")
    # Both sides judged on the one interval of first - second.
    lower = not HIGHER_IS_BETTER[workload]
    won = judge(f"{first} wins", lower_is_better=lower)
    lost = judge(f"{second} wins", lower_is_better=not lower)
    return (first if won.holds else second if lost.holds else None), won.evidence


def verdicts(results: Results, variant: str = "") -> dict[tuple[str, str], str | None]:
    """For each (experiment, workload objective): the winning configuration of the
    paper's pair, or None where the interval includes zero; with `variant`, in that
    sensitivity run."""
    return {key: winner for key, (winner, _) in _duels(results, variant).items()}


def _duels(results: Results, variant: str = "") -> dict[tuple[str, str], tuple[str | None, str]]:
    experiments = SENSITIVITY[variant] if variant else EXPERIMENTS
    return {
        (experiment, workload): _duel(results, experiment, workload, variant)
        for experiment in experiments
        for workload in dict.fromkeys(EXPERIMENTS[experiment][1])
    }


def _seconds(settings: dict) -> str:
    by_length: dict[float, list[str]] = {}
    for experiment, seconds in settings["seconds"].items():
        by_length.setdefault(seconds, []).append(experiment)
    if len(by_length) == 1:
        return f"{next(iter(by_length)):g} s a run"
    return ", ".join(f"{', '.join(e)}: {s:g} s" for s, e in by_length.items())


def table(results: Results) -> StudyTable:
    rows = []
    for experiment, variant, config in _runs(results.settings):
        _, workloads, link = EXPERIMENTS[experiment]
        where = {"experiment": experiment, "variant": variant, "scheme": config}
        seeds = len(results.distinct("seed", **where))
        label = f"{experiment} {link}" + (f" [{variant}]" if variant else "")
        for workload in dict.fromkeys(workloads):
            if workload == "web":
                pages = results.values("pages_s", **where)
                ours = f"{pooled_tail(pages):.2f} s (n={sum(len(p) for p in pages)})"
            else:
                per_seed = _per_seed(results, experiment, config, workload, variant)
                ours = f"{cell(per_seed, 2)} {UNITS[workload]}"
            paper = PAPER.get((config, workload)) if experiment == "1b" and not variant else None
            rows.append(
                [
                    f"{label} {workload} | {config}",
                    ours,
                    "" if paper is None else f"{paper:g}",
                    str(seeds),
                ]
            )
    duels = _duels(results)
    seeds = len(results.seeds)
    claims = [
        over_seeds(
            f"{experiment}: one of {' and '.join(EXPERIMENTS[experiment][0][:2])} is better "
            f"for {workload}",
            winner is not None,
            f"winner: {winner or 'neither (the 95 % interval includes zero)'}; {evidence}",
            seeds,
        )
        for (experiment, workload), (winner, evidence) in duels.items()
    ]
    for variant in results.settings["sensitivity"]:
        again = _duels(results, variant)
        claims.append(
            over_seeds(
                f"Sensitivity: with {variant}, {' and '.join(SENSITIVITY[variant])} reach the "
                "verdicts of the scripts' setting",
                all(again[k][0] == duels[k][0] for k in again),
                "; ".join(
                    f"{e} {w}: {again[(e, w)][0] or 'neither'} "
                    f"(scripts' setting: {duels[(e, w)][0] or 'neither'})"
                    for e, w in again
                ),
                seeds,
            )
        )
    decided = {k: w for k, (w, _) in duels.items() if w is not None}
    sides: dict[tuple[str, ...], set[str]] = {}
    for (experiment, _), winner in decided.items():
        sides.setdefault(EXPERIMENTS[experiment][0][:2], set()).add(winner)
    claims.append(
        over_seeds(
            "No silver bullet: within one pair, the better configuration depends on the "
            "workload or the link",
            any(len(s) > 1 for s in sides.values()),
            "decided: " + (", ".join(f"{e} {w}: {v}" for (e, w), v in decided.items()) or "none"),
            seeds,
        )
    )
    return StudyTable(
        title=(
            "No silver bullet: six pairwise experiments as the authors' ns-2 scripts set "
            f"them up ({_seconds(results.settings)})"
        ),
        columns=["experiment link objective | configuration", "ours", "slides", "seeds"],
        rows=rows,
        claims=claims,
        notes=[
            "bulk: throughput counted as the scripts count it (1260 B a segment; Mbit/s, "
            "mean ± 95 % interval over seeds); web: 99.9th percentile of every seed's page "
            "times (to the sender's ACK) pooled (s, n pages); interactive: throughput / "
            "RTT (Mbit/s per s). A configuration wins only where the 95 % interval of the "
            "difference excludes zero (Welch over seeds; for the web tail a seed "
            "bootstrap). The slides give two cells, both from 1b.",
            "LTE = mahimahi's Verizon-LTE-short downlink (140 s, 5.0 Mbit/s mean, looped) "
            "in place of the 1000 s verizon4g trace; web pages from the Allman/ICSI table "
            "the scripts sample. Rows in [brackets] rerun the pair with one of the study's "
            "earlier choices (docs/nosilverbullet.md).",
        ],
    )
