"""OFPT against single-path TCP, ECMP, MPTCP and Hedera.

Reproduces the throughput and migration experiments of Liu, Xu, Hu, Hu and Chen, "OFPT:
OpenFlow based Parallel Transport in Datacenters" (KSII TIIS 10(10), 2016).

1. Fat-tree throughput: k=8 (128 hosts, 1 Gb/s links, 100-packet buffers), every host
   sending one long flow to another (a random derangement per seed); aggregate goodput
   as a fraction of the bisection bandwidth (hosts x NIC rate), measured after a
   warm-up, for single-path TCP (one salted shortest path per flow), ECMP, MPTCP with
   2, 4 and 8 subflows (LIA), Hedera (Global First Fit: each new elephant placed once,
   its reservation held until it ends; 5 s polling scaled to 5 ms) and OFPT (8
   subflows, the same polling period); plus each flow's goodput over its natural demand
   (the paper's per-flow utilisation: fairness). Beside each share: the same over a
   lone TCP flow's goodput on that network (what the paper's figures may be normalised
   by); every scheme's cap, 94.8 % (ACKs share the host links), in the column's name.
2. Traffic patterns on a k=4 fat-tree and a VL2 network: one-to-one, one-to-two,
   one-to-four (every host sends to and receives from n others: n derangements) and
   all-to-all, for ECMP, MPTCP with 4 subflows and OFPT (MPTCP-4 and OFPT with 4
   subflows, as the paper's VL2 runs).
3. Migration (the paper's Fig. 10): a diamond (two two-hop paths between two switches),
   1 Mb/s links, 100-packet buffers, a 1 Mb/s UDP flow moved to the other path at 5 s,
   switches dropping what no entry matches; lost and reordered packets over ten runs
   (starts staggered by the seed), with OFPT's seamless migration and with the old
   entries deleted at once.

Choices where the paper is silent, all stated in docs/ofpt.md: the reference-benchmark
TCP hosts (NewReno, 5 ms minimum RTO, an ACK a segment), 250 ms runs of which the first
50 ms are warm-up, 3 % of capacity kept back for ACKs by OFPT, ε = 0.1.
"""

from __future__ import annotations

import time

import numpy as np

from isthmus import _core
from isthmus.control import Controller, ControlPlane
from isthmus.control.apps.hedera import Hedera
from isthmus.control.apps.ofpt import Ofpt
from isthmus.control.demands import estimate_demands
from isthmus.experiments import Job, Results
from isthmus.experiments.verdicts import all_of, better, cell, exceeds, over_seeds
from isthmus.flows import Poisson, generate_flows
from isthmus.network_metrics import arrived_bytes
from isthmus.simulation import Simulation
from isthmus.studies import Claim, Departure, StudyTable
from isthmus.topology import Link, Topology
from isthmus.transport import TcpParams
from isthmus.units import size_bytes

NAME = "ofpt"
TITLE = (
    "OFPT (Liu et al. 2016): multicommodity-flow routing over all paths vs TCP, ECMP, MPTCP, Hedera"
)
DEPARTURES = (
    Departure(
        "baseline",
        "Hedera (Al-Fares et al., NSDI 2010) with two placers over its demand estimates, "
        "Global First Fit and Simulated Annealing (the better of the two in its "
        "simulations); a placement's reservation is made when the flow is placed and "
        "cleared when the flow expires",
        "Global First Fit only (the paper's Fig. 8): at each poll the elephants not yet "
        "placed, largest demand first, each on the first shortest path with its demand left "
        "beside the reservations held; the reservation stays at that first estimate until "
        "the flow ends, and a placed flow never moves. Its first-hop entry goes in one "
        "control round trip after the rest of its path",
        "Global First Fit is the placer the paper gives step by step; it leaves open the "
        "order within one poll and whether a reservation follows later estimates. A "
        "reservation kept at its first estimate can hold capacity its flow no longer uses "
        "(once its sender starts a second elephant), which keeps later elephants on ECMP",
        "not run (no Simulated Annealing rows)",
    ),
    Departure(
        "transport",
        "Flow-level OpenFlow routing: the controller splits each long flow over several "
        "paths with flow-table entries",
        "Every long flow (>= 100 KB) is an MPTCP connection of 8 subflows (4 on k=4 and "
        "VL2), each pinned to one path by its own entries and paced by its host at the "
        "path's provisioned rate (Controller.pace_subflow); the baselines' hosts get no "
        "pacing",
        "Per-path flowlets of one TCP connection would reorder it on every change of path; "
        "MPTCP keeps one sequence space per path. The choice favours OFPT: its hosts "
        "send at the rates the controller planned, which no baseline's hosts are told",
        "not run",
    ),
    Departure(
        "control scope",
        "No polling period given for OFPT or for its Hedera (Hedera's own is 5 s)",
        "OFPT re-plans at once on every long flow's arrival and completion (coalesced per "
        "instant) as well as every 5 ms, with the other traffic as measured over the latest "
        "window of 2.5 ms or more; Hedera only polls, so it meets a new elephant at "
        "its next poll, and only once the flow has delivered at 10 % of its NIC rate or "
        "more over a poll period",
        "OFPT is told of each flow's arrival (with its size) and completion by the "
        "engine's events, so a long flow leaves ECMP from its start; Hedera as published "
        "detects elephants by polling counters. The difference favours OFPT",
        "not run",
    ),
    Departure(
        "time scale",
        "Real time: Hedera's published polling period is 5 s, and a controller's "
        "computation takes real time (OFPT's 139 ms round on k=8 is far under 5 s)",
        "Every period scaled by 10^-3: both controllers poll every 5 ms, runs last 250 ms "
        "(the first 50 ms warm-up), the testbed's Poisson traffic 2 s. The simulated "
        "controller is assumed as fast as its period: its 139 ms round (k=8, epsilon "
        "0.1, the LP included) takes no simulated time",
        "Simulated seconds on k=8 cost minutes of wall time per scheme (about 20 s for "
        "250 ms with OFPT); the 10^-3 scaling is Hedera's bundled scenario's. A 5 ms "
        "Hedera meets elephants within milliseconds, which may be more than the paper's "
        "Hedera could; OFPT's round, about 28 times its 5 ms period, is assumed instantaneous",
        "not run",
    ),
    Departure(
        "decision rule",
        "The FPTAS's answer is the split: each commodity's flow on each of its paths",
        "The FPTAS (per ToR pair, as the paper's commodities) chooses each pair's paths; "
        "the pair's paths are dealt to its flows, at most one per subflow, and an exact "
        "linear program (HiGHS, isthmus.control.provision) sets the rates on them: every "
        "pair the largest common fraction of its demand, then what is left in MRTF order; "
        "among equally good answers each path keeps the rate it had",
        "The FPTAS splits pairs, not flows, and a flow has only as many paths as "
        "subflows: handing a pair's flow to its flows greedily (the fullest paths to the "
        "first) left later flows fragments they had no subflows for, and the least flow "
        "0.53 of its NIC on k=8 where the paths allow every flow its demand. The LP costs "
        "CPU: a k=8 round takes about 139 ms against 32 ms before",
        "not run (the greedy split is not kept; its k=8 one-to-one rows, OFPT 94.0 %, "
        "least flow 0.528, are in docs/ofpt.md)",
    ),
    Departure(
        "transport",
        "The 28 ms round-trip size-class comparison (50 KB to 100 MB) across TCP, ECMP, "
        "MPTCP-8, Hedera and OFPT",
        "Linux-profile hosts: plain TCP flows (TCP, ECMP, Hedera rows, and every flow "
        "under 100 KB) have SACK, delayed ACKs, TCP small queues and cwnd validation; "
        "MPTCP subflows (the MPTCP-8 rows and OFPT's long flows) have none of them "
        "(NewReno recovery, an ACK a segment)",
        "The engine's MPTCP subflows implement none of these (docs/transports.md). The "
        "MPTCP rows are not like for like with the TCP rows: the loss recovery at least "
        "works against MPTCP-8 and OFPT's long flows",
        "not run",
    ),
    Departure(
        "metric",
        "OFPT at 98.1 % of the bisection (k=8) and above 97 % on every pattern; the paper "
        "does not say whether it counts headers or how it treats ACKs, and its figures "
        "resemble goodput normalised by a lone flow's goodput",
        "Payload that reached the receivers over hosts x line rate: a lone flow reaches "
        "0.973 of the line rate (1460 of 1500 bytes), one-to-one traffic caps every "
        "scheme at 94.8 % (ACKs share the links); OFPT paces to 97 % of each link (3 % kept "
        "for ACKs, 94.4 % of payload), a target it overruns slightly where a host link is "
        "the bottleneck",
        "The paper does not give its normalisation; payload over line rate is checkable "
        "against capacity. It reads every scheme lower than a lone-flow normalisation "
        "would, so the levels (94 against 98.1, 'above 97 %') are not comparable; the "
        "order of the schemes is",
        "the '÷ lone flow' column: every share of the bisection over a lone TCP flow's "
        "goodput on the same network (every scheme's cap, 94.8 % of the bisection, is "
        "97.4 % of it)",
    ),
    Departure(
        "decision rule",
        "Seamless migration (SFMM) removes the old path's entries bottleneck first and "
        "lets the rest time out",
        "The new path's entries go in at a lower priority; one control round trip later "
        "the old entries leave the first hop and every switch the new path shares with the "
        "old (so it takes effect everywhere at once), the rest once the old path's "
        "worst-case transit has passed and its queues hold none of the flow's packets",
        "The same guarantees (a complete path installed throughout, nothing lost) without "
        "waiting on timeouts",
        "not run (the migration rows compare SFMM with deleting at once, not with the "
        "paper's removal order)",
    ),
    Departure(
        "control scope",
        "Flows that share a path are aggregated into shared flow-table entries",
        "Not done: entries are per subflow (and per ACK path), thousands on k=8",
        "The engine's exact-match flow table holds thousands of entries at no measurable "
        "cost per packet; aggregation would save table space, not change forwarding",
        "not run",
    ),
)

FABRIC_SCHEMES = ("TCP", "ECMP", "MPTCP-2", "MPTCP-4", "MPTCP-8", "Hedera", "OFPT")
PATTERN_SCHEMES = ("ECMP", "MPTCP-4", "OFPT-4")
PATTERNS = {"one-to-one": 1, "one-to-two": 2, "one-to-four": 4, "all-to-all": 0}
PAPER_K8 = {
    "TCP": "43.5",
    "ECMP": "< 67.5",
    "MPTCP-2": "62.7",
    "MPTCP-8": "92.3",
    "OFPT": "98.1",
}
PAPER_PATTERNS = "OFPT > 97 % on every pattern (98.9 % all-to-all, least flow 0.838)"
FULL = {
    "k": 8,
    "duration_ms": 250,
    "warmup_ms": 50,
    "migration_runs": 10,
    "testbed_loads": (0.1, 0.3, 0.5, 0.7, 0.9),
    "testbed_window_ms": 2000,
    "size_classes": ("50KB", "1MB", "10MB", "100MB"),
}
QUICK = {
    "k": 8,
    "duration_ms": 60,
    "warmup_ms": 20,
    "migration_runs": 3,
    "testbed_loads": (0.3, 0.7),
    "testbed_window_ms": 300,
    "size_classes": ("50KB", "1MB", "10MB"),
}
TESTBED_SCHEMES = ("ECMP", "Hedera", "OFPT-4")
FCT_SCHEMES = ("TCP", "ECMP", "MPTCP-8", "Hedera", "OFPT")
PAPER_TESTBED = "OFPT 17 % lower mean FCT and 89.5 % lower 95th percentile than Hedera"
SIZE_LIMIT = "15s"
"""How long the size-class runs may take: 100 MB at the baselines' slowest takes seconds."""
LONG_FLOW = 100_000
"""Flows from 100 KB are long: OFPT orchestrates them (MPTCP); shorter ones are TCP on ECMP."""
LINK = Link("1Gbps", "1us")
BUFFER = "100pkts"
POLL = "5ms"
TCP_HEADER = 40
"""IPv4 + TCP header bytes of a segment and of a bare ACK (the engine's TCP_HEADER_BYTES)."""


MSS = size_bytes(TcpParams.for_profile("datacenter").mss)
GOODPUT_CAP = MSS / (MSS + 2 * TCP_HEADER)
"""The most of hosts x line rate any scheme's payload can reach where every host sends as
much as it receives (every pattern here) and every segment is acknowledged: each host
link carries MSS + 40 bytes of segment and 40 of ACK per MSS of payload (1460 of 1540
bytes, 94.8 %). OFPT paces to 97 % of each link (94.4 % of payload), a target its paced
subflows overrun slightly where a host link is the bottleneck (all-to-all reads 94.8)."""


def scheme_setup(scheme: str) -> tuple[str, str, int]:
    """(built-in routing, transport, MPTCP subflows) of a scheme."""
    if scheme == "TCP":
        return "single_path", "tcp", 1
    if scheme in ("ECMP", "Hedera"):
        return "ecmp", "tcp", 1
    name, _, count = scheme.partition("-")
    if name in ("MPTCP", "OFPT"):
        return "ecmp", "mptcp", int(count or 8)
    raise ValueError(f"unknown scheme {scheme!r}")


def traffic(hosts: int, pattern: str, seed: int) -> list[tuple[int, int]]:
    """(src, dst) pairs: n derangements for one-to-n (no pair twice), every ordered pair
    for all-to-all."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; known: {', '.join(PATTERNS)}")
    fanout = PATTERNS[pattern]
    if fanout == 0:
        return [(s, d) for s in range(hosts) for d in range(hosts) if s != d]
    pairs: set[tuple[int, int]] = set()
    flows: list[tuple[int, int]] = []
    index = 0
    while len(flows) < fanout * hosts:
        perm = _core.derangement(hosts, seed, index)
        index += 1
        round_ = [(s, int(d)) for s, d in enumerate(perm)]
        if any(p in pairs for p in round_):
            continue
        pairs.update(round_)
        flows.extend(round_)
    return flows


def _simulation(
    topology: Topology, scheme: str, seed: int, profile: str = "datacenter"
) -> tuple[Simulation, str]:
    """The network a scheme runs on (its routing, 100-packet buffers, hosts of
    `profile`) and the transport of its long flows."""
    routing, transport, subflows = scheme_setup(scheme)
    sim = Simulation(
        topology,
        seed=seed,
        routing=routing,
        host_queue=BUFFER,
        switch_queue=BUFFER,
        tcp=TcpParams.for_profile(profile, mptcp_subflows=subflows),
    )
    return sim, transport


def _controller(plane: ControlPlane, scheme: str) -> Controller | None:
    if scheme == "Hedera":
        return plane.add(Hedera(period=POLL, time_scale=1.0))
    if scheme.startswith("OFPT"):
        return plane.add(Ofpt(period=POLL, long_flow=LONG_FLOW))
    return None


def run_fabric(
    topology: Topology, scheme: str, pairs: list[tuple[int, int]], seed: int, timing: dict
) -> dict:
    """One scheme carrying long flows `pairs` on `topology`: goodput over the measured
    window (the bytes that reached the receivers in it: `network_metrics.arrived_bytes`)
    as a fraction of hosts x NIC, each flow's goodput over its natural demand."""
    sim, transport = _simulation(topology, scheme, seed)
    for src, dst in pairs:
        sim.add_tcp_flow(src, dst, "100GB", transport=transport)
    plane = ControlPlane(sim)
    controller = _controller(plane, scheme)
    wall = time.perf_counter()
    plane.run(f"{timing['warmup_ms']}ms")
    before = arrived_bytes(sim.flows())
    plane.run(f"{timing['duration_ms']}ms")
    wall = time.perf_counter() - wall
    flows = sim.flows()
    seconds = (timing["duration_ms"] - timing["warmup_ms"]) / 1e3
    goodput = (arrived_bytes(sim.flows()) - before) * 8 / seconds
    nic = LINK.as_core()[0]
    demand = np.array(estimate_demands(pairs)) * nic
    out = {
        "throughput": float(goodput.sum() / (topology.num_hosts * nic)),
        "flow_utilisation": (goodput / demand).tolist(),
        "drops": int(flows["packets_dropped"].sum()),
        "wall_s": wall,
    }
    if isinstance(controller, Hedera):
        out["placements"] = controller.placements
    if isinstance(controller, Ofpt):
        out["rounds"] = controller.rounds
        out["round_ms"] = float(np.mean(controller.round_cpu_seconds) * 1e3)
        out["migrations"] = controller.migrations
        out["lambda"] = controller.last_throughput
    return out


def _cpu_meter(controller: Controller | None) -> list[float]:
    """Accumulates the controller's CPU seconds in its periodic `schedule` round."""
    spent = [0.0]
    if controller is None:
        return spent
    inner = controller.schedule

    def timed() -> None:
        started = time.process_time()
        inner()
        spent[0] += time.process_time() - started

    controller.schedule = timed
    return spent


def run_finite(
    topology: Topology,
    scheme: str,
    flows: dict[str, np.ndarray],
    seed: int,
    limit: str,
    profile: str = "datacenter",
) -> dict:
    """Finite flows under a scheme until all finish (or `limit`), on hosts of `profile`:
    each flow's completion time (s, NaN if unfinished) and the controller's CPU seconds."""
    sim, transport = _simulation(topology, scheme, seed, profile)
    sizes = flows["size_bytes"]
    long = sizes >= LONG_FLOW if transport == "mptcp" else np.zeros(len(sizes), bool)
    ids = np.empty(len(sizes), dtype=np.int64)
    for kind, chosen in (("mptcp", long), ("tcp", ~long)):
        if chosen.any():
            ids[chosen] = sim.add_tcp_flows(
                flows["src"][chosen],
                flows["dst"][chosen],
                sizes[chosen],
                flows["start_ps"][chosen],
                transport=kind,
            )
    plane = ControlPlane(sim)
    cpu = _cpu_meter(_controller(plane, scheme))
    plane.run(limit, stop_when_flows_finish=True)
    table = sim.flows()
    finish, start = table["finish_ps"][ids], table["start_ps"][ids]
    fct = np.where(finish >= 0, (finish - start) / 1e12, np.nan)
    return {"fct_s": fct.tolist(), "cpu_s": cpu[0], "simulated_s": sim.now / 1e12}


def testbed() -> Topology:
    """The paper's testbed shape: 8 servers at 1 Gb/s, here 2 leaves of 4 under 4 spines
    (full bisection, 4 paths between leaves)."""
    return Topology.leaf_spine(4, 2, 4, LINK, LINK)


def run_testbed(scheme: str, load: float, seed: int, window_ms: int) -> dict:
    """Web-search flows between random servers, Poisson at `load` of each NIC."""
    topology = testbed()
    flows = generate_flows(
        topology,
        pattern="random",
        arrivals=Poisson(load=load),
        sizes="websearch_dctcp__hpcc",
        stop=f"{window_ms}ms",
        seed=seed,
    )
    out = run_finite(topology, scheme, flows, seed, f"{window_ms + 3000}ms")
    fct = np.array(out["fct_s"])
    return {
        "mean_fct_ms": float(np.nanmean(fct) * 1e3),
        "p95_fct_ms": float(np.nanpercentile(fct, 95) * 1e3),
        "unfinished": int(np.isnan(fct).sum()),
        "flows": len(fct),
        "cpu_per_simulated_s": out["cpu_s"] / out["simulated_s"],
    }


def size_class_flows(hosts: int, classes: tuple[str, ...], seed: int) -> dict[str, np.ndarray]:
    """One flow per host to a random other host (a derangement), sizes cycling over
    `classes`, all starting at once."""
    perm = np.array(_core.derangement(hosts, seed, 0), dtype=np.uint32)
    sizes = np.array([size_bytes(classes[h % len(classes)]) for h in range(hosts)], np.uint64)
    return {
        "src": np.arange(hosts, dtype=np.uint32),
        "dst": perm,
        "size_bytes": sizes,
        "start_ps": np.zeros(hosts, dtype=np.uint64),
    }


def run_size_classes(scheme: str, seed: int, k: int, classes: tuple[str, ...]) -> dict:
    """k-ary fat-tree, 5 ms host links and 1 ms fabric links (a 28 ms round trip across
    the core, 3.5 MB in flight at 1 Gb/s: Linux hosts, whose receive window covers it):
    mean FCT per size class beside the optimum, size over the per-host bisection
    bandwidth (1 Gb/s)."""
    topology = Topology.fat_tree(k, Link("1Gbps", "5ms"), Link("1Gbps", "1ms"))
    flows = size_class_flows(topology.num_hosts, classes, seed)
    out = run_finite(topology, scheme, flows, seed, SIZE_LIMIT, profile="linux")
    fct = np.array(out["fct_s"])
    sizes = flows["size_bytes"].astype(np.float64)
    ideal = sizes * 8 / 1e9
    by_class = {}
    for size in classes:
        chosen = sizes == size_bytes(size)
        done = fct[chosen][~np.isnan(fct[chosen])]
        by_class[size] = {
            "mean_fct_ms": float(done.mean() * 1e3) if len(done) else float("nan"),
            "ideal_ms": float(ideal[chosen][0] * 1e3),
            "unfinished": int(np.isnan(fct[chosen]).sum()),
        }
    return by_class


class _MoveOnce(Controller):
    """Installs the flow on one path, then moves it at `at`: seamlessly (`migrate`) or
    by deleting the old entries at once."""

    def __init__(self, paths: list[list[str]], at: str, seamless: bool):
        self.paths, self.at, self.seamless = paths, at, seamless

    def on_start(self) -> None:
        for switch in ("s1", "s2", "s3", "s4"):
            self.set_miss(switch, "drop")
        self.entries = self.install_path(0, self.paths[0], priority=10)
        self.after(self.at, self.move)

    def move(self) -> None:
        if self.seamless:
            self.migrate(0, self.entries, self.paths[1], priority=9)
        else:
            self.install_path(0, self.paths[1], priority=9)
            for switch, entry in self.entries:
                self.delete(switch, entry)


def diamond() -> Topology:
    """h1 - s1 - {s2 | s3} - s4 - h2, every link 1 Mb/s."""
    link = Link("1Mbps", "1ms")
    edges = [("h1", "s1"), ("s1", "s2"), ("s1", "s3"), ("s2", "s4"), ("s3", "s4"), ("s4", "h2")]
    return Topology.custom(["h1", "h2"], ["s1", "s2", "s3", "s4"], [(a, b, link) for a, b in edges])


def run_migration(seed: int, seamless: bool) -> dict:
    """A 1 Mb/s UDP flow h1 -> h2 moved from s2 to s3 at 5 s: lost and reordered packets."""
    sim = Simulation(diamond(), seed=seed, host_queue=BUFFER, switch_queue=BUFFER)
    offset = np.random.default_rng([seed, 10]).uniform(0, 12e-3)
    sim.add_udp_flow(
        0,
        1,
        "1Mbps",
        start=f"{offset * 1e12:.0f}ps",
        stop="8s",
        arrivals="constant",
        packet_size="1500B",
    )
    plane = ControlPlane(sim, control_latency="1ms")
    paths = [["h1", "s1", "s2", "s4", "h2"], ["h1", "s1", "s3", "s4", "h2"]]
    plane.add(_MoveOnce(paths, "5s", seamless))
    plane.run("10s")
    flows = sim.flows()
    sent, delivered = int(flows["packets_sent"][0]), int(flows["packets_delivered"][0])
    return {"lost": sent - delivered, "reordered": int(flows["out_of_order"][0]), "sent": sent}


NETWORKS = {
    "fat-tree k=4": lambda: Topology.fat_tree(4, LINK, LINK),
    "fat-tree k=8": lambda: Topology.fat_tree(8, LINK, LINK),
    "VL2": lambda: Topology.vl2(4, 4, 4, LINK, Link("2Gbps", "1us")),
}


def run_pattern(network: str, pattern: str, scheme: str, seed: int, window: dict) -> dict:
    """`run_fabric` on a named network carrying a named traffic pattern."""
    topology = NETWORKS[network]()
    return run_fabric(topology, scheme, traffic(topology.num_hosts, pattern, seed), seed, window)


LONE_WINDOW = {"warmup_ms": 50, "duration_ms": 150}
"""A lone flow's window: past the slow-start losses (100-packet buffers) it recovers
from within about 20 ms, which a quick run's window would include."""


def run_lone_flow(network: str) -> dict:
    """One TCP flow alone on a named network, across the core from the first host to the
    last: its steady goodput as a fraction of its NIC (what the paper's figures may be
    normalised by)."""
    topology = NETWORKS[network]()
    out = run_fabric(topology, "ECMP", [(0, topology.num_hosts - 1)], 1, LONE_WINDOW)
    return {"goodput": out["flow_utilisation"][0]}


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    window = {key: settings[key] for key in ("warmup_ms", "duration_ms")}

    def throughput(experiment: str, network: str, pattern: str, scheme: str, seed: int) -> Job:
        return Job(
            experiment,
            scheme,
            seed,
            run_pattern,
            {
                "network": network,
                "pattern": pattern,
                "scheme": scheme,
                "seed": seed,
                "window": window,
            },
            variant=f"{network} | {pattern}",
        )

    # The longest jobs (the size classes' and the big fabric's) first, so that no
    # worker is left with one when the others have run out.
    classes = {"k": settings["k"], "classes": settings["size_classes"]}
    out = [
        Job("sizes", scheme, s, run_size_classes, {"scheme": scheme, "seed": s, **classes})
        for s in seeds
        for scheme in FCT_SCHEMES
    ]
    big = f"fat-tree k={settings['k']}"
    out += [
        throughput("fabric", big, "one-to-one", scheme, s)
        for s in seeds
        for scheme in FABRIC_SCHEMES
    ]
    out += [
        throughput("patterns", network, pattern, scheme, s)
        for network in ("fat-tree k=4", "VL2")
        for s in seeds
        for pattern in PATTERNS
        for scheme in PATTERN_SCHEMES
    ]
    out += [
        Job(
            "testbed",
            scheme,
            s,
            run_testbed,
            {"scheme": scheme, "load": load, "seed": s, "window_ms": settings["testbed_window_ms"]},
            variant=f"load {load:.1f}",
        )
        for load in settings["testbed_loads"]
        for s in seeds
        for scheme in TESTBED_SCHEMES
    ]
    out += [
        Job("lone", "TCP", seeds[0], run_lone_flow, {"network": n}, variant=n)
        for n in dict.fromkeys((big, "fat-tree k=4", "VL2"))
    ]
    out += [
        Job("migration", mode, s, run_migration, {"seed": s, "seamless": mode == "SFMM"})
        for mode in ("SFMM", "delete at once")
        for s in range(1, settings["migration_runs"] + 1)
    ]
    return out


def _mean(runs: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in runs]))


def _lone_flow(results: Results, network: str) -> float:
    """A lone TCP flow's goodput on `network`, as a fraction of its NIC."""
    return float(results.values("goodput", experiment="lone", variant=network)[0])


def _throughput_rows(results: Results) -> list[list[str]]:
    rows = []
    for experiment, variant in dict.fromkeys(
        (r["experiment"], r["variant"]) for r in results.records
    ):
        if experiment not in ("fabric", "patterns"):
            continue
        lone = _lone_flow(results, variant.split(" | ")[0])
        for scheme in results.distinct("scheme", experiment=experiment, variant=variant):
            runs = results.select(experiment=experiment, variant=variant, scheme=scheme)
            util = np.concatenate([r["flow_utilisation"] for r in runs])
            paper = PAPER_K8.get(scheme, "-") if experiment == "fabric" else ""
            shares = [r["throughput"] for r in runs]
            # A figure above what payload can physically reach (a short window's
            # duplicates and held bytes) is flagged, not reported.
            if np.mean(shares) > GOODPUT_CAP + 5e-4:
                ours = normalised = f"above the cap ({np.mean(shares) * 100:.1f}): not reported"
            else:
                ours = cell(shares, scale=100)
                normalised = cell(shares, scale=100 / lone)
            rows.append(
                [
                    f"{variant} | {scheme}",
                    ours,
                    normalised,
                    "> 97" if scheme == "OFPT-4" else paper,
                    f"{util.min():.3f}",
                    f"{np.mean(util >= 0.9) * 100:.0f} %",
                    f"{_mean(runs, 'drops'):.0f}",
                ]
            )
    return rows


def _testbed_rows(results: Results) -> list[list[str]]:
    rows = []
    for variant in results.distinct("variant", experiment="testbed"):
        for scheme in TESTBED_SCHEMES:
            runs = results.select(experiment="testbed", variant=variant, scheme=scheme)
            rows.append(
                [
                    f"testbed | {variant} | {scheme}",
                    cell([r["mean_fct_ms"] for r in runs]),
                    "",
                    cell([r["p95_fct_ms"] for r in runs]),
                    f"{_mean(runs, 'cpu_per_simulated_s'):.3f}",
                    f"{sum(r['unfinished'] for r in runs)} of {sum(r['flows'] for r in runs)}",
                ]
            )
    return rows


def _size_rows(results: Results) -> list[list[str]]:
    rows = []
    for scheme in results.distinct("scheme", experiment="sizes"):
        runs = results.select(experiment="sizes", scheme=scheme)
        for size in runs[0]:
            rows.append(
                [
                    f"sizes | {size} | {scheme}",
                    cell([r[size]["mean_fct_ms"] for r in runs], digits=0),
                    "",
                    f"{runs[0][size]['ideal_ms']:.1f}",
                    "",
                    f"{sum(r[size]['unfinished'] for r in runs)} unfinished",
                ]
            )
    return rows


def _fct_claims(results: Results) -> list[Claim]:
    testbed = [
        better(
            f"{variant}: {metric}",
            results.values(metric, experiment="testbed", variant=variant, scheme="OFPT-4"),
            results.values(metric, experiment="testbed", variant=variant, scheme="Hedera"),
            lower_is_better=True,
            names=("OFPT", "Hedera"),
            digits=1,
            unit=" ms",
        )
        for variant in results.distinct("variant", experiment="testbed")
        for metric in ("mean_fct_ms", "p95_fct_ms")
    ]
    fct = all_of(
        "OFPT's mean and 95th-percentile FCT are below Hedera's at every load (testbed)",
        testbed,
    )
    fct = Claim(
        fct.statement,
        fct.holds,
        "; ".join(f"{c.statement}: {c.evidence}" for c in testbed) + f" (paper: {PAPER_TESTBED})",
    )
    sizes = {
        scheme: results.select(experiment="sizes", scheme=scheme)
        for scheme in results.distinct("scheme", experiment="sizes")
    }
    big = [size for size in sizes["OFPT"][0] if size_bytes(size) >= LONG_FLOW]

    def class_mean(scheme: str, size: str) -> float:
        runs = sizes[scheme]
        if any(r[size]["unfinished"] for r in runs):
            return float("inf")
        return float(np.mean([r[size]["mean_fct_ms"] for r in runs]))

    fastest = {
        size: min(sizes, key=lambda scheme, size=size: class_mean(scheme, size)) for size in big
    }
    return [
        fct,
        over_seeds(
            "OFPT completes long flows fastest of all schemes (k=8, 28 ms RTT)",
            all(s == "OFPT" for s in fastest.values()),
            "fastest per class: " + ", ".join(f"{size} {s}" for size, s in fastest.items()),
            len(sizes["OFPT"]),
        ),
    ]


def _pattern_claim(results: Results, variant: str, mean: float) -> Claim:
    """OFPT above 97 % of the bisection on one pattern, its evidence naming the pattern,
    its share of a lone flow's goodput and the physical cap."""
    judged = exceeds(
        variant,
        results.values("throughput", experiment="patterns", scheme="OFPT-4", variant=variant),
        0.97,
        scale=100,
        unit=" %",
    )
    lone = mean / _lone_flow(results, variant.split(" | ")[0]) * 100
    return Claim(
        judged.statement,
        judged.holds,
        f"{variant}: {judged.evidence} ({lone:.1f} % of a lone flow's goodput; the cap "
        f"{GOODPUT_CAP * 100:.1f} %)",
    )


def _claims(results: Results) -> list[Claim]:
    def throughput(scheme: str, experiment: str = "fabric", **where: str) -> list[float]:
        return results.values("throughput", experiment=experiment, scheme=scheme, **where)

    mean = {s: float(np.mean(throughput(s))) for s in FABRIC_SCHEMES}
    rival = max((s for s in FABRIC_SCHEMES if s != "OFPT"), key=lambda s: mean[s])
    util = np.concatenate(results.values("flow_utilisation", experiment="fabric", scheme="OFPT"))
    ofpt_patterns = {
        variant: float(np.mean(throughput("OFPT-4", "patterns", variant=variant)))
        for variant in results.distinct("variant", experiment="patterns", scheme="OFPT-4")
    }
    lost = {
        mode: results.values("lost", experiment="migration", scheme=mode)
        for mode in ("SFMM", "delete at once")
    }
    reordered = results.values("reordered", experiment="migration", scheme="SFMM")
    return [
        better(
            "OFPT carries more of the bisection than every baseline on the big fat-tree",
            np.array(throughput("OFPT")) * 100,
            np.array(throughput(rival)) * 100,
            lower_is_better=False,
            names=("OFPT", f"best baseline {rival}"),
            digits=1,
            unit=" %",
            note="paper: OFPT 98.1, MPTCP-8 92.3",
        ),
        over_seeds(
            "Every OFPT flow gets at least 0.9 of its NIC",
            bool(util.min() >= 0.9),
            f"least flow {util.min():.3f}; {np.mean(util >= 0.9) * 100:.0f} % of flows at 0.9 "
            "or more",
            len(throughput("OFPT")),
        ),
        all_of(
            "OFPT carries more than 97 % of the bisection on every pattern (95 % intervals "
            "above 97 %)",
            [_pattern_claim(results, variant, mean) for variant, mean in ofpt_patterns.items()],
        ),
        over_seeds(
            "Seamless migration loses no packet; deleting the old path at once does",
            sum(lost["SFMM"]) == 0 and sum(lost["delete at once"]) > 0,
            f"lost per run: SFMM {lost['SFMM']}, delete at once {lost['delete at once']}; "
            f"SFMM reordered {reordered} (paper: no loss, 2 reordered in 2 of 10 runs)",
            len(lost["SFMM"]),
        ),
    ]


def table(results: Results) -> StudyTable:
    timing, seeds = results.settings, results.seeds
    ofpt = results.select(experiment="fabric", scheme="OFPT")
    hedera = results.select(experiment="fabric", scheme="Hedera")
    lone = {
        network: _lone_flow(results, network)
        for network in results.distinct("variant", experiment="lone")
    }
    notes = [
        f"Goodput as % of the bisection (hosts x 1 Gb/s), mean ± 95 % t-interval over "
        f"{len(seeds)} seed(s), from {timing['warmup_ms']} to {timing['duration_ms']} ms.",
        "Least flow, flows >= 0.9: each flow's goodput over its natural demand (its NIC "
        "share), pooled over seeds. OFPT paces to 97 % of a link (3 % kept for ACKs) and "
        "1460 of every 1500 bytes are payload: it aims at 94.4 %.",
        f"OFPT controller on k={timing['k']}: {_mean(ofpt, 'rounds'):.0f} rounds a run, "
        f"{_mean(ofpt, 'round_ms'):.1f} ms CPU a round at ε = 0.1, λ {_mean(ofpt, 'lambda'):.3f}, "
        f"{_mean(ofpt, 'migrations'):.0f} subflow moves; {_mean(ofpt, 'wall_s'):.1f} s wall a run."
        + (
            f" Hedera: {_mean(hedera, 'placements'):.0f} elephants placed a run (each once)."
            if hedera
            else ""
        ),
        "÷ lone flow: the share of the bisection over a lone TCP flow's goodput on the same "
        "network (50 to 150 ms alone: "
        + ", ".join(f"{network} {value:.3f}" for network, value in lone.items())
        + f" of its NIC). Every scheme's cap is {GOODPUT_CAP * 100:.1f} % of the bisection: "
        "where every host sends as much as it receives, segment and ACK headers share each "
        "host link (1460 payload bytes in 1540). A figure above it (a short window's "
        "duplicate and held bytes) is flagged, not reported.",
        f"Paper, patterns: {PAPER_PATTERNS}.",
        "Per-flow utilisation on the big fat-tree, its distribution as 10th / 50th / 90th "
        "percentiles: "
        + "; ".join(
            f"{scheme} "
            + " / ".join(
                f"{q:.2f}"
                for q in np.percentile(
                    np.concatenate(
                        results.values("flow_utilisation", experiment="fabric", scheme=scheme)
                    ),
                    [10, 50, 90],
                )
            )
            for scheme in FABRIC_SCHEMES
        )
        + ".",
    ]
    notes += [
        "Testbed rows: 8 servers (2 leaves of 4, 4 spines, 1 Gb/s), web-search flows between "
        f"random servers, Poisson for {timing['testbed_window_ms']} ms; columns: mean FCT (ms), "
        "p95 FCT (ms), controller CPU seconds per simulated second, unfinished flows. "
        f"Paper: {PAPER_TESTBED}.",
        "Size rows: k-ary fat-tree with 5 ms host and 1 ms fabric links, Linux hosts, one flow "
        "per host of each size class in turn; columns: mean FCT (ms) of the finished flows, "
        f"the optimum (size at 1 Gb/s, ms), -, flows unfinished after {SIZE_LIMIT}.",
    ]
    extra = _testbed_rows(results) + _size_rows(results)
    return StudyTable(
        title="OFPT against TCP, ECMP, MPTCP and Hedera (1 Gb/s links, 100-packet buffers)",
        columns=[
            "experiment | scheme",
            f"ours: % of bisection (cap {GOODPUT_CAP * 100:.1f}) | mean FCT ms",
            "ours ÷ lone flow %",
            "paper % | p95 FCT ms | optimum ms",
            "least flow | CPU s a simulated s",
            "flows >= 0.9 | unfinished",
            "drops",
        ],
        rows=_throughput_rows(results) + [row + [""] for row in extra],
        claims=_claims(results) + _fct_claims(results),
        notes=notes,
    )
