"""SQL over run folders: every view spans all runs, keyed by the run's folder name."""

import textwrap

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from isthmus.cli import app
from isthmus.query import query

runner = CliRunner()

SCENARIO = """
name = "q"
seed = {seed}
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 4
[network]
ecn_threshold = "20pkts"
[[traffic]]
kind = "incast"
receiver = 0
senders = {senders}
size = "20KB"
rounds = {rounds}
[run]
duration = "100ms"
stop_when = "flows_finished"
"""


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name, seed, senders, rounds in (("a", 1, 3, 2), ("b", 2, 5, 4)):
        path = root / f"{name}.toml"
        path.write_text(textwrap.dedent(SCENARIO.format(seed=seed, senders=senders, rounds=rounds)))
        result = runner.invoke(app, ["run", str(path), "--out", str(root / name)])
        assert result.exit_code == 0, result.output
    return root


def test_a_query_over_two_runs_returns_what_they_contain(two_runs):
    counts = query("SELECT run, count(*) AS n FROM flows GROUP BY run ORDER BY run", two_runs)
    assert counts.to_pylist() == [{"run": "a", "n": 6}, {"run": "b", "n": 20}]
    for run in ("a", "b"):
        on_disk = pq.read_table(two_runs / run / "flows.parquet")
        via_sql = query(f"SELECT * EXCLUDE (run) FROM flows WHERE run = '{run}'", two_runs)
        assert via_sql.to_pydict() == on_disk.to_pydict()
    rounds = query(
        "SELECT run, max(round) + 1 AS rounds FROM rounds GROUP BY run ORDER BY run", two_runs
    )
    assert rounds.column("rounds").to_pylist() == [2, 4]
    seeds = query("SELECT run, seed, flows FROM runs ORDER BY run", two_runs).to_pylist()
    assert seeds == [{"run": "a", "seed": 1, "flows": 6}, {"run": "b", "seed": 2, "flows": 20}]
    one = query("SELECT count(*) AS n FROM ports", two_runs / "a")
    assert one.column("n")[0].as_py() == len(pq.read_table(two_runs / "a" / "ports.parquet"))


def test_the_query_command_prints_and_writes_csv(two_runs, tmp_path):
    out = tmp_path / "r.csv"
    sql = "SELECT run, slowdown_all_p99 FROM runs ORDER BY run"
    result = runner.invoke(app, ["query", sql, "--runs", str(two_runs), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 rows" in result.output
    assert out.read_text().splitlines()[0] == '"run","slowdown_all_p99"'


def test_bad_queries_and_missing_runs_are_one_clear_error(two_runs, tmp_path):
    result = runner.invoke(app, ["query", "SELECT nope FROM flows", "--runs", str(two_runs)])
    assert result.exit_code != 0 and "nope" in result.output and "views here" in result.output
    result = runner.invoke(app, ["query", "SELECT 1", "--runs", str(tmp_path / "none")])
    assert result.exit_code != 0 and "does not exist" in result.output
    # Only the views a user can query are named: no helper tables, no DuckDB catalog.
    result = runner.invoke(app, ["query", "SELECT * FROM nothere", "--runs", str(two_runs)])
    assert result.exit_code != 0 and "runs_table" not in result.output
    assert "pg_" not in result.output and "runs" in result.output
