//! UDP sources: packets at a constant rate or as a Poisson process of the same mean
//! rate, until a byte budget or a stop time runs out. The receiver only counts.

use super::{FlowRecord, Outbox};
use crate::packet::{PacketHeader, PROTO_UDP};
use crate::rng::Rng;
use crate::units::{serialization_time, Rate, Time};

/// IPv4 (20 B) + UDP (8 B) headers carried by every datagram.
pub const UDP_HEADER_BYTES: u32 = 28;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced packets.
    Constant,
    /// Exponential gaps: a Poisson packet process.
    Poisson,
}

#[derive(Clone)]
pub struct UdpSource {
    pub rate: Rate,
    pub packet_size: u32,
    pub arrivals: Arrivals,
    pub stop: Time,
    /// Payload bytes left to send (u64::MAX when only the stop time bounds the flow).
    pub remaining: u64,
    pub rng: Rng,
    pub done: bool,
    /// Held by a controller: ticks pass without sending.
    pub held: bool,
    /// The rate the flow was created with, restored when pacing is lifted.
    base_rate: Rate,
    next_seq: u32,
}

impl UdpSource {
    pub fn new(
        rate: Rate,
        packet_size: u32,
        arrivals: Arrivals,
        size: u64,
        stop: Time,
        rng: Rng,
    ) -> Self {
        assert!(
            packet_size > UDP_HEADER_BYTES,
            "UDP packet_size must exceed its 28 B of headers"
        );
        UdpSource {
            rate,
            packet_size,
            arrivals,
            stop,
            remaining: if size == 0 { u64::MAX } else { size },
            rng,
            done: false,
            held: false,
            base_rate: rate,
            next_seq: 0,
        }
    }

    /// Sends at `rate` from now on, or at the flow's own rate again with None.
    pub fn pace(&mut self, rate: Option<Rate>) {
        self.rate = rate.unwrap_or(self.base_rate);
    }

    fn gap(&mut self) -> Time {
        let mean = serialization_time(self.packet_size, self.rate);
        match self.arrivals {
            Arrivals::Constant => mean,
            Arrivals::Poisson => self.rng.exponential(mean as f64).round() as Time,
        }
    }

    pub fn on_timer(
        &mut self,
        flow: u32,
        src_port: u16,
        dst_port: u16,
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
        if self.held {
            out.timers.push((now + self.gap(), 0));
            return;
        }
        let payload =
            (self.packet_size - UDP_HEADER_BYTES).min(self.remaining.min(u32::MAX as u64) as u32);
        out.packets.push(
            PacketHeader {
                src: record.src,
                dst: record.dst,
                src_port,
                dst_port,
                proto: PROTO_UDP,
                size: payload + UDP_HEADER_BYTES,
                payload,
                seq: self.next_seq,
                flow,
                remaining: self.remaining,
                created: now,
                ..Default::default()
            }
            .into(),
        );
        self.next_seq = self.next_seq.wrapping_add(1);
        if self.remaining != u64::MAX {
            self.remaining -= payload as u64;
        }
        record.packets_sent += 1;
        record.bytes_sent += payload as u64;
        let next = now + self.gap();
        if self.remaining == 0 || next >= self.stop {
            self.done = true;
        } else {
            out.timers.push((next, 0));
        }
    }
}
