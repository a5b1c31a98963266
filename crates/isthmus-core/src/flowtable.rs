//! A switch's OpenFlow-style pipeline state: the flow table (entries matching on the
//! ingress port and header fields, the highest priority winning, earliest installed
//! among equals), groups, meters, and what to do on a table miss.
//!
//! An empty table costs one length check, so switches nobody programs run at the speed
//! of plain default routing.

use crate::packet::PacketHeader;
use crate::units::{Rate, Time, SEC};

/// Header fields an entry can match; `None` (or left out) is a wildcard.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlowMatch {
    pub in_port: Option<u16>,
    pub src: Option<u32>,
    pub dst: Option<u32>,
    pub proto: Option<u8>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
    pub flow: Option<u32>,
}

impl FlowMatch {
    #[inline]
    pub fn matches(&self, in_port: u16, p: &PacketHeader) -> bool {
        self.in_port.is_none_or(|v| v == in_port)
            && self.src.is_none_or(|v| v == p.src)
            && self.dst.is_none_or(|v| v == p.dst)
            && self.proto.is_none_or(|v| v == p.proto)
            && self.src_port.is_none_or(|v| v == p.src_port)
            && self.dst_port.is_none_or(|v| v == p.dst_port)
            && self.flow.is_none_or(|v| v == p.flow)
    }
}

/// Where a matched packet goes (serialised `{"output": 3}`, `{"group": 1}`, "drop",
/// "controller", "flood", "default").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forward {
    /// Out of this local port.
    Output(u16),
    /// Through group `id` of this switch.
    Group(u32),
    Drop,
    /// To the controller as a packet-in; the packet waits in a buffer.
    Controller,
    /// A copy out of every flood port but the one it came in on.
    Flood,
    /// By the default shortest-path routing.
    Default,
}

/// What an entry does to a packet: optionally re-class it and police it, then forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowAction {
    pub forward: Forward,
    pub set_priority: Option<u8>,
    pub meter: Option<u32>,
}

impl FlowAction {
    pub fn forward(forward: Forward) -> Self {
        FlowAction {
            forward,
            set_priority: None,
            meter: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FlowEntry {
    pub id: u32,
    pub priority: u16,
    pub matcher: FlowMatch,
    pub action: FlowAction,
    pub idle_timeout: Option<Time>,
    pub hard_timeout: Option<Time>,
    pub installed: Time,
    pub last_used: Time,
    pub packets: u64,
    pub bytes: u64,
}

impl FlowEntry {
    /// When the entry expires if nothing else happens.
    pub fn expiry(&self) -> Option<Time> {
        let idle = self.idle_timeout.map(|t| self.last_used + t);
        let hard = self.hard_timeout.map(|t| self.installed + t);
        match (idle, hard) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Why an entry left the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RemovalReason {
    IdleTimeout = 0,
    HardTimeout = 1,
    Deleted = 2,
}

/// Which fields an entry's match sets, one bit per field of [`FlowMatch`].
type Mask = u8;

const IN_PORT: Mask = 1;
const SRC: Mask = 1 << 1;
const DST: Mask = 1 << 2;
const PROTO: Mask = 1 << 3;
const SRC_PORT: Mask = 1 << 4;
const DST_PORT: Mask = 1 << 5;
const FLOW: Mask = 1 << 6;

/// The values of the fields a mask sets (the others zero): the hash key of a subtable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    in_port: u16,
    src: u32,
    dst: u32,
    proto: u8,
    src_port: u16,
    dst_port: u16,
    flow: u32,
}

impl Key {
    #[inline]
    fn of_packet(mask: Mask, in_port: u16, p: &PacketHeader) -> Key {
        let pick = |bit: Mask| mask & bit != 0;
        Key {
            in_port: if pick(IN_PORT) { in_port } else { 0 },
            src: if pick(SRC) { p.src } else { 0 },
            dst: if pick(DST) { p.dst } else { 0 },
            proto: if pick(PROTO) { p.proto } else { 0 },
            src_port: if pick(SRC_PORT) { p.src_port } else { 0 },
            dst_port: if pick(DST_PORT) { p.dst_port } else { 0 },
            flow: if pick(FLOW) { p.flow } else { 0 },
        }
    }
}

impl FlowMatch {
    fn mask(&self) -> Mask {
        [
            (self.in_port.is_some(), IN_PORT),
            (self.src.is_some(), SRC),
            (self.dst.is_some(), DST),
            (self.proto.is_some(), PROTO),
            (self.src_port.is_some(), SRC_PORT),
            (self.dst_port.is_some(), DST_PORT),
            (self.flow.is_some(), FLOW),
        ]
        .iter()
        .filter(|(set, _)| *set)
        .fold(0, |m, (_, bit)| m | bit)
    }

    fn key(&self) -> Key {
        Key {
            in_port: self.in_port.unwrap_or(0),
            src: self.src.unwrap_or(0),
            dst: self.dst.unwrap_or(0),
            proto: self.proto.unwrap_or(0),
            src_port: self.src_port.unwrap_or(0),
            dst_port: self.dst_port.unwrap_or(0),
            flow: self.flow.unwrap_or(0),
        }
    }
}

/// A fixed, seedless hasher for the table's keys: lookups never depend on a process's
/// random state (the maps are never iterated either), and it is a few multiplies.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        crate::rng::mix64(self.0)
    }
}

pub(crate) type KeyMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// The entries that set one combination of fields, hashed on those fields' values.
#[derive(Clone, Debug)]
struct Subtable {
    mask: Mask,
    /// No entry here has a higher priority (an upper bound: removals do not lower it).
    max_priority: u16,
    /// Each bucket's slots in match order: priority descending, then oldest first.
    buckets: KeyMap<Key, Vec<u32>>,
    len: usize,
}

#[derive(Clone, Debug)]
struct Stored {
    entry: FlowEntry,
    /// Installation order, to break ties between equal priorities.
    seq: u64,
}

/// A switch's flow table, searched as a tuple space: one hash table per combination of
/// set fields, probed in order of their highest priority, so a lookup costs one probe
/// per combination in use (a handful) however many entries there are.
#[derive(Default, Clone, Debug)]
/// `repr(C)`: `subtables` first, as its emptiness is read for every packet a switch
/// forwards (see `NodeState`).
#[repr(C)]
pub struct FlowTable {
    /// Ordered by `max_priority` descending.
    subtables: Vec<Subtable>,
    slots: crate::slab::Slab<Stored>,
    by_id: KeyMap<u32, u32>,
    next_seq: u64,
}

impl FlowTable {
    /// Installs an entry (its id chosen by the caller); among equal priorities, older
    /// entries win.
    pub fn add(&mut self, entry: FlowEntry) {
        let (mask, key, priority, id) = (
            entry.matcher.mask(),
            entry.matcher.key(),
            entry.priority,
            entry.id,
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.slots.insert(Stored { entry, seq });
        self.by_id.insert(id, slot);
        let at = match self.subtables.iter().position(|t| t.mask == mask) {
            Some(at) => at,
            None => {
                self.subtables.push(Subtable {
                    mask,
                    max_priority: priority,
                    buckets: KeyMap::default(),
                    len: 0,
                });
                self.subtables.len() - 1
            }
        };
        let slots = &self.slots;
        let table = &mut self.subtables[at];
        table.max_priority = table.max_priority.max(priority);
        table.len += 1;
        let bucket = table.buckets.entry(key).or_default();
        let pos =
            bucket.partition_point(|&s| slots.get(s).expect("live").entry.priority >= priority);
        bucket.insert(pos, slot);
        // Stable, so equal bounds keep their order and the search stays deterministic.
        self.subtables
            .sort_by_key(|t| std::cmp::Reverse(t.max_priority));
    }

    pub fn remove(&mut self, id: u32) -> Option<FlowEntry> {
        let slot = self.by_id.remove(&id)?;
        let stored = self.slots.take(slot).expect("indexed entries are live");
        let mask = stored.entry.matcher.mask();
        let key = stored.entry.matcher.key();
        let at = self
            .subtables
            .iter()
            .position(|t| t.mask == mask)
            .expect("an entry's subtable exists");
        let table = &mut self.subtables[at];
        let bucket = table
            .buckets
            .get_mut(&key)
            .expect("an entry's bucket exists");
        bucket.retain(|&s| s != slot);
        if bucket.is_empty() {
            table.buckets.remove(&key);
        }
        table.len -= 1;
        if table.len == 0 {
            self.subtables.remove(at);
        }
        Some(stored.entry)
    }

    /// Replaces entry `id`'s action; returns whether the entry exists.
    pub fn set_action(&mut self, id: u32, action: FlowAction) -> bool {
        match self.by_id.get(&id).and_then(|&s| self.slots.get_mut(s)) {
            Some(stored) => {
                stored.entry.action = action;
                true
            }
            None => false,
        }
    }

    pub fn get(&self, id: u32) -> Option<&FlowEntry> {
        let slot = *self.by_id.get(&id)?;
        self.slots.get(slot).map(|s| &s.entry)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.subtables.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The action of the first matching entry (highest priority, then oldest), counting
    /// the packet against it.
    #[inline]
    pub fn lookup(&mut self, in_port: u16, p: &PacketHeader, now: Time) -> Option<FlowAction> {
        let mut best: Option<(u16, u64, u32)> = None;
        for table in &self.subtables {
            if best.is_some_and(|(priority, _, _)| table.max_priority < priority) {
                break;
            }
            let Some(bucket) = table.buckets.get(&Key::of_packet(table.mask, in_port, p)) else {
                continue;
            };
            let slot = bucket[0];
            let stored = self.slots.get(slot).expect("live");
            let candidate = (stored.entry.priority, stored.seq, slot);
            let better = match best {
                None => true,
                Some((priority, seq, _)) => {
                    candidate.0 > priority || (candidate.0 == priority && candidate.1 < seq)
                }
            };
            if better {
                best = Some(candidate);
            }
        }
        let (_, _, slot) = best?;
        let entry = &mut self.slots.get_mut(slot).expect("live").entry;
        entry.packets += 1;
        entry.bytes += p.size as u64;
        entry.last_used = now;
        Some(entry.action)
    }

    /// Every entry in match order (priority descending, then oldest first).
    pub fn entries(&self) -> Vec<&FlowEntry> {
        let mut all: Vec<&Stored> = self.slots.iter().collect();
        all.sort_by_key(|s| (std::cmp::Reverse(s.entry.priority), s.seq));
        all.into_iter().map(|s| &s.entry).collect()
    }
}

/// The largest group and meter ids a switch takes: its tables are indexed by id, so an
/// id costs a slot per smaller one (a 16-bit id space, as switches' group tables are
/// sized; an id of 2^31 would ask for 100 GB).
pub const MAX_GROUP_ID: u32 = u16::MAX as u32;
pub const MAX_METER_ID: u32 = u16::MAX as u32;

/// A group: several ports behind one action.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Group {
    /// Per-flow hash over the ports, each chosen in proportion to its weight.
    Select { ports: Vec<u16>, weights: Vec<u32> },
    /// The first port whose link is up.
    FastFailover { ports: Vec<u16> },
}

/// A token bucket: packets beyond `rate` (with `burst` bytes of slack) are dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meter {
    pub rate: Rate,
    pub burst: u64,
    /// Tokens in byte·picoseconds·(bit/s) units, kept exact in integers.
    tokens: u128,
    last: Time,
    pub dropped: u64,
}

impl Meter {
    pub fn new(rate: Rate, burst: u64) -> Meter {
        Meter {
            rate,
            burst,
            tokens: Self::tokens(burst),
            last: 0,
            dropped: 0,
        }
    }

    /// `bytes` in token units, bytes · 8 · 10^12, so that rate (bit/s) · elapsed (ps)
    /// refills exactly.
    fn tokens(bytes: u64) -> u128 {
        bytes as u128 * 8 * SEC as u128
    }

    /// Whether a packet of `size` bytes conforms now; conforming packets take tokens.
    pub fn admit(&mut self, size: u32, now: Time) -> bool {
        let cap = Self::tokens(self.burst);
        let refill = (now - self.last.min(now)) as u128 * self.rate as u128;
        self.tokens = (self.tokens + refill).min(cap);
        self.last = now;
        let need = Self::tokens(size as u64);
        if self.tokens >= need {
            self.tokens -= need;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// What a switch does with a packet no entry matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// Default shortest-path routing.
    Route,
    /// A packet-in to the controller.
    Controller,
    Drop,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u32, priority: u16, matcher: FlowMatch, port: u16) -> FlowEntry {
        FlowEntry {
            id,
            priority,
            matcher,
            action: FlowAction::forward(Forward::Output(port)),
            idle_timeout: None,
            hard_timeout: None,
            installed: 0,
            last_used: 0,
            packets: 0,
            bytes: 0,
        }
    }

    #[test]
    fn highest_priority_wins_and_ties_go_to_the_oldest() {
        let mut t = FlowTable::default();
        let pkt = PacketHeader {
            src: 1,
            dst: 2,
            ..Default::default()
        };
        t.add(entry(
            0,
            10,
            FlowMatch {
                dst: Some(2),
                ..Default::default()
            },
            1,
        ));
        t.add(entry(
            1,
            20,
            FlowMatch {
                src: Some(1),
                ..Default::default()
            },
            2,
        ));
        t.add(entry(2, 20, FlowMatch::default(), 3));
        assert_eq!(t.lookup(0, &pkt, 5).unwrap().forward, Forward::Output(2));
        let other = PacketHeader {
            src: 5,
            dst: 2,
            ..Default::default()
        };
        assert_eq!(t.lookup(0, &other, 6).unwrap().forward, Forward::Output(3));
        let first = t.get(1).unwrap();
        assert_eq!((first.packets, first.last_used), (1, 5));
    }

    /// The linear scan the index must agree with: first match in (priority desc,
    /// installation) order.
    fn reference(entries: &[FlowEntry], in_port: u16, p: &PacketHeader) -> Option<u32> {
        let mut sorted: Vec<(usize, &FlowEntry)> = entries.iter().enumerate().collect();
        sorted.sort_by_key(|(i, e)| (std::cmp::Reverse(e.priority), *i));
        sorted
            .into_iter()
            .find(|(_, e)| e.matcher.matches(in_port, p))
            .map(|(_, e)| e.id)
    }

    #[test]
    fn the_index_finds_what_a_linear_scan_finds() {
        let mut rng = crate::rng::Rng::stream(7, crate::rng::Stream::Workload, 0);
        let mut pick = |n: u64| rng.below(n) as u32;
        for round in 0..20 {
            let mut table = FlowTable::default();
            let mut live: Vec<FlowEntry> = Vec::new();
            for id in 0..300u32 {
                let field = |on: bool, v: u32| on.then_some(v);
                let m = FlowMatch {
                    in_port: field(pick(3) == 0, pick(4)).map(|v| v as u16),
                    src: field(pick(2) == 0, pick(6)),
                    dst: field(pick(2) == 0, pick(6)),
                    proto: field(pick(5) == 0, 6).map(|v| v as u8),
                    src_port: None,
                    dst_port: field(pick(6) == 0, 80 + pick(2)).map(|v| v as u16),
                    flow: field(pick(3) == 0, pick(20)),
                };
                let e = entry(id, pick(4) as u16, m, (id % 7) as u16);
                table.add(e.clone());
                live.push(e);
                if pick(4) == 0 {
                    let gone = live.remove(pick(live.len() as u64) as usize);
                    assert_eq!(table.remove(gone.id).map(|e| e.id), Some(gone.id));
                }
            }
            assert_eq!(table.len(), live.len());
            for _ in 0..2000 {
                let p = PacketHeader {
                    src: pick(6),
                    dst: pick(6),
                    proto: if pick(2) == 0 { 6 } else { 17 },
                    dst_port: 80 + pick(2) as u16,
                    flow: pick(20),
                    ..Default::default()
                };
                let in_port = pick(4) as u16;
                let want = reference(&live, in_port, &p);
                let got = table.lookup(in_port, &p, 0).map(|_| ());
                assert_eq!(got.is_some(), want.is_some(), "round {round}");
                if let Some(id) = want {
                    // The counted entry is the one the scan picks.
                    let before = table.get(id).unwrap().packets;
                    table.lookup(in_port, &p, 0);
                    assert_eq!(table.get(id).unwrap().packets, before + 1, "round {round}");
                }
            }
            let order: Vec<u32> = table.entries().iter().map(|e| e.id).collect();
            let mut expected: Vec<&FlowEntry> = live.iter().collect();
            expected.sort_by_key(|e| std::cmp::Reverse(e.priority));
            assert_eq!(order, expected.iter().map(|e| e.id).collect::<Vec<_>>());
        }
    }

    #[test]
    fn in_port_match_and_removal() {
        let mut t = FlowTable::default();
        t.add(entry(
            7,
            1,
            FlowMatch {
                in_port: Some(4),
                ..Default::default()
            },
            0,
        ));
        let pkt = PacketHeader::default();
        assert_eq!(t.lookup(3, &pkt, 0), None);
        assert!(t.lookup(4, &pkt, 0).is_some());
        assert_eq!(t.remove(7).map(|e| e.id), Some(7));
        assert!(t.is_empty());
    }

    #[test]
    fn expiry_is_the_earlier_of_idle_and_hard() {
        let mut e = entry(0, 1, FlowMatch::default(), 0);
        e.idle_timeout = Some(10);
        e.hard_timeout = Some(100);
        e.last_used = 95;
        assert_eq!(e.expiry(), Some(100));
        e.last_used = 50;
        assert_eq!(e.expiry(), Some(60));
    }

    #[test]
    fn a_meter_passes_its_rate_and_its_burst() {
        // 1 Gb/s with a 3000 B burst: 1500 B packets every 6 us offer 2 Gb/s.
        let mut m = Meter::new(1_000_000_000, 3000);
        let passed = (0..10_000u64)
            .filter(|i| m.admit(1500, i * 6_000_000))
            .count() as f64;
        let rate = passed * 1500.0 * 8.0 / (10_000.0 * 6e-6);
        assert!((rate / 1e9 - 1.0).abs() < 0.01, "{rate}");
        assert_eq!(m.dropped as usize, 10_000 - passed as usize);
    }
}
