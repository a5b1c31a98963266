"""The Diolkos study follows the paper where it says what it ran: per-port throughput
as Eq. 1-2, goodput judged beside it, a decision rule under which the forecasts decide,
Dense's training rows said, and the ring of Fig. 4's caption (paired switches on an
outer and an inner ring) with the paper's partial control."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import ControlPlane
from isthmus.control.apps.diolkos import Diolkos
from isthmus.control.loop_free import allowed_ports, hops_via_ports, node_host_distances
from isthmus.experiments import Results
from isthmus.portmap import PortMap
from isthmus.predict import StatelessForecaster
from isthmus.predict.splits import split_rows
from isthmus.studies import diolkos as study

RING_HOSTLESS = ["o1", "i1", "o2", "i2", "o3", "i3", "o4", "i4"]

# ---- 1. per-port throughput as Eq. 1-2 -------------------------------------------------


def test_per_port_throughput_counts_bytes_received_and_transmitted():
    before = {"rx_bytes": np.array([0, 0, 0]), "tx_bytes": np.array([0, 0, 0])}
    after = {"rx_bytes": np.array([4e6, 2e6, 9e9]), "tx_bytes": np.array([1e6, 3e6, 9e9])}
    figures = study.per_port_throughput(before, after, np.array([True, True, False]), 2.0)
    # Eq. 1-2: (NB_t - NB_{t-r}) / r with NB = received + transmitted, over the ports.
    assert figures["per_port_mbytes"] == pytest.approx((5 + 5) / 2 / 2)
    assert figures["per_port_tx_mbytes"] == pytest.approx((1 + 3) / 2 / 2)


def test_a_study_run_reports_eq_1_2_which_is_about_twice_the_bytes_sent():
    result = study.paper_run("2a", "static", 1, 10.0, 10.0)
    ratio = result["per_port_mbytes"] / result["per_port_tx_mbytes"]
    # Every byte a switch port sends, another port (or a host) receives.
    assert 1.9 < ratio < 2.1, result
    # The ring's links are 100 Mb/s each way: 25 MB/s received + transmitted at most.
    assert 0 < result["per_port_mbytes"] <= 2 * 100e6 / 8 / 1e6


# ---- 3. the decision rule: under the headroom reading the forecasts decide -------------


class Echo(StatelessForecaster):
    """Forecasts each port's last row again, except that every port carrying under a
    tenth of the busiest one's bytes is forecast at `share` of the busiest: what a
    forecaster thinks of the alternatives to a flow's port."""

    kind = "echo"

    def __init__(self, share: float, **options):
        super().__init__(**options)
        self.share = share
        self.last: np.ndarray | None = None

    def _observe(self, rows):
        self.last = np.asarray(rows[-1], dtype=float)

    def _restart(self, rows):
        self.last = np.asarray(rows[-1], dtype=float)

    def _forecast(self, lead, horizon):
        assert self.last is not None
        idle = self.last < 0.1 * self.last.max()
        row = np.where(idle, self.share * self.last.max(), self.last)
        return np.tile(row, (horizon, 1))


def _moves(rule: str, share: float) -> int:
    """One TCP flow h0 -> h1 through A, which reaches B by P or by Q (equal paths), and
    a Diolkos agent on A forecasting with `Echo(share)`, no exploration: the moves A
    makes in 1 s of rounds every 40 ms."""
    link = Link("100Mbps", "100us")
    topology = Topology.custom(
        ["h0", "h1"],
        ["A", "P", "Q", "B"],
        [
            ("h0", "A", link),
            ("A", "P", link),
            ("A", "Q", link),
            ("P", "B", link),
            ("Q", "B", link),
            ("h1", "B", link),
        ],
    )
    sim = Simulation(topology, seed=1)
    sim.add_bulk_flow(0, 1, "2s", transport="tcp")
    plane = ControlPlane(sim, control_latency="100us")
    (agent,) = plane.add_agents(
        Diolkos,
        ["A"],
        model=lambda **options: Echo(share, **options),
        sample_period="20ms",
        smoothing=None,
        train_after=3,
        alpha=0.0,
        rule=rule,
    )
    plane.run("1s")
    assert agent.stats.rounds > 10 and agent.stats.untrained_rounds < 3
    return agent.stats.moves


def test_under_the_headroom_rule_the_forecast_of_the_other_port_decides():
    # The other port forecast idle: it has the room, the flow goes there (and back,
    # the next round, when the port it left is the idle one).
    assert _moves("headroom", share=0.0) > 10
    # The other port forecast busier than the flow's own (twice its bytes, more than the
    # link's capacity, so no room at all): the flow's own port has more room; it stays.
    assert _moves("headroom", share=2.0) == 0


def test_under_the_throughput_rule_the_flow_leaves_only_for_a_port_forecast_busier():
    # The flow's port carries it, so it is the busiest and scores best: whether the
    # other port is forecast idle or nearly as busy, nothing moves (exploration, alpha,
    # is off). Which of two forecasters, both right that the flow's port is busiest,
    # decides nothing; only a port forecast busier than the flow's own draws it.
    assert _moves("throughput", share=0.0) == 0
    assert _moves("throughput", share=0.9) == 0
    assert _moves("throughput", share=2.0) > 10


def test_the_study_s_main_rows_run_the_headroom_rule_and_label_the_throughput_rows():
    for job in study.jobs(study.FULL, [1, 2]):
        if job.experiment != "paper":
            continue
        if job.variant in study.STUDIES:
            assert job.params["rule"] == "headroom"
        elif job.variant.endswith("throughput rule"):
            assert job.params["rule"] == "throughput"
            assert job.scheme in ("ewma", "dense")
    labels = set(study.FULL["studies"])
    assert {f"{s} throughput rule" for s in study.STUDIES} <= labels


# ---- 2 and 4. goodput beside per-port; Dense's training rows said ----------------------


def _results(seeds: list[int], dense_rows: int) -> Results:
    """Study 1a's base, EWMA and Dense from made-up figures: Dense raises per-port
    throughput well above both while goodput stays flat."""
    per_port = {"base": 3.8, "ewma": 3.9, "dense": 4.4}
    settings = {**study.QUICK, "studies": ("1a",), "gather_s": 380, "measure_s": 380}
    records = []
    scores = {"mae_pct": 1.0, "sdae_pct": 2.0}
    for job in study.jobs(settings, seeds):
        if job.experiment == "surge":
            result = {"goodput_mbps": 20.0 + job.seed, "ttl_drops": 0}
        elif job.experiment == "table 1":
            columns = ("s1 A", "s1 I", "t1b A", "t1b I") + study.TABLE1_TRACES
            result = {label: dict.fromkeys(columns, scores) for label in study.TABLE1_MODELS}
        else:
            result = {
                "per_port_mbytes": per_port[job.scheme] + 0.01 * job.seed,
                "per_port_tx_mbytes": per_port[job.scheme] / 2,
                "goodput_mbps": 159.0 + 0.1 * job.seed,
                "failed_flows": 0,
                "drops": 0,
                "loops": 0,
                "moves": 0,
                "trained_rows": dense_rows if job.scheme != "base" else 0,
                "train_s": [],
                "inference_s": [],
            }
        records.append({**job.fields(), "result": result})
    return Results(study.NAME, True, seeds, settings, records)


def test_each_dense_claim_is_judged_on_goodput_as_well_as_per_port_throughput():
    claims = {c.statement.split(":")[0]: c for c in study.table(_results([1, 2, 3], 228)).claims}
    assert claims["1a"].holds is True, claims["1a"].evidence
    # Flat goodput: the same runs do not deliver more, and the goodput claim says so.
    assert claims["1a goodput"].holds is False
    assert "Mb/s" in claims["1a goodput"].evidence


def test_a_claim_says_how_many_rows_dense_trained_on():
    (short,) = [c for c in study.table(_results([1, 2], 228)).claims if c.statement[:3] == "1a:"]
    assert "Dense trained on 228 rows a switch, not the paper's about 15,000" in short.statement
    (long,) = [c for c in study.table(_results([1, 2], 15_000)).claims if c.statement[:3] == "1a:"]
    assert "Dense trained on 15,000 rows a switch, the paper's" in long.statement


def test_long_gathering_gives_dense_the_paper_s_training_rows():
    split = split_rows(int(study.FULL["long_gather_s"]))
    assert split.train.stop - split.train.start >= 15_000
    long = [
        job
        for job in study.jobs(study.FULL, [1, 2, 3, 4, 5, 6, 7])
        if job.variant == "1a long gathering"
    ]
    # Five seeds, as every verdict needs, and no more however many the study runs.
    assert {job.seed for job in long} == {1, 2, 3, 4, 5}
    assert {job.scheme for job in long} == {"base", "ewma", "dense"}
    assert all(job.params["gather_s"] == study.LONG_GATHER_S for job in long)


# ---- 5 and 6. Fig. 4's paired rings, under the paper's partial control ---------------


def _graph(sim: Simulation) -> nx.Graph:
    names = sim.topology.nodes()["name"]
    links = sim.topology.links()
    return nx.Graph([(names[a], names[b]) for a, b in zip(links["a"], links["b"], strict=True)])


def test_the_ring_pairs_an_outer_and_an_inner_switch_with_equal_length_paths():
    sim, partial, switches = study.study_network("2a", 1, 20.0)
    graph = _graph(sim)
    for host in ("h2", "h3"):
        paths = list(nx.all_shortest_paths(graph, host, "h1"))
        # 00, 01, 10 and 11: one outer or inner switch at each of two stages.
        assert len(paths) == 4
        lanes = {"".join("0" if n[0] == "o" else "1" for n in p if n[0] in "oi") for p in paths}
        assert lanes == {"00", "01", "10", "11"}
    # Partial control: the switches with no host, each with two loop-free ports on the
    # way to H1 from the stage farther from it.
    assert partial == study.hostless_switches(sim) == RING_HOSTLESS
    assert len(switches) == 11
    ports = PortMap(sim)
    distances = node_host_distances(ports)
    for name in ("o2", "i2", "o3", "i3"):
        switch = ports.names.index(name)
        via = hops_via_ports(ports, distances, switch)
        neighbours = [ports.names[n] for n in ports.neighbours[switch]]
        allowed = allowed_ports(via, name, neighbours)
        assert allowed[:, 0].sum() == 2, name  # towards host 0, H1: o and i of the next stage


def test_partial_control_on_the_paired_rings_moves_flows_and_never_loops():
    sim, partial, _ = study.study_network("2a", 2, 30.0)
    plane = ControlPlane(sim, control_latency="100us")
    agents = plane.add_agents(
        Diolkos, partial, model="ewma", sample_period="500ms", smoothing=None, train_after=5
    )
    plane.run("25s")
    assert sum(a.stats.moves for a in agents) > 20
    assert int(sim.node_drops()["ttl_drops"].sum()) == 0


def test_the_single_ring_stays_as_labelled_rows_with_its_own_base():
    sim, partial, switches = study.study_network("2a", 1, 20.0, ring="single")
    assert partial == ["r1", "r4"] and switches == ["r0", "r1", "r2", "r3", "r4"]
    single = [j for j in study.jobs(study.FULL, [1]) if j.variant == "2a single ring"]
    assert {j.scheme for j in single} == {"base", "ewma", "dense"}
    assert all(j.params["ring"] == "single" for j in single)
    with pytest.raises(ValueError, match="has no single ring"):
        study.study_network("1a", 1, 20.0, ring="single")


def test_the_bundled_ring_runs_the_paper_s_partial_control(scenario_path):
    from isthmus import load_scenario

    scenario = load_scenario(scenario_path("diolkos-ring"))
    sim = scenario.build()
    on = sorted(a.switch.name for a in sim.control_plane.agents.values())
    assert on == sorted(RING_HOSTLESS) == sorted(study.hostless_switches(sim))
