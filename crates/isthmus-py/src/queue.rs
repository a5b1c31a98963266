//! A port's queue configuration (serialised, as it crossed in with the engine's
//! configuration or a command) and per-queue telemetry.

use crate::wire::to_json;
use crate::{dict_of, value_error, Engine};
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pymethods]
impl Engine {
    /// The queueing configuration of port `port` (a global port index), serialised.
    fn queue_config(&mut self, port: usize) -> PyResult<String> {
        self.inner.sync_partitions();
        let p = self
            .inner
            .ports
            .get(port)
            .ok_or_else(|| value_error(format!("port {port} does not exist")))?;
        to_json(&p.queue.config)
    }

    /// One row per (port, class): what waits, what passed, what was dropped or marked
    /// and why, total sojourn time, and flows waiting (FQ).
    #[pyo3(signature = (node=None))]
    fn queue_table<'py>(
        &mut self,
        py: Python<'py>,
        node: Option<u32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.inner.sync_partitions();
        let mut rows = Vec::new();
        let range = self.port_range(node)?;
        let first = range.start;
        for (i, p) in self.inner.ports[range].iter().enumerate() {
            let i = first + i;
            for (class, (c, (packets, bytes))) in p
                .queue
                .counters
                .iter()
                .zip(p.queue.class_lengths())
                .enumerate()
            {
                rows.push((
                    i as u32,
                    class as u8,
                    packets,
                    bytes,
                    c.clone(),
                    p.queue.active_flows() as u32,
                ));
            }
        }
        dict_of(
            py,
            vec![
                ("port_index", col!(py, rows, |r| r.0)),
                ("class", col!(py, rows, |r| r.1)),
                ("queue_packets", col!(py, rows, |r| r.2)),
                ("queue_bytes", col!(py, rows, |r| r.3)),
                ("enqueued", col!(py, rows, |r| r.4.enqueued)),
                ("dequeued", col!(py, rows, |r| r.4.dequeued)),
                ("dequeued_bytes", col!(py, rows, |r| r.4.dequeued_bytes)),
                ("buffer_drops", col!(py, rows, |r| r.4.buffer_drops)),
                ("aqm_drops", col!(py, rows, |r| r.4.aqm_drops)),
                ("aqm_marks", col!(py, rows, |r| r.4.aqm_marks)),
                ("sojourn_ps", col!(py, rows, |r| r.4.sojourn_ps)),
                ("max_packets", col!(py, rows, |r| r.4.max_packets)),
                ("active_flows", col!(py, rows, |r| r.5)),
            ],
        )
    }
}
