"""IBCN's prediction study: how well each forecaster predicts BCN queues.

Reproduces the prediction tables of Tran, Nguyen, Souihi and Mellouk, "Towards a Novel
Congestion Notification Algorithm for Software-Defined Data Center Networks"; the
congestion-management tables (scenario 1's transactions, scenario 2, the load sweep)
are not built yet (docs/ibcn.md says what they need).

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

1. The training set, as the paper collects it: 48 BCN sources (64 B datagrams) send to
   the 2 hosts of edge0, each at a rate drawn uniformly from 10 Mb/s to 1 Gb/s and
   drawn again every `redraw` polls, under plain BCN (Qeq 20, Qsc 90, w 2, Gi 4, Gd
   0.02, Ru 3 Mb/s); every switch's queue (its fullest port's, as the controller reads
   it) is polled every interval: 7,200 polls x 8 switches, the paper's dataset (split
   5,760 / 1,440 there).
2. The paper polls every 500 ms while collecting; 1 Gb/s queues change within
   microseconds, so the interval here is scaled by 10^-3 to 500 us (the paper's interval
   would need an hour of simulated time per dataset and sees queues as noise).
3. Every forecaster predicts the next k = 5 polls of the switches that ever queue from
   the last W = 10 polls of every switch (`isthmus.predict.score`: trained on 70 % of the
   polls, early-stopped on 10 %, tested on the other 20 %, 1,440 polls): ARMA, ARAR,
   Holt-Winters, LSTM (4 layers, the paper's default), GRU and BiLSTM (2 layers, the
   library's most), Skip-LSTM. Error: the average relative error (zero queues left out)
   and MSE.
4. LSTM depth: MSE and training time for 1 to 8 layers.
"""

from __future__ import annotations

import time

import numpy as np

from isthmus.compare import mean_interval
from isthmus.control import Controller, ControlPlane
from isthmus.predict import MODELS, score
from isthmus.simulation import Simulation
from isthmus.topology import Link, Topology

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
FULL = {"polls": 7200, "epochs": 100, "layers": (1, 2, 3, 4, 5, 6, 7, 8)}
QUICK = {"polls": 1500, "epochs": 10, "layers": (1, 4)}
INTERVAL_US = 500
REDRAW_POLLS = 200
WINDOW, HORIZON = 10, 5
BCN = {"pm": 0.01, "q_eq": 20.0, "q_sc": 90.0, "w": 2.0}


def tree() -> Topology:
    """The paper's three tiers as a tree (see the module's doc)."""
    gig, ten = Link("1Gbps", "1us"), Link("10Gbps", "1us")
    hosts = [f"h{i}" for i in range(50)]
    edges = [f"edge{e}" for e in range(5)]
    links = [(f"h{i}", edges[i // 10], gig) for i in range(50)]
    links += [(edges[e], "agg0" if e < 3 else "agg1", gig) for e in range(5)]
    links += [("agg0", "core0", ten), ("agg1", "core0", ten)]
    return Topology.custom(hosts, ["core0", "agg0", "agg1", *edges], links)


def network(seed: int) -> Simulation:
    """The tree with BCN points on every switch port (200-packet buffers)."""
    return Simulation(tree(), seed=seed, switch_queue="200pkts", bcn=dict(BCN))


class QueuePoller(Controller):
    """Records every switch's queue (its fullest port's, packets) every `interval`."""

    def __init__(self, interval: str):
        self.interval = interval
        self.rows: list[np.ndarray] = []

    def on_start(self) -> None:
        switches = [i for i, kind in enumerate(self.ports.kinds) if kind == "switch"]
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


def collect(seed: int, polls: int) -> np.ndarray:
    """The training set: polls x switches of queue sizes under plain BCN."""
    sim = network(seed)
    rng = np.random.default_rng([seed, 2017])
    hosts = sim.topology.num_hosts
    sources = range(2, hosts)
    windows = -(-polls // REDRAW_POLLS)
    for w in range(windows):
        start = w * REDRAW_POLLS * INTERVAL_US
        stop = (w + 1) * REDRAW_POLLS * INTERVAL_US
        for i, src in enumerate(sources):
            rate = rng.uniform(10e6, 1e9)
            sim.add_bcn_flow(
                src,
                i % 2,
                fair_share=f"{2e9 / len(sources):.0f}bps",
                start=f"{start}us",
                stop=f"{stop}us",
                packet_size="64B",
                offered_load=f"{rate:.0f}bps",
                # The paper's 200-800 ms STOP pause, scaled like the interval.
                min_pause="200us",
                max_pause="800us",
            )
    plane = ControlPlane(sim)
    poller = plane.add(QueuePoller(f"{INTERVAL_US}us"))
    plane.run(f"{polls * INTERVAL_US + 1}us")
    return np.array(poller.rows[:polls])


def predictions(data: np.ndarray, epochs: int) -> dict:
    """Every model's error on the ports that queue at all."""
    targets = [int(c) for c in np.flatnonzero(data.max(axis=0) > 0)]
    models = []
    for name, options in MODEL_OPTIONS.items():
        neural = name in ("lstm", "gru", "skip_lstm", "bilstm")
        models.append(_factory(name, {**options, **({"epochs": epochs} if neural else {})}))
    out = score(
        data,
        models,
        WINDOW,
        horizon=HORIZON,
        targets=targets,
        fractions=(0.2, 0.7, 0.1),
    )
    # score() names models with their options; the tables use the plain names.
    out["models"] = dict(zip(MODEL_OPTIONS, out["models"].values(), strict=True))
    return out


def _factory(name: str, options: dict):
    def build(**common):
        return MODELS[name](**common, **options)

    build.__name__ = name
    return build


def depth(data: np.ndarray, epochs: int, layers: tuple[int, ...]) -> dict:
    """LSTM MSE and training time against its depth."""
    targets = [int(c) for c in np.flatnonzero(data.max(axis=0) > 0)]
    out = {}
    for n in layers:
        result = score(
            data,
            [_factory("lstm", {"layers": n, "epochs": epochs})],
            WINDOW,
            horizon=HORIZON,
            targets=targets,
            fractions=(0.2, 0.7, 0.1),
        )
        out[n] = next(iter(result["models"].values()))
    return out


def run(quick: bool, seeds: list[int], on_progress=None) -> dict:
    settings = QUICK if quick else FULL
    results: dict = {"quick": quick, "seeds": seeds, "settings": settings, "runs": []}
    steps = 3 * len(seeds)
    for i, seed in enumerate(seeds):
        if on_progress is not None:
            on_progress(3 * i, steps, f"collecting queues, seed {seed}")
        started = time.perf_counter()
        data = collect(seed, settings["polls"])
        collect_s = time.perf_counter() - started
        if on_progress is not None:
            on_progress(3 * i + 1, steps, f"scoring forecasters, seed {seed}")
        scored = predictions(data, settings["epochs"])
        if on_progress is not None:
            on_progress(3 * i + 2, steps, f"LSTM depth, seed {seed}")
        layers = depth(data, settings["epochs"], tuple(settings["layers"]))
        results["runs"].append(
            {
                "seed": seed,
                "collect_s": collect_s,
                "queued_switches": len(scored["setup"]["targets"]),
                "mean_queue": float(data.mean()),
                "zero_share": float(np.mean(data == 0)),
                "models": scored["models"],
                "setup": scored["setup"],
                "layers": {str(k): v for k, v in layers.items()},
            }
        )
    if on_progress is not None:
        on_progress(steps, steps, "done")
    return results


def table(results: dict):
    from isthmus.studies import Claim, StudyTable

    runs = results["runs"]
    rows = []
    error = {}
    for name in MODEL_OPTIONS:
        values = [r["models"][name]["mae_pct"] for r in runs]
        mses = [r["models"][name]["mse"] for r in runs]
        mean, half = mean_interval(values)
        mse_mean, mse_half = mean_interval(mses)
        error[name] = mean
        rows.append(
            [
                f"error | {name}",
                f"{mean:.1f} ± {half:.1f}",
                f"{PAPER_ERRORS[name]:.1f}",
                f"{mse_mean:.1f} ± {mse_half:.1f}",
                f"{np.mean([r['models'][name]['train_s'] for r in runs]):.1f}",
            ]
        )
    for n in results["settings"]["layers"]:
        mses = [r["layers"][str(n)]["mse"] for r in runs]
        mean, half = mean_interval(mses)
        train = np.mean([r["layers"][str(n)]["train_s"] for r in runs])
        rows.append([f"LSTM layers | {n}", "", "", f"{mean:.1f} ± {half:.1f}", f"{train:.1f}"])
    neural = min(("lstm", "gru", "skip_lstm", "bilstm"), key=lambda m: error[m])
    statistical = min(("arma", "arar", "holt_winters"), key=lambda m: error[m])
    claims = [
        Claim(
            "A recurrent network predicts BCN queues better than every statistical model",
            error[neural] < error[statistical],
            f"best network {neural} {error[neural]:.1f} %, best statistical {statistical} "
            f"{error[statistical]:.1f} % (paper: LSTM 3.7 %, Holt-Winters 26.5 %)",
        ),
        Claim(
            "LSTM predicts best of all (paper: 3.7 %)",
            min(error, key=error.get) == "lstm",
            "errors: " + ", ".join(f"{m} {v:.1f} %" for m, v in error.items()),
        ),
    ]
    settings = results["settings"]
    notes = [
        f"Average relative error of the next {HORIZON} polls (%, zero queues left out), mean ± "
        f"95 % t-interval over {len(runs)} seed(s); MSE in packets²; training seconds on "
        "this machine's CPU.",
        f"Data: {settings['polls']} polls every {INTERVAL_US} us (the paper's 500 ms scaled by "
        f"10^-3) of every switch; {np.mean([r['queued_switches'] for r in runs]):.0f} switches "
        f"ever queue; {np.mean([r['zero_share'] for r in runs]) * 100:.0f} % of polled values "
        f"are 0; mean queue {np.mean([r['mean_queue'] for r in runs]):.2f} packets.",
        f"Networks trained at most {settings['epochs']} epochs (early stopping, patience 10).",
    ]
    return StudyTable(
        title="IBCN: forecasting BCN queues (next 5 polls from the last 10)",
        columns=["table | model", "error % (ours)", "error % (paper)", "MSE", "train s"],
        rows=rows,
        claims=claims,
        notes=notes,
    )
