"""Where checked commands leave the control plane: the one place that knows how the
engine carries each kind out. Another back-end (switches over OpenFlow, say) answers
the same `send` with its own translation; the programs above never see which."""

from __future__ import annotations

from isthmus.control.commands import (
    Command,
    ConfigureQueue,
    DeleteEntry,
    DropBuffer,
    FloodOut,
    Hold,
    InstallEntry,
    ModifyEntry,
    Pace,
    PaceSubflow,
    PacketOut,
    Release,
    RetirePath,
    SetAqm,
    SetBcnPredictions,
    SetFailoverGroup,
    SetFloodPorts,
    SetLink,
    SetMeter,
    SetSelectGroup,
)


class EngineSeam:
    """Carries checked commands out in the simulation engine, `delay` ps from now."""

    def __init__(self, engine):
        self._engine = engine

    def send(self, delay: int, command: Command) -> int | None:
        """Sends one checked command; an `InstallEntry` answers with the entry's id."""
        engine = self._engine
        match command:
            case InstallEntry(switch, priority, fields):
                return engine.add_entry(delay, switch, priority, **fields)
            case DeleteEntry(switch, entry):
                engine.delete_entry(delay, switch, entry)
            case ModifyEntry(switch, entry, action):
                engine.modify_entry(delay, switch, entry, **action)
            case RetirePath(flow, entries):
                engine.retire_path(delay, flow, list(entries))
            case SetSelectGroup(switch, group, ports, weights):
                engine.set_select_group(delay, switch, group, list(ports), list(weights))
            case SetFailoverGroup(switch, group, ports):
                engine.set_failover_group(delay, switch, group, list(ports))
            case SetMeter(switch, meter, rate, burst):
                engine.set_meter(delay, switch, meter, rate, burst)
            case SetFloodPorts(switch, ports):
                engine.set_flood_ports(delay, switch, list(ports))
            case PacketOut(buffer, port):
                engine.packet_out(delay, buffer, port)
            case FloodOut(buffer):
                engine.flood_out(delay, buffer)
            case DropBuffer(buffer):
                engine.drop_buffer(delay, buffer)
            case Hold(flow):
                engine.hold(delay, flow)
            case Release(flow):
                engine.release(delay, flow)
            case Pace(flow, rate):
                engine.pace(delay, flow, rate)
            case PaceSubflow(flow, subflow, rate):
                engine.pace_subflow(delay, flow, subflow, rate)
            case SetLink(link, up):
                engine.set_link(delay, link, up)
            case ConfigureQueue(switch, port=port):
                engine.configure_queue(delay, switch, command.config(), port)
            case SetAqm(switch, aqm, port, traffic_class):
                engine.set_aqm(delay, switch, dict(aqm), port, traffic_class)
            case SetBcnPredictions(predictions):
                points = [(node, port, values) for (node, port), values in predictions.items()]
                engine.set_bcn_predictions(delay, points)
            case _:
                raise ValueError(
                    f"command must be one of isthmus.control.commands, got {command!r}"
                )
        return None
