"""Sweeps: the grid, parallel runs equal to sequential ones, resuming, failures."""

import json
import textwrap

import pytest
from typer.testing import CliRunner

from isthmus.cli import app
from isthmus.query import query
from isthmus.scenario import parse_scenario
from isthmus.sweep import parse_axis, plan

runner = CliRunner()

SCENARIO = textwrap.dedent(
    """
    name = "sw"
    seed = 7
    [topology]
    kind = "leaf_spine"
    spines = 1
    leaves = 2
    hosts_per_leaf = 4
    [network]
    ecn_threshold = "20pkts"
    [[traffic]]
    kind = "poisson_flows"
    load = 0.2
    stop = "2ms"
    [[traffic]]
    kind = "flow_list"
    file = "a.csv"
    [run]
    duration = "100ms"
    stop_when = "flows_finished"
    """
)

VOLATILE = {"wall_s", "events_per_s", "peak_rss_mb"}


def test_axes_resolve_names_and_ranges_exactly():
    data = {"traffic": [{"kind": "x", "load": 0.1}], "network": {"switch_queue": "1pkts"}}
    axis = parse_axis("load=0.1:0.5:0.1", data)
    assert axis.path == ("traffic", 0, "load") and axis.values == (0.1, 0.2, 0.3, 0.4, 0.5)
    assert parse_axis("network.switch_queue=10pkts,20pkts", data).values == ("10pkts", "20pkts")
    assert parse_axis("load=1:3:1", data).values == (1, 2, 3)
    with pytest.raises(ValueError, match="no field 'rate'"):
        parse_axis("rate=1,2", data)
    with pytest.raises(ValueError, match="PATH=VALUES"):
        parse_axis("load", data)
    with pytest.raises(ValueError, match="step > 0"):
        parse_axis("load=0.5:0.1:0.1", data)


def test_every_point_is_validated_before_anything_runs():
    points = plan(SCENARIO, ["load=0.1,0.2", "ecn_threshold=10pkts,30pkts"], seeds=3)
    assert len(points) == 12 and {p.seed for p in points} == {7, 8, 9}
    assert parse_scenario(points[-1].text).traffic[0].load == 0.2
    with pytest.raises(ValueError, match=r"sweep point traffic.0.load=-1: .*greater than 0"):
        plan(SCENARIO, ["load=-1"], seeds=1)


@pytest.fixture
def scenario_dir(tmp_path):
    (tmp_path / "s.toml").write_text(SCENARIO)
    (tmp_path / "a.csv").write_text(
        "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,5,30000,0\n"
    )
    return tmp_path


def _sweep(scenario_dir, *args):
    out = scenario_dir / "sweep"
    cli = ["sweep", str(scenario_dir / "s.toml"), "--out", str(out), "--workers", "2", *args]
    return runner.invoke(app, cli), out


def test_a_sweep_equals_sequential_runs_and_resumes_without_recomputing(scenario_dir):
    result, out = _sweep(scenario_dir, "--set", "load=0.1,0.3", "--seeds", "2")
    assert result.exit_code == 0, result.output
    assert "4 ran, 0 already done, 0 failed" in result.output
    folders = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert folders == [
        "load=0.1,seed7",
        "load=0.1,seed8",
        "load=0.3,seed7",
        "load=0.3,seed8",
    ]
    # The same point run alone with `isthmus run` gives the same numbers.
    point = out / "load=0.3,seed8"
    alone = scenario_dir / "alone"
    (scenario_dir / "p.toml").write_text((point / "scenario.toml").read_text())
    assert (
        runner.invoke(app, ["run", str(scenario_dir / "p.toml"), "--out", str(alone)]).exit_code
        == 0
    )
    swept = json.loads((point / "summary.json").read_text())
    single = json.loads((alone / "summary.json").read_text())
    assert swept.pop("sweep") == {"traffic.0.load": 0.3}
    assert {k: v for k, v in swept.items() if k not in VOLATILE} == {
        k: v for k, v in single.items() if k not in VOLATILE
    }
    loads = query("SELECT sweep_traffic_0_load AS load FROM runs ORDER BY run", out)
    assert loads.column("load").to_pylist() == [0.1, 0.1, 0.3, 0.3]
    # A killed sweep: one point never finished (its folder absent, a partial left).
    summary_before = (out / "load=0.1,seed7" / "summary.json").read_text()
    (out / "load=0.3,seed7" / "summary.json").unlink()
    for f in (out / "load=0.3,seed7").iterdir():
        f.unlink()
    (out / "load=0.3,seed7").rmdir()
    (out / ".load=0.3,seed7.partial-1").mkdir()
    result, _ = _sweep(scenario_dir, "--set", "load=0.1,0.3", "--seeds", "2")
    assert "1 ran, 3 already done, 0 failed" in result.output, result.output
    assert (out / "load=0.1,seed7" / "summary.json").read_text() == summary_before


def test_a_failed_point_is_reported_and_the_others_finish(scenario_dir):
    result, out = _sweep(scenario_dir, "--set", "file=a.csv,missing.csv")
    assert result.exit_code == 1
    assert "1 ran, 0 already done, 1 failed" in result.output
    assert "missing.csv" in result.output
    failures = json.loads((out / "failures.json").read_text())
    assert list(failures) == ["file=missing.csv,seed7"]
    assert (out / "file=a.csv,seed7" / "summary.json").exists()


def test_a_sweep_on_local_ray_equals_the_local_one(scenario_dir, capfd):
    result, local = _sweep(scenario_dir, "--set", "load=0.1,0.3")
    assert result.exit_code == 0, result.output
    out = scenario_dir / "on-ray"
    cli = ["sweep", str(scenario_dir / "s.toml"), "--out", str(out), "--ray", "local"]
    cli += ["--set", "load=0.1,0.3"]
    result = runner.invoke(app, cli)
    assert result.exit_code == 0, result.output
    assert "2 ran, 0 already done, 0 failed" in result.output
    # Ray's start-up notices stay out of the user's output.
    printed = result.output + "".join(capfd.readouterr())
    assert "Started a local Ray instance" not in printed and "WARNING" not in printed
    for name in ("load=0.1,seed7", "load=0.3,seed7"):
        a = json.loads((local / name / "summary.json").read_text())
        b = json.loads((out / name / "summary.json").read_text())
        assert {k: v for k, v in a.items() if k not in VOLATILE} == {
            k: v for k, v in b.items() if k not in VOLATILE
        }


def test_seeds_listed_with_set_are_the_seeds_run():
    points = plan(SCENARIO, ["load=0.2,0.4", "seed=1,5"], 1)
    assert [(p.settings, p.seed) for p in points] == [
        ((("traffic.0.load", 0.2),), 1),
        ((("traffic.0.load", 0.2),), 5),
        ((("traffic.0.load", 0.4),), 1),
        ((("traffic.0.load", 0.4),), 5),
    ]
    assert all(parse_scenario(p.text).seed == p.seed for p in points)
    with pytest.raises(ValueError, match="give the seeds once"):
        plan(SCENARIO, ["seed=1,5"], 3)


def test_a_range_without_its_step_says_what_a_range_is():
    with pytest.raises(ValueError, match="a range is start:stop:step"):
        plan(SCENARIO, ["load=0.1:0.5"], 1)


def test_run_folders_name_each_swept_field_by_its_shortest_unambiguous_tail():
    from isthmus.sweep import short_names

    assert short_names(["traffic.0.load", "network.switch_queue"]) == ["load", "switch_queue"]
    assert short_names(["traffic.0.load", "traffic.1.load"]) == ["0.load", "1.load"]
    assert short_names(["seed"]) == ["seed"]
