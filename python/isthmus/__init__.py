"""Isthmus: learning-augmented traffic control for software-defined datacenter networks.

from isthmus import Simulation, Topology
sim = Simulation(Topology.leaf_spine(2, 4, 8), seed=1)
sim.add_udp_flow(0, 9, "5Gbps", stop="1ms")
sim.run("2ms")
sim.flows()["bytes_delivered"]
"""

from isthmus.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from isthmus.simulation import Simulation
from isthmus.topology import Link, Topology

__all__ = [
    "Link",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "Topology",
    "load_scenario",
    "parse_scenario",
]
