//! CUBIC congestion avoidance (RFC 9438), the window growth Linux uses by default.
//!
//! 1. On a congestion event (a fast retransmit or a timeout) with window `cwnd`: remember
//!    `W_max` = cwnd (with fast convergence, cwnd·(1+β)/2 when cwnd fell short of the
//!    previous `W_max`), set ssthresh = cwnd·β (β = 0.7), and compute the time to regain
//!    `W_max`, K = ∛((W_max − ssthresh)/C), C = 0.4, windows in segments, times in s.
//! 2. In congestion avoidance, t seconds after the epoch began (the first ACK after the
//!    reduction), aim for W_cubic(t + RTT) = C·(t + RTT − K)³ + W_max, kept within
//!    [cwnd, 1.5·cwnd]: each ACK of `n` segments grows cwnd by (target − cwnd)/cwnd·n.
//! 3. Never grow slower than Reno would have (the "Reno-friendly" region): W_est starts
//!    at ssthresh and grows by α = 3(1−β)/(1+β) segments per window acknowledged; when
//!    W_cubic < W_est, cwnd follows W_est.
//!
//! 4. Slow start ends early, before it overruns the bottleneck, when the round-trip
//!    time rises (HyStart's delay test, as Linux's tcp_cubic runs it): per round of
//!    data, the least RTT of its first 8 ACKs; once the window is at least 16 segments
//!    and that exceeds the least RTT ever seen by an eighth of it (clamped to 4..16 ms),
//!    ssthresh = cwnd and congestion avoidance begins. HyStart's ACK-train test and
//!    HyStart++'s conservative slow start (RFC 9406) are left out.

use crate::units::Time;

/// W_max (segments), K (s) and the epoch's start, as tests and telemetry read them.
pub type CubicView = (f64, f64, Option<Time>);

/// CUBIC's constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cubic {
    pub c: f64,
    pub beta: f64,
    pub fast_convergence: bool,
}

impl Default for Cubic {
    /// RFC 9438 section 4 (and Linux's tcp_cubic): C = 0.4, β = 0.7, fast convergence.
    fn default() -> Self {
        Cubic {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
        }
    }
}

impl Cubic {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.c > 0.0 && self.c.is_finite() && self.beta > 0.0 && self.beta < 1.0) {
            return Err("cubic needs C > 0 and 0 < beta < 1".into());
        }
        Ok(())
    }
}

/// HyStart's delay test (Ha and Rhee 2011; Linux tcp_cubic, hystart_detect = delay).
#[derive(Clone, Debug, Default)]
pub struct HyStart {
    /// The round ends when this sequence offset is acknowledged.
    round_end: u64,
    round_min: Option<Time>,
    samples: u32,
    delay_min: Option<Time>,
}

const HYSTART_SAMPLES: u32 = 8;
const HYSTART_LOW_WINDOW: f64 = 16.0;

impl HyStart {
    /// An ACK in slow start with an RTT sample; `snd_una` / `snd_nxt` mark the round.
    /// Returns true when slow start should end now.
    pub fn on_ack(&mut self, rtt: Time, snd_una: u64, snd_nxt: u64, cwnd_segments: f64) -> bool {
        if snd_una >= self.round_end {
            self.round_end = snd_nxt;
            self.round_min = None;
            self.samples = 0;
        }
        self.delay_min = Some(self.delay_min.map_or(rtt, |d| d.min(rtt)));
        if self.samples >= HYSTART_SAMPLES {
            return false;
        }
        self.samples += 1;
        self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
        if self.samples < HYSTART_SAMPLES || cwnd_segments < HYSTART_LOW_WINDOW {
            return false;
        }
        let base = self.delay_min.expect("set above");
        let threshold = (base / 8).clamp(4 * crate::units::MS, 16 * crate::units::MS);
        self.round_min.is_some_and(|m| m >= base + threshold)
    }
}

/// One flow's CUBIC state; windows in segments.
#[derive(Clone, Debug, Default)]
pub struct CubicState {
    w_max: f64,
    k: f64,
    epoch: Option<Time>,
    w_est: f64,
}

impl CubicState {
    /// A congestion event at window `cwnd` bytes; returns the new ssthresh (bytes).
    pub fn on_congestion(&mut self, cfg: &Cubic, cwnd: u64, mss: u64) -> u64 {
        let w = cwnd as f64 / mss as f64;
        self.w_max = if cfg.fast_convergence && w < self.w_max {
            w * (1.0 + cfg.beta) / 2.0
        } else {
            w
        };
        let ssthresh = ((cwnd as f64 * cfg.beta) as u64).max(2 * mss);
        let reduced = ssthresh as f64 / mss as f64;
        self.k = ((self.w_max - reduced).max(0.0) / cfg.c).cbrt();
        self.epoch = None;
        self.w_est = reduced;
        ssthresh
    }

    /// The window (bytes) after an ACK of `acked` bytes in congestion avoidance at `now`,
    /// with smoothed RTT `srtt`.
    pub fn on_ack(
        &mut self,
        cfg: &Cubic,
        now: Time,
        srtt: Time,
        cwnd: u64,
        acked: u64,
        mss: u64,
    ) -> u64 {
        let w = cwnd as f64 / mss as f64;
        let epoch = *self.epoch.get_or_insert_with(|| {
            // An epoch with no loss before it (congestion avoidance from the start):
            // the current window is the plateau.
            if self.w_max < w {
                self.w_max = w;
                self.k = 0.0;
                self.w_est = w;
            }
            now
        });
        let t = (now - epoch) as f64 / 1e12;
        let rtt = srtt as f64 / 1e12;
        let target = (cfg.c * (t + rtt - self.k).powi(3) + self.w_max).clamp(w, 1.5 * w);
        let segments = acked as f64 / mss as f64;
        let alpha = 3.0 * (1.0 - cfg.beta) / (1.0 + cfg.beta);
        self.w_est += alpha * segments / w;
        let next = if target < self.w_est {
            self.w_est
        } else {
            w + (target - w) / w * segments
        };
        ((next * mss as f64) as u64).max(cwnd)
    }

    /// W_max, K (s) and the epoch's start: for tests and telemetry.
    pub fn state(&self) -> CubicView {
        (self.w_max, self.k, self.epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MS;

    #[test]
    fn the_window_follows_the_cubic_curve_and_plateaus_at_w_max() {
        let cfg = Cubic::default();
        let mss = 1000;
        let mut s = CubicState::default();
        let ssthresh = s.on_congestion(&cfg, 1000 * mss, mss);
        assert_eq!(ssthresh, 700 * mss);
        let (w_max, k, _) = s.state();
        assert_eq!(w_max, 1000.0);
        assert!((k - (300.0f64 / 0.4).cbrt()).abs() < 1e-9, "{k}");
        // ACK a window per 100 ms RTT for 20 s: cwnd tracks C (t - K)^3 + W_max. (At
        // a short RTT Reno's growth would overtake the curve: the Reno-friendly region.)
        let mut cwnd = ssthresh;
        let rtt = 100 * MS;
        for step in 1..=200u64 {
            let now = step * rtt;
            let per_ack = cwnd / 10;
            for _ in 0..10 {
                cwnd = s.on_ack(&cfg, now, rtt, cwnd, per_ack, mss);
            }
            let t = (now - rtt) as f64 / 1e12;
            let expected = cfg.c * (t - k).powi(3) + w_max;
            let got = cwnd as f64 / mss as f64;
            if t > 0.5 && expected < 1.3 * w_max {
                assert!(
                    (got - expected).abs() / expected < 0.03,
                    "t {t:.2} s: cwnd {got:.1} vs W(t) {expected:.1}"
                );
            }
        }
    }

    #[test]
    fn at_a_short_rtt_the_window_grows_at_least_as_fast_as_reno() {
        let cfg = Cubic::default();
        let mss = 1000;
        let mut s = CubicState::default();
        let mut cwnd = s.on_congestion(&cfg, 1000 * mss, mss);
        let rtt = MS;
        for step in 1..=3000u64 {
            cwnd = s.on_ack(&cfg, step * rtt, rtt, cwnd, cwnd, mss);
        }
        // 3000 windows acknowledged at alpha = 3(1 - beta)/(1 + beta) segments each.
        let reno = 700.0 + 3000.0 * 3.0 * 0.3 / 1.7;
        let got = cwnd as f64 / mss as f64;
        assert!((got - reno).abs() / reno < 0.02, "{got} vs {reno}");
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_fell_short() {
        let cfg = Cubic::default();
        let mut s = CubicState::default();
        s.on_congestion(&cfg, 1000, 1);
        s.on_congestion(&cfg, 800, 1);
        assert_eq!(s.state().0, 800.0 * 1.7 / 2.0);
    }
}
