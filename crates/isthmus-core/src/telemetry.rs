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

/// How many sub-buckets split each power of two of a [`WaitHistogram`]: 16 keeps a
/// bucket within 1/16 of its lower bound, so a quantile read at a bucket's midpoint is
/// within 3.2 % of the true value.
const SUB_BITS: u32 = 4;
const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// Values below this have a bucket each (exact); above it, 16 buckets per octave.
const EXACT: u64 = 2 * SUB_BUCKETS as u64;
/// Buckets for every u64: 32 exact ones, then 16 per octave from 2^5 to 2^63.
pub const WAIT_BUCKETS: usize = (65 - SUB_BITS as usize) * SUB_BUCKETS;

/// The distribution of the time packets waited for a transmitter, one count per packet
/// and hop, in log-linear buckets (fixed relative width, like an HDR histogram): the
/// mean per hop is exact from `PortCounters::wait_ps`, tail quantiles come from here.
/// One array per engine, not per port, so it stays in the first-level cache.
#[derive(Clone, Debug)]
pub struct WaitHistogram {
    pub counts: Vec<u64>,
}

impl Default for WaitHistogram {
    fn default() -> Self {
        WaitHistogram {
            counts: vec![0; WAIT_BUCKETS],
        }
    }
}

impl WaitHistogram {
    /// The bucket holding `wait` (ps).
    #[inline]
    pub fn bucket(wait: u64) -> usize {
        if wait < EXACT {
            return wait as usize;
        }
        let shift = 63 - wait.leading_zeros() - SUB_BITS;
        // `wait >> shift` is in [16, 32): the octave's sub-bucket, offset by 16.
        (shift as usize + 1) * SUB_BUCKETS + (wait >> shift) as usize - SUB_BUCKETS
    }

    /// The values bucket `index` holds: [lower, upper).
    pub fn bounds(index: usize) -> (u64, u64) {
        if index < EXACT as usize {
            return (index as u64, index as u64 + 1);
        }
        let shift = (index / SUB_BUCKETS - 1) as u32;
        let mantissa = (SUB_BUCKETS + index % SUB_BUCKETS) as u64;
        // The last bucket's upper end, 2^64, is held as u64::MAX.
        let upper = ((mantissa as u128 + 1) << shift).min(u64::MAX as u128) as u64;
        (mantissa << shift, upper)
    }

    #[inline]
    pub fn record(&mut self, wait: u64) {
        self.counts[Self::bucket(wait)] += 1;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds another histogram's counts (a partition's, into the whole run's).
    pub fn add(&mut self, other: &WaitHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
    }

    /// The `q`-quantile (0 <= q <= 1) of the recorded waits, read at the midpoint of
    /// the bucket where the cumulative count first reaches `q` of the total (exact
    /// below 32 ps); None if nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        // The rank of the q-quantile among `total` sorted values, counted from 1.
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let (lower, upper) = Self::bounds(index);
                return Some(if upper - lower == 1 {
                    lower as f64
                } else {
                    (lower as f64 + upper as f64) / 2.0
                });
            }
        }
        unreachable!("the rank is at most the total")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_every_value_in_order() {
        let mut expected_lower = 0;
        for index in 0..WAIT_BUCKETS {
            let (lower, upper) = WaitHistogram::bounds(index);
            assert_eq!(
                lower, expected_lower,
                "bucket {index} starts where the last ended"
            );
            assert!(upper > lower);
            assert_eq!(WaitHistogram::bucket(lower), index);
            assert_eq!(WaitHistogram::bucket(upper - 1), index);
            // Relative width at most 1/16 of the lower bound above the exact range.
            if lower >= EXACT {
                assert!((upper - lower) * 16 <= lower, "bucket {index} too wide");
            }
            expected_lower = upper;
        }
        assert_eq!(WaitHistogram::bucket(u64::MAX), WAIT_BUCKETS - 1);
    }

    #[test]
    fn quantiles_match_sorted_values_within_the_bucket_width() {
        // Waits 0, 1 us, ..., 999 us, as a queue draining 1 us packets would give.
        let mut h = WaitHistogram::default();
        for k in 0..1000u64 {
            h.record(k * 1_000_000);
        }
        assert_eq!(h.total(), 1000);
        assert_eq!(h.quantile(0.0), Some(0.0));
        for (q, exact) in [(0.5, 499e6), (0.99, 989e6), (1.0, 999e6)] {
            let got = h.quantile(q).unwrap();
            assert!(
                (got - exact).abs() <= exact / 32.0,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(WaitHistogram::default().quantile(0.99), None);
    }
}
