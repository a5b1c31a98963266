//! MPTCP with RFC 6356's coupled congestion control ("LIA").
//!
//! 1. A connection opens `subflows` TCP subflows at once, each with its own source port,
//!    so ECMP hashes them onto (possibly) different paths; each does its own handshake.
//! 2. Whenever a subflow's window has room, the connection hands it the next MSS of
//!    unsent data (subflows with the lowest smoothed RTT are served first); the segment
//!    carries both its subflow sequence number and its data sequence number.
//! 3. Each subflow recovers its own losses like NewReno (three duplicate ACKs: fast
//!    retransmit and halve; timeout: back to one MSS), resending the same data mapping.
//! 4. Congestion avoidance is coupled: an ACK of `acked` bytes on subflow i raises its
//!    window by min(a·acked·MSS/W, acked·MSS/w_i), W the windows' sum and
//!    a = W·max_i(w_i/rtt_i²)/(Σ_i w_i/rtt_i)², so the connection takes no more than a
//!    single TCP would on a shared bottleneck (RFC 6356 goal 2) and moves traffic off
//!    congested paths; slow start is per subflow.
//! 5. The receiver ACKs every segment on its subflow (subflow cumulative ACK plus the
//!    data-level cumulative ACK) and reassembles the data in order; the flow is complete
//!    when every data byte has arrived.
//! 6. A controller may pace each subflow (`set_subflow_pace`): new segments on it leave at
//!    most at the given rate, and a rate of zero gives it no new data at all (what it
//!    already sent is still recovered). Controllers that place subflows on paths and
//!    provision a rate per path (OFPT) enforce the rates this way.

use super::reassembly::OutOfOrder;
use super::rtt::RttEstimator;
use super::tcp::{segment, stamp, stamp_of, Io, TcpConfig, TCP_HEADER_BYTES};
use super::timer::Timer;
use crate::packet::{Packet, TCP_ACK, TCP_SYN};
use crate::units::{serialization_time, Rate, Time};

/// Timer kind of the connection's pacing timer; kinds below it are subflows' RTO timers.
const PACING_TIMER: u32 = 16;

#[derive(Clone, Debug, Default)]
struct Subflow {
    established: bool,
    syn_sent_at: Time,
    // sender, in this subflow's byte sequence space
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    in_recovery: bool,
    recover: u64,
    rtt: RttEstimator,
    timer: Timer,
    /// A controller's rate for new segments (Some(0): none), and the last paced segment
    /// (when it left, its bytes): the next may leave one serialization of it later at
    /// the current rate, so a new rate applies at once, never buying an early send.
    pace: Option<Rate>,
    last_paced: Option<(Time, u32)>,
    /// (subflow offset, data offset, length) of every segment sent and not yet acked.
    mapping: Vec<(u64, u64, u32)>,
    // receiver
    rcv_open: bool,
    rcv_nxt: u64,
    out_of_order: OutOfOrder,
}

#[derive(Clone)]
pub struct MptcpFlow {
    cfg: TcpConfig,
    size: u64,
    subflows: Vec<Subflow>,
    opened: bool,
    /// Next data byte no subflow has been given yet.
    data_next: u64,
    data_acked: u64,
    pace_timer: Timer,
    // receiver
    data_rcv_nxt: u64,
    data_ooo: OutOfOrder,
}

impl MptcpFlow {
    pub fn new(cfg: TcpConfig, subflows: u8, size: u64, start: Time) -> MptcpFlow {
        let mss = cfg.mss as f64;
        let mut flows: Vec<Subflow> = (0..subflows.max(1))
            .map(|_| Subflow {
                cwnd: cfg.initial_cwnd as f64 * mss,
                ssthresh: f64::MAX,
                rtt: RttEstimator::new(&cfg),
                ..Default::default()
            })
            .collect();
        flows[0].timer = Timer::armed_at(start);
        MptcpFlow {
            cfg,
            size,
            subflows: flows,
            opened: false,
            data_next: 0,
            data_acked: 0,
            pace_timer: Timer::default(),
            data_rcv_nxt: 0,
            data_ooo: OutOfOrder::default(),
        }
    }

    /// Each subflow's congestion window in bytes.
    pub fn windows(&self) -> Vec<f64> {
        self.subflows.iter().map(|s| s.cwnd).collect()
    }

    pub fn subflow_count(&self) -> usize {
        self.subflows.len()
    }

    /// Paces new segments on subflow `i` at `rate` (Some(0): no new data on it; None:
    /// as its window allows), then sends what the subflows may.
    pub fn set_subflow_pace(&mut self, io: &mut Io, i: usize, rate: Option<Rate>) {
        self.subflows[i].pace = rate;
        if self.opened && self.data_acked < self.size {
            self.send(io);
        }
    }

    fn packet(
        &self,
        io: &Io,
        subflow: usize,
        from_sender: bool,
        flags: u8,
        payload: u32,
    ) -> Packet {
        let port = io.src_port.wrapping_add(subflow as u16 * 1000);
        segment(io, from_sender, port, flags, payload)
    }

    fn emit(io: &mut Io, pkt: Packet) {
        io.record.packets_sent += 1;
        io.out.packets.push(pkt);
    }

    /// Which subflow a packet belongs to, from its port.
    fn subflow_of(&self, io: &Io, pkt: &Packet, from_sender: bool) -> usize {
        let port = if from_sender {
            pkt.src_port
        } else {
            pkt.dst_port
        };
        (port.wrapping_sub(io.src_port) / 1000) as usize
    }

    pub fn on_timer(&mut self, io: &mut Io, token: u32) -> bool {
        let kind = token & super::timer::TIMER_KIND_MASK;
        if kind == PACING_TIMER {
            if self.pace_timer.fire(token, io.now, PACING_TIMER, io.out) {
                self.send(io);
            }
            return false;
        }
        let i = kind as usize;
        if i >= self.subflows.len() || !self.subflows[i].timer.fire(token, io.now, i as u32, io.out)
        {
            return false;
        }
        if !self.opened {
            self.opened = true;
            for k in 0..self.subflows.len() {
                self.send_syn(io, k);
            }
            return false;
        }
        let sf = &mut self.subflows[i];
        if !sf.established {
            io.record.timeouts += 1;
            sf.rtt.back_off();
            self.send_syn(io, i);
            return false;
        }
        if sf.snd_una == sf.snd_max {
            return false;
        }
        io.record.timeouts += 1;
        let mss = self.cfg.mss as f64;
        let flight = (sf.snd_max - sf.snd_una) as f64;
        sf.ssthresh = (flight / 2.0).max(2.0 * mss);
        sf.cwnd = mss;
        sf.in_recovery = false;
        sf.dupacks = 0;
        sf.recover = sf.snd_max;
        sf.snd_nxt = sf.snd_una;
        sf.rtt.back_off();
        self.send(io);
        false
    }

    fn send_syn(&mut self, io: &mut Io, i: usize) {
        let syn = self.packet(io, i, true, TCP_SYN, 0);
        Self::emit(io, syn);
        let sf = &mut self.subflows[i];
        sf.syn_sent_at = io.now;
        sf.timer.set(io.now + sf.rtt.rto(), i as u32, io.out);
    }

    /// Sends on every subflow with window room, lowest RTT first.
    fn send(&mut self, io: &mut Io) {
        let mut order: Vec<usize> = (0..self.subflows.len())
            .filter(|&i| self.subflows[i].established)
            .collect();
        order.sort_by_key(|&i| self.subflows[i].rtt.srtt().unwrap_or(Time::MAX));
        for i in order {
            self.send_on(io, i);
        }
    }

    /// Sends on subflow `i` while its window allows: go-back-N segments after a timeout
    /// (snd_nxt below snd_max), else new data.
    fn send_on(&mut self, io: &mut Io, i: usize) {
        let mss = self.cfg.mss as u64;
        loop {
            let sf = &self.subflows[i];
            let window = (sf.cwnd as u64).min(self.cfg.rwnd).max(mss);
            let (data, len) = if sf.snd_nxt < sf.snd_max {
                match sf.mapping.iter().find(|m| m.0 == sf.snd_nxt) {
                    Some(&(_, data, len)) => (data, len),
                    None => break,
                }
            } else if self.data_next < self.size && sf.pace != Some(0) {
                (self.data_next, mss.min(self.size - self.data_next) as u32)
            } else {
                break;
            };
            if sf.snd_nxt > sf.snd_una && sf.snd_nxt + len as u64 > sf.snd_una + window {
                break;
            }
            let offset = sf.snd_nxt;
            if let Some(rate) = sf.pace.filter(|&r| r > 0) {
                let next_send = sf
                    .last_paced
                    .map_or(0, |(at, bytes)| at + serialization_time(bytes, rate));
                if io.now < next_send {
                    // One timer serves every subflow: it keeps the earliest wake-up.
                    if self.pace_timer.deadline().is_none_or(|d| d > next_send) {
                        self.pace_timer.set(next_send, PACING_TIMER, io.out);
                    }
                    break;
                }
                self.subflows[i].last_paced = Some((io.now, len + TCP_HEADER_BYTES));
            }
            if offset == self.subflows[i].snd_max {
                self.subflows[i].mapping.push((offset, data, len));
                self.data_next += len as u64;
            }
            self.send_segment(io, i, offset, data, len);
            let sf = &mut self.subflows[i];
            sf.snd_nxt += len as u64;
            sf.snd_max = sf.snd_max.max(sf.snd_nxt);
        }
    }

    /// Resends the segment at subflow `i`'s first unacknowledged byte.
    fn retransmit_first(&mut self, io: &mut Io, i: usize) {
        let sf = &self.subflows[i];
        if let Some(&(offset, data, len)) = sf.mapping.iter().find(|m| m.0 == sf.snd_una) {
            self.send_segment(io, i, offset, data, len);
        }
    }

    fn send_segment(&mut self, io: &mut Io, i: usize, offset: u64, data: u64, len: u32) {
        let mut pkt = self.packet(io, i, true, TCP_ACK, len);
        pkt.seq = offset as u32;
        pkt.options.data_seq = data;
        pkt.remaining = self.size.saturating_sub(data);
        stamp(&mut pkt, io.now);
        io.record.bytes_sent += len as u64;
        let sf = &mut self.subflows[i];
        if offset < sf.snd_max {
            io.record.retransmissions += 1;
        }
        Self::emit(io, pkt);
        if !sf.timer.is_set() {
            sf.timer.set(io.now + sf.rtt.rto(), i as u32, io.out);
        }
    }

    /// A packet of this connection reached its destination host; true when the receiver
    /// has every data byte.
    pub fn on_packet(&mut self, io: &mut Io, pkt: &Packet) -> bool {
        if pkt.dst == io.record.dst {
            return self.receive(io, pkt);
        }
        let i = self.subflow_of(io, pkt, false);
        if i >= self.subflows.len() {
            return false;
        }
        if pkt.tcp_flags & TCP_SYN != 0 {
            let sf = &mut self.subflows[i];
            if !sf.established {
                sf.established = true;
                let rtt = io.now - sf.syn_sent_at;
                sf.rtt.sample(rtt);
                sf.timer.cancel();
                self.send(io);
            }
            return false;
        }
        self.on_ack(io, i, pkt);
        false
    }

    fn on_ack(&mut self, io: &mut Io, i: usize, pkt: &Packet) {
        let mss = self.cfg.mss as f64;
        self.data_acked = self.data_acked.max(pkt.options.data_seq);
        let coupling = self.coupling();
        let total: f64 = self
            .subflows
            .iter()
            .filter(|s| s.established)
            .map(|s| s.cwnd)
            .sum();
        let mut retransmit = false;
        let sf = &mut self.subflows[i];
        let ack = sf.snd_una as i64 + pkt.ack.wrapping_sub(sf.snd_una as u32) as i32 as i64;
        if ack < sf.snd_una as i64 || ack > sf.snd_max as i64 {
            return;
        }
        let ack = ack as u64;
        if ack > sf.snd_una {
            let acked = (ack - sf.snd_una) as f64;
            sf.snd_una = ack;
            sf.snd_nxt = sf.snd_nxt.max(ack);
            sf.mapping.retain(|m| m.0 + m.2 as u64 > ack);
            if let Some(sent_at) = stamp_of(pkt) {
                sf.rtt.sample(io.now.saturating_sub(sent_at));
            }
            if sf.in_recovery {
                if ack >= sf.recover {
                    sf.cwnd = sf.ssthresh;
                    sf.in_recovery = false;
                } else {
                    sf.cwnd = (sf.cwnd - acked).max(mss) + mss;
                    retransmit = true;
                }
            } else if sf.cwnd < sf.ssthresh {
                sf.cwnd += acked.min(mss);
            } else {
                sf.cwnd += (coupling * acked * mss / total.max(mss)).min(acked * mss / sf.cwnd);
            }
            sf.dupacks = 0;
            if sf.snd_una == sf.snd_max {
                sf.timer.cancel();
            } else {
                sf.timer.set(io.now + sf.rtt.rto(), i as u32, io.out);
            }
        } else if sf.snd_una < sf.snd_max {
            sf.dupacks += 1;
            if sf.in_recovery {
                sf.cwnd += mss;
            } else if sf.dupacks == 3 && sf.snd_una >= sf.recover {
                let flight = (sf.snd_max - sf.snd_una) as f64;
                sf.ssthresh = (flight / 2.0).max(2.0 * mss);
                sf.recover = sf.snd_max;
                sf.in_recovery = true;
                sf.cwnd = sf.ssthresh + 3.0 * mss;
                sf.timer.set(io.now + sf.rtt.rto(), i as u32, io.out);
                retransmit = true;
            }
        }
        if retransmit {
            self.retransmit_first(io, i);
        }
        if self.data_acked >= self.size {
            for sf in &mut self.subflows {
                sf.timer.cancel();
            }
            return;
        }
        self.send(io);
    }

    /// RFC 6356's a = W · max_i(w_i / rtt_i²) / (Σ_i w_i / rtt_i)².
    fn coupling(&self) -> f64 {
        let live: Vec<(f64, f64)> = self
            .subflows
            .iter()
            .filter(|s| s.established)
            .map(|s| (s.cwnd, s.rtt.srtt().unwrap_or(1).max(1) as f64))
            .collect();
        let total: f64 = live.iter().map(|(w, _)| w).sum();
        let best = live.iter().map(|(w, r)| w / (r * r)).fold(0.0, f64::max);
        let sum: f64 = live.iter().map(|(w, r)| w / r).sum();
        if sum == 0.0 {
            1.0
        } else {
            total * best / (sum * sum)
        }
    }

    fn receive(&mut self, io: &mut Io, pkt: &Packet) -> bool {
        let i = self.subflow_of(io, pkt, true);
        if i >= self.subflows.len() {
            return false;
        }
        if pkt.tcp_flags & TCP_SYN != 0 {
            self.subflows[i].rcv_open = true;
            let syn_ack = self.packet(io, i, false, TCP_SYN | TCP_ACK, 0);
            Self::emit(io, syn_ack);
            return false;
        }
        let sf = &mut self.subflows[i];
        let start = sf.rcv_nxt as i64 + pkt.seq.wrapping_sub(sf.rcv_nxt as u32) as i32 as i64;
        if start >= 0 {
            let (start, end) = (start as u64, start as u64 + pkt.payload as u64);
            if end > sf.rcv_nxt {
                sf.out_of_order.insert(start, end);
                sf.out_of_order.advance(&mut sf.rcv_nxt);
            }
        }
        let before = self.data_rcv_nxt;
        if pkt.options.data_seq > self.data_rcv_nxt {
            io.record.out_of_order += 1;
        }
        self.data_ooo.insert(
            pkt.options.data_seq,
            pkt.options.data_seq + pkt.payload as u64,
        );
        self.data_ooo.advance(&mut self.data_rcv_nxt);
        let mut ack = self.packet(io, i, false, TCP_ACK, 0);
        ack.ack = self.subflows[i].rcv_nxt as u32;
        ack.options.data_seq = self.data_rcv_nxt;
        ack.options.tag = pkt.options.tag;
        Self::emit(io, ack);
        let r = &mut *io.record;
        if self.data_rcv_nxt > before {
            r.bytes_delivered = self.data_rcv_nxt.min(self.size);
            r.first_delivery.get_or_insert(io.now);
            r.last_delivery = Some(io.now);
        }
        if self.data_rcv_nxt >= self.size && r.finish.is_none() {
            r.finish = Some(io.now);
            return true;
        }
        false
    }
}
