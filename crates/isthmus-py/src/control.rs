//! Bindings of the control seam: running until the control plane is needed, the event
//! batch as NumPy columns, and the commands (each after a delay, the control channel's
//! latency).

use crate::{column, dict_of, value_error, Engine};
use isthmus_core::control::{Command, ControlEvent};
use isthmus_core::flowtable::{FlowAction, FlowMatch, Forward, Group, Miss};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Event kinds as they appear in the `kind` column.
pub const TICK: u8 = 0;
pub const PACKET_IN: u8 = 1;
pub const FLOW_ARRIVAL: u8 = 2;
pub const FLOW_FINISHED: u8 = 3;
pub const ENTRY_REMOVED: u8 = 4;
pub const FLOW_CROSSING: u8 = 5;

#[derive(Default)]
struct EventColumns {
    kind: Vec<u8>,
    time: Vec<u64>,
    timer: Vec<u32>,
    switch: Vec<u32>,
    in_port: Vec<u16>,
    buffer: Vec<u32>,
    flow: Vec<u32>,
    src: Vec<u32>,
    dst: Vec<u32>,
    size: Vec<u32>,
    table_miss: Vec<bool>,
    entry: Vec<u32>,
    reason: Vec<u8>,
    packets: Vec<u64>,
    bytes: Vec<u64>,
}

impl EventColumns {
    fn push(&mut self, time: u64, event: ControlEvent) {
        let mut row = Row {
            time,
            ..Row::default()
        };
        match event {
            ControlEvent::Tick { timer } => {
                row.kind = TICK;
                row.timer = timer;
            }
            ControlEvent::PacketIn {
                switch,
                in_port,
                buffer,
                flow,
                src,
                dst,
                size,
                table_miss,
            } => {
                row = Row {
                    kind: PACKET_IN,
                    switch,
                    in_port,
                    buffer,
                    flow,
                    src,
                    dst,
                    size,
                    table_miss,
                    ..row
                };
            }
            ControlEvent::FlowArrival { flow } => {
                row = Row {
                    kind: FLOW_ARRIVAL,
                    flow,
                    ..row
                }
            }
            ControlEvent::FlowCrossing {
                switch,
                flow,
                src,
                in_port,
            } => {
                row = Row {
                    kind: FLOW_CROSSING,
                    switch,
                    flow,
                    src,
                    in_port,
                    ..row
                }
            }
            ControlEvent::FlowFinished { flow } => {
                row = Row {
                    kind: FLOW_FINISHED,
                    flow,
                    ..row
                }
            }
            ControlEvent::EntryRemoved {
                switch,
                entry,
                reason,
                packets,
                bytes,
            } => {
                row = Row {
                    kind: ENTRY_REMOVED,
                    switch,
                    entry,
                    reason: reason as u8,
                    packets,
                    bytes,
                    ..row
                };
            }
        }
        self.kind.push(row.kind);
        self.time.push(row.time);
        self.timer.push(row.timer);
        self.switch.push(row.switch);
        self.in_port.push(row.in_port);
        self.buffer.push(row.buffer);
        self.flow.push(row.flow);
        self.src.push(row.src);
        self.dst.push(row.dst);
        self.size.push(row.size);
        self.table_miss.push(row.table_miss);
        self.entry.push(row.entry);
        self.reason.push(row.reason);
        self.packets.push(row.packets);
        self.bytes.push(row.bytes);
    }
}

#[derive(Default)]
struct Row {
    kind: u8,
    time: u64,
    timer: u32,
    switch: u32,
    in_port: u16,
    buffer: u32,
    flow: u32,
    src: u32,
    dst: u32,
    size: u32,
    table_miss: bool,
    entry: u32,
    reason: u8,
    packets: u64,
    bytes: u64,
}

fn forward_of(
    output: Option<u16>,
    group: Option<u32>,
    drop: bool,
    controller: bool,
    flood: bool,
) -> PyResult<Forward> {
    let chosen = [output.is_some(), group.is_some(), drop, controller, flood];
    if chosen.iter().filter(|&&c| c).count() > 1 {
        return Err(value_error(
            "give at most one action: output, group, drop, controller or flood",
        ));
    }
    Ok(match (output, group) {
        (Some(p), _) => Forward::Output(p),
        (_, Some(g)) => Forward::Group(g),
        _ if drop => Forward::Drop,
        _ if controller => Forward::Controller,
        _ if flood => Forward::Flood,
        _ => Forward::Default,
    })
}

#[pymethods]
impl Engine {
    /// Starts or stops recording control events.
    fn attach_control(&mut self, attached: bool) {
        self.inner.attach_control(attached);
    }

    /// Runs until control events wait (True) or the clock reaches `limit`, or with
    /// `until_flows_finish` the last flow finishes (False). The GIL is released.
    fn run_until_control(&mut self, py: Python<'_>, limit: u64, until_flows_finish: bool) -> bool {
        let inner = &mut self.inner;
        py.detach(|| inner.run_until_control(limit, until_flows_finish))
    }

    /// The waiting control events as columns (kind: 0 tick, 1 packet-in, 2 flow
    /// arrival, 3 flow finished, 4 entry removed; fields that do not apply are 0).
    fn take_control_events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut c = EventColumns::default();
        for (time, event) in self.inner.take_control_events() {
            c.push(time, event);
        }
        // A flow arrival carries its flow's endpoints and size (in `bytes`), so the
        // control plane need not read the whole flows table to describe it.
        for i in 0..c.kind.len() {
            if c.kind[i] == FLOW_ARRIVAL {
                if let Some(record) = self.inner.flow_record(c.flow[i]) {
                    c.src[i] = record.src;
                    c.dst[i] = record.dst;
                    c.bytes[i] = record.size;
                }
            }
        }
        dict_of(
            py,
            vec![
                ("kind", column(py, c.kind)),
                ("time_ps", column(py, c.time)),
                ("timer", column(py, c.timer)),
                ("switch", column(py, c.switch)),
                ("in_port", column(py, c.in_port)),
                ("buffer", column(py, c.buffer)),
                ("flow", column(py, c.flow)),
                ("src", column(py, c.src)),
                ("dst", column(py, c.dst)),
                ("size", column(py, c.size)),
                ("table_miss", column(py, c.table_miss)),
                ("entry", column(py, c.entry)),
                ("reason", column(py, c.reason)),
                ("packets", column(py, c.packets)),
                ("bytes", column(py, c.bytes)),
            ],
        )
    }

    #[pyo3(signature = (first, period=None))]
    fn add_control_timer(&mut self, first: u64, period: Option<u64>) -> PyResult<u32> {
        self.inner
            .add_control_timer(first, period)
            .map_err(value_error)
    }

    fn cancel_control_timer(&mut self, timer: u32) -> PyResult<()> {
        self.inner.cancel_control_timer(timer).map_err(value_error)
    }

    /// A TCP flow's congestion window (bytes), and for CUBIC its W_max (segments), K (s)
    /// and epoch start (ps, None before the first ACK of the epoch); None for others.
    fn tcp_window(
        &self,
        flow: u32,
    ) -> Option<(u64, Option<isthmus_core::transport::cubic::CubicView>)> {
        self.inner.tcp_window(flow)
    }

    /// Timers that can still fire.
    fn live_control_timers(&self) -> usize {
        self.inner.live_control_timers()
    }

    /// Retires a migrated flow's old path after `delay`: the first (switch, entry) at
    /// once, the rest when the flow's packets on the path have left it.
    fn retire_path(&mut self, delay: u64, flow: u32, entries: Vec<(u32, u32)>) -> PyResult<()> {
        self.issue(delay, Command::RetirePath { flow, entries })
    }

    /// Starts per-flow counters (and crossing events) at `switch`.
    fn watch_flows(&mut self, switch: u32) -> PyResult<()> {
        self.inner.watch_flows(switch).map_err(value_error)
    }

    /// The flows a watched switch forwarded: flow, src, dst, in_port, out_port (the
    /// latest packet's), packets, bytes, first_ps, last_ps; by first packet seen.
    fn crossing_table<'py>(&self, py: Python<'py>, switch: u32) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.inner.crossings(switch).map_err(value_error)?;
        dict_of(
            py,
            vec![
                ("flow", col!(py, rows, |((f, _), _)| *f)),
                ("src", col!(py, rows, |((_, s), _)| *s)),
                ("dst", col!(py, rows, |(_, c)| c.dst)),
                ("in_port", col!(py, rows, |(_, c)| c.in_port)),
                ("out_port", col!(py, rows, |(_, c)| c.out_port)),
                ("packets", col!(py, rows, |(_, c)| c.packets)),
                ("bytes", col!(py, rows, |(_, c)| c.bytes)),
                ("first_ps", col!(py, rows, |(_, c)| c.first_seen)),
                ("last_ps", col!(py, rows, |(_, c)| c.last_seen)),
            ],
        )
    }

    /// Flow entries a switch holds now.
    fn entry_count(&self, switch: u32) -> PyResult<usize> {
        self.inner.entry_count(switch).map_err(value_error)
    }

    /// "route", "controller" or "drop": what `switch` does on a table miss.
    fn set_miss(&mut self, switch: u32, miss: &str) -> PyResult<()> {
        let miss = Miss::parse(miss).map_err(value_error)?;
        self.inner.set_miss(switch, miss).map_err(value_error)
    }

    /// Installs an entry after `delay`; returns its id.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (delay, switch, priority, in_port=None, src=None, dst=None, proto=None,
        src_port=None, dst_port=None, flow=None, output=None, group=None, drop=false,
        controller=false, flood=false, set_priority=None, meter=None, idle_timeout=None,
        hard_timeout=None))]
    fn add_entry(
        &mut self,
        delay: u64,
        switch: u32,
        priority: u16,
        in_port: Option<u16>,
        src: Option<u32>,
        dst: Option<u32>,
        proto: Option<u8>,
        src_port: Option<u16>,
        dst_port: Option<u16>,
        flow: Option<u32>,
        output: Option<u16>,
        group: Option<u32>,
        drop: bool,
        controller: bool,
        flood: bool,
        set_priority: Option<u8>,
        meter: Option<u32>,
        idle_timeout: Option<u64>,
        hard_timeout: Option<u64>,
    ) -> PyResult<u32> {
        let matcher = FlowMatch {
            in_port,
            src,
            dst,
            proto,
            src_port,
            dst_port,
            flow,
        };
        let action = FlowAction {
            forward: forward_of(output, group, drop, controller, flood)?,
            set_priority,
            meter,
        };
        self.inner
            .add_entry(
                delay,
                switch,
                priority,
                matcher,
                action,
                idle_timeout,
                hard_timeout,
            )
            .map_err(value_error)
    }

    /// Replaces an entry's action (output, group, drop, controller, flood or default).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (delay, switch, entry, output=None, group=None, drop=false, controller=false,
        flood=false, set_priority=None, meter=None))]
    fn modify_entry(
        &mut self,
        delay: u64,
        switch: u32,
        entry: u32,
        output: Option<u16>,
        group: Option<u32>,
        drop: bool,
        controller: bool,
        flood: bool,
        set_priority: Option<u8>,
        meter: Option<u32>,
    ) -> PyResult<()> {
        let action = FlowAction {
            forward: forward_of(output, group, drop, controller, flood)?,
            set_priority,
            meter,
        };
        self.issue(
            delay,
            Command::ModifyEntry {
                switch,
                entry,
                action,
            },
        )
    }

    fn delete_entry(&mut self, delay: u64, switch: u32, entry: u32) -> PyResult<()> {
        self.issue(delay, Command::DeleteEntry { switch, entry })
    }

    fn set_select_group(
        &mut self,
        delay: u64,
        switch: u32,
        group: u32,
        ports: Vec<u16>,
        weights: Vec<u32>,
    ) -> PyResult<()> {
        self.issue(
            delay,
            Command::SetGroup {
                switch,
                group,
                group_def: Group::Select { ports, weights },
            },
        )
    }

    fn set_failover_group(
        &mut self,
        delay: u64,
        switch: u32,
        group: u32,
        ports: Vec<u16>,
    ) -> PyResult<()> {
        self.issue(
            delay,
            Command::SetGroup {
                switch,
                group,
                group_def: Group::FastFailover { ports },
            },
        )
    }

    fn set_meter(
        &mut self,
        delay: u64,
        switch: u32,
        meter: u32,
        rate: u64,
        burst: u64,
    ) -> PyResult<()> {
        self.issue(
            delay,
            Command::SetMeter {
                switch,
                meter,
                rate,
                burst,
            },
        )
    }

    #[pyo3(signature = (delay, buffer, port=None))]
    fn packet_out(&mut self, delay: u64, buffer: u32, port: Option<u16>) -> PyResult<()> {
        self.issue(delay, Command::PacketOut { buffer, port })
    }

    fn flood_out(&mut self, delay: u64, buffer: u32) -> PyResult<()> {
        self.issue(delay, Command::FloodOut { buffer })
    }

    fn set_flood_ports(&mut self, delay: u64, switch: u32, ports: Vec<u16>) -> PyResult<()> {
        self.issue(delay, Command::SetFloodPorts { switch, ports })
    }

    fn drop_buffer(&mut self, delay: u64, buffer: u32) -> PyResult<()> {
        self.issue(delay, Command::DropBuffer { buffer })
    }

    fn hold(&mut self, delay: u64, flow: u32) -> PyResult<()> {
        self.issue(delay, Command::Hold { flow })
    }

    fn release(&mut self, delay: u64, flow: u32) -> PyResult<()> {
        self.issue(delay, Command::Release { flow })
    }

    #[pyo3(signature = (delay, flow, rate=None))]
    fn pace(&mut self, delay: u64, flow: u32, rate: Option<u64>) -> PyResult<()> {
        self.issue(delay, Command::Pace { flow, rate })
    }

    /// Paces subflow `subflow` of MPTCP connection `flow` (0: no new data; None: unpaced).
    #[pyo3(signature = (delay, flow, subflow, rate=None))]
    fn pace_subflow(
        &mut self,
        delay: u64,
        flow: u32,
        subflow: u8,
        rate: Option<u64>,
    ) -> PyResult<()> {
        self.issue(
            delay,
            Command::PaceSubflow {
                flow,
                subflow,
                rate,
            },
        )
    }

    /// Gives BCN congestion points (switch, port) predicted queue values (packets), or
    /// None to measure again, in one command.
    fn set_bcn_predictions(
        &mut self,
        delay: u64,
        points: Vec<(u32, u16, Option<Vec<f64>>)>,
    ) -> PyResult<()> {
        self.issue(delay, Command::SetBcnPredictions { points })
    }

    fn set_link(&mut self, delay: u64, link: u32, up: bool) -> PyResult<()> {
        self.issue(delay, Command::SetLink { link, up })
    }

    /// Every installed entry (with `switch`, that switch's only): switch, entry,
    /// priority, packets, bytes, installed_ps, last_used_ps.
    #[pyo3(signature = (switch=None))]
    fn entry_table<'py>(
        &self,
        py: Python<'py>,
        switch: Option<u32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rows: Vec<_> = match switch {
            None => self.inner.entries().collect(),
            Some(s) => self
                .inner
                .switch_entries(s)
                .map_err(value_error)?
                .into_iter()
                .map(|e| (s, e))
                .collect(),
        };
        dict_of(
            py,
            vec![
                ("switch", col!(py, rows, |(s, _)| *s)),
                ("entry", col!(py, rows, |(_, e)| e.id)),
                ("priority", col!(py, rows, |(_, e)| e.priority)),
                ("packets", col!(py, rows, |(_, e)| e.packets)),
                ("bytes", col!(py, rows, |(_, e)| e.bytes)),
                ("installed_ps", col!(py, rows, |(_, e)| e.installed)),
                ("last_used_ps", col!(py, rows, |(_, e)| e.last_used)),
            ],
        )
    }
}

impl Engine {
    fn issue(&mut self, delay: u64, cmd: Command) -> PyResult<()> {
        self.inner.issue(delay, cmd).map_err(value_error)
    }
}
