"""Where checked commands leave the control plane: the one place that knows how the
engine carries each kind out. Each becomes the engine's own `Command`, one value tagged
by kind (`isthmus.wire`). Another back-end (switches over OpenFlow, say) answers the same
`send` with its own translation; the programs above never see which."""

from __future__ import annotations

from isthmus.control import commands
from isthmus.simulation import entry_action, entry_command


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


class EngineSeam:
    """Carries checked commands out in the simulation engine, `delay` ps from now."""

    def __init__(self, engine):
        self._engine = engine

    def send(self, delay: int, command: commands.Command) -> int | None:
        """Sends one checked command; an `InstallEntry` answers with the entry's id."""
        return self._engine.command(delay, engine_command(command))
