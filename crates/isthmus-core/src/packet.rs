//! Packets and the arena that owns them: the hot path moves 32-bit indices, never boxes,
//! and a freed slot is reused by the next packet, so steady state allocates nothing.

use crate::units::Time;

/// Index of a packet slot in the [`PacketArena`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PacketId(pub u32);

/// IP protocol numbers used in the 5-tuple.
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// ECN codepoints (RFC 3168).
pub const ECN_NOT_ECT: u8 = 0b00;
pub const ECN_ECT0: u8 = 0b10;
pub const ECN_CE: u8 = 0b11;

/// TCP flag bits.
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_ACK: u8 = 0x10;
pub const TCP_ECE: u8 = 0x40;
pub const TCP_CWR: u8 = 0x80;

#[derive(Clone, Debug, Default)]
pub struct Packet {
    /// Source and destination host addresses (host indices).
    pub src: u32,
    pub dst: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: u8,
    /// Bytes on the wire, headers included.
    pub size: u32,
    /// Transport payload bytes carried.
    pub payload: u32,
    pub seq: u32,
    pub ack: u32,
    pub tcp_flags: u8,
    pub ecn: u8,
    /// Priority / traffic class, used to pick an egress queue.
    pub priority: u8,
    /// The flow this packet belongs to (index into the engine's flow table).
    pub flow: u32,
    /// Bytes the flow still had to send when this packet left its host (SRPT ranks).
    pub remaining: u64,
    /// MPTCP: the data-level sequence number a segment carries, or the data-level
    /// cumulative acknowledgement an ACK carries.
    pub data_seq: u64,
    /// Free for controllers' and transports' use (e.g. a path id or a timestamp echo).
    pub tag: [u32; 2],
    /// When the sending transport created it.
    pub created: Time,
    /// The switch port it arrived through (u32::MAX at its source host), and whether it
    /// is counted against that port's PFC ingress occupancy.
    pub ingress: u32,
    pub pfc_held: bool,
    /// Counted in its flow's bytes waiting at its source host's NIC (small-queue
    /// backpressure) until it leaves that queue.
    pub nic_queued: bool,
    /// Sent under a BCN rate regulator (the regulator tag of IEEE 802.1 BCN): congestion
    /// points may then answer with positive feedback.
    pub rate_regulated: bool,
    /// Hops left (IP time-to-live): set when the packet enters the network, one less at
    /// every switch, dropped there when none are left, so a forwarding loop ends.
    pub ttl: u8,
}

impl Packet {
    /// A 5-tuple hash input that does not depend on packet contents beyond the header.
    #[inline]
    pub fn five_tuple_key(&self) -> u64 {
        ((self.src as u64) << 32 | self.dst as u64)
            ^ ((self.src_port as u64) << 48
                | (self.dst_port as u64) << 32
                | (self.proto as u64) << 16)
                .rotate_left(17)
    }
}

/// Owns every live packet; `alloc` reuses freed slots first.
#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
    live_bytes: u64,
}

impl PacketArena {
    #[inline]
    pub fn alloc(&mut self, packet: Packet) -> PacketId {
        self.live += 1;
        self.live_bytes += packet.size as u64;
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = packet;
                PacketId(i)
            }
            None => {
                self.slots.push(packet);
                PacketId((self.slots.len() - 1) as u32)
            }
        }
    }

    #[inline]
    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        self.live_bytes -= self.slots[id.0 as usize].size as u64;
        self.free.push(id.0);
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }

    /// Packets allocated and not yet freed (in queues or on links).
    pub fn live(&self) -> usize {
        self.live
    }

    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Slots ever allocated: the arena's high-water mark.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused() {
        let mut arena = PacketArena::default();
        let a = arena.alloc(Packet {
            size: 100,
            ..Default::default()
        });
        let b = arena.alloc(Packet {
            size: 200,
            ..Default::default()
        });
        assert_eq!(arena.live_bytes(), 300);
        arena.free(a);
        let c = arena.alloc(Packet {
            size: 50,
            ..Default::default()
        });
        assert_eq!(c, a);
        assert_eq!(arena.capacity_used(), 2);
        assert_eq!(arena.live(), 2);
        assert_eq!(arena.live_bytes(), 250);
        assert_eq!(arena.get(b).size, 200);
    }
}
