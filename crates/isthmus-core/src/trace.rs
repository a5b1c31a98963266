//! Trace-driven links: a link whose capacity varies over time as a recorded trace says,
//! in the mahimahi format (Netravali et al., USENIX ATC 2015): one timestamp in
//! milliseconds per opportunity for one packet of up to 1500 bytes to leave, repeating
//! with the last timestamp as the period.

use crate::units::{Time, MS};

#[derive(Clone, Debug)]
pub struct LinkTrace {
    /// Opportunity times within one period, sorted.
    opportunities: Vec<Time>,
    period: Time,
    /// Start of the period the cursor is in.
    base: Time,
    /// The next unused opportunity of that period.
    cursor: usize,
}

impl LinkTrace {
    /// A trace from its millisecond timestamps.
    pub fn from_millis(ms: &[u64]) -> Result<LinkTrace, String> {
        if ms.is_empty() {
            return Err("a link trace needs at least one delivery opportunity".into());
        }
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!(
                "link trace line {}: timestamps must not decrease ({} after {})",
                i + 2,
                ms[i + 1],
                ms[i]
            ));
        }
        let period = *ms.last().expect("non-empty") * MS;
        if period == 0 {
            return Err("a link trace's last timestamp must be positive (it is the period)".into());
        }
        Ok(LinkTrace {
            opportunities: ms.iter().map(|&m| m * MS).collect(),
            period,
            base: 0,
            cursor: 0,
        })
    }

    /// Takes the first unused opportunity at or after `t` and returns its time.
    pub fn take(&mut self, t: Time) -> Time {
        if t >= self.base + self.period {
            // Idle through whole periods: jump to the one containing `t`.
            self.base += (t - self.base) / self.period * self.period;
            self.cursor = 0;
        }
        let offset = t.saturating_sub(self.base);
        let first_fitting = self.opportunities.partition_point(|&o| o < offset);
        self.cursor = self.cursor.max(first_fitting);
        if self.cursor == self.opportunities.len() {
            self.base += self.period;
            self.cursor = 0;
        }
        let at = self.base + self.opportunities[self.cursor];
        self.cursor += 1;
        at
    }

    /// Opportunities in [from, to).
    pub fn count_between(&self, from: Time, to: Time) -> u64 {
        let in_periods = |t: Time| {
            let whole = t / self.period;
            let rest = t % self.period;
            whole * self.opportunities.len() as u64
                + self.opportunities.partition_point(|&o| o < rest) as u64
        };
        in_periods(to) - in_periods(from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opportunities_are_used_once_and_the_trace_repeats() {
        let mut t = LinkTrace::from_millis(&[1, 1, 3, 4]).unwrap();
        let taken: Vec<Time> = (0..6).map(|_| t.take(0)).collect();
        assert_eq!(taken, vec![MS, MS, 3 * MS, 4 * MS, 5 * MS, 5 * MS]);
        // After a long idle time the next opportunity is the first one not before it.
        assert_eq!(t.take(42 * MS + 1), 43 * MS);
        assert_eq!(t.count_between(0, 8 * MS), 8);
    }

    #[test]
    fn malformed_traces_are_refused() {
        assert!(LinkTrace::from_millis(&[]).is_err());
        assert!(LinkTrace::from_millis(&[5, 3])
            .unwrap_err()
            .contains("line 2"));
        assert!(LinkTrace::from_millis(&[0]).is_err());
    }
}
