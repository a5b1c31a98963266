"""Run folders handed to `report`, `compare` and `query` are read, never trusted: a
damaged or hand-edited one is one line naming the file and what is wrong (exit status 2,
no traceback), and `query` reads the run folders and nothing else."""

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from isthmus.cli import app

runner = CliRunner()

SCENARIO = """
name = "rf"
seed = 1
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 2
[telemetry]
sample_interval = "100us"
[[traffic]]
kind = "incast"
receiver = 0
senders = 3
size = "20KB"
rounds = 2
[run]
duration = "5ms"
"""


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("good")
    (root / "s.toml").write_text(textwrap.dedent(SCENARIO))
    result = runner.invoke(app, ["run", str(root / "s.toml"), "--out", str(root / "run")])
    assert result.exit_code == 0, result.output
    return root / "run"


@pytest.fixture
def run(good_run: Path, tmp_path: Path) -> Path:
    """A copy of a good run, to damage."""
    copy = tmp_path / "runs" / "damaged"
    shutil.copytree(good_run, copy)
    return copy


def edit_summary(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        summary = json.loads((folder / "summary.json").read_text())
        (folder / "summary.json").write_text(json.dumps(change(summary)))

    return damage


def edit_table(table: str, change: Callable[[pa.Table], pa.Table]) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        path = folder / f"{table}.parquet"
        pq.write_table(change(pq.read_table(path)), path)

    return damage


def replace_column(name: str, values: Callable[[int], pa.Array]) -> Callable[[pa.Table], pa.Table]:
    return lambda t: t.set_column(t.schema.get_field_index(name), name, values(len(t)))


def write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(data)


def folder_instead(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        (folder / name).unlink()
        (folder / name).mkdir()

    return damage


def nested(depth: int) -> dict:
    summary: dict = {}
    for _ in range(depth):
        summary = {"k": summary}
    return summary


# damage, what `report` says, and which of compare and query need what it damaged
BOTH = {"compare", "query"}
DAMAGES = {
    "summary is an array": (
        edit_summary(lambda s: [1, 2]),
        "holds an array, not an object of figures",
        BOTH,
    ),
    "slowdown is a string": (
        edit_summary(lambda s: {**s, "slowdown": "x"}),
        "slowdown is a string ('x'), not an object of size classes",
        set(),
    ),
    "a size class is a list": (
        edit_summary(lambda s: {**s, "slowdown": {"all": [1]}}),
        "slowdown.all is an array, not an object",
        set(),
    ),
    "a slowdown is text": (
        edit_summary(lambda s: {**s, "slowdown": {"all": {"mean": "7"}}}),
        "slowdown.all.mean is a string ('7'), not a number",
        {"compare"},
    ),
    "a figure is too large": (
        edit_summary(lambda s: {**s, "slowdown": {"all": {"p99": 10**400}}}),
        "slowdown.all.p99 is a number too large to be a figure",
        BOTH,
    ),
    "summary is not JSON": (write("summary.json", b'{"flows": 3'), "is not JSON", BOTH),
    "summary nests deeply": (
        write("summary.json", b"[" * 100_000 + b"]" * 100_000),
        "nests too deeply",
        BOTH,
    ),
    "summary is binary": (write("summary.json", b"\xff\xfe{}"), "is not UTF-8 text", BOTH),
    "summary is a folder": (folder_instead("summary.json"), "is a folder", BOTH),
    "flows lack fct_ps": (
        edit_table("flows", lambda t: t.drop(["fct_ps"])),
        "flows.parquet' has no column fct_ps",
        set(),
    ),
    "fct_ps is text": (
        edit_table("flows", replace_column("fct_ps", lambda n: pa.array(["a"] * n))),
        "column fct_ps holds string values; it should hold numbers",
        set(),
    ),
    "fct_ps has empty cells": (
        edit_table("flows", replace_column("fct_ps", lambda n: pa.array([None] * n, pa.int64()))),
        "column fct_ps has",
        set(),
    ),
    "ports lack role": (
        edit_table("ports", lambda t: t.drop(["role"])),
        "has no column role",
        set(),
    ),
    "flows are garbage": (
        write("flows.parquet", os.urandom(4096)),
        "flows.parquet' is not a readable Parquet file",
        {"query"},
    ),
    "a port index is huge": (
        edit_table(
            "timeseries",
            replace_column("port_index", lambda n: pa.array([2**64 - 1] * n, pa.uint64())),
        ),
        "port_index runs from 18446744073709551615 to 18446744073709551615, but ports.parquet",
        set(),
    ),
    "a timeseries is not a grid": (
        edit_table("timeseries", lambda t: t.take(list(range(0, len(t), 2)))),
        "rows do not hold each of the",
        set(),
    ),
}


def one_clean_line(result, message: str | None) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: "), result.output
    assert result.output.count("\n") == 1, result.output
    assert "Traceback" not in result.output and len(result.output) < 600, result.output
    if message is not None:
        assert message in result.output, result.output


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_run_folder_is_one_error_from_every_reader(run, good_run, tmp_path, damage):
    change, message, refused_by = DAMAGES[damage]
    change(run)
    report = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "report")])
    one_clean_line(report, message)
    assert not (tmp_path / "report" / "report.html").exists()
    compared = runner.invoke(app, ["compare", str(run), str(good_run)])
    queried = runner.invoke(
        app, ["query", "SELECT count(*) FROM flows, runs", "--runs", str(run.parent)]
    )
    for command, result in (("compare", compared), ("query", queried)):
        # One that reads none of what was damaged works (or still refuses, in one line).
        if command in refused_by or result.exit_code != 0:
            one_clean_line(result, None)


def test_a_figure_compare_needs_as_a_number_is_named_when_it_is_not(run, good_run):
    edit_summary(lambda s: {**s, "mean_fct_us": "12"})(run)
    result = runner.invoke(app, ["compare", str(good_run), str(run)])
    one_clean_line(result, "summary.json': mean_fct_us is a string ('12'), not a number")


@pytest.mark.parametrize("name", ["summary.json", "flows.parquet"])
def test_a_run_file_linking_out_of_its_folder_is_refused_unread(run, tmp_path, name):
    # A run folder handed over by someone else: its files are links to the reader's own.
    secret = tmp_path / "elsewhere" / name
    secret.parent.mkdir()
    (run / name).rename(secret)
    if name == "summary.json":
        summary = json.loads(secret.read_text())
        secret.write_text(json.dumps({**summary, "api_token": "SECRET-abc123"}))
    (run / name).symlink_to(secret)
    readers = [
        ["query", "SELECT * FROM runs, flows", "--runs", str(run.parent)],
        ["report", str(run), "--out", str(tmp_path / "report")],
    ]
    if name == "summary.json":  # all compare reads
        readers.append(["compare", str(run), str(run)])
    for command in readers:
        result = runner.invoke(app, command)
        one_clean_line(result, "is a link to a file outside its run folder")
        assert "SECRET" not in result.output


def test_a_summary_that_links_to_an_endless_device_is_refused_unread(run, tmp_path):
    (run / "summary.json").unlink()
    (run / "summary.json").symlink_to("/dev/zero")
    binary = Path(sys.executable).with_name("isthmus")

    def bounded_memory() -> None:
        # Without the check, reading /dev/zero fills this instead of the machine.
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

    for command in (
        ["report", str(run), "--out", str(tmp_path / "report")],
        ["compare", str(run), str(run)],
        ["query", "SELECT 1", "--runs", str(run)],
    ):
        started = time.monotonic()
        done = subprocess.run(
            [str(binary), *command],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=bounded_memory,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 2, output
        assert output.startswith("error: ") and "is not a regular file" in output, output
        assert "Traceback" not in output
        assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    "sql",
    [
        "COPY (SELECT 1 AS a) TO '{out}/copied.csv'",
        "COPY flows TO '{out}/copied.parquet' (FORMAT parquet)",
        "EXPORT DATABASE '{out}/exported'",
        "ATTACH '{out}/attached.db'",
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM read_blob('{secret}')",
        "SELECT * FROM read_text('{secret}')",
        "SELECT * FROM read_parquet('{out}/*.parquet')",
        "SET enable_external_access = true",
        "INSTALL httpfs",
    ],
)
def test_a_query_reads_the_run_folders_and_nothing_else(good_run, tmp_path, sql):
    out = tmp_path / "elsewhere"
    out.mkdir()
    secret = tmp_path / "secret.csv"
    secret.write_text("name\nTOPSECRET-77c1\n")
    pq.write_table(pa.table({"a": [1]}), out / "other.parquet")
    before = sorted(out.iterdir())
    result = runner.invoke(
        app, ["query", sql.format(out=out, secret=secret), "--runs", str(good_run)]
    )
    refused = "the configuration has been locked" if sql.startswith("SET") else "nothing else"
    one_clean_line(result, refused)
    assert "TOPSECRET" not in result.output
    assert sorted(out.iterdir()) == before


def test_the_runs_own_files_still_answer_queries_once_access_is_off(good_run):
    result = runner.invoke(
        app,
        [
            "query",
            "SELECT f.run, count(*) AS n, max(r.seed) AS seed FROM flows f JOIN runs r "
            "USING (run) GROUP BY f.run",
            "--runs",
            str(good_run),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "run" in result.output and "│ 6 " in result.output


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELEC 1", "syntax error"),
        ("SELECT 'x'::INTEGER", "Could not convert string 'x'"),
        ("SELECT '" + "y" * 100_000 + "'::INTEGER", "Could not convert string 'yyyy"),
        ("   ", "the query is empty"),
        ("SELECT * FROM nowhere", "nowhere"),
    ],
)
def test_a_malformed_query_is_one_short_error(good_run, sql, message):
    result = runner.invoke(app, ["query", sql, "--runs", str(good_run)])
    one_clean_line(result, message)


# ---- the fuzzer ---------------------------------------------------------------------

# A fixed sequence of examples (CI runs the same ones each time); more with the
# environment variable. Each example may write a whole report: a few dozen by default.
FUZZ = settings(
    max_examples=int(os.environ.get("ISTHMUS_FUZZ_EXAMPLES", 30)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.sampled_from([10**400, -1, 0, float("nan"), float("inf")])
    | st.floats()
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
COLUMN_VALUES = st.sampled_from(
    [
        lambda n: pa.array(["x"] * n),
        lambda n: pa.array([None] * n, pa.int64()),
        lambda n: pa.array([-1] * n, pa.int64()),
        lambda n: pa.array([2**62] * n, pa.int64()),
        lambda n: pa.array([2**64 - 1] * n, pa.uint64()),
        lambda n: pa.array([float("nan")] * n),
        lambda n: pa.array([True] * n),
    ]
)


def set_figure(summary: dict, path: list[str], value: object) -> dict:
    node = summary
    for key in path[:-1]:
        node = node[key] if isinstance(node.get(key), dict) else node.setdefault(key, {})
    node[path[-1]] = value
    return summary


@st.composite
def damages(draw) -> Callable[[Path], None]:
    kind = draw(st.sampled_from(["figure", "bytes", "column", "drop"]))
    name = draw(st.sampled_from(["summary.json", "flows.parquet", "ports.parquet",
                                 "timeseries.parquet"]))  # fmt: skip
    if kind == "figure":
        path = draw(
            st.sampled_from(
                [["slowdown"], ["slowdown", "all"], ["slowdown", "all", "mean"],
                 ["slowdown", "gt1MB", "p99"], ["mean_fct_us"], ["flows"], ["timeouts"],
                 ["packets_dropped"], ["wall_s"], ["seed"]]
            )
        )  # fmt: skip
        value = draw(JSON_VALUES)
        return edit_summary(lambda s: set_figure(s, path, value))
    if kind == "bytes":
        cut = draw(st.integers(min_value=0, max_value=5000))
        flip = draw(st.binary(min_size=1, max_size=8))

        def damage(folder: Path) -> None:
            data = bytearray((folder / name).read_bytes()[:cut] or b"?")
            spot = draw(st.integers(min_value=0, max_value=len(data) - 1))
            data[spot : spot + len(flip)] = flip
            (folder / name).write_bytes(bytes(data))

        return damage
    table = name.removesuffix(".parquet") if name != "summary.json" else "flows"
    columns = {"flows": ["fct_ps", "slowdown", "datagram", "size_bytes", "flow_id"],
               "ports": ["role", "rate_bps", "utilization", "node_name"],
               "timeseries": ["time_ps", "port_index", "tx_bytes", "queue_packets"]}  # fmt: skip
    column = draw(st.sampled_from(columns[table]))
    if kind == "drop":
        return edit_table(table, lambda t: t.drop([column]))
    return edit_table(table, replace_column(column, draw(COLUMN_VALUES)))


@FUZZ
@given(damage=damages())
def test_fuzzed_run_folders_give_a_result_or_one_error(good_run, tmp_path_factory, damage):
    run = tmp_path_factory.mktemp("fuzz") / "runs" / "damaged"
    shutil.copytree(good_run, run)
    damage(run)
    out = run.parent.parent / "report"
    for command in (
        ["report", str(run), "--out", str(out)],
        ["compare", str(run), str(good_run)],
        ["query", "SELECT * FROM runs, (SELECT count(*) FROM flows)", "--runs", str(run)],
        ["query", "SELECT max(port_index) FROM timeseries", "--runs", str(run)],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code in (0, 2), (command, result.output, result.exception)
        if result.exit_code == 2:
            one_clean_line(result, None)


def test_a_run_folder_given_as_dot_is_named_by_its_folder(good_run, monkeypatch):
    from isthmus.query import query

    monkeypatch.chdir(good_run)
    names = query("SELECT DISTINCT f.run AS f, r.run AS r FROM flows f, runs r", Path("."))
    assert names.to_pylist() == [{"f": good_run.name, "r": good_run.name}]
