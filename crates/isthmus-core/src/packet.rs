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

/// What every hop reads and writes: addresses, sizes, sequence numbers, marks and the
/// simulator's bookkeeping. Laid out by hand in one cache line (`repr(C)`, widest fields
/// first, aligned to 64 bytes), so a hop touches one line of its packet, not two.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub struct PacketHeader {
    /// Bytes the flow still had to send when this packet left its host (SRPT ranks).
    pub remaining: u64,
    /// When the sending transport created it.
    pub created: Time,
    /// Source and destination host addresses (host indices).
    pub src: u32,
    pub dst: u32,
    /// Bytes on the wire, headers included.
    pub size: u32,
    /// Transport payload bytes carried.
    pub payload: u32,
    pub seq: u32,
    pub ack: u32,
    /// The flow this packet belongs to (index into the engine's flow table).
    pub flow: u32,
    /// The switch port it arrived through (u32::MAX at its source host).
    pub ingress: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: u8,
    pub tcp_flags: u8,
    pub ecn: u8,
    /// Priority / traffic class, used to pick an egress queue.
    pub priority: u8,
    /// Counted against its ingress port's PFC occupancy.
    pub pfc_held: bool,
    /// Counted in its flow's bytes waiting at its source host's NIC (small-queue
    /// backpressure) until it leaves that queue.
    pub nic_queued: bool,
    /// Its host holds it while its NIC queue is full, rather than dropping it (a Linux
    /// host: a refused segment stays in its socket until the queue disc has room).
    pub held_when_nic_full: bool,
    /// Sent under a BCN rate regulator (the regulator tag of IEEE 802.1 BCN): congestion
    /// points may then answer with positive feedback.
    pub rate_regulated: bool,
    /// Hops left (IP time-to-live): set when the packet enters the network, one less at
    /// every switch, dropped there when none are left, so a forwarding loop ends.
    pub ttl: u8,
}

/// What only the two ends read: option-like fields no switch parses. The arena keeps
/// them beside the headers, so they cost the network path no cache space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketOptions {
    /// MPTCP: the data-level sequence number a segment carries, or the data-level
    /// cumulative acknowledgement an ACK carries. TCP with SACK: the id of the blocks an
    /// ACK reports.
    pub data_seq: u64,
    /// Free for controllers' and transports' use (e.g. a path id, a timestamp echo or
    /// a BCN feedback value).
    pub tag: [u32; 2],
}

/// A whole packet, as transports build and receive it; its header fields read through
/// (`pkt.seq` is `pkt.header.seq`).
#[derive(Clone, Debug, Default)]
pub struct Packet {
    pub header: PacketHeader,
    pub options: PacketOptions,
}

impl From<PacketHeader> for Packet {
    fn from(header: PacketHeader) -> Packet {
        Packet {
            header,
            options: PacketOptions::default(),
        }
    }
}

impl std::ops::Deref for Packet {
    type Target = PacketHeader;
    #[inline]
    fn deref(&self) -> &PacketHeader {
        &self.header
    }
}

impl std::ops::DerefMut for Packet {
    #[inline]
    fn deref_mut(&mut self) -> &mut PacketHeader {
        &mut self.header
    }
}

impl PacketHeader {
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

/// Owns every live packet, headers and options in two parallel slot vectors; `alloc`
/// reuses freed slots first.
#[derive(Clone, Default)]
pub struct PacketArena {
    headers: Vec<PacketHeader>,
    options: Vec<PacketOptions>,
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
                self.headers[i as usize] = packet.header;
                self.options[i as usize] = packet.options;
                PacketId(i)
            }
            None => {
                self.headers.push(packet.header);
                self.options.push(packet.options);
                PacketId(self.headers.len() as u32 - 1)
            }
        }
    }

    #[inline]
    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        self.live_bytes -= self.headers[id.0 as usize].size as u64;
        self.free.push(id.0);
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &PacketHeader {
        &self.headers[id.0 as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut PacketHeader {
        &mut self.headers[id.0 as usize]
    }

    /// A copy of the whole packet, options included.
    pub fn packet(&self, id: PacketId) -> Packet {
        Packet {
            header: self.headers[id.0 as usize].clone(),
            options: self.options[id.0 as usize],
        }
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
        self.headers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused() {
        let mut arena = PacketArena::default();
        let a = arena.alloc(
            PacketHeader {
                size: 100,
                ..Default::default()
            }
            .into(),
        );
        let b = arena.alloc(
            PacketHeader {
                size: 200,
                ..Default::default()
            }
            .into(),
        );
        assert_eq!(arena.live_bytes(), 300);
        arena.free(a);
        let c = arena.alloc(
            PacketHeader {
                size: 50,
                ..Default::default()
            }
            .into(),
        );
        assert_eq!(c, a);
        assert_eq!(arena.capacity_used(), 2);
        assert_eq!(arena.live(), 2);
        assert_eq!(arena.live_bytes(), 250);
        assert_eq!(arena.get(b).size, 200);
    }

    #[test]
    fn a_header_fills_one_cache_line() {
        assert_eq!(std::mem::size_of::<PacketHeader>(), 64);
        assert_eq!(std::mem::align_of::<PacketHeader>(), 64);
    }

    #[test]
    fn options_travel_with_their_packet_through_a_reused_slot() {
        let mut arena = PacketArena::default();
        let sent = |tag: u32, data_seq: u64| Packet {
            header: PacketHeader {
                size: 1500,
                ..Default::default()
            },
            options: PacketOptions {
                data_seq,
                tag: [tag, tag + 1],
            },
        };
        let a = arena.alloc(sent(7, 1 << 40));
        assert_eq!(arena.packet(a).options.tag, [7, 8]);
        arena.free(a);
        let b = arena.alloc(PacketHeader::default().into());
        assert_eq!(b, a);
        assert_eq!(arena.packet(b).options, PacketOptions::default());
        let c = arena.alloc(sent(3, 9));
        assert_eq!(arena.packet(c).options.data_seq, 9);
        assert_eq!(arena.packet(b).options, PacketOptions::default());
    }
}
