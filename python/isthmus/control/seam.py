"""Where the control plane meets what it controls: checked commands go out through a
`Seam`, and time, timers, events and counters come back through it. The programs above
never see which back-end answers.

`EngineSeam` is the simulation's: each command becomes the engine's own `Command`, one
value tagged by kind (`isthmus.wire`), and time is simulated time. The emulation's
(`isthmus.emulate`) answers the same calls with OpenFlow messages and the wall clock."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from isthmus.control import commands
from isthmus.control.events import Event, decode
from isthmus.simulation import Simulation, entry_action, entry_command
from isthmus.topology import Topology


def engine_command(command: commands.Command) -> dict:
    """A checked command in the engine's form (`isthmus_core::control::Command`)."""
    match command:
        case commands.InstallEntry(switch, priority, fields):
            return entry_command(switch, priority, dict(fields))
        case commands.DeleteEntry(switch, entry):
            return {"kind": "delete_entry", "switch": switch, "entry": entry}
        case commands.ModifyEntry(switch, entry, action):
            return {
                "kind": "modify_entry",
                "switch": switch,
                "entry": entry,
                "action": entry_action(dict(action)),
            }
        case commands.RetirePath(flow, entries):
            return {"kind": "retire_path", "flow": flow, "entries": list(entries)}
        case commands.SetSelectGroup(switch, group, ports, weights):
            select = {"kind": "select", "ports": list(ports), "weights": list(weights)}
            return {"kind": "set_group", "switch": switch, "group": group, "group_def": select}
        case commands.SetFailoverGroup(switch, group, ports):
            failover = {"kind": "fast_failover", "ports": list(ports)}
            return {"kind": "set_group", "switch": switch, "group": group, "group_def": failover}
        case commands.SetMeter(switch, meter, rate, burst):
            return {
                "kind": "set_meter",
                "switch": switch,
                "meter": meter,
                "rate": rate,
                "burst": burst,
            }
        case commands.SetFloodPorts(switch, ports):
            return {"kind": "set_flood_ports", "switch": switch, "ports": list(ports)}
        case commands.PacketOut(buffer, port):
            return {"kind": "packet_out", "buffer": buffer, "port": port}
        case commands.FloodOut(buffer):
            return {"kind": "flood_out", "buffer": buffer}
        case commands.DropBuffer(buffer):
            return {"kind": "drop_buffer", "buffer": buffer}
        case commands.Hold(flow):
            return {"kind": "hold", "flow": flow}
        case commands.Release(flow):
            return {"kind": "release", "flow": flow}
        case commands.Pace(flow, rate):
            return {"kind": "pace", "flow": flow, "rate": rate}
        case commands.PaceSubflow(flow, subflow, rate):
            return {"kind": "pace_subflow", "flow": flow, "subflow": subflow, "rate": rate}
        case commands.SetLink(link, up):
            return {"kind": "set_link", "link": link, "up": up}
        case commands.ConfigureQueue(switch, port=port):
            return {
                "kind": "configure_queue",
                "switch": switch,
                "port": port,
                "config": command.config(),
            }
        case commands.SetAqm(switch, aqm, port, traffic_class):
            return {
                "kind": "set_aqm",
                "switch": switch,
                "port": port,
                "class": traffic_class,
                "aqm": dict(aqm),
            }
        case commands.SetBcnPredictions(predictions):
            points = [[node, port, values] for (node, port), values in predictions.items()]
            return {"kind": "set_bcn_predictions", "points": points}
    raise ValueError(f"command must be one of isthmus.control.commands, got {command!r}")


@dataclass(frozen=True)
class RunRequest:
    """A run as `Simulation.run` takes one: to `until` (ps, or a duration with its
    unit), in `chunks` equal steps with `on_progress(now)` after each, ending early once
    every flow has finished if `stop_when_flows_finish`."""

    until: int | str
    stop_when_flows_finish: bool
    chunks: int
    on_progress: Callable[[int], None] | None


ControlEvents = Callable[[list[Event]], None]
"""Where a seam hands each batch of control events, in the order they happened."""


class Seam(ABC):
    """What a control plane drives: one network, simulated or real. Times are ps."""

    topology: Topology
    seed: int
    """The run's seed, from which programs draw what they draw at random."""

    @property
    @abstractmethod
    def now(self) -> int:
        """The network's clock."""

    @abstractmethod
    def send(self, delay: int, command: commands.Command) -> int | None:
        """Carries one checked command out `delay` from now; an `InstallEntry` answers
        with the entry's id."""

    @abstractmethod
    def add_timer(self, first: int, period: int | None) -> int:
        """A timer firing at `first` (and every `period` after): a `Tick` event."""

    @abstractmethod
    def cancel_timer(self, timer: int) -> None: ...

    @abstractmethod
    def set_miss(self, switch: int, miss: str) -> None:
        """What node `switch` does on a table miss, at once."""

    @abstractmethod
    def run(self, request: RunRequest, start: Callable[[], None], events: ControlEvents) -> bool:
        """Runs the network as `request` asks with the plane in the loop: `start()` once
        the network is ready, then every batch of control events to `events`. Returns
        whether every flow has finished."""

    @abstractmethod
    def unsupported(self, what: str) -> ValueError:
        """The error for a program that reads what this network cannot show."""

    # Counters, each as a table of columns (see `Simulation.ports` and the rest).

    @abstractmethod
    def port_rows(self, switch: int | None = None) -> dict[str, np.ndarray]: ...

    @abstractmethod
    def entry_rows(self, switch: int | None = None) -> dict[str, np.ndarray]: ...

    @abstractmethod
    def flow_rows(self) -> dict[str, np.ndarray]: ...

    @abstractmethod
    def watch_flows(self, switch: int) -> None:
        """Starts per-flow counters at node `switch`, and a `FlowCrossing` event for each
        flow direction it forwards for the first time."""

    @abstractmethod
    def crossing_rows(self, switch: int) -> dict[str, np.ndarray]:
        """What watched node `switch` forwarded of each flow direction: flow, src, dst,
        in_port, out_port (of its latest packets), packets, bytes, first_ps, last_ps;
        by first seen."""


class EngineSeam(Seam):
    """The simulation's seam: commands carried out by the engine, `delay` ps from now,
    in simulated time."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.topology = sim.topology
        self.seed = sim.seed
        self._engine = sim._engine

    @property
    def now(self) -> int:
        return self._engine.now

    def send(self, delay: int, command: commands.Command) -> int | None:
        """Sends one checked command; an `InstallEntry` answers with the entry's id."""
        return self._engine.command(delay, engine_command(command))

    def add_timer(self, first: int, period: int | None) -> int:
        return self._engine.add_control_timer(first, period)

    def cancel_timer(self, timer: int) -> None:
        self._engine.cancel_control_timer(timer)

    def set_miss(self, switch: int, miss: str) -> None:
        self._engine.set_miss(switch, miss)

    def run(self, request: RunRequest, start: Callable[[], None], events: ControlEvents) -> bool:
        engine = self._engine
        stop_when_flows_finish, chunks = request.stop_when_flows_finish, request.chunks
        on_progress = request.on_progress
        end = self.sim._checked_run(request.until, stop_when_flows_finish, chunks, on_progress)
        begin = engine.now
        engine.attach_control(True)
        try:
            start()
            for i in range(1, chunks + 1):
                target = begin + (end - begin) * i // chunks
                while engine.run_until_control(target, stop_when_flows_finish):
                    events(decode(engine.take_control_events()))
                if on_progress is not None:
                    on_progress(engine.now)
                if stop_when_flows_finish and engine.unfinished_flows == 0:
                    break
        finally:
            engine.attach_control(False)
        return engine.unfinished_flows == 0

    def unsupported(self, what: str) -> ValueError:
        return ValueError(f"the simulation has no {what}")

    def port_rows(self, switch: int | None = None) -> dict[str, np.ndarray]:
        return self.sim.ports(switch)

    def entry_rows(self, switch: int | None = None) -> dict[str, np.ndarray]:
        return self.sim.entries() if switch is None else self._engine.entry_table(switch)

    def flow_rows(self) -> dict[str, np.ndarray]:
        return self.sim.flows()

    def watch_flows(self, switch: int) -> None:
        self._engine.watch_flows(switch)

    def crossing_rows(self, switch: int) -> dict[str, np.ndarray]:
        return self._engine.crossing_table(switch)
