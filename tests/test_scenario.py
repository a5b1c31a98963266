"""Scenario validation: every kind of bad input gets one message naming the field."""

import re
import textwrap
from pathlib import Path

import pytest

from isthmus import ScenarioError, parse_scenario

BASE = """
name = "t"
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 2
[[traffic]]
kind = "udp"
pattern = "pairs"
pairs = [[0, 3]]
rate = "1Gbps"
stop = "1ms"
[run]
duration = "2ms"
"""


def build(text: str):
    return parse_scenario(textwrap.dedent(text), source="s.toml").build()


def edited(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def test_the_base_scenario_is_valid_and_runs():
    sim = build(BASE)
    sim.run("2ms")
    assert sim.flows()["bytes_delivered"][0] > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (edited('name = "t"', 'name = "t"\ncolour = "red"'), r"s\.toml: colour: unknown key"),
        (edited("spines = 2", "spines = 2\nspine = 2"), r"topology\.spine: unknown key"),
        (
            edited("spines = 2", "spines = 2\nload = 0.5"),
            r"topology\.load: not a key of this kind of section \(other kinds take it\)",
        ),
        (
            edited('duration = "2ms"', 'duraton = "2ms"'),
            r"run\.duraton: unknown key; did you mean 'duration'\?",
        ),
        (edited('rate = "1Gbps"', "rate = 1"), r"traffic\.0\.rate: 1 has no unit"),
        (
            edited('rate = "1Gbps"', 'rate = "1"'),
            r"traffic\.0\.rate: invalid rate '1': missing unit",
        ),
        (edited('rate = "1Gbps"', 'rate = "-1Gbps"'), r"traffic\.0\.rate: .*must not be negative"),
        (edited('rate = "1Gbps"', 'rate = "0Gbps"'), r"traffic\.0\.rate: .*greater than zero"),
        (edited("spines = 2", "spines = 0"), r"topology\.spines: Input should be greater than 0"),
        (edited('duration = "2ms"', ""), r"run\.duration: required but missing"),
        (edited('stop = "1ms"', 'stop = "1ms"\nstart = "2ms"'), r"stop \(1ms\) must come after"),
        (edited('kind = "leaf_spine"', 'kind = "torus"'), r"topology: .*leaf_spine"),
        (edited('pattern = "pairs"', 'pattern = "permutation"'), r"pairs is only used"),
        (edited('stop = "1ms"', ""), r"give size, stop, or both"),
        ("name = [", r"s\.toml: not valid TOML"),
    ],
)
def test_invalid_scenarios_are_refused_with_the_field_named(text, message):
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(text, source="s.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            edited("pairs = [[0, 3]]", "pairs = [[0, 9]]"),
            r"traffic\[0\]\.pairs\[0\]: host 9 does not exist.*4 hosts",
        ),
        (
            edited("pairs = [[0, 3]]", "pairs = [[2, 2]]"),
            r"traffic\[0\]: src and dst are the same host",
        ),
        (
            edited('stop = "1ms"', 'stop = "1ms"\npacket_size = "20B"'),
            r"traffic\[0\]: packet_size 20 B is too small",
        ),
    ],
)
def test_scenarios_that_cannot_run_name_the_traffic_block(text, message):
    with pytest.raises(ScenarioError, match=message):
        build(text)


def test_impossible_topologies_are_refused():
    fat = BASE.replace(
        'kind = "leaf_spine"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2',
        'kind = "fat_tree"\nk = 3',
    )
    with pytest.raises(ScenarioError, match=r"topology: fat_tree k must be an even number"):
        build(fat)
    disconnected = BASE.replace(
        'kind = "leaf_spine"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2',
        textwrap.dedent(
            """\
            kind = "custom"
            hosts = ["a", "b", "c", "d"]
            switches = ["s1", "s2"]
            links = [{a = "a", b = "s1", rate = "10Gbps"}, {a = "b", b = "s1", rate = "10Gbps"},
                     {a = "c", b = "s2", rate = "10Gbps"}, {a = "d", b = "s2", rate = "10Gbps"}]"""
        ),
    )
    with pytest.raises(ScenarioError, match=r"topology: host '.' cannot reach host 'a'"):
        build(disconnected)


def test_custom_topology_from_an_edge_list_file(tmp_path):
    (tmp_path / "edges.toml").write_text(
        textwrap.dedent(
            """\
            hosts = ["a", "b"]
            switches = ["s"]
            links = [
              { a = "a", b = "s", rate = "10Gbps", delay = "2us" },
              { a = "s", b = "b", rate = "1Gbps", delay = "3us" },
            ]
            """
        )
    )
    text = BASE.replace(
        'kind = "leaf_spine"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2',
        'kind = "custom"\nfile = "edges.toml"',
    ).replace("pairs = [[0, 3]]", "pairs = [[0, 1]]")
    sim = parse_scenario(text).build(base=tmp_path)
    graph = sim.topology.to_networkx()
    assert graph.edges["s", "b", 0]["rate_bps"] == 1_000_000_000
    sim.run("2ms")
    # The first datagram leaves at t=0: 1.2 us at 10 Gb/s + 2 us, then 12 us at 1 Gb/s + 3 us.
    assert sim.flows()["first_delivery_ps"][0] == 18_200_000

    (tmp_path / "bad.toml").write_text(
        'hosts = ["a"]\nswitches = []\nlinks = [{a = "a", b = "s"}]\n'
    )
    with pytest.raises(ScenarioError, match=r"bad\.toml: links\.0\.rate: required but missing"):
        parse_scenario(text.replace("edges.toml", "bad.toml")).build(base=tmp_path)
    with pytest.raises(ScenarioError, match=r"topology\.file: edge list .* does not exist"):
        parse_scenario(text.replace("edges.toml", "none.toml")).build(base=tmp_path)


def test_the_readme_scenario_example_validates():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    example = re.search(r"```toml\n(name = \"my-incast\".*?)```", readme, re.S)
    assert example, "README lost its scenario example"
    scenario = parse_scenario(example.group(1))
    assert [t.kind for t in scenario.traffic] == [
        "udp",
        "poisson_flows",
        "flows",
        "incast",
        "flow_list",
        "bcn",
    ]
    assert [app.name for app in scenario.control.apps] == ["hedera"]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            'pattern = { kind = "incast", receiver = 0, senders = 2 }',
            'pattern = { kind = "stride", strde = 2 }',
            [
                "traffic.0.pattern.stride: required but missing",
                "traffic.0.pattern.strde: unknown key; did you mean 'stride'?",
            ],
        ),
        (
            'arrivals = { kind = "profile", flows_per_second = [5, 10, 5, 5, 10, 5] }',
            'arrivals = { kind = "profile", flows_per_secnd = [5] }',
            [
                "traffic.0.arrivals.flows_per_second: required but missing",
                "traffic.0.arrivals.flows_per_secnd: unknown key; did you mean 'flows_per_second'?",
            ],
        ),
        (
            'pattern = { kind = "incast", receiver = 0, senders = 2 }',
            'pattern = "ranodm"',
            [
                "traffic.0.pattern: Input should be 'random', 'other_racks', 'all_to_all' "
                "or 'permutation'"
            ],
        ),
    ],
)
def test_an_error_in_a_nested_kind_is_named_by_the_files_own_keys(
    old, new, expected, scenario_path
):
    # The path names keys as the file spells them: no union branch labels, no variant
    # tags (every `kind` a model declares, derived from the models).
    text = scenario_path("diolkos-mesh").read_text()
    assert old in text
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text.replace(old, new, 1))
    lines = [line.removeprefix("<scenario>: ") for line in str(caught.value).splitlines()]
    assert lines == expected
