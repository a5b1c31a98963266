"""Bad input gets one clear error naming the field, never a traceback, panic or hang.

The named cases below are ones found by fuzzing; the Hypothesis test at the end keeps
fuzzing (a few hundred examples in CI; set ISTHMUS_FUZZ_EXAMPLES for more)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_texts import SMALL_UDP
from typer.testing import CliRunner

from isthmus import Link, Simulation, Topology
from isthmus.cli import app
from isthmus.results import MACHINE, remove_stale_partials
from isthmus.scenario import MAX_PROBLEM_LINES, ScenarioError, parse_scenario

BASE = SMALL_UDP


def run_cli(tmp_path: Path, text: str | bytes, *extra: str):
    scenario = tmp_path / "s.toml"
    if isinstance(text, bytes):
        scenario.write_bytes(text)
    else:
        scenario.write_text(text)
    return CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "out"), *extra])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("leaves = 2", "leaves = 9223372036854775807"),
            "topology.leaves: Input should be less than 4294967296",
        ),
        (
            ("seed = 1", "seed = 99999999999999999999999"),
            "seed: Input should be less than 18446744073709551616",
        ),
        (("seed = 1", "seed = true"), "seed: Input should be a valid integer"),
        (("spines = 2", 'spines = "1"'), "topology.spines: Input should be a valid integer"),
        (("leaves = 2", "leaves = 2.0"), "topology.leaves: Input should be a valid integer"),
        (("hosts_per_leaf = 2", "hosts_per_leaf = 70000"), "ports; a node has at most 65534"),
        (
            (
                'kind = "leaf_spine"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2',
                'kind = "fat_tree"\nk = 1000',
            ),
            "the engine builds at most 1000000 nodes",
        ),
        (('rate = "1Gbps"', 'rate = "[/x]"'), "traffic.0.rate: invalid rate '[/x]'"),
        (('rate = "1Gbps"', 'rate = ":x:"'), "invalid rate ':x:'"),
        (('name = "fz"', 'name = "../../etc/x"'), "name: '../../etc/x' cannot name a run"),
        (('name = "fz"', 'name = "a\\u0000b"'), "cannot name a run"),
        (('name = "fz"', f'name = "{"n" * 5000}"'), "cannot name a run"),
        (('size = "10KB"', 'size = "0B"'), "size must be at least 1 byte"),
        (('size = "10KB"', 'size = "99999999999999999999999B"'), "value too large"),
        (
            ('size = "10KB"', 'size = "10KB"\npacket_size = "70000B"'),
            "larger than an IP packet can be",
        ),
        (
            ("[run]", '[telemetry]\nsample_interval = "1ps"\n[run]'),
            "choose a longer sample_interval",
        ),
        (('pattern = "permutation"', 'pattern = "all_to_all"'), None),
        (("hosts_per_leaf = 2", "hosts_per_leaf = 200"), None),
    ],
)
def test_a_bad_scenario_value_is_one_error_with_exit_code_2(tmp_path, change, message):
    old, new = change
    assert old in BASE
    result = run_cli(tmp_path, BASE.replace(old, new))
    if message is None:  # a valid change: it runs
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " "), result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_all_to_all_over_a_huge_network_is_refused_before_it_starts(tmp_path):
    text = BASE.replace('pattern = "permutation"', 'pattern = "all_to_all"').replace(
        "hosts_per_leaf = 2", "hosts_per_leaf = 1000"
    )
    result = run_cli(tmp_path, text)
    assert result.exit_code == 2 and "all_to_all over 2000 hosts makes 3998000" in result.output


def test_files_and_bytes_that_are_not_scenarios(tmp_path):
    bad_utf8 = run_cli(tmp_path, b"\xff\xfe" + BASE.encode())
    assert bad_utf8.exit_code == 2 and "is not UTF-8 text (byte 0 is 0xff)" in bad_utf8.output
    deep = run_cli(tmp_path, "a = " + "[" * 1000 + "]" * 1000)
    assert deep.exit_code == 2 and "nest too deeply" in deep.output
    folder = CliRunner().invoke(app, ["run", str(tmp_path)])
    assert folder.exit_code == 2 and "is a folder; name a file" in folder.output
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    refused = CliRunner().invoke(app, ["run", str(fifo)])
    assert refused.exit_code == 2 and "not a regular file" in refused.output


def test_scenario_files_stay_in_their_folder_unless_allowed(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "flows.csv").write_text(
        "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,2,1000,0\n"
    )
    inside = tmp_path / "scenarios"
    inside.mkdir()
    text = BASE.split("[[traffic]]")[0] + (
        '[[traffic]]\nkind = "flow_list"\nfile = "../elsewhere/flows.csv"\n'
        '[run]\nduration = "1ms"\n'
    )
    (inside / "s.toml").write_text(text)
    refused = CliRunner().invoke(app, ["run", str(inside / "s.toml"), "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2
    assert "lies outside the scenario's folder" in refused.output
    assert "--allow-path" in refused.output
    allowed = CliRunner().invoke(
        app,
        ["run", str(inside / "s.toml"), "--out", str(tmp_path / "b"), "--allow-path", str(outside)],
    )
    assert allowed.exit_code == 0, allowed.output
    secret = text.replace("../elsewhere/flows.csv", "/etc/passwd")
    (inside / "s.toml").write_text(secret)
    leaked = CliRunner().invoke(app, ["run", str(inside / "s.toml"), "--out", str(tmp_path / "c")])
    assert leaked.exit_code == 2 and "root:" not in leaked.output


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("0,0,2,1.5,0", "row 1: size_bytes 1.5 is not a whole number"),
        ("0,0,2,,0", "row 1: size_bytes is empty"),
        ("0,0,2,nan,0", "row 1: size_bytes"),
        ("0,0,2,1000,-5", "row 1: start_ps is negative"),
        ("0,0,9,1000,0", "row 1: dst_host 9 does not exist"),
        ("0,0,2,1e30,0", "row 1: size_bytes is too large"),
    ],
)
def test_flow_list_cells_are_checked_by_row(tmp_path, rows, message):
    (tmp_path / "flows.csv").write_text(f"flow_id,src_host,dst_host,size_bytes,start_ps\n{rows}\n")
    text = BASE.split("[[traffic]]")[0] + (
        '[[traffic]]\nkind = "flow_list"\nfile = "flows.csv"\n[run]\nduration = "1ms"\n'
    )
    result = run_cli(tmp_path, text)
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ("1\n-3\n", "line 2: '-3' is not a whole number of milliseconds"),
        ("1\n\u0663\n", "line 2: '\u0663' is not a whole number"),
        ("1\n99999999999999999999\n", "is not a whole number"),
        ("5\n3\n", "line 2: times must not decrease"),
        ("", "has no delivery opportunities"),
    ],
)
def test_link_trace_lines_are_checked(tmp_path, trace, message):
    (tmp_path / "t.trace").write_text(trace)
    text = BASE.replace(
        "[[traffic]]",
        '[[network.link_traces]]\nfrom = "leaf0"\nto = "h0"\ntrace = "t.trace"\n[[traffic]]',
    )
    result = run_cli(tmp_path, text)
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")


def test_a_size_distribution_with_zero_mean_is_refused(tmp_path):
    (tmp_path / "zero.cdf").write_text("0 0\n0 1\n")
    text = BASE.split("[[traffic]]")[0] + (
        '[[traffic]]\nkind = "poisson_flows"\nsizes = "zero.cdf"\nload = 0.5\nstop = "1ms"\n'
        '[run]\nduration = "1ms"\n'
    )
    result = run_cli(tmp_path, text)
    assert result.exit_code == 2, result.output
    assert "mean" in result.output


def test_api_misuse_is_refused_not_reinterpreted():
    sim = Simulation(Topology.leaf_spine(2, 2, 2))
    with pytest.raises(ValueError, match="src host -1 does not exist"):
        sim.add_tcp_flow(-1, 2, "1MB")
    with pytest.raises(ValueError, match=r"src must be a host number \(an integer\), got 1.0"):
        sim.add_udp_flow(1.0, 2, "1Gbps", size="1KB")
    with pytest.raises(ValueError, match="src must be a host number"):
        sim.add_udp_flow(True, 2, "1Gbps", size="1KB")
    with pytest.raises(ValueError, match=r"size\[0\] = 1.5 is not a whole number"):
        sim.add_tcp_flows(np.array([0]), np.array([2]), np.array([1.5]), np.array([0]))
    with pytest.raises(ValueError, match=r"dst\[1\] = -2 must be a host number"):
        sim.add_tcp_flows(np.array([0, 1]), np.array([2, -2]), np.array([10, 10]), np.array([0, 0]))
    with pytest.raises(ValueError, match="size must be at least 1 byte"):
        sim.add_udp_flow(0, 2, "1Gbps", size=0)
    with pytest.raises(ValueError, match="Link delay 10 has no unit"):
        Link("1Gbps", 10)
    with pytest.raises(ValueError, match="a node is a name or a node number"):
        sim.node_index(True)
    with pytest.raises(ValueError, match="too large"):
        sim.add_udp_flow(0, 2, 2**70, size="1KB")
    with pytest.raises(ValueError, match="seed must be an integer"):
        Simulation(Topology.leaf_spine(2, 2, 2), seed=True)


def test_only_complete_datagram_flows_get_a_finish_time():
    sim = Simulation(Topology.leaf_spine(1, 2, 2), switch_queue="5pkts")
    sim.add_udp_flow(0, 2, "10Gbps", size="1MB", arrivals="constant")
    sim.add_udp_flow(1, 2, "10Gbps", size="1MB", arrivals="constant")
    sim.add_udp_flow(0, 2, "10Gbps", size="1MB", arrivals="constant", start="5ms")
    sim.run("20ms", stop_when_flows_finish=True)
    flows = sim.flows()
    # Two 10 Gb/s sources into one 10 Gb/s host at once: both lose some ...
    assert np.all(flows["packets_dropped"][:2] > 0) and np.all(flows["finish_ps"][:2] == -1)
    # ... the third, alone later, arrives whole and finishes.
    assert flows["packets_dropped"][2] == 0 and flows["finish_ps"][2] > 0
    assert sim.unfinished_flows == 0  # the run still ended


def test_stale_partial_folders_of_dead_writers_are_removed(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp_path / f".run.partial-{int(dead.stdout)}"
    stale.mkdir()
    (stale / "flows.parquet").write_text("half")
    live = tmp_path / f".other.partial-{os.getpid()}"
    live.mkdir()
    # Tagged by the machine that writes it: this one's is judged by its pid, another
    # machine's (a cluster node, a container) never is.
    stale_here = tmp_path / f".tagged.partial-{int(dead.stdout)}-{MACHINE}"
    elsewhere = tmp_path / f".remote.partial-{int(dead.stdout)}-0123abcd"
    stale_here.mkdir()
    elsewhere.mkdir()
    assert sorted(remove_stale_partials(tmp_path)) == sorted([stale, stale_here])
    assert not stale.exists() and not stale_here.exists()
    assert live.exists() and elsewhere.exists()


def test_sigint_at_start_up_exits_130_without_a_traceback():
    console = Path(sys.executable).parent / "isthmus"
    process = subprocess.Popen(
        [str(console), "run", "leafspine-websearch-medium", "--out", os.devnull + "x"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.15)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


# ---- the fuzzer ---------------------------------------------------------------------

# A fixed sequence of examples (CI runs the same ones each time); more with the
# environment variable.
FUZZ = settings(
    max_examples=int(os.environ.get("ISTHMUS_FUZZ_EXAMPLES", 300)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)

# Values a real file might hold, some at the edges: they get past validation and
# exercise the engine.
PLAUSIBLE = st.sampled_from(
    [
        1,
        2,
        3,
        4,
        8,
        17,
        64,
        0.5,
        1.0,
        "1ps",
        "1us",
        "100us",
        "1ms",
        "10ms",
        "200ms",
        "1bps",
        "1Mbps",
        "1Gbps",
        "40Gbps",
        "400Gbps",
        "1B",
        "29B",
        "64B",
        "1500B",
        "9000B",
        "1MB",
        "1pkts",
        "2pkts",
        "1000pkts",
        "1KB",
        "ecmp",
        "spray",
        "single_path",
        "leaf_spine",
        "fat_tree",
        "ring",
        "mesh",
        "three_tier",
        "udp",
        "permutation",
        "all_to_all",
        "constant",
        "poisson",
        "flows_finished",
        "duration",
        "route",
        "drop",
        "controller",
        [{"name": "ecmp"}],
        [{"name": "single_path"}],
        [{"name": "l2_learning"}],
        [{"name": "hedera", "period": "1s"}],
    ]
)
NASTY = st.one_of(
    PLAUSIBLE,
    PLAUSIBLE,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=20),
    st.sampled_from(["[/x]", ":x:", "1ps", "0B", "-1us", "1e9Gbps", "\x00", "..", "nan"]),
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)

KEYS = [
    ("seed",),
    ("topology", "kind"),
    ("topology", "spines"),
    ("topology", "leaves"),
    ("topology", "hosts_per_leaf"),
    ("topology", "host_link", "rate"),
    ("topology", "host_link", "delay"),
    ("network", "routing"),
    ("network", "switch_queue"),
    ("network", "ecn_threshold"),
    ("traffic", 0, "kind"),
    ("traffic", 0, "pattern"),
    ("traffic", 0, "rate"),
    ("traffic", 0, "size"),
    ("traffic", 0, "stop"),
    ("traffic", 0, "packet_size"),
    ("traffic", 0, "arrivals"),
    ("telemetry", "sample_interval"),
    ("control", "latency"),
    ("control", "miss"),
    ("control", "apps"),
    ("run", "duration"),
    ("run", "stop_when"),
    ("extra",),
]


def base_document() -> dict:
    return {
        "name": "fz",
        "seed": 1,
        "topology": {
            "kind": "leaf_spine",
            "spines": 2,
            "leaves": 2,
            "hosts_per_leaf": 2,
            "host_link": {"rate": "10Gbps", "delay": "1us"},
        },
        "network": {"routing": "ecmp", "switch_queue": "100pkts"},
        "traffic": [
            {
                "kind": "udp",
                "pattern": "permutation",
                "rate": "1Gbps",
                "size": "20KB",
                "stop": "1ms",
            }
        ],
        "telemetry": {"sample_interval": "100us"},
        "control": {"latency": "0s"},
        "run": {"duration": "2ms"},
    }


def mutate(document: dict, path: tuple, value: object) -> dict:
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


@FUZZ
@given(mutations=st.lists(st.tuples(st.sampled_from(KEYS), NASTY), min_size=1, max_size=3))
def test_fuzzed_scenarios_give_a_scenario_error_or_a_run(mutations):
    document = base_document()
    for path, value in mutations:
        document = mutate(document, path, value)
    run_or_scenario_error(document)


def run_or_scenario_error(document: dict) -> None:
    """Either the scenario runs (in under 30 s) or it is one ScenarioError: anything
    else (a traceback of another kind, a panic) fails the test."""
    try:
        spec = parse_scenario_from(document)
        sim = spec.build()
        started = time.monotonic()
        spec.execute(sim)
        assert time.monotonic() - started < 30, "a fuzzed run must not hang"
    except ScenarioError as e:
        message = str(e)
        assert message and "Traceback" not in message
        assert len(message) < 4000


def parse_scenario_from(document: dict):
    import tomli_w

    try:
        text = tomli_w.dumps(document)
    except (TypeError, ValueError):
        # Not expressible in TOML (NaN keys, say): nothing a file could hold.
        raise ScenarioError("not expressible as TOML") from None
    return parse_scenario(text)


TIMES = st.sampled_from(["1ps", "1ns", "1us", "20us", "300us", "2ms"])
RATES = st.sampled_from(["1bps", "1Kbps", "100Mbps", "1Gbps", "10Gbps", "100Gbps"])
SIZES = st.sampled_from(["1B", "29B", "100B", "1500B", "64KB", "1MB"])
LIMITS = st.sampled_from(["1pkts", "2pkts", "250pkts", "1B", "1500B", "100KB"])
COUNT = st.integers(1, 6)

TOPOLOGIES = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("leaf_spine"),
            "spines": COUNT,
            "leaves": COUNT,
            "hosts_per_leaf": COUNT,
            "host_link": st.fixed_dictionaries({"rate": RATES, "delay": TIMES}),
        }
    ),
    st.fixed_dictionaries({"kind": st.just("fat_tree"), "k": st.sampled_from([2, 4, 6])}),
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["ring", "mesh"]),
            "switches": st.integers(1, 6),
            "hosts_per_switch": COUNT,
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("three_tier"),
            "cores": COUNT,
            "aggs": COUNT,
            "edges": COUNT,
            "hosts_per_edge": COUNT,
        }
    ),
)
TRAFFIC = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("udp"),
            "pattern": st.sampled_from(["permutation", "all_to_all"]),
            "rate": RATES,
            "size": SIZES,
            "packet_size": SIZES,
            "arrivals": st.sampled_from(["constant", "poisson"]),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("flows"),
            "pattern": st.sampled_from(["random", "permutation", "other_racks", "all_to_all"]),
            "arrivals": st.fixed_dictionaries(
                {"kind": st.just("batch"), "count": st.integers(1, 3)}
            ),
            "sizes": st.fixed_dictionaries({"min": SIZES, "max": st.just("1MB")}),
            "stop": TIMES,
            "transport": st.sampled_from(["tcp", "dctcp", "mptcp", "dcqcn"]),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("incast"),
            "receiver": st.integers(0, 3),
            "senders": st.integers(1, 5),
            "size": SIZES,
            "rounds": st.integers(1, 3),
            "transport": st.sampled_from(["tcp", "dctcp"]),
        }
    ),
)
SHAPES = st.fixed_dictionaries(
    {
        "name": st.just("shape"),
        "seed": st.integers(0, 2**64 - 1),
        "topology": TOPOLOGIES,
        "network": st.fixed_dictionaries(
            {
                "routing": st.sampled_from(["ecmp", "spray", "single_path"]),
                "switch_queue": LIMITS,
                "host_queue": LIMITS,
            },
            optional={"ecn_threshold": LIMITS},
        ),
        "traffic": st.lists(TRAFFIC, min_size=1, max_size=2),
        "telemetry": st.fixed_dictionaries({}, optional={"sample_interval": TIMES}),
        "run": st.fixed_dictionaries(
            {
                "duration": st.sampled_from(["10us", "1ms", "5ms"]),
                "stop_when": st.sampled_from(["duration", "flows_finished"]),
            }
        ),
    },
    optional={
        "control": st.fixed_dictionaries(
            {
                "latency": TIMES,
                "miss": st.sampled_from(["route", "drop", "controller"]),
                "apps": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["ecmp", "single_path", "l2_learning", "hedera"])}
                    ),
                    max_size=2,
                ),
            }
        )
    },
)


@FUZZ
@given(document=SHAPES)
def test_fuzzed_well_formed_scenarios_run_or_give_a_scenario_error(document):
    run_or_scenario_error(document)


def test_the_same_problem_at_many_list_entries_is_one_line_and_many_problems_are_counted():
    rates = ", ".join(['"x"'] * 1000)
    profile = f'{{ kind = "profile", flows_per_second = [{rates}] }}'
    traffic = f'[[traffic]]\nkind = "flows"\npattern = "permutation"\narrivals = {profile}\n'
    with pytest.raises(ScenarioError) as e:
        parse_scenario(
            BASE.split("[[traffic]]")[0] + traffic + 'stop = "1ms"\n[run]\nduration = "1ms"\n'
        )
    # 1000 entries: was 1000 lines.
    assert str(e.value).count("\n") == 0, str(e.value)[:500]
    assert "flows_per_second.0-999 (1000 entries): Input should be a valid number" in str(e.value)
    keys = "".join(f"unknown_{i} = 1\n" for i in range(100))
    with pytest.raises(ScenarioError) as e:
        parse_scenario(BASE.replace("[run]\n", f"[run]\n{keys}"))
    lines = str(e.value).splitlines()
    assert len(lines) == MAX_PROBLEM_LINES + 1 and lines[-1].endswith("and 80 more problems")
