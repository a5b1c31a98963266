"""Commands are typed objects: the plane checks them against the network and sends them
through one seam, and a command states what should hold rather than a configuration
read, edited and written back."""

from __future__ import annotations

import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import Controller, ControlPlane, SwitchAgent
from isthmus.control.apps.ecmp import Ecmp
from isthmus.control.commands import (
    Command,
    InstallEntry,
    Pace,
    SetAqm,
    SetSelectGroup,
)
from isthmus.control.seam import EngineSeam
from isthmus.queues import Drr, ramp_marker


def _leaf_spine(latency: str = "0us") -> tuple[Simulation, ControlPlane]:
    sim = Simulation(Topology.leaf_spine(2, 2, 2, fabric_link=Link("10Gbps", "1us")))
    sim.configure_queue(
        "leaf0", limit="100pkts", scheduler=Drr(kind="drr", quanta=["1500B", "3000B"]), port=1
    )
    return sim, ControlPlane(sim, control_latency=latency)


def test_two_markings_in_flight_at_once_both_hold():
    # With a control latency, the second command is issued before the first took
    # effect: a command that read the port's configuration and wrote it back whole
    # would put class 0's old marking back.
    sim, plane = _leaf_spine(latency="10us")
    (agent,) = plane.add_agents(SwitchAgent, ["leaf0"])
    agent.switch.set_ecn(1, "20pkts", traffic_class=0)
    agent.switch.set_ecn(1, "30pkts", traffic_class=1)
    plane.run("20us")
    per_class = sim.port_queue_config("leaf0", 1)["class_aqm"]
    assert per_class[0]["kmin"] == ("packets", 20)
    assert per_class[1]["kmin"] == ("packets", 30)
    config = sim.port_queue_config("leaf0", 1)
    assert config["scheduler"]["kind"] == "drr" and config["limit"] == ("packets", 100)


def test_a_command_takes_effect_after_the_control_latency():
    sim, plane = _leaf_spine(latency="10us")
    plane.issue(SetAqm("leaf0", ramp_marker("40pkts", "40pkts", 1.0), port=0))
    plane.run("9us")
    assert sim.port_queue_config("leaf0", 0)["aqm"] == {"kind": "drop_tail"}
    plane.run("11us")
    assert sim.port_queue_config("leaf0", 0)["aqm"]["kmin"] == ("packets", 40)


def test_bad_commands_are_named_before_anything_is_sent():
    sim, plane = _leaf_spine()
    with pytest.raises(ValueError, match="command must be one of isthmus.control.commands"):
        plane.issue("set ecn")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'h0' is a host, not a switch"):
        plane.issue(SetAqm("h0", ramp_marker("1pkts", "1pkts", 1.0)))
    with pytest.raises(ValueError, match="port"):
        plane.issue(SetAqm("leaf0", ramp_marker("1pkts", "1pkts", 1.0), port=9))
    with pytest.raises(ValueError, match="aqm must be an AQM from isthmus.queues"):
        plane.issue(SetAqm("leaf0", "red"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weights: give one weight per port"):
        plane.issue(SetSelectGroup("leaf0", 1, [0, 1], [1]))
    with pytest.raises(ValueError, match="rate"):
        plane.issue(Pace(0, "fast"))


class _Recorder(EngineSeam):
    """A seam that keeps the commands it is sent (what another back-end would
    translate) and runs the simulation's time, timers and events."""

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.sent: list[tuple[int, Command]] = []
        self.entries = 0

    def send(self, delay: int, command: Command) -> int | None:
        self.sent.append((delay, command))
        if isinstance(command, InstallEntry):
            self.entries += 1
            return self.entries - 1
        return None


def test_an_app_speaks_only_in_commands_through_the_seam():
    sim = Simulation(Topology.fat_tree(4, Link("1Gbps", "1us"), Link("1Gbps", "1us")))
    recorder = _Recorder(sim)
    plane = ControlPlane(recorder, control_latency="5us")
    plane.add(Ecmp())
    plane.run("1us")
    kinds = {type(c).__name__ for _, c in recorder.sent}
    assert kinds <= {"InstallEntry", "SetSelectGroup"}, kinds
    assert recorder.sent and all(delay == 5_000_000 for delay, _ in recorder.sent)
    # Checked before they were sent: switches by node index, ports in range.
    switches = {i for i, kind in enumerate(plane.ports.kinds) if kind == "switch"}
    for _, command in recorder.sent:
        assert command.switch in switches
    # Nothing reached the engine.
    assert len(sim.entries()["entry"]) == 0


def test_a_controller_may_build_its_own_commands():
    class Pacer(Controller):
        def on_start(self) -> None:
            self.issue(Pace(self.flow, "100Mbps"))

    sim = Simulation(Topology.leaf_spine(2, 2, 2, fabric_link=Link("10Gbps", "1us")))
    flow = sim.add_tcp_flow(0, 3, "125KB")
    plane = ControlPlane(sim)
    pacer = Pacer()
    pacer.flow = flow
    plane.add(pacer)
    assert plane.run("100ms", stop_when_flows_finish=True)
    fct = sim.flows()["finish_ps"][flow] - sim.flows()["start_ps"][flow]
    # 125 KB of payload at 100 Mb/s on the wire takes at least 10 ms.
    assert fct >= 10e9, fct
