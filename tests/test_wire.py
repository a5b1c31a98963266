"""Configurations cross into the engine as one serialised value of the engine's own
type: the engine reads them with its declared defaults and refuses what it cannot run."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from isthmus import Simulation, Topology, _core, declared
from isthmus.queues import DEFAULT_LIMITS, CoDel, Drr, queue_config
from isthmus.scenario import Network
from isthmus.wire import deserialised


def test_a_queue_configuration_comes_back_as_it_went_in():
    sim = Simulation(Topology.leaf_spine(1, 2, 2))
    drr, codel = Drr(kind="drr", quanta=["1500B", "3000B"]), CoDel(kind="codel")
    sim.configure_queue("leaf0", limit="100pkts", scheduler=drr, aqm=codel, port=1, device_queue=3)
    back = sim.port_queue_config("leaf0", 1)
    assert back == {**queue_config("100pkts", drr, codel, 3), "class_aqm": []}
    assert back["limit"] == ("packets", 100)
    # The other ports keep the engine's default queue.
    assert sim.port_queue_config("leaf0", 0)["limit"] == ("packets", 250)


def test_a_command_crosses_as_one_value_and_the_engine_numbers_entries():
    sim = Simulation(Topology.leaf_spine(1, 2, 2))
    leaf = sim.node_index("leaf0")
    install = {
        "kind": "add_entry",
        "switch": leaf,
        "priority": 5,
        "matcher": {"dst": 1},
        "action": {"forward": {"output": 1}},
    }
    first = sim._engine.command(0, install)
    second = sim._engine.command(0, {**install, "matcher": {"dst": 0}})
    assert (first, second) == (0, 1)
    # The engine numbers entries: a sender cannot choose an id.
    with pytest.raises(ValueError, match="unknown field `entry`"):
        sim._engine.command(0, {**install, "entry": 77})
    assert sim._engine.command(0, {"kind": "set_link", "link": 0, "up": True}) is None
    with pytest.raises(ValueError, match="unknown variant `teleport`"):
        sim._engine.command(0, {"kind": "teleport", "flow": 0})
    with pytest.raises(ValueError, match="unknown field `colour`"):
        sim._engine.command(0, {"kind": "drop_buffer", "buffer": 0, "colour": 1})
    sim.run("1ns")
    assert sorted(sim.entries()["entry"].tolist()) == [0, 1]


def test_the_defaults_are_the_engines():
    engine = declared.parameters("EngineConfig")
    assert engine["switch_queue"].default["limit"] == ("packets", 250)
    assert DEFAULT_LIMITS == {"host_queue": "250pkts", "switch_queue": "250pkts"}
    signature = inspect.signature(Simulation).parameters
    assert signature["host_queue"].default == DEFAULT_LIMITS["host_queue"]
    assert signature["ttl"].default == engine["ttl"].default == 64
    assert Network().switch_queue == DEFAULT_LIMITS["switch_queue"]
    # Left out, a field takes the engine's own default.
    engine = _core.Engine(Topology.leaf_spine(1, 2, 2)._core, 1, {"routing": "spray"})
    assert deserialised(engine.queue_config(0))["limit"] == ("packets", 250)
    # Only plain values cross.
    with pytest.raises(ValueError, match="engine configuration: .* is a object, not a number"):
        _core.Engine(Topology.leaf_spine(1, 2, 2)._core, 1, {"ttl": object()})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"tll": 3}, "unknown field `tll`"),
        ({"ttl": 0}, "ttl must be at least 1"),
        ({"routing": "random"}, "unknown variant `random`"),
        ({"bcn": {"pm": 2.0}}, "BCN needs 0 < Pm <= 1"),
        ({"pfc": {"xoff": 10, "xon": 20, "lossless": 1, "free_fraction": None}}, "xon <= xoff"),
        (
            {
                "switch_queue": {
                    "limit": ["frames", 5],
                    "scheduler": {"kind": "fifo"},
                    "aqm": {"kind": "drop_tail"},
                }
            },
            "a limit counts 'packets' or 'bytes', not 'frames'",
        ),
    ],
)
def test_the_engine_refuses_a_bad_configuration_by_name(config, message):
    topology = Topology.leaf_spine(1, 2, 2)
    with pytest.raises(ValueError, match="engine configuration|ttl|BCN|PFC") as error:
        _core.Engine(topology._core, 1, config)
    assert message in str(error.value)


def test_limits_come_back_as_tuples_and_nothing_else_does():
    text = '{"limit": ["bytes", 3000], "quanta": [1500, 3000], "rank": ["packets", "x"]}'
    assert deserialised(text) == {
        "limit": ("bytes", 3000),
        "quanta": [1500, 3000],
        "rank": ["packets", "x"],
    }


def test_tcp_settings_are_the_engines_and_cross_whole():
    from isthmus.transport import TcpParams

    engine = {name: p.default for name, p in declared.parameters("TcpConfig").items()}
    engine["dctcp"] = {name: p.default for name, p in declared.parameters("Dctcp").items()}
    core = TcpParams().as_core()
    # Every setting Python sends is one the engine declares, with the engine's default.
    assert set(core) == set(engine)
    assert core == engine
    sim = Simulation(Topology.leaf_spine(1, 2, 2))
    flows = [np.array([0], dtype=dtype) for dtype in (np.uint32, np.uint32, np.uint64, np.uint64)]
    flows[1][0] = 3
    with pytest.raises(ValueError, match="tcp: mms: unknown field `mms`"):
        sim._engine.add_tcp_flows(*flows, {"mms": 1460}, {"kind": "tcp"})
    # A batch's transport crosses as one value tagged by kind, MPTCP's with its subflows.
    with pytest.raises(ValueError, match="transport: kind: unknown variant `sctp`"):
        sim._engine.add_tcp_flows(*flows, core, {"kind": "sctp"})
    with pytest.raises(ValueError, match="transport: missing field `subflows`"):
        sim._engine.add_tcp_flows(*flows, core, {"kind": "mptcp"})


def test_a_bad_value_is_named_and_numpy_scalars_cross():
    sim = Simulation(Topology.leaf_spine(1, 2, 2))
    leaf = sim.node_index("leaf0")
    ramp = {"kind": "ramp", "kmin": ("packets", 1), "kmax": ("packets", 9), "pmax": 1.0}
    with pytest.raises(ValueError, match="command: invalid type: integer `9`, expected a tuple"):
        sim._engine.command(0, {"kind": "set_aqm", "switch": leaf, "aqm": {**ramp, "kmax": 9}})
    with pytest.raises(ValueError, match="command: unknown field `kmid`"):
        sim._engine.command(0, {"kind": "set_aqm", "switch": leaf, "aqm": {**ramp, "kmid": 5}})
    # Outside a kind-tagged value the message gives the path to the field.
    bad_pfc = {"pfc": {"xoff": "30KB", "xon": 1, "lossless": 1, "free_fraction": None}}
    with pytest.raises(
        ValueError, match='engine configuration: pfc.xoff: invalid type: string "30KB"'
    ):
        _core.Engine(Topology.leaf_spine(1, 2, 2)._core, 1, bad_pfc)
    # NumPy's integers, floats and bools are numbers and flags like Python's own.
    numpy_ramp = {**ramp, "kmin": ("packets", np.int64(1)), "pmax": np.float32(0.5)}
    command = {"kind": "set_aqm", "switch": np.uint32(leaf), "port": np.int16(0), "aqm": numpy_ramp}
    assert sim._engine.command(0, command) is None
    sim._engine.command(0, {"kind": "set_link", "link": np.int64(0), "up": np.bool_(True)})
    sim.run("1us")
    assert sim.port_queue_config("leaf0", 0)["aqm"] == {**ramp, "pmax": 0.5}
