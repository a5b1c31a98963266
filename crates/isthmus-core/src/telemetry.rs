//! Telemetry: per-port counters (always on, a few integer adds per packet) and an
//! optional time series sampled at a fixed interval (off unless asked for).

use crate::units::Time;

/// Counters of one egress port (what arrived through the same link end is counted in the
/// port itself, beside the fields an arrival reads); those every packet moves first.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct PortCounters {
    pub tx_bytes: u64,
    pub tx_packets: u64,
    /// Sum over transmitted packets of the time they waited for the transmitter.
    pub wait_ps: u64,
    /// Time the transmitter spent serialising.
    pub busy_ps: u64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    pub ecn_marks: u64,
    pub drop_packets: u64,
    pub drop_bytes: u64,
    /// PFC, at a switch's ingress: pause and resume frames sent upstream, and the most
    /// bytes held that arrived through this port.
    pub pfc_pauses: u64,
    pub pfc_resumes: u64,
    pub pfc_max_ingress_bytes: u64,
}

/// Rows of per-port values taken every `interval`; each column is row-major
/// `[sample][port]`, so a whole series is one contiguous array.
#[derive(Clone, Debug)]
pub struct Sampler {
    pub interval: Time,
    pub num_ports: usize,
    pub times: Vec<Time>,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    pub tx_bytes: Vec<u64>,
    pub drop_packets: Vec<u64>,
    pub ecn_marks: Vec<u64>,
}

impl Sampler {
    pub fn new(interval: Time, num_ports: usize) -> Self {
        Sampler {
            interval,
            num_ports,
            times: Vec::new(),
            queue_packets: Vec::new(),
            queue_bytes: Vec::new(),
            tx_bytes: Vec::new(),
            drop_packets: Vec::new(),
            ecn_marks: Vec::new(),
        }
    }

    /// Appends one row: `queues` yields (packets, bytes) waiting at each port, in port order.
    pub fn record<'a>(
        &mut self,
        now: Time,
        queues: impl Iterator<Item = (u64, u64)>,
        counters: impl Iterator<Item = &'a PortCounters>,
    ) {
        self.times.push(now);
        for (packets, bytes) in queues {
            self.queue_packets.push(packets);
            self.queue_bytes.push(bytes);
        }
        for c in counters {
            self.tx_bytes.push(c.tx_bytes);
            self.drop_packets.push(c.drop_packets);
            self.ecn_marks.push(c.ecn_marks);
        }
    }
}
