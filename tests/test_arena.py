"""The arena: a small one runs end to end through the study framework, and its verdicts
never crown a dominated scheme and call a tie a tie."""

import types

import numpy as np
import pyarrow.parquet as pq
import pytest

from isthmus.experiments import Results, run_study
from isthmus.experiments.verdicts import unbeaten
from isthmus.registry import Registry
from isthmus.results import summarize
from isthmus.scenario import load_scenario, parse_scenario
from isthmus.studies import arena, check_study
from isthmus.studies.arena.schemes import SCHEMES, Scheme, register

SMALL = {
    "fabrics": ["fattree4"],
    "workloads": ["incast", "permutation"],
    "loads": [],
    "schemes": ["ecmp", "single_path", "hedera", "drop_tail", "fq_codel"],
}


def test_a_dominated_contender_never_wins_and_a_tie_is_a_tie():
    rng = np.random.default_rng(3)
    good = list(10 + rng.normal(0, 1, 5))
    samples = {
        "good": good,
        "twin": list(good),  # the same values: a tie, never a defeat
        "noisy": list(10 + rng.normal(0, 4, 5)),  # overlaps good: a tie too
        "dominated": [v + 8 for v in good],
    }
    winners, why = unbeaten(samples, lower_is_better=True)
    assert "dominated" not in winners
    assert {"good", "twin", "noisy"} <= set(winners)
    assert "dominated beaten by good, twin" in why
    # Higher is better: the same numbers crown the other end.
    winners, _ = unbeaten(samples, lower_is_better=False)
    assert "dominated" in winners and not {"good", "twin"} & set(winners)
    # One seed gives no spread, hence no verdict; a contender with no finite value drops
    # out, and one left alone has nobody to be beaten by: no verdict either.
    assert unbeaten({"a": [1.0], "b": [2.0, 3.0]}, lower_is_better=True) is None
    winners, _ = unbeaten(
        {"a": [1.0, 1.1], "b": [float("nan")] * 2, "c": [5.0, 5.2]}, lower_is_better=True
    )
    assert winners == ["a"]
    assert unbeaten({"a": [1.0, 1.1], "b": [float("nan")] * 2}, lower_is_better=True) is None
    # Equal at every seed is a tie, not a defeat by a zero-width interval.
    winners, _ = unbeaten({"a": [9.5, 9.5, 9.5], "b": [9.5, 9.5, 9.5]}, lower_is_better=False)
    assert winners == ["a", "b"]


@pytest.fixture
def small_arena() -> types.ModuleType:
    module = types.ModuleType("arena_small")
    module.__dict__.update(arena.__dict__)
    module.QUICK = SMALL
    return module


def test_the_arena_is_a_study_and_every_scheme_has_a_known_group():
    check_study(arena)
    # Every workload is a scenario that runs alone; a workload with one load-driven
    # stream runs at the study's loads, a surge at its own.
    for path in sorted(arena.WORKLOADS.glob("*.toml")):
        assert load_scenario(path).traffic, path.name
    assert arena._loads("websearch", [0.3, 0.6]) == [0.3, 0.6]
    assert arena._loads("surge", [0.3, 0.6]) == [None]
    assert arena._loads("incast", [0.3, 0.6]) == [None]
    assert set(arena.QUICK["schemes"]) == set(SCHEMES)
    with pytest.raises(ValueError, match="group must be one of"):
        Scheme("teleport", "time travel")
    # A sensitivity row varies a scheme of its own group, never another sensitivity row.
    with pytest.raises(ValueError, match="varies a scheme of its own group"):
        register(Scheme("ecmp_as_codel", "queue management", varies="ecmp"))
    with pytest.raises(ValueError, match="varies a scheme of its own group"):
        register(Scheme("twice", "path selection", varies="hedera_5ms"))
    with pytest.raises(ValueError, match="did you mean 'ecmp'"):
        arena.jobs({**SMALL, "schemes": ["ecpm"]}, [1])


def test_a_small_arena_runs_end_to_end_and_renders_from_its_folder(small_arena, tmp_path):
    results = run_study(small_arena, quick=True, seeds=[1, 2], folder=tmp_path / "study")
    table = small_arena.table(results)
    assert len(table.rows) == 2 * len(SMALL["schemes"])
    assert all(len(row) == len(table.columns) for row in table.rows)
    # Physics the verdicts rest on: goodput never exceeds what the links can carry (an
    # incast's one receiver link of 10 Gb/s; 16 hosts' links in a permutation), and an
    # incast moves its 8 x 64 KB x 10 rounds in every scheme.
    for scheme in SMALL["schemes"]:
        incast = results.select(variant="incast / fattree4", scheme=scheme)
        assert all(0 < r["goodput_gbps"] <= 10.0 for r in incast)
        assert all(r["flows"] == 80 and r["flows_unfinished"] == 0 for r in incast)
        permutation = results.values(
            "goodput_gbps", variant="permutation / fattree4", scheme=scheme
        )
        assert all(0 < g <= 16 * 10.0 for g in permutation)
    # Only a scheme with a control program sends commands: Hedera places elephants.
    hedera = results.values("commands", variant="permutation / fattree4", scheme="hedera")
    ecmp = results.values("commands", variant="permutation / fattree4", scheme="ecmp")
    assert min(hedera) > 0 and set(ecmp) == {0.0}
    # Hedera reads every switch's flow counters each round: one request per switch (20
    # on the k = 4 tree), so a whole number of rounds' worth.
    reads = results.values("reads", variant="permutation / fattree4", scheme="hedera")
    assert all(r > 0 and r % 20 == 0 for r in reads)
    assert set(results.values("reads", variant="permutation / fattree4", scheme="ecmp")) == {0}
    written = small_arena.figures(results, tmp_path)
    frame = pq.read_table(written[0]).to_pydict()
    assert len(frame["scheme"]) == 2 * len(SMALL["schemes"]) * len(arena.OBJECTIVES)
    assert set(frame["group"]) == {"path selection", "queue management"}
    # Two seeds give a verdict wherever a figure exists (an incast has no flow > 1 MB).
    measured = [w for w, m in zip(frame["winner"], frame["mean"], strict=True) if np.isfinite(m)]
    assert measured and all(w is not None for w in measured)
    assert any(w for w in measured) and not all(w for w in measured)
    tables = written[2].read_text()
    assert "### path selection" in tables and "| incast / fattree4 |" in tables
    page = written[1].read_text()
    assert "Isthmus arena" in page and page.count("Plotly.newPlot") == 2 * len(arena.OBJECTIVES)


def _record(variant: str, scheme: str, seed: int, result: dict) -> dict:
    return {
        "experiment": "arena",
        "variant": variant,
        "scheme": scheme,
        "seed": seed,
        "result": result,
    }


def test_a_planted_dominated_scheme_is_never_reported_a_winner(monkeypatch):
    schemes = Registry("arena scheme")
    for name in ("ecmp", "twin", "planted"):
        schemes.register(name, Scheme(name, "path selection"))
    monkeypatch.setattr(arena, "SCHEMES", schemes)
    rng = np.random.default_rng(7)
    records = []
    for variant in ("websearch | a", "incast | b"):
        for seed in range(1, 6):
            base = {o.key: float(10 + rng.normal(0, 0.5)) for o in arena.OBJECTIVES}
            # Worse on every objective by far: higher where lower is better, and lower
            # where higher is better.
            planted = {
                o.key: base[o.key] * (3.0 if o.lower_is_better else 0.3) for o in arena.OBJECTIVES
            }
            for scheme, result in (("ecmp", base), ("twin", dict(base)), ("planted", planted)):
                records.append(_record(variant, scheme, seed, result))
    results = Results("arena", True, [1, 2, 3, 4, 5], {}, records)
    rows = arena.standings(results)
    assert not any(r["winner"] for r in rows if r["scheme"] == "planted")
    assert all(r["winner"] is False for r in rows if r["scheme"] == "planted")
    # The twins tie: each wins exactly where the other does, here everywhere.
    assert all(r["winner"] for r in rows if r["scheme"] in ("ecmp", "twin"))
    table = arena.table(results)
    planted_rows = [row for row in table.rows if row[2] == "planted"]
    assert planted_rows and all(row[-1].startswith("0 of") for row in planted_rows)
    claim = table.claims[0]
    assert claim.holds is False  # the twins win everything: here there is a silver bullet


LEARNED = {
    "fabrics": ["leafspine", "mesh"],
    "workloads": ["incast"],
    "loads": [0.5],
    "schemes": ["pfc_only", "dcqcn_paper", "acc", "ecmp", "single_path", "diolkos"],
    "training_episodes": {"acc": 2},
    "training_episode_ms": 2.0,
}


def test_learned_schemes_train_first_and_every_cell_can_be_run_alone(tmp_path):
    module = types.ModuleType("arena_learned")
    module.__dict__.update(arena.__dict__)
    module.QUICK = LEARNED
    results = run_study(module, quick=True, seeds=[1, 2], folder=tmp_path / "study")
    # ACC trained once a seed, on training traffic, before its cells; what it learned is
    # not in the cells' results, and only the cells are in the table.
    training = results.select(experiment="training")
    assert [r["seed"] for r in results.matching(experiment="training")] == [1, 2]
    assert all(len(r["curve"]) == 2 and r["wall_s"] > 0 for r in training)
    # The network kept is the episode's that did best on validation traffic.
    for r in training:
        assert len(r["validation"]) == 2 and r["kept"] == 1 + int(np.argmax(r["validation"]))
    acc = results.select(experiment="arena", scheme="acc")
    assert len(acc) == 4 and all(r["training_s"] > 0 and r["commands"] > 0 for r in acc)
    assert all(r["training_s"] == 0 for r in results.select(experiment="arena", scheme="ecmp"))
    table = module.table(results)
    assert len(table.rows) == 2 * len(LEARNED["schemes"])
    assert any("After pre-training, ACC's greedy reward" in c.statement for c in table.claims)
    # Physics: PFC makes every RDMA scheme lossless; the full mesh has one shortest path
    # between racks, so ECMP is single-path there, to the packet, and Diolkos, which may
    # take two-hop detours, is not.
    for scheme in ("pfc_only", "dcqcn_paper", "acc"):
        assert all(r["drops"] == 0 for r in results.select(experiment="arena", scheme=scheme))
    mesh = {
        s: results.select(variant="incast / mesh", scheme=s)
        for s in ("ecmp", "single_path", "diolkos")
    }
    for objective in (o for o in arena.OBJECTIVES if o.network):
        assert np.array_equal(
            [r[objective.key] for r in mesh["ecmp"]],
            [r[objective.key] for r in mesh["single_path"]],
            equal_nan=True,
        )
    assert all(r["commands"] > 0 for r in mesh["diolkos"])
    # An agent reads its own switch's counters: no statistics request crosses the network.
    assert all(r["reads"] == 0 for r in mesh["diolkos"])
    # Click-through: the page holds each cell's runs and the scenario that runs it alone,
    # and that scenario at a cell's seed gives the cell's figures again.
    page = module.figures(results, tmp_path)[1].read_text()
    assert '"incast / mesh": {' in page and "the scenario that runs this cell alone" in page
    scenarios = module.cell_scenarios(results)
    assert scenarios[("incast / leafspine", "acc")] is None
    spec = parse_scenario(scenarios[("incast / mesh", "diolkos")], "cell")
    sim = spec.build(seed=2, base=arena.WORKLOADS)
    spec.execute(sim)
    again = summarize(sim, scenario=spec.name, wall_s=0.0)
    run = results.select(variant="incast / mesh", scheme="diolkos", seed=2)[0]
    assert again["slowdown"]["all"]["mean"] == pytest.approx(run["slowdown_mean"], rel=1e-12)
    assert float(again["packets_dropped"]) == run["drops"]


def test_ibcn_trains_on_other_traffic_then_drives_bcn_on_any_fabric(monkeypatch):
    from isthmus.studies.arena import learned

    # The paper's 4 layers learn the same way, slower.
    monkeypatch.setitem(learned.IBCN_APP, "model_options", {"layers": 1, "epochs": 10})
    runs = [arena.train("ibcn", seed, 2, 3.0, [0.5]) for seed in range(1, 6)]
    for trained in runs:
        # The curve: after 1 run and after both, on the same held-out run.
        assert trained["curve_runs"] == [1, 2] and len(trained["curve"]) == 2
        assert all(0 < wape < np.inf for wape in (*trained["curve"], trained["persistence_wape"]))
        assert trained["training_polls"] > 2 * 6 * 15  # every switch, past one example
    # Its seeds' training differ (traffic and initial weights are the seed's).
    assert len({r["persistence_wape"] for r in runs}) == 5
    # One model every switch shares: trained on the leaf-spine's 6 switches, it runs on
    # the k = 4 fat-tree's 20, polling and commanding each of them every 100 us.
    cell = arena.run_cell("permutation", "fattree4", "ibcn", None, 1, trained=runs[0])
    assert "refused" not in cell and cell["flows_unfinished"] == 0
    assert cell["training_s"] == runs[0]["wall_s"] > 0
    assert cell["commands"] > 0 and cell["reads"] >= 20 * cell["commands"]
    plain = arena.run_cell("permutation", "fattree4", "bcn", None, 1)
    assert plain["commands"] == 0 and plain["flows"] == cell["flows"]
    records = [
        {"experiment": "training", "variant": "", "scheme": "ibcn", "seed": s, "result": r}
        for s, r in enumerate(runs, 1)
    ]
    table = arena.table(Results("arena", True, [1, 2, 3, 4, 5], {}, records))
    (claim,) = [c for c in table.claims if "forecaster forecasts" in c.statement]
    assert claim.holds is not None and claim.evidence.endswith("points over 5 seeds")
    assert any(n.startswith("ibcn's training (2 runs of web search") for n in table.notes)
    # A study whose settings give a learner no training is refused before it runs.
    settings = {**arena.QUICK, "schemes": ["ibcn"], "training_episodes": {"acc": 2}}
    with pytest.raises(ValueError, match="training_episodes: ibcn learns as ibcn"):
        arena.jobs(settings, [1])


def test_a_sensitivity_row_is_judged_in_its_originals_place_and_leaves_verdicts_alone(
    monkeypatch,
):
    schemes = Registry("arena scheme")
    for name in ("ecmp", "twin", "planted"):
        schemes.register(name, Scheme(name, "path selection"))
    # Far better than everyone on every objective, but a sensitivity row of `planted`.
    schemes.register("planted_fixed", Scheme("planted_fixed", "path selection", varies="planted"))
    monkeypatch.setattr(arena, "SCHEMES", schemes)
    rng = np.random.default_rng(11)
    records = []
    for seed in range(1, 6):
        base = {o.key: float(10 + rng.normal(0, 0.5)) for o in arena.OBJECTIVES}
        worse = {
            k: v * (3.0 if o.lower_is_better else 0.3)
            for o, (k, v) in zip(arena.OBJECTIVES, base.items(), strict=True)
        }
        better = {
            k: v * (0.3 if o.lower_is_better else 3.0)
            for o, (k, v) in zip(arena.OBJECTIVES, base.items(), strict=True)
        }
        for scheme, result in (
            ("ecmp", base),
            ("twin", dict(base)),
            ("planted", worse),
            ("planted_fixed", better),
        ):
            records.append(_record("websearch / a", scheme, seed, result))
    results = Results("arena", True, [1, 2, 3, 4, 5], {}, records)
    rows = arena.standings(results)
    by = {(r["scheme"], r["objective"]): r["winner"] for r in rows}
    for objective in arena.OBJECTIVES:
        # The group's verdict is the one without the sensitivity row...
        assert by[("ecmp", objective.key)] and by[("twin", objective.key)]
        assert by[("planted", objective.key)] is False
        # ...which, in planted's place, beats everyone.
        assert by[("planted_fixed", objective.key)] is True
    table = arena.table(results)
    assert any(row[2] == "planted_fixed (sensitivity, for planted)" for row in table.rows)
    network = sum(o.network for o in arena.OBJECTIVES)
    note = next(n for n in table.notes if n.startswith("Sensitivity planted_fixed"))
    assert f"unbeaten in {network} of {network} network verdicts, planted in 0" in note
    assert "planted_fixed" not in table.claims[0].evidence


def test_bcn_schemes_regulate_every_flow_and_refuse_incast_rounds_by_name():
    # The same network and TCP less the regulators is queue management's drop_tail.
    bcn = arena.run_cell("websearch", "leafspine", "bcn", 0.3, 1)
    unregulated = arena.run_cell("websearch", "leafspine", "drop_tail", 0.3, 1)
    assert bcn["flows"] == unregulated["flows"] and bcn["flows_unfinished"] == 0
    assert bcn["slowdown_mean"] != unregulated["slowdown_mean"]
    # IBCN's sensitivity row trains on its first 75 polls (7.5 ms), then drives the
    # points by command: a command a poll after the 75th (the last poll's may fall after
    # the run's end), each poll reading the leaf-spine's 6 switches.
    ibcn = arena.run_cell("websearch", "leafspine", "ibcn_in_run", 0.3, 1)
    assert ibcn["commands"] > 0 and bcn["commands"] == 0
    assert ibcn["reads"] / 6 - ibcn["commands"] in (75, 76)
    refused = arena.run_cell("incast", "leafspine", "ibcn_in_run", None, 1)["refused"]
    assert "incast rounds add their flows as the run goes" in refused


def test_a_combination_is_its_parts_and_refuses_what_cannot_be_combined():
    from isthmus.studies.arena.schemes import combine

    # ECMP over a scheme already on ECMP is that scheme, to the packet.
    alone = arena.run_cell("permutation", "leafspine", "ecn_k65", None, 2)
    combined = arena.run_cell("permutation", "leafspine", "ecmp+ecn_k65", None, 2)
    for objective in (o for o in arena.OBJECTIVES if o.network):
        assert combined[objective.key] == pytest.approx(alone[objective.key], nan_ok=True)
    # Spraying packets over ECN's queues changes the run: the path decision is its own.
    sprayed = arena.run_cell("permutation", "leafspine", "spray+ecn_k20", None, 2)
    assert (
        sprayed["slowdown_mean"]
        != arena.run_cell("permutation", "leafspine", "ecn_k20", None, 2)["slowdown_mean"]
    )
    hedera_acc = SCHEMES["hedera+acc"]
    assert hedera_acc.learning is SCHEMES["acc"].learning and hedera_acc.transport == "dcqcn"
    assert [a["name"] for a in hedera_acc.control["apps"]] == ["hedera"]
    with pytest.raises(ValueError, match="would both run on every switch"):
        combine("diolkos", "acc")
    with pytest.raises(ValueError, match="mptcp, .* dcqcn; a flow has one transport"):
        combine("mptcp", "dcqcn_paper")
    with pytest.raises(ValueError, match="combine a path-selection scheme with"):
        combine("codel", "ecn_k20")


def test_a_learned_scheme_without_its_packages_shows_why_instead_of_failing(monkeypatch):
    import sys

    # An install without the `neural` extra: importing PyTorch fails.
    monkeypatch.setitem(sys.modules, "torch", None)
    trained = arena.train("acc", 1, 1, 1.0, [0.5])
    assert "acc needs PyTorch" in trained["refused"] and "isthmus[neural]" in trained["refused"]
    cell = arena.run_cell("incast", "leafspine", "acc", None, 1, trained=trained)
    assert cell == {"refused": trained["refused"]}
    records = [
        {"experiment": "training", "variant": "", "scheme": "acc", "seed": 1, "result": trained},
        _record("incast / leafspine", "acc", 1, cell),
        _record(
            "incast / leafspine",
            "pfc_only",
            1,
            arena.run_cell("incast", "leafspine", "pfc_only", None, 1),
        ),
    ]
    table = arena.table(Results("arena", True, [1], {}, records))
    assert any(n.startswith("acc did not train: acc needs PyTorch") for n in table.notes)
    assert any(
        row[2] == "acc" and row[3].startswith("cannot run: acc needs PyTorch") for row in table.rows
    )
