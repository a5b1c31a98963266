"""Scenarios on real switches: Open vSwitch bridges driven over OpenFlow 1.3 by the same
control apps as in the simulator, hosts in network namespaces running Linux TCP
(docs/emulation.md). Needs root, Open vSwitch, iproute2 and ethtool, and the
`emulate` extra (os-ken)."""

from isthmus.emulate.footprint import clean
from isthmus.emulate.run import EmulatedRun, emulate, write_run
from isthmus.emulate.system import EmulationError

__all__ = ["EmulatedRun", "EmulationError", "clean", "emulate", "write_run"]
