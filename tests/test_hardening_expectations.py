"""A bundled scenario's [expect] holds at any seed; what holds at its own seed only is in
[expect_at_seed], and a run with another seed says those figures are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from isthmus.cli import app, bundled_scenarios
from isthmus.results import summarize
from isthmus.scenario import Scenario, load_scenario

OTHER_SEEDS = (7, 8)
"""Seeds that drew fabric collisions (drops) in leafspine-udp."""


def _quick(scenario: Scenario) -> Scenario:
    """The Diolkos scenarios shortened to a minute (EWMA, trained after 20 s): what
    their [expect] says, no loop, is a rule of the app, not of the run's length."""
    if scenario.control is None or not any(a.name == "diolkos" for a in scenario.control.apps):
        return scenario
    apps = [
        a.model_copy(update={"model": "ewma", "train_after": 20}) for a in scenario.control.apps
    ]
    return scenario.model_copy(
        update={
            "control": scenario.control.model_copy(update={"apps": apps}),
            "traffic": [t.model_copy(update={"stop": "40s"}) for t in scenario.traffic],
            "run": scenario.run.model_copy(update={"duration": "50s"}),
        }
    )


def _figures(path: Path, seed: int) -> dict:
    scenario = _quick(load_scenario(path))
    sim = scenario.build(seed=seed, base=path.parent)
    scenario.execute(sim)
    return summarize(sim, scenario=scenario.name, wall_s=1.0)


def _outside(ranges: dict[str, list[float]], figures: dict) -> dict[str, float]:
    return {f: figures[f] for f, (low, high) in ranges.items() if not low <= figures[f] <= high}


def _states_expectations(path: Path) -> bool:
    scenario = load_scenario(path)
    return bool(scenario.expect or scenario.expect_at_seed)


EXPECTING = sorted(name for name, path in bundled_scenarios().items() if _states_expectations(path))


def test_the_scenarios_that_state_expectations_are_all_checked_here():
    assert {"leafspine-udp", "incast-udp", "fattree-permutation-ofpt"} <= set(EXPECTING)
    assert {"diolkos-mesh", "diolkos-ring"} <= set(EXPECTING)


@pytest.mark.parametrize("name", EXPECTING)
def test_expectations_hold_at_the_bundled_seed_and_the_any_seed_ones_at_others(name):
    path = bundled_scenarios()[name]
    scenario = load_scenario(path)
    own = _figures(path, scenario.seed)
    assert _outside(scenario.expect, own) == {}
    assert _outside(scenario.expect_at_seed, own) == {}
    for seed in OTHER_SEEDS:
        assert _outside(scenario.expect, _figures(path, seed)) == {}, seed


def test_leafspine_udp_drops_at_another_seed_where_ecmp_overloads_a_fabric_link():
    """The zero-drop figures hold at seed 1 only: seed 7's hashes put seven 6 Gb/s
    streams on one 40 Gb/s link, so they belong in [expect_at_seed]."""
    path = bundled_scenarios()["leafspine-udp"]
    scenario = load_scenario(path)
    figures = _figures(path, 7)
    assert figures["packets_dropped"] > 0
    assert set(_outside(scenario.expect_at_seed, figures)) == {
        "packets_dropped",
        "delivered_fraction",
        "stream_loss",
    }


def _expectation_rows(output: str) -> dict[str, str]:
    """The expectations table's rows, by figure and where it holds."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 5 and cells[2] in ("any seed", "seed 1 only"):
            rows[f"{cells[0]} at {cells[2]}"] = cells[4]
    return rows


def test_a_run_with_another_seed_says_which_figures_it_does_not_check(tmp_path):
    runner = CliRunner()
    other = runner.invoke(
        app, ["run", "leafspine-udp", "--seed", "7", "--out", str(tmp_path / "a")]
    )
    assert other.exit_code == 0, other.output
    assert _expectation_rows(other.output) == {
        "delivered_fraction at any seed": "ok",
        "packets_dropped at seed 1 only": "not checked",
        "delivered_fraction at seed 1 only": "not checked",
        "stream_loss at seed 1 only": "not checked",
    }
    assert "this run used seed 7" in other.output
    own = runner.invoke(app, ["run", "leafspine-udp", "--out", str(tmp_path / "b")])
    assert own.exit_code == 0, own.output
    assert set(_expectation_rows(own.output).values()) == {"ok"}
    assert "not checked" not in own.output
