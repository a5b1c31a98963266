"""Control programs from scenario files: `[control]` runs apps by name with their
parameters, the latency and the table-miss policy; BCN traffic is declarable."""

import tomllib

import numpy as np
import pytest
import tomli_w

from isthmus import load_scenario
from isthmus.scenario import ScenarioError, parse_scenario

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
pairs = [[0, 2], [1, 3]]
rate = "1Gbps"
size = "100KB"
arrivals = "constant"
[run]
duration = "5ms"
stop_when = "flows_finished"
"""


def scenario(extra: str):
    return parse_scenario(BASE + extra)


def goodput_gbps(name_or_path, scenario_path, with_control: bool) -> tuple[float, object]:
    spec = load_scenario(scenario_path(name_or_path))
    if not with_control:
        spec = spec.model_copy(update={"control": None})
    sim = spec.build()
    plane = sim.control_plane
    if plane is not None:
        plane.run("20ms")
    else:
        sim.run("20ms")
    before = sim.flows()["bytes_delivered"].copy()
    spec.execute(sim)
    gbps = (sim.flows()["bytes_delivered"] - before).sum() * 8 / 0.04 / 1e9
    return gbps, plane


def test_the_bundled_hedera_scenario_beats_ecmp(scenario_path):
    ecmp, _ = goodput_gbps("fattree-stride-hedera", scenario_path, with_control=False)
    hedera, plane = goodput_gbps("fattree-stride-hedera", scenario_path, with_control=True)
    app = plane.controllers[0]
    assert type(app).__name__ == "Hedera" and app.placements > 0
    assert hedera > 1.1 * ecmp, f"Hedera {hedera:.1f} vs ECMP {ecmp:.1f} Gb/s"


def test_the_miss_policy_and_latency_reach_the_switches():
    spec = scenario('[control]\nmiss = "drop"\nlatency = "20us"\n')
    sim = spec.build()
    assert sim.control_plane.latency == 20_000_000
    spec.execute(sim)
    # No app installs anything and every switch drops on a miss: nothing arrives.
    assert sim.flows()["packets_delivered"].sum() == 0
    assert sim.node_drops()["rule_drops"].sum() == sim.flows()["packets_sent"].sum()


def test_an_app_with_parameters_runs_from_the_file():
    spec = scenario(
        '[control]\nmiss = "drop"\n[[control.apps]]\nname = "single_path"\npriority = 7\n'
    )
    sim = spec.build()
    spec.execute(sim)
    assert sim.flows()["packets_delivered"].sum() == sim.flows()["packets_sent"].sum()
    assert set(sim.entries()["priority"].tolist()) == {7}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            '[[control.apps]]\nname = "nope"\n',
            "control.apps.0: unknown control app 'nope'; known: acc, diolkos, ecmp, hedera",
        ),
        (
            '[[control.apps]]\nname = "hedera"\nperiodd = "5s"\n',
            "app 'hedera' has no parameter(s) periodd; it takes period, time_scale",
        ),
        (
            '[[control.apps]]\nname = "ecmp"\nswitches = ["leaf0"]\n',
            "switches applies to agent apps",
        ),
        ('miss = "flood"\n', "control.miss: Input should be 'route', 'controller' or 'drop'"),
        ('latency = "5"\n', "control.latency"),
    ],
)
def test_bad_control_sections_name_the_field(extra, message):
    with pytest.raises(ScenarioError) as e:
        scenario("[control]\n" + extra)
    assert message in str(e.value)


def test_an_app_parameter_the_app_refuses_names_the_app():
    spec = scenario('[[control.apps]]\nname = "hedera"\nperiod = "1ps"\ntime_scale = 1e-3\n')
    with pytest.raises(ScenarioError, match=r"control.apps\[0\] \(hedera\): period x time_scale"):
        spec.build()


BCN = """
name = "bcn"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 4
host_link = { rate = "1Gbps", delay = "1us" }
fabric_link = { rate = "1Gbps", delay = "1us" }
[network]
switch_queue = "400pkts"
[network.bcn]
q_eq = 20.0
[[traffic]]
kind = "bcn"
pattern = "pairs"
pairs = [[0, 4], [1, 4], [2, 4]]
fair_share = "300Mbps"
stop = "20ms"
[run]
duration = "20ms"
"""


def test_bcn_sources_and_congestion_points_come_from_the_file():
    spec = parse_scenario(BCN)
    sim = spec.build()
    spec.execute(sim)
    bcn = sim.bcn()
    assert len(sim.flows()["src"]) == 3
    # Three 1 Gb/s sources into one 1 Gb/s host: its congestion point sent negative
    # (NORMAL) and STOP feedback.
    assert int(np.sum(bcn["normal"]) + np.sum(bcn["stop"])) > 0
    assert int(np.sum(bcn["samples"])) > 0
    without_points = BCN.replace("[network.bcn]\nq_eq = 20.0\n", "")
    with pytest.raises(ScenarioError, match=r"traffic\[0\]: BCN sources need congestion points"):
        parse_scenario(without_points).build()
    with pytest.raises(ScenarioError, match="q_sc .* must exceed q_eq"):
        parse_scenario(BCN.replace("q_eq = 20.0", "q_eq = 95.0"))


REGULATED = """
name = "regulated"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 4
[network]
switch_queue = "100pkts"
[network.bcn]
q_eq = 20.0
[network.bcn_regulator]
fair_share = "300Mbps"
min_pause = "200us"
max_pause = "800us"
[[traffic]]
kind = "flows"
pattern = { kind = "incast", receiver = 7, senders = 3 }
arrivals = { kind = "batch", count = 1 }
sizes = { min = "1MB", max = "1MB" }
stop = "1us"
transport = "tcp"
[run]
duration = "50ms"
stop_when = "flows_finished"
"""


def _regulated_by_hand(text: str):
    """The same run, its flows put behind regulators through the Python API."""
    raw = tomllib.loads(text)
    regulator = raw["network"].pop("bcn_regulator")
    spec = parse_scenario(tomli_w.dumps(raw))
    sim = spec.build()
    for flow in range(sim.num_flows):
        sim.regulate_with_bcn(flow, **regulator)
    spec.execute(sim)
    return sim


def test_every_flow_goes_behind_the_bcn_regulator_the_file_gives():
    spec = parse_scenario(REGULATED)
    sim = spec.build()
    spec.execute(sim)
    # Exactly what regulating each flow by hand gives, to the packet: every flow, the
    # file's settings.
    by_hand = _regulated_by_hand(REGULATED)
    for key in ("finish_ps", "packets_dropped", "bytes_delivered"):
        assert np.array_equal(sim.flows()[key], by_hand.flows()[key])
    # Three 1 MB senders into one host: the congestion point pushed back, and regulated
    # senders finish otherwise than unregulated ones.
    assert int(np.sum(sim.bcn()["normal"]) + np.sum(sim.bcn()["stop"])) > 0
    free = parse_scenario(
        REGULATED.split("[network.bcn_regulator]")[0] + REGULATED.split('max_pause = "800us"\n')[1]
    )
    unregulated = free.build()
    free.execute(unregulated)
    assert not np.array_equal(unregulated.flows()["finish_ps"], sim.flows()["finish_ps"])
    # What it cannot regulate, it refuses by name: no points, DCQCN flows, incast rounds.
    with pytest.raises(ScenarioError, match="bcn_regulator needs congestion points"):
        parse_scenario(REGULATED.replace("[network.bcn]\nq_eq = 20.0\n", ""))
    with pytest.raises(ScenarioError, match="network.bcn_regulator: flow 0 is not a TCP"):
        parse_scenario(REGULATED.replace('transport = "tcp"', 'transport = "dcqcn"')).build()
    rounds = REGULATED.replace(
        '''[[traffic]]
kind = "flows"
pattern = { kind = "incast", receiver = 7, senders = 3 }
arrivals = { kind = "batch", count = 1 }
sizes = { min = "1MB", max = "1MB" }
stop = "1us"
transport = "tcp"''',
        """[[traffic]]
kind = "incast"
receiver = 7
senders = 3
size = "64KB"
rounds = 3""",
    )
    with pytest.raises(ScenarioError, match="incast rounds add their flows as the run goes"):
        parse_scenario(rounds).build()
