"""Control events as handlers receive them: one small named tuple per event (the
engine hands the batch over as NumPy columns; these are built only for dispatch)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from isthmus._core import CONTROL_EVENT_KINDS

# The engine defines the codes of the `kind` column; they are read, never restated.
TICK = CONTROL_EVENT_KINDS["tick"]
PACKET_IN = CONTROL_EVENT_KINDS["packet_in"]
FLOW_ARRIVAL = CONTROL_EVENT_KINDS["flow_arrival"]
FLOW_FINISHED = CONTROL_EVENT_KINDS["flow_finished"]
ENTRY_REMOVED = CONTROL_EVENT_KINDS["entry_removed"]
FLOW_CROSSING = CONTROL_EVENT_KINDS["flow_crossing"]
REMOVAL_REASONS = ("idle_timeout", "hard_timeout", "deleted")


class Tick(NamedTuple):
    time: int
    timer: int


class PacketIn(NamedTuple):
    """A packet a switch sent up. `buffer` holds it until a packet-out or a drop."""

    time: int
    switch: int
    in_port: int
    buffer: int
    flow: int
    src: int
    dst: int
    size: int
    table_miss: bool


class FlowArrival(NamedTuple):
    time: int
    flow: int
    src: int
    dst: int
    size: int


class FlowFinished(NamedTuple):
    time: int
    flow: int


class EntryRemoved(NamedTuple):
    time: int
    switch: int
    entry: int
    reason: str
    packets: int
    bytes: int


class FlowCrossing(NamedTuple):
    """A watched switch forwarded the first packet of a flow's direction from `src`."""

    time: int
    switch: int
    flow: int
    src: int
    in_port: int


Event = Tick | PacketIn | FlowArrival | FlowFinished | EntryRemoved | FlowCrossing


def decode(columns: dict[str, np.ndarray]) -> list[Event]:
    """The batch's events in the order they happened."""
    events: list[Event] = []
    c = {name: col.tolist() for name, col in columns.items()}
    for i, kind in enumerate(c["kind"]):
        time = c["time_ps"][i]
        if kind == TICK:
            events.append(Tick(time, c["timer"][i]))
        elif kind == PACKET_IN:
            events.append(
                PacketIn(
                    time,
                    c["switch"][i],
                    c["in_port"][i],
                    c["buffer"][i],
                    c["flow"][i],
                    c["src"][i],
                    c["dst"][i],
                    c["size"][i],
                    bool(c["table_miss"][i]),
                )
            )
        elif kind == FLOW_ARRIVAL:
            events.append(FlowArrival(time, c["flow"][i], c["src"][i], c["dst"][i], c["bytes"][i]))
        elif kind == FLOW_CROSSING:
            events.append(
                FlowCrossing(time, c["switch"][i], c["flow"][i], c["src"][i], c["in_port"][i])
            )
        elif kind == FLOW_FINISHED:
            events.append(FlowFinished(time, c["flow"][i]))
        elif kind == ENTRY_REMOVED:
            events.append(
                EntryRemoved(
                    time,
                    c["switch"][i],
                    c["entry"][i],
                    REMOVAL_REASONS[c["reason"][i]],
                    c["packets"][i],
                    c["bytes"][i],
                )
            )
        else:
            raise ValueError(
                f"control event {i} has kind {kind}, which this version of isthmus.control "
                f"does not know (known: {dict(sorted(CONTROL_EVENT_KINDS.items()))}); the "
                "engine and the Python package are out of step: reinstall isthmus"
            )
    return events
