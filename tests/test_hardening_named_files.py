"""Files a scenario names (a size distribution, a link trace, a flow list) are read only
from the scenario's folder or a folder the user allowed, bundled files only by their bare
name, and an error never shows what a file outside those folders holds."""

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_texts import HEAD, RUN, UDP
from typer.testing import CliRunner

from isthmus.cli import app
from isthmus.link_traces import load_trace
from isthmus.workload import _data, read_flow_list, size_distribution

SECRET = "TOPSECRET-4f2a9"


def sizes(name: str) -> str:
    return (
        f'[[traffic]]\nkind = "poisson_flows"\nsizes = "{name}"\nload = 0.5\nstop = "1ms"\n' + RUN
    )


def trace(name: str) -> str:
    return f'[[network.link_traces]]\nfrom = "leaf0"\nto = "h0"\ntrace = "{name}"\n' + UDP + RUN


def flow_list(name: str) -> str:
    return f'[[traffic]]\nkind = "flow_list"\nfile = "{name}"\n' + RUN


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    """A folder beside the scenario's whose files each hold the secret line: as a CDF
    without and with an extension, a gzip trace, a CSV row."""
    folder = tmp_path / "private"
    folder.mkdir()
    for name in ("secret", "secret.txt", "secret.csv"):
        (folder / name).write_text(f"{SECRET} one\n{SECRET} two\n")
    (folder / "secret.gz").write_bytes(gzip.compress(f"{SECRET}\n".encode()))
    (folder / "rows.csv").write_text(f"flow_id,src_host\n{SECRET},1,2\n")
    (tmp_path / "scenario").mkdir()
    return folder


def run(tmp_path: Path, body: str, *extra: str):
    scenario = tmp_path / "scenario" / "s.toml"
    scenario.write_text(HEAD + body)
    out = tmp_path / "out"
    return CliRunner().invoke(app, ["run", str(scenario), "--out", str(out), *extra])


def climbing(bundled: str, target: Path) -> str:
    """`target` named as a bundled data folder's neighbour: `../<folder>/../../...`."""
    return f"../{bundled}/" + os.path.relpath(target, _data(bundled))


@pytest.mark.parametrize(
    ("field", "name"),
    [
        # The lookup appends .txt (sizes) or .gz (traces) to a bundled name.
        (sizes, lambda s: climbing("flow_cdfs", s / "secret")),
        (sizes, lambda s: str(s / "secret.txt")),
        (sizes, lambda s: "../private/secret.txt"),
        (trace, lambda s: os.path.relpath(s / "secret", _data("link_traces"))),
        (trace, lambda s: str(s / "secret")),
        (trace, lambda s: "../private/secret.gz"),
        (flow_list, lambda s: climbing("bench", s / "rows.csv")),
        (flow_list, lambda s: str(s / "rows.csv")),
        (flow_list, lambda s: "../private/secret.csv"),
    ],
)
def test_a_file_outside_the_scenario_folder_is_refused_unread(tmp_path, secrets, field, name):
    result = run(tmp_path, field(name(secrets)))
    assert result.exit_code == 2, result.output
    assert "lies outside the scenario's folder" in result.output
    assert "--allow-path" in result.output
    assert SECRET not in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_show_confines_a_custom_topology_s_file_as_run_does(tmp_path, secrets):
    (secrets / "net.toml").write_text(f'hosts = ["{SECRET}"]\n')
    scenario = tmp_path / "scenario" / "s.toml"
    custom = '[topology]\nkind = "custom"\nfile = "../private/net.toml"\n'
    scenario.write_text('name = "fz"\nseed = 1\n' + custom + UDP + RUN)
    for command in (["show", str(scenario)], ["run", str(scenario), "--out", str(tmp_path / "o")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "lies outside the scenario's folder" in result.output
        assert SECRET not in result.output
    allowed = CliRunner().invoke(app, ["show", str(scenario), "--allow-path", str(secrets)])
    assert "lies outside" not in allowed.output and "switches" in allowed.output


def test_an_allowed_folder_is_read_and_its_bad_line_quoted_briefly(tmp_path, secrets):
    (secrets / "long.txt").write_text("x" * 200_000 + "\n")
    result = run(tmp_path, sizes("../private/long.txt"), "--allow-path", str(secrets))
    assert result.exit_code == 2, result.output
    assert "line 1: expected 'size probability', got 'xxxx" in result.output
    # The 200,000-character line is cut to a short excerpt.
    assert len(result.output) < 600, len(result.output)
    shown = run(tmp_path, sizes("../private/secret.txt"), "--allow-path", str(secrets))
    assert shown.exit_code == 2 and SECRET in shown.output


def test_outside_any_confinement_an_error_names_the_line_not_its_content(secrets):
    with pytest.raises(ValueError, match="line 1: expected 'size probability'") as cdf:
        size_distribution(str(secrets / "secret.txt"))
    with pytest.raises(ValueError, match="line 1: the entry is not a whole number") as millis:
        load_trace(str(secrets / "secret.gz"))
    with pytest.raises(ValueError, match="CSV parse error: Expected 2 columns, got 3") as rows:
        read_flow_list(secrets / "rows.csv", 4)
    for error in (cdf, millis, rows):
        assert SECRET not in str(error.value)


def test_bundled_files_are_found_by_bare_name_and_a_wrong_name_lists_them(tmp_path):
    assert size_distribution("websearch").mean_bytes > 1
    assert len(load_trace("Verizon-LTE-short.down")) > 1
    with pytest.raises(ValueError, match="no flow-size distribution 'websearh': not a bundled"):
        size_distribution("websearh", tmp_path)
    # A folder in the name makes it the user's file, never a bundled one.
    with pytest.raises(ValueError, match="does not exist"):
        size_distribution("./websearch_dctcp__hpcc", tmp_path)


def test_damaged_trace_and_flow_list_files_are_one_clear_error(tmp_path, secrets):
    folder = tmp_path / "scenario"
    (folder / "cut.gz").write_bytes(gzip.compress(b"1\n2\n3\n" * 1000)[:40])
    (folder / "not.gz").write_text("1\n2\n")
    (folder / "sub").mkdir()
    (folder / "twice.csv").write_text(
        "flow_id,src_host,dst_host,src_host,size_bytes,start_ps\n0,0,2,0,1000,0\n"
    )
    (folder / "wide.csv").write_text(
        "flow_id,src_host,dst_host,size_bytes,start_ps\n" + "0," * 50_000 + "0\n"
    )
    for body, message in (
        (trace("cut.gz"), "is not a complete gzip file"),
        (trace("not.gz"), "is not a complete gzip file"),
        (flow_list("twice.csv"), "column(s) 'src_host' appear more than once"),
        (flow_list("wide.csv"), "Expected 5 columns, got 50001: '0,0,0"),
        (sizes("x" * 300), "no flow-size distribution 'xxx"),
        (sizes("sub/" + "x" * 300), "cannot be read: File name too long"),
    ):
        result = run(tmp_path, body)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error: ") and message in result.output, result.output
        # Whatever the file or name, the message stays a line or so (the bundled names
        # listed are the longest part).
        assert len(result.output) < 1200 and "Traceback" not in result.output


def test_a_long_name_or_value_is_quoted_cut_short(tmp_path):
    from isthmus import Topology
    from isthmus.flows import Poisson, generate_flows

    long = "z" * 200_000
    with pytest.raises(ValueError, match="pattern 'zzz") as pattern:
        generate_flows(
            Topology.leaf_spine(1, 2, 2), pattern=long, arrivals=Poisson(load=0.5), stop="1ms"
        )
    with pytest.raises(ValueError, match="no link trace 'zzz") as bare:
        load_trace(long, tmp_path)
    with pytest.raises(ValueError, match="File name too long|does not exist") as path_like:
        size_distribution("d/" * 50_000, tmp_path)
    for error in (pattern, bare, path_like):
        assert len(str(error.value)) < 1000, len(str(error.value))


# ---- the fuzzer ---------------------------------------------------------------------

# A fixed sequence of examples (CI runs the same ones each time); more with the
# environment variable.
FUZZ = settings(
    max_examples=int(os.environ.get("ISTHMUS_FUZZ_EXAMPLES", 200)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)

# Pieces of names a hostile or careless scenario might use: climbs, the bundled folders'
# names, the secret files' names, bundled names, odd characters.
PIECES = st.sampled_from(
    ["..", ".", "", "flow_cdfs", "link_traces", "bench", "data", "isthmus", "private",
     "scenario", "secret", "secret.txt", "secret.gz", "secret.csv", "rows.csv", "websearch",
     "Verizon-LTE-short.down", "leafspine-websearch-small.flows.csv", "~", "\\\\", "a b"]
)  # fmt: skip


@FUZZ
@given(
    field=st.sampled_from([sizes, trace, flow_list]),
    start=st.sampled_from(["", "/", "private", "data"]),
    pieces=st.lists(PIECES, min_size=1, max_size=8),
)
def test_fuzzed_file_names_never_show_a_file_outside_the_folder(
    tmp_path, secrets, field, start, pieces
):
    from isthmus.scenario import ScenarioError, parse_scenario

    roots = {"/": "/", "private": str(secrets) + "/", "data": str(_data("flow_cdfs").parent) + "/"}
    name = roots.get(start, "") + "/".join(pieces)
    try:
        parse_scenario(HEAD + field(name)).build(base=tmp_path / "scenario")
    except ScenarioError as e:
        assert SECRET not in str(e)
        assert len(str(e)) < 2000
