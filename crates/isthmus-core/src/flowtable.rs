//! A switch's flow table: entries that match on the ingress port and header fields, the
//! highest priority winning (earliest installed among equals). A packet no entry matches
//! falls through to default routing, so an empty table costs one length check.

use crate::packet::Packet;

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowAction {
    /// Send out this local port.
    Output(u16),
    /// Hash the 5-tuple (with the switch's salt) over these local ports.
    Select(Vec<u16>),
    Drop,
    /// Use the default shortest-path routing.
    Default,
}

#[derive(Clone, Debug)]
pub struct FlowEntry {
    pub id: u64,
    pub priority: u16,
    pub matcher: FlowMatch,
    pub action: FlowAction,
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Default, Clone, Debug)]
pub struct FlowTable {
    entries: Vec<FlowEntry>,
    next_id: u64,
}

impl FlowTable {
    /// Installs an entry and returns its id; among equal priorities, older entries win.
    pub fn add(&mut self, priority: u16, matcher: FlowMatch, action: FlowAction) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let at = self.entries.partition_point(|e| e.priority >= priority);
        self.entries.insert(
            at,
            FlowEntry {
                id,
                priority,
                matcher,
                action,
                packets: 0,
                bytes: 0,
            },
        );
        id
    }

    pub fn remove(&mut self, id: u64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.id != id);
        self.entries.len() != before
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The action of the first matching entry, counting the packet against it.
    #[inline]
    pub fn lookup(&mut self, in_port: u16, p: &Packet) -> Option<&FlowAction> {
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.matcher.matches(in_port, p))?;
        entry.packets += 1;
        entry.bytes += p.size as u64;
        Some(&entry.action)
    }

    pub fn entries(&self) -> &[FlowEntry] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_priority_wins_and_ties_go_to_the_oldest() {
        let mut t = FlowTable::default();
        let pkt = Packet {
            src: 1,
            dst: 2,
            ..Default::default()
        };
        t.add(
            10,
            FlowMatch {
                dst: Some(2),
                ..Default::default()
            },
            FlowAction::Output(1),
        );
        t.add(
            20,
            FlowMatch {
                src: Some(1),
                ..Default::default()
            },
            FlowAction::Output(2),
        );
        t.add(20, FlowMatch::default(), FlowAction::Output(3));
        assert_eq!(t.lookup(0, &pkt), Some(&FlowAction::Output(2)));
        let other = Packet {
            src: 5,
            dst: 2,
            ..Default::default()
        };
        assert_eq!(t.lookup(0, &other), Some(&FlowAction::Output(3)));
        assert_eq!(t.entries()[0].packets, 1);
    }

    #[test]
    fn in_port_match_and_removal() {
        let mut t = FlowTable::default();
        let id = t.add(
            1,
            FlowMatch {
                in_port: Some(4),
                ..Default::default()
            },
            FlowAction::Drop,
        );
        let pkt = Packet::default();
        assert_eq!(t.lookup(3, &pkt), None);
        assert_eq!(t.lookup(4, &pkt), Some(&FlowAction::Drop));
        assert!(t.remove(id));
        assert!(t.is_empty());
    }
}
