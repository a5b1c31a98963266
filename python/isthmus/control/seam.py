"""Where checked commands leave the control plane: the one place that knows how the
engine carries each kind out. Another back-end (switches over OpenFlow, say) answers
the same `send` with its own translation; the programs above never see which."""

from __future__ import annotations

from isthmus.control import commands


class EngineSeam:
    """Carries checked commands out in the simulation engine, `delay` ps from now."""

    def __init__(self, engine):
        self._engine = engine

    def send(self, delay: int, command: commands.Command) -> int | None:
        """Sends one checked command; an `InstallEntry` answers with the entry's id."""
        engine = self._engine
        match command:
            case commands.InstallEntry(switch, priority, fields):
                return engine.add_entry(delay, switch, priority, **fields)
            case commands.DeleteEntry(switch, entry):
                engine.delete_entry(delay, switch, entry)
            case commands.ModifyEntry(switch, entry, action):
                engine.modify_entry(delay, switch, entry, **action)
            case commands.RetirePath(flow, entries):
                engine.retire_path(delay, flow, list(entries))
            case commands.SetSelectGroup(switch, group, ports, weights):
                engine.set_select_group(delay, switch, group, list(ports), list(weights))
            case commands.SetFailoverGroup(switch, group, ports):
                engine.set_failover_group(delay, switch, group, list(ports))
            case commands.SetMeter(switch, meter, rate, burst):
                engine.set_meter(delay, switch, meter, rate, burst)
            case commands.SetFloodPorts(switch, ports):
                engine.set_flood_ports(delay, switch, list(ports))
            case commands.PacketOut(buffer, port):
                engine.packet_out(delay, buffer, port)
            case commands.FloodOut(buffer):
                engine.flood_out(delay, buffer)
            case commands.DropBuffer(buffer):
                engine.drop_buffer(delay, buffer)
            case commands.Hold(flow):
                engine.hold(delay, flow)
            case commands.Release(flow):
                engine.release(delay, flow)
            case commands.Pace(flow, rate):
                engine.pace(delay, flow, rate)
            case commands.PaceSubflow(flow, subflow, rate):
                engine.pace_subflow(delay, flow, subflow, rate)
            case commands.SetLink(link, up):
                engine.set_link(delay, link, up)
            case commands.ConfigureQueue(switch, port=port):
                engine.configure_queue(delay, switch, command.config(), port)
            case commands.SetAqm(switch, aqm, port, traffic_class):
                engine.set_aqm(delay, switch, dict(aqm), port, traffic_class)
            case commands.SetBcnPredictions(predictions):
                points = [(node, port, values) for (node, port), values in predictions.items()]
                engine.set_bcn_predictions(delay, points)
            case _:
                raise ValueError(
                    f"command must be one of isthmus.control.commands, got {command!r}"
                )
        return None
