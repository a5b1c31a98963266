//! An egress queue: FIFO, drop-tail at a packet or byte limit, with optional ECN step
//! marking when the instantaneous queue exceeds a threshold (the DCTCP marker).
//!
//! The queue holds packets waiting for the transmitter; the packet being serialised is
//! no longer in it. Limits and thresholds count waiting packets only.

use crate::packet::PacketId;
use crate::units::Limit;
use std::collections::VecDeque;

/// What the queue decided for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Accept { mark_ce: bool },
    Drop,
}

#[derive(Clone, Debug)]
pub struct DropTailQueue {
    packets: VecDeque<(PacketId, u32)>,
    bytes: u64,
    pub limit: Limit,
    pub ecn_threshold: Option<Limit>,
}

fn exceeds(limit: Limit, packets: u64, bytes: u64) -> bool {
    match limit {
        Limit::Packets(n) => packets > n,
        Limit::Bytes(n) => bytes > n,
    }
}

impl DropTailQueue {
    pub fn new(limit: Limit, ecn_threshold: Option<Limit>) -> Self {
        DropTailQueue {
            packets: VecDeque::new(),
            bytes: 0,
            limit,
            ecn_threshold,
        }
    }

    /// Decides on a packet of `size` bytes: dropped if it would push the queue past its
    /// limit; marked if, counting it, the queue exceeds the ECN threshold.
    #[inline]
    pub fn admit(&self, size: u32) -> Admission {
        let packets = self.packets.len() as u64 + 1;
        let bytes = self.bytes + size as u64;
        if exceeds(self.limit, packets, bytes) {
            return Admission::Drop;
        }
        let mark_ce = self
            .ecn_threshold
            .is_some_and(|k| exceeds(k, packets, bytes));
        Admission::Accept { mark_ce }
    }

    #[inline]
    pub fn push(&mut self, pkt: PacketId, size: u32) {
        self.bytes += size as u64;
        self.packets.push_back((pkt, size));
    }

    #[inline]
    pub fn pop(&mut self) -> Option<PacketId> {
        let (pkt, size) = self.packets.pop_front()?;
        self.bytes -= size as u64;
        Some(pkt)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn iter(&self) -> impl Iterator<Item = PacketId> + '_ {
        self.packets.iter().map(|(p, _)| *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_at_packet_limit_and_marks_above_threshold() {
        let mut q = DropTailQueue::new(Limit::Packets(3), Some(Limit::Packets(1)));
        assert_eq!(q.admit(100), Admission::Accept { mark_ce: false });
        q.push(PacketId(0), 100);
        assert_eq!(q.admit(100), Admission::Accept { mark_ce: true });
        q.push(PacketId(1), 100);
        q.push(PacketId(2), 100);
        assert_eq!(q.admit(100), Admission::Drop);
        assert_eq!(q.pop(), Some(PacketId(0)));
        assert_eq!(q.bytes(), 200);
    }

    #[test]
    fn byte_limit_counts_the_arriving_packet() {
        let mut q = DropTailQueue::new(Limit::Bytes(3000), None);
        q.push(PacketId(0), 1500);
        assert_eq!(q.admit(1500), Admission::Accept { mark_ce: false });
        q.push(PacketId(1), 1500);
        assert_eq!(q.admit(1), Admission::Drop);
    }
}
