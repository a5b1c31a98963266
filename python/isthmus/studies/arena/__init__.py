"""The arena: every scheme against every other on the same fabrics and workloads.

Each paper compares its scheme with its own baselines, on its own testbed, by its own
metrics. Here the schemes that make the same decision (`schemes.GROUPS`: path
selection, queue management, congestion signalling over DCTCP, over DCQCN and by BCN)
run on one engine, on the same fabrics (`scenarios.FABRICS`: a leaf-spine at 2:1
oversubscription, k = 4 and k = 8 fat-trees, a small full mesh) and the same workloads
(`workloads/*.toml`: web search, data mining and Hadoop at a load, permutations and
strides of long flows, incast rounds, a surge), and every run is scored by every
objective any of the papers cares about (`OBJECTIVES`). Per workload and objective, the
schemes of a group that no other beats beyond the 95 % interval of the difference
(Welch, over seeds) are its winners; a tie is a tie. A scheme that cannot run in a cell
shows why. Learned schemes train first, on training traffic (`learned`); sensitivity
rows undo a departure and are judged in their original's place.

A workload is a scenario file: the arena keeps its traffic and [run], and puts in each
fabric's topology and each scheme's [network], transport and [control]. A new workload
is a new file in `workloads/`; a new scheme, a `schemes.register` call.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tomli_w

from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import MIN_SEEDS, cell, over_seeds, unbeaten
from isthmus.network_metrics import bisection_bandwidth_bps
from isthmus.results import summarize
from isthmus.scenario import ScenarioError
from isthmus.studies import Claim, Departure, StudyTable
from isthmus.studies.arena.learned import TRAINING
from isthmus.studies.arena.objectives import OBJECTIVES
from isthmus.studies.arena.page import write_markdown, write_page, write_parquet
from isthmus.studies.arena.scenarios import (
    FABRICS,
    WORKLOADS,
    arena_scenario,
    build,
    workload_file,
)
from isthmus.studies.arena.schemes import GROUPS, SCHEMES

__all__ = ["FABRICS", "WORKLOADS"]

NAME = "arena"
TITLE = (
    "The arena: path selection, queue management and congestion signalling schemes, "
    "each against the others on the same fabrics and workloads"
)

FULL = {
    "fabrics": ["leafspine", "fattree4", "fattree8", "mesh"],
    "workloads": ["websearch", "datamining", "hadoop", "permutation", "stride", "incast", "surge"],
    # Loads for the workloads that arrive at a load (web search, data mining).
    "loads": [0.3, 0.6],
    "schemes": list(SCHEMES),
    # Learned schemes' training, by learner: episodes of web search on the leaf-spine at
    # the loads (ACC learns from each episode's rewards; IBCN fits on each's queues).
    "training_episodes": {"acc": 100, "ibcn": 8},
    "training_episode_ms": 20.0,
}
QUICK = {
    "fabrics": ["leafspine"],
    "workloads": ["websearch", "permutation", "incast"],
    "loads": [0.5],
    "schemes": list(SCHEMES),
    "training_episodes": {"acc": 10, "ibcn": 4},
    "training_episode_ms": 20.0,
}

DEPARTURES = (
    Departure(
        "topology",
        "Each paper's own testbed: Diolkos and IBCN on Mininet meshes, OFPT and Hedera on "
        "fat-trees, ACC on a testbed leaf-spine, DCTCP's on one rack",
        "The same fabrics for every scheme: a 32-host leaf-spine at 2:1 "
        "oversubscription, k = 4 and k = 8 fat-trees (16 and 128 hosts), a full mesh of 6 "
        "switches (24 hosts), 10 Gb/s hosts, 1 us links",
        "Schemes can only be compared on one substrate; each study (isthmus reproduce) "
        "keeps its paper's own setup",
        "not run: the per-paper studies are the paper's setup",
    ),
    Departure(
        "metric",
        "Each paper scores its scheme by its own objectives (throughput, FCT, queue "
        "length, fairness)",
        "Every run scored by every objective: FCT slowdown (mean, p99, by size), goodput, "
        "fraction of bisection bandwidth, Jain fairness, queueing delay, drops, CPU cost",
        "The arena asks which scheme wins where; a scheme tuned for one objective may lose "
        "another, which its paper need not report",
        "not run",
    ),
    Departure(
        "time scale",
        "Hedera polls every 5 s (Al-Fares et al.); CoDel targets 5 ms in a 100 ms "
        "interval (RFC 8289), PIE 15 ms (RFC 8033)",
        "Hedera polls every 0.5 ms; CoDel and PIE at their RFCs' times scaled by 10^-3 "
        "(CoDel 5 us in 100 us; PIE 15 us target and update, 150 us burst), PIE's gains "
        "(per second of delay) by 10^3",
        "The arena's flows live for milliseconds on 10 Gb/s links whose 250-packet queues "
        "drain in 0.3 ms: at the papers' time scales these schemes would never act",
        "sensitivity rows: hedera_5ms (polls every 5 ms), codel_rfc, pie_rfc and "
        "fq_codel_rfc (the RFCs' own times), each judged in its original's place",
    ),
    Departure(
        "transport",
        "MPTCP's paper (Raiciu et al., SIGCOMM 2011) and OFPT's run MPTCP over TCP "
        "subflows against TCP baselines",
        "MPTCP and OFPT run MPTCP subflows (NewReno coupled by LIA, with no response to "
        "ECN marks) while the other path-selection schemes run DCTCP over queues marking "
        "above 65 packets",
        "The group's baseline is the reference benchmark's DCTCP; the engine's MPTCP has "
        "no DCTCP variant, so its subflows meet the marking queues as loss-based senders",
        "not run: no MPTCP variant that answers ECN",
    ),
    Departure(
        "time scale",
        "A controller's computation takes real time: OFPT's published round is well under "
        "its period; Hedera's is cheap",
        "Hedera's and OFPT's rounds take no simulated time, however long they compute "
        "(an OFPT round with its linear program took 139 ms of CPU on average on k = 8 "
        "in docs/ofpt.md's run, some 280 times its 0.5 ms period here)",
        "The simulated controller is assumed as fast as its period, as in `isthmus "
        "reproduce ofpt`; the cost shows only in the wall-clock objective, which the "
        "claims leave out",
        "not run",
    ),
    Departure(
        "time scale",
        "Diolkos samples every 1 s and decides every 2 s over flows of 10 s, its Dense "
        "net trained on 380 rows a switch (Bel et al., CF 2021)",
        "Diolkos samples every 100 us and decides every 200 us (10^-4), entries idle out "
        "after 500 us, with the paper's EWMA forecaster (from its 5th row)",
        "The arena's runs last 5-40 ms: 50-400 rows a switch, too few to train the Dense "
        "net on before the flows it would move have finished",
        "not run: the Dense net needs a run longer than the arena's workloads "
        "(isthmus reproduce diolkos runs it)",
    ),
    Departure(
        "training data",
        "ACC pre-trains offline on its testbed's traffic and keeps learning online "
        "(Yan et al., SIGCOMM 2021); 25 Gb/s servers, 100 Gb/s fabric",
        "ACC's shared network pre-trained on web search over the arena's leaf-spine "
        "(training episodes at the study's loads, traffic seeds never the arena's), keeping "
        "the episode's network that did best on a validation run of web search, then "
        "learning online on every fabric and workload, 10 Gb/s hosts",
        "Learned schemes train on training traffic and are scored on held-out traffic; one "
        "model for every fabric, as the paper installs one model on every switch",
        "not run: training per fabric",
    ),
    Departure(
        "decision rule",
        "ACC compares with the production marking profile at each port's rate: Kmin "
        "100 KB and Kmax 400 KB at 25 Gb/s, Pmax 20 %",
        "dcqcn_production scales it to the hosts' 10 Gb/s on every port (Kmin 40 KB, "
        "Kmax 160 KB), the leaf-spine's 20 Gb/s uplinks included",
        "A scenario's marking is one profile for every port",
        "not run",
    ),
    Departure(
        "time scale",
        "IBCN polls the switches every 1 s (500 ms while collecting its training set); "
        "a STOPped source pauses 200-800 ms (Tran et al.)",
        "IBCN polls every 100 us; pauses of 200-800 us, as isthmus reproduce ibcn scales them",
        "The arena's runs last milliseconds; at the paper's time scale IBCN would never "
        "poll twice in a run, and one STOP would outlast every flow",
        "not run: isthmus reproduce ibcn runs the paper's time scale",
    ),
    Departure(
        "training data",
        "IBCN trains its forecaster on a training set collected on its network before it "
        "acts (Tran et al.), every switch's queue",
        "IBCN's LSTM is fitted on web search's queues polled under plain BCN in training "
        "runs on the leaf-spine (traffic seeds never the arena's), early-stopped on a "
        "validation run, one model every switch shares (each switch's forecast from its "
        "own last 10 polls), then used on every fabric and workload",
        "Learned schemes train on training traffic and are scored on held-out traffic; a "
        "model with one input per switch would fit one fabric only",
        "sensitivity row ibcn_in_run: fitted on the first 75 polls of its own run "
        "(plain BCN meanwhile), every switch one input of one model, judged in ibcn's "
        "place",
    ),
    Departure(
        "control scope",
        "BCN and IBCN regulate the paper's long-lived sources, restarting at their fair "
        "share of the one bottleneck",
        "Every flow of the workload behind a regulator, restarting at 5 Gb/s (a host's "
        "share of its leaf's uplinks on the leaf-spine); incast rounds add flows as the "
        "run goes and are refused",
        "The arena's workloads are flows; the paper's fair share has no counterpart in a "
        "fabric with many bottlenecks",
        "not run",
    ),
    Departure(
        "baseline",
        "Each group's papers hold the other decisions at their own testbed's settings",
        "Each group holds them at one baseline (`schemes.GROUPS`): path selection over "
        "the reference benchmark's DCTCP with K = 65; queue management with loss-based "
        "TCP over ECMP; congestion signalling with DCTCP over ECMP; RDMA congestion "
        "signalling with DCQCN senders, PFC and shared buffers over ECMP; BCN with "
        "NewReno behind the regulators over ECMP",
        "A group's schemes differ in its one decision only",
        "not run",
    ),
)


def _loads(workload: str, loads: list[float]) -> list[float | None]:
    """The loads a workload runs at: the study's, if one stream of its traffic arrives
    at a load; its own, if several do (a surge's are the point of it)."""
    at_a_load = [t for t in workload_file(workload)["traffic"] if "load" in t]
    return list(loads) if len(at_a_load) == 1 else [None]


def run_cell(
    workload: str,
    fabric: str,
    scheme: str,
    load: float | None,
    seed: int,
    trained: dict | None = None,
) -> dict:
    """One scheme on one fabric and workload at one seed: its objectives, or why it
    cannot run there (`refused`). A learned scheme runs what it learned (`trained`, its
    training job's result) on this traffic, which it never trained on."""
    contender = SCHEMES.lookup(scheme)
    try:
        # Through TOML, so a refusal reads as a scenario file's would (key and fix).
        spec, sim = build(workload, fabric, contender, load, seed)
        if contender.learning is not None:
            if trained is None:
                raise ValueError(f"{scheme} is learned: run its training job first")
            if "refused" in trained:
                return {"refused": trained["refused"]}
            contender.learning.attach(sim, trained, seed)
    except (ScenarioError, ValueError) as e:
        return {"refused": " ".join(str(e).split())}
    except ImportError as e:
        return {"refused": _missing(scheme, e)}
    wall = spec.execute(sim)
    summary = summarize(sim, scenario=spec.name, wall_s=wall)
    slowdown = summary["slowdown"]
    # Goodput over the traffic's own span, to its last flow's finish: a run with a
    # control program stops at its next control event after that, nanoseconds later,
    # and the scheme must not pay for the simulator's stopping rule.
    flows = sim.flows()
    finished = flows["finish_ps"] >= 0
    span_ps = int(flows["finish_ps"].max()) if finished.all() and len(flows["src"]) else sim.now
    goodput_bps = summary["bytes_delivered"] * 8 / (span_ps / 1e12)

    def figure(value: object) -> float:
        return float("nan") if value is None else float(value)

    return {
        "flows": summary["flows"],
        "flows_unfinished": summary["flows_unfinished"],
        "slowdown_mean": figure(slowdown["all"]["mean"]),
        "slowdown_p99": figure(slowdown["all"]["p99"]),
        "small_slowdown_p99": figure(slowdown["lt100KB"]["p99"]),
        "large_slowdown_mean": figure(slowdown["gt1MB"]["mean"]),
        "goodput_gbps": goodput_bps / 1e9,
        "bisection_fraction": goodput_bps / (2 * bisection_bandwidth_bps(sim.topology)),
        "jain": figure(summary["flow_throughput_jain"]),
        "queue_wait_us": summary["mean_queue_wait_us"],
        "queue_wait_p99_us": summary["p99_queue_wait_us"],
        "drops": float(summary["packets_dropped"]),
        "wall_per_simulated_s": wall / summary["simulated_s"],
        "commands": float(sim.control_plane.commands_sent if sim.control_plane else 0),
        "reads": float(sim.control_plane.reads_sent if sim.control_plane else 0),
        "training_s": float(trained["wall_s"]) if trained is not None else 0.0,
    }


def _variant(workload: str, fabric: str, load: float | None) -> str:
    return f"{workload}{'' if load is None else f' {load}'} / {fabric}"


def train(scheme: str, seed: int, episodes: int, episode_ms: float, loads: list[float]) -> dict:
    """Learned scheme `scheme`'s training at `seed` (`Learning.train`), before any cell
    of it runs."""
    contender = SCHEMES.lookup(scheme)
    if contender.learning is None:
        raise ValueError(f"{scheme} learns nothing: it has no training")
    try:
        return contender.learning.train(contender, seed, episodes, episode_ms, loads)
    except ImportError as e:
        # Its cells then show why instead of a number (`run_cell`).
        return {"refused": _missing(scheme, e)}


def _missing(scheme: str, error: ImportError) -> str:
    """Why `scheme` cannot run on this install: a package it needs is not installed."""
    return (
        f"{scheme} needs PyTorch, which this install lacks: pip install 'isthmus[neural]' "
        f"({' '.join(str(error).split())[:120]})"
    )


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Each learned scheme's training at each seed, then every cell (a learned scheme's
    take its seed's training)."""
    unknown = [s for s in settings["schemes"] if s not in SCHEMES]
    if unknown:
        SCHEMES.lookup(unknown[0])  # names the closest known scheme
    episodes = settings.get("training_episodes", {})
    for scheme in settings["schemes"]:
        learning = SCHEMES[scheme].learning
        if learning is None:
            continue
        count = episodes.get(learning.name)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(
                f"training_episodes: {scheme} learns as {learning.name}, which needs a "
                f"whole number of training episodes of at least 1, e.g. "
                f"{{'{learning.name}': 8}}"
            )
    training = {
        (scheme, seed): Job(
            TRAINING,
            scheme,
            seed,
            train,
            {
                "scheme": scheme,
                "seed": seed,
                "episodes": settings["training_episodes"][SCHEMES[scheme].learning.name],
                "episode_ms": settings["training_episode_ms"],
                "loads": list(settings["loads"]) or [0.5],
            },
        )
        for scheme in settings["schemes"]
        if SCHEMES[scheme].learning is not None
        for seed in seeds
    }
    out = list(training.values())
    for fabric in settings["fabrics"]:
        for workload in settings["workloads"]:
            for load in _loads(workload, settings["loads"]):
                for scheme in settings["schemes"]:
                    for seed in seeds:
                        trained = training.get((scheme, seed))
                        out.append(
                            Job(
                                NAME,
                                scheme,
                                seed,
                                run_cell,
                                {
                                    "workload": workload,
                                    "fabric": fabric,
                                    "scheme": scheme,
                                    "load": load,
                                    "seed": seed,
                                },
                                variant=_variant(workload, fabric, load),
                                needs={"trained": trained.name} if trained else {},
                            )
                        )
    return out


def standings(results: Results) -> list[dict]:
    """One row per (cell, objective, scheme): mean, 95 % half-width, seeds, whether the
    scheme is among its group's winners there (None: no verdict), or why it could not
    run. The arena's table, as data (the Parquet file holds it)."""
    from isthmus.compare import mean_interval

    rows = []
    for variant in results.distinct("variant", experiment=NAME):
        for group in GROUPS:
            members = [
                s
                for s in results.distinct("scheme", experiment=NAME, variant=variant)
                if SCHEMES[s].group == group
            ]
            if not members:
                continue
            outcomes = {
                s: results.select(experiment=NAME, variant=variant, scheme=s) for s in members
            }
            # Completion-time figures count finished flows only: where a contender left
            # flows unfinished at the run's cap they would flatter it, so no verdict.
            unfinished = any(
                r.get("flows_unfinished", 0) > 0 for found in outcomes.values() for r in found
            )
            # The group's own contenders are judged among themselves; a sensitivity row
            # in its original's place, so its verdict says whether the departure it
            # varies changes the original's.
            main = [m for m in members if SCHEMES[m].varies is None]
            for objective in OBJECTIVES:
                key = objective.key
                samples = {
                    s: [r[key] for r in found if "refused" not in r]
                    for s, found in outcomes.items()
                }
                verdicts = {}
                for scheme in members:
                    original = SCHEMES[scheme].varies
                    if original is None and "main" in verdicts:
                        verdicts[scheme] = verdicts["main"]
                        continue
                    judged = [m for m in main if m != original]
                    if original is not None:
                        judged.append(scheme)
                    verdict = unbeaten(
                        {m: samples[m] for m in judged}, lower_is_better=objective.lower_is_better
                    )
                    if unfinished and objective.finished_flows_only:
                        verdict = None
                    verdicts[scheme] = verdict
                    if original is None:
                        verdicts["main"] = verdict
                for scheme, found in outcomes.items():
                    verdict = verdicts[scheme]
                    refused = next((r["refused"] for r in found if "refused" in r), None)
                    finite = [v for v in samples[scheme] if np.isfinite(v)]
                    mean, half = mean_interval(finite) if finite else (float("nan"),) * 2
                    rows.append(
                        {
                            "variant": variant,
                            "group": group,
                            "scheme": scheme,
                            "varies": SCHEMES[scheme].varies or "",
                            "objective": key,
                            "mean": mean,
                            "half_width": half if len(finite) > 1 else float("nan"),
                            "seeds": len(finite),
                            "winner": None
                            if verdict is None or refused or not finite
                            else scheme in verdict[0],
                            "refused": refused or "",
                        }
                    )
    return rows


def _winners(rows: list[dict]) -> dict[tuple[str, str, str], list[str]]:
    """(variant, group, objective) -> its winners among the group's own contenders (only
    where there is a verdict; sensitivity rows apart)."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        if row["winner"] is not None and not row["varies"]:
            place = out.setdefault((row["variant"], row["group"], row["objective"]), [])
            if row["winner"]:
                place.append(row["scheme"])
    return out


def _sensitivity_notes(rows: list[dict]) -> list[str]:
    """For each sensitivity row: in how many network verdicts it is unbeaten in its
    original's place, beside the original, and how many of those verdicts differ."""
    network = {o.key for o in OBJECTIVES if o.network}
    verdicts = {
        (r["variant"], r["objective"], r["scheme"]): r["winner"]
        for r in rows
        if r["objective"] in network and r["winner"] is not None
    }
    notes = []
    for scheme in dict.fromkeys(r["scheme"] for r in rows if r["varies"]):
        original = SCHEMES[scheme].varies
        both = [
            (won, verdicts[(variant, objective, original)])
            for (variant, objective, name), won in verdicts.items()
            if name == scheme and (variant, objective, original) in verdicts
        ]
        if not both:
            continue
        differ = sum(a != b for a, b in both)
        notes.append(
            f"Sensitivity {scheme} ({SCHEMES[scheme].source}) in {original}'s place: unbeaten "
            f"in {sum(a for a, _ in both)} of {len(both)} network verdicts, {original} in "
            f"{sum(b for _, b in both)}; {differ} of them differ"
        )
    return notes


def table(results: Results) -> StudyTable:
    rows = standings(results)
    winners = _winners(rows)
    shown = [o for o in OBJECTIVES if o.shown]
    columns = ["workload / fabric", "group", "scheme", *(o.short for o in shown)]
    columns.append("unbeaten")
    by_key = {(r["variant"], r["scheme"], r["objective"]): r for r in rows}
    table_rows = []
    for variant in results.distinct("variant", experiment=NAME):
        for scheme in results.distinct("scheme", experiment=NAME, variant=variant):
            group = SCHEMES[scheme].group
            found = results.select(experiment=NAME, variant=variant, scheme=scheme)
            refused = next((r["refused"] for r in found if "refused" in r), None)
            if refused:
                cells = [f"cannot run: {refused}"] + [""] * (len(shown) - 1)
            else:
                cells = [cell([r[o.key] for r in found], digits=o.digits) for o in shown]
            judged = [by_key[(variant, scheme, o.key)]["winner"] for o in OBJECTIVES if o.network]
            verdicts = [w for w in judged if w is not None]
            wins = f"{sum(verdicts)} of {len(verdicts)}" if verdicts else "-"
            original = SCHEMES[scheme].varies
            label = scheme if original is None else f"{scheme} (sensitivity, for {original})"
            table_rows.append([variant, group, label, *cells, wins])
    claims = []
    network = {o.key for o in OBJECTIVES if o.network}
    for group in dict.fromkeys(r["group"] for r in rows):
        places = {k: v for k, v in winners.items() if k[1] == group and k[2] in network}
        members = list(
            dict.fromkeys(
                r["scheme"]
                for r in rows
                if r["group"] == group and not r["refused"] and not r["varies"]
            )
        )
        if len(members) < 2:
            continue  # nobody to be beaten by: no claim either way
        wins = {s: sum(s in v for v in places.values()) for s in members}
        ranked = sorted(wins.items(), key=lambda item: -item[1])
        statement = (
            f"No single {group} scheme wins every network objective on every workload "
            "(no silver bullet)"
        )
        if not places:
            claims.append(
                Claim(
                    statement,
                    None,
                    f"no verdict: no (workload, objective) cell has one; a verdict needs "
                    f"{MIN_SEEDS} or more seeds (--seeds 5 for intervals), this run has "
                    f"{len(results.seeds)}",
                )
            )
            continue
        always = [s for s, n in ranked if n == len(places)]
        claims.append(
            over_seeds(
                statement,
                not always,
                f"unbeaten in how many of {len(places)} (workload, objective) verdicts: "
                + ", ".join(f"{s} {n}" for s, n in ranked),
                len(results.seeds),
            )
        )
    notes = [f"{group}: {what}." for group, what in GROUPS.items()]
    variants = results.distinct("variant", experiment=NAME)
    for group in dict.fromkeys(r["group"] for r in rows):
        for objective in OBJECTIVES:
            tally: dict[str, int] = {}
            judged = 0
            for variant in variants:
                found = winners.get((variant, group, objective.key))
                if found is not None:
                    judged += 1
                    for scheme in found:
                        tally[scheme] = tally.get(scheme, 0) + 1
            if judged:
                ranked = sorted(tally.items(), key=lambda item: -item[1])
                shown_wins = ", ".join(f"{s} {n}" for s, n in ranked)
                notes.append(
                    f"{group}, {objective.label}: unbeaten on how many of {judged} "
                    f"workloads: {shown_wins}"
                )
    notes += _sensitivity_notes(rows)
    for scheme in results.distinct("scheme", experiment=TRAINING):
        refused = [
            r["refused"]
            for r in results.select(experiment=TRAINING, scheme=scheme)
            if "refused" in r
        ]
        if refused:
            notes.append(f"{scheme} did not train: {refused[0]}")
            continue
        claim, note = SCHEMES[scheme].learning.judge(scheme, results)
        claims.append(claim)
        notes.append(note)
    notes.append(
        "A scheme wins an objective where no other scheme of its group beats it beyond the "
        "95 % interval of the difference (Welch, over seeds); ties are ties, and one seed "
        "gives no verdict."
    )
    return StudyTable(
        "Arena: each scheme against its group",
        columns,
        table_rows,
        claims,
        notes,
        list(DEPARTURES),
    )


def _cell_of(variant: str) -> tuple[str, float | None, str]:
    """(workload, load, fabric) of a variant as `_variant` writes it."""
    workload, fabric = variant.split(" / ")
    name, _, load = workload.partition(" ")
    return name, float(load) if load else None, fabric


def cell_scenarios(results: Results) -> dict[tuple[str, str], str | None]:
    """(variant, scheme) -> the scenario that runs that cell alone (TOML), None for a
    learned scheme (its agents attach from Python after its training)."""
    out: dict[tuple[str, str], str | None] = {}
    for record in results.matching(experiment=NAME):
        key = (record["variant"], record["scheme"])
        if key in out or record["scheme"] not in SCHEMES:
            continue
        scheme = SCHEMES[record["scheme"]]
        workload, load, fabric = _cell_of(record["variant"])
        out[key] = (
            None
            if scheme.learning is not None
            else tomli_w.dumps(arena_scenario(workload, fabric, scheme, load))
        )
    return out


def figures(results: Results, folder: Path) -> list[Path]:
    """The arena as Parquet (one row per cell, objective and scheme, for SQL), as an
    interactive page (a heat map of scheme x workload per objective, each cell's runs a
    click away) and as Markdown tables (docs/arena.md)."""
    rows = standings(results)
    return [
        write_parquet(rows, folder / "arena.parquet"),
        write_page(
            rows,
            folder / "arena.html",
            results.matching(experiment=NAME),
            cell_scenarios(results),
        ),
        write_markdown(rows, folder / "arena.md"),
    ]
