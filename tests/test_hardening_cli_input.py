"""Bad command-line input: one line naming the option and what to do, exit status 2,
never a traceback; outputs refused before the work starts, not after it; sweep grids
and seed counts bounded; `isthmus list` showing whole sentences. The fuzz test at the
end draws command lines from a vocabulary of hostile values."""

from __future__ import annotations

import gzip
import re
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from isthmus.cli import app, bundled_scenarios, first_sentence
from isthmus.results import MAX_RUN_NAME_BYTES
from isthmus.scenario import load_scenario
from isthmus.sweep import MAX_POINTS, plan

runner = CliRunner()

SCENARIO = textwrap.dedent(
    """
    name = "sw"
    description = "A small fabric under light Poisson load."
    seed = 7
    [topology]
    kind = "leaf_spine"
    spines = 1
    leaves = 2
    hosts_per_leaf = 4
    [[traffic]]
    kind = "poisson_flows"
    load = 0.2
    stop = "2ms"
    [run]
    duration = "100ms"
    stop_when = "flows_finished"
    """
)

# 65,538 hosts on a leaf: more ports than a node may have.
HUGE_LEAF = textwrap.dedent(
    """
    name = "big"
    [topology]
    kind = "leaf_spine"
    spines = 1
    leaves = 2
    hosts_per_leaf = 65538
    [run]
    duration = "1ms"
    """
)

LONG_NAME = "a" * 300


def _one_error_line(result, *fragments: str) -> str:
    """The command failed with exit status 2 and one line, `error: ...`, holding each
    fragment; returns the line."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def places(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    return tmp_path, folder, afile, scenario


@pytest.mark.parametrize(
    "command, where, message",
    [
        (["schema", "--out"], "folder", "is a folder; give the path of a file"),
        (["schema", "--out"], "file/x", "a file on its path is used as a folder"),
        (["schema", "--out"], "nowhere/x.json", "does not exist; create it first"),
        (["schema", "--out"], LONG_NAME, "a name on it is too long"),
        (["schema", "--out"], "/dev/full", "could not write --out '/dev/full'"),
        (["bench", "small", "--json"], "folder", "--json"),
        (["reproduce", "ofpt", "--quick", "--json"], "folder", "is a folder"),
        (["reproduce", "ofpt", "--quick", "--figures"], "file", "is a file, not a folder"),
        (["query", "SELECT 1", "--csv"], "folder", "--csv"),
        (["report", "nowhere", "--out"], "file", "is a file, not a folder"),
        (["run", "incast-udp", "--out"], "file/x", "a file on its path is used as a folder"),
        (["run", "incast-udp", "--out"], "folder", "already exists; choose another --out"),
        (["run", "incast-udp", "--out"], LONG_NAME, "a name on it is too long"),
        (["run", "incast-udp", "--out"], "a" * 250, f"at most {MAX_RUN_NAME_BYTES} bytes"),
        (["sweep", "SCENARIO", "--out"], "file", "is a file, not a folder"),
        (["forecast-bench", "--quick", "--json"], "folder", "--json"),
    ],
)
def test_every_output_is_checked_before_the_work_starts(places, command, where, message):
    # bench, reproduce, run and forecast-bench would each run for a while before writing:
    # the refusal comes first, and alone.
    tmp, folder, afile, scenario = places
    targets = {"folder": folder, "file": afile, "file/x": afile / "x"}
    target = str(targets.get(where, where if where.startswith("/") else tmp / where))
    args = [str(scenario) if a == "SCENARIO" else a for a in command]
    _one_error_line(runner.invoke(app, [*args, target]), message)


def test_a_failed_write_of_an_output_is_one_line(tmp_path):
    run = tmp_path / "run"
    assert runner.invoke(app, ["run", "incast-udp", "--out", str(run)]).exit_code == 0
    result = runner.invoke(
        app, ["query", "SELECT 1 AS x", "--runs", str(run), "--csv", "/dev/full"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].startswith("error: ")
    assert "No space left on device" in result.output


def test_names_too_long_for_a_path_are_no_such_scenario():
    for command in ("run", "show", "sweep"):
        line = _one_error_line(runner.invoke(app, [command, LONG_NAME]), "no scenario file")
        assert "a" * 201 not in line and "'..." in line  # the name is quoted cut short


def test_show_refuses_a_topology_as_run_does(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text(HUGE_LEAF)
    for command in ("show", "run"):
        _one_error_line(runner.invoke(app, [command, str(big)]), "65539 ports")


@pytest.mark.parametrize(
    "sets, seeds, message",
    [
        (["load=NaN:1:0.1"], 1, "needs numbers from -10^20 to 10^20"),
        (["load=0:Infinity:1"], 1, "needs numbers from -10^20 to 10^20"),
        (["load=1:1e30:1"], 1, "needs numbers from -10^20 to 10^20"),
        (["load=0.1:0.2:1e-30"], 1, f"has more than {MAX_POINTS} values"),
        (["load=0.1:0.2:1e-999999999"], 1, f"has more than {MAX_POINTS} values"),
        (["load=1:1:0"], 1, "step > 0"),
        (["load=a:b:c"], 1, "must be start:stop:step numbers"),
        (["load=" + ",".join(map(str, range(MAX_POINTS + 1)))], 1, f"{MAX_POINTS + 1} values"),
        (["load=0.1:0.9:0.1", "stop=1ms,2ms"], 2000, "the sweep would run 36,000 points"),
        (["load=0.1:0.9:0.1"], MAX_POINTS, "the sweep would run 90,000 points"),
        ([], 10**12, f"--seeds must be 1 to {MAX_POINTS}"),
        ([], 0, f"--seeds must be 1 to {MAX_POINTS}"),
        (["seed=abc"], 1, "'abc' is not a seed"),
        (["seed=-1"], 1, "'-1' is not a seed"),
        ([f"seed={2**64}"], 1, "is not a seed"),
        (["seed=1e400"], 1, "is not a seed"),
        (["seed=1,1"], 1, "gives the point 'seed1' twice"),
        (["load=0.1", "traffic.0.load=0.2"], 1, "is given twice"),
        (["traffic.99999999999999999999999.load=1"], 1, "has no '99999999999999999999999'"),
        (["seed.x=1"], 1, "that path names no field"),
        (["traffic.5=1"], 1, "that path names no field"),
        (["description=" + "d" * 300], 1, f"longer than {MAX_RUN_NAME_BYTES} bytes"),
    ],
)
def test_sweep_grids_are_bounded_and_malformed_ones_refused(sets, seeds, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        plan(SCENARIO, sets, seeds)


def test_a_sweep_grid_over_the_limit_is_refused_before_it_is_built(monkeypatch):
    # 10^4 x 10^4 points: refused from the axes' sizes alone, never built.
    import isthmus.sweep as sweep

    monkeypatch.setattr(sweep, "parse_scenario", lambda text: pytest.fail("built a point"))
    with pytest.raises(ValueError, match="would run 100,000,000 points"):
        plan(SCENARIO, ["load=1:10000:1", "stop=1:10000:1"], 1)


def test_counts_of_seeds_and_workers_are_bounded(places):
    _, _, _, scenario = places
    result = runner.invoke(app, ["reproduce", "ofpt", "--seeds", str(10**14)])
    _one_error_line(result, "--seeds must be 1 to 1000")
    result = runner.invoke(app, ["sweep", str(scenario), "--workers", str(10**6)])
    _one_error_line(result, "--workers must be 0 (one per core) to")
    result = runner.invoke(app, ["sweep", str(scenario), "--workers", "-1"])
    _one_error_line(result, "--workers must be 0 (one per core) to")


def test_series_files_that_are_not_readable_csv_are_one_error(tmp_path):
    huge_field = tmp_path / "huge.csv"
    huge_field.write_text("a,b\n1," + "x" * 200_000 + "\n")
    packed = tmp_path / "packed.csv.gz"
    packed.write_bytes(gzip.compress(b"a,b\n" + b"1,2\n" * 100))
    not_gzip = tmp_path / "plain.gz"
    not_gzip.write_bytes(b"\x1f\x8b\x08garbage\xff\xfe")
    for series, message in [
        (huge_field, "is not a CSV file this can read: field larger than field limit"),
        (packed, "is not UTF-8 text (byte 1 is not)"),
        (not_gzip, "is not UTF-8 text"),
    ]:
        args = ["forecast-bench", "--series", str(series), "--column", "a", "--quick"]
        _one_error_line(runner.invoke(app, args), f"--series '{series}'", message)


def test_list_shows_each_description_to_the_end_of_its_first_sentence(monkeypatch):
    sentence_end = re.compile(r"[.!?]$")
    for name, path in bundled_scenarios().items():
        description = " ".join(load_scenario(path).description.split())
        shown = first_sentence(load_scenario(path).description)
        assert description.startswith(shown), name
        assert sentence_end.search(shown), (name, shown)
        assert not re.search(r"(et al|Fig|e\.g|i\.e)\.$", shown), (name, shown)
    fig17 = first_sentence(load_scenario(bundled_scenarios()["dctcp-fig17"]).description)
    assert fig17.endswith("Fig. 17), configured as ns-3's examples/tcp/dctcp-example does.")
    # The table shows it whole (a wide terminal: no wrapping to undo).
    monkeypatch.setenv("COLUMNS", "400")
    assert fig17 in runner.invoke(app, ["list"]).output


def test_first_sentence_ends_at_a_full_stop_before_a_capital_not_at_an_abbreviation():
    assert first_sentence("One (Bel et al., CF '21). Two.") == "One (Bel et al., CF '21)."
    assert first_sentence("See Fig. 4 and e.g. Fig. B here. Next") == (
        "See Fig. 4 and e.g. Fig. B here."
    )
    assert first_sentence("Line one\ncontinues. Then\n\nA new paragraph.") == (
        "Line one continues."
    )
    assert first_sentence("No full stop at all\n\nlater.") == "No full stop at all"


# ---- the fuzzer ---------------------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    """Files and folders the fuzzer's command lines name (made once for the module)."""

    root: Path
    scenario: Path
    scenarios: tuple[str, ...]
    series: tuple[str, ...]
    bad_files: tuple[str, ...]  # outputs refused as files before any work
    bad_folders: tuple[str, ...]  # outputs refused as folders before any work

    def fresh(self, suffix: str = "") -> str:
        """A path that does not exist yet, in a folder that does."""
        return str(self.root / "fresh" / f"{uuid.uuid4().hex}{suffix}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Hostile:
    root = tmp_path_factory.mktemp("hostile")
    (root / "fresh").mkdir()
    folder = root / "folder"
    folder.mkdir()
    afile = root / "file.txt"
    afile.write_text("not a scenario\n")
    scenario = root / "s.toml"
    scenario.write_text(SCENARIO)
    big = root / "big.toml"
    big.write_text(HUGE_LEAF)
    nested = root / "nested.toml"
    nested.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    junk = root / "junk.toml"
    junk.write_bytes(bytes(range(256)) * 4)
    huge_field = root / "huge.csv"
    huge_field.write_text("a,b\n1," + "x" * 200_000 + "\n")
    packed = root / "packed.csv.gz"
    packed.write_bytes(gzip.compress(b"a,b\n" + b"1,2\n" * 50))
    tiny = root / "tiny.csv"
    tiny.write_text("a,b\n1,2\n")
    missing = str(root / "missing" / "x")
    return Hostile(
        root=root,
        scenario=scenario,
        scenarios=(
            "no-such-scenario",
            LONG_NAME,
            "../" * 40,
            str(folder),
            str(afile),
            "/dev/null",
            str(big),
            str(nested),
            str(junk),
            missing,
        ),
        series=(str(huge_field), str(packed), str(tiny), str(folder), "/dev/null", missing),
        bad_files=(str(folder), str(afile / "x"), missing, str(root / LONG_NAME), ""),
        bad_folders=(str(afile), str(afile / "x"), str(root / LONG_NAME), "/dev/null"),
    )


NUMBERS = st.sampled_from(
    ["-1", "0", "1001", "10001", str(2**64), str(10**30), "9" * 200, "nan", "1e400", "", "x"]
)
RANGES = st.sampled_from(
    [
        "load=NaN:1:1",
        "load=1:1e30:1",
        "load=0:1:1e-30",
        "load=0:1:1e-999999999",
        "load=1:0:1",
        "load=::",
        "load=1:2",
        "load=" + ",".join(["0.1"] * 3),
        "load=" + "9" * 5000,
        "seed=abc",
        "seed=1e400",
        "seed=-5",
        "seed=1:100000:1",
        "traffic.99999999999999999999.load=1",
        "traffic." + "9" * 5000 + ".load=1",
        "seed.x=1",
        "nosuchfield=1",
        "=1",
        "load",
        "name=" + "n" * 300,
    ]
)


@st.composite
def command_lines(draw, places: Hostile) -> list[str]:
    """A command line that fails validation, or does only quick work (show, schema):
    nothing here may start a simulation."""
    command = draw(st.sampled_from(["run", "show", "sweep", "reproduce", "forecast", "schema"]))
    pick = st.sampled_from
    if command == "run":
        scenario = draw(pick(["incast-udp", *places.scenarios]))
        # A scenario that would run gets an output it may not write.
        outs = places.bad_folders if scenario == "incast-udp" else (places.fresh(),)
        args = ["run", scenario, "--out", draw(pick(outs))]
        if draw(st.booleans()):
            args += ["--seed", draw(NUMBERS)]
        return args
    if command == "show":
        args = ["show", draw(pick(["incast-udp", *places.scenarios]))]
        if draw(st.booleans()):
            args += ["--paths", draw(NUMBERS), draw(NUMBERS)]
        return args
    if command == "sweep":
        args = ["sweep", str(places.scenario)]
        for expr in draw(st.lists(RANGES, min_size=1, max_size=3)):
            args += ["--set", expr]
        if draw(st.booleans()):
            args += ["--seeds", draw(NUMBERS)]
        if draw(st.booleans()):
            args += ["--workers", draw(NUMBERS)]
        return [*args, "--out", draw(pick([places.fresh(), *places.bad_folders]))]
    if command == "reproduce":
        study = draw(pick(["ofpt", "no-such-study", LONG_NAME]))
        args = ["reproduce", study, "--quick", "--seeds", draw(pick(["0", "-1", "1001", "9" * 40]))]
        if draw(st.booleans()):
            args += ["--json", draw(pick([places.fresh(".json"), *places.bad_files]))]
        if draw(st.booleans()):
            args += ["--figures", draw(pick([places.fresh(), *places.bad_folders]))]
        return args
    if command == "forecast":
        column = draw(pick(["a", "b", "7", "9" * 30, "x" * 300]))
        args = ["forecast-bench", "--series", draw(pick(places.series)), "--column", column]
        args += ["--quick", "--models", "ewma"]
        if draw(st.booleans()):
            args += ["--json", draw(pick([places.fresh(".json"), *places.bad_files]))]
        return args
    out = draw(pick([places.fresh(".json"), "/dev/full", *places.bad_files]))
    return ["schema", "--out", out]


FUZZ = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(data=st.data())
def test_fuzzed_command_lines_end_cleanly(hostile, data):
    args = data.draw(command_lines(hostile), label="args")
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    assert result.exit_code in (0, 2), (args, result.output)
    assert "Traceback" not in result.output, (args, result.output)
    if result.exit_code == 2 and "Usage:" not in result.output:
        # Our own refusal: one line naming what is wrong, not a page.
        assert result.output.strip().splitlines()[-1].startswith("error: "), result.output
        assert len(result.output) < 2000, (args, result.output)
