"""No silver bullet: no one queueing configuration wins every objective.

Reproduces the experiment of Sivaraman, Winstein, Subramanian and Balakrishnan,
"No Silver Bullet: Extending SDN to the Data Plane" (HotNets 2013).

    server ──(100 Mb/s)── switch ══(Verizon LTE downlink trace, 75 ms)══ client

1. One bottleneck: the switch's port to the client follows the Verizon-LTE-short
   downlink trace (about 11.4 Mbit/s on average, varying by the millisecond); the
   minimum round trip is 150 ms. ACKs return over a fixed 100 Mbit/s path.
2. Three configurations of that port:
   - CoDel + FCFS: one shared FIFO under CoDel (5 ms target, 100 ms interval);
   - CoDel + FQ: a queue per flow, each under its own CoDel (FQ-CoDel);
   - Bufferbloat + FQ: a queue per flow, drop-tail, deep buffers (3000 packets).
3. Three kinds of traffic, each with its objective:
   - Bulk: one long TCP transfer; maximize its throughput;
   - Web: on/off page loads, one at a time, sizes from the Facebook web-server
     distribution (Roy et al. 2015) and exponential think times (mean 0.5 s);
     minimize the 99.9th-percentile completion time;
   - Interactive: a 1 Mbit/s constant-rate stream (a video call); maximize throughput
     divided by mean one-way delay ("power").
4. Workload mixes: 1 Bulk + 1 Web (the paper's headline), 1 Bulk + 1 Interactive, and
   1 Web + 1 Interactive; every configuration runs every mix.
5. Then a data plane that picks per class ("Per-class SP"): web and interactive traffic in the high
   strict-priority class, bulk in the low class with a deep (3000-packet) buffer, so
   bulk keeps the variable link busy while the others never wait behind it.

The paper's slides give, for 1 Bulk + 1 Web: CoDel+FCFS bulk 3.9 Mbit/s and web tail
43 s; CoDel+FQ bulk 11.2 Mbit/s and web tail 21 s. They do not give the web page sizes,
think times or TCP variant, so absolute numbers here differ; the comparison the paper
argues from - which configuration wins which objective - is what this study checks.
Choices made where the paper is silent: TCP NewReno with a 200 ms minimum RTO and a
4 MB receive window; the web and interactive models above; 300 s of simulated time.
"""

from __future__ import annotations

import numpy as np

from isthmus import _core
from isthmus.control import Controller, ControlPlane, FlowFinished
from isthmus.queues import CoDel, DropTail, Fq, StrictPriority
from isthmus.simulation import Simulation
from isthmus.topology import Link, Topology
from isthmus.transport import TcpParams
from isthmus.workload import size_distribution

CONFIGURATIONS = {
    "CoDel+FCFS": dict(switch_queue="1000pkts", scheduler=None, aqm=CoDel(kind="codel")),
    "CoDel+FQ": dict(switch_queue="1000pkts", scheduler=Fq(kind="fq"), aqm=CoDel(kind="codel")),
    "Bufferbloat+FQ": dict(switch_queue="3000pkts", scheduler=Fq(kind="fq"), aqm=DropTail()),
    "Per-class SP": dict(
        switch_queue="3000pkts",
        scheduler=StrictPriority(kind="strict_priority", classes=2),
        aqm=DropTail(),
    ),
}
MIXES = (("bulk", "web"), ("bulk", "interactive"), ("web", "interactive"))
PAPER = {
    ("CoDel+FCFS", "bulk"): 3.9,
    ("CoDel+FCFS", "web"): 43.0,
    ("CoDel+FQ", "bulk"): 11.2,
    ("CoDel+FQ", "web"): 21.0,
}
SERVER, CLIENT = 0, 1


def topology() -> Topology:
    return Topology.custom(
        ["server", "client"],
        ["switch"],
        [
            ("server", "switch", Link("100Mbps", "1us")),
            ("switch", "client", Link("100Mbps", "75ms")),
        ],
    )


class WebPages(Controller):
    """Loads one page at a time: when a page finishes, think, then load the next."""

    def __init__(self, sizes: np.ndarray, think_s: np.ndarray, priority: int):
        self.sizes, self.think_s, self.priority = sizes, think_s, priority
        self.next = 0
        self.flows: list[int] = []

    def on_start(self) -> None:
        self._load(0)

    def _load(self, delay_ps: int) -> None:
        if self.next >= len(self.sizes):
            return
        flow = self.sim.add_tcp_flow(
            SERVER, CLIENT, int(self.sizes[self.next]), start=self.now + delay_ps, transport="tcp"
        )
        self.sim.set_priority(flow, self.priority)
        self.flows.append(flow)
        self.next += 1

    def on_flow_finished(self, event: FlowFinished) -> None:
        if self.flows and event.flow == self.flows[-1]:
            self._load(int(self.think_s[self.next - 1] * 1e12))


def run_mix(
    config: str, mix: tuple[str, ...], seconds: float = 300.0, seed: int = 1
) -> dict[str, float]:
    """One configuration under one mix: each workload's objective value."""
    spec = CONFIGURATIONS[config]
    tcp = TcpParams(min_rto="200ms", initial_rto="1s", rwnd="4MB")
    sim = Simulation(topology(), seed=seed, host_queue="10000pkts", tcp=tcp, **spec)
    sim.set_link_trace("switch", "client", "Verizon-LTE-short.down")
    plane = ControlPlane(sim)
    end = f"{int(seconds * 1000)}ms"
    bulk = interactive = None
    web = None
    rng = np.random.default_rng([seed, 2013])
    if "bulk" in mix:
        bulk = sim.add_tcp_flow(SERVER, CLIENT, "10GB", transport="tcp")
        sim.set_priority(bulk, 1)
    if "interactive" in mix:
        interactive = sim.add_udp_flow(
            SERVER, CLIENT, "1Mbps", stop=end, arrivals="constant", packet_size="1200B"
        )
        sim.set_priority(interactive, 0)
    if "web" in mix:
        dist = size_distribution("meta_webserver_all__parsimon")
        sizes = _core.sample_sizes(dist.text, dist.unit_bytes, 5000, seed, 2013)
        web = plane.add(WebPages(sizes, rng.exponential(0.5, size=len(sizes)), priority=0))
    plane.run(end)
    flows = sim.flows()
    out: dict[str, float] = {}
    if bulk is not None:
        out["bulk"] = flows["bytes_delivered"][bulk] * 8 / seconds / 1e6
    if interactive is not None:
        delivered = flows["bytes_delivered"][interactive] * 8 / seconds / 1e6
        delay_s = (
            flows["delay_sum_ps"][interactive] / max(flows["delay_packets"][interactive], 1) / 1e12
        )
        out["interactive"] = delivered / delay_s
    if web is not None:
        done = [f for f in web.flows if flows["finish_ps"][f] >= 0]
        fct = np.sort((flows["finish_ps"][done] - flows["start_ps"][done]) / 1e12)
        out["web"] = (
            float(fct[max(0, int(np.ceil(0.999 * len(fct))) - 1)]) if len(fct) else float("nan")
        )
        out["web_pages"] = len(done)
    return out


def run_all(seconds: float = 300.0, seed: int = 1, on_progress=None) -> dict:
    """Every configuration under every mix: {config: {mix: {objective: value}}}."""
    results: dict = {}
    for config in CONFIGURATIONS:
        results[config] = {}
        for mix in MIXES:
            results[config]["+".join(mix)] = run_mix(config, mix, seconds, seed)
            if on_progress is not None:
                on_progress(config, mix)
    return results


NAME = "nosilverbullet"
TITLE = 'Sivaraman et al., "No Silver Bullet: Extending SDN to the Data Plane" (HotNets 2013)'
FULL_SECONDS, QUICK_SECONDS = 300.0, 60.0


def run(quick: bool, seeds: list[int], on_progress=None) -> dict:
    """Every configuration under every mix for each seed; simulated seconds per run:
    300 (60 with `quick`)."""
    seconds = QUICK_SECONDS if quick else FULL_SECONDS
    total = len(seeds) * len(CONFIGURATIONS) * len(MIXES)
    done = 0

    def step(config: str, mix: tuple[str, ...]) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total, f"{config} / {' + '.join(mix)}")

    per_seed = {str(seed): run_all(seconds, seed, step) for seed in seeds}
    return {"seconds": seconds, "seeds": list(seeds), "per_seed": per_seed}


def mean_results(results: dict) -> dict:
    """{config: {mix: {objective: mean over seeds}}}."""
    runs = list(results["per_seed"].values())
    return {
        config: {
            mix: {key: float(np.mean([r[config][mix][key] for r in runs])) for key in objectives}
            for mix, objectives in mixes.items()
        }
        for config, mixes in runs[0].items()
    }


def table(results: dict):
    from isthmus.studies import Claim, StudyTable

    means = mean_results(results)
    paper_configs = list(CONFIGURATIONS)[:3]
    best = winners(means, paper_configs)
    best_all = winners(means, list(CONFIGURATIONS))
    rows = []
    for config in CONFIGURATIONS:
        cells = [config]
        for key in OBJECTIVES:
            text = f"{means[config][key[0]][key[1]]:.2f}"
            if best[key] == config:
                text += "*"
            elif best_all[key] == config:
                text += "+"
            cells.append(text)
        rows.append(cells)
    wins = {c: sum(1 for w in best.values() if w == c) for c in paper_configs}
    tally = ", ".join(f"{c} {n}/{len(best)}" for c, n in wins.items())
    paper = ", ".join(f"{c} {w} {v:g}" for (c, w), v in PAPER.items())
    seeds = results["seeds"]
    return StudyTable(
        title=(
            f"No silver bullet: Verizon LTE downlink, 150 ms RTT, {results['seconds']:g} s a "
            f"run, mean of {len(seeds)} seed(s)"
        ),
        columns=["configuration", *(label for label, _ in OBJECTIVES.values())],
        rows=rows,
        claims=[
            Claim(
                "No configuration wins every objective",
                max(wins.values()) < len(best),
                f"wins: {tally}",
            )
        ],
        notes=[
            "Mixes: B = 1 bulk transfer, W = on/off web pages, I = a 1 Mbit/s interactive "
            "stream. bulk: throughput (Mbit/s); web: 99.9th-percentile page time (s); int: "
            "power = throughput / mean one-way delay. * best of the paper's three "
            "configurations, + best overall.",
            f"The paper's slides (B+W): {paper} (bulk Mbit/s, web tail s).",
        ],
    )


OBJECTIVES = {
    # (mix, workload): (column heading, better is higher?)
    ("bulk+web", "bulk"): ("B+W bulk", True),
    ("bulk+web", "web"): ("B+W web", False),
    ("bulk+interactive", "bulk"): ("B+I bulk", True),
    ("bulk+interactive", "interactive"): ("B+I int", True),
    ("web+interactive", "web"): ("W+I web", False),
    ("web+interactive", "interactive"): ("W+I int", True),
}
"""Power is throughput (Mbit/s) over mean one-way delay (s)."""


def winners(results: dict, configs: list[str]) -> dict[tuple[str, str], str]:
    """For each objective, the configuration (among `configs`) that does best."""
    out = {}
    for (mix, workload), (_, higher) in OBJECTIVES.items():
        values = {c: results[c][mix][workload] for c in configs}
        pick = max if higher else min
        out[(mix, workload)] = pick(values, key=values.get)
    return out
