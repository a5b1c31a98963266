"""The ACC study's fabric experiments: phases that offer their stated load, the congested
ToR ports' figures, and the best static template chosen on training traffic."""

import numpy as np
import pytest

from isthmus import _core
from isthmus.experiments.jobs import execute
from isthmus.learning.ecn_queues import NUM_TEMPLATES, templates
from isthmus.studies.acc import runs, study
from isthmus.studies.acc.best_static import (
    BEST_STATIC,
    TRAINING_SEED_OFFSET,
    TemplateEcn,
    loaded_reward,
    winner,
)
from isthmus.studies.acc.runs import (
    downlink_ports,
    run_messages,
    sweep_templates,
    tor_downlinks,
)
from isthmus.studies.acc.testbed import HOST_BPS, control, network
from isthmus.studies.acc.traffic import HETEROGENEOUS_PHASES, heterogeneous, phase_sizes
from isthmus.workload import size_distribution


@pytest.mark.parametrize("phase_ms", [4.0, 20.0])
def test_each_heterogeneous_phase_offers_its_load_in_bytes(phase_ms):
    """Web search 40 % and data mining 70 % of 24 x 25 Gb/s over the phase, counted in
    flow bytes: drawing load / mean-size flows offered data mining anywhere from 14 %
    to 229 % at 20 ms, seed to seed."""
    phase_s = phase_ms / 1e3
    for seed in (1, 2, 3):
        sim = network(seed)
        heterogeneous(sim, np.random.default_rng([seed, 3]), phase_s)
        flows = sim.flows()
        phase = (flows["start_ps"] / 1e12 // phase_s).astype(int)
        capacity = sim.topology.num_hosts * HOST_BPS
        for p, (_, load) in enumerate(HETEROGENEOUS_PHASES):
            offered = flows["size_bytes"][phase == p].sum()
            target = load * capacity * phase_s / 8
            assert offered == pytest.approx(target, rel=0.01), (seed, p)
        assert (flows["src"] != flows["dst"]).all()


def test_a_phase_takes_the_cdfs_sizes_in_turn_and_cuts_only_the_last():
    dist = size_distribution("datamining")
    sizes = phase_sizes("datamining", 50_000_000, seed=7, stream=1)
    drawn = _core.sample_sizes(dist.text, dist.unit_bytes, len(sizes), 7, 1)
    assert sizes.sum() == 50_000_000
    assert (sizes[:-1] == drawn[:-1]).all() and 0 < sizes[-1] <= drawn[-1]


def test_downlink_figures_read_the_leaf_ports_facing_hosts_only():
    sim = network(1, sample_interval="100us")
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    kinds = np.asarray(sim.topology.nodes()["kind"])
    down = downlink_ports(sim)
    assert len(down) == 24
    assert all(names[ports["node"][i]].startswith("leaf") for i in down)
    assert (kinds[ports["peer_node"][down].astype(int)] == "host").all()
    # Every other switch port faces a switch.
    others = np.setdiff1d(np.flatnonzero(kinds[ports["node"].astype(int)] == "switch"), down)
    assert (kinds[ports["peer_node"][others].astype(int)] == "switch").all()
    # One flow from leaf1 to h0: of the downlinks, only leaf0's port to h0 carries it,
    # while uplinks and spine ports carry it too.
    sim.add_dcqcn_flow(6, 0, 1_000_000)
    sim.run("1ms")
    samples = sim.samples()
    phases = np.zeros(len(samples["time_ps"]), dtype=int)
    figures = tor_downlinks(sim, phases)
    leaf0, h0 = sim.node_index("leaf0"), sim.node_index("h0")
    (into_h0,) = np.flatnonzero((ports["node"] == leaf0) & (ports["peer_node"] == h0))
    assert into_h0 in down
    (to_h6,) = np.flatnonzero(
        (ports["node"] == sim.node_index("leaf1")) & (ports["peer_node"] == sim.node_index("h6"))
    )
    tx = sim.ports()["tx_bytes"]
    assert tx[into_h0] >= 1_000_000 and 0 < tx[to_h6] < 50_000  # the data; its feedback
    assert tx[np.setdiff1d(down, [into_h0, to_h6])].sum() == 0
    assert tx[others].sum() > 2_000_000  # uplinks and spines: left out
    assert figures["downlink_utilisation_pct"] == pytest.approx(
        (tx[into_h0] + tx[to_h6]) * 8 / 1e-3 / HOST_BPS / 24 * 100, rel=1e-9
    )
    assert figures["phase_downlink_utilisation_pct"] == [figures["downlink_utilisation_pct"]]
    assert figures["hottest_downlink_queue_kb"] == pytest.approx(
        samples["queue_bytes"][:, into_h0].mean() / 1e3
    )


def test_the_sweep_picks_the_best_template_on_training_traffic():
    swept = [31, 13, 0]  # the best in the middle: neither the first swept nor the lowest index
    result = sweep_templates(5, "messages", candidates=swept, load=0.6, span_ms=10.0)
    scores = np.array(result["scores"])
    assert len(scores) == NUM_TEMPLATES and np.isnan(np.delete(scores, swept)).all()
    assert len(set(scores[swept])) == 3, "the span separates these templates"
    assert result["template"] == swept[int(np.argmax(scores[swept]))] == 13
    assert result["training_seed"] == 5 + TRAINING_SEED_OFFSET
    # Scored on the training seed's traffic, not the test seed's.
    again = run_messages(5 + TRAINING_SEED_OFFSET, BEST_STATIC, 0.6, 10.0, {"template": 13})
    assert scores[13] == again["reward"]
    assert winner([0.1, float("nan"), 0.3, 0.3]) == 2


def test_best_static_evaluation_needs_its_sweep_and_holds_the_winner_on_every_port(
    monkeypatch,
):
    settings = {**study.QUICK, "message_ms": 20.0}
    jobs = study.jobs(settings, [3])
    by_name = {j.name: j for j in jobs}
    evaluations = [j for j in jobs if j.scheme == BEST_STATIC and j.experiment != "template sweep"]
    assert {j.experiment for j in evaluations} == {"heterogeneous", "messages"}
    for evaluation in evaluations:
        sweep = by_name[evaluation.needs["trained"]]
        assert sweep.experiment == "template sweep" and sweep.run is sweep_templates
        assert sweep.params["experiment"] == evaluation.experiment
        assert jobs.index(sweep) < jobs.index(evaluation)
        same = {k: v for k, v in evaluation.params.items() if k not in ("seed", "scheme")}
        assert {k: sweep.params[k] for k in same} == same
    assert not any(j.scheme == BEST_STATIC for j in jobs if j.experiment == "sharing")
    # The messages pair, run by the framework, every scheme attached recorded.
    attached = []

    def recording(sim, scheme, trained, seed, train, **options):
        plane, agents = control(sim, scheme, trained, seed, train, **options)
        attached.append((seed, agents))
        return plane, agents

    monkeypatch.setattr(runs, "control", recording)
    (evaluation,) = [j for j in evaluations if j.experiment == "messages"]
    pair = [by_name[evaluation.needs["trained"]], evaluation]
    ends = {end.job.name: end for end in execute(pair)}
    assert all(end.error is None for end in ends.values())
    sweep = ends[pair[0].name].result
    assert not np.isnan(sweep["scores"]).any()
    assert len(set(sweep["scores"])) > 1
    assert sweep["template"] == int(np.argmax(sweep["scores"]))
    assert [seed for seed, _ in attached] == [3 + TRAINING_SEED_OFFSET] * NUM_TEMPLATES + [3]
    # The evaluation held the winner on every port of every switch.
    agents = attached[-1][1]
    assert len(agents) == 6 and all(isinstance(a, TemplateEcn) for a in agents)
    assert all(a.template == sweep["template"] for a in agents)
    for agent in agents:
        for port, rate in enumerate(agent.switch.ports()["rate_bps"]):
            kmin, kmax, pmax = templates(float(rate))[sweep["template"]]
            ecn = agent.switch.ecn(port)
            assert (ecn["kmin"], ecn["kmax"], ecn["pmax"]) == (
                ("bytes", kmin),
                ("bytes", kmax),
                pmax,
            )


def test_every_scheme_is_scored_with_the_learners_reward_over_loaded_queues():
    sim = network(2)
    sim.add_dcqcn_flow(6, 0, 2_000_000)
    plane, agents = control(sim, "SECN2", None, 2, train=True)
    plane.run("3ms")
    assert all(len(a.rewards) == 3 for a in agents)
    busy = sum(int(b.sum()) for a in agents for b in a.busy)
    assert 0 < busy < sum(b.size for a in agents for b in a.busy)
    # The flow's path (h6's port at leaf1 carries data out; leaf0's port to h0) is
    # loaded; ports carrying only its acknowledgements are busy but not loaded.
    loaded = sum(int(m.sum()) for a in agents for m in a.loaded)
    assert 0 < loaded < busy
    assert 0 < loaded_reward(agents) < 1
