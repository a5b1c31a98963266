"""IBCN's prediction study: how well each forecaster predicts switch queues.

Reproduces the prediction tables of Tran, Nguyen, Souihi and Mellouk, "Towards a Novel
Congestion Notification Algorithm for Software-Defined Data Center Networks";
`congestion` has the congestion-management half.

                 core0
           10G /         \\ 10G
            agg0           agg1
          /  |  \\          /  \\        1 Gb/s
     edge0 edge1 edge2  edge3 edge4
      h0-9  h10-19 ...   ...   h40-49  (10 hosts each, 1 Gb/s)

The paper gives the counts (1 core, 2 aggregation, 5 edge switches, 10 hosts per edge)
and the rates, not the wiring; a tree (three edges under agg0, two under agg1) is the
reading where traffic between the aggregations crosses the core, as its scenario 2
needs.

1. The training set: 48 sources (64 B datagrams) send to the 2 hosts of edge0, each at
   a rate drawn uniformly from 10 Mb/s to 1 Gb/s and drawn again every `REDRAW_POLLS`
   polls; every switch's queue (its fullest port's, as the controller reads it) is
   polled every interval: 7,200 polls x 8 switches, the paper's dataset (split 5,760 /
   1,440 there). Two collection regimes (`REGIMES`):
   - `fixed rate` (the main rows): each source sends at its rate with constant spacing
     and nothing manages congestion, as the paper's tcpreplay replays traffic at a
     fixed rate (the paper never says BCN ran while it collected);
   - `BCN on` (labelled rows, this study's setting before): congestion points on every
     port (Qeq 20, Qsc 90, w 2, Pm 0.01) and every source behind a BCN regulator (Gi
     4, Gd 0.02, Ru 3 Mb/s) that restarts at `RESTART_BPS` after a STOP.
2. The paper polls every 500 ms while collecting; 1 Gb/s queues change within
   microseconds, so the interval here is scaled by 10^-3 to 500 us (the paper's interval
   would need an hour of simulated time per dataset and sees queues as noise).
3. Every forecaster predicts the next k = 5 polls of the switches that ever queue from
   the last W = 10 polls of every switch (`forecast_test`, `isthmus.predict.score`'s
   protocol with every forecast kept: trained on 70 % of the polls, early-stopped on
   10 %, tested on the other 20 %, 1,440 polls): ARMA, ARAR, Holt-Winters, LSTM (4
   layers, the paper's default), GRU and BiLSTM (2 layers, the library's most),
   Skip-LSTM; and three baselines at the same origins (`BASELINES`): persistence (the
   last poll, k times), the training set's mean per switch, and all zeros.
4. Errors over every (origin, step, switch) of the test set, pooled and per switch
   (`errors`): the paper's Eq. 11, the signed relative error (q - q^) / q averaged over
   the pairs whose actual queue q is not 0 (it is undefined there); WAPE, sum |q^ - q| /
   sum |q|; MSE. Eq. 11 cannot rank models (signed errors cancel, and all zeros score
   exactly 100 % on any data); the claims that rank models use WAPE.
5. LSTM depth on the main rows' data: WAPE, MSE and training time for 1 to 8 layers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from isthmus import predict
from isthmus.control import Controller, ControlPlane
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, cell
from isthmus.predict import MODELS, Forecaster, StatelessForecaster
from isthmus.simulation import Simulation
from isthmus.studies import Claim
from isthmus.topology import Link, Topology

# The paper's Eq. 11 figures (%).
PAPER_ERRORS = {
    "arma": 41.3,
    "arar": 29.6,
    "holt_winters": 26.5,
    "lstm": 3.7,
    "gru": 4.1,
    "skip_lstm": 11.7,
    "bilstm": 8.5,
}
MODEL_OPTIONS = {
    "arma": {},
    "arar": {},
    "holt_winters": {},
    "lstm": {"layers": 4},
    "gru": {"layers": 2},
    "skip_lstm": {},
    "bilstm": {"layers": 2},
}
NEURAL = ("lstm", "gru", "skip_lstm", "bilstm")
INTERVAL_US = 500
REDRAW_POLLS = 200
WINDOW, HORIZON = 10, 5
# Test, train, validation: chronological, the test set first.
SPLIT = (0.2, 0.7, 0.1)
BCN = {"pm": 0.01, "q_eq": 20.0, "q_sc": 90.0, "w": 2.0}
SWITCHES = ("core0", "agg0", "agg1", "edge0", "edge1", "edge2", "edge3", "edge4")
# h0 and h1 sit on edge0: the 40 sources outside edge0 reach them through the 1 Gb/s
# link from agg0 down to edge0, the bottleneck they share (the 8 on edge0 share only the
# destinations' own links). Both halves send 48 sources to h0 and h1, so one rule serves
# both: a STOPped source restarts at its fair share of that link (the paper gives none).
BOTTLENECK_BPS = 1e9
REMOTE_SOURCES = 40
RESTART_BPS = BOTTLENECK_BPS / REMOTE_SOURCES
# How the sources behave while the queues are polled; the first is the main setting.
REGIMES = {
    "fixed rate": "fixed-rate sources and no congestion management, as the paper's tcpreplay",
    "BCN on": "BCN-regulated sources and BCN points, this study's setting before",
}
MAIN_REGIME = next(iter(REGIMES))


def tree() -> Topology:
    """The paper's three tiers as a tree (see the module's doc)."""
    gig, ten = Link("1Gbps", "1us"), Link("10Gbps", "1us")
    hosts = [f"h{i}" for i in range(50)]
    edges = [s for s in SWITCHES if s.startswith("edge")]
    links = [(f"h{i}", edges[i // 10], gig) for i in range(50)]
    links += [(edges[e], "agg0" if e < 3 else "agg1", gig) for e in range(5)]
    links += [("agg0", "core0", ten), ("agg1", "core0", ten)]
    return Topology.custom(hosts, list(SWITCHES), links)


def network(seed: int, bcn: bool = True) -> Simulation:
    """The tree with 200-packet buffers, BCN points on every switch port if `bcn`."""
    return Simulation(tree(), seed=seed, switch_queue="200pkts", bcn=dict(BCN) if bcn else None)


class QueuePoller(Controller):
    """Records every switch's queue (its fullest port's, packets) every `interval`."""

    def __init__(self, interval: str):
        self.interval = interval
        self.rows: list[np.ndarray] = []
        self.switches: list[str] = []

    def on_start(self) -> None:
        switches = [i for i, kind in enumerate(self.ports.kinds) if kind == "switch"]
        self.switches = [self.ports.names[i] for i in switches]
        column = {node: i for i, node in enumerate(switches)}
        nodes = self.port_stats()["node"].tolist()
        self._ports = np.array([n in column for n in nodes])
        self._column = np.array([column[n] for n in nodes if n in column])
        self._width = len(switches)
        self.every(self.interval, self.poll)

    def poll(self) -> None:
        queues = self.port_stats()["queue_packets"][self._ports].astype(float)
        row = np.zeros(self._width)
        np.maximum.at(row, self._column, queues)
        self.rows.append(row)


def collect(seed: int, polls: int, regime: str = MAIN_REGIME) -> np.ndarray:
    """The training set: polls x switches (`SWITCHES`' order) of queue sizes, the
    sources behaving as `regime` says. Both regimes draw the same rates for a seed."""
    if regime not in REGIMES:
        raise ValueError(f"regime is one of {', '.join(REGIMES)}, not {regime!r}")
    managed = regime == "BCN on"
    sim = network(seed, bcn=managed)
    rng = np.random.default_rng([seed, 2017])
    sources = range(2, sim.topology.num_hosts)
    windows = -(-polls // REDRAW_POLLS)
    for w in range(windows):
        start = f"{w * REDRAW_POLLS * INTERVAL_US}us"
        stop = f"{(w + 1) * REDRAW_POLLS * INTERVAL_US}us"
        for i, src in enumerate(sources):
            rate = f"{rng.uniform(10e6, 1e9):.0f}bps"
            if managed:
                sim.add_bcn_flow(
                    src,
                    i % 2,
                    fair_share=f"{RESTART_BPS:.0f}bps",
                    start=start,
                    stop=stop,
                    packet_size="64B",
                    offered_load=rate,
                    # The paper's 200-800 ms STOP pause, scaled like the interval.
                    min_pause="200us",
                    max_pause="800us",
                )
            else:
                sim.add_udp_flow(
                    src,
                    i % 2,
                    rate,
                    start=start,
                    stop=stop,
                    arrivals="constant",
                    packet_size="64B",
                )
    plane = ControlPlane(sim)
    poller = plane.add(QueuePoller(f"{INTERVAL_US}us"))
    plane.run(f"{polls * INTERVAL_US + 1}us")
    return np.array(poller.rows[:polls])


# Baselines: what a forecaster must beat to have learned anything.


class Persistence(Forecaster):
    """The last polled value, for every step ahead."""

    kind = "persistence"

    def __init__(self, **options) -> None:
        super().__init__(**{**options, "scaling": None, "smoothing": None})
        self._last = np.zeros(0)

    def _fit(self, data: np.ndarray) -> None:
        self._last = data[-1]

    def _observe(self, rows: np.ndarray) -> None:
        self._last = rows[-1]

    def _restart(self, rows: np.ndarray) -> None:
        self._last = rows[-1]

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        return np.tile(self._last[self.targets], (horizon, 1))


class TrainingMean(Forecaster):
    """Each switch's mean over the training polls, for every step ahead."""

    kind = "training_mean"

    def __init__(self, **options) -> None:
        super().__init__(**{**options, "scaling": None, "smoothing": None})
        self._mean = np.zeros(0)

    def _fit(self, data: np.ndarray) -> None:
        self._mean = data[:, self.targets].mean(axis=0)

    def _observe(self, rows: np.ndarray) -> None:
        """The mean is the training set's."""

    def _restart(self, rows: np.ndarray) -> None:
        """The mean is the training set's."""

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        return np.tile(self._mean, (horizon, 1))


class Zero(StatelessForecaster):
    """An empty queue, always."""

    kind = "zero"

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        return np.zeros((horizon, len(self.targets)))


BASELINES: dict[str, type[Forecaster]] = {
    "persistence": Persistence,
    "training_mean": TrainingMean,
    "zero": Zero,
}


def errors(actual: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Errors over every value of `actual` and `predicted` (same shape), in %, but MSE
    (packets²): `eq11_pct`, the paper's Eq. 11, the mean of (q - q^) / q over the
    pairs whose actual q is not 0 (NaN if none); `wape_pct`, sum |q^ - q| / sum |q|
    (NaN if every q is 0); `mse`; `abs_relative_pct`, the mean of |q^ - q| / q over
    the same pairs as Eq. 11 (this study's error before)."""
    a = np.asarray(actual, dtype=float).ravel()
    p = np.asarray(predicted, dtype=float).ravel()
    if a.shape != p.shape:
        raise ValueError(f"actual has {a.size} values but predicted {p.size}")
    nonzero = a != 0
    relative = (a[nonzero] - p[nonzero]) / a[nonzero]
    total = np.abs(a).sum()
    nan = float("nan")
    return {
        "eq11_pct": float(100 * relative.mean()) if relative.size else nan,
        "wape_pct": float(100 * np.abs(p - a).sum() / total) if total > 0 else nan,
        "mse": float(np.mean((p - a) ** 2)),
        "abs_relative_pct": float(100 * np.abs(relative).mean()) if relative.size else nan,
    }


ModelFactory = Callable[..., Forecaster]


def forecast_test(
    data: np.ndarray, models: dict[str, ModelFactory], targets: list[int]
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, float]]:
    """`isthmus.predict.forecast_test` on the study's protocol (test rows first,
    `SPLIT`; `WINDOW` polls; the next `HORIZON` polls of `targets`): the actual values,
    each model's forecasts (origins x HORIZON x targets) and its training seconds."""
    run = predict.forecast_test(data, models, WINDOW, 1, HORIZON, targets=targets, fractions=SPLIT)
    return run.actual, run.predicted, run.train_s


def queued(data: np.ndarray) -> list[int]:
    """The switches (columns) whose queue is ever above 0."""
    return [int(c) for c in np.flatnonzero(data.max(axis=0) > 0)]


def scores(data: np.ndarray, models: dict[str, ModelFactory]) -> dict:
    """Every model's `errors` on the switches that queue, pooled and per switch (by
    name), and its training seconds."""
    targets = queued(data)
    actual, predicted, train_s = forecast_test(data, models, targets)
    out = {}
    for name, forecast in predicted.items():
        out[name] = {
            **errors(actual, forecast),
            "train_s": train_s[name],
            "switches": {
                SWITCHES[c]: errors(actual[:, :, j], forecast[:, :, j])
                for j, c in enumerate(targets)
            },
        }
    return {"models": out, "origins": len(actual), "targets": [SWITCHES[c] for c in targets]}


def _factory(name: str, options: dict) -> ModelFactory:
    def build(**common):
        return MODELS[name](**common, **options)

    build.__name__ = name
    return build


def run_queues(seed: int, polls: int, regime: str) -> dict:
    """Job: the training set of one seed and regime, with what the notes say of it."""
    data = collect(seed, polls, regime)
    return {
        "queues": data.tolist(),
        "queued_switches": len(queued(data)),
        "mean_queue": float(data.mean()),
        "zero_share": float(np.mean(data == 0)),
        "switch_mean_queue": dict(zip(SWITCHES, data.mean(axis=0).tolist(), strict=True)),
    }


def run_forecasters(queues: dict, epochs: int) -> dict:
    """Job: every model and baseline scored together on one training set (together: the
    test windows start where the model needing the longest context can first
    forecast)."""
    models: dict[str, ModelFactory] = {}
    for name, options in MODEL_OPTIONS.items():
        neural = {"epochs": epochs} if name in NEURAL else {}
        models[name] = _factory(name, {**options, **neural})
    models.update(BASELINES)
    return scores(np.array(queues["queues"], dtype=float), models)


def run_depth(queues: dict, layers: int, epochs: int) -> dict:
    """Job: an LSTM of `layers` layers scored alone on one training set."""
    lstm = _factory("lstm", {"layers": layers, "epochs": epochs})
    result = scores(np.array(queues["queues"], dtype=float), {"lstm": lstm})
    return result["models"]["lstm"]


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Per regime and seed: its training set and every forecaster on it; per seed, each
    LSTM depth on the main regime's set."""
    out = []
    epochs = settings["epochs"]
    for regime in REGIMES:
        for seed in seeds:
            queues = Job(
                "queues",
                regime,
                seed,
                run_queues,
                {"seed": seed, "polls": settings["polls"], "regime": regime},
            )
            needs = {"queues": queues.name}
            out += [
                queues,
                Job(
                    "forecasters",
                    "all",
                    seed,
                    run_forecasters,
                    {"epochs": epochs},
                    variant=regime,
                    needs=needs,
                ),
            ]
            if regime == MAIN_REGIME:
                out += [
                    Job(
                        "LSTM depth",
                        f"{n} layers",
                        seed,
                        run_depth,
                        {"layers": n, "epochs": epochs},
                        variant=regime,
                        needs=needs,
                    )
                    for n in settings["layers"]
                ]
    return out


# The table's columns for these rows: ours (Eq. 11 %), paper (Eq. 11 %), WAPE %, MSE,
# training s.


def _digits(values: list[float]) -> int:
    """Decimals that show a figure's size: the unmanaged queues' errors are hundredths
    of a percent, the managed ones tens."""
    finite = [abs(v) for v in values if np.isfinite(v)]
    size = float(np.mean(finite)) if finite else 0.0
    return 3 if size < 1 else 2 if size < 10 else 1


def _cell(values: list[float]) -> str:
    return cell(values, _digits(values))


def error_rows(results: Results, regime: str) -> list[list[str]]:
    """One row per model and baseline: Eq. 11, the paper's Eq. 11, WAPE, MSE and
    training seconds, over the seeds."""
    scored = results.values("models", experiment="forecasters", variant=regime)
    rows = []
    for name in (*MODEL_OPTIONS, *BASELINES):
        values = [s[name] for s in scored]
        label = name if name in MODEL_OPTIONS else f"{name} (baseline)"
        rows.append(
            [
                f"Eq. 11 %, {regime} | {label}",
                _cell([v["eq11_pct"] for v in values]),
                f"{PAPER_ERRORS[name]:.1f}" if name in PAPER_ERRORS else "",
                _cell([v["wape_pct"] for v in values]),
                _cell([v["mse"] for v in values]),
                f"{np.mean([v['train_s'] for v in values]):.1f}",
            ]
        )
    return rows


def switch_table(results: Results, regime: str) -> tuple[list[str], list[list[str]]]:
    """Per-switch WAPE (%) of every model and baseline over the seeds: a header, and one
    row per switch with its mean queue ('n/a' where no seed's test set queued)."""
    scored = results.values("models", experiment="forecasters", variant=regime)
    means = results.values("switch_mean_queue", experiment="queues", scheme=regime)
    names = (*MODEL_OPTIONS, *BASELINES)
    header = [f"WAPE % per switch, {regime} | switch", "mean queue", *names]
    rows = []
    for switch in SWITCHES:
        wape = [
            _cell(
                [s[n]["switches"][switch]["wape_pct"] for s in scored if switch in s[n]["switches"]]
            )
            for n in names
        ]
        mean = _cell([m[switch] for m in means])
        rows.append([f"WAPE % per switch, {regime} | {switch}", mean, *wape])
    return header, rows


def _claims(results: Results, regime: str) -> list[Claim]:
    """The paper's two rankings, by WAPE, and LSTM against the best baseline."""
    scored = results.values("models", experiment="forecasters", variant=regime)
    wape = {n: [s[n]["wape_pct"] for s in scored] for n in (*MODEL_OPTIONS, *BASELINES)}
    mean = {n: float(np.mean(v)) for n, v in wape.items()}
    neural = min(NEURAL, key=mean.get)
    statistical = min((m for m in MODEL_OPTIONS if m not in NEURAL), key=mean.get)
    rival = min((m for m in MODEL_OPTIONS if m != "lstm"), key=mean.get)
    baseline = min(BASELINES, key=mean.get)
    where = "" if regime == MAIN_REGIME else f" ({regime} while collecting; not the paper's)"
    digits = _digits([mean[m] for m in MODEL_OPTIONS])
    shown = ", ".join(f"{m} {mean[m]:.{digits}f} %" for m in MODEL_OPTIONS)
    return [
        better(
            f"A recurrent network predicts the queues better than every statistical model, "
            f"by WAPE{where}",
            wape[neural],
            wape[statistical],
            lower_is_better=True,
            names=(f"best network {neural}", f"best statistical {statistical}"),
            digits=digits,
            unit=" %",
            note="paper, by Eq. 11: LSTM 3.7 %, Holt-Winters 26.5 %",
        ),
        better(
            f"LSTM predicts best of all, by WAPE{where} (paper: 3.7 % by Eq. 11)",
            wape["lstm"],
            wape[rival],
            lower_is_better=True,
            names=("lstm", f"next best {rival}"),
            digits=digits,
            unit=" %",
            note=f"WAPE: {shown}",
        ),
        better(
            f"LSTM predicts better than the best baseline, by WAPE{where} (a check the "
            "paper does not make)",
            wape["lstm"],
            wape[baseline],
            lower_is_better=True,
            names=("lstm", f"best baseline {baseline}"),
            digits=digits,
            unit=" %",
            note="baselines: " + ", ".join(f"{b} {mean[b]:.{digits}f} %" for b in BASELINES),
        ),
    ]


def table_parts(results: Results) -> tuple[list[list[str]], list[Claim], list[str]]:
    """The prediction half's rows, claims and notes."""
    rows = []
    for regime in REGIMES:
        rows += error_rows(results, regime)
    for n in results.settings["layers"]:
        layers = results.select(experiment="LSTM depth", scheme=f"{n} layers")
        rows.append(
            [
                f"LSTM layers, {MAIN_REGIME} | {n}",
                _cell([r["eq11_pct"] for r in layers]),
                "",
                _cell([r["wape_pct"] for r in layers]),
                _cell([r["mse"] for r in layers]),
                f"{np.mean([r['train_s'] for r in layers]):.1f}",
            ]
        )
    for regime in REGIMES:
        header, switch_rows = switch_table(results, regime)
        rows += [header, *switch_rows]
    claims = [c for regime in REGIMES for c in _claims(results, regime)]
    settings = results.settings
    notes = [
        f"Errors of the next {HORIZON} polls over every (origin, step, switch that queues), "
        f"mean ± 95 % t-interval over {len(results.seeds)} seed(s): 'ours' is the paper's "
        "Eq. 11, the signed (q - q^) / q averaged over pairs whose actual queue q is not 0 "
        "(signed errors cancel, and all zeros score exactly 100 % on any data, so it cannot "
        "rank models); WAPE % is sum |q^ - q| / sum |q| and MSE is in packets², both over "
        "every pair; the claims rank models by WAPE. Training seconds on this machine's CPU.",
        "Baselines at the same origins: persistence (the last poll), training_mean (each "
        "switch's mean over the training polls), zero (an empty queue).",
    ]
    for regime, what in REGIMES.items():
        data = results.select(experiment="queues", scheme=regime)
        notes.append(
            f"Data, {regime} ({what}): {settings['polls']} polls every {INTERVAL_US} us "
            "(the paper's 500 ms scaled by 10^-3) of every switch; "
            f"{np.mean([d['queued_switches'] for d in data]):.0f} switches ever queue; "
            f"{np.mean([d['zero_share'] for d in data]) * 100:.0f} % of polled values are 0; "
            f"mean queue {np.mean([d['mean_queue'] for d in data]):.2f} packets."
        )
    notes.append(
        f"Networks trained at most {settings['epochs']} epochs (early stopping, patience 10); "
        f"LSTM depth rows on the {MAIN_REGIME} data."
    )
    return rows, claims, notes
