"""Diolkos: per-switch forecasts move flows, never into a loop, and the forecasts are
what decides (a forecaster that sees a change coming beats one that reacts to it)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import ControlPlane
from isthmus.control.apps.diolkos import Diolkos
from isthmus.control.forecasts import SERVICE_KEY, ForecastService
from isthmus.control.loop_free import allowed_ports, hops_via_ports, node_host_distances
from isthmus.experiments import Results
from isthmus.portmap import PortMap
from isthmus.predict import Dense, Ewma, StatelessForecaster
from isthmus.studies import diolkos as study


class RandomScores(StatelessForecaster):
    """Forecasts noise: the worst a model can do, to stress the loop-free rule."""

    kind = "random"

    def __init__(self, **options):
        super().__init__(**options)
        self.random = np.random.default_rng(5)

    def _forecast(self, lead, horizon):
        return self.random.random((horizon, self._width))


def topologies() -> dict[str, Topology]:
    link = Link("100Mbps", "10us")
    return {
        "ring": Topology.ring(5, 2, link, link),
        "mesh": Topology.mesh(5, 1, link, link),
        "fat_tree": Topology.fat_tree(4, link, link),
        "paper_mesh": study.study_network("1a", 1, 20.0)[0].topology,
        "paper_ring": study.study_network("2a", 1, 20.0)[0].topology,
    }


@pytest.mark.parametrize("name", ["ring", "mesh", "fat_tree", "paper_mesh", "paper_ring"])
def test_the_allowed_ports_of_every_switch_form_no_cycle_towards_any_host(name):
    sim = Simulation(topologies()[name])
    ports = PortMap(sim)
    distances = node_host_distances(ports)
    switches = [n for n, kind in enumerate(ports.kinds) if kind == "switch"]
    detours = 0
    for host in range(len(ports.host_node)):
        graph = nx.DiGraph()
        for switch in switches:
            via = hops_via_ports(ports, distances, switch)
            names = [ports.names[n] for n in ports.neighbours[switch]]
            allowed = allowed_ports(via, ports.names[switch], names)[:, host]
            assert allowed.any(), f"{ports.names[switch]} cannot reach host {host}"
            for port in np.flatnonzero(allowed):
                graph.add_edge(switch, ports.neighbours[switch][port])
            detours += int(np.sum(allowed & (via[:, host] > via[:, host].min())))
        assert nx.is_directed_acyclic_graph(graph)
    if name in ("ring", "mesh", "paper_mesh", "paper_ring"):
        assert detours > 0, "the rule must allow some longer way round, or Diolkos has no choice"


@pytest.mark.parametrize("name", ["ring", "paper_mesh", "paper_ring"])
def test_agents_picking_ports_at_random_never_loop_and_every_flow_finishes(name):
    topology = topologies()[name]
    sim = Simulation(topology, seed=3)
    hosts = topology.num_hosts
    rng = np.random.default_rng(1)
    for i in range(60):
        src, dst = rng.choice(hosts, 2, replace=False)
        sim.add_tcp_flow(int(src), int(dst), "200KB", start=f"{i * 5}ms", transport="tcp")
    plane = ControlPlane(sim, control_latency="10us")
    agents = plane.add_agents(
        Diolkos,
        model=RandomScores,
        sample_period="2ms",
        smoothing=None,
        train_after=3,
        alpha=0.0,
    )
    assert plane.run("2s", stop_when_flows_finish=True)
    assert int(sim.node_drops()["ttl_drops"].sum()) == 0
    assert sum(a.stats.moves for a in agents) > 50


def test_until_trained_a_switch_moves_nothing_and_says_so():
    topology = topologies()["ring"]
    sim = Simulation(topology, seed=1)
    sim.add_bulk_flow(0, 5, "1s", transport="tcp")
    plane = ControlPlane(sim)
    agents = plane.add_agents(
        Diolkos, model="ewma", sample_period="10ms", smoothing=None, train_after=1000
    )
    plane.run("500ms")
    for agent in agents:
        assert not agent.trained and agent.stats.moves == 0
        assert agent.stats.untrained_rounds == agent.stats.rounds > 0
        assert agent.switch.installed() == []


class Handle:
    """What the service reads of a switch handle: its name."""

    def __init__(self, name):
        self.name = name


def test_one_call_forecasts_every_switch_as_its_own_model_would():
    rng = np.random.default_rng(0)
    # Switches with their own nets, two shapes of them, and a statistical model.
    models = [Dense(window=5, epochs=3, seed=i).fit(rng.random((100, 3))) for i in range(4)]
    models += [Dense(window=5, epochs=3, seed=9).fit(rng.random((100, 4)))]
    models += [Ewma(window=1).fit(rng.random((100, 3)))]
    for model in models:
        model.update(rng.random((5, model.variables)))
    expected = [model.predict() for model in models]
    service = ForecastService()
    handles = [Handle(f"s{i}") for i in range(len(models))]
    for handle, model in zip(handles, models, strict=True):
        service.submit(handle, model)
    answers = [service.forecast(h) for h in handles]
    assert len(service.round_seconds) == 1, "one call served every switch"
    for answer, want in zip(answers, expected, strict=True):
        np.testing.assert_allclose(answer, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="did not submit"):
        service.forecast(Handle("s9"))


def test_a_model_is_pushed_to_one_switch_only():
    model = Ewma(window=1).fit(np.arange(10.0)[:, None])
    service = ForecastService()
    service.push("s0", model)
    with pytest.raises(ValueError, match="copy"):
        service.push("s1", model)


def test_a_pushed_model_must_read_the_switch_s_ports():
    sim = Simulation(topologies()["ring"])
    plane = ControlPlane(sim)
    wrong = Ewma(window=1).fit(np.ones((10, 2)) + np.arange(10)[:, None])
    plane.shared(SERVICE_KEY, ForecastService).push("s0", wrong)
    plane.add_agents(Diolkos, ["s0"], model="ewma")
    with pytest.raises(ValueError, match="reads 2 ports but the switch has 4"):
        plane.run("1ms")
    with pytest.raises(ValueError, match="not fitted"):
        ForecastService().push("s0", Ewma())


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("alpha", 1.5, r"alpha must be in \[0, 1\)"),
        ("train_after", 2, "train_after must be an integer of at least 3"),
        ("retrain_every", 0, "retrain_every must be a positive integer"),
        ("sample_period", "0s", "sample_period must be a positive duration"),
        ("model", "prophet", "unknown model 'prophet'"),
    ],
)
def test_bad_parameters_are_refused_by_name(option, value, message):
    plane = ControlPlane(Simulation(topologies()["ring"]))
    with pytest.raises(ValueError, match=message):
        plane.add_agents(Diolkos, ["s0"], **{option: value})


def test_a_forecast_that_sees_the_surge_coming_beats_one_that_reacts(tmp_path):
    """The surge experiment (see isthmus.studies.diolkos): P's capacity alternates
    every 10 s, Q's is steady; the movable flow's goodput orders oracle >= Dense >=
    EWMA >= static, and the operator's pins on the background flows are respected."""
    pytest.importorskip("torch")
    duration, warmup = 200.0, 30.0
    dense = study.surge_dense(1001, 300.0, tmp_path)
    goodput, agents = {}, {}
    for scheme in study.SURGE_SCHEMES:
        result = study.surge_goodput(
            scheme,
            1,
            duration,
            warmup,
            tmp_path,
            pushed=dense if scheme == "dense" else None,
        )
        goodput[scheme] = result["goodput_mbps"]
        agents[scheme] = result["agent"]
        assert result["ttl_drops"] == 0
    assert goodput["oracle"] * 1.03 >= goodput["dense"], goodput
    assert goodput["dense"] > goodput["ewma"] * 1.05, goodput
    assert goodput["ewma"] > goodput["static"] * 1.05, goodput
    # The oracle moves the flow at every change of P's capacity, and no more.
    changes = (duration - 20) / study.SURGE_PHASE_S
    assert changes - 2 <= agents["oracle"].stats.moves - 2 <= changes + 2
    assert agents["oracle"].stats.pinned == 2


@pytest.mark.parametrize("name", ["diolkos-mesh", "diolkos-ring"])
def test_the_bundled_diolkos_scenarios_run_loop_free(scenario_path, name):
    from isthmus import load_scenario

    scenario = load_scenario(scenario_path(name))
    short = scenario.model_copy(update={"run": scenario.run.model_copy(update={"duration": "40s"})})
    sim = short.build()
    agents = list(sim.control_plane.agents.values())
    assert agents and all(isinstance(a, Diolkos) for a in agents)
    assert all(a.train_after == 380 and a.alpha == 0.01 for a in agents)
    short.execute(sim)
    assert int(sim.node_drops()["ttl_drops"].sum()) == 0
    assert sim.num_flows > 300  # 10 flows/s or more over 40 s
    assert all(a.stats.untrained_rounds == a.stats.rounds > 0 for a in agents)


def test_a_short_study_run_measures_within_the_links():
    result = study.paper_run("2a", "ewma", 1, 30.0, 20.0)
    # The ring's links are 100 Mb/s: no switch port sends more (tx-only), or sends and
    # receives more (Eq. 1-2), and hosts receive at most their three links' worth.
    assert 0 < result["per_port_tx_mbytes"] <= 100e6 / 8 / 1e6
    assert 0 < result["per_port_mbytes"] <= 2 * 100e6 / 8 / 1e6
    assert 0 < result["goodput_mbps"] <= 300
    assert result["loops"] == 0 and result["failed_flows"] == 0
    assert result["flows"] > 150  # 10 flows/s over 40 s
    # The paper's partial control: Diolkos on the paired rings' switches with no host.
    assert result["diolkos_on"] == ["o1", "i1", "o2", "i2", "o3", "i3", "o4", "i4"]


def test_the_rings_run_the_paper_s_partial_control_on_the_switches_with_no_host():
    """Table 2: 'in ring topologies, Diolkos will only partially control the Tofino
    switches (switches with no host)'."""
    for ring in ("2a", "2b"):
        assert study.STUDIES[ring]["control"] == "partial"
        sim, partial, switches = study.study_network(ring, 1, 20.0)
        assert partial == study.hostless_switches(sim)
        assert partial == ["o1", "i1", "o2", "i2", "o3", "i3", "o4", "i4"]
        assert set(switches) - set(partial) == {"r1", "r2", "r3"}
        _, partial, _ = study.study_network(ring, 1, 20.0, ring="single")
        assert partial == ["r1", "r4"]
    # The mesh's partial control stays the scenario's Tofino switches (t1b, t2b have hosts).
    _, partial, _ = study.study_network("1a", 1, 20.0)
    assert partial == ["t1a", "t1b", "t2a", "t2b", "t3a", "t3b", "t4a", "t4b"]
    # Full control, asked for, puts Diolkos on every switch.
    full = study.paper_run("2a", "ewma", 1, 30.0, 5.0, control="full")
    assert full["diolkos_on"] == switches
    with pytest.raises(ValueError, match="control is 'partial' or 'full'"):
        study.paper_run("2a", "ewma", 1, 30.0, 5.0, control="some")
    with pytest.raises(ValueError, match="unknown study label '2a partly'"):
        study.variant_setting("2a partly")


@pytest.mark.parametrize("quick", [True, False])
def test_each_row_label_runs_the_paper_s_setting_or_names_its_one_change(quick):
    settings = study.QUICK if quick else study.FULL
    paper = [job for job in study.jobs(settings, [1, 2]) if job.experiment == "paper"]
    assert {"2a", "2a full control", "2a throughput rule"} <= set(settings["studies"])
    for job in paper:
        params = job.params
        if job.variant in study.STUDIES:
            # A study's own rows: its control as the paper's Table 2 has it, the main
            # reading of the decision rule, Fig. 4's paired rings, one cycle gathered.
            assert params["study"] == job.variant
            assert params["control"] == study.STUDIES[job.variant]["control"]
            assert (params["rule"], params["ring"]) == ("headroom", "paired")
            assert params["gather_s"] == settings["gather_s"]
            continue
        # The sensitivity rows say what they change in their label, and change that alone.
        study_name, change = job.variant.split(" ", 1)
        assert params["study"] == study_name
        main = {
            "control": study.STUDIES[study_name]["control"],
            "rule": "headroom",
            "ring": "paired",
            "gather_s": settings["gather_s"],
        }
        changed = {key for key, value in main.items() if params[key] != value}
        expected = {
            "full control": {"control"},
            "throughput rule": {"rule"},
            "single ring": {"ring"},
            "long gathering": {"gather_s"},
        }[change]
        assert changed == expected, job.name
        # Base and static run no Diolkos: the study's own rows serve, unless the change
        # alters what they see.
        if change in ("full control", "throughput rule"):
            assert job.scheme not in ("base", "static")
    for ring in {"2a", "2b"} & set(settings["studies"]):
        mains = {job.scheme for job in paper if job.variant == ring}
        assert mains == set(settings["schemes"])


def _study_results(seeds: list[int]) -> Results:
    """The study's results as its jobs would store them, from made-up numbers: each
    scheme's figure plus a spread over seeds."""
    per_port = {
        "1a": {"base": 1.9, "ewma": 2.0, "dense": 2.0},
        "2a": {"base": 5.8, "ewma": 5.9, "dense": 5.85},
        "2a full control": {"ewma": 6.2, "dense": 6.7},
        "2a throughput rule": {"ewma": 5.9, "dense": 5.9},
    }
    surge = {"static": 20.0, "ewma": 25.0, "dense": 29.0, "oracle": 30.0}
    scores = {"mae_pct": 1.0, "sdae_pct": 2.0}

    def result(job) -> dict:
        if job.experiment == "surge":
            return {"goodput_mbps": surge[job.scheme] + 0.1 * job.seed, "ttl_drops": 0}
        if job.experiment == "table 1":
            columns = (
                study.TABLE1_TRACES
                if job.variant == "real traces"
                else ("s1 A", "s1 I", "t1b A", "t1b I")
            )
            return {label: dict.fromkeys(columns, scores) for label in study.TABLE1_MODELS}
        dense = job.scheme == "dense"
        return {
            "per_port_mbytes": per_port[job.variant][job.scheme] + 0.01 * job.seed,
            "per_port_tx_mbytes": per_port[job.variant][job.scheme] / 2,
            "goodput_mbps": 100.0,
            "failed_flows": 0,
            "drops": 0,
            "loops": 0,
            "moves": 0,
            "trained_rows": 228 if job.scheme != "base" else 0,
            "train_s": [0.5] if dense else [],
            "inference_s": [0.0003] if dense else [],
        }

    # Studies 1a, 2a, and 2a under the throughput rule and under full control; schemes
    # base, EWMA and Dense (the sensitivity rows EWMA and Dense only).
    settings = {**study.QUICK, "gather_s": 380, "measure_s": 380}
    records = [{**job.fields(), "result": result(job)} for job in study.jobs(settings, seeds)]
    return Results(study.NAME, True, seeds, settings, records)


def test_the_study_table_states_each_claim_from_the_numbers():
    table = study.table(_study_results([1, 2, 3]))
    holds = {claim.statement.split(":")[0]: claim.holds for claim in table.claims}
    assert holds["Forecasts move flows before the change (surge"]
    assert holds["1a"] is False and holds["2a"] is False
    # The full-control rows are judged against the study's own base, and say they are
    # a sensitivity, not the main setting; the paper's figures sit by its own rows.
    assert holds["2a full control"]
    (sensitivity,) = [c for c in table.claims if c.statement.startswith("2a full control:")]
    assert "sensitivity, not the main setting" in sensitivity.statement
    assert "base: 2a's rows" in sensitivity.statement
    assert "Dense 6.720" in sensitivity.evidence and "base 5.820" in sensitivity.evidence
    # Goodput is the same under every scheme here: no goodput claim holds.
    assert not any(v for k, v in holds.items() if k.endswith("goodput"))
    assert {"1a goodput", "2a goodput", "2a full control goodput"} <= set(holds)
    # EWMA and Dense came out identical under the throughput rule: the notes count it.
    (same,) = [n for n in table.notes if n.startswith("Seeds on which EWMA's")]
    assert "2a throughput rule 3 of 3" in same and "2a full control 0 of 3" in same
    assert holds["No forwarding loop ever forms"]
    assert any(row[0] == "2a | dense" and row[2] == "3.73" for row in table.rows)
    assert table.columns[1] == "per-port MB/s (Eq. 1-2)" and table.columns[3] == "tx-only MB/s"
    assert any(row[0] == "2a full control | dense" and row[2] == "" for row in table.rows)
    assert not any(row[0].startswith("2a full control | base") for row in table.rows)
    # One seed gives no interval: the comparisons of schemes are refused, not judged.
    alone = {c.statement.split(":")[0]: c.holds for c in study.table(_study_results([1])).claims}
    assert alone["Forecasts move flows before the change (surge"] is None
    assert alone["1a"] is None and alone["2a"] is None and alone["2a full control"] is None


def test_a_pushed_model_sets_the_rounds_by_its_own_lead_and_horizon():
    sim = Simulation(topologies()["ring"])
    plane = ControlPlane(sim)
    model = Ewma(window=1, lead=1, horizon=2).fit(np.arange(40.0).reshape(10, 4))
    plane.shared(SERVICE_KEY, ForecastService).push("s0", model)
    (agent,) = plane.add_agents(Diolkos, ["s0"], model="ewma", sample_period="1ms")
    plane.run("31ms")
    # Rounds every lead + horizon = 3 samples (the agent was built for 1 + 1 = 2).
    assert agent.round_steps == 3 and agent.stats.rounds == 10
    assert agent.stats.untrained_rounds == 0
