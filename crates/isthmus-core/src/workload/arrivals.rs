//! Arrival processes: when each sending host starts its flows.

use crate::rng::Rng;
use crate::units::{Rate, Time, SEC};

/// A log-normal duration given by its mean and shape (the standard deviation of its
/// logarithm), the form Benson et al. (IMC 2010) fit to datacenter edge traffic.
/// Crosses as (mean, sigma) or {mean, sigma}.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogNormal {
    pub mean: Time,
    pub sigma: f64,
}

impl LogNormal {
    fn draw(&self, rng: &mut Rng) -> f64 {
        rng.log_normal(self.mean as f64, self.sigma)
    }
}

/// How flows arrive; crosses as one value tagged by `kind` (times in ps).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ArrivalProcess {
    /// Poisson at `load` of each sender's access link, given the mean flow size.
    Poisson { load: f64 },
    /// Poisson whose network-wide rate is `flows_per_second[i]` during the i-th of as many
    /// equal parts of the arrival window, shared evenly by the senders (Diolkos's surges:
    /// 10 → 20 → 10 flows/s).
    Profile { flows_per_second: Vec<f64> },
    /// On/off: flows arrive `gap` apart during ON periods and not at all during OFF
    /// periods; all three log-normal. Each sender begins part-way through an OFF period
    /// (a uniform fraction of one drawn), so senders do not switch on together.
    OnOff {
        on: LogNormal,
        off: LogNormal,
        gap: LogNormal,
    },
    /// `count` flows from every sender at the window's start: a synchronized batch.
    Batch { count: u32 },
}

impl ArrivalProcess {
    pub fn validate(&self) -> Result<(), String> {
        let positive = |x: f64| x > 0.0 && x.is_finite();
        match self {
            ArrivalProcess::Poisson { load } if !positive(*load) => Err(format!(
                "load must be a positive fraction of the access link, got {load}"
            )),
            ArrivalProcess::Profile { flows_per_second } => {
                if flows_per_second.is_empty() {
                    return Err(
                        "flows_per_second needs at least one rate, e.g. [10, 20, 10]".into(),
                    );
                }
                match flows_per_second
                    .iter()
                    .find(|r| !(r.is_finite() && **r >= 0.0))
                {
                    Some(r) => Err(format!(
                        "flows_per_second must be non-negative numbers, got {r}"
                    )),
                    None => Ok(()),
                }
            }
            ArrivalProcess::OnOff { on, off, gap } => {
                for (name, d) in [("on", on), ("off", off), ("gap", gap)] {
                    if d.mean == 0 || !(d.sigma >= 0.0 && d.sigma.is_finite()) {
                        return Err(format!(
                            "{name} needs a positive mean and a non-negative sigma, got mean {} ps, sigma {}",
                            d.mean, d.sigma
                        ));
                    }
                }
                Ok(())
            }
            ArrivalProcess::Batch { count: 0 } => {
                Err("count must be at least 1 flow per sender".into())
            }
            _ => Ok(()),
        }
    }

    /// One sender's clock over [start, stop).
    pub(super) fn clock(&self, window: (Time, Time), sender: SenderContext) -> Clock<'_> {
        Clock {
            arrivals: self,
            window: (window.0 as f64, window.1 as f64),
            sender,
            t: window.0 as f64,
            on_until: None,
            phase: 0,
            emitted: 0,
        }
    }
}

/// What a sender's arrival rate depends on.
#[derive(Clone, Copy, Debug)]
pub(super) struct SenderContext {
    pub access_rate: Rate,
    pub mean_size: f64,
    pub senders: usize,
}

/// Produces one sender's arrival times in order.
pub(super) struct Clock<'a> {
    arrivals: &'a ArrivalProcess,
    window: (f64, f64),
    sender: SenderContext,
    t: f64,
    /// OnOff: the end of the current ON period (None before the first).
    on_until: Option<f64>,
    /// Profile: the phase the clock is in.
    phase: usize,
    emitted: u32,
}

impl Clock<'_> {
    /// The next arrival time, or None when the window is over.
    pub fn next(&mut self, rng: &mut Rng) -> Option<Time> {
        let (start, stop) = self.window;
        let t = match self.arrivals {
            ArrivalProcess::Poisson { load } => {
                let per_ps = load * self.sender.access_rate as f64
                    / (8.0 * self.sender.mean_size)
                    / SEC as f64;
                self.t += rng.exponential(1.0 / per_ps);
                self.t
            }
            ArrivalProcess::Profile { flows_per_second } => {
                let phase_len = (stop - start) / flows_per_second.len() as f64;
                loop {
                    // The phase is counted, not recomputed from the clock: at a phase's
                    // end, (end - start) / phase_len can round to just under the next
                    // index, which kept the clock in the old phase for ever.
                    let phase = self.phase;
                    let phase_end = start + phase_len * (phase + 1) as f64;
                    let per_ps = flows_per_second[phase] / self.sender.senders as f64 / SEC as f64;
                    // Memorylessness: a draw that passes the phase's end restarts there.
                    let next = if per_ps > 0.0 {
                        self.t + rng.exponential(1.0 / per_ps)
                    } else {
                        f64::INFINITY
                    };
                    if next < phase_end || phase + 1 == flows_per_second.len() {
                        self.t = next;
                        break next;
                    }
                    self.t = phase_end;
                    self.phase += 1;
                }
            }
            ArrivalProcess::OnOff { on, off, gap } => {
                match self.on_until {
                    None => {
                        self.t = start + rng.next_f64() * off.draw(rng);
                        self.on_until = Some(self.t + on.draw(rng));
                    }
                    Some(end) => {
                        self.t += gap.draw(rng);
                        if self.t >= end {
                            self.t = end + off.draw(rng);
                            self.on_until = Some(self.t + on.draw(rng));
                        }
                    }
                }
                self.t
            }
            ArrivalProcess::Batch { count } => {
                if self.emitted == *count {
                    return None;
                }
                self.emitted += 1;
                start
            }
        };
        (t < stop).then_some(t as Time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;
    use crate::units::{MS, US};

    fn times(a: &ArrivalProcess, window: (Time, Time), senders: usize) -> Vec<Time> {
        a.validate().unwrap();
        let ctx = SenderContext {
            access_rate: 10_000_000_000,
            mean_size: 100_000.0,
            senders,
        };
        let mut rng = Rng::stream(4, Stream::Workload, 0);
        let mut clock = a.clock(window, ctx);
        std::iter::from_fn(|| clock.next(&mut rng)).collect()
    }

    #[test]
    fn poisson_gaps_are_exponential_at_the_load_rate() {
        // 50% of 10 Gb/s in 100 KB flows: 6250 flows/s.
        let t = times(&ArrivalProcess::Poisson { load: 0.5 }, (0, 2 * SEC), 1);
        let rate = t.len() as f64 / 2.0;
        assert!((rate / 6250.0 - 1.0).abs() < 0.02, "{rate}");
        // An exponential's coefficient of variation is 1.
        let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / mean - 1.0).abs() < 0.03, "cv {}", sd / mean);
    }

    #[test]
    fn a_profile_follows_its_phases() {
        // 10 -> 20 -> 10 flows/s over three 100 s thirds, one of 4 senders: 250, 500, 250.
        let a = ArrivalProcess::Profile {
            flows_per_second: vec![10.0, 20.0, 10.0],
        };
        let t = times(&a, (0, 300 * SEC), 4);
        let per_third: Vec<usize> = (0..3)
            .map(|i| t.iter().filter(|&&x| x / (100 * SEC) == i).count())
            .collect();
        for (got, want) in per_third.iter().zip([250.0, 500.0, 250.0]) {
            // Poisson counts: within 4 standard deviations.
            assert!(
                (*got as f64 - want).abs() < 4.0 * f64::sqrt(want),
                "{per_third:?}"
            );
        }
    }

    #[test]
    fn a_profile_passes_a_phase_end_that_rounds_down() {
        // 27 phases over 3,370 s: (end of phase 4 - start) / phase length is
        // 4.999999999999999 in floating point, which once held the clock in phase 4 for
        // ever (Diolkos's long gathering never finished building its workload).
        let phase_len = 3_370.0 * SEC as f64 / 27.0;
        assert!(((phase_len * 5.0) / phase_len) < 5.0);
        let a = ArrivalProcess::Profile {
            flows_per_second: [5.0, 10.0, 5.0].repeat(9),
        };
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || sent.send(times(&a, (0, 3_370 * SEC), 1)));
        let t = received
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the clock stalls at a phase's end");
        let in_phase = |p: f64| {
            t.iter()
                .filter(|&&x| ((x as f64 / phase_len) as usize).min(26) == p as usize)
                .count() as f64
        };
        // Phase 4 (10 flows/s, ~1,248 flows) and phase 5 after it (5 flows/s) each keep
        // their own rate.
        for (phase, rate) in [(4.0, 10.0), (5.0, 5.0)] {
            let want = rate * phase_len / SEC as f64;
            let got = in_phase(phase);
            assert!(
                (got - want).abs() < 4.0 * want.sqrt(),
                "phase {phase}: {got}"
            );
        }
        assert!(*t.last().unwrap() > 3_300 * SEC);
    }

    #[test]
    fn on_off_sources_are_silent_when_off_and_keep_their_duty_cycle() {
        let ln = |mean, sigma| LogNormal { mean, sigma };
        let a = ArrivalProcess::OnOff {
            on: ln(10 * MS, 1.0),
            off: ln(30 * MS, 0.1),
            gap: ln(100 * US, 0.5),
        };
        let t = times(&a, (0, 200 * SEC), 1);
        // Gaps inside ON periods average 100 us; ON is a quarter of the time.
        let expected = 200.0 * SEC as f64 * 0.25 / (100 * US) as f64;
        assert!(
            (t.len() as f64 / expected - 1.0).abs() < 0.1,
            "{} vs {expected}",
            t.len()
        );
        let gaps: Vec<Time> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let long = gaps.iter().filter(|&&g| g > 5 * MS).count();
        // Every OFF period (all near 30 ms with sigma 0.1) shows as one long gap: about
        // 200 s / 40 ms of them.
        assert!((long as f64 / 5000.0 - 1.0).abs() < 0.1, "{long}");
    }

    #[test]
    fn a_batch_starts_together_and_bad_arrivals_are_named() {
        assert_eq!(
            times(&ArrivalProcess::Batch { count: 3 }, (5, 10), 1),
            vec![5, 5, 5]
        );
        assert!(ArrivalProcess::Poisson { load: 0.0 }
            .validate()
            .unwrap_err()
            .contains("load"));
        assert!(ArrivalProcess::Profile {
            flows_per_second: vec![]
        }
        .validate()
        .unwrap_err()
        .contains("flows_per_second"));
        assert!(ArrivalProcess::Batch { count: 0 }
            .validate()
            .unwrap_err()
            .contains("count"));
    }
}
