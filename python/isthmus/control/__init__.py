"""The SDN control plane: controllers with a global view, per-switch agents with a
local one, and the loop that runs them against a simulation."""

from isthmus.control.events import EntryRemoved, FlowArrival, FlowFinished, PacketIn, Tick
from isthmus.control.plane import Controller, ControlPlane, PortMap, SwitchAgent, SwitchHandle

__all__ = [
    "ControlPlane",
    "Controller",
    "EntryRemoved",
    "FlowArrival",
    "FlowFinished",
    "PacketIn",
    "PortMap",
    "SwitchAgent",
    "SwitchHandle",
    "Tick",
]
