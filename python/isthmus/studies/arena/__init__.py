"""The arena: every scheme against every other on the same fabrics and workloads.

Each paper compares its scheme with its own baselines, on its own testbed, by its own
metrics. Here the schemes that make the same decision (`schemes.GROUPS`: path
selection, queue management, congestion signalling) run on one engine, on the same
fabrics (`FABRICS`: a leaf-spine at 2:1 oversubscription, k = 4 and k = 8 fat-trees) and the same
workloads (`workloads/*.toml`: web search and data mining at a load, a permutation of
long flows, incast rounds), and every run is scored by every objective any of the papers
cares about (`OBJECTIVES`). Per workload and objective, the schemes of a group that no
other beats beyond the 95 % interval of the difference (Welch, over seeds) are its
winners; a tie is a tie. A scheme that cannot run in a cell shows why.

A workload is a scenario file: the arena keeps its traffic and [run], and puts in each
fabric's topology and each scheme's [network], transport and [control]. A new workload
is a new file in `workloads/`; a new scheme, a `schemes.register` call.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import tomli_w

from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import MIN_SEEDS, cell, over_seeds, unbeaten
from isthmus.network_metrics import bisection_bandwidth_bps
from isthmus.results import summarize
from isthmus.scenario import ScenarioError, parse_scenario
from isthmus.studies import Claim, Departure, StudyTable
from isthmus.studies.arena.objectives import OBJECTIVES
from isthmus.studies.arena.page import write_markdown, write_page, write_parquet
from isthmus.studies.arena.schemes import GROUPS, SCHEMES, Scheme

NAME = "arena"
TITLE = (
    "The arena: path selection, queue management and congestion signalling schemes, "
    "each against the others on the same fabrics and workloads"
)
WORKLOADS = Path(__file__).parent / "workloads"

FABRICS: dict[str, dict] = {
    # 32 hosts at 10 Gb/s under 4 leaves, each leaf 2 x 20 Gb/s up: 2:1 oversubscribed.
    "leafspine": {
        "kind": "leaf_spine",
        "spines": 2,
        "leaves": 4,
        "hosts_per_leaf": 8,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "20Gbps", "delay": "1us"},
    },
    # 16 hosts, every link 10 Gb/s: full bisection, four core paths between pods.
    "fattree4": {
        "kind": "fat_tree",
        "k": 4,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "10Gbps", "delay": "1us"},
    },
    # 128 hosts, 16 core paths between pods.
    "fattree8": {
        "kind": "fat_tree",
        "k": 8,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "10Gbps", "delay": "1us"},
    },
}


FULL = {
    "fabrics": ["leafspine", "fattree4", "fattree8"],
    "workloads": ["websearch", "datamining", "permutation", "incast", "surge"],
    # Loads for the workloads that arrive at a load (web search, data mining).
    "loads": [0.3, 0.6],
    "schemes": list(SCHEMES),
}
QUICK = {
    "fabrics": ["leafspine"],
    "workloads": ["websearch", "permutation", "incast"],
    "loads": [0.5],
    "schemes": list(SCHEMES),
}

DEPARTURES = (
    Departure(
        "topology",
        "Each paper's own testbed: Diolkos and IBCN on Mininet meshes, OFPT and Hedera on "
        "fat-trees, ACC on a testbed leaf-spine, DCTCP's on one rack",
        "The same fabrics for every scheme: a 32-host leaf-spine at 2:1 "
        "oversubscription, k = 4 and k = 8 fat-trees (16 and 128 hosts), 10 Gb/s hosts, "
        "1 us links",
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
        "not run",
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
        "baseline",
        "Each group's papers hold the other decisions at their own testbed's settings",
        "Each group holds them at one baseline (`schemes.GROUPS`): path selection over "
        "the reference benchmark's DCTCP with K = 65; queue management with loss-based "
        "TCP over ECMP; congestion signalling with DCTCP over ECMP",
        "A group's schemes differ in its one decision only",
        "not run",
    ),
)


def _workload(name: str) -> dict:
    return tomllib.loads((WORKLOADS / f"{name}.toml").read_text())


def arena_scenario(workload: str, fabric: str, scheme: Scheme, load: float | None) -> dict:
    """The scenario one cell runs: the workload's traffic and [run] on the fabric, with
    the scheme's [network], transport and [control]."""
    raw = _workload(workload)
    raw["name"] = f"arena-{workload}-{fabric}-{scheme.name}"
    raw["topology"] = FABRICS[fabric]
    raw["network"] = dict(scheme.network)
    raw["tcp"] = {**raw.get("tcp", {}), **scheme.tcp}
    raw.pop("control", None)
    if scheme.control is not None:
        raw["control"] = scheme.control
    for traffic in raw["traffic"]:
        traffic["transport"] = scheme.transport
        if load is not None and "load" in traffic:
            traffic["load"] = load
    return raw


def _loads(workload: str, loads: list[float]) -> list[float | None]:
    """The loads a workload runs at: the study's, if one stream of its traffic arrives
    at a load; its own, if several do (a surge's are the point of it)."""
    at_a_load = [t for t in _workload(workload)["traffic"] if "load" in t]
    return list(loads) if len(at_a_load) == 1 else [None]


def run_cell(workload: str, fabric: str, scheme: str, load: float | None, seed: int) -> dict:
    """One scheme on one fabric and workload at one seed: its objectives, or why it
    cannot run there (`refused`)."""
    contender = SCHEMES.lookup(scheme)
    try:
        # Through TOML, so a refusal reads as a scenario file's would (key and fix).
        text = tomli_w.dumps(arena_scenario(workload, fabric, contender, load))
        spec = parse_scenario(text, f"{scheme} on {workload} / {fabric}")
        sim = spec.build(seed=seed, base=WORKLOADS)
    except (ScenarioError, ValueError) as e:
        return {"refused": " ".join(str(e).split())}
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
        "drops": float(summary["packets_dropped"]),
        "wall_per_simulated_s": wall / summary["simulated_s"],
        "commands": float(sim.control_plane.commands_sent if sim.control_plane else 0),
    }


def _variant(workload: str, fabric: str, load: float | None) -> str:
    return f"{workload}{'' if load is None else f' {load}'} / {fabric}"


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    unknown = [s for s in settings["schemes"] if s not in SCHEMES]
    if unknown:
        SCHEMES.lookup(unknown[0])  # names the closest known scheme
    out = []
    for fabric in settings["fabrics"]:
        for workload in settings["workloads"]:
            for load in _loads(workload, settings["loads"]):
                for scheme in settings["schemes"]:
                    for seed in seeds:
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
                            )
                        )
    return out


def standings(results: Results) -> list[dict]:
    """One row per (cell, objective, scheme): mean, 95 % half-width, seeds, whether the
    scheme is among its group's winners there (None: no verdict), or why it could not
    run. The arena's table, as data (the Parquet file holds it)."""
    from isthmus.compare import mean_interval

    rows = []
    for variant in results.distinct("variant"):
        for group in GROUPS:
            members = [
                s for s in results.distinct("scheme", variant=variant) if SCHEMES[s].group == group
            ]
            if not members:
                continue
            outcomes = {s: results.select(variant=variant, scheme=s) for s in members}
            # Completion-time figures count finished flows only: where a contender left
            # flows unfinished at the run's cap they would flatter it, so no verdict.
            unfinished = any(
                r.get("flows_unfinished", 0) > 0 for found in outcomes.values() for r in found
            )
            for objective in OBJECTIVES:
                key = objective.key
                samples = {
                    s: [r[key] for r in found if "refused" not in r]
                    for s, found in outcomes.items()
                }
                verdict = unbeaten(samples, lower_is_better=objective.lower_is_better)
                if unfinished and objective.finished_flows_only:
                    verdict = None
                for scheme, found in outcomes.items():
                    refused = next((r["refused"] for r in found if "refused" in r), None)
                    finite = [v for v in samples[scheme] if np.isfinite(v)]
                    mean, half = mean_interval(finite) if finite else (float("nan"),) * 2
                    rows.append(
                        {
                            "variant": variant,
                            "group": group,
                            "scheme": scheme,
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
    """(variant, group, objective) -> its winners (only where there is a verdict)."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        if row["winner"] is not None:
            place = out.setdefault((row["variant"], row["group"], row["objective"]), [])
            if row["winner"]:
                place.append(row["scheme"])
    return out


def table(results: Results) -> StudyTable:
    rows = standings(results)
    winners = _winners(rows)
    shown = [o for o in OBJECTIVES if o.shown]
    columns = ["workload / fabric", "group", "scheme", *(o.short for o in shown)]
    columns.append("unbeaten")
    by_key = {(r["variant"], r["scheme"], r["objective"]): r for r in rows}
    table_rows = []
    for variant in results.distinct("variant"):
        for scheme in results.distinct("scheme", variant=variant):
            group = SCHEMES[scheme].group
            found = results.select(variant=variant, scheme=scheme)
            refused = next((r["refused"] for r in found if "refused" in r), None)
            if refused:
                cells = [f"cannot run: {refused}"] + [""] * (len(shown) - 1)
            else:
                cells = [cell([r[o.key] for r in found], digits=o.digits) for o in shown]
            judged = [by_key[(variant, scheme, o.key)]["winner"] for o in OBJECTIVES if o.network]
            verdicts = [w for w in judged if w is not None]
            wins = f"{sum(verdicts)} of {len(verdicts)}" if verdicts else "-"
            table_rows.append([variant, group, scheme, *cells, wins])
    claims = []
    network = {o.key for o in OBJECTIVES if o.network}
    for group in dict.fromkeys(r["group"] for r in rows):
        places = {k: v for k, v in winners.items() if k[1] == group and k[2] in network}
        members = list(
            dict.fromkeys(r["scheme"] for r in rows if r["group"] == group and not r["refused"])
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
    variants = results.distinct("variant")
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


def figures(results: Results, folder: Path) -> list[Path]:
    """The arena as Parquet (one row per cell, objective and scheme, for SQL), as an
    interactive page (a heat map of scheme x workload per objective) and as Markdown
    tables (docs/arena.md)."""
    rows = standings(results)
    return [
        write_parquet(rows, folder / "arena.parquet"),
        write_page(rows, folder / "arena.html"),
        write_markdown(rows, folder / "arena.md"),
    ]
