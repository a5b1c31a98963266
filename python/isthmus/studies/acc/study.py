"""The ACC study's jobs, table and figures, and the paper's setup it departs from."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, cell
from isthmus.learning.ecn_queues import (
    NUM_TEMPLATES,
)
from isthmus.studies import Claim, Departure, StudyTable
from isthmus.studies.acc.best_static import BEST_STATIC, TRAINING_SEED_OFFSET, template_label
from isthmus.studies.acc.learnability import (
    BOTTLENECK_SENDERS,
    LEARNABILITY_SPAN_MS,
    learnability_claim,
    learnability_rows,
    run_learnability,
)
from isthmus.studies.acc.premise import premise_claim, premise_jobs, premise_rows
from isthmus.studies.acc.pretraining import (
    CONVERGED_WITHIN,
    converged_after,
    pretrain,
    pretraining_claim,
    pretraining_rows,
)
from isthmus.studies.acc.runs import (
    run_heterogeneous,
    run_messages,
    run_sharing,
    sweep_templates,
)
from isthmus.studies.acc.traffic import MESSAGE_SIZES

DEPARTURES = (
    Departure(
        "topology",
        "64 servers",
        "24 servers: 2 spines, 4 leaves of 6 servers at 25 Gb/s, 2 x 100 Gb/s from each "
        "leaf to each spine; pre-training incasts therefore have at most 23 senders",
        "The testbed's two-tier Clos as this study builds it (FabricSize); a larger "
        "fabric multiplies the traffic to simulate (the one shared network serves a "
        "fabric of any size)",
        "not run",
    ),
    Departure(
        "topology",
        "Dual-homed servers",
        "Single-homed servers: one 25 Gb/s link each",
        "Left out (docs/acc.md, 'Not done')",
        "not run",
    ),
    Departure(
        "time scale",
        "The heterogeneous traffic changes mix every 100 s",
        "Every 20 ms (--quick: 4 ms); each phase still thousands of round trips at these rates",
        "Simulated time: 100 s phases of a 24-server fabric at 25-100 Gb/s, three schemes "
        "and five seeds, are far beyond this study's budget",
        "not run",
    ),
    Departure(
        "traffic",
        "Web search at 40 % load, then data mining at 70 %, each for 100 s",
        "Each phase offers its load in flow bytes: sizes drawn from the CDF until they add "
        "up to load x 24 hosts x 25 Gb/s x the phase (the last flow cut to fit). In 20 ms "
        "phases most of data mining's bytes are in flows of 100 MB-1 GB, which one 25 Gb/s "
        "host needs 32-320 ms to send: at most about 9 % of the hosts' capacity can be sent "
        "within that phase (web search: 35 %), the rest spilling into the incast phase and "
        "past the run's end",
        "The paper's loads on the paper's size distributions; the phases' length is the time "
        "scale departure's. Drawing load / mean-size flows instead offered data mining "
        "14-229 % of capacity across seeds",
        "not run (the results' per-phase downlink utilisation is the load carried)",
    ),
    Departure(
        "time scale",
        "No control interval given for its switch CPUs",
        "1 ms: each queue's learner observes, acts and trains once a millisecond",
        "A millisecond is tens of DCQCN rate-increase periods and CNP intervals, so a "
        "template's effect shows within the interval that chose it; on the bottleneck, "
        "learners at 100 us settled 0.008-0.016 below the best template, at 1 ms within "
        "0.0003 (a one-off comparison, docs/acc.md)",
        "not run (the 100 us against 1 ms comparison is not a row of the study)",
    ),
    Departure(
        "training data",
        "One model trained offline for hours, installed on every switch",
        "Per seed, 100 pre-training episodes of 200 ms on random incast mixes (20 simulated "
        "s, about 130 wall s on one core; about 650,000 busy queue-intervals through the "
        "one network), then online learning with epsilon at its floor on the evaluation "
        "traffic; the RDMA/TCP sharing runs learn online from scratch",
        "Cost on this project's 2-core machine. On 3 of 5 held-out mixes the greedy network "
        "comes within 0.01 of the best static template there in about 20 episodes; on two "
        "heavy incasts it does not, so the fabric rows test a network that generalises "
        "unevenly",
        "not run (the 'bottleneck reward' rows train 3 simulated s online on one switch: a "
        "check that the learner finds a known best template, not the paper's training)",
    ),
    Departure(
        "decision rule",
        "A reward weighing utilisation against queue length, in no form this study could place",
        "0.5 x utilisation + 0.5 x (1 - log2(1 + q / q_ref)), q the interval's mean queue, "
        "q_ref = 100 KB x link rate / 25 Gb/s: 1 for a full link with an empty queue, 0.5 "
        "at q_ref, still falling for megabyte queues",
        "A queue term that keeps falling lets a learner in a deep queue see a better "
        "choice nearby (the earlier q_ref / (q_ref + q) levelled off). The results depend "
        "on this weighting, which was not tuned against the paper's figures",
        "not run",
    ),
    Departure(
        "metric",
        "The congested ToR port's queue and utilisation",
        "Heterogeneous traffic: every ToR port facing a host (the 24 leaf downlinks): their "
        "queue's mean and p99 over 100 us samples and ports and their utilisation, per run "
        "and per phase, and the hottest downlink's queue (the longest at each sample) in "
        "the results, beside the mean over every switch port; the two-sender runs: leaf0's "
        "port to the receiver (queue mean, std, p99, utilisation)",
        "With random all-to-all pairs no one port is congested throughout, and a port "
        "picked by its queue under one scheme is not the congested one under another: "
        "every downlink, one rule for every scheme. The heterogeneous claims compare the "
        "downlinks' mean queue",
        "'heterogeneous | ...' rows: the mean over every switch port, the earlier metric",
    ),
    Departure(
        "baseline",
        "Static ECN settings SECN1 and SECN2 on the fabric, and a static-threshold sweep "
        "whose throughput/latency trade-off is the premise (Fig. 2)",
        "SECN1, SECN2 and the best static template: each of the 32 templates ACC chooses "
        "among held on every port through the same experiment on training traffic (seed + "
        "1000), the winner by the learners' reward over loaded queues, evaluated on the test "
        "seed (heterogeneous and message runs; not the RDMA/TCP sharing runs). Fig. 2's "
        "premise is tested on one bottleneck apart (the 'premise' rows)",
        "ACC maximises that reward: the best fixed choice among its own actions, by its own "
        "objective, on other traffic than it is scored on, is what learning must beat to "
        "pay",
        "'... | best static' rows and the ACC-vs-best-static claims; 'bottleneck reward | "
        "best static' is the same sweep on one switch",
    ),
    Departure(
        "transport",
        "DCQCN on the testbed's NICs, where low ECN thresholds cost throughput at high "
        "speed and high ones cost latency (Fig. 2): the premise that no static setting "
        "suits all traffic",
        "The engine's DCQCN: Zhu et al.'s algorithm and parameters (55 us rate-increase "
        "timer, 10 MiB byte counter, g = 1/256, F = 5, at most one CNP per flow per 50 us), "
        "each packet paced exactly. On one bottleneck at 25, 40 and 100 Gb/s, low "
        "thresholds cost throughput only below two packets (Kmin 1-2 KB); from 5 KB up the "
        "link stays at least 98.9 % full and the queue grows with Kmin",
        "The engine models the DCQCN paper's algorithm, not a NIC's implementation (rate "
        "limiter granularity, bursts per queue-pair turn, NIC CNP and alpha timers); ACC's "
        "templates scale Kmin with the link (2 KB at 25 Gb/s, 8 KB at 100 Gb/s), so among "
        "its own actions the lowest Kmin costs little here and the trade-off the learner "
        "should track is mostly absent",
        "'premise' rows: the static-threshold sweep, Kmin 1-320 KB at 25, 40 and 100 Gb/s",
    ),
)

SHARING_SCHEMES = ("SECN1", "SECN2", "ACC")
"""The RDMA/TCP sharing runs' schemes: no template sweep runs on them."""
SCHEMES = (*SHARING_SCHEMES, BEST_STATIC)


# The paper's end-to-end result at 60 % load: queue mean / std (KB).
PAPER_QUEUE_60 = {"ACC": (5.6, 13.3), "SECN1": (20.4, 49.6), "SECN2": (37.5, 109.3)}
FULL = {
    "learn_ms": 3000.0,
    "episodes": 100,
    "episode_ms": 200.0,
    "premise_ms": 100.0,
    "premise_rates": (25, 40, 100),
    "premise_kmin_kb": (1, 2, 5, 10, 20, 40, 80, 160, 320),
    "premise_senders": (2, 8),
    "phase_ms": 20.0,
    "message_ms": 500.0,
    "loads": (0.2, 0.6),
    "incasts": (2, 7),
    "sharing_ms": 20.0,
}
QUICK = {
    "learn_ms": 3000.0,
    "episodes": 3,
    "episode_ms": 20.0,
    "premise_ms": 40.0,
    "premise_rates": (25, 100),
    "premise_kmin_kb": (1, 5, 40),
    "premise_senders": (8,),
    "phase_ms": 4.0,
    "message_ms": 40.0,
    "loads": (0.6,),
    "incasts": (7,),
    "sharing_ms": 4.0,
}
# DWRR between the RDMA class (0) and the TCP class (1): 70 / 30.


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Each seed's pre-training, then every evaluation run; ACC's take that seed's models
    (but in the sharing runs, where it learns from scratch)."""
    training = {
        s: Job(
            "training",
            "ACC",
            s,
            pretrain,
            {"seed": s, "episodes": settings["episodes"], "episode_ms": settings["episode_ms"]},
        )
        for s in seeds
    }

    def job(experiment: str, run, seed: int, scheme: str, variant: str = "", **params) -> Job:
        pretrained = scheme == "ACC" and experiment != "sharing"
        needs = {"trained": training[seed].name} if pretrained else {}
        if scheme == BEST_STATIC:
            # Its template sweep on training traffic, declared just before it.
            sweep = Job(
                "template sweep",
                BEST_STATIC,
                seed,
                sweep_templates,
                {"seed": seed, "experiment": experiment, **params},
                f"{experiment} {variant}".strip(),
            )
            out.append(sweep)
            needs = {"trained": sweep.name}
        given = {"seed": seed, "scheme": scheme, **params}
        return Job(experiment, scheme, seed, run, given, variant, needs)

    span = LEARNABILITY_SPAN_MS
    out = [
        Job(
            "learnability",
            "ACC",
            s,
            run_learnability,
            {"seed": s, "train_ms": settings["learn_ms"], "span_ms": span},
        )
        for s in seeds
    ]
    out += list(training.values())
    for s in seeds:
        for scheme in SCHEMES:
            out.append(
                job("heterogeneous", run_heterogeneous, s, scheme, phase_ms=settings["phase_ms"])
            )
            out += [
                job(
                    "messages",
                    run_messages,
                    s,
                    scheme,
                    f"load {load:.0%}",
                    load=load,
                    span_ms=settings["message_ms"],
                )
                for load in settings["loads"]
            ]
            out += [
                job(
                    "sharing",
                    run_sharing,
                    s,
                    scheme,
                    f"{n}:1",
                    senders=n,
                    span_ms=settings["sharing_ms"],
                )
                for n in settings["incasts"]
                if scheme in SHARING_SCHEMES
            ]
    out += premise_jobs(settings, seeds)
    return out


def _size_label(size: int) -> str:
    return f"{size // 1_000_000} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def _message_rows(results: Results, load: float) -> list[list[str]]:
    """The bottleneck queue per scheme at one load, and the baselines' completion times
    as multiples of ACC's in the same seed."""
    rows = []
    acc = results.select(experiment="messages", variant=f"load {load:.0%}", scheme="ACC")
    for scheme in SCHEMES:
        mine = results.select(experiment="messages", variant=f"load {load:.0%}", scheme=scheme)
        paper = PAPER_QUEUE_60.get(scheme) if load == 0.6 else None
        rows.append(
            [
                f"messages {load:.0%} queue KB mean / std | {scheme}",
                cell([r["queue_kb_mean"] for r in mine]),
                cell([r["queue_kb_std"] for r in mine]),
                "" if paper is None else f"{paper[0]} / {paper[1]}",
                "",
            ]
        )
        if scheme == "ACC":
            continue
        for size in map(str, MESSAGE_SIZES):
            ratios = [
                cell(
                    [
                        r[size][stat] / a[size][stat]
                        for r, a in zip(mine, acc, strict=True)
                        if a[size][stat] > 0
                    ],
                    2,
                )
                for stat in ("mean", "p99", "p999")
            ]
            rows.append(
                [
                    f"messages {load:.0%} FCT / ACC's, {_size_label(int(size))} | {scheme}",
                    *ratios,
                    str(sum(r[size]["n"] for r in mine)),
                ]
            )
    return rows


def _reward_rows(results: Results) -> list[list[str]]:
    """Each scheme's score at the learners' own objective on test traffic, per
    experiment, and the templates best static held (chosen on training traffic)."""
    where = [("heterogeneous", "")] + [
        ("messages", f"load {load:.0%}") for load in results.settings["loads"]
    ]
    shown = " | ".join(f"{e} {v}".strip() for e, v in where)
    padding = [""] * max(0, 4 - len(where))
    rows = [
        [
            f"reward, loaded queues: {shown} | {scheme}",
            *(
                cell(results.values("reward", experiment=e, variant=v, scheme=scheme), 3)
                for e, v in where
            ),
            *padding,
        ]
        for scheme in SCHEMES
    ]
    chosen = [
        ", ".join(
            template_label(t)
            for t in sorted(
                set(
                    results.values(
                        "template", experiment="template sweep", variant=f"{e} {v}".strip()
                    )
                )
            )
        )
        for e, v in where
    ]
    rows.append([f"best static template: {shown}", *chosen, *padding])
    return rows


def table(results: Results) -> StudyTable:
    settings = results.settings

    def queues(experiment: str, key: str, scheme: str, **where) -> list[float]:
        return results.values(key, experiment=experiment, scheme=scheme, **where)

    rows = [
        [
            f"heterogeneous | {scheme}",
            *(
                cell(queues("heterogeneous", key, scheme))
                for key in ("queue_kb", "utilisation_pct", "goodput_gbps")
            ),
            "",
        ]
        for scheme in SCHEMES
    ]
    rows += [
        [
            f"heterogeneous ToR downlinks | {scheme}",
            *(
                cell(queues("heterogeneous", key, scheme))
                for key in (
                    "downlink_queue_kb",
                    "downlink_queue_kb_p99",
                    "downlink_utilisation_pct",
                )
            ),
            "",
        ]
        for scheme in SCHEMES
    ]
    for load in settings["loads"]:
        rows += _message_rows(results, load)
    for senders in settings["incasts"]:
        for scheme in SHARING_SCHEMES:
            mine = results.select(experiment="sharing", variant=f"{senders}:1", scheme=scheme)
            rows.append(
                [
                    f"RDMA/TCP {senders}:1, RDMA share % | queue KB | Gb/s | {scheme}",
                    cell([r["rdma_share_pct"] for r in mine]),
                    cell([r["queue_kb_mean"] for r in mine]),
                    cell([r["rdma_gbps"] + r["tcp_gbps"] for r in mine], 2),
                    "",
                ]
            )

    def shorter(statement: str, worse: str, experiment: str, key: str, **where) -> Claim:
        return better(
            statement,
            queues(experiment, key, "ACC", **where),
            queues(experiment, key, worse, **where),
            lower_is_better=True,
            names=("ACC", worse),
            digits=1,
            unit=" KB",
        )

    claims = []
    for worse in ("SECN1", "SECN2"):
        claims.append(
            shorter(
                f"Heterogeneous traffic: ACC keeps ToR downlink queues shorter than {worse} "
                "(paper: an order of magnitude)",
                worse,
                "heterogeneous",
                "downlink_queue_kb",
            )
        )
        if 0.6 in settings["loads"]:
            claims.append(
                shorter(
                    f"Messages at 60 %: ACC's bottleneck queue is shorter than {worse}'s "
                    f"(paper: 5.6 KB vs {PAPER_QUEUE_60[worse][0]} KB)",
                    worse,
                    "messages",
                    "queue_kb_mean",
                    variant="load 60%",
                )
            )
    claims.append(
        shorter(
            "Heterogeneous traffic: ACC keeps ToR downlink queues shorter than the best static "
            "template (chosen on training traffic by ACC's own reward; not in the paper)",
            BEST_STATIC,
            "heterogeneous",
            "downlink_queue_kb",
        )
    )
    if 0.6 in settings["loads"]:
        claims.append(
            shorter(
                "Messages at 60 %: ACC's bottleneck queue is shorter than the best static "
                "template's (not in the paper)",
                BEST_STATIC,
                "messages",
                "queue_kb_mean",
                variant="load 60%",
            )
        )
    rows += _reward_rows(results)
    rows += learnability_rows(results)
    claims.append(learnability_claim(results))
    rows += pretraining_rows(results)
    claims.append(pretraining_claim(results))
    rows += premise_rows(results)
    claims += [premise_claim(results, rate) for rate in settings["premise_rates"]]
    training = results.select(experiment="training")
    notes = [
        "ToR downlink rows: every leaf port facing a host, queue mean | p99 (KB, over 100 us "
        "samples and ports) | utilisation (%). Best static: each of the "
        f"{NUM_TEMPLATES} templates held on every port through the same experiment on "
        f"training traffic (seed + {TRAINING_SEED_OFFSET}), the winner (by the learners' "
        "reward over loaded queues, what ACC maximises) held on the test seed. Reward rows: "
        "each scheme's mean reward over loaded queue-intervals on the test seed.",
        "Heterogeneous rows: ours, mean switch-port queue (KB) | fabric utilisation (%) | "
        "goodput (Gb/s). Message rows: queue mean | std (KB) | the paper's at 60 %; FCT "
        "rows: mean | p99 | p99.9 as multiples of ACC's in the same seed | messages "
        "completed. Mean ± 95 % t-interval over seeds.",
        f"Pre-training: {settings['episodes']} incast-mix episodes of "
        f"{settings['episode_ms']} ms, "
        f"{np.mean([t['simulated_s'] for t in training]):.3f} simulated s and "
        f"{np.mean([t['wall_s'] for t in training]):.0f} wall s per seed, "
        f"{np.mean([t['busy_intervals'] for t in training]):,.0f} busy queue-intervals "
        "through the one shared network; greedy reward on a held-out incast mix over loaded "
        "queues, after the first episode -> after the last (best static template there), "
        "episodes until within "
        f"{CONVERGED_WITHIN} of it: "
        + ", ".join(
            f"{t['curve'][0]:.3f} -> {t['curve'][-1]:.3f} ({max(t['held_out_static']):.3f}), "
            f"{converged_after(t['curve'], max(t['held_out_static'])) or 'never'}"
            for t in training
        ),
        f"One bottleneck: {BOTTLENECK_SENDERS} long DCQCN flows through one switch into one "
        f"25 Gb/s host; each of the {NUM_TEMPLATES} templates held for "
        f"{LEARNABILITY_SPAN_MS:g} ms, and ACC trained online for "
        f"{settings['learn_ms']:g} ms then greedy for {LEARNABILITY_SPAN_MS:g} ms, both on "
        "held-out traffic (another seed); reward as the learners', warm-up fifth left out.",
    ]
    return StudyTable(
        title="ACC: learned ECN tuning against static ECN (SECN1, SECN2), DCQCN over PFC",
        columns=["figure | scheme", "ours", "", "", "n"],
        rows=rows,
        claims=claims,
        notes=notes,
    )


def figures(results: Results, folder: Path) -> list[Path]:
    """The learning curves of pre-training, and the mean switch queue over the
    heterogeneous run per scheme (first seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn: list[Path] = []
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for r in results.matching(experiment="training"):
        curve = r["result"]["curve"]
        (line,) = ax.plot(range(1, len(curve) + 1), curve, label=f"seed {r['seed']}")
        best = max(r["result"]["held_out_static"])
        ax.axhline(best, color=line.get_color(), linestyle=":", linewidth=0.8)
    ax.set_xlabel("pre-training episode (dotted: best static template on the same mix)")
    ax.set_ylabel("greedy reward, held-out mix, loaded queues")
    ax.set_title("ACC pre-training on incast mixes")
    drawn.append(_save(fig, ax, folder / "acc_learning.png"))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    phase_ms = results.settings["phase_ms"]
    first = min(results.seeds)
    for scheme in SCHEMES:
        for r in results.select(experiment="heterogeneous", scheme=scheme, seed=first):
            series = r["series_queue_kb"]
            t = np.linspace(0, 3 * phase_ms, len(series))
            ax.plot(t, series, label=scheme)
    for boundary in (phase_ms, 2 * phase_ms):
        ax.axvline(boundary, color="grey", linewidth=0.8)
    ax.set_xlabel("time (ms): web search, data mining, incast")
    ax.set_ylabel("mean switch queue (KB)")
    ax.set_ylim(bottom=0)
    ax.set_title("Heterogeneous traffic")
    drawn.append(_save(fig, ax, folder / "acc_queues.png"))
    return drawn


def _save(fig, ax, path: Path) -> Path:
    """The legend beside the plot, not over the data; PNG at 120 dpi."""
    import matplotlib.pyplot as plt

    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
