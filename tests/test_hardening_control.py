"""ECN marking set on every port of a switch at once changes each port's marking only:
each port keeps its own scheduler, limit and device queue."""

import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import ControlPlane, SwitchAgent
from isthmus.queues import Drr


def leaf0_with_a_drr_port() -> tuple[Simulation, ControlPlane, SwitchAgent]:
    """leaf0's port 1 serves two classes by DRR and holds 100 packets; its other ports
    keep the network's FIFO of 250."""
    sim = Simulation(Topology.leaf_spine(2, 2, 2, fabric_link=Link("10Gbps", "1us")))
    drr = Drr(kind="drr", quanta=["1500B", "3000B"])
    sim.configure_queue("leaf0", limit="100pkts", scheduler=drr, port=1, device_queue=3)
    plane = ControlPlane(sim)
    (agent,) = plane.add_agents(SwitchAgent, ["leaf0"])
    return sim, plane, agent


def test_marking_every_port_keeps_each_ports_own_queue():
    sim, plane, agent = leaf0_with_a_drr_port()
    agent.switch.set_ecn(None, "20pkts", "40pkts", 0.5)
    plane.run("1us")
    marker = {"kind": "ramp", "kmin": ("packets", 20), "kmax": ("packets", 40), "pmax": 0.5}
    drr_port = sim.port_queue_config("leaf0", 1)
    assert drr_port["scheduler"] == {"kind": "drr", "quanta": [1500, 3000]}
    assert drr_port["limit"] == ("packets", 100)
    assert drr_port["device_queue"] == 3
    assert drr_port["aqm"] == marker
    for port in (0, 2, 3):
        fifo_port = sim.port_queue_config("leaf0", port)
        assert fifo_port["scheduler"] == {"kind": "fifo"}
        assert fifo_port["limit"] == ("packets", 250)
        assert fifo_port["aqm"] == marker
    # Drop-tail again, on every port, still each with its own queue.
    agent.switch.set_ecn(None, None)
    plane.run("2us")
    assert sim.port_queue_config("leaf0", 1)["aqm"] == {"kind": "drop_tail"}
    assert sim.port_queue_config("leaf0", 1)["scheduler"]["kind"] == "drr"


def test_a_class_marked_on_every_port_must_exist_on_each():
    sim, plane, agent = leaf0_with_a_drr_port()
    # Only port 1 has a class 1: the command names the first port without one and
    # changes nothing.
    with pytest.raises(ValueError, match=r"traffic_class 1 does not exist on port 0 of 'leaf0'"):
        agent.switch.set_ecn(None, "20pkts", traffic_class=1)
    plane.run("1us")
    assert sim.port_queue_config("leaf0", 1)["class_aqm"] == []
    agent.switch.set_ecn(1, "20pkts", traffic_class=1)
    plane.run("2us")
    drr_port = sim.port_queue_config("leaf0", 1)
    assert drr_port["class_aqm"][1]["kmin"] == ("packets", 20)
    assert drr_port["scheduler"]["kind"] == "drr" and drr_port["limit"] == ("packets", 100)
