//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM
//! 2015): a rate-based RDMA-like flow with go-back-N reliability.
//!
//! The reaction point (the sender):
//! 1. sends packets paced at its current rate Rc, starting at line rate, each when its
//!    NIC can put it on the wire: an RDMA NIC builds a queue pair's next packet only
//!    once its last has left (a PFC pause holds the queue pair, not a queue of its
//!    packets), so a packet waits at its host's NIC only behind other queue pairs';
//! 2. on a CNP: remembers Rc as the target Rt, cuts Rc ← Rc·(1 − α/2), raises
//!    α ← (1 − g)·α + g, and restarts its increase machinery: both stage counts, the
//!    byte counter and the timer, so the next increase is a whole `timer` away (QCN's
//!    rule, which DCQCN keeps; with CNPs every 50 us and a 55 us timer, a flow marked
//!    throughout gets no timer increase);
//! 3. every `alpha_period` without a CNP, decays α ← (1 − g)·α;
//! 4. counts rate-increase events, one per `timer` and one per `byte_counter` bytes sent;
//!    while both counts are below F it recovers fast (Rc ← (Rt + Rc)/2), once either
//!    passes F it increases additively (Rt += R_AI first), once both do, hyper-actively
//!    (Rt += i·R_HAI), capped at line rate.
//!
//! The notification point (the receiver) answers CE-marked packets with a CNP, at most
//! one per `cnp_interval` per flow. The congestion point is the switch's ramp marker
//! (Kmin, Kmax, Pmax) from the data plane.
//!
//! Reliability is a RoCE NIC's reliable connection: the sender asks for an ACK (the BTH
//! AckReq bit) on every `ack_every`-th packet and on the last; the receiver ACKs each
//! request cumulatively, a duplicate one too. Out-of-order arrivals (a loss without PFC)
//! trigger one NAK per gap; the sender goes back to the NAKed packet (go-back-N). The
//! loss timer runs from when the oldest unanswered ACK request left, for the local ACK
//! timeout InfiniBand prescribes: at least twice the path's packet lifetime (the
//! longest a packet can take with every queue on its path full, there and back;
//! `Engine::packet_lifetime`), and at least `retransmit_timeout`, the same for every
//! retry (InfiniBand retries without backing off). Only when it expires, a loss the
//! NAKs missed, does the sender go back to the first unacknowledged packet. The receiver
//! NAKs a gap once, until the missing packet arrives (InfiniBand's rule), so a resent
//! packet lost again is found by the timer. (A fixed 1 ms
//! timer from the first unacknowledged packet's departure, as before, fired on every
//! path slower than 16 packets of 1 KB a millisecond, and whenever queues held a
//! request longer, lossless or not.)

use super::timer::Timer;
use crate::packet::{Packet, PacketHeader, ECN_CE, ECN_ECT0, PROTO_UDP};
use crate::units::{serialization_time, Rate, Time, MS, US};
use std::collections::VecDeque;

/// IPv4 + UDP + InfiniBand BTH (12 B) headers of RoCEv2.
pub const ROCE_HEADER_BYTES: u32 = 40;

const SEND_TIMER: u32 = 0;
const INCREASE_TIMER: u32 = 1;
const ALPHA_TIMER: u32 = 2;
const LOSS_TIMER: u32 = 5;

/// Packet kinds on the wire (carried in the packet's TCP-flags field).
const DATA: u8 = 0;
const ACK: u8 = 1;
const NAK: u8 = 2;
/// A congestion notification packet, from the receiver (the notification point).
pub const CNP: u8 = 3;
/// A data packet that asks the receiver for an ACK (the BTH AckReq bit).
const DATA_ACK_REQUEST: u8 = 4;

/// A DCQCN sender's settings (the DCQCN paper's by default, Zhu et al. 2015).
// Crosses into the engine as one value; the line rate is the sender's host's.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct DcqcnConfig {
    /// Payload bytes per packet.
    #[serde(default = "dcqcn_mtu_payload")]
    #[schemars(extend("unit" = "bytes", "exclusiveMinimum" = 0))]
    pub mtu_payload: u32,
    /// The sender's access-link rate, where it starts.
    #[schemars(extend("unit" = "bit/s", "exclusiveMinimum" = 0))]
    pub line_rate: Rate,
    /// Gain of alpha's moving average of CNPs.
    #[serde(default = "dcqcn_g")]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
    pub g: f64,
    /// Alpha decays by (1 - g) every this long without a CNP.
    #[serde(default = "dcqcn_period")]
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub alpha_period: Time,
    /// One rate-increase event per this long.
    #[serde(default = "dcqcn_period")]
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub timer: Time,
    /// One rate-increase event per this many bytes sent.
    #[serde(default = "dcqcn_byte_counter")]
    #[schemars(extend("unit" = "bytes", "exclusiveMinimum" = 0))]
    pub byte_counter: u64,
    /// Increase events of fast recovery before additive increase (F).
    #[serde(default = "dcqcn_fast_recovery_stages")]
    pub fast_recovery_stages: u32,
    /// Additive increase of the target rate (R_AI).
    #[serde(default = "dcqcn_rate_ai")]
    #[schemars(extend("unit" = "bit/s"))]
    pub rate_ai: Rate,
    /// Hyper-active increase of the target rate (R_HAI).
    #[serde(default = "dcqcn_rate_hai")]
    #[schemars(extend("unit" = "bit/s"))]
    pub rate_hai: Rate,
    /// The receiver sends at most one CNP per flow per this long.
    #[serde(default = "dcqcn_cnp_interval")]
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub cnp_interval: Time,
    /// The sender asks for an ACK every this many packets (progress reports; losses
    /// are NAKed at once).
    #[serde(default = "dcqcn_ack_every")]
    #[schemars(extend("unit" = "packets", "exclusiveMinimum" = 0))]
    pub ack_every: u32,
    /// The least loss timeout (a flow's own is also at least twice its path's packet
    /// lifetime).
    #[serde(default = "dcqcn_retransmit_timeout")]
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub retransmit_timeout: Time,
    /// The rate a sender never goes below.
    #[serde(default = "dcqcn_min_rate")]
    #[schemars(extend("unit" = "bit/s", "exclusiveMinimum" = 0))]
    pub min_rate: Rate,
}

// The DCQCN paper's parameters (Zhu et al. 2015), each written once.
fn dcqcn_mtu_payload() -> u32 {
    1000
}
fn dcqcn_g() -> f64 {
    1.0 / 256.0
}
fn dcqcn_period() -> Time {
    55 * US
}
fn dcqcn_byte_counter() -> u64 {
    10 * 1024 * 1024
}
fn dcqcn_fast_recovery_stages() -> u32 {
    5
}
fn dcqcn_rate_ai() -> Rate {
    40_000_000
}
fn dcqcn_rate_hai() -> Rate {
    100_000_000
}
fn dcqcn_cnp_interval() -> Time {
    50 * US
}
fn dcqcn_ack_every() -> u32 {
    16
}
fn dcqcn_retransmit_timeout() -> Time {
    MS
}
fn dcqcn_min_rate() -> Rate {
    10_000_000
}

impl DcqcnConfig {
    /// The DCQCN paper's parameters (Zhu et al. 2015) at `line_rate`.
    pub fn paper(line_rate: Rate) -> DcqcnConfig {
        DcqcnConfig {
            mtu_payload: dcqcn_mtu_payload(),
            line_rate,
            g: dcqcn_g(),
            alpha_period: dcqcn_period(),
            timer: dcqcn_period(),
            byte_counter: dcqcn_byte_counter(),
            fast_recovery_stages: dcqcn_fast_recovery_stages(),
            rate_ai: dcqcn_rate_ai(),
            rate_hai: dcqcn_rate_hai(),
            cnp_interval: dcqcn_cnp_interval(),
            ack_every: dcqcn_ack_every(),
            retransmit_timeout: dcqcn_retransmit_timeout(),
            min_rate: dcqcn_min_rate(),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.mtu_payload == 0
            || self.line_rate == 0
            || self.min_rate == 0
            || self.min_rate > self.line_rate
        {
            return Err("DCQCN needs a positive MTU and 0 < min_rate <= line_rate".into());
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err("DCQCN g must lie in (0, 1]".into());
        }
        if self.alpha_period == 0
            || self.timer == 0
            || self.byte_counter == 0
            || self.cnp_interval == 0
            || self.ack_every == 0
            || self.retransmit_timeout == 0
        {
            return Err(
                "DCQCN periods, byte counter, CNP interval, ack_every and the retransmit timeout must be positive".into(),
            );
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct DcqcnFlow {
    cfg: DcqcnConfig,
    size: u64,
    // sender
    started: bool,
    next_seq: u64,
    acked: u64,
    rate: f64,
    target: f64,
    alpha: f64,
    cnp_since_alpha_update: bool,
    timer_stage: u32,
    byte_stage: u32,
    bytes_since_increase: u64,
    send_timer: Timer,
    increase_timer: Timer,
    alpha_timer: Timer,
    loss_timer: Timer,
    /// ACK requests not yet answered, oldest first: (packets the ACK will cover, when
    /// the request left, whether it was a retransmission).
    requests: VecDeque<(u64, Time)>,
    /// The loss timeout (see the module's documentation).
    timeout: Time,
    // receiver
    expected: u64,
    nak_sent_for: Option<u64>,
    last_cnp: Option<Time>,
    /// Highest packet number sent so far, plus one.
    high_water: u64,
    /// The next packet is due but its last still waits at the NIC.
    waiting_for_nic: bool,
    /// CNPs the sender has reacted to.
    pub cnps: u64,
    /// A controller's hold, and its rate cap (host-side pacing).
    held: bool,
    cap: Option<Rate>,
}

impl DcqcnFlow {
    /// A flow of `size` bytes from `start` whose loss timeout is `timeout` (its path's:
    /// see the module's documentation).
    pub fn new(cfg: DcqcnConfig, size: u64, start: Time, timeout: Time) -> DcqcnFlow {
        DcqcnFlow {
            cfg,
            size,
            started: false,
            next_seq: 0,
            acked: 0,
            rate: cfg.line_rate as f64,
            target: cfg.line_rate as f64,
            alpha: 1.0,
            cnp_since_alpha_update: false,
            timer_stage: 0,
            byte_stage: 0,
            bytes_since_increase: 0,
            send_timer: Timer::armed_at(start),
            increase_timer: Timer::default(),
            alpha_timer: Timer::default(),
            loss_timer: Timer::default(),
            requests: VecDeque::new(),
            timeout,
            expected: 0,
            nak_sent_for: None,
            last_cnp: None,
            high_water: 0,
            waiting_for_nic: false,
            cnps: 0,
            held: false,
            cap: None,
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn packets(&self) -> u64 {
        self.size.div_ceil(self.cfg.mtu_payload as u64)
    }

    fn payload_of(&self, seq: u64) -> u32 {
        let mtu = self.cfg.mtu_payload as u64;
        (self.size - seq * mtu).min(mtu) as u32
    }

    fn packet(&self, io: &Io, from_sender: bool, kind: u8, seq: u64, payload: u32) -> Packet {
        let r = &*io.record;
        let (src, dst, src_port, dst_port) = if from_sender {
            (r.src, r.dst, io.src_port, io.dst_port)
        } else {
            (r.dst, r.src, io.dst_port, io.src_port)
        };
        PacketHeader {
            src,
            dst,
            src_port,
            dst_port,
            proto: PROTO_UDP,
            size: payload + ROCE_HEADER_BYTES,
            payload,
            seq: seq as u32,
            tcp_flags: kind,
            ecn: if from_sender { ECN_ECT0 } else { 0 },
            flow: io.flow,
            remaining: self.size.saturating_sub(seq * self.cfg.mtu_payload as u64),
            created: io.now,
            ..Default::default()
        }
        .into()
    }

    fn emit(io: &mut Io, pkt: Packet) {
        io.record.packets_sent += 1;
        io.out.packets.push(pkt);
    }

    pub fn on_timer(&mut self, io: &mut Io, token: u32) -> bool {
        let now = io.now;
        match token & super::timer::TIMER_KIND_MASK {
            SEND_TIMER => {
                if self.send_timer.fire(token, now, SEND_TIMER, io.out) {
                    if !self.started {
                        self.started = true;
                        self.increase_timer
                            .set(now + self.cfg.timer, INCREASE_TIMER, io.out);
                        self.alpha_timer
                            .set(now + self.cfg.alpha_period, ALPHA_TIMER, io.out);
                    }
                    self.send_next(io);
                }
            }
            INCREASE_TIMER => {
                if self.increase_timer.fire(token, now, INCREASE_TIMER, io.out)
                    && !self.done_sending()
                {
                    self.timer_stage += 1;
                    self.increase();
                    self.increase_timer
                        .set(now + self.cfg.timer, INCREASE_TIMER, io.out);
                }
            }
            super::NIC_DRAINED_TOKEN => {
                if std::mem::take(&mut self.waiting_for_nic) {
                    self.send_next(io);
                }
            }
            ALPHA_TIMER => {
                if self.alpha_timer.fire(token, now, ALPHA_TIMER, io.out) && !self.done_sending() {
                    if !self.cnp_since_alpha_update {
                        self.alpha *= 1.0 - self.cfg.g;
                    }
                    self.cnp_since_alpha_update = false;
                    self.alpha_timer
                        .set(now + self.cfg.alpha_period, ALPHA_TIMER, io.out);
                }
            }
            _ => {
                if self.loss_timer.fire(token, now, LOSS_TIMER, io.out)
                    && self.acked < self.packets()
                {
                    io.record.timeouts += 1;
                    self.go_back_to(self.acked);
                    self.arm_loss_timer(io);
                    self.schedule_send(io, now);
                }
            }
        }
        false
    }

    fn done_sending(&self) -> bool {
        self.acked >= self.packets()
    }

    /// Go-back-N: the next packet sent is `seq`; requests at or past it are moot (the
    /// packets that carried them go again, asking again).
    fn go_back_to(&mut self, seq: u64) {
        self.next_seq = seq;
        while self
            .requests
            .back()
            .is_some_and(|&(covers, _)| covers > seq)
        {
            self.requests.pop_back();
        }
    }

    /// Runs the loss timer for the oldest unanswered ACK request, or stops it. Whenever
    /// a request is unanswered the timer runs for the oldest one, so its deadline is
    /// never past: the requests are in the order they left, each answered one goes
    /// from the front, and no request is ever for data already acknowledged.
    fn arm_loss_timer(&mut self, io: &mut Io) {
        match self.requests.front() {
            Some(&(_, sent)) => {
                debug_assert!(
                    sent + self.timeout >= io.now,
                    "a loss deadline already past"
                );
                self.loss_timer.set(sent + self.timeout, LOSS_TIMER, io.out)
            }
            None => self.loss_timer.cancel(),
        }
    }

    fn schedule_send(&mut self, io: &mut Io, at: Time) {
        self.send_timer.set(at, SEND_TIMER, io.out);
    }

    /// Holds new packets back, or releases them.
    pub fn set_held(&mut self, io: &mut Io, held: bool) {
        self.held = held;
        if !held && self.started {
            self.schedule_send(io, io.now);
        }
    }

    /// Caps the sending rate at `rate` (None: DCQCN's rate alone).
    pub fn set_pace(&mut self, _io: &mut Io, rate: Option<Rate>) {
        self.cap = rate;
    }

    /// Sends the next packet and schedules the one after at the current rate.
    fn send_next(&mut self, io: &mut Io) {
        if self.held || self.next_seq >= self.packets() {
            return;
        }
        if io.record.nic_queued_bytes > 0 {
            io.record.nic_blocked = true;
            self.waiting_for_nic = true;
            return;
        }
        let seq = self.next_seq;
        let payload = self.payload_of(seq);
        if seq < self.high_water {
            io.record.retransmissions += 1;
        }
        debug_assert!(seq >= self.acked, "resending packet {seq}, acknowledged");
        let asks = (seq + 1).is_multiple_of(self.cfg.ack_every as u64) || seq + 1 == self.packets();
        let kind = if asks { DATA_ACK_REQUEST } else { DATA };
        let pkt = self.packet(io, true, kind, seq, payload);
        io.record.bytes_sent += payload as u64;
        let wire = pkt.size;
        Self::emit(io, pkt);
        self.next_seq += 1;
        self.high_water = self.high_water.max(self.next_seq);
        self.bytes_since_increase += wire as u64;
        if self.bytes_since_increase >= self.cfg.byte_counter {
            self.bytes_since_increase = 0;
            self.byte_stage += 1;
            self.increase();
        }
        if asks {
            self.requests.push_back((seq + 1, io.now));
            if self.requests.len() == 1 {
                self.arm_loss_timer(io);
            }
        }
        if self.next_seq < self.packets() {
            let rate = self.cap.map_or(self.rate, |cap| self.rate.min(cap as f64));
            let gap = serialization_time(wire, rate as Rate);
            self.schedule_send(io, io.now + gap);
        }
    }

    /// One rate-increase event (timer or byte counter).
    fn increase(&mut self) {
        let f = self.cfg.fast_recovery_stages;
        let (low, high) = (
            self.timer_stage.min(self.byte_stage),
            self.timer_stage.max(self.byte_stage),
        );
        if high < f {
            // Fast recovery: halve the distance to the target.
        } else if low > f {
            self.target += (low - f) as f64 * self.cfg.rate_hai as f64;
        } else {
            self.target += self.cfg.rate_ai as f64;
        }
        let line = self.cfg.line_rate as f64;
        self.target = self.target.min(line);
        self.rate = ((self.target + self.rate) / 2.0).min(line);
    }

    fn on_cnp(&mut self, io: &mut Io) {
        self.cnps += 1;
        self.target = self.rate;
        self.rate = (self.rate * (1.0 - self.alpha / 2.0)).max(self.cfg.min_rate as f64);
        self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g;
        self.cnp_since_alpha_update = true;
        self.timer_stage = 0;
        self.byte_stage = 0;
        self.bytes_since_increase = 0;
        if self.started && !self.done_sending() {
            self.increase_timer
                .set(io.now + self.cfg.timer, INCREASE_TIMER, io.out);
        }
    }

    /// A packet of this flow arrived at its destination host; returns true when the
    /// receiver has the whole message.
    pub fn on_packet(&mut self, io: &mut Io, pkt: &Packet) -> bool {
        if pkt.dst == io.record.dst {
            return self.receive_data(io, pkt);
        }
        match pkt.tcp_flags {
            CNP => self.on_cnp(io),
            ACK | NAK => {
                let upto = self.unwrap(pkt.seq, self.acked);
                if upto > self.acked {
                    self.acked = upto;
                    // Packets that went before a loss timeout may be answered after it:
                    // what the receiver has is never sent again, nor asked about.
                    self.next_seq = self.next_seq.max(upto);
                    while self
                        .requests
                        .front()
                        .is_some_and(|&(covers, _)| covers <= upto)
                    {
                        self.requests.pop_front();
                    }
                    self.arm_loss_timer(io);
                }
                if pkt.tcp_flags == NAK && self.next_seq > upto {
                    // Go back N: resend from the first packet the receiver lacks.
                    self.go_back_to(upto);
                    self.arm_loss_timer(io);
                    if !self.send_timer.is_set() {
                        self.schedule_send(io, io.now);
                    }
                }
            }
            _ => {}
        }
        false
    }

    fn unwrap(&self, seq: u32, near: u64) -> u64 {
        (near as i64 + seq.wrapping_sub(near as u32) as i32 as i64).max(0) as u64
    }

    fn receive_data(&mut self, io: &mut Io, pkt: &Packet) -> bool {
        let now = io.now;
        if pkt.ecn == ECN_CE
            && self
                .last_cnp
                .is_none_or(|t| now - t >= self.cfg.cnp_interval)
        {
            self.last_cnp = Some(now);
            let cnp = self.packet(io, false, CNP, 0, 0);
            Self::emit(io, cnp);
        }
        let seq = self.unwrap(pkt.seq, self.expected);
        let asks = pkt.tcp_flags == DATA_ACK_REQUEST;
        if seq < self.expected {
            // A duplicate: its request is answered again (its ACK may have been lost).
            if asks {
                let ack = self.packet(io, false, ACK, self.expected, 0);
                Self::emit(io, ack);
            }
            return false;
        }
        if seq > self.expected {
            io.record.out_of_order += 1;
            if self.nak_sent_for != Some(self.expected) {
                self.nak_sent_for = Some(self.expected);
                let nak = self.packet(io, false, NAK, self.expected, 0);
                Self::emit(io, nak);
            }
            return false;
        }
        self.expected += 1;
        self.nak_sent_for = None;
        let r = &mut *io.record;
        r.bytes_delivered += pkt.payload as u64;
        r.first_delivery.get_or_insert(now);
        r.last_delivery = Some(now);
        let complete = self.expected == self.packets();
        if asks {
            let ack = self.packet(io, false, ACK, self.expected, 0);
            Self::emit(io, ack);
        }
        if complete && io.record.finish.is_none() {
            io.record.finish = Some(now);
            return true;
        }
        false
    }
}

pub use super::tcp::Io;
