//! Backward Congestion Notification (Bergamasco & Pan, IEEE 802.1 BCN): congestion
//! points at switch egress queues send feedback frames back to the sources, whose rate
//! regulators react to them.
//!
//! The congestion point (`BcnPoint`, one per switch port):
//! 1. samples each arriving packet with probability Pm;
//! 2. at a sample computes e = −(q − Qeq + w·(q − q_prev)), q the queue in packets and
//!    q_prev its value at the previous sample (q − q_prev: arrivals minus departures);
//! 3. below Qeq sends positive feedback only to a source whose packet carries the rate-
//!    regulator tag, between Qeq and Qsc sends NORMAL feedback carrying e, at or above
//!    Qsc sends STOP; feedback is a real frame routed back to the source.
//! 4. IBCN's hook: the control plane may give the point k predicted queue values. Then
//!    the class most of them fall in (below Qeq, between, at or above Qsc; a tie goes to
//!    the more congested class) decides the feedback, and their mean replaces q in e
//!    (e_IBCN = −(mean − Qeq + w·(q − q_prev)), the change still measured).
//!
//! The reaction point (`RateRegulator`: a datagram `BcnSource`'s, or one in front of a
//! TCP sender, which it paces and holds) starts at line rate without a regulator; the first
//! negative feedback installs one at line rate. On positive or NORMAL feedback it sets
//! r ← r + Gi·e·Ru when e > 0 and r ← r·(1 + Gd·e) when e < 0 (e saturated so one message at most halves
//! the rate); on STOP it pauses for a time uniform in [`min_pause`, `max_pause`] and
//! restarts at the fair share `restart_rate` (or its current rate, if lower). It never
//! sends faster than `max_rate`, its offered load. Defaults are the IBCN paper's: Ru =
//! 3 Mbit/s, Gi = 4, Gd = 0.02, w = 2, Qsc = 90, Qeq = 20 packets, Pm = 0.01, and a STOP
//! pause of 200-800 ms (its section IV.D).

use super::{FlowRecord, Outbox};
use crate::packet::{PacketHeader, PROTO_UDP};
use crate::rng::Rng;
use crate::units::{serialization_time, Rate, Time, MS};

/// The protocol number BCN feedback frames carry.
pub const PROTO_BCN: u8 = 0xFD;
/// Feedback frame size on the wire.
pub const FEEDBACK_BYTES: u32 = 64;
const UDP_HEADER_BYTES: u32 = 28;

/// A BCN congestion point's settings (queues in packets).
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct BcnPointConfig {
    /// Probability of sampling an arriving packet (Pm).
    #[serde(rename = "pm")]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
    pub sample_probability: f64,
    /// Equilibrium queue (Qeq): below it only positive feedback goes out.
    #[schemars(range(min = 0.0), extend("unit" = "packets"))]
    pub q_eq: f64,
    /// Severe-congestion queue (Qsc): at or above it sources are told to STOP.
    #[schemars(extend("unit" = "packets", "exclusiveMinimum" = 0.0))]
    pub q_sc: f64,
    /// Weight of the queue's change in the feedback e = -(q - Qeq + w (q - q_prev)).
    #[schemars(range(min = 0.0))]
    pub w: f64,
}

impl BcnPointConfig {
    /// 0 below Qeq, 1 from Qeq to below Qsc, 2 at or above Qsc.
    fn class_of(&self, queue: f64) -> usize {
        if queue >= self.q_sc {
            2
        } else if queue >= self.q_eq {
            1
        } else {
            0
        }
    }
}

impl Default for BcnPointConfig {
    fn default() -> Self {
        BcnPointConfig {
            sample_probability: 0.01,
            q_eq: 20.0,
            q_sc: 90.0,
            w: 2.0,
        }
    }
}

/// What a congestion point tells a source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Feedback {
    Positive(f64),
    Normal(f64),
    Stop,
}

impl Feedback {
    /// The frame's encoding in a packet's tag words: (kind, e as f32 bits).
    pub fn encode(self) -> [u32; 2] {
        match self {
            Feedback::Positive(e) => [1, (e as f32).to_bits()],
            Feedback::Normal(e) => [2, (e as f32).to_bits()],
            Feedback::Stop => [3, 0],
        }
    }

    pub fn decode(tag: [u32; 2]) -> Option<Feedback> {
        let e = f32::from_bits(tag[1]) as f64;
        match tag[0] {
            1 => Some(Feedback::Positive(e)),
            2 => Some(Feedback::Normal(e)),
            3 => Some(Feedback::Stop),
            _ => None,
        }
    }
}

/// A congestion point's state at one switch port.
#[derive(Clone, Debug, Default)]
pub struct BcnPoint {
    q_prev: f64,
    /// Queue values (packets) the control plane predicts for this port; when present
    /// they decide the feedback instead of the measured queue.
    pub predictions: Option<Vec<f64>>,
    pub samples: u64,
    pub sent: [u64; 3],
}

impl BcnPoint {
    /// Decides at an arrival: None unless the packet is sampled and feedback is due.
    pub fn on_arrival(
        &mut self,
        cfg: &BcnPointConfig,
        queue: f64,
        tagged: bool,
        rng: &mut Rng,
    ) -> Option<Feedback> {
        if rng.next_f64() >= cfg.sample_probability {
            return None;
        }
        self.samples += 1;
        let change = queue - self.q_prev;
        self.q_prev = queue;
        let (level, class) = match self.predictions.as_deref() {
            Some(values) if !values.is_empty() => {
                let mut counts = [0usize; 3];
                for &v in values {
                    counts[cfg.class_of(v)] += 1;
                }
                // The most common class; ties go to the more congested one (max_by_key
                // returns the last of equal maxima).
                let class = (0..3).max_by_key(|&c| counts[c]).unwrap_or(0);
                (values.iter().sum::<f64>() / values.len() as f64, class)
            }
            _ => (queue, cfg.class_of(queue)),
        };
        let e = -(level - cfg.q_eq + cfg.w * change);
        let feedback = match class {
            2 => Feedback::Stop,
            1 => Feedback::Normal(e),
            _ if tagged && e > 0.0 => Feedback::Positive(e),
            _ => return None,
        };
        let slot = match feedback {
            Feedback::Positive(_) => 0,
            Feedback::Normal(_) => 1,
            Feedback::Stop => 2,
        };
        self.sent[slot] += 1;
        Some(feedback)
    }
}

/// A BCN reaction point's settings (the IBCN paper's by default).
// Crosses into the engine as one value; the rates that depend on the source's host
// (line rate, fair share, offered load) have no default.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct BcnSourceConfig {
    /// The source's access-link rate.
    #[schemars(extend("unit" = "bit/s", "exclusiveMinimum" = 0))]
    pub line_rate: Rate,
    /// Wire bytes per datagram, headers included.
    #[serde(default = "bcn_packet_size")]
    #[schemars(range(min = 29), extend("unit" = "bytes"))]
    pub packet_size: u32,
    /// Rate unit of an increase (Ru): r += Gi e Ru.
    #[serde(default = "bcn_ru")]
    #[schemars(extend("unit" = "bit/s"))]
    pub ru: Rate,
    /// Increase gain (Gi).
    #[serde(default = "bcn_gi")]
    #[schemars(extend("exclusiveMinimum" = 0.0))]
    pub gi: f64,
    /// Decrease gain (Gd): r *= 1 + Gd e.
    #[serde(default = "bcn_gd")]
    #[schemars(extend("exclusiveMinimum" = 0.0))]
    pub gd: f64,
    /// Rate after a STOP's pause (the fair share, or the current rate if lower).
    #[schemars(extend("unit" = "bit/s", "exclusiveMinimum" = 0))]
    pub restart_rate: Rate,
    /// Shortest pause after a STOP.
    #[serde(default = "bcn_min_pause")]
    #[schemars(extend("unit" = "ps"))]
    pub min_pause: Time,
    /// Longest pause after a STOP.
    #[serde(default = "bcn_max_pause")]
    #[schemars(extend("unit" = "ps"))]
    pub max_pause: Time,
    /// The rate a regulator never goes below.
    #[serde(default = "bcn_min_rate")]
    #[schemars(extend("unit" = "bit/s", "exclusiveMinimum" = 0))]
    pub min_rate: Rate,
    /// The most it sends, regulated or not: its offered load.
    #[schemars(extend("unit" = "bit/s", "exclusiveMinimum" = 0))]
    pub max_rate: Rate,
}

// The IBCN paper's reaction point (its section IV.D), each value written once.
fn bcn_packet_size() -> u32 {
    1500
}
fn bcn_ru() -> Rate {
    3_000_000
}
fn bcn_gi() -> f64 {
    4.0
}
fn bcn_gd() -> f64 {
    0.02
}
fn bcn_min_pause() -> Time {
    200 * MS
}
fn bcn_max_pause() -> Time {
    800 * MS
}
fn bcn_min_rate() -> Rate {
    1_000_000
}

impl BcnSourceConfig {
    /// The IBCN paper's parameters at `line_rate`, restarting after STOP at `fair_share`.
    pub fn ibcn(line_rate: Rate, fair_share: Rate) -> BcnSourceConfig {
        BcnSourceConfig {
            line_rate,
            packet_size: bcn_packet_size(),
            ru: bcn_ru(),
            gi: bcn_gi(),
            gd: bcn_gd(),
            restart_rate: fair_share,
            min_pause: bcn_min_pause(),
            max_pause: bcn_max_pause(),
            min_rate: bcn_min_rate(),
            max_rate: line_rate,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.packet_size <= UDP_HEADER_BYTES {
            return Err("BCN packet_size must exceed 28 B of headers".into());
        }
        if self.line_rate == 0
            || self.min_rate == 0
            || self.restart_rate == 0
            || self.min_rate > self.line_rate
        {
            return Err("BCN needs positive rates with min_rate <= line_rate".into());
        }
        if self.gi <= 0.0 || self.gd <= 0.0 {
            return Err("BCN gains Gi and Gd must be positive".into());
        }
        if self.max_rate == 0 || self.max_rate > self.line_rate {
            return Err(format!(
                "BCN max_rate (the offered load) must be positive and at most the line rate ({} bps), got {} bps",
                self.line_rate, self.max_rate
            ));
        }
        if self.min_pause > self.max_pause {
            return Err("BCN min_pause must not exceed max_pause".into());
        }
        Ok(())
    }
}

/// A reaction point's rate regulator: absent (line rate) until the first negative
/// feedback, then adjusted by every feedback frame; a STOP pauses it. Datagram sources
/// (`BcnSource`) and TCP flows regulated by BCN share it.
#[derive(Clone)]
pub struct RateRegulator {
    pub cfg: BcnSourceConfig,
    /// The regulator's rate, once installed.
    pub regulator: Option<f64>,
    /// Sending is paused until then (a STOP).
    pub paused_until: Time,
    rng: Rng,
    /// Feedback received: positive, NORMAL, STOP.
    pub feedback: [u64; 3],
}

impl RateRegulator {
    pub fn new(cfg: BcnSourceConfig, rng: Rng) -> RateRegulator {
        RateRegulator {
            cfg,
            regulator: None,
            paused_until: 0,
            rng,
            feedback: [0; 3],
        }
    }

    /// What the source may send at: the regulator's rate (line rate without one), at
    /// most its offered load.
    pub fn rate(&self) -> f64 {
        self.regulator
            .unwrap_or(self.cfg.line_rate as f64)
            .min(self.cfg.max_rate as f64)
    }

    /// A feedback frame from a congestion point reached the source.
    pub fn on_feedback(&mut self, feedback: Feedback, now: Time) {
        let line = self.cfg.line_rate as f64;
        let min = self.cfg.min_rate as f64;
        match feedback {
            Feedback::Positive(e) | Feedback::Normal(e) => {
                let slot = if matches!(feedback, Feedback::Positive(_)) {
                    0
                } else {
                    1
                };
                self.feedback[slot] += 1;
                if e > 0.0 {
                    if let Some(r) = self.regulator {
                        let raised = r + self.cfg.gi * e * self.cfg.ru as f64;
                        // A regulator back at line rate is removed.
                        self.regulator = (raised < line).then_some(raised);
                    }
                } else if e < 0.0 {
                    let r = self.regulator.unwrap_or(line);
                    let factor = 1.0 + self.cfg.gd * e.max(-0.5 / self.cfg.gd);
                    self.regulator = Some((r * factor).max(min));
                }
            }
            Feedback::Stop => {
                self.feedback[2] += 1;
                let span = (self.cfg.max_pause - self.cfg.min_pause) as f64;
                let pause = self.cfg.min_pause + (self.rng.next_f64() * span) as Time;
                self.paused_until = self.paused_until.max(now + pause);
                // Restart at the fair share, or lower if the regulator is already lower.
                let restart = (self.cfg.restart_rate as f64).min(self.rate());
                self.regulator = Some(restart.clamp(min, line));
            }
        }
    }
}

/// A rate-regulated source: constant-rate datagrams at the regulator's rate.
#[derive(Clone)]
pub struct BcnSource {
    pub reaction: RateRegulator,
    remaining: u64,
    stop: Time,
    pub done: bool,
    seq: u32,
}

impl BcnSource {
    pub fn new(cfg: BcnSourceConfig, size: u64, stop: Time, rng: Rng) -> BcnSource {
        BcnSource {
            reaction: RateRegulator::new(cfg, rng),
            remaining: if size == 0 { u64::MAX } else { size },
            stop,
            done: false,
            seq: 0,
        }
    }

    pub fn rate(&self) -> f64 {
        self.reaction.rate()
    }

    pub fn on_feedback(&mut self, feedback: Feedback, now: Time) {
        self.reaction.on_feedback(feedback, now);
    }

    pub fn on_timer(
        &mut self,
        flow: u32,
        ports: (u16, u16),
        now: Time,
        record: &mut FlowRecord,
        out: &mut Outbox,
    ) {
        if self.done {
            return;
        }
        if now >= self.stop || self.remaining == 0 {
            self.done = true;
            return;
        }
        if now < self.reaction.paused_until {
            out.timers.push((self.reaction.paused_until, 0));
            return;
        }
        let cfg = &self.reaction.cfg;
        let payload =
            (cfg.packet_size - UDP_HEADER_BYTES).min(self.remaining.min(u32::MAX as u64) as u32);
        out.packets.push(
            PacketHeader {
                src: record.src,
                dst: record.dst,
                src_port: ports.0,
                dst_port: ports.1,
                proto: PROTO_UDP,
                size: payload + UDP_HEADER_BYTES,
                payload,
                seq: self.seq,
                flow,
                created: now,
                remaining: self.remaining,
                rate_regulated: self.reaction.regulator.is_some(),
                ..Default::default()
            }
            .into(),
        );
        self.seq = self.seq.wrapping_add(1);
        if self.remaining != u64::MAX {
            self.remaining -= payload as u64;
        }
        record.packets_sent += 1;
        record.bytes_sent += payload as u64;
        let next = now + serialization_time(payload + UDP_HEADER_BYTES, self.rate() as Rate);
        if self.remaining == 0 || next >= self.stop {
            self.done = true;
        } else {
            out.timers.push((next, 0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;

    #[test]
    fn the_congestion_point_follows_the_bcn_rules() {
        let cfg = BcnPointConfig {
            sample_probability: 1.0,
            ..Default::default()
        };
        let mut rng = Rng::stream(1, Stream::Aqm, 0);
        let mut cp = BcnPoint::default();
        // Below Qeq: positive feedback only for regulated sources.
        assert_eq!(cp.on_arrival(&cfg, 10.0, false, &mut rng), None);
        let e = -(10.0 - 20.0 + 2.0 * (10.0 - 10.0));
        assert_eq!(
            cp.on_arrival(&cfg, 10.0, true, &mut rng),
            Some(Feedback::Positive(e))
        );
        // Between Qeq and Qsc: NORMAL with e = -(q - Qeq + w (q - q_prev)).
        assert_eq!(
            cp.on_arrival(&cfg, 30.0, false, &mut rng),
            Some(Feedback::Normal(-(30.0 - 20.0 + 2.0 * 20.0)))
        );
        assert_eq!(
            cp.on_arrival(&cfg, 95.0, false, &mut rng),
            Some(Feedback::Stop)
        );
        // Predictions decide by majority and their mean replaces q; the change is measured.
        cp.predictions = Some(vec![50.0, 10.0, 60.0]);
        let expected = -(40.0 - 20.0 + 2.0 * (0.0 - 95.0));
        assert_eq!(
            cp.on_arrival(&cfg, 0.0, false, &mut rng),
            Some(Feedback::Normal(expected))
        );
        cp.predictions = Some(vec![95.0, 10.0, 100.0, 30.0]);
        assert_eq!(
            cp.on_arrival(&cfg, 0.0, false, &mut rng),
            Some(Feedback::Stop),
            "two of four at or above Qsc: the tie goes to STOP"
        );
        cp.predictions = Some(vec![95.0, 30.0]);
        assert_eq!(
            cp.on_arrival(&cfg, 0.0, false, &mut rng),
            Some(Feedback::Stop),
            "one STOP, one NORMAL: a tie"
        );
        cp.predictions = Some(vec![5.0, 10.0, 95.0]);
        assert_eq!(cp.on_arrival(&cfg, 0.0, false, &mut rng), None);
        assert_eq!(cp.sent, [1, 2, 3]);
    }

    #[test]
    fn the_regulator_adds_on_positive_and_multiplies_on_negative_feedback() {
        let cfg = BcnSourceConfig::ibcn(1_000_000_000, 100_000_000);
        let mut s = BcnSource::new(cfg, 0, MS, Rng::stream(1, Stream::Flow, 0));
        s.on_feedback(Feedback::Normal(-10.0), 0);
        assert!((s.rate() - 1e9 * 0.8).abs() < 1.0);
        s.on_feedback(Feedback::Positive(5.0), 0);
        assert!((s.rate() - (0.8e9 + 4.0 * 5.0 * 3e6)).abs() < 1.0);
        s.on_feedback(Feedback::Normal(-1000.0), 0);
        assert!(
            (s.rate() - (0.8e9 + 60e6) * 0.5).abs() < 1.0,
            "one message at most halves"
        );
        s.on_feedback(Feedback::Stop, 0);
        assert_eq!(s.rate(), 100e6);
        assert!((200 * MS..=800 * MS).contains(&s.reaction.paused_until));
        let capped = BcnSourceConfig {
            max_rate: 300_000_000,
            ..cfg
        };
        let s = BcnSource::new(capped, 0, MS, Rng::stream(1, Stream::Flow, 0));
        assert_eq!(s.rate(), 300e6, "no faster than its offered load");
        for [kind, bits] in [Feedback::Positive(2.5).encode(), Feedback::Stop.encode()] {
            assert!(Feedback::decode([kind, bits]).is_some());
        }
    }
}
