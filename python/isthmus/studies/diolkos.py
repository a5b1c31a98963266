"""Diolkos against EWMA and an L2-learning switch.

Reproduces the throughput studies of Bel et al., "Diolkos: Improving Ethernet
Throughput through Dynamic Port Selection" (CF '21), and adds a mechanism experiment of
our own that shows the forecasts are what moves the flows.

1. Surge (ours): host h0 sends one TCP flow to h1 over switch A, which reaches B by
   two paths, via P and via Q. A backlogged TCP flow pinned on each path (an operator
   entry above Diolkos's) keeps both ports of A full, so each port's throughput is its
   path's capacity: Q steady at 48 Mb/s, P's capacity alternating every 10 s between
   84 Mb/s and 12 Mb/s (a link trace). The movable flow's goodput after training under
   no control (static), EWMA, a Dense model trained centrally on a trace gathered
   under EWMA and pushed to A, and an oracle that knows P's schedule. A forecaster that
   sees the change coming moves the flow when it happens, a reactive one a round late:
   oracle >= Dense >= EWMA >= static.
2. The paper's studies, on reconstructions of its Fig. 3 (mesh) and Fig. 4 (ring):
   TCP (Linux hosts, CUBIC) iperf-like flows of 10 s in 128 KiB writes between H2 and
   H1 and between H3 and H1 (each direction equally likely), Poisson arrivals at a
   network-wide rate that follows the surge profile over each 380 s cycle. 1a: mesh,
   10 -> 20 -> 10 flows/s, Diolkos on the Tofinos only (partial control), alpha 0.01;
   1b: mesh, 100 -> 200 -> 100, every switch (full control), alpha 0.005; 2a: ring,
   10 flows/s, alpha 0.01; 2b: ring, 100 flows/s, alpha 0.02. Schemes: base (L2
   learning), EWMA and Dense (BS 5, N 1, O 1, moving average 75, r_c 1 s), trained
   online on each switch after a gathering phase, then measured for one cycle.

Every choice the paper leaves open is in docs/diolkos.md.
"""

from __future__ import annotations

import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from isthmus.compare import mean_interval
from isthmus.control import ControlPlane
from isthmus.control.apps.diolkos import Diolkos
from isthmus.control.apps.l2_learning import L2Learning
from isthmus.control.forecasts import SERVICE_KEY, ForecastService
from isthmus.predict.base import Forecaster
from isthmus.simulation import Simulation
from isthmus.topology import Link, Topology
from isthmus.transport import TcpParams

NAME = "diolkos"
TITLE = "Diolkos (Bel et al. 2021): per-switch throughput forecasts move flows, vs EWMA and L2"

PS = 1e12

# ---- 1. the surge experiment --------------------------------------------------------

SURGE_PERIOD_S = 1.0
SURGE_PHASE_S = 10.0
SURGE_WINDOW = 11
"""Dense's window must span a phase to know where in it it stands."""
SURGE_HIGH_PER_MS = 7  # 1500 B opportunities per ms: 84 Mb/s
SURGE_LOW_PER_MS = 1  # 12 Mb/s
SURGE_STEADY = "48Mbps"
SURGE_SCHEMES = ("static", "ewma", "dense", "oracle")


def p_capacity_bps(t: float) -> float:
    """P's capacity at time t (seconds): high in the first half of each period."""
    high = (t % (2 * SURGE_PHASE_S)) < SURGE_PHASE_S
    return (SURGE_HIGH_PER_MS if high else SURGE_LOW_PER_MS) * 1500 * 8 * 1000.0


def _write_surge_trace(path: Path) -> None:
    phase_ms = int(SURGE_PHASE_S * 1000)
    lines = []
    for ms in range(1, 2 * phase_ms + 1):
        lines += [str(ms)] * (SURGE_HIGH_PER_MS if ms <= phase_ms else SURGE_LOW_PER_MS)
    path.write_text("\n".join(lines) + "\n")


class ScheduleOracle(Forecaster):
    """Forecasts A's ports from the known capacity schedule: P's mean capacity over
    each forecast step, Q's steady rate, nothing elsewhere (the ranking is all a
    decision reads). Reads the simulation's clock, which no real forecaster can."""

    kind = "oracle"

    def __init__(self, sim: Simulation, p_port: int, q_port: int, **options) -> None:
        options.update(smoothing=None, scaling=None)
        super().__init__(**options)
        self.sim, self.p_port, self.q_port = sim, p_port, q_port

    def _fit(self, data: np.ndarray) -> None:
        """Nothing to learn."""

    def _observe(self, rows: np.ndarray) -> None:
        """No state: the schedule is known."""

    def _restart(self, rows: np.ndarray) -> None:
        """No state: the schedule is known."""

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        now = self.sim.now / PS
        out = np.zeros((horizon, self._width))
        for i, step in enumerate(range(lead, lead + horizon)):
            times = now + SURGE_PERIOD_S * (step - 1 + np.arange(100) / 100)
            out[i, self.p_port] = np.mean([p_capacity_bps(t) for t in times]) / 8
            out[i, self.q_port] = Link(SURGE_STEADY).as_core()[0] / 8
        return out


def surge_goodput(
    scheme: str,
    seed: int,
    duration_s: float,
    warmup_s: float,
    trace_dir: Path,
    pushed: Forecaster | None = None,
) -> dict:
    """The movable flow's goodput (Mb/s) from warmup_s to duration_s under `scheme`,
    and the agent (for its ReplayDB and stats) when there is one."""
    fast = Link("100Mbps", "100us")
    topology = Topology.custom(
        ["h0", "h1", "h2", "h3"],
        ["A", "P", "Q", "B"],
        [
            ("h0", "A", fast),
            ("h2", "A", fast),
            ("h3", "A", fast),
            ("h1", "B", Link("1Gbps", "100us")),
            ("A", "P", fast),
            ("A", "Q", Link(SURGE_STEADY, "100us")),
            ("P", "B", fast),
            ("Q", "B", fast),
        ],
    )
    sim = Simulation(
        topology, seed=seed, tcp=TcpParams.for_profile("linux"), switch_queue="100pkts"
    )
    trace = trace_dir / "surge.trace"
    if not trace.exists():
        _write_surge_trace(trace)
    sim.set_link_trace("A", "P", trace.name, base=trace_dir)
    p_port, q_port = sim.port_towards("A", "P"), sim.port_towards("A", "Q")
    length = f"{duration_s}s"
    pinned_p = sim.add_bulk_flow(2, 1, length, transport="tcp")
    pinned_q = sim.add_bulk_flow(3, 1, length, transport="tcp")
    movable = sim.add_bulk_flow(0, 1, length, transport="tcp")
    sim.add_flow_entry("A", 100, flow=pinned_p, dst=1, output=p_port)
    sim.add_flow_entry("A", 100, flow=pinned_q, dst=1, output=q_port)
    plane = ControlPlane(sim, control_latency="100us")
    agent = None
    if scheme != "static":
        if pushed is not None:
            plane.shared(SERVICE_KEY, ForecastService).push("A", pushed)
        model = (
            (lambda **options: ScheduleOracle(sim, p_port, q_port, **options))
            if scheme == "oracle"
            else scheme
        )
        (agent,) = plane.add_agents(
            Diolkos,
            ["A"],
            model=model,
            sample_period=f"{SURGE_PERIOD_S}s",
            window=SURGE_WINDOW,
            smoothing=None,
            alpha=0.0,
            train_after=20,
        )
    plane.run(f"{warmup_s}s")
    before, since = int(sim.flows()["bytes_delivered"][movable]), sim.now
    plane.run(length)
    delivered = int(sim.flows()["bytes_delivered"][movable]) - before
    return {
        "goodput_mbps": delivered * 8 / ((sim.now - since) / PS) / 1e6,
        "agent": agent,
        "ttl_drops": int(sim.node_drops()["ttl_drops"].sum()),
    }


def surge_dense(seed: int, gather_s: float, trace_dir: Path) -> Forecaster:
    """Dense trained centrally on A's counters gathered while EWMA ran the switch (so
    the rows show the flow on both paths), ready to push."""
    from isthmus.predict import Dense

    gathered = surge_goodput("ewma", seed, gather_s, 1.0, trace_dir)["agent"]
    segments = gathered.replay.split()
    history = np.concatenate([segments.test, segments.train])
    return Dense(window=SURGE_WINDOW, seed=seed).fit(history, segments.validation)


def surge(seeds: list[int], duration_s: float, gather_s: float) -> dict:
    out: dict[str, list[float]] = {s: [] for s in SURGE_SCHEMES}
    with TemporaryDirectory() as folder:
        trace_dir = Path(folder)
        for seed in seeds:
            dense = surge_dense(seed + 1000, gather_s, trace_dir)
            for scheme in SURGE_SCHEMES:
                result = surge_goodput(
                    scheme,
                    seed,
                    duration_s,
                    30.0,
                    trace_dir,
                    pushed=dense if scheme == "dense" else None,
                )
                out[scheme].append(result["goodput_mbps"])
    return out


# ---- 2. the paper's studies ---------------------------------------------------------

CYCLE_S = 380.0
FLOW_S = 10.0
PAPER = {
    # Average per-port throughput, MB/s: Dense, EWMA, base (the paper's section 5).
    "1a": {"dense": 2.86, "ewma": 2.23, "base": 1.92},
    "1b": {"dense": 3.63, "ewma": 2.93, "base": 3.01},
    "2a": {"dense": 3.73, "ewma": 3.31, "base": 2.72},
    "2b": {"dense": 7.88, "ewma": 6.02, "base": 4.92},
}
STUDIES = {
    "1a": {"topology": "mesh", "rates": (10, 20, 10), "alpha": 0.01, "control": "partial"},
    "1b": {"topology": "mesh", "rates": (100, 200, 100), "alpha": 0.005, "control": "full"},
    "2a": {"topology": "ring", "rates": (10,), "alpha": 0.01, "control": "full"},
    "2b": {"topology": "ring", "rates": (100,), "alpha": 0.02, "control": "full"},
}
SCHEMES = ("base", "ewma", "dense")
FULL = {"gather_s": CYCLE_S, "measure_s": CYCLE_S, "studies": tuple(STUDIES), "surge_s": 300.0}
QUICK = {"gather_s": 100.0, "measure_s": 60.0, "studies": ("1a", "2a"), "surge_s": 120.0}


def mesh_topology() -> tuple[Topology, list[str]]:
    """The paper's Fig. 3 as we reconstruct it (the figure is not in the text we have):

                           H1
                           | 100 Mb/s
                           S1
              +---------+--+------+---------+
             T1a       T2a       T3a       T4a      every link below S1: 40 Mb/s
              |         |         |         |
             T1b ----- T2b ----- T3b ----- T4b      the lower halves in a full mesh
              |         |                           (T1b-T3b, T1b-T4b, T2b-T4b too)
              H2        H3

    Each Tofino is a pair of switches (a, b). Returns the topology and the Tofinos'
    switches (partial control runs Diolkos on those only)."""
    hundred, forty = Link("100Mbps", "50us"), Link("40Mbps", "50us")
    tofinos = [f"t{k}{half}" for k in range(1, 5) for half in "ab"]
    links = [("h1", "s1", hundred), ("h2", "t1b", forty), ("h3", "t2b", forty)]
    for k in range(1, 5):
        links += [("s1", f"t{k}a", forty), (f"t{k}a", f"t{k}b", forty)]
    links += [(f"t{i}b", f"t{j}b", forty) for i in range(1, 5) for j in range(i + 1, 5)]
    return Topology.custom(["h1", "h2", "h3"], ["s1", *tofinos], links), tofinos


def ring_topology() -> tuple[Topology, list[str]]:
    """The paper's Fig. 4 as we reconstruct it: five Tofinos in a ring, 100 Mb/s links.

                 R0 -- H1
                /  \\
              R4    R1
               |     |
              R3 -- R2
              |      |
              H3     H2
    """
    hundred = Link("100Mbps", "50us")
    ring = [f"r{i}" for i in range(5)]
    links = [(ring[i], ring[(i + 1) % 5], hundred) for i in range(5)]
    links += [("h1", "r0", hundred), ("h2", "r2", hundred), ("h3", "r3", hundred)]
    return Topology.custom(["h1", "h2", "h3"], ring, links), ring


def arrivals(rates: tuple[float, ...], begin_s: float, end_s: float, seed: int) -> np.ndarray:
    """Flow start times (s) of a Poisson process whose rate follows `rates` over equal
    parts of every CYCLE_S cycle."""
    rng = np.random.default_rng([seed, 7])
    part = CYCLE_S / len(rates)
    starts, t = [], begin_s
    while True:
        t += rng.exponential(1.0 / rates[int((t % CYCLE_S) // part)])
        if t >= end_s:
            return np.array(starts)
        starts.append(t)


def paper_run(study: str, scheme: str, seed: int, gather_s: float, measure_s: float) -> dict:
    spec = STUDIES[study]
    topology, tofinos = mesh_topology() if spec["topology"] == "mesh" else ring_topology()
    sim = Simulation(topology, seed=seed, tcp=TcpParams.for_profile("linux"))
    end_s = gather_s + measure_s
    starts = arrivals(spec["rates"], 0.0, end_s - FLOW_S, seed)
    directions = np.random.default_rng([seed, 11]).integers(0, 4, len(starts))
    pairs = [(1, 0), (0, 1), (2, 0), (0, 2)]  # H2->H1, H1->H2, H3->H1, H1->H3
    for start, direction in zip(starts, directions, strict=True):
        src, dst = pairs[direction]
        sim.add_bulk_flow(src, dst, f"{FLOW_S}s", start=int(start * PS), transport="cubic")
    plane = ControlPlane(sim, control_latency="100us")
    agents: list = []
    if scheme == "base":
        plane.add(L2Learning())
    else:
        smart = tofinos if spec["control"] == "partial" else None
        agents = plane.add_agents(
            Diolkos,
            smart,
            model=scheme,
            alpha=spec["alpha"],
            train_after=int(gather_s),
            seed=seed,
        )
    started = time.perf_counter()
    plane.run(f"{gather_s}s")
    ports_before = sim.ports()
    plane.run(f"{end_s}s")
    ports = sim.ports()
    kinds = np.array(topology.nodes()["kind"])
    on_switch = kinds[ports["node"]] == "switch"
    to_host = kinds[ports["peer_node"]] == "host"
    window = measure_s
    tx = (ports["tx_bytes"] - ports_before["tx_bytes"]).astype(np.float64)
    flows = sim.flows()
    ended = flows["start_ps"] < (end_s - FLOW_S) * PS
    measured = ended & (flows["start_ps"] >= gather_s * PS)
    return {
        "study": study,
        "scheme": scheme,
        "seed": seed,
        "flows": int(len(starts)),
        "per_port_mbytes": float(tx[on_switch].mean() / window / 1e6),
        "goodput_mbps": float(tx[on_switch & to_host].sum() * 8 / window / 1e6),
        "failed_flows": int(np.sum(measured & (flows["first_delivery_ps"] == 0))),
        "unfinished_flows": int(np.sum(measured & (flows["finish_ps"] == 0))),
        "drops": int((ports["drop_packets"] - ports_before["drop_packets"]).sum()),
        "loops": int(sim.node_drops()["ttl_drops"].sum()),
        "moves": int(sum(a.stats.moves for a in agents)),
        "train_s": [s for a in agents for s in a.stats.training_seconds],
        "inference_s": (plane.shared(SERVICE_KEY, ForecastService).round_seconds if agents else []),
        "wall_s": time.perf_counter() - started,
    }


def run(quick: bool, seeds: list[int], on_progress=None) -> dict:
    settings = QUICK if quick else FULL
    jobs = [(s, scheme) for s in settings["studies"] for scheme in SCHEMES]
    total = len(jobs) * len(seeds) + 1
    results: dict = {"quick": quick, "seeds": seeds, "settings": settings, "runs": []}
    if on_progress is not None:
        on_progress(0, total, "surge experiment")
    results["surge"] = surge(seeds, settings["surge_s"], settings["surge_s"])
    done = 1
    for seed in seeds:
        for study, scheme in jobs:
            if on_progress is not None:
                on_progress(done, total, f"study {study}, {scheme}, seed {seed}")
            run_result = paper_run(study, scheme, seed, settings["gather_s"], settings["measure_s"])
            results["runs"].append(run_result)
            done += 1
    if on_progress is not None:
        on_progress(total, total, "done")
    return results


def _interval(values: list[float], digits: int = 2) -> str:
    mean, half = mean_interval(values)
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def table(results: dict):
    from isthmus.studies import Claim, StudyTable

    rows = []
    surge_result = results["surge"]
    for scheme in SURGE_SCHEMES:
        rows.append([f"surge | {scheme}", _interval(surge_result[scheme], 1), "", "", "", "", ""])
    claims = []
    means = {s: float(np.mean(v)) for s, v in surge_result.items()}
    claims.append(
        Claim(
            "Forecasts move flows before the change (surge: oracle >= Dense >= EWMA >= static)",
            means["oracle"] * 1.03 >= means["dense"] >= means["ewma"] >= means["static"],
            ", ".join(f"{s} {means[s]:.1f} Mb/s" for s in SURGE_SCHEMES),
        )
    )
    runs = results["runs"]
    loops = sum(r["loops"] for r in runs)
    for study in results["settings"]["studies"]:
        per_scheme = {}
        for scheme in SCHEMES:
            mine = [r for r in runs if r["study"] == study and r["scheme"] == scheme]
            if not mine:
                continue
            per_scheme[scheme] = float(np.mean([r["per_port_mbytes"] for r in mine]))
            rows.append(
                [
                    f"{study} | {scheme}",
                    _interval([r["per_port_mbytes"] for r in mine]),
                    f"{PAPER[study][scheme]:.2f}",
                    _interval([r["goodput_mbps"] for r in mine], 1),
                    f"{np.mean([r['failed_flows'] for r in mine]):.0f}",
                    f"{np.mean([r['drops'] for r in mine]):.0f}",
                    f"{sum(r['loops'] for r in mine)}",
                ]
            )
        if len(per_scheme) == len(SCHEMES):
            paper = PAPER[study]
            claims.append(
                Claim(
                    f"{study}: Dense > EWMA and Dense > base in per-port throughput (paper: "
                    f"{paper['dense']:.2f} / {paper['ewma']:.2f} / {paper['base']:.2f} MB/s)",
                    per_scheme["dense"] > per_scheme["ewma"]
                    and per_scheme["dense"] > per_scheme["base"],
                    f"ours {per_scheme['dense']:.2f} / {per_scheme['ewma']:.2f} / "
                    f"{per_scheme['base']:.2f} MB/s",
                )
            )
    claims.append(Claim("No forwarding loop ever forms", loops == 0, f"{loops} TTL drops"))
    train = [s for r in runs for s in r["train_s"]]
    inference = [s for r in runs for s in r["inference_s"]]
    settings = results["settings"]
    notes = [
        f"Mean ± 95 % t-interval over {len(results['seeds'])} seed(s). Per-port: mean over "
        "every switch port of bytes sent per second (MB/s); goodput: bytes switches hand "
        "to hosts (Mb/s); failed: flows started in the measured cycle that never delivered "
        "a byte; drops: packets dropped anywhere; loops: packets dropped at TTL 0.",
        f"Gathering {settings['gather_s']:.0f} s (the paper: 25,000 s), then "
        f"{settings['measure_s']:.0f} s measured; r_c 1 s, BS 5, N 1, O 1, moving "
        "average 75, Dense with one hidden layer of 32, trained online on each switch.",
    ]
    if train:
        notes.append(
            f"Training per switch: median {np.median(train):.2f} s, max {np.max(train):.2f} s "
            "(paper: 130 s); batched inference per decision round, all switches: median "
            f"{np.median(inference) * 1e3:.2f} ms (paper: 0.2 s)."
        )
    return StudyTable(
        title="Diolkos: throughput with per-switch forecasts (surge goodput in Mb/s)",
        columns=[
            "study | scheme",
            "per-port MB/s (ours)",
            "paper",
            "goodput Mb/s",
            "failed",
            "drops",
            "loops",
        ],
        rows=rows,
        claims=claims,
        notes=notes,
    )
