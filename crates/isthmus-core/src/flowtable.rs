//! A switch's OpenFlow-style pipeline state: the flow table (entries matching on the
//! ingress port and header fields, the highest priority winning, earliest installed
//! among equals), groups, meters, and what to do on a table miss.
//!
//! An empty table costs one length check, so switches nobody programs run at the speed
//! of plain default routing.

use crate::packet::Packet;
use crate::units::{Rate, Time, SEC};

/// Header fields an entry can match; `None` is a wildcard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    pub fn matches(&self, in_port: u16, p: &Packet) -> bool {
        self.in_port.is_none_or(|v| v == in_port)
            && self.src.is_none_or(|v| v == p.src)
            && self.dst.is_none_or(|v| v == p.dst)
            && self.proto.is_none_or(|v| v == p.proto)
            && self.src_port.is_none_or(|v| v == p.src_port)
            && self.dst_port.is_none_or(|v| v == p.dst_port)
            && self.flow.is_none_or(|v| v == p.flow)
    }
}

/// Where a matched packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

#[derive(Default, Clone, Debug)]
pub struct FlowTable {
    entries: Vec<FlowEntry>,
}

impl FlowTable {
    /// Installs an entry (its id chosen by the caller); among equal priorities, older
    /// entries win.
    pub fn add(&mut self, entry: FlowEntry) {
        let at = self
            .entries
            .partition_point(|e| e.priority >= entry.priority);
        self.entries.insert(at, entry);
    }

    pub fn remove(&mut self, id: u32) -> Option<FlowEntry> {
        let at = self.entries.iter().position(|e| e.id == id)?;
        Some(self.entries.remove(at))
    }

    /// Replaces entry `id`'s action; returns whether the entry exists.
    pub fn set_action(&mut self, id: u32, action: FlowAction) -> bool {
        match self.entries.iter_mut().find(|e| e.id == id) {
            Some(e) => {
                e.action = action;
                true
            }
            None => false,
        }
    }

    pub fn get(&self, id: u32) -> Option<&FlowEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The action of the first matching entry, counting the packet against it.
    #[inline]
    pub fn lookup(&mut self, in_port: u16, p: &Packet, now: Time) -> Option<FlowAction> {
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.matcher.matches(in_port, p))?;
        entry.packets += 1;
        entry.bytes += p.size as u64;
        entry.last_used = now;
        Some(entry.action)
    }

    pub fn entries(&self) -> &[FlowEntry] {
        &self.entries
    }
}

/// A group: several ports behind one action.
#[derive(Clone, Debug, PartialEq, Eq)]
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
        let pkt = Packet {
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
        let other = Packet {
            src: 5,
            dst: 2,
            ..Default::default()
        };
        assert_eq!(t.lookup(0, &other, 6).unwrap().forward, Forward::Output(3));
        let first = t.get(1).unwrap();
        assert_eq!((first.packets, first.last_used), (1, 5));
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
        let pkt = Packet::default();
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
