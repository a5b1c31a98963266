"""IBCN's prediction study: how well each forecaster predicts BCN queues.

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

import numpy as np

from isthmus.control import Controller, ControlPlane
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import better, cell
from isthmus.predict import MODELS, score
from isthmus.simulation import Simulation
from isthmus.studies import Claim
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
NEURAL = ("lstm", "gru", "skip_lstm", "bilstm")
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
        neural = {"epochs": epochs} if name in NEURAL else {}
        models.append(_factory(name, {**options, **neural}))
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


def run_queues(seed: int, polls: int) -> dict:
    """Job: the training set of one seed, with what the notes say of it."""
    data = collect(seed, polls)
    return {
        "queues": data.tolist(),
        "queued_switches": int(np.count_nonzero(data.max(axis=0) > 0)),
        "mean_queue": float(data.mean()),
        "zero_share": float(np.mean(data == 0)),
    }


def run_forecasters(queues: dict, epochs: int) -> dict:
    """Job: every model scored together on one seed's training set (together: the test
    windows start where the model needing the longest context can first forecast)."""
    return predictions(np.array(queues["queues"], dtype=float), epochs)


def run_depth(queues: dict, layers: int, epochs: int) -> dict:
    """Job: an LSTM of `layers` layers scored alone on one seed's training set: its MSE
    and training time."""
    data = np.array(queues["queues"], dtype=float)
    targets = [int(c) for c in np.flatnonzero(data.max(axis=0) > 0)]
    lstm = _factory("lstm", {"layers": layers, "epochs": epochs})
    result = score(
        data, [lstm], WINDOW, horizon=HORIZON, targets=targets, fractions=(0.2, 0.7, 0.1)
    )
    return next(iter(result["models"].values()))


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    """Per seed: its training set, every forecaster on it, and each LSTM depth on it."""
    collected = [
        Job("queues", "plain BCN", s, run_queues, {"seed": s, "polls": settings["polls"]})
        for s in seeds
    ]
    out = list(collected)
    epochs = settings["epochs"]
    for queues in collected:
        needs = {"queues": queues.name}
        out.append(
            Job("forecasters", "all", queues.seed, run_forecasters, {"epochs": epochs}, needs=needs)
        )
        out += [
            Job(
                "LSTM depth",
                f"{n} layers",
                queues.seed,
                run_depth,
                {"layers": n, "epochs": epochs},
                needs=needs,
            )
            for n in settings["layers"]
        ]
    return out


def table_parts(results: Results) -> tuple[list[list[str]], list[Claim], list[str]]:
    """The prediction half's rows, claims and notes."""
    scored = results.values("models", experiment="forecasters")
    rows = []
    for name in MODEL_OPTIONS:
        rows.append(
            [
                f"error | {name}",
                cell([s[name]["mae_pct"] for s in scored]),
                f"{PAPER_ERRORS[name]:.1f}",
                cell([s[name]["mse"] for s in scored]),
                f"{np.mean([s[name]['train_s'] for s in scored]):.1f}",
            ]
        )
    for n in results.settings["layers"]:
        layers = results.select(experiment="LSTM depth", scheme=f"{n} layers")
        mse = cell([r["mse"] for r in layers])
        rows.append(
            [f"LSTM layers | {n}", "", "", mse, f"{np.mean([r['train_s'] for r in layers]):.1f}"]
        )
    error = {name: [s[name]["mae_pct"] for s in scored] for name in MODEL_OPTIONS}
    mean = {name: float(np.mean(v)) for name, v in error.items()}
    neural = min(NEURAL, key=mean.get)
    statistical = min((m for m in MODEL_OPTIONS if m not in NEURAL), key=mean.get)
    rival = min((m for m in MODEL_OPTIONS if m != "lstm"), key=mean.get)
    claims = [
        better(
            "A recurrent network predicts BCN queues better than every statistical model",
            error[neural],
            error[statistical],
            lower_is_better=True,
            names=(f"best network {neural}", f"best statistical {statistical}"),
            digits=1,
            unit=" %",
            note="paper: LSTM 3.7 %, Holt-Winters 26.5 %",
        ),
        better(
            "LSTM predicts best of all (paper: 3.7 %)",
            error["lstm"],
            error[rival],
            lower_is_better=True,
            names=("lstm", f"next best {rival}"),
            digits=1,
            unit=" %",
            note="errors: " + ", ".join(f"{m} {v:.1f} %" for m, v in mean.items()),
        ),
    ]
    settings = results.settings
    data = results.select(experiment="queues")
    notes = [
        f"Average relative error of the next {HORIZON} polls (%, zero queues left out), mean ± "
        f"95 % t-interval over {len(results.seeds)} seed(s); MSE in packets²; training seconds "
        "on this machine's CPU.",
        f"Data: {settings['polls']} polls every {INTERVAL_US} us (the paper's 500 ms scaled by "
        f"10^-3) of every switch; {np.mean([d['queued_switches'] for d in data]):.0f} switches "
        f"ever queue; {np.mean([d['zero_share'] for d in data]) * 100:.0f} % of polled values "
        f"are 0; mean queue {np.mean([d['mean_queue'] for d in data]):.2f} packets.",
        f"Networks trained at most {settings['epochs']} epochs (early stopping, patience 10).",
    ]
    return rows, claims, notes
