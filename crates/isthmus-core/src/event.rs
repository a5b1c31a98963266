//! The future event list: a binary min-heap ordered by (time, insertion sequence), so
//! events at the same picosecond run in the order they were scheduled, on every machine.

use crate::packet::PacketId;
use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Global index of a port (one direction of one link end).
pub type PortId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The last bit of `pkt` reaches the node owning ingress port `port`.
    Arrive { pkt: PacketId, port: PortId },
    /// Port `port`'s transmitter finished a packet and has packets waiting.
    PortFree { port: PortId },
    /// A transport timer of flow `flow`; `token` lets a transport ignore stale timers.
    FlowTimer { flow: u32, token: u32 },
    /// Record one row of the sampled time series.
    Sample,
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub time: Time,
    seq: u64,
    pub kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}

impl Eq for Event {}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest event on top.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    next_seq: u64,
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, time: Time, kind: EventKind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Event { time, seq, kind });
    }

    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Every pending event, in no particular order (for audits such as byte conservation).
    pub fn iter(&self) -> impl Iterator<Item = &Event> {
        self.heap.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, EventKind::FlowTimer { flow: 0, token: 0 });
        q.push(3, EventKind::FlowTimer { flow: 1, token: 0 });
        q.push(5, EventKind::FlowTimer { flow: 2, token: 0 });
        q.push(5, EventKind::FlowTimer { flow: 3, token: 0 });
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|e| match e.kind {
                EventKind::FlowTimer { flow, .. } => flow,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![1, 0, 2, 3]);
    }
}
