//! Active queue management: what to do with a packet arriving at (or leaving) one queue.
//!
//! - drop-tail: nothing beyond the buffer limit;
//! - RED (Floyd & Jacobson 1993): an EWMA of the queue; between `min` and `max` mark or
//!   drop with probability max_p·(avg − min)/(max − min), spread out by the count since
//!   the last mark; above `max` drop (gentle: ramp on to 1 at 2·max);
//! - ramp: the DCTCP / DCQCN marker on the instantaneous queue: nothing below `kmin`,
//!   probability pmax·(q − kmin)/(kmax − kmin) up to `kmax`, always above; a step
//!   when kmin = kmax;
//! - CoDel (RFC 8289): acts when packets leave, once their sojourn time has stayed above
//!   `target` for an `interval`, then at intervals shrinking as 1/√count;
//! - PIE (RFC 8033): a drop probability steered every `t_update` by the queueing delay's
//!   distance from `target` and its trend, applied as packets arrive.
//!
//! With `ecn`, an ECN-capable packet is marked instead of dropped (RED's forced region
//! and a full buffer still drop).

use crate::rng::Rng;
use crate::units::{Limit, Time, MS};

/// Which packets a queue drops or marks, and when; one instance runs per queue.
// Serialised tagged by `kind`: "drop_tail", "red", "ramp", "codel", "pie"; times in ps.
// Each field's meaning, unit, default and valid range are declared here, once: Python's
// models, the scenario schema and docs/parameters.md are derived from them
// (`crate::declared`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AqmConfig {
    /// Nothing beyond the buffer limit.
    DropTail,
    /// RED (Floyd & Jacobson 1993) on an EWMA of the queue.
    Red {
        /// Average queue above which packets start to be marked or dropped.
        min: Limit,
        /// Average queue above which every packet is dropped (from 2 max when gentle).
        max: Limit,
        /// Marking probability reached at `max`.
        #[serde(default = "red_max_p")]
        #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
        max_p: f64,
        /// Weight of each new sample in the queue's average (w_q).
        #[serde(default = "red_weight")]
        #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
        weight: f64,
        /// Between max and 2 max, ramp the probability on from max_p to 1 instead of
        /// dropping everything.
        #[serde(default)]
        gentle: bool,
        /// Mark ECN-capable packets instead of dropping them.
        #[serde(default)]
        ecn: bool,
        /// Above the forced-drop threshold, drop ECN-capable packets too (ns-3's
        /// UseHardDrop); off, they are marked there as well.
        #[serde(default = "on")]
        hard_drop: bool,
        /// Space marks and drops out more evenly (ns-3's Wait): p_a = p_b / (2 - count
        /// p_b), and none until count p_b reaches 1; off, p_a = p_b / (1 - count p_b).
        #[serde(default)]
        wait: bool,
    },
    /// Marking probability rising from 0 at kmin to pmax at kmax on the instantaneous
    /// queue, 1 above (DCQCN's marker; a step, DCTCP's, when kmin = kmax).
    Ramp {
        /// Queue above which marking starts.
        kmin: Limit,
        /// Queue at which the probability reaches pmax (every packet is marked above).
        kmax: Limit,
        /// Marking probability at kmax.
        #[serde(default = "one")]
        #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
        pmax: f64,
    },
    /// CoDel (RFC 8289), acting as packets leave.
    #[serde(rename = "codel")]
    CoDel {
        /// Sojourn time CoDel keeps the queue at.
        #[serde(default = "codel_target")]
        #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
        target: Time,
        /// How long the sojourn time must stay above target before CoDel acts.
        #[serde(default = "codel_interval")]
        #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
        interval: Time,
        /// Mark ECN-capable packets instead of dropping them.
        #[serde(default)]
        ecn: bool,
    },
    /// PIE (RFC 8033), deciding as packets arrive.
    Pie {
        /// Queueing delay PIE steers towards.
        #[serde(default = "pie_target")]
        #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
        target: Time,
        /// Interval between updates of the drop probability.
        #[serde(default = "pie_t_update")]
        #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
        t_update: Time,
        /// Weight of the delay's distance from target in each update (per second).
        #[serde(default = "pie_alpha")]
        #[schemars(extend("exclusiveMinimum" = 0.0))]
        alpha: f64,
        /// Weight of the delay's trend in each update (per second).
        #[serde(default = "pie_beta")]
        #[schemars(extend("exclusiveMinimum" = 0.0))]
        beta: f64,
        /// Burst PIE lets through before it starts dropping.
        #[serde(default = "pie_max_burst")]
        #[schemars(extend("unit" = "ps"))]
        max_burst: Time,
        /// Mark ECN-capable packets instead of dropping them.
        #[serde(default)]
        ecn: bool,
    },
}

// The defaults, each written once: RED's customary maximum marking probability and
// queue-average weight (Floyd & Jacobson 1993 suggest max_p 0.1 and w_q 0.002), RFC
// 8289's CoDel and RFC 8033's PIE.
fn red_max_p() -> f64 {
    0.1
}
fn red_weight() -> f64 {
    0.002
}
fn on() -> bool {
    true
}
fn one() -> f64 {
    1.0
}
fn codel_target() -> Time {
    5 * MS
}
fn codel_interval() -> Time {
    100 * MS
}
fn pie_target() -> Time {
    15 * MS
}
fn pie_t_update() -> Time {
    15 * MS
}
fn pie_alpha() -> f64 {
    0.125
}
fn pie_beta() -> f64 {
    1.25
}
fn pie_max_burst() -> Time {
    150 * MS
}

impl AqmConfig {
    /// The DCTCP marker: mark when more than `k` wait, counting the arrival.
    pub fn step(k: Limit) -> AqmConfig {
        AqmConfig::Ramp {
            kmin: k,
            kmax: k,
            pmax: 1.0,
        }
    }

    /// CoDel with RFC 8289's defaults (5 ms target, 100 ms interval).
    pub fn codel() -> AqmConfig {
        AqmConfig::CoDel {
            target: codel_target(),
            interval: codel_interval(),
            ecn: false,
        }
    }

    /// PIE with RFC 8033's defaults.
    pub fn pie() -> AqmConfig {
        AqmConfig::Pie {
            target: pie_target(),
            t_update: pie_t_update(),
            alpha: pie_alpha(),
            beta: pie_beta(),
            max_burst: pie_max_burst(),
            ecn: false,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        let same_unit = |a: &Limit, b: &Limit| {
            matches!(
                (a, b),
                (Limit::Packets(_), Limit::Packets(_)) | (Limit::Bytes(_), Limit::Bytes(_))
            )
        };
        let value = |l: &Limit| match l {
            Limit::Packets(n) | Limit::Bytes(n) => *n,
        };
        match self {
            AqmConfig::DropTail => Ok(()),
            AqmConfig::Red {
                min,
                max,
                max_p,
                weight,
                ..
            } => {
                if !same_unit(min, max) || value(min) >= value(max) {
                    return Err("RED needs min below max, both in packets or both in bytes".into());
                }
                let unit = |x: f64| x > 0.0 && x <= 1.0;
                if !(unit(*max_p) && unit(*weight)) {
                    return Err("RED max_p and weight must lie in (0, 1]".into());
                }
                Ok(())
            }
            AqmConfig::Ramp { kmin, kmax, pmax } => {
                if !same_unit(kmin, kmax) || value(kmin) > value(kmax) {
                    return Err(
                        "a marking ramp needs kmin <= kmax, both in packets or both in bytes"
                            .into(),
                    );
                }
                if !(*pmax > 0.0 && *pmax <= 1.0) {
                    return Err("a marking ramp's pmax must lie in (0, 1]".into());
                }
                Ok(())
            }
            AqmConfig::CoDel {
                target, interval, ..
            } => {
                if *target == 0 || *interval <= *target {
                    return Err("CoDel needs 0 < target < interval".into());
                }
                Ok(())
            }
            AqmConfig::Pie {
                target,
                t_update,
                alpha,
                beta,
                ..
            } => {
                if *target == 0 || *t_update == 0 || *alpha <= 0.0 || *beta <= 0.0 {
                    return Err("PIE needs positive target, t_update, alpha and beta".into());
                }
                Ok(())
            }
        }
    }
}

/// What the AQM decides for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Mark,
    Drop,
}

/// The queue an AQM looks at, at the moment it decides.
#[derive(Clone, Copy, Debug)]
pub struct QueueView {
    /// Packets and bytes waiting, counting an arriving packet at enqueue.
    pub packets: u64,
    pub bytes: u64,
}

impl QueueView {
    fn measure(&self, unit: &Limit) -> f64 {
        match unit {
            Limit::Packets(_) => self.packets as f64,
            Limit::Bytes(_) => self.bytes as f64,
        }
    }
}

fn value(l: &Limit) -> f64 {
    match l {
        Limit::Packets(n) | Limit::Bytes(n) => *n as f64,
    }
}

/// The running state of one AQM instance.
#[derive(Clone, Debug)]
pub struct Aqm {
    pub config: AqmConfig,
    // RED
    avg: f64,
    count: i64,
    idle_since: Option<Time>,
    // CoDel
    first_above: Option<Time>,
    dropping: bool,
    drop_next: Time,
    codel_count: u32,
    last_count: u32,
    // PIE
    pub drop_prob: f64,
    qdelay_old: Time,
    next_update: Time,
    burst_left: Time,
}

impl Aqm {
    pub fn new(config: AqmConfig) -> Aqm {
        let burst = match &config {
            AqmConfig::Pie { max_burst, .. } => *max_burst,
            _ => 0,
        };
        Aqm {
            config,
            avg: 0.0,
            count: -1,
            idle_since: None,
            first_above: None,
            dropping: false,
            drop_next: 0,
            codel_count: 0,
            last_count: 0,
            drop_prob: 0.0,
            qdelay_old: 0,
            next_update: 0,
            burst_left: burst,
        }
    }

    /// The probability RED would act at average queue `avg` (before spreading by count).
    pub fn red_probability(config: &AqmConfig, avg: f64) -> f64 {
        let AqmConfig::Red {
            min,
            max,
            max_p,
            gentle,
            ..
        } = config
        else {
            return 0.0;
        };
        let (min, max) = (value(min), value(max));
        if avg < min {
            0.0
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if *gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            1.0
        }
    }

    /// Decides for an arriving packet. `delay` estimates the queueing delay it faces.
    pub fn on_enqueue(
        &mut self,
        q: QueueView,
        ect: bool,
        delay: Time,
        now: Time,
        rng: &mut Rng,
    ) -> Verdict {
        match &self.config {
            AqmConfig::DropTail | AqmConfig::CoDel { .. } => Verdict::Pass,
            AqmConfig::Ramp { kmin, kmax, pmax } => {
                let len = q.measure(kmin);
                let (kmin, kmax) = (value(kmin), value(kmax));
                let p = if len <= kmin {
                    0.0
                } else if len > kmax {
                    1.0
                } else {
                    pmax * (len - kmin) / (kmax - kmin).max(f64::MIN_POSITIVE)
                };
                if p > 0.0 && (p >= 1.0 || rng.next_f64() < p) && ect {
                    Verdict::Mark
                } else {
                    Verdict::Pass
                }
            }
            AqmConfig::Red {
                min,
                max,
                weight,
                gentle,
                ecn,
                hard_drop,
                wait,
                ..
            } => {
                let len = q.measure(min) - 1.0;
                // The average decays over idle time as if small packets had gone by.
                if let Some(since) = self.idle_since.take() {
                    let idle_packets = ((now - since) / crate::units::US) as i32;
                    self.avg *= (1.0 - weight).powi(idle_packets.max(0));
                }
                self.avg += weight * (len - self.avg);
                let forced_at = if *gentle {
                    2.0 * value(max)
                } else {
                    value(max)
                };
                if self.avg >= forced_at {
                    self.count = 0;
                    return if !*hard_drop && *ecn && ect {
                        Verdict::Mark
                    } else {
                        Verdict::Drop
                    };
                }
                let pb = Self::red_probability(&self.config, self.avg);
                if pb <= 0.0 || self.avg < value(min) {
                    self.count = -1;
                    return Verdict::Pass;
                }
                self.count += 1;
                let spread = self.count as f64 * pb;
                let pa = if *wait {
                    match spread {
                        s if s < 1.0 => 0.0,
                        s if s < 2.0 => pb / (2.0 - s),
                        _ => 1.0,
                    }
                } else {
                    pb / (1.0 - spread).max(f64::MIN_POSITIVE)
                };
                if pa >= 1.0 || rng.next_f64() < pa {
                    self.count = 0;
                    if *ecn && ect {
                        Verdict::Mark
                    } else {
                        Verdict::Drop
                    }
                } else {
                    Verdict::Pass
                }
            }
            AqmConfig::Pie { target, ecn, .. } => {
                let (target, ecn) = (*target, *ecn);
                self.pie_update(delay, now);
                if self.burst_left > 0
                    || (self.qdelay_old < target / 2 && self.drop_prob < 0.2)
                    || q.packets <= 2
                {
                    return Verdict::Pass;
                }
                if rng.next_f64() < self.drop_prob {
                    if ecn && ect && self.drop_prob <= 0.1 {
                        Verdict::Mark
                    } else {
                        Verdict::Drop
                    }
                } else {
                    Verdict::Pass
                }
            }
        }
    }

    /// RFC 8033's periodic update, run lazily for every period that has elapsed.
    fn pie_update(&mut self, delay: Time, now: Time) {
        let AqmConfig::Pie {
            target,
            t_update,
            alpha,
            beta,
            max_burst,
            ..
        } = self.config
        else {
            return;
        };
        if self.next_update == 0 {
            self.next_update = now + t_update;
            return;
        }
        while now >= self.next_update {
            // RFC 8033 works in seconds, with alpha and beta in Hz.
            let seconds = |t: Time| t as f64 / crate::units::SEC as f64;
            let (qdelay, old, target_s) =
                (seconds(delay), seconds(self.qdelay_old), seconds(target));
            // Scale the gains down while the probability is small (RFC 8033 4.2).
            let scale = match self.drop_prob {
                p if p < 0.000001 => 1.0 / 2048.0,
                p if p < 0.00001 => 1.0 / 512.0,
                p if p < 0.0001 => 1.0 / 128.0,
                p if p < 0.001 => 1.0 / 32.0,
                p if p < 0.01 => 1.0 / 8.0,
                p if p < 0.1 => 1.0 / 2.0,
                _ => 1.0,
            };
            let mut delta = scale * (alpha * (qdelay - target_s) + beta * (qdelay - old));
            if self.drop_prob >= 0.1 && delta > 0.02 {
                delta = 0.02;
            }
            self.drop_prob = (self.drop_prob + delta).clamp(0.0, 1.0);
            if delay == 0 && self.qdelay_old == 0 {
                self.drop_prob *= 0.98;
            }
            if self.drop_prob == 0.0 && qdelay < target_s / 2.0 && old < target_s / 2.0 {
                self.burst_left = max_burst;
            } else {
                self.burst_left = self.burst_left.saturating_sub(t_update);
            }
            self.qdelay_old = delay;
            self.next_update += t_update;
        }
    }

    /// Decides for a packet leaving after `sojourn`; `bytes_left` waits behind it.
    pub fn on_dequeue(&mut self, sojourn: Time, bytes_left: u64, ect: bool, now: Time) -> Verdict {
        let AqmConfig::CoDel {
            target,
            interval,
            ecn,
        } = self.config
        else {
            return Verdict::Pass;
        };
        let ok_to_drop = self.codel_check(sojourn, bytes_left, now, target, interval);
        let act = |ect: bool| {
            if ecn && ect {
                Verdict::Mark
            } else {
                Verdict::Drop
            }
        };
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
                return Verdict::Pass;
            }
            if now >= self.drop_next {
                self.codel_count += 1;
                self.drop_next = control_law(self.drop_next, interval, self.codel_count);
                return act(ect);
            }
            return Verdict::Pass;
        }
        if ok_to_drop {
            self.dropping = true;
            let delta = self.codel_count.saturating_sub(self.last_count);
            self.codel_count = if delta > 1 && now.saturating_sub(self.drop_next) < 16 * interval {
                delta
            } else {
                1
            };
            self.drop_next = control_law(now, interval, self.codel_count);
            self.last_count = self.codel_count;
            return act(ect);
        }
        Verdict::Pass
    }

    fn codel_check(
        &mut self,
        sojourn: Time,
        bytes_left: u64,
        now: Time,
        target: Time,
        interval: Time,
    ) -> bool {
        if sojourn < target || bytes_left <= 1500 {
            self.first_above = None;
            return false;
        }
        match self.first_above {
            None => {
                self.first_above = Some(now + interval);
                false
            }
            Some(at) => now >= at,
        }
    }

    /// The queue went empty at `now` (RED's average decays while idle).
    pub fn on_idle(&mut self, now: Time) {
        self.idle_since = Some(now);
    }
}

fn control_law(t: Time, interval: Time, count: u32) -> Time {
    t + (interval as f64 / (count.max(1) as f64).sqrt()) as Time
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;

    fn view(packets: u64) -> QueueView {
        QueueView {
            packets,
            bytes: packets * 1500,
        }
    }

    #[test]
    fn red_marking_follows_its_curve() {
        let config = AqmConfig::Red {
            min: Limit::Packets(20),
            max: Limit::Packets(60),
            max_p: 0.1,
            weight: 1.0,
            gentle: false,
            ecn: true,
            hard_drop: true,
            wait: false,
        };
        let mut rng = Rng::stream(1, Stream::Workload, 0);
        for queue in [10, 30, 40, 50, 59] {
            let mut aqm = Aqm::new(config.clone());
            let n = 200_000;
            let marks = (0..n)
                .filter(|_| aqm.on_enqueue(view(queue + 1), true, 0, 0, &mut rng) == Verdict::Mark)
                .count();
            let pb = Aqm::red_probability(&config, queue as f64);
            // Spreading by count (Floyd & Jacobson's pa = pb / (1 - count pb), count
            // including this packet) makes the gaps uniform on 1..1/pb - 1: rate 2 pb.
            let expected = 2.0 * pb;
            let measured = marks as f64 / n as f64;
            assert!(
                (measured - expected).abs() <= 0.05 * expected + 1e-4,
                "queue {queue}: {measured} vs {expected}"
            );
        }
        let mut aqm = Aqm::new(config);
        assert_eq!(
            aqm.on_enqueue(view(61), true, 0, 0, &mut rng),
            Verdict::Drop
        );
    }

    #[test]
    fn red_without_hard_drop_marks_ecn_capable_packets_above_max() {
        let red = |hard_drop| AqmConfig::Red {
            min: Limit::Packets(5),
            max: Limit::Packets(10),
            max_p: 0.1,
            weight: 1.0,
            gentle: false,
            ecn: true,
            hard_drop,
            wait: false,
        };
        let mut rng = Rng::stream(1, crate::rng::Stream::Aqm, 0);
        for hard_drop in [true, false] {
            let mut aqm = Aqm::new(red(hard_drop));
            let ect = aqm.on_enqueue(view(50), true, 0, 0, &mut rng);
            let not_ect = aqm.on_enqueue(view(50), false, 0, 0, &mut rng);
            assert_eq!(not_ect, Verdict::Drop);
            let expected = if hard_drop {
                Verdict::Drop
            } else {
                Verdict::Mark
            };
            assert_eq!(ect, expected, "hard_drop {hard_drop}");
        }
    }

    #[test]
    fn red_with_wait_spaces_marks_at_least_one_over_p_apart() {
        // A steady average where p_b = 0.05: with wait no mark comes before count p_b
        // reaches 1 (20 packets), and the mean gap is longer than without it.
        let red = |wait| AqmConfig::Red {
            min: Limit::Packets(0),
            max: Limit::Packets(20),
            max_p: 0.1,
            weight: 1.0,
            gentle: false,
            ecn: true,
            hard_drop: true,
            wait,
        };
        let mut gaps = Vec::new();
        for wait in [false, true] {
            let mut rng = Rng::stream(3, crate::rng::Stream::Aqm, 0);
            let mut aqm = Aqm::new(red(wait));
            let (mut since, mut shortest, mut marks, n) = (0u32, u32::MAX, 0u32, 200_000);
            for _ in 0..n {
                since += 1;
                if aqm.on_enqueue(view(11), true, 0, 0, &mut rng) == Verdict::Mark {
                    shortest = shortest.min(since);
                    marks += 1;
                    since = 0;
                }
            }
            if wait {
                assert!(shortest >= 20, "shortest gap {shortest}");
            }
            gaps.push(n as f64 / marks as f64);
        }
        assert!(gaps[1] > gaps[0], "{gaps:?}");
    }

    #[test]
    fn gentle_red_ramps_to_one_at_twice_max() {
        let config = AqmConfig::Red {
            min: Limit::Packets(10),
            max: Limit::Packets(20),
            max_p: 0.2,
            weight: 1.0,
            gentle: true,
            ecn: false,
            hard_drop: true,
            wait: false,
        };
        assert!((Aqm::red_probability(&config, 30.0) - 0.6).abs() < 1e-12);
        assert_eq!(Aqm::red_probability(&config, 40.0), 1.0);
    }

    #[test]
    fn a_ramp_marks_in_proportion_between_kmin_and_kmax() {
        let config = AqmConfig::Ramp {
            kmin: Limit::Packets(10),
            kmax: Limit::Packets(30),
            pmax: 0.5,
        };
        let mut aqm = Aqm::new(config);
        let mut rng = Rng::stream(2, Stream::Workload, 0);
        let n = 100_000;
        let marks = (0..n)
            .filter(|_| aqm.on_enqueue(view(20), true, 0, 0, &mut rng) == Verdict::Mark)
            .count();
        assert!((marks as f64 / n as f64 - 0.25).abs() < 0.01);
        assert_eq!(
            aqm.on_enqueue(view(31), true, 0, 0, &mut rng),
            Verdict::Mark
        );
        assert_eq!(
            aqm.on_enqueue(view(10), true, 0, 0, &mut rng),
            Verdict::Pass
        );
        assert_eq!(
            aqm.on_enqueue(view(31), false, 0, 0, &mut rng),
            Verdict::Pass,
            "not ECN-capable"
        );
    }

    #[test]
    fn codel_waits_an_interval_then_drops_faster_and_faster() {
        let mut aqm = Aqm::new(AqmConfig::codel());
        let sojourn = 20 * MS;
        let mut drops = Vec::new();
        let mut now = 0;
        while now < 400 * MS {
            if aqm.on_dequeue(sojourn, 100_000, false, now) == Verdict::Drop {
                drops.push(now);
            }
            now += MS / 10;
        }
        assert!(
            drops[0] >= 100 * MS && drops[0] < 101 * MS,
            "first drop at {}",
            drops[0]
        );
        let gaps: Vec<Time> = drops.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.windows(2).all(|w| w[1] <= w[0] + MS / 10),
            "gaps must shrink: {gaps:?}"
        );
        // The first gap is one interval, then interval / sqrt(count).
        assert!((gaps[0] as f64 / MS as f64 - 100.0).abs() < 0.2, "{gaps:?}");
        assert!(
            (gaps[1] as f64 / MS as f64 - 100.0 / 2f64.sqrt()).abs() < 0.2,
            "{gaps:?}"
        );
        // A short sojourn ends the dropping state.
        assert_eq!(aqm.on_dequeue(MS, 100_000, false, now), Verdict::Pass);
        assert!(!aqm.dropping);
    }
}
