//! Queue configurations across the boundary: Python dicts in base units (bytes, ps,
//! ("packets" | "bytes", n) limits) to `QueueConfig` and back, and per-queue telemetry.

use crate::{dict_of, limit_from, value_error, Engine};
use isthmus_core::control::Command;
use isthmus_core::queue::{AqmConfig, QueueConfig, Rank, SchedulerConfig};
use isthmus_core::units::Limit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyDictMethods};

/// `d[key]` as a u32, or `default` when absent.
fn get_or(d: &Bound<'_, PyDict>, key: &str, default: u32) -> PyResult<u32> {
    match d.get_item(key)? {
        Some(_) => get(d, "queue", key),
        None => Ok(default),
    }
}

fn get<'py, T>(d: &Bound<'py, PyDict>, what: &str, key: &str) -> PyResult<T>
where
    T: FromPyObjectOwned<'py>,
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    match d.get_item(key)? {
        Some(v) => v.extract::<T>().map_err(|e| {
            let e: PyErr = e.into();
            value_error(format!("{what}.{key}: {e}"))
        }),
        None => Err(value_error(format!("{what} needs '{key}'"))),
    }
}

fn limit(d: &Bound<'_, PyDict>, what: &str, key: &str) -> PyResult<Limit> {
    let (kind, value): (String, u64) = get(d, what, key)?;
    limit_from(&kind, value)
}

fn limit_tuple(l: &Limit) -> (&'static str, u64) {
    match l {
        Limit::Packets(n) => ("packets", *n),
        Limit::Bytes(n) => ("bytes", *n),
    }
}

fn scheduler_from(d: &Bound<'_, PyDict>) -> PyResult<SchedulerConfig> {
    let kind: String = get(d, "scheduler", "kind")?;
    Ok(match kind.as_str() {
        "fifo" => SchedulerConfig::Fifo,
        "strict_priority" => SchedulerConfig::StrictPriority {
            classes: get(d, "scheduler", "classes")?,
        },
        "drr" => SchedulerConfig::Drr {
            quanta: get(d, "scheduler", "quanta")?,
        },
        "wfq" => SchedulerConfig::Wfq {
            weights: get(d, "scheduler", "weights")?,
        },
        "fq" => SchedulerConfig::Fq {
            quantum: get(d, "scheduler", "quantum")?,
        },
        "pifo" => {
            let rank: String = get(d, "scheduler", "rank")?;
            let rank = match rank.as_str() {
                "arrival" => Rank::Arrival,
                "remaining_size" => Rank::RemainingSize,
                "start_time" => Rank::StartTime,
                "deadline" => Rank::Deadline { budgets: get(d, "scheduler", "budgets")? },
                other => {
                    return Err(value_error(format!(
                        "scheduler.rank '{other}' is not one of arrival, remaining_size, start_time, deadline"
                    )))
                }
            };
            SchedulerConfig::Pifo { rank }
        }
        other => {
            return Err(value_error(format!(
                "scheduler.kind '{other}' is not one of fifo, strict_priority, drr, wfq, fq, pifo"
            )))
        }
    })
}

fn aqm_from(d: &Bound<'_, PyDict>) -> PyResult<AqmConfig> {
    let kind: String = get(d, "aqm", "kind")?;
    Ok(match kind.as_str() {
        "drop_tail" => AqmConfig::DropTail,
        "red" => AqmConfig::Red {
            min: limit(d, "aqm", "min")?,
            max: limit(d, "aqm", "max")?,
            max_p: get(d, "aqm", "max_p")?,
            weight: get(d, "aqm", "weight")?,
            gentle: get(d, "aqm", "gentle")?,
            ecn: get(d, "aqm", "ecn")?,
            hard_drop: get(d, "aqm", "hard_drop")?,
            wait: get(d, "aqm", "wait")?,
        },
        "ramp" => AqmConfig::Ramp {
            kmin: limit(d, "aqm", "kmin")?,
            kmax: limit(d, "aqm", "kmax")?,
            pmax: get(d, "aqm", "pmax")?,
        },
        "codel" => AqmConfig::CoDel {
            target: get(d, "aqm", "target")?,
            interval: get(d, "aqm", "interval")?,
            ecn: get(d, "aqm", "ecn")?,
        },
        "pie" => AqmConfig::Pie {
            target: get(d, "aqm", "target")?,
            t_update: get(d, "aqm", "t_update")?,
            alpha: get(d, "aqm", "alpha")?,
            beta: get(d, "aqm", "beta")?,
            max_burst: get(d, "aqm", "max_burst")?,
            ecn: get(d, "aqm", "ecn")?,
        },
        other => {
            return Err(value_error(format!(
                "aqm.kind '{other}' is not one of drop_tail, red, ramp, codel, pie"
            )))
        }
    })
}

/// A `QueueConfig` from its dict form, validated.
pub fn queue_config_from(d: &Bound<'_, PyDict>) -> PyResult<QueueConfig> {
    let scheduler: Bound<'_, PyDict> = get(d, "queue", "scheduler")?;
    let aqm: Bound<'_, PyDict> = get(d, "queue", "aqm")?;
    let config = QueueConfig {
        limit: limit(d, "queue", "limit")?,
        scheduler: scheduler_from(&scheduler)?,
        aqm: aqm_from(&aqm)?,
        class_aqm: match d.get_item("class_aqm")? {
            None => Vec::new(),
            Some(list) => list
                .extract::<Vec<Option<Bound<'_, PyDict>>>>()
                .map_err(|e| value_error(format!("queue.class_aqm: {e}")))?
                .iter()
                .map(|a| a.as_ref().map(aqm_from).transpose())
                .collect::<PyResult<Vec<_>>>()?,
        },
        device_queue: get_or(d, "device_queue", 0)?,
    };
    config.validate().map_err(value_error)?;
    Ok(config)
}

/// The dict form of a `QueueConfig`.
pub fn queue_config_to<'py>(py: Python<'py>, c: &QueueConfig) -> PyResult<Bound<'py, PyDict>> {
    let scheduler = PyDict::new(py);
    match &c.scheduler {
        SchedulerConfig::Fifo => scheduler.set_item("kind", "fifo")?,
        SchedulerConfig::StrictPriority { classes } => {
            scheduler.set_item("kind", "strict_priority")?;
            scheduler.set_item("classes", classes)?;
        }
        SchedulerConfig::Drr { quanta } => {
            scheduler.set_item("kind", "drr")?;
            scheduler.set_item("quanta", quanta.clone())?;
        }
        SchedulerConfig::Wfq { weights } => {
            scheduler.set_item("kind", "wfq")?;
            scheduler.set_item("weights", weights.clone())?;
        }
        SchedulerConfig::Fq { quantum } => {
            scheduler.set_item("kind", "fq")?;
            scheduler.set_item("quantum", quantum)?;
        }
        SchedulerConfig::Pifo { rank } => {
            scheduler.set_item("kind", "pifo")?;
            let name = match rank {
                Rank::Arrival => "arrival",
                Rank::RemainingSize => "remaining_size",
                Rank::StartTime => "start_time",
                Rank::Deadline { budgets } => {
                    scheduler.set_item("budgets", budgets.clone())?;
                    "deadline"
                }
            };
            scheduler.set_item("rank", name)?;
        }
    }
    let out = PyDict::new(py);
    out.set_item("limit", limit_tuple(&c.limit))?;
    out.set_item("scheduler", scheduler)?;
    out.set_item("aqm", aqm_to(py, &c.aqm)?)?;
    let per_class = c
        .class_aqm
        .iter()
        .map(|a| a.as_ref().map(|a| aqm_to(py, a)).transpose())
        .collect::<PyResult<Vec<_>>>()?;
    out.set_item("class_aqm", per_class)?;
    out.set_item("device_queue", c.device_queue)?;
    // Read-only: how many class queues the scheduler keeps (ignored when passed back).
    out.set_item("classes", c.classes())?;
    Ok(out)
}

/// The dict form of an `AqmConfig`.
fn aqm_to<'py>(py: Python<'py>, a: &AqmConfig) -> PyResult<Bound<'py, PyDict>> {
    let aqm = PyDict::new(py);
    match a {
        AqmConfig::DropTail => aqm.set_item("kind", "drop_tail")?,
        AqmConfig::Red {
            min,
            max,
            max_p,
            weight,
            gentle,
            ecn,
            hard_drop,
            wait,
        } => {
            aqm.set_item("kind", "red")?;
            aqm.set_item("hard_drop", hard_drop)?;
            aqm.set_item("wait", wait)?;
            aqm.set_item("min", limit_tuple(min))?;
            aqm.set_item("max", limit_tuple(max))?;
            aqm.set_item("max_p", max_p)?;
            aqm.set_item("weight", weight)?;
            aqm.set_item("gentle", gentle)?;
            aqm.set_item("ecn", ecn)?;
        }
        AqmConfig::Ramp { kmin, kmax, pmax } => {
            aqm.set_item("kind", "ramp")?;
            aqm.set_item("kmin", limit_tuple(kmin))?;
            aqm.set_item("kmax", limit_tuple(kmax))?;
            aqm.set_item("pmax", pmax)?;
        }
        AqmConfig::CoDel {
            target,
            interval,
            ecn,
        } => {
            aqm.set_item("kind", "codel")?;
            aqm.set_item("target", target)?;
            aqm.set_item("interval", interval)?;
            aqm.set_item("ecn", ecn)?;
        }
        AqmConfig::Pie {
            target,
            t_update,
            alpha,
            beta,
            max_burst,
            ecn,
        } => {
            aqm.set_item("kind", "pie")?;
            aqm.set_item("target", target)?;
            aqm.set_item("t_update", t_update)?;
            aqm.set_item("alpha", alpha)?;
            aqm.set_item("beta", beta)?;
            aqm.set_item("max_burst", max_burst)?;
            aqm.set_item("ecn", ecn)?;
        }
    }
    Ok(aqm)
}

#[pymethods]
impl Engine {
    /// Replaces the queueing of `port` of `switch` (every port if None) after `delay`.
    #[pyo3(signature = (delay, switch, config, port=None))]
    fn configure_queue(
        &mut self,
        delay: u64,
        switch: u32,
        config: &Bound<'_, PyDict>,
        port: Option<u16>,
    ) -> PyResult<()> {
        let config = queue_config_from(config)?;
        self.inner
            .issue(
                delay,
                Command::ConfigureQueue {
                    switch,
                    port,
                    config,
                },
            )
            .map_err(value_error)
    }

    /// Changes only the AQM of `port` of `switch` (every port if None), of every class
    /// (`class` None) or of class `class` alone, after `delay`.
    #[pyo3(signature = (delay, switch, aqm, port=None, class=None))]
    fn set_aqm(
        &mut self,
        delay: u64,
        switch: u32,
        aqm: &Bound<'_, PyDict>,
        port: Option<u16>,
        class: Option<u8>,
    ) -> PyResult<()> {
        let aqm = aqm_from(aqm)?;
        self.inner
            .issue(
                delay,
                Command::SetAqm {
                    switch,
                    port,
                    class,
                    aqm,
                },
            )
            .map_err(value_error)
    }

    /// The queueing configuration of port `port` (a global port index) as a dict.
    fn queue_config<'py>(&self, py: Python<'py>, port: usize) -> PyResult<Bound<'py, PyDict>> {
        let p = self
            .inner
            .ports
            .get(port)
            .ok_or_else(|| value_error(format!("port {port} does not exist")))?;
        queue_config_to(py, &p.queue.config)
    }

    /// One row per (port, class): what waits, what passed, what was dropped or marked
    /// and why, total sojourn time, and flows waiting (FQ).
    #[pyo3(signature = (node=None))]
    fn queue_table<'py>(&self, py: Python<'py>, node: Option<u32>) -> PyResult<Bound<'py, PyDict>> {
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
