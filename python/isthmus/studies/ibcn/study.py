"""`isthmus reproduce ibcn`: the prediction half, then the congestion-management half,
in one table beside the paper's figures."""

from __future__ import annotations

import time

import numpy as np

from isthmus.compare import mean_interval
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

FULL = {
    "scenario1": congestion.SCHEMES,
    "scenario2": congestion.SCHEMES,
    "sweep_schemes": ("none", "bcn", "ibcn-lstm"),
    "loads": (0.1, 0.3, 0.5, 0.7, 0.9),
    "paper_schemes": ("bcn", "ibcn-lstm"),
    "scale": congestion.SCALED,
    "paper_scale": congestion.PAPER,
}
QUICK = {
    "scenario1": ("none", "bcn", "ibcn-lstm", "ibcn-arma"),
    "scenario2": ("none", "bcn", "ibcn-lstm"),
    "sweep_schemes": ("bcn", "ibcn-lstm"),
    "loads": (0.3, 0.9),
    "paper_schemes": (),
    "scale": congestion.QUICK_SCALED,
    "paper_scale": congestion.PAPER,
}


def _jobs(settings: dict) -> list[tuple[str, str, dict]]:
    """(experiment, scheme, keyword arguments of `congestion.scenario`) per run of a seed."""
    scale, paper = settings["scale"], settings["paper_scale"]
    transactions, continuous = congestion.Workload(), congestion.Workload(continuous=True)
    jobs = [
        ("scenario1", s, {"scale": scale, "workload": transactions}) for s in settings["scenario1"]
    ]
    jobs += [
        ("scenario2", s, {"scale": scale, "workload": continuous}) for s in settings["scenario2"]
    ]
    jobs += [
        (f"load {load:.1f}", s, {"scale": scale, "workload": congestion.Workload(load=load)})
        for load in settings["loads"]
        for s in settings["sweep_schemes"]
    ]
    jobs += [
        ("scenario1 paper", s, {"scale": paper, "workload": transactions})
        for s in settings["paper_schemes"]
    ]
    return jobs


def run(quick: bool, seeds: list[int], on_progress=None) -> dict:
    settings = QUICK if quick else FULL
    epochs = prediction.QUICK["epochs"] if quick else prediction.FULL["epochs"]

    def predicting(done: int, total: int, label: str) -> None:
        if on_progress is not None:
            on_progress(done, total + len(seeds) * len(_jobs(settings)), label)

    results = prediction.run(quick, seeds, on_progress=predicting)
    jobs = _jobs(settings)
    total = 3 * len(seeds) + len(seeds) * len(jobs)
    done = 3 * len(seeds)
    runs = []
    for seed in seeds:
        for experiment, scheme, options in jobs:
            if on_progress is not None:
                on_progress(done, total, f"{experiment}, {scheme}, seed {seed}")
            started = time.perf_counter()
            outcome = congestion.scenario(seed, scheme, epochs=epochs, **options)
            outcome["experiment"] = experiment
            outcome["wall_s"] = time.perf_counter() - started
            runs.append(outcome)
            done += 1
    if on_progress is not None:
        on_progress(total, total, "done")
    results["congestion"] = {
        "runs": runs,
        "scale": congestion.scale_dict(settings["scale"]),
        "paper_scale": congestion.scale_dict(settings["paper_scale"]),
    }
    return results


def _by(runs: list[dict], experiment: str, scheme: str, key: str) -> list[float]:
    return [r[key] for r in runs if r["experiment"] == experiment and r["scheme"] == scheme]


def _cell(values: list[float], digits: int) -> str:
    if not values:
        return ""
    mean, half = mean_interval(values)
    return f"{mean:,.{digits}f} ± {half:,.{digits}f}"


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


def _congestion_rows(runs: list[dict]) -> list[list[str]]:
    rows = []
    for experiment in dict.fromkeys(r["experiment"] for r in runs):
        kind = experiment.split()[0]
        paper_table = {"scenario1": PAPER_SCENARIO1, "scenario2": PAPER_SCENARIO2}.get(
            experiment, {}
        )
        for scheme in dict.fromkeys(r["scheme"] for r in runs if r["experiment"] == experiment):
            paper = paper_table.get(scheme)
            for label, key, digits, column in FIGURES[kind]:
                cited = "" if paper is None or column is None else f"{paper[column]:,}"
                rows.append(
                    [
                        f"{experiment} {label} | {scheme}",
                        _cell(_by(runs, experiment, scheme, key), digits),
                        cited,
                        "",
                        "",
                    ]
                )
    return rows


# The paper's comparisons: (statement, experiment, figure, winner, loser, higher wins).
CLAIMS = (
    (
        "Scenario 1: BCN completes more transactions per second than no congestion "
        "management (paper: 7,124 vs 726)",
        "scenario1",
        "tps",
        "bcn",
        "none",
        True,
    ),
    (
        "Scenario 1: IBCN-LSTM completes more transactions per second than plain BCN "
        "(paper: 8,217 vs 7,124, +15 %)",
        "scenario1",
        "tps",
        "ibcn-lstm",
        "bcn",
        True,
    ),
    (
        "Scenario 1: IBCN-LSTM delivers packets sooner than plain BCN (paper: 196.4 vs 215.8 us)",
        "scenario1",
        "delay_us",
        "ibcn-lstm",
        "bcn",
        False,
    ),
    (
        "Scenario 2: IBCN-LSTM shares the bottleneck more evenly than plain BCN (paper: "
        "0.8 % vs 1.4 % standard deviation)",
        "scenario2",
        "source_std_pct",
        "ibcn-lstm",
        "bcn",
        False,
    ),
    (
        "Scenario 2: IBCN-LSTM's throughput is higher than plain BCN's (paper: 3.273 vs 2.984)",
        "scenario2",
        "per_source_mbps",
        "ibcn-lstm",
        "bcn",
        True,
    ),
)


def _has(runs: list[dict], spec: tuple) -> bool:
    _, experiment, key, winner, loser, _ = spec
    return bool(_by(runs, experiment, winner, key) and _by(runs, experiment, loser, key))


def _claim(runs: list[dict], statement, experiment, key, winner, loser, higher_wins):
    """Holds only where the 95 % Welch interval of the difference excludes zero."""
    from isthmus.compare import welch_interval
    from isthmus.studies import Claim

    a = np.array(_by(runs, experiment, winner, key))
    b = np.array(_by(runs, experiment, loser, key))
    interval = welch_interval(b, a)  # of mean(winner) - mean(loser)
    if interval is None:
        return Claim(
            statement,
            False,
            f"{winner} {a.mean():,.1f}, {loser} {b.mean():,.1f} "
            f"({key}); one seed gives no interval",
        )
    low, high = interval
    holds = low > 0 if higher_wins else high < 0
    return Claim(
        statement,
        holds,
        f"{key}: {winner} {a.mean():,.1f}, {loser} {b.mean():,.1f}; 95 % interval of the "
        f"difference [{low:,.1f}, {high:,.1f}]",
    )


def table(results: dict):
    from isthmus.studies import StudyTable

    shown = prediction.table(results)
    rows = [[*row] for row in shown.rows]
    claims = list(shown.claims)
    notes = list(shown.notes)
    congestion_results = results.get("congestion")
    if congestion_results is None:
        return shown
    runs = congestion_results["runs"]
    rows += _congestion_rows(runs)

    claims += [_claim(runs, *spec) for spec in CLAIMS if _has(runs, spec)]
    scale = congestion_results["scale"]
    notes.append(
        f"Congestion management: {len({r['seed'] for r in runs})} seed(s); mean ± 95 % "
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
