//! TCP NewReno (RFC 5681, RFC 6582) with DCTCP (RFC 8257) as an option: one sender on
//! the source host, one receiver on the destination host.
//!
//! The sender:
//! 1. opens with a SYN; the SYN-ACK gives the first RTT sample; data may follow at once
//!    (the handshake's final ACK rides on the first data segment);
//! 2. sends while bytes in flight fit min(cwnd, rwnd), MSS-sized segments, the last one
//!    carrying FIN; grows cwnd by one MSS per ACKed MSS in slow start, by MSS²/cwnd per
//!    ACKed byte in congestion avoidance;
//! 3. on the third duplicate ACK retransmits and enters fast recovery (ssthresh = half the
//!    flight, cwnd = ssthresh + 3 MSS, +1 MSS per further duplicate); a partial ACK
//!    retransmits the next hole and stays; an ACK covering `recover` deflates cwnd to
//!    ssthresh and leaves;
//! 4. on a retransmission timeout (RFC 6298 estimator, floor `min_rto`, doubled per
//!    consecutive timeout) sets cwnd to one MSS and goes back to the first unacknowledged
//!    byte;
//! 5. with DCTCP: marks data ECN-capable, keeps α ← (1 − g)·α + g·F once per window of
//!    data (F = fraction of ACKed bytes whose ACK carried ECE), and on ECE cuts cwnd by
//!    α/2 at most once per window.
//!
//! The receiver ACKs every `ack_every` in-order segments (or after `delayed_ack_timeout`),
//! at once for anything out of order or filling a hole, buffers out-of-order data (no
//! SACK), echoes the sender's timestamp for RTT measurement, and with DCTCP echoes CE
//! as ECE, acknowledging at once when the CE state changes (RFC 8257 §3.2).
//!
//! Sequence numbers on the wire are 32-bit and wrap; internally both ends count byte
//! offsets in 64 bits and unwrap each number against the nearest expected offset.

use super::reassembly::OutOfOrder;
use super::rtt::RttEstimator;
use super::timer::Timer;
use super::{FlowRecord, Outbox};
use crate::packet::{
    Packet, PacketHeader, ECN_CE, ECN_ECT0, PROTO_TCP, TCP_ACK, TCP_ECE, TCP_FIN, TCP_SYN,
};
use crate::units::{serialization_time, Rate, Time, MS, SEC};

/// IPv4 (20 B) + TCP (20 B) headers; no options are modelled.
pub const TCP_HEADER_BYTES: u32 = 40;
/// The timestamps option (RFC 7323) with its padding: 12 bytes on every segment.
pub const TIMESTAMP_OPTION_BYTES: u32 = 12;

const SENDER_TIMER: u32 = 0;
const RECEIVER_TIMER: u32 = 1;
const PACING_TIMER: u32 = 2;
/// The engine's wake-up for a sender that stopped for small-queue backpressure: its
/// NIC queue drained. Not a restartable timer: a spare wake-up only sends what the
/// windows allow.
const NIC_TIMER: u32 = super::NIC_DRAINED_TOKEN;
/// The engine's notice that the host's NIC queue refused one of this sender's segments
/// (it waits in the host until the queue has room).
const NIC_REFUSED: u32 = super::NIC_REFUSED_TOKEN;

/// DCTCP parameters.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct Dctcp {
    /// DCTCP's EWMA gain for alpha, the fraction of marked bytes.
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
    pub g: f64,
    /// Alpha before the first window is measured (1 halves cwnd at the first mark).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub initial_alpha: f64,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp {
            g: 1.0 / 16.0,
            initial_alpha: 1.0,
        }
    }
}

/// TCP parameters; the defaults are the reference benchmark's (ARCHITECTURE.md §6).
// Crosses into the engine as one value, a field left out taking its default; the
// congestion control comes from the flow's transport (`for_transport`), not from it.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per full segment.
    #[schemars(range(min = 1, max = 65_495), extend("unit" = "bytes"))]
    pub mss: u32,
    /// Initial congestion window.
    #[schemars(range(min = 1), extend("unit" = "segments"))]
    pub initial_cwnd: u32,
    /// Floor of the retransmission timeout.
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub min_rto: Time,
    /// Ceiling of the retransmission timeout (at least min_rto).
    #[schemars(extend("unit" = "ps"))]
    pub max_rto: Time,
    /// Timeout before the first RTT sample (the SYN's).
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub initial_rto: Time,
    /// Receive window: most bytes in flight the receiver allows (at least one mss).
    #[schemars(extend("unit" = "bytes"))]
    pub rwnd: u64,
    /// ACK after this many in-order segments (1: every segment).
    #[schemars(range(min = 1), extend("unit" = "segments"))]
    pub ack_every: u32,
    /// Longest an ACK is delayed when fewer than `ack_every` segments arrived.
    #[schemars(extend("unit" = "ps"))]
    pub delayed_ack_timeout: Time,
    /// DCTCP's marking response, for flows whose transport is DCTCP.
    pub dctcp: Option<Dctcp>,
    /// DCTCP marks its SYN, SYN-ACK and pure ACKs ECN-capable too (RFC 8257 section
    /// 3.4's practice, as Linux's and ns-3's DCTCP do), so a marking queue marks them
    /// instead of dropping them; a CE mark on them is not a congestion signal.
    pub ect_control: bool,
    /// Selective acknowledgements (RFC 2018) and SACK-based loss recovery (RFC 6675),
    /// see transport/sack.rs.
    pub sack: bool,
    /// Grow cwnd only while the window is what limits the sender (RFC 7661's idea, as
    /// Linux's tcp_is_cwnd_limited: in slow start while cwnd < 2 x the flight, after it
    /// while the flight fills cwnd), not while the receive window, small-queue
    /// backpressure or the application holds it back.
    pub cwnd_validation: bool,
    /// A sender with nothing in flight that sent no data for longer than its RTO
    /// restarts from at most its initial window when its application writes again
    /// (RFC 5681 section 4.1; Linux's `tcp_slow_start_after_idle`, on by default).
    pub slow_start_after_idle: bool,
    /// Every segment carries the timestamps option (RFC 7323): 12 more header bytes.
    /// (RTT is measured on every ACK either way: the engine stamps segments itself.)
    pub timestamps: bool,
    /// CUBIC congestion avoidance (RFC 9438) instead of NewReno's.
    #[serde(skip)]
    #[schemars(skip)]
    pub cubic: Option<super::cubic::Cubic>,
    /// Initial sequence number; None draws one from the flow's random stream.
    #[serde(skip)]
    #[schemars(skip)]
    pub isn: Option<u32>,
    /// Small-queue backpressure (Linux's TCP Small Queues): the sender hands its NIC
    /// no more while this many bytes of it wait there: the larger of two full packets
    /// and `small_queue_time` at its pacing rate (cwnd / srtt, times 2 in slow start
    /// and 1.2 after, as Linux paces), at most `SMALL_QUEUE_CAP`. With it, the host also
    /// holds the connection's packets that find its NIC queue full until it has room,
    /// and a refused data segment reduces the window once (Linux's queue disc
    /// backpressure). None: off (the NIC takes whatever the window allows, and drops
    /// beyond its limit).
    #[schemars(extend("unit" = "ps"))]
    pub small_queue_time: Option<Time>,
}

/// Linux's tcp_limit_output_bytes default (1 MiB): the most a flow may queue at its NIC.
pub const SMALL_QUEUE_CAP: u64 = 1 << 20;

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            initial_cwnd: 10,
            min_rto: 5 * MS,
            max_rto: 60 * SEC,
            initial_rto: 5 * MS,
            rwnd: 1 << 20,
            ack_every: 1,
            delayed_ack_timeout: 200 * crate::units::US,
            dctcp: None,
            ect_control: false,
            sack: false,
            cwnd_validation: false,
            slow_start_after_idle: false,
            timestamps: false,
            cubic: None,
            isn: None,
            small_queue_time: None,
        }
    }
}

impl TcpConfig {
    /// These settings for a flow whose transport is `transport`: "dctcp" keeps DCTCP's
    /// marking response (its parameters, or the defaults), "cubic" adds CUBIC's window
    /// growth, anything else is NewReno.
    pub fn for_transport(mut self, transport: &str) -> TcpConfig {
        self.dctcp = (transport == "dctcp").then(|| self.dctcp.unwrap_or_default());
        self.cubic = (transport == "cubic").then(super::cubic::Cubic::default);
        self
    }
}

impl TcpConfig {
    pub fn validate(&self) -> Result<(), String> {
        let checks: [(bool, &str); 7] = [
            (
                self.mss == 0 || self.mss > 65_495,
                "mss must be between 1 and 65495 bytes",
            ),
            (
                self.initial_cwnd == 0,
                "initial_cwnd must be at least 1 segment",
            ),
            (self.min_rto == 0, "min_rto must be greater than zero"),
            (
                self.max_rto < self.min_rto,
                "max_rto must not be below min_rto",
            ),
            (
                self.initial_rto == 0,
                "initial_rto must be greater than zero",
            ),
            (
                self.rwnd < self.mss as u64,
                "rwnd must hold at least one segment (mss)",
            ),
            (self.ack_every == 0, "ack_every must be at least 1"),
        ];
        if let Some((_, message)) = checks.iter().find(|(bad, _)| *bad) {
            return Err(message.to_string());
        }
        if let Some(c) = self.cubic {
            c.validate()?;
            if self.dctcp.is_some() {
                return Err("a flow runs dctcp or cubic, not both".into());
            }
        }
        if let Some(d) = self.dctcp {
            let valid = d.g > 0.0 && d.g <= 1.0 && (0.0..=1.0).contains(&d.initial_alpha);
            if !valid {
                return Err("dctcp g must be in (0, 1] and initial_alpha in [0, 1]".into());
            }
        }
        Ok(())
    }
}

/// Marks a timestamp carried in a packet's tag as present (times stay below 2^63 ps).
const STAMPED: u64 = 1 << 63;

pub(super) fn stamp(pkt: &mut Packet, time: Time) {
    let v = time | STAMPED;
    pkt.options.tag = [v as u32, (v >> 32) as u32];
}

pub(super) fn stamp_of(pkt: &Packet) -> Option<Time> {
    let v = pkt.options.tag[0] as u64 | (pkt.options.tag[1] as u64) << 32;
    (v & STAMPED != 0).then_some(v & !STAMPED)
}

/// Offset of wire sequence number `seq` nearest to `near`, where offset 0 is `base`.
#[inline]
fn unwrap(seq: u32, base: u32, near: u64) -> i64 {
    let near_wire = base.wrapping_add(near as u32);
    near as i64 + seq.wrapping_sub(near_wire) as i32 as i64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the flow's start time.
    Idle,
    SynSent,
    Established,
}

#[derive(Clone)]
pub struct TcpFlow {
    /// Shared by every flow added with the same settings (128 bytes a flow otherwise).
    cfg: std::sync::Arc<TcpConfig>,
    /// Application bytes to deliver.
    size: u64,
    /// A timed source (iperf-like): the application writes `.1`-byte chunks until `.0`;
    /// the size is fixed when the deadline passes.
    writes_until: Option<(Time, u64)>,
    /// Stream offset up to which the application has written (a message stream);
    /// u64::MAX when the whole size is there from the start.
    written: u64,
    iss: u32,
    // ---- sender (on the source host) ----
    phase: Phase,
    syn_sent_at: Time,
    syn_retransmitted: bool,
    /// Offsets in the data sequence space: data bytes 0..size, FIN at size.
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    cwnd: u64,
    ssthresh: u64,
    ca_bytes: u64,
    dupacks: u32,
    in_recovery: bool,
    recover: Option<u64>,
    rtt: RttEstimator,
    rto_timer: Timer,
    alpha: f64,
    window_end: u64,
    window_acked: u64,
    window_marked: u64,
    cwr_end: u64,
    /// Bytes its host's NIC queue holds: small-queue backpressure keeps below it.
    nic_capacity: u64,
    /// When it last sent a data segment (Linux's `lsndtime`).
    last_data_sent: Option<Time>,
    cubic: super::cubic::CubicState,
    hystart: super::cubic::HyStart,
    scoreboard: super::sack::Scoreboard,
    /// Receiver: the SACK blocks its ACKs carry, and where the latest out-of-order
    /// segment began.
    sent_blocks: super::sack::SentBlocks,
    latest_out_of_order: Option<u64>,
    /// A controller holds new data back.
    held: bool,
    /// A controller spaces segments at this rate; the next may leave at `next_send`.
    pace: Option<Rate>,
    next_send: Time,
    pace_timer: Timer,
    // ---- receiver (on the destination host) ----
    rcv_open: bool,
    rcv_nxt: u64,
    out_of_order: OutOfOrder,
    unacked_segments: u32,
    ce_state: bool,
    echo_ts: Option<Time>,
    delack_timer: Timer,
}

impl TcpFlow {
    pub fn new(cfg: std::sync::Arc<TcpConfig>, size: u64, start: Time, iss: u32) -> TcpFlow {
        TcpFlow {
            cfg: cfg.clone(),
            size,
            writes_until: None,
            written: u64::MAX,
            iss,
            phase: Phase::Idle,
            syn_sent_at: 0,
            syn_retransmitted: false,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: cfg.initial_cwnd as u64 * cfg.mss as u64,
            ssthresh: u64::MAX,
            ca_bytes: 0,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            rtt: RttEstimator::new(&cfg),
            rto_timer: Timer::armed_at(start),
            alpha: cfg.dctcp.map_or(0.0, |d| d.initial_alpha),
            window_end: 0,
            window_acked: 0,
            window_marked: 0,
            cwr_end: 0,
            nic_capacity: u64::MAX,
            last_data_sent: None,
            cubic: Default::default(),
            hystart: Default::default(),
            scoreboard: Default::default(),
            sent_blocks: Default::default(),
            latest_out_of_order: None,
            held: false,
            pace: None,
            next_send: 0,
            pace_timer: Timer::default(),
            rcv_open: false,
            rcv_nxt: 0,
            out_of_order: OutOfOrder::default(),
            unacked_segments: 0,
            ce_state: false,
            echo_ts: None,
            delack_timer: Timer::default(),
        }
    }

    /// One past the last sequence offset: the data, then the FIN.
    fn end(&self) -> u64 {
        self.size + 1
    }

    /// Makes this a timed source: it sends as fast as TCP allows until `deadline`, then
    /// finishes the `write_size`-byte write in progress (iperf's default is 10 s of 128 KB
    /// writes). Until then its size is unbounded.
    pub fn write_until(&mut self, deadline: Time, write_size: u64) {
        self.size = u64::MAX / 4;
        self.writes_until = Some((deadline, write_size));
    }

    /// Makes this a message stream: nothing is sent until the application writes, and
    /// the FIN only follows `close`.
    pub fn open_stream(&mut self) {
        self.size = u64::MAX / 4;
        self.written = 0;
    }

    /// The application writes `bytes` more (a message stream).
    pub fn write(&mut self, io: &mut Io, bytes: u64) {
        self.restart_after_idle(io.now);
        self.written += bytes;
        if self.phase == Phase::Established {
            self.send_data(io);
        }
    }

    /// Linux's `tcp_cwnd_restart` after an idle spell (`slow_start_after_idle`): ssthresh
    /// keeps at least 3/4 of the window, then the window halves once per RTO the sender
    /// was idle beyond the first, down to no less than the initial window (or itself,
    /// if smaller).
    fn restart_after_idle(&mut self, now: Time) {
        let Some(last) = self.last_data_sent else {
            return;
        };
        let rto = self.rtt.rto();
        let mut idle = now.saturating_sub(last);
        let in_flight = self.snd_una < self.snd_max;
        if !self.cfg.slow_start_after_idle || in_flight || idle <= rto {
            return;
        }
        if !self.in_recovery {
            self.ssthresh = self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4);
        }
        let restart = (self.cfg.initial_cwnd as u64 * self.cfg.mss as u64).min(self.cwnd);
        let mut cwnd = self.cwnd;
        while idle > rto && cwnd > restart {
            idle -= rto;
            cwnd /= 2;
        }
        self.cwnd = cwnd.max(restart);
        self.ca_bytes = 0;
    }

    /// The application writes nothing more: the size is what it wrote, then the FIN.
    pub fn close(&mut self, io: &mut Io) {
        self.size = self.written.min(self.size);
        self.written = u64::MAX;
        io.record.size = self.size;
        if self.phase == Phase::Established {
            self.send_data(io);
        }
    }

    /// One past the last offset the sender may send now: the data written so far, then
    /// the FIN once the application has closed.
    fn sendable_end(&self) -> u64 {
        if self.written >= self.size {
            self.end()
        } else {
            self.written
        }
    }

    /// Everything the application wrote so far is acknowledged (a stream between
    /// messages, or a finished flow): no retransmission timer is due.
    fn all_acked(&self) -> bool {
        self.snd_una == self.end() || self.snd_una == self.written
    }

    fn close_writes_if_due(&mut self, io: &mut Io) {
        if let Some((deadline, write)) = self.writes_until {
            if io.now >= deadline {
                self.size = self.snd_max.div_ceil(write).max(1) * write;
                io.record.size = self.size;
                self.writes_until = None;
            }
        }
    }

    /// The size of its host's NIC queue, in bytes (small-queue backpressure never fills
    /// it: a lone flow then loses nothing at its own NIC).
    pub fn set_nic_capacity(&mut self, bytes: u64) {
        self.nic_capacity = bytes;
    }

    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// CUBIC's W_max (segments), K (s) and epoch start, when the flow runs CUBIC.
    pub fn cubic_state(&self) -> Option<super::cubic::CubicView> {
        self.cfg.cubic.map(|_| self.cubic.state())
    }

    /// The slow-start threshold after a congestion event with `flight` bytes out:
    /// NewReno halves the flight; CUBIC keeps β of the window and starts a new epoch.
    fn reduced_ssthresh(&mut self, flight: u64) -> u64 {
        let mss = self.cfg.mss as u64;
        match self.cfg.cubic {
            Some(c) => self.cubic.on_congestion(&c, self.cwnd, mss),
            None => (flight / 2).max(2 * mss),
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn sender_done(&self) -> bool {
        self.phase == Phase::Established && self.snd_una == self.end()
    }

    // ---- events --------------------------------------------------------------------

    /// A timer of this flow fired. Returns true if the flow just finished (never here).
    pub fn on_timer(&mut self, io: &mut Io, token: u32) -> bool {
        match token & super::timer::TIMER_KIND_MASK {
            SENDER_TIMER => {
                if self.rto_timer.fire(token, io.now, SENDER_TIMER, io.out) {
                    self.on_rto(io);
                }
            }
            PACING_TIMER => {
                if self.pace_timer.fire(token, io.now, PACING_TIMER, io.out) {
                    self.send_more(io);
                }
            }
            NIC_TIMER => {
                if self.phase == Phase::Established {
                    self.send_more(io);
                }
            }
            NIC_REFUSED => self.on_local_congestion(),
            _ => {
                if self
                    .delack_timer
                    .fire(token, io.now, RECEIVER_TIMER, io.out)
                    && self.unacked_segments > 0
                {
                    self.send_ack(io);
                }
            }
        }
        false
    }

    /// A packet of this flow reached its destination host. Returns true if the receiver
    /// has just received the last application byte.
    pub fn on_packet(&mut self, io: &mut Io, pkt: &Packet) -> bool {
        if pkt.dst == io.record.dst {
            self.receive_segment(io, pkt)
        } else {
            self.receive_ack(io, pkt);
            false
        }
    }

    fn on_rto(&mut self, io: &mut Io) {
        match self.phase {
            Phase::Idle => {
                self.phase = Phase::SynSent;
                self.send_syn(io);
            }
            Phase::SynSent => {
                io.record.timeouts += 1;
                self.syn_retransmitted = true;
                self.rtt.back_off();
                self.send_syn(io);
            }
            Phase::Established => {
                if self.all_acked() {
                    return;
                }
                io.record.timeouts += 1;
                let flight = self.snd_max - self.snd_una;
                self.ssthresh = self.reduced_ssthresh(flight);
                self.cwnd = self.cfg.mss as u64;
                self.ca_bytes = 0;
                self.in_recovery = false;
                self.dupacks = 0;
                self.recover = Some(self.snd_max);
                self.snd_nxt = self.snd_una;
                self.scoreboard.clear();
                self.rtt.back_off();
                self.send_data(io);
            }
        }
    }

    /// Its NIC queue refused a segment. Linux's TCP takes that local drop as congestion
    /// (`tcp_enter_cwr`): the window shrinks as its congestion control would on an ECN
    /// echo, at most once per window of data, outside loss recovery.
    fn on_local_congestion(&mut self) {
        let may_reduce = self.cwr_end == 0 || self.snd_una > self.cwr_end;
        if self.phase != Phase::Established || self.in_recovery || !may_reduce {
            return;
        }
        let mss = self.cfg.mss as u64;
        self.ssthresh = match self.cfg.dctcp {
            Some(_) => ((self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64).max(2 * mss),
            None => self.reduced_ssthresh(self.snd_max - self.snd_una),
        };
        self.cwnd = self.cwnd.min(self.ssthresh);
        self.ca_bytes = 0;
        self.cwr_end = self.snd_nxt;
    }

    /// Holds new data back, or releases it and sends what the window allows.
    pub fn set_held(&mut self, io: &mut Io, held: bool) {
        self.held = held;
        if !held && self.phase == Phase::Established {
            self.send_data(io);
        }
    }

    /// Spaces new segments at `rate` (None: send as the window allows).
    pub fn set_pace(&mut self, io: &mut Io, rate: Option<Rate>) {
        self.pace = rate;
        self.next_send = io.now;
        if self.phase == Phase::Established {
            self.send_data(io);
        }
    }

    // ---- sender ----------------------------------------------------------------------

    fn packet(
        &self,
        io: &Io,
        from_sender: bool,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: u32,
    ) -> Packet {
        let mut pkt = segment(io, from_sender, io.src_port, flags, payload);
        pkt.seq = seq;
        pkt.ack = ack;
        pkt
    }

    /// Header bytes on every segment of this flow.
    fn header_bytes(&self) -> u32 {
        TCP_HEADER_BYTES
            + if self.cfg.timestamps {
                TIMESTAMP_OPTION_BYTES
            } else {
                0
            }
    }

    fn emit(&self, io: &mut Io, pkt: Packet) {
        self.emit_with_options(io, pkt, 0);
    }

    /// Sends `pkt` with `options` bytes of TCP options beyond the fixed ones.
    fn emit_with_options(&self, io: &mut Io, mut pkt: Packet, options: u32) {
        pkt.size = pkt.payload + self.header_bytes() + options;
        // Small-queue backpressure is a Linux host's; so is its queue disc's.
        pkt.held_when_nic_full = self.cfg.small_queue_time.is_some();
        if pkt.payload == 0 && self.cfg.ect_control && self.cfg.dctcp.is_some() {
            pkt.ecn = ECN_ECT0;
        }
        io.record.packets_sent += 1;
        io.out.packets.push(pkt);
    }

    fn send_syn(&mut self, io: &mut Io) {
        self.syn_sent_at = io.now;
        let syn = self.packet(io, true, self.iss, 0, TCP_SYN, 0);
        self.emit(io, syn);
        self.rto_timer
            .set(io.now + self.rtt.rto(), SENDER_TIMER, io.out);
    }

    /// Sends what the windows allow: by SACK's rules in a SACK recovery, else new or
    /// go-back-N segments.
    fn send_more(&mut self, io: &mut Io) {
        if self.cfg.sack && self.in_recovery {
            self.sack_send(io);
        } else {
            self.send_data(io);
        }
    }

    /// RFC 6675 during recovery: while the bytes in flight leave room for a segment,
    /// the lowest lost hole not yet retransmitted, else new data.
    fn sack_send(&mut self, io: &mut Io) {
        let mss = self.cfg.mss as u64;
        let nic_limit = self.small_queue_limit();
        let mut at_nic = io.record.nic_queued_bytes;
        loop {
            let pipe = self.scoreboard.pipe(self.snd_una, self.snd_max, mss);
            if pipe + mss > self.cwnd {
                break;
            }
            if nic_limit.is_some_and(|limit| at_nic >= limit) {
                io.record.nic_blocked = true;
                break;
            }
            if let Some((start, end)) = self.scoreboard.next_lost_hole(self.snd_una, mss) {
                let len = mss.min(end - start).min(self.size.saturating_sub(start));
                let fin = start + len == self.size;
                self.send_segment(io, start, len, fin);
                self.scoreboard.retransmitted_to = start + len + fin as u64;
                at_nic += len + self.header_bytes() as u64;
                continue;
            }
            if self.held || self.snd_nxt >= self.sendable_end() {
                break;
            }
            let limit = self.size.min(self.written);
            let len = mss.min(limit - self.snd_nxt.min(limit));
            if self.snd_nxt + len > self.snd_una + self.cfg.rwnd {
                break;
            }
            let fin = self.snd_nxt + len == self.size;
            self.send_segment(io, self.snd_nxt, len, fin);
            self.snd_nxt += len + fin as u64;
            self.snd_max = self.snd_max.max(self.snd_nxt);
            at_nic += len + self.header_bytes() as u64;
        }
    }

    /// Sends new or go-back-N segments while the window allows.
    fn send_data(&mut self, io: &mut Io) {
        self.close_writes_if_due(io);
        if self.held {
            return;
        }
        let mss = self.cfg.mss as u64;
        let window = self.cwnd.min(self.cfg.rwnd);
        let nic_limit = self.small_queue_limit();
        // What this call hands the NIC counts at once: the packets reach it afterwards.
        let mut at_nic = io.record.nic_queued_bytes;
        let limit = self.size.min(self.written);
        while self.snd_nxt < self.sendable_end() {
            let len = mss.min(limit - self.snd_nxt.min(limit));
            let fin = self.snd_nxt + len == self.size;
            if self.snd_nxt > self.snd_una && self.snd_nxt + len > self.snd_una + window {
                break;
            }
            if nic_limit.is_some_and(|limit| at_nic >= limit) {
                io.record.nic_blocked = true;
                break;
            }
            at_nic += len + self.header_bytes() as u64;
            if let Some(rate) = self.pace {
                if io.now < self.next_send {
                    self.pace_timer.set(self.next_send, PACING_TIMER, io.out);
                    break;
                }
                self.next_send =
                    io.now + serialization_time(len as u32 + self.header_bytes(), rate);
            }
            self.send_segment(io, self.snd_nxt, len, fin);
            self.snd_nxt += len + fin as u64;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
    }

    /// The most bytes this sender lets wait at its NIC, if small-queue backpressure is
    /// on (see `TcpConfig::small_queue_time`).
    fn small_queue_limit(&self) -> Option<u64> {
        let horizon = self.cfg.small_queue_time?;
        let two_packets = 2 * (self.cfg.mss as u64 + self.header_bytes() as u64);
        let rate_bps = match (self.pace, self.rtt.srtt()) {
            (Some(rate), _) => rate as f64,
            (None, Some(srtt)) if srtt > 0 => {
                let gain = if self.cwnd < self.ssthresh { 2.0 } else { 1.2 };
                gain * self.cwnd as f64 * 8.0 / (srtt as f64 / 1e12)
            }
            _ => 0.0,
        };
        let at_rate = (rate_bps / 8.0 * horizon as f64 / 1e12) as u64;
        let cap = SMALL_QUEUE_CAP.min(self.nic_capacity.saturating_sub(two_packets));
        Some(two_packets.max(at_rate.min(cap)))
    }

    fn send_segment(&mut self, io: &mut Io, offset: u64, len: u64, fin: bool) {
        if offset < self.snd_max {
            io.record.retransmissions += 1;
        }
        let seq = self.iss.wrapping_add(1).wrapping_add(offset as u32);
        let flags = TCP_ACK | if fin { TCP_FIN } else { 0 };
        let mut pkt = self.packet(io, true, seq, 0, flags, len as u32);
        if self.cfg.dctcp.is_some() {
            pkt.ecn = ECN_ECT0;
        }
        pkt.remaining = self.size.saturating_sub(offset);
        stamp(&mut pkt, io.now);
        self.last_data_sent = Some(io.now);
        io.record.bytes_sent += len;
        self.emit(io, pkt);
        if !self.rto_timer.is_set() {
            self.rto_timer
                .set(io.now + self.rtt.rto(), SENDER_TIMER, io.out);
        }
    }

    /// Retransmits the segment starting at the first unacknowledged byte.
    fn retransmit_first(&mut self, io: &mut Io) {
        let limit = self.size.min(self.written);
        let len = (self.cfg.mss as u64).min(limit.saturating_sub(self.snd_una));
        let fin = self.snd_una + len == self.size;
        self.send_segment(io, self.snd_una, len, fin);
    }

    fn receive_ack(&mut self, io: &mut Io, pkt: &Packet) {
        if pkt.tcp_flags & TCP_SYN != 0 {
            if self.phase == Phase::SynSent {
                self.phase = Phase::Established;
                if !self.syn_retransmitted {
                    self.rtt.sample(io.now - self.syn_sent_at);
                } else {
                    self.rtt.floor();
                }
                self.rto_timer.cancel();
                self.window_end = 0;
                self.send_data(io);
            }
            return;
        }
        if self.phase != Phase::Established {
            return;
        }
        let ack = unwrap(pkt.ack, self.iss.wrapping_add(1), self.snd_una);
        if ack < self.snd_una as i64 || ack > self.snd_max as i64 {
            return;
        }
        let ack = ack as u64;
        let ece = pkt.tcp_flags & TCP_ECE != 0;
        if self.cfg.sack {
            let blocks = match pkt.options.data_seq {
                0 => Vec::new(),
                id => self.sent_blocks.take(id).unwrap_or_default(),
            };
            self.scoreboard.update(ack.max(self.snd_una), &blocks);
        }
        if ack > self.snd_una {
            self.on_new_ack(io, pkt, ack, ece);
        } else if self.snd_una < self.snd_max {
            self.on_duplicate_ack(io);
        }
    }

    fn on_new_ack(&mut self, io: &mut Io, pkt: &Packet, ack: u64, ece: bool) {
        let mss = self.cfg.mss as u64;
        let flight = self.snd_max - self.snd_una;
        let window_limited = !self.cfg.cwnd_validation
            || if self.cwnd < self.ssthresh {
                self.cwnd < 2 * flight
            } else {
                flight + mss >= self.cwnd
            };
        let acked = ack - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        let rtt_sample = stamp_of(pkt).map(|sent_at| io.now.saturating_sub(sent_at));
        if let Some(rtt) = rtt_sample {
            self.rtt.sample(rtt);
        }
        if let Some(d) = self.cfg.dctcp {
            self.window_acked += acked;
            if ece {
                self.window_marked += acked;
            }
            if self.snd_una > self.window_end {
                let fraction = self.window_marked as f64 / self.window_acked.max(1) as f64;
                self.alpha = (1.0 - d.g) * self.alpha + d.g * fraction;
                self.window_acked = 0;
                self.window_marked = 0;
                self.window_end = self.snd_nxt;
            }
        }
        if self.in_recovery {
            if self.recover.is_some_and(|r| ack >= r) {
                self.cwnd = self.ssthresh;
                self.in_recovery = false;
            } else if self.cfg.sack {
                // A partial ACK: SACK's rules choose what to send, below.
            } else {
                self.retransmit_first(io);
                self.cwnd = self.cwnd.saturating_sub(acked).max(mss) + mss;
            }
        } else if ece && self.cfg.dctcp.is_some() && self.snd_una > self.cwr_end {
            self.cwnd = ((self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64).max(2 * mss);
            self.ssthresh = self.cwnd;
            self.ca_bytes = 0;
            self.cwr_end = self.snd_nxt;
        } else if !window_limited {
            // Something else holds the sender back: the window it does not use stays.
        } else if self.cwnd < self.ssthresh {
            self.cwnd += acked.min(mss);
            let segments = self.cwnd as f64 / mss as f64;
            if let (Some(_), Some(rtt)) = (self.cfg.cubic, rtt_sample) {
                if self
                    .hystart
                    .on_ack(rtt, self.snd_una, self.snd_nxt, segments)
                {
                    self.ssthresh = self.cwnd;
                }
            }
        } else if let Some(c) = self.cfg.cubic {
            let srtt = self.rtt.srtt().unwrap_or(0);
            self.cwnd = self.cubic.on_ack(&c, io.now, srtt, self.cwnd, acked, mss);
        } else {
            self.ca_bytes += acked;
            if self.ca_bytes >= self.cwnd {
                self.ca_bytes -= self.cwnd;
                self.cwnd += mss;
            }
        }
        self.dupacks = 0;
        if self.all_acked() {
            self.rto_timer.cancel();
        } else {
            self.rto_timer
                .set(io.now + self.rtt.rto(), SENDER_TIMER, io.out);
        }
        self.send_more(io);
    }

    fn on_duplicate_ack(&mut self, io: &mut Io) {
        let mss = self.cfg.mss as u64;
        self.dupacks += 1;
        let sack_loss = self.cfg.sack && self.scoreboard.is_lost(self.snd_una, mss);
        if self.in_recovery {
            if !self.cfg.sack {
                self.cwnd += mss;
            }
        } else if (self.dupacks == 3 || sack_loss) && self.recover.is_none_or(|r| self.snd_una > r)
        {
            if self.cfg.sack {
                // RFC 6675: cwnd = ssthresh, and pipe decides what may leave.
                let flight = self.snd_max - self.snd_una;
                self.ssthresh = self.reduced_ssthresh(flight);
                self.cwnd = self.ssthresh;
                self.recover = Some(self.snd_max);
                self.in_recovery = true;
                self.scoreboard.retransmitted_to = self.snd_una;
                self.rto_timer
                    .set(io.now + self.rtt.rto(), SENDER_TIMER, io.out);
                self.sack_send(io);
                return;
            }
            let flight = self.snd_max - self.snd_una;
            self.ssthresh = self.reduced_ssthresh(flight);
            self.recover = Some(self.snd_max);
            self.in_recovery = true;
            self.retransmit_first(io);
            self.cwnd = self.ssthresh + 3 * mss;
            self.rto_timer
                .set(io.now + self.rtt.rto(), SENDER_TIMER, io.out);
        }
        self.send_more(io);
    }

    // ---- receiver --------------------------------------------------------------------

    fn receive_segment(&mut self, io: &mut Io, pkt: &Packet) -> bool {
        if pkt.tcp_flags & TCP_SYN != 0 {
            self.rcv_open = true;
            let ack = self.iss.wrapping_add(1);
            let syn_ack = self.packet(io, false, 0, ack, TCP_SYN | TCP_ACK, 0);
            self.emit(io, syn_ack);
            return false;
        }
        if !self.rcv_open {
            return false;
        }
        let ce = pkt.ecn == ECN_CE;
        if self.cfg.dctcp.is_some() && ce != self.ce_state {
            if self.unacked_segments > 0 {
                self.send_ack(io);
            }
            self.ce_state = ce;
        }
        let start = unwrap(pkt.seq, self.iss.wrapping_add(1), self.rcv_nxt);
        let end = start + pkt.payload as i64 + (pkt.tcp_flags & TCP_FIN != 0) as i64;
        let sent_at = stamp_of(pkt);
        let before = self.rcv_nxt;
        if end <= self.rcv_nxt as i64 || start < 0 {
            // A duplicate: ACK at once so the sender learns where we are.
            self.echo_ts = sent_at;
            self.send_ack(io);
            return false;
        }
        let (start, end) = (start as u64, end as u64);
        if start > self.rcv_nxt {
            io.record.out_of_order += 1;
            self.out_of_order.insert(start, end);
            self.latest_out_of_order = Some(start);
            self.echo_ts = self.echo_ts.or(sent_at);
            self.send_ack(io);
            return false;
        }
        self.rcv_nxt = end;
        let filled_hole = !self.out_of_order.is_empty();
        self.out_of_order.advance(&mut self.rcv_nxt);
        self.echo_ts = self.echo_ts.or(sent_at);
        self.unacked_segments += 1;
        if filled_hole || self.unacked_segments >= self.cfg.ack_every || self.rcv_nxt >= self.end()
        {
            self.send_ack(io);
        } else if !self.delack_timer.is_set() {
            self.delack_timer.set(
                io.now + self.cfg.delayed_ack_timeout,
                RECEIVER_TIMER,
                io.out,
            );
        }
        self.record_delivery(io, before)
    }

    /// Updates the flow record after the in-order point moved from `before`.
    fn record_delivery(&mut self, io: &mut Io, before: u64) -> bool {
        let delivered_before = before.min(self.size);
        let delivered = self.rcv_nxt.min(self.size);
        let r = &mut *io.record;
        if delivered > delivered_before {
            r.bytes_delivered = delivered;
            r.first_delivery.get_or_insert(io.now);
            r.last_delivery = Some(io.now);
        }
        // A message stream's data may all be there before its close sets the size: its
        // FIN then finishes it.
        if delivered == self.size && r.finish.is_none() {
            r.finish = Some(io.now);
            return true;
        }
        false
    }

    fn send_ack(&mut self, io: &mut Io) {
        let ack = self.iss.wrapping_add(1).wrapping_add(self.rcv_nxt as u32);
        let flags = TCP_ACK | if self.ce_state { TCP_ECE } else { 0 };
        let mut pkt = self.packet(io, false, 0, ack, flags, 0);
        if let Some(ts) = self.echo_ts.take() {
            stamp(&mut pkt, ts);
        }
        self.unacked_segments = 0;
        self.delack_timer.cancel();
        let mut options = 0;
        if self.cfg.sack && !self.out_of_order.is_empty() {
            use super::sack::{blocks_to_send, BLOCK_BYTES, OPTION_BYTES};
            // Four blocks fit in TCP's 40 option bytes; three beside timestamps.
            let max = if self.cfg.timestamps { 3 } else { 4 };
            let blocks = blocks_to_send(self.out_of_order.ranges(), self.latest_out_of_order, max);
            options = OPTION_BYTES + BLOCK_BYTES * blocks.len() as u32;
            pkt.options.data_seq = self.sent_blocks.record(blocks);
        }
        self.emit_with_options(io, pkt, options);
    }
}

/// What a TCP handler works with: the clock, the flow's identity and record, and the
/// outbox for packets and timers.
/// A TCP segment of the flow `io` serves, from its sender (on `sender_port`) to its
/// receiver or back.
pub(super) fn segment(
    io: &Io,
    from_sender: bool,
    sender_port: u16,
    flags: u8,
    payload: u32,
) -> Packet {
    let (src, dst, src_port, dst_port) = if from_sender {
        (io.record.src, io.record.dst, sender_port, io.dst_port)
    } else {
        (io.record.dst, io.record.src, io.dst_port, sender_port)
    };
    PacketHeader {
        src,
        dst,
        src_port,
        dst_port,
        proto: PROTO_TCP,
        size: payload + TCP_HEADER_BYTES,
        payload,
        tcp_flags: flags,
        flow: io.flow,
        created: io.now,
        ..Default::default()
    }
    .into()
}

pub struct Io<'a> {
    pub now: Time,
    pub flow: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub record: &'a mut FlowRecord,
    pub out: &'a mut Outbox,
}

impl<'a> Io<'a> {
    /// The context of flow `flow` at `now`, with its (source, destination) ports.
    pub fn new(
        flow: u32,
        now: Time,
        ports: (u16, u16),
        record: &'a mut FlowRecord,
        out: &'a mut Outbox,
    ) -> Self {
        Io {
            now,
            flow,
            src_port: ports.0,
            dst_port: ports.1,
            record,
            out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_handles_sequence_wrap() {
        let base = u32::MAX - 10;
        assert_eq!(unwrap(base.wrapping_add(5), base, 0), 5);
        assert_eq!(unwrap(base.wrapping_add(20), base, 15), 20);
        assert_eq!(unwrap(3, base, 12), 14);
        let far = 5_000_000_000u64;
        assert_eq!(
            unwrap(base.wrapping_add(far as u32), base, far - 1000),
            far as i64
        );
        assert_eq!(
            unwrap(base.wrapping_add((far - 7) as u32), base, far),
            far as i64 - 7
        );
    }

    #[test]
    fn a_refused_segment_reduces_the_window_once_per_window_of_data() {
        let cfg = std::sync::Arc::new(TcpConfig::default());
        let mss = cfg.mss as u64;
        let mut flow = TcpFlow::new(cfg, 100 * mss, 0, 0);
        flow.phase = Phase::Established;
        (flow.snd_una, flow.snd_nxt, flow.snd_max) = (0, 40 * mss, 40 * mss);
        flow.cwnd = 40 * mss;
        let (mut record, mut out) = (FlowRecord::default(), Outbox::default());
        let mut refuse = |flow: &mut TcpFlow| {
            let mut io = Io::new(0, 0, (1, 2), &mut record, &mut out);
            flow.on_timer(&mut io, super::super::NIC_REFUSED_TOKEN);
        };
        // NewReno halves the flight, and leaves slow start.
        refuse(&mut flow);
        assert_eq!((flow.cwnd, flow.ssthresh), (20 * mss, 20 * mss));
        // Further refusals in the same window of data change nothing.
        flow.snd_una = 30 * mss;
        refuse(&mut flow);
        assert_eq!(flow.cwnd, 20 * mss);
        // Once the window sent at the reduction is acknowledged, a refusal counts again.
        (flow.snd_una, flow.snd_nxt, flow.snd_max) = (41 * mss, 61 * mss, 61 * mss);
        refuse(&mut flow);
        assert_eq!((flow.cwnd, flow.ssthresh), (10 * mss, 10 * mss));
        // Loss recovery has reduced the window already.
        (flow.snd_una, flow.in_recovery) = (62 * mss, true);
        refuse(&mut flow);
        assert_eq!(flow.cwnd, 10 * mss);
    }

    #[test]
    fn invalid_configurations_are_named() {
        let bad = TcpConfig {
            initial_cwnd: 0,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("initial_cwnd"));
        let bad = TcpConfig {
            dctcp: Some(Dctcp {
                g: 0.0,
                initial_alpha: 1.0,
            }),
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("dctcp g"));
        assert!(TcpConfig::default().validate().is_ok());
    }
}
