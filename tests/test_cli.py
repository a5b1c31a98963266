"""The command line end to end: list, run, the run folder, and refusals."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from isthmus import results
from isthmus.cli import app

runner = CliRunner()


def test_list_shows_every_bundled_scenario():
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    for name in ("leafspine-udp", "incast-udp", "fattree-permutation-udp"):
        assert name in result.output


def test_run_writes_a_complete_run_folder(tmp_path):
    out = tmp_path / "run1"
    result = runner.invoke(app, ["run", "incast-udp", "--seed", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "packets dropped" in result.output and "run folder" in result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "flows.parquet",
        "ports.parquet",
        "scenario.toml",
        "summary.json",
    ]
    summary = json.loads((out / "summary.json").read_text())
    flows = pq.read_table(out / "flows.parquet").to_pydict()
    ports = pq.read_table(out / "ports.parquet").to_pydict()
    assert summary["seed"] == 3 and summary["flows"] == len(flows["flow_id"]) == 16
    assert summary["packets_dropped"] == sum(ports["drop_packets"]) > 0
    assert summary["packets_sent"] == summary["packets_delivered"] + summary["packets_dropped"]
    assert 'kind = "leaf_spine"' in (out / "scenario.toml").read_text()
    assert not list(tmp_path.glob(".*partial*"))


def test_sampled_scenarios_write_a_time_series(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", "leafspine-udp", "--out", str(out)]).exit_code == 0
    series = pq.read_table(out / "timeseries.parquet")
    ports = pq.read_table(out / "ports.parquet").num_rows
    assert series.num_rows % ports == 0 and series.num_rows // ports >= 200


def test_existing_run_folder_is_never_overwritten(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    result = runner.invoke(app, ["run", "incast-udp", "--out", str(out)])
    assert result.exit_code == 2
    assert "already exists" in result.output
    assert list(out.iterdir()) == []


def test_bad_scenario_is_one_clear_error_and_no_folder(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[topology]\nkind = "ring"\nswitches = 4\n[run]\nduration = "1"\n')
    out = tmp_path / "never"
    result = runner.invoke(app, ["run", str(bad), "--out", str(out)])
    assert result.exit_code == 2
    assert "run.duration: invalid time '1': missing unit" in result.output
    assert not out.exists()
    result = runner.invoke(app, ["run", "no-such-scenario"])
    assert result.exit_code == 2 and "isthmus list" in result.output


def test_a_failure_while_writing_leaves_no_half_written_folder(tmp_path, monkeypatch):
    def broken(table, path):
        Path(path).write_text("half")
        raise OSError("disk full")

    monkeypatch.setattr(results.pq, "write_table", broken)
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "incast-udp", "--out", str(out)])
    assert result.exit_code != 0
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_installed_command_runs_a_bundled_scenario(tmp_path):
    # The console script beside the interpreter (isthmus, or isthmus.exe on Windows).
    exe = shutil.which("isthmus", path=str(Path(sys.executable).parent))
    assert exe, "the isthmus console script is not installed beside this Python"
    out = tmp_path / "run"
    done = subprocess.run(
        [str(exe), "run", "incast-udp", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (out / "summary.json").exists()


def test_short_help_and_version():
    from typer.testing import CliRunner

    from isthmus.cli import app

    runner = CliRunner()
    assert runner.invoke(app, ["-h"]).exit_code == 0
    assert "Usage" in runner.invoke(app, ["run", "-h"]).output
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("isthmus ")


def test_progress_counts_ended_flows_with_incast_rounds_still_to_come():
    # Later rounds' flows are counted as unfinished before they exist: the bar's count
    # of ended flows must run from 0 to all of them, never below zero.
    from isthmus import Link, Simulation, Topology
    from isthmus.cli import flows_ended

    topo = Topology.leaf_spine(1, 2, 4, Link("10Gbps", "1us"), Link("40Gbps", "1us"))
    sim = Simulation(topo)
    sim.add_incast(0, [4, 5, 6, 7], "100KB", rounds=5)
    assert (flows_ended(sim), sim.expected_flows) == (0, 20)
    seen = []
    for ms in range(1, 40):
        sim.run(f"{ms}ms")
        seen.append(flows_ended(sim))
    assert min(seen) >= 0 and seen == sorted(seen)
    assert seen[-1] == sim.expected_flows == sim.num_flows == 20


def test_a_misspelt_bundled_scenario_gets_a_suggestion():
    result = CliRunner().invoke(app, ["run", "leafspine-udpp"])
    assert result.exit_code != 0
    assert "did you mean 'leafspine-udp'?" in result.output


def test_a_udp_run_reports_its_streams_not_completion_times(tmp_path):
    out = tmp_path / "udp"
    result = CliRunner().invoke(app, ["run", "leafspine-udp", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "datagram streams" in result.output and "slowdown" not in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mean_fct_us"] is None and summary["streams"] == 32
    assert summary["stream_loss"] == 0
    # 32 streams of 6 Gb/s for 20 ms of a 20.01 ms run, 1472 payload bytes in 1500.
    assert abs(summary["stream_goodput_gbps"] - 32 * 6 * 1472 / 1500 * 20 / 20.01) < 2


def test_help_shows_plain_metavars_not_type_labels():
    import re

    from click.testing import CliRunner as ClickRunner

    from isthmus.cli import command

    cli = command()
    runner = ClickRunner()
    for name in ["", *cli.commands]:
        args = [name, "-h"] if name else ["-h"]
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (name, result.output)
        assert not re.search(r"<(str|bool|int|float|path)>", result.output), (name, result.output)
    assert "SEEDS" in runner.invoke(cli, ["reproduce", "-h"]).output


def test_the_scenario_schema_accepts_every_bundled_scenario_and_names_the_fields(tmp_path):
    import tomllib as toml

    import jsonschema

    from isthmus.cli import bundled_scenarios

    out = tmp_path / "scenario.schema.json"
    result = runner.invoke(app, ["schema", "--out", str(out)])
    assert result.exit_code == 0, result.output
    schema = json.loads(out.read_text())
    assert {"topology", "network", "traffic", "control", "run"} <= set(schema["properties"])
    for path in bundled_scenarios().values():
        jsonschema.validate(toml.loads(path.read_text()), schema)
    bad = toml.loads(bundled_scenarios()["leafspine-udp"].read_text())
    bad["run"]["duraton"] = bad["run"].pop("duration")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_show_prints_the_topology_every_setting_and_paths():
    result = runner.invoke(app, ["show", "leafspine-udp", "--paths", "0", "9"])
    assert result.exit_code == 0, result.output
    assert "32 hosts" in result.output and "switch (spine)" in result.output
    assert "40 Gb/s" in result.output and "tcp.min_rto" in result.output
    assert "5.000ms" in result.output  # the inherited minimum RTO, in its unit
    assert "h0 -> leaf0 -> spine0 -> leaf1 -> h9" in result.output
    bad = runner.invoke(app, ["show", "leafspine-udp", "--paths", "0", "99"])
    assert bad.exit_code != 0 and "dst must be a host number" in bad.output


def test_a_run_checks_what_its_scenario_says_a_correct_run_shows(tmp_path):
    result = runner.invoke(app, ["run", "incast-udp", "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert "what a correct run shows" in result.output and "OUTSIDE" not in result.output
    text = (Path(__file__).parent.parent / "python/isthmus/scenarios/incast-udp.toml").read_text()
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(
        text.replace("delivered_fraction = [0.6, 0.66]", "delivered_fraction = [0.9, 1]")
    )
    result = runner.invoke(app, ["run", str(wrong), "--out", str(tmp_path / "b")])
    assert result.exit_code == 0 and "OUTSIDE" in result.output
    wrong.write_text(
        text.replace("delivered_fraction = [0.6, 0.66]", "delivered_fraction = [0.7, 0.6]")
    )
    result = runner.invoke(app, ["run", str(wrong), "--out", str(tmp_path / "c")])
    assert result.exit_code != 0 and "expect.delivered_fraction" in result.output
