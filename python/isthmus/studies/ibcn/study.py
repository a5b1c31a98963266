"""`isthmus reproduce ibcn`: the prediction half, then the congestion-management half,
in one table beside the paper's figures."""

from __future__ import annotations

from dataclasses import asdict

from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, cell
from isthmus.studies import StudyTable
from isthmus.studies.ibcn import congestion, prediction

# Scenario 1 (transactions per second, goodput Gb/s, delay us) and scenario 2 (average
# throughput, its standard deviation %) as the paper's tables give them.
PAPER_SCENARIO1 = {
    "none": (726, 0.084, 2038),
    "bcn": (7124, 0.462, 215.8),
    "ibcn-lstm": (8217, 0.534, 196.4),
    "ibcn-gru": (8193, 0.507, 205.7),
    "ibcn-skip_lstm": (7131, 0.468, 211.9),
    "ibcn-bilstm": (7045, 0.455, 231.9),
}
PAPER_SCENARIO2 = {"none": (3.126, 18.5), "bcn": (2.984, 1.4), "ibcn-lstm": (3.273, 0.8)}

# The prediction half (polls collected, most epochs a network trains, LSTM depths) and
# the congestion half (schemes per experiment, time scales).
FULL = {
    "polls": 7200,
    "epochs": 100,
    "layers": (1, 2, 3, 4, 5, 6, 7, 8),
    "scenario1": congestion.SCHEMES,
    "scenario2": congestion.SCHEMES,
    "sweep_schemes": ("none", "bcn", "ibcn-lstm"),
    "loads": (0.1, 0.3, 0.5, 0.7, 0.9),
    "paper_schemes": ("bcn", "ibcn-lstm"),
    "scale": asdict(congestion.SCALED),
    "paper_scale": asdict(congestion.PAPER),
}
QUICK = {
    "polls": 1500,
    "epochs": 10,
    "layers": (1, 4),
    "scenario1": ("none", "bcn", "ibcn-lstm", "ibcn-arma"),
    "scenario2": ("none", "bcn", "ibcn-lstm"),
    "sweep_schemes": ("bcn", "ibcn-lstm"),
    "loads": (0.3, 0.9),
    "paper_schemes": (),
    "scale": asdict(congestion.QUICK_SCALED),
    "paper_scale": asdict(congestion.PAPER),
}


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """The prediction half's jobs, then one `congestion.scenario` run per experiment,
    scheme and seed."""
    scale, paper = settings["scale"], settings["paper_scale"]
    runs = [("scenario1", s, scale, {}) for s in settings["scenario1"]]
    runs += [("scenario2", s, scale, {"continuous": True}) for s in settings["scenario2"]]
    runs += [
        (f"load {load:.1f}", s, scale, {"load": load})
        for load in settings["loads"]
        for s in settings["sweep_schemes"]
    ]
    runs += [("scenario1 paper", s, paper, {}) for s in settings["paper_schemes"]]
    return prediction.jobs(settings, seeds) + [
        Job(
            experiment,
            scheme,
            seed,
            congestion.run_scenario,
            {
                "seed": seed,
                "scheme": scheme,
                "scale": timescale,
                "epochs": settings["epochs"],
                "workload": workload,
            },
        )
        for experiment, scheme, timescale, workload in runs
        for seed in seeds
    ]


# What each experiment's rows show: (label, result key, decimals, paper column index).
FIGURES = {
    "scenario1": (
        ("TPS", "tps", 0, 0),
        ("Gb/s", "goodput_gbps", 3, 1),
        ("delay us", "delay_us", 1, 2),
    ),
    "scenario2": (
        ("Mb/s per source", "per_source_mbps", 2, 0),
        ("std across sources %", "source_std_pct", 1, 1),
        ("std over time %", "time_std_pct", 1, None),
        ("bottleneck use %", "bottleneck_util_pct", 1, None),
        ("total Gb/s", "goodput_gbps", 3, None),
        ("delay us", "delay_us", 1, None),
    ),
    "load": (("Gb/s", "goodput_gbps", 3, None),),
}


def _congestion_rows(results: Results) -> list[list[str]]:
    rows = []
    for experiment in results.distinct("experiment"):
        kind = experiment.split()[0]
        if kind not in FIGURES:
            continue  # the prediction half's
        paper_table = {"scenario1": PAPER_SCENARIO1, "scenario2": PAPER_SCENARIO2}.get(
            experiment, {}
        )
        for scheme in results.distinct("scheme", experiment=experiment):
            paper = paper_table.get(scheme)
            for label, key, digits, column in FIGURES[kind]:
                cited = "" if paper is None or column is None else f"{paper[column]:,}"
                values = results.values(key, experiment=experiment, scheme=scheme)
                rows.append(
                    [f"{experiment} {label} | {scheme}", cell(values, digits), cited, "", ""]
                )
    return rows


# The paper's comparisons: (statement, experiment, figure, unit, winner, loser, higher wins).
CLAIMS = (
    (
        "Scenario 1: BCN completes more transactions per second than no congestion "
        "management (paper: 7,124 vs 726)",
        "scenario1",
        "tps",
        " transactions/s",
        "bcn",
        "none",
        True,
    ),
    (
        "Scenario 1: IBCN-LSTM completes more transactions per second than plain BCN "
        "(paper: 8,217 vs 7,124, +15 %)",
        "scenario1",
        "tps",
        " transactions/s",
        "ibcn-lstm",
        "bcn",
        True,
    ),
    (
        "Scenario 1: IBCN-LSTM delivers packets sooner than plain BCN (paper: 196.4 vs 215.8 us)",
        "scenario1",
        "delay_us",
        " us",
        "ibcn-lstm",
        "bcn",
        False,
    ),
    (
        "Scenario 2: IBCN-LSTM shares the bottleneck more evenly than plain BCN (paper: "
        "0.8 % vs 1.4 % standard deviation)",
        "scenario2",
        "source_std_pct",
        " %",
        "ibcn-lstm",
        "bcn",
        False,
    ),
    (
        "Scenario 2: IBCN-LSTM's throughput is higher than plain BCN's (paper: 3.273 vs 2.984)",
        "scenario2",
        "per_source_mbps",
        " Mb/s",
        "ibcn-lstm",
        "bcn",
        True,
    ),
)


def table(results: Results) -> StudyTable:
    rows, claims, notes = prediction.table_parts(results)
    rows += _congestion_rows(results)
    for statement, experiment, key, unit, winner, loser, higher_wins in CLAIMS:
        a = results.values(key, experiment=experiment, scheme=winner)
        b = results.values(key, experiment=experiment, scheme=loser)
        if a and b:  # both schemes ran
            claims.append(
                better(
                    statement,
                    a,
                    b,
                    lower_is_better=not higher_wins,
                    names=(winner, loser),
                    digits=1,
                    unit=unit,
                )
            )
    scale = results.settings["scale"]
    notes.append(
        f"Congestion management: {len(results.seeds)} seed(s); mean ± 95 % "
        f"t-interval; measured over {scale['measure_s']} s after a {scale['training_polls']}-poll "
        f"warm-up (IBCN's training set) at polls every {scale['interval_s'] * 1e3:g} ms and "
        f"STOP pauses of {scale['min_pause']}-{scale['max_pause']} (the paper's 1 s and "
        "200-800 ms scaled by 10^-3); 'scenario1 paper' rows use the paper's own interval "
        "and pauses. Transactions: 10 KB over persistent TCP connections, think time "
        "uniform 1-5 ms; 48 sources to 2 destinations on edge0, 40 of them through the 1 Gb/s "
        "agg0-edge0 link."
    )
    return StudyTable(
        title="IBCN: forecasting BCN queues, and BCN driven by the forecasts",
        columns=["figure | model or scheme", "ours", "paper", "MSE", "train s"],
        rows=rows,
        claims=claims,
        notes=notes,
    )
