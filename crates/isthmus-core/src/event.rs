//! The future event list: events run in time order, and events at the same picosecond
//! in the order they were scheduled, on every machine.
//!
//! Nearly every event a packet network schedules lands within microseconds of now
//! (serialisation plus propagation), so the near future is a timing wheel: a ring of
//! buckets 2^13 ps (8.2 ns) wide. Pushing into it is an append; the bucket under the
//! cursor is sorted once when the cursor reaches it. Events beyond the wheel
//! (retransmission timers, flow starts) wait in a binary heap and move into the wheel as
//! it turns. On the medium reference benchmark a wheel of 2^14 buckets 2^14 ps wide
//! replaced a binary heap of all events, whose pops took 44% of the run time: 1.52 s
//! became 1.09 s.
//!
//! The wheel spans only as far as the network's longest hop needs (the longest link's
//! propagation plus a jumbo frame's serialisation, at least 2^10 buckets). Its
//! buckets keep their capacity once grown, so a wheel far wider than the events' reach
//! holds many cold allocations: 2^14 buckets held 103 MB at the xl1024 benchmark and
//! made every bucket a cache miss when the cursor came round; 2^10 buckets (8.4 us) hold
//! 31 MB there and the medium run got about 20% faster.

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
    /// Flow `flow` opens: the control plane hears of it, then its transport starts.
    FlowStart { flow: u32 },
    /// Control-plane timer `timer` fires.
    ControlTick { timer: u32 },
    /// A controller's command reaches its target after the control channel's latency.
    Command { slot: u32 },
    /// Flow entry `entry` of switch `node` may have expired.
    EntryTimeout { node: u32, entry: u32 },
    /// A PFC frame reaches egress port `port`: pause (or resume) priority `frame & 0xff`
    /// when bit 8 is set (clear).
    Pfc { port: PortId, frame: u32 },
    /// Time to see whether a migrated flow's old path (`slot` of the engine's draining
    /// list) has emptied.
    DrainCheck { slot: u32 },
}

/// Largest port, flow or node number an event can carry in its 28-bit field.
pub const MAX_EVENT_INDEX: u32 = (1 << 28) - 1;

/// An event packed into 16 bytes: its time, and its kind as a 4-bit tag, a 28-bit field
/// (port, flow or node) and a 32-bit one. Half the size of the plain enum with a sequence
/// number: placing, sorting and popping move half the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: Time,
    packed: u64,
}

impl Event {
    fn new(time: Time, kind: EventKind) -> Event {
        let (tag, a, b) = match kind {
            EventKind::Arrive { pkt, port } => (0, port, pkt.0),
            EventKind::PortFree { port } => (1, port, 0),
            EventKind::FlowTimer { flow, token } => (2, flow, token),
            EventKind::Sample => (3, 0, 0),
            EventKind::FlowStart { flow } => (4, 0, flow),
            EventKind::ControlTick { timer } => (5, 0, timer),
            EventKind::Command { slot } => (6, 0, slot),
            EventKind::EntryTimeout { node, entry } => (7, node, entry),
            EventKind::Pfc { port, frame } => (8, port, frame),
            EventKind::DrainCheck { slot } => (9, 0, slot),
        };
        assert!(
            a <= MAX_EVENT_INDEX,
            "port, flow or node number {a} is beyond the {MAX_EVENT_INDEX} an event can carry"
        );
        Event {
            time,
            packed: (tag as u64) << 60 | (a as u64) << 32 | b as u64,
        }
    }

    #[inline]
    pub fn kind(&self) -> EventKind {
        let a = (self.packed >> 32) as u32 & MAX_EVENT_INDEX;
        let b = self.packed as u32;
        match self.packed >> 60 {
            0 => EventKind::Arrive {
                pkt: PacketId(b),
                port: a,
            },
            1 => EventKind::PortFree { port: a },
            2 => EventKind::FlowTimer { flow: a, token: b },
            3 => EventKind::Sample,
            4 => EventKind::FlowStart { flow: b },
            5 => EventKind::ControlTick { timer: b },
            6 => EventKind::Command { slot: b },
            7 => EventKind::EntryTimeout { node: a, entry: b },
            8 => EventKind::Pfc { port: a, frame: b },
            _ => EventKind::DrainCheck { slot: b },
        }
    }
}

/// An event beyond the wheel, with the sequence number that orders it among events at
/// the same picosecond (the wheel needs none: see `EventQueue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FarEvent {
    seq: u64,
    event: Event,
}

impl FarEvent {
    #[inline]
    fn key(&self) -> (Time, u64) {
        (self.event.time, self.seq)
    }
}

impl Ord for FarEvent {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and the earliest event must come out first.
        other.key().cmp(&self.key())
    }
}

impl PartialOrd for FarEvent {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

const BUCKET_BITS: u32 = 13;
/// Fewest and most buckets a wheel has.
const MIN_WHEEL_BITS: u32 = 10;
const MAX_WHEEL_BITS: u32 = 16;

#[inline]
fn bucket_of(time: Time) -> u64 {
    time >> BUCKET_BITS
}

/// Why wheel events need no sequence number: a bucket enters the wheel's span only when
/// the cursor moves, and at that moment every far event for it moves in, in (time,
/// sequence) order, before anything can be scheduled into it directly; later ones are
/// appended in the order scheduled. So events of equal time sit in a bucket in the
/// order they were scheduled, and a stable sort by time keeps it.
#[derive(Clone)]
pub struct EventQueue {
    /// Bucket b (absolute: time >> BUCKET_BITS) lives at wheel[b & mask] while
    /// cursor <= b < cursor + wheel.len().
    wheel: Vec<Vec<Event>>,
    /// wheel.len() - 1 (a power of two less one).
    mask: u64,
    occupied: Vec<u64>,
    /// The bucket holding the earliest events; it is sorted latest-first when `sorted`.
    cursor: u64,
    sorted: bool,
    far: BinaryHeap<FarEvent>,
    next_far_seq: u64,
    len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_reach(0)
    }
}

impl EventQueue {
    /// An event list whose wheel holds every event scheduled up to `reach` ps ahead
    /// (within the bounds above); later ones wait in the heap.
    pub fn with_reach(reach: Time) -> EventQueue {
        let buckets = bucket_of(reach)
            .saturating_add(1)
            .next_power_of_two()
            .clamp(1 << MIN_WHEEL_BITS, 1 << MAX_WHEEL_BITS);
        EventQueue {
            wheel: (0..buckets).map(|_| Vec::new()).collect(),
            mask: buckets - 1,
            occupied: vec![0; (buckets / 64) as usize],
            cursor: 0,
            sorted: false,
            far: BinaryHeap::new(),
            next_far_seq: 0,
            len: 0,
        }
    }

    fn span(&self) -> u64 {
        self.mask + 1
    }

    /// Schedules `kind` at `time`; events at equal times run in the order scheduled.
    #[inline]
    pub fn push(&mut self, time: Time, kind: EventKind) {
        self.len += 1;
        self.place(Event::new(time, kind));
    }

    #[inline]
    fn place(&mut self, event: Event) {
        let b = bucket_of(event.time);
        assert!(
            b >= self.cursor,
            "event at {} ps scheduled behind the event list's clock",
            event.time
        );
        if b >= self.cursor + self.span() {
            self.far.push(FarEvent {
                seq: self.next_far_seq,
                event,
            });
            self.next_far_seq += 1;
            return;
        }
        let slot = (b & self.mask) as usize;
        let bucket = &mut self.wheel[slot];
        if b == self.cursor && self.sorted {
            // Latest first, and among equal times the newest first: it pops last.
            let at = bucket.partition_point(|e| e.time > event.time);
            bucket.insert(at, event);
        } else {
            bucket.push(event);
        }
        self.occupied[slot / 64] |= 1 << (slot % 64);
    }

    /// The next non-empty wheel bucket after the cursor, as an absolute bucket number.
    fn next_occupied(&self) -> Option<u64> {
        let start = (self.cursor & self.mask) as usize;
        let words = self.occupied.len();
        for step in 0..=words {
            let w = (start / 64 + step) % words;
            let mut bits = self.occupied[w];
            if step == 0 {
                // Only buckets after the cursor in this word.
                bits &= if start % 64 == 63 {
                    0
                } else {
                    !0u64 << (start % 64 + 1)
                };
            } else if step == words {
                // Wrapped around: buckets up to the cursor (exclusive) in its word.
                bits &= (1u64 << (start % 64)) - 1;
            }
            if bits != 0 {
                let slot = (w * 64) as u64 + bits.trailing_zeros() as u64;
                let distance = (slot + self.span() - (self.cursor & self.mask)) & self.mask;
                return Some(self.cursor + distance);
            }
        }
        None
    }

    /// Moves the cursor to the bucket of the earliest pending event if that event is due
    /// by `until`; returns whether the cursor's bucket now holds it.
    fn advance(&mut self, until: Time) -> bool {
        let slot = (self.cursor & self.mask) as usize;
        if !self.wheel[slot].is_empty() {
            return true;
        }
        let near = self.next_occupied();
        let far = self.far.peek().map(|e| bucket_of(e.event.time));
        let next = match (near, far) {
            (Some(n), Some(f)) => n.min(f),
            (Some(n), None) => n,
            (None, Some(f)) => f,
            (None, None) => return false,
        };
        // Never move the clock's cursor past `until`: the caller may still schedule
        // events between `until` and the next one.
        if next > bucket_of(until) {
            return false;
        }
        self.cursor = next;
        self.sorted = false;
        while let Some(e) = self.far.peek() {
            if bucket_of(e.event.time) >= self.cursor + self.span() {
                break;
            }
            let e = self.far.pop().expect("peeked");
            self.place(e.event);
        }
        true
    }

    /// Removes and returns the earliest event if its time is at most `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<Event> {
        if !self.advance(until) {
            return None;
        }
        let slot = (self.cursor & self.mask) as usize;
        let bucket = &mut self.wheel[slot];
        if !self.sorted {
            // A bucket holds equal times in the order they were scheduled (see the type's
            // note), so reversing it and sorting stably latest-first leaves the earliest
            // time, first scheduled, at the end.
            bucket.reverse();
            bucket.sort_by_key(|e| std::cmp::Reverse(e.time));
            self.sorted = true;
        }
        if bucket.last().expect("advance found events").time > until {
            return None;
        }
        let event = bucket.pop().expect("non-empty");
        if bucket.is_empty() {
            self.occupied[slot / 64] &= !(1 << (slot % 64));
        }
        self.len -= 1;
        Some(event)
    }

    pub fn pop(&mut self) -> Option<Event> {
        self.pop_until(Time::MAX)
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Time> {
        let slot = (self.cursor & self.mask) as usize;
        let earliest = |b: &Vec<Event>| b.iter().map(|e| e.time).min();
        let near = if self.wheel[slot].is_empty() {
            self.next_occupied()
                .and_then(|b| earliest(&self.wheel[(b & self.mask) as usize]))
        } else {
            earliest(&self.wheel[slot])
        };
        let far = self.far.peek().map(|e| e.event.time);
        match (near, far) {
            (Some(n), Some(f)) => Some(n.min(f)),
            (n, f) => n.or(f),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pending events `keep` keeps, in a new list of the same reach, each still
    /// after the events it followed (what `pop` would give, less the others).
    pub fn filtered(&self, mut keep: impl FnMut(&Event) -> bool) -> EventQueue {
        let mut all = self.clone();
        let mut kept = EventQueue {
            wheel: (0..self.span()).map(|_| Vec::new()).collect(),
            mask: self.mask,
            occupied: vec![0; self.occupied.len()],
            cursor: self.cursor,
            sorted: false,
            far: BinaryHeap::new(),
            next_far_seq: 0,
            len: 0,
        };
        while let Some(event) = all.pop() {
            if keep(&event) {
                kept.len += 1;
                kept.place(event);
            }
        }
        kept
    }

    /// Every pending event, in no particular order (for audits such as byte conservation).
    pub fn iter(&self) -> impl Iterator<Item = Event> + '_ {
        let far = self.far.iter().map(|e| e.event);
        self.wheel.iter().flatten().copied().chain(far)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, Stream};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    fn timer(flow: u32) -> EventKind {
        EventKind::FlowTimer { flow, token: 0 }
    }

    #[test]
    fn every_kind_survives_packing_at_its_extremes() {
        let (big, most) = (MAX_EVENT_INDEX, u32::MAX);
        for kind in [
            EventKind::Arrive {
                pkt: PacketId(most),
                port: big,
            },
            EventKind::PortFree { port: big },
            EventKind::FlowTimer {
                flow: big,
                token: most,
            },
            EventKind::Sample,
            EventKind::FlowStart { flow: most },
            EventKind::ControlTick { timer: most },
            EventKind::Command { slot: most },
            EventKind::EntryTimeout {
                node: big,
                entry: most,
            },
            EventKind::Pfc {
                port: big,
                frame: most,
            },
            EventKind::DrainCheck { slot: most },
            EventKind::Arrive {
                pkt: PacketId(0),
                port: 0,
            },
        ] {
            assert_eq!(Event::new(u64::MAX, kind).kind(), kind);
        }
        assert_eq!(std::mem::size_of::<Event>(), 16);
    }

    #[test]
    #[should_panic(expected = "beyond the 268435455 an event can carry")]
    fn a_port_number_beyond_the_packed_field_is_refused() {
        Event::new(0, EventKind::PortFree { port: 1 << 28 });
    }

    #[test]
    fn pops_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, timer(0));
        q.push(3, timer(1));
        q.push(5, timer(2));
        q.push(5, timer(3));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|e| match e.kind() {
                EventKind::FlowTimer { flow, .. } => flow,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![1, 0, 2, 3]);
        assert!(q.is_empty());
    }

    #[test]
    fn matches_a_time_then_sequence_heap_under_random_interleaving() {
        // The narrowest wheel, and one spanning about a quarter millisecond.
        for reach in [0, 1 << 28] {
            matches_reference_heap(EventQueue::with_reach(reach));
        }
    }

    #[test]
    fn the_wheel_spans_the_reach_it_is_asked_for_within_bounds() {
        let span = |reach| EventQueue::with_reach(reach).span() << BUCKET_BITS;
        assert_eq!(span(0), 1 << (MIN_WHEEL_BITS + BUCKET_BITS));
        assert!(span(20_000_000) >= 20_000_000);
        assert!(span(20_000_000) < 2 * 20_000_000 + (1 << BUCKET_BITS) * 2);
        assert_eq!(span(u64::MAX / 2), 1 << (MAX_WHEEL_BITS + BUCKET_BITS));
    }

    fn matches_reference_heap(mut q: EventQueue) {
        let mut rng = Rng::stream(11, Stream::Workload, 0);
        let mut reference = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u32);
        for _ in 0..300_000 {
            match rng.below(6) {
                0..=2 => {
                    // Many ties, near and far: the same picosecond, one bucket, the
                    // wheel's span, and well beyond it.
                    let offset = match rng.below(5) {
                        0 => 0,
                        1 => rng.below(8),
                        2 => rng.below(1 << 20),
                        3 => rng.below(1 << 29),
                        _ => rng.below(1 << 40),
                    };
                    q.push(now + offset, timer(seq));
                    reference.push(Reverse((now + offset, seq)));
                    seq += 1;
                }
                3 | 4 => {
                    if let Some(Reverse((time, id))) = reference.pop() {
                        assert_eq!(q.peek_time(), Some(time));
                        let e = q.pop().unwrap();
                        assert_eq!((e.time, e.kind()), (time, timer(id)));
                        now = time;
                    }
                }
                _ => {
                    // Run up to a horizon, then let the clock rest there, as the engine does.
                    let bits = 10 + rng.below(25);
                    let until = now + rng.below(1 << bits);
                    while let Some(Reverse((time, id))) = reference.peek().copied() {
                        if time > until {
                            break;
                        }
                        reference.pop();
                        let e = q.pop_until(until).unwrap();
                        assert_eq!((e.time, e.kind()), (time, timer(id)));
                    }
                    assert!(q.pop_until(until).is_none());
                    now = until;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        assert_eq!(q.iter().count(), reference.len());
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::default();
        q.push(10, timer(0));
        q.push(20, timer(1));
        assert_eq!(q.pop_until(15).map(|e| e.time), Some(10));
        assert_eq!(q.pop_until(15), None);
        assert_eq!(q.peek_time(), Some(20));
        assert_eq!(q.len(), 1);
        // The clock may stop short of the next event and schedule before it.
        q.push(16, timer(2));
        assert_eq!(q.pop().map(|e| e.time), Some(16));
        assert_eq!(q.pop().map(|e| e.time), Some(20));
    }
}
