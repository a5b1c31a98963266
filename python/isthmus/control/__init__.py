"""The SDN control plane: controllers with a global view, per-switch agents with a
local one, and the loop that runs them against a simulation."""

from isthmus.control.events import (
    EntryRemoved,
    FlowArrival,
    FlowCrossing,
    FlowFinished,
    PacketIn,
    Tick,
)
from isthmus.control.paths import Paths
from isthmus.control.plane import Controller, ControlPlane, SwitchAgent, SwitchHandle
from isthmus.portmap import PortMap

__all__ = [
    "ControlPlane",
    "Controller",
    "EntryRemoved",
    "FlowArrival",
    "FlowCrossing",
    "FlowFinished",
    "PacketIn",
    "Paths",
    "PortMap",
    "SwitchAgent",
    "SwitchHandle",
    "Tick",
]
