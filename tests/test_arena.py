"""The arena: a small one runs end to end through the study framework, and its verdicts
never crown a dominated scheme and call a tie a tie."""

import types

import numpy as np
import pyarrow.parquet as pq
import pytest

from isthmus.experiments import Results, run_study
from isthmus.experiments.verdicts import unbeaten
from isthmus.registry import Registry
from isthmus.scenario import load_scenario
from isthmus.studies import arena, check_study
from isthmus.studies.arena.schemes import SCHEMES, Scheme

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
