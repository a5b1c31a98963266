"""Control apps' parameters are held to what each constructor declares (types,
ranges, the memory they would take) before anything runs: from a scenario file a bad
value is one error naming `control.apps[i] (app)` and the parameter (exit status 2,
no traceback), from Python one ValueError naming the parameter. A network the engine
cannot build is one error too, wherever the scenario is built. Diolkos refuses a
`train_after` too few for its model's window, naming the least that works."""

import os
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_texts import SMALL_UDP
from typer.testing import CliRunner

from isthmus import Link, Simulation, Topology
from isthmus.cli import app
from isthmus.control import ControlPlane
from isthmus.control.apps import APPS, app_parameters
from isthmus.control.apps.acc import Acc
from isthmus.control.apps.diolkos import Diolkos
from isthmus.control.apps.ecmp import Ecmp
from isthmus.control.apps.hedera import Hedera
from isthmus.control.apps.ibcn import Ibcn
from isthmus.scenario import ScenarioError, load_scenario, parse_scenario

BASE = SMALL_UDP


def with_app(app: str, base: str = BASE) -> str:
    return base + "[control]\n[[control.apps]]\n" + app + "\n"


def run_cli(tmp_path: Path, text: str, command: str = "run"):
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    extra = ["--out", str(tmp_path / "out")] if command == "run" else []
    return CliRunner().invoke(app, [command, str(scenario), *extra])


# The fuzz campaign's tracebacks, and values each app declares out of range.
BAD_APPS = [
    ('name = "ecmp"\npriority = "x"', "(ecmp): priority: Input should be a valid integer"),
    ('name = "single_path"\npriority = "x"', "(single_path): priority: Input should be a valid"),
    (
        'name = "ecmp"\npriority = 70000',
        "(ecmp): priority must be an integer in [0, 65535], got 70000",
    ),
    ('name = "hedera"\ntime_scale = inf', "(hedera): time_scale: Input should be a finite number"),
    (
        'name = "hedera"\ntime_scale = "-1ms"',
        "(hedera): time_scale: Input should be a valid number",
    ),
    ('name = "hedera"\nperiod = "0s"', "(hedera): period must be a positive duration"),
    ('name = "acc"\nbeta = "0B"', "(acc): beta: Input should be a valid number, got '0B'"),
    ('name = "acc"\nbeta = 2.0', "(acc): beta must be in [0, 1], got 2.0"),
    ('name = "acc"\nclasses = [300]', "(acc): classes.0 must be at most 255, got 300"),
    ('name = "acc"\nsettings = 3', "(acc): settings: Input should be a valid dictionary"),
    ('name = "acc"\nsettings = { hidden = "x" }', "(acc): settings.hidden: Input should be a"),
    ('name = "acc"\nsettings = { hiden = 3 }', "(acc): settings has no field 'hiden'"),
    ('name = "ibcn"\nwindow = "x"', "(ibcn): window: Input should be a valid integer"),
    ('name = "ibcn"\nmodel_options = 3', "(ibcn): model_options: Input should be a valid dict"),
    ('name = "ibcn"\nseries = "link"', "(ibcn): series must be 'switch' or 'port'"),
    ('name = "l2_learning"\nidle_timeout = "1x"', "(l2_learning): idle_timeout: invalid time"),
    ('name = "diolkos"\nalpha = true', "(diolkos): alpha: Input should be a valid number"),
    ('name = "ofpt"\nlong_flow = "9"', "(ofpt): long_flow: invalid size '9'"),
]


@pytest.mark.parametrize(("table", "message"), BAD_APPS)
def test_a_bad_app_parameter_is_one_error_before_anything_runs(tmp_path, table, message):
    # Refused as the file is read: nothing is built, nothing runs.
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(with_app(table))
    assert f"control.apps[0] {message}" in str(refused.value)
    result = run_cli(tmp_path, with_app(table))
    assert result.exit_code == 2, result.output
    assert f"control.apps[0] {message}" in result.output.replace("\n", " ")
    assert "Traceback" not in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("table", "base", "message"),
    [
        # The shared network's one memory: 10^6 transitions x (64 intervals x 5 + 2)
        # features x 2 observations x 4 bytes: 2.5 GB.
        (
            'name = "acc"\nhistory = 64\nsettings = { capacity = 1000000 }',
            BASE,
            "the shared network x settings.capacity 1000000 transitions x history 64 would "
            "hold 2457 MiB of replay memory; at most 1024 MiB a switch: lower "
            "settings.capacity or history",
        ),
        # 10^7 rows of a leaf's 22 ports: 1.7 GB.
        (
            'name = "diolkos"\nmodel = "ewma"\nreplay_capacity = 10000000',
            BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 20"),
            "replay_capacity 10000000 rows of 22 ports would keep 1678 MiB of rows on 'leaf0'; "
            "at most 1024 MiB a switch",
        ),
    ],
)
def test_an_app_that_would_take_absurd_memory_is_refused_by_name(tmp_path, table, base, message):
    result = run_cli(tmp_path, with_app(table, base))
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_app_parameters_from_python_are_held_to_the_same_declaration():
    with pytest.raises(ValueError, match="priority: Input should be a valid integer, got 'x'"):
        Ecmp(priority="x")
    with pytest.raises(ValueError, match="time_scale: Input should be a finite number"):
        Hedera(time_scale=float("inf"))
    with pytest.raises(ValueError, match=r"period x time_scale must be a duration from 1 ps"):
        Hedera(period="5s", time_scale=1e-20)
    with pytest.raises(ValueError, match="forecaster: Input should be an instance of Forecaster"):
        Ibcn(forecaster="lstm")
    with pytest.raises(ValueError, match="app 'Ecmp' has no parameter.s. priorty"):
        Ecmp(priorty=3)
    plane = ControlPlane(Simulation(Topology.leaf_spine(2, 2, 2)))
    with pytest.raises(ValueError, match=r"beta must be in \[0, 1\], got 1.5"):
        plane.add_agents(Acc, beta=1.5)
    # Agents are made only once every switch's is accepted.
    assert plane.agents == {}
    # What is declared still works, a NumPy count included.
    import numpy as np

    assert Ecmp(priority=np.int64(7)).priority == 7
    assert Hedera(period="5s", time_scale=1e-3).period == 5_000_000_000


def test_a_network_the_engine_cannot_build_is_one_error_wherever_it_is_built(tmp_path):
    """65,538 ports on a leaf: `isthmus run` refused it cleanly, `isthmus show` printed a
    traceback; built through the public API it is one ScenarioError naming the section."""
    text = BASE.replace("spines = 2", "spines = 65536")
    path = tmp_path / "s.toml"
    path.write_text(text)
    spec = load_scenario(path)
    with pytest.raises(ScenarioError, match="topology: 'leaf0' would have 65538 ports"):
        spec.topology.build(tmp_path)
    with pytest.raises(ScenarioError, match="topology: 'leaf0' would have 65538 ports"):
        spec.build(base=tmp_path)
    for command in ("run", "show"):
        result = run_cli(tmp_path, text, command)
        assert result.exit_code == 2, (command, result.output)
        assert "'leaf0' would have 65538 ports; a node has at most 65534" in result.output
        assert "Traceback" not in result.output


def diolkos_ring(**options) -> tuple[ControlPlane, list[Diolkos]]:
    link = Link("100Mbps", "10us")
    sim = Simulation(Topology.ring(3, 1, link, link), seed=1)
    sim.add_bulk_flow(0, 1, "1s", transport="tcp")
    plane = ControlPlane(sim)
    return plane, plane.add_agents(Diolkos, ["s0"], **options)


def test_diolkos_refuses_a_train_after_too_few_for_its_window_naming_the_least():
    """train_after = 20 with the default window (5) split 20/60/20 leaves 4 validation
    rows for an example of 6: the run stopped after simulating its first training. Now
    refused when the agent is made, with the least value; that value trains."""
    pytest.importorskip("torch")
    options = {"model": "dense", "model_options": {"epochs": 2}, "smoothing": None}
    with pytest.raises(ValueError, match=r"train_after \(20\) is too few rows") as refused:
        diolkos_ring(sample_period="1ms", train_after=20, **options)
    message = str(refused.value)
    assert "one example of 6 rows (window 5 + lead 1 + horizon 1 - 1)" in message
    assert "give train_after of at least 28" in message
    with pytest.raises(ValueError, match="at least 28"):
        diolkos_ring(sample_period="1ms", train_after=27, **options)
    plane, (agent,) = diolkos_ring(sample_period="1ms", train_after=28, **options)
    plane.run("40ms")
    assert agent.trained and agent.stats.trained_rows > 0
    # A wider window needs more rows; the message follows it.
    with pytest.raises(ValueError, match="window 20 .* at least 103"):
        diolkos_ring(sample_period="1ms", train_after=28, window=20, **options)


def test_a_scenario_names_diolkos_train_after_with_the_least_value(tmp_path):
    pytest.importorskip("torch")
    result = run_cli(tmp_path, with_app('name = "diolkos"\ntrain_after = 20'))
    assert result.exit_code == 2, result.output
    output = result.output.replace("\n", " ")
    assert "control.apps[0] (diolkos): train_after (20) is too few rows" in output
    assert "give train_after of at least 28" in output


@pytest.mark.parametrize(
    ("table", "fabric", "message"),
    [
        (
            'name = "ecmp"',
            "spines = 1\nleaves = 500\nhosts_per_leaf = 20",
            "(ecmp): ECMP would install 10020000 entries (a group and an entry per switch "
            "and destination: 501 x 10000, twice); at most 10000000 in the network",
        ),
        (
            'name = "single_path"',
            "spines = 1\nleaves = 100\nhosts_per_leaf = 32",
            "(single_path): single-path routing would install 10236800 entries",
        ),
    ],
)
def test_an_app_that_would_fill_the_tables_beyond_the_bound_is_refused_before_the_run(
    table, fabric, message
):
    """Millions of entries, each a call and a hundred-odd bytes in the engine: refused
    as the app is added, not after minutes of installing (or an abort)."""
    text = with_app(table, BASE.replace("spines = 2\nleaves = 2\nhosts_per_leaf = 2", fabric))
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text).build()
    assert f"control.apps[0] {message}" in str(refused.value)


# Values a TOML file can hold, of every type and at the edges.
TOML_VALUES = st.one_of(
    st.sampled_from(
        [0, 1, -1, 3, 2**15, 2**16, 2**31, 2**63 - 1, -(2**63), 0.5, 1e300, -0.0]
        + [float("inf"), float("nan"), True, False, "", "x", "1ms", "0s", "-1ms", "10KB"]
        + ["lstm", "dense", "ewma", "switch", [], [0], [1, 2], ["a"], {}, {"hidden": 3}]
        + [{"a": 1}, {"hidden": "x"}, {"epochs": -1}, {"capacity": 0}, {"window": 2}]
    ),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.text(max_size=12),
)


# What an app needs beyond its defaults to be built (IBCN: polls to train on).
VALID_APP_TABLES = {"ibcn": {"training_polls": 100}}


@settings(
    max_examples=int(os.environ.get("ISTHMUS_FUZZ_EXAMPLES", 300)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(data=st.data())
def test_any_value_of_any_app_parameter_builds_or_is_one_error_naming_it(data):
    name = data.draw(st.sampled_from(sorted(APPS)), label="app")
    parameter = data.draw(st.sampled_from(app_parameters(name)), label="parameter")
    value = data.draw(TOML_VALUES, label="value")
    document = tomllib.loads(BASE)
    table = {"name": name, **VALID_APP_TABLES.get(name, {}), parameter: value}
    document["control"] = {"apps": [table]}
    try:
        text = tomli_w.dumps(document)
    except (TypeError, ValueError):  # nothing a file could hold
        return
    try:
        parse_scenario(text).build()
    except ScenarioError as e:
        message = str(e)
        assert f"control.apps[0] ({name})" in message, message
        assert parameter in message, message
        assert "\n" not in message.strip() and len(message) < 1000, message
