"""Isthmus: learning-augmented traffic control for software-defined datacenter networks.

from isthmus import Simulation, Topology
sim = Simulation(Topology.leaf_spine(2, 4, 8), seed=1)
sim.add_udp_flow(0, 9, "5Gbps", stop="1ms")
sim.run("2ms")
sim.flows()["bytes_delivered"]
"""

# No imports at all (not typing, not __future__): the console script imports this
# module before it can install its Ctrl-C handler (isthmus.entry), and a Ctrl-C
# during an import would end in a traceback. TYPE_CHECKING is typing's, spelt out.
TYPE_CHECKING = False

# Loaded on first use, so `import isthmus.<module>` (the command line's entry point
# among them) does not pull in the whole package first.
_EXPORTS = {
    "Link": "isthmus.topology",
    "Topology": "isthmus.topology",
    "Simulation": "isthmus.simulation",
    "Scenario": "isthmus.scenario",
    "ScenarioError": "isthmus.scenario",
    "load_scenario": "isthmus.scenario",
    "parse_scenario": "isthmus.scenario",
}

if TYPE_CHECKING:
    from typing import Any

    from isthmus.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
    from isthmus.simulation import Simulation
    from isthmus.topology import Link, Topology


def __getattr__(name: str) -> "Any":
    if name not in _EXPORTS:
        raise AttributeError(f"module 'isthmus' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "Link",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "Topology",
    "load_scenario",
    "parse_scenario",
]
