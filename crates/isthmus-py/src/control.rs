//! Bindings of the control seam: running until the control plane is needed, the event
//! batch as NumPy columns, and the commands (each one value of the engine's `Command`,
//! after a delay, the control channel's latency).

use crate::wire::from_py;
use crate::{column, dict_of, value_error, Engine};
use isthmus_core::control::ControlEvent;
use isthmus_core::flowtable::Miss;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Event kinds as they appear in the `kind` column.
pub const TICK: u8 = 0;
pub const PACKET_IN: u8 = 1;
pub const FLOW_ARRIVAL: u8 = 2;
pub const FLOW_FINISHED: u8 = 3;
pub const ENTRY_REMOVED: u8 = 4;
pub const FLOW_CROSSING: u8 = 5;

/// The control-event batch's columns, each declared once: the row of one event, the
/// column vectors, pushing a row and handing the columns to Python follow from it.
macro_rules! event_columns {
    ($($field:ident: $ty:ty => $column:literal),* $(,)?) => {
        /// One event as a row of every column (fields that do not apply stay 0).
        #[derive(Default)]
        struct Row {
            $($field: $ty),*
        }

        #[derive(Default)]
        struct EventColumns {
            $($field: Vec<$ty>),*
        }

        impl EventColumns {
            fn push_row(&mut self, row: Row) {
                $(self.$field.push(row.$field);)*
            }

            fn into_dict(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
                dict_of(py, vec![$(($column, column(py, self.$field))),*])
            }
        }
    };
}

event_columns! {
    kind: u8 => "kind",
    time: u64 => "time_ps",
    timer: u32 => "timer",
    switch: u32 => "switch",
    in_port: u16 => "in_port",
    buffer: u32 => "buffer",
    flow: u32 => "flow",
    src: u32 => "src",
    dst: u32 => "dst",
    size: u32 => "size",
    table_miss: bool => "table_miss",
    entry: u32 => "entry",
    reason: u8 => "reason",
    packets: u64 => "packets",
    bytes: u64 => "bytes",
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
        self.push_row(row);
    }
}

#[pymethods]
impl Engine {
    /// Starts or stops recording control events.
    fn attach_control(&mut self, attached: bool) -> PyResult<()> {
        if attached && self.inner.split().is_some() {
            return Err(value_error(
                "a control plane cannot run in partitions yet: run it with one partition \
                 (threads = 1)",
            ));
        }
        self.inner.attach_control(attached);
        Ok(())
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
        c.into_dict(py)
    }

    #[pyo3(signature = (first, period=None))]
    fn add_control_timer(&mut self, first: u64, period: Option<u64>) -> PyResult<u32> {
        self.unchanged()?;
        self.inner
            .add_control_timer(first, period)
            .map_err(value_error)
    }

    fn cancel_control_timer(&mut self, timer: u32) -> PyResult<()> {
        self.unchanged()?;
        self.inner.cancel_control_timer(timer).map_err(value_error)
    }

    /// A TCP flow's congestion window (bytes), and for CUBIC its W_max (segments), K (s)
    /// and epoch start (ps, None before the first ACK of the epoch); None for others.
    fn tcp_window(
        &mut self,
        flow: u32,
    ) -> Option<(u64, Option<isthmus_core::transport::cubic::CubicView>)> {
        self.inner.sync_partitions();
        self.inner.tcp_window(flow)
    }

    /// Timers that can still fire.
    fn live_control_timers(&self) -> usize {
        self.inner.live_control_timers()
    }

    /// Starts per-flow counters (and crossing events) at `switch`.
    fn watch_flows(&mut self, switch: u32) -> PyResult<()> {
        self.unchanged()?;
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
        self.unchanged()?;
        let miss = Miss::parse(miss).map_err(value_error)?;
        self.inner.set_miss(switch, miss).map_err(value_error)
    }

    /// Carries out `command` (a `Command` as a dict tagged by kind, see `wire`) after
    /// `delay`; an "add_entry" answers with the id the engine gave the entry.
    fn command(&mut self, delay: u64, command: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        self.unchanged()?;
        self.inner
            .command(delay, from_py("command", command)?)
            .map_err(value_error)
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
