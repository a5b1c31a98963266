//! Selective acknowledgements: the receiver's SACK blocks (RFC 2018) and the sender's
//! scoreboard and loss recovery (RFC 6675), in the sequence offsets TCP uses.
//!
//! Receiver: every ACK sent while data waits out of order carries up to 3 blocks (4
//! without the timestamps option), the one holding the latest segment first, then the
//! others from the highest down; each costs 8 bytes of option plus 4 for the option's
//! kind, length and padding. The blocks travel beside the ACK: the sender reads the
//! very blocks the receiver wrote when it sent that ACK (a bounded ring of snapshots
//! keyed by an id the ACK carries), so nothing in the packet layout grows.
//!
//! Sender, in recovery: the scoreboard holds the SACKed ranges above the cumulative
//! ACK. A hole counts as lost once at least DupThresh (3) segments' worth of bytes are
//! SACKed above it (RFC 6675 IsLost); `pipe` counts the bytes in flight: holes not yet
//! lost, lost holes already retransmitted, and everything above the highest SACK. The
//! sender sends while pipe + one segment fits in cwnd: first the lowest lost hole not
//! yet retransmitted (NextSeg rule 1), else new data (rule 2). Left out: the rescue
//! retransmission (rule 4) and keeping the scoreboard across a timeout (it is cleared,
//! and go-back-N resends from the cumulative ACK).

use std::collections::VecDeque;

/// DupThresh of RFC 6675.
pub const DUP_THRESH: u64 = 3;
/// Bytes the SACK option takes besides its blocks: kind, length and two NOPs.
pub const OPTION_BYTES: u32 = 4;
pub const BLOCK_BYTES: u32 = 8;

/// SACK blocks the receiver wrote into ACKs not yet read, by id.
#[derive(Clone, Debug, Default)]
pub struct SentBlocks {
    next_id: u64,
    ring: VecDeque<(u64, Vec<(u64, u64)>)>,
}

/// Old snapshots beyond this are dropped (their ACKs were lost).
const RING: usize = 64;

impl SentBlocks {
    /// Records `blocks` for an ACK about to leave; returns the id it carries (never 0).
    pub fn record(&mut self, blocks: Vec<(u64, u64)>) -> u64 {
        self.next_id += 1;
        if self.ring.len() == RING {
            self.ring.pop_front();
        }
        self.ring.push_back((self.next_id, blocks));
        self.next_id
    }

    /// The blocks of ACK `id`, and forgets every older snapshot.
    pub fn take(&mut self, id: u64) -> Option<Vec<(u64, u64)>> {
        while let Some(&(oldest, _)) = self.ring.front() {
            if oldest >= id {
                break;
            }
            self.ring.pop_front();
        }
        match self.ring.front() {
            Some((first, _)) if *first == id => self.ring.pop_front().map(|(_, b)| b),
            _ => None,
        }
    }
}

/// The blocks an ACK reports from out-of-order `ranges` (sorted), the range holding
/// `latest` (the segment that just arrived) first, then the highest others.
pub fn blocks_to_send(ranges: &[(u64, u64)], latest: Option<u64>, max: usize) -> Vec<(u64, u64)> {
    let mut blocks = Vec::with_capacity(max);
    let first = latest.and_then(|l| ranges.iter().find(|&&(s, e)| s <= l && l < e));
    if let Some(&range) = first {
        blocks.push(range);
    }
    for &range in ranges.iter().rev() {
        if blocks.len() == max {
            break;
        }
        if Some(&range) != first {
            blocks.push(range);
        }
    }
    blocks
}

/// The sender's record of SACKed ranges above the cumulative ACK.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    sacked: Vec<(u64, u64)>,
    /// Holes below this were retransmitted in the current recovery.
    pub retransmitted_to: u64,
}

impl Scoreboard {
    pub fn clear(&mut self) {
        self.sacked.clear();
        self.retransmitted_to = 0;
    }

    /// Adds an ACK's blocks and forgets what the cumulative ACK `una` now covers.
    pub fn update(&mut self, una: u64, blocks: &[(u64, u64)]) {
        for &(s, e) in blocks {
            if e > s {
                self.sacked.push((s, e));
            }
        }
        self.sacked.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.sacked.len());
        for &(s, e) in &self.sacked {
            let (s, e) = (s.max(una), e);
            if e <= s {
                continue;
            }
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.sacked = merged;
        self.retransmitted_to = self.retransmitted_to.max(una);
    }

    /// Bytes SACKed at or above `offset`.
    fn sacked_above(&self, offset: u64) -> u64 {
        self.sacked
            .iter()
            .map(|&(s, e)| e.saturating_sub(s.max(offset)))
            .sum()
    }

    /// RFC 6675 IsLost: enough is SACKed above `offset` that it was not merely delayed.
    pub fn is_lost(&self, offset: u64, mss: u64) -> bool {
        self.sacked_above(offset) >= DUP_THRESH * mss
    }

    pub fn is_sacked(&self, offset: u64) -> bool {
        self.sacked.iter().any(|&(s, e)| s <= offset && offset < e)
    }

    /// The lowest lost, unretransmitted hole at or above `una`, as (start, end).
    pub fn next_lost_hole(&self, una: u64, mss: u64) -> Option<(u64, u64)> {
        let mut at = una.max(self.retransmitted_to);
        for &(s, e) in &self.sacked {
            if at < s {
                return self.is_lost(at, mss).then_some((at, s));
            }
            at = at.max(e);
        }
        None
    }

    /// RFC 6675 SetPipe: bytes in flight between `una` and `max` (the highest sent).
    pub fn pipe(&self, una: u64, max: u64, mss: u64) -> u64 {
        let mut pipe = 0;
        let mut at = una;
        for &(s, e) in &self.sacked {
            if at < s {
                pipe += self.hole_in_flight(at, s.min(max), mss);
            }
            at = at.max(e);
        }
        if at < max {
            pipe += max - at;
        }
        pipe
    }

    fn hole_in_flight(&self, start: u64, end: u64, mss: u64) -> u64 {
        if end <= start {
            return 0;
        }
        if !self.is_lost(start, mss) {
            return end - start;
        }
        // Lost: only what was sent again is in flight.
        self.retransmitted_to.clamp(start, end) - start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_lead_with_the_latest_segment_then_the_highest() {
        let ranges = [(10, 20), (30, 40), (50, 60), (70, 80)];
        assert_eq!(
            blocks_to_send(&ranges, Some(35), 3),
            vec![(30, 40), (70, 80), (50, 60)]
        );
        assert_eq!(blocks_to_send(&ranges, None, 2), vec![(70, 80), (50, 60)]);
    }

    #[test]
    fn holes_below_three_segments_of_sacks_are_lost_and_pipe_counts_the_rest() {
        let mss = 10;
        let mut board = Scoreboard::default();
        // 0..10 lost; 10..40 SACKed; 40..50 lost; 50..60 SACKed; 60..100 in flight.
        board.update(0, &[(10, 40), (50, 60)]);
        assert!(board.is_lost(0, mss) && !board.is_lost(40, mss));
        assert_eq!(board.next_lost_hole(0, mss), Some((0, 10)));
        // Hole 0..10 lost (not in flight), 40..50 not yet lost (in flight), tail 60..100.
        assert_eq!(board.pipe(0, 100, mss), 10 + 40);
        board.retransmitted_to = 10;
        assert_eq!(board.pipe(0, 100, mss), 10 + 10 + 40);
        assert_eq!(board.next_lost_hole(0, mss), None);
        // The cumulative ACK moves past the first SACKed range.
        board.update(40, &[]);
        assert_eq!(board.pipe(40, 100, mss), 10 + 40);
    }

    #[test]
    fn snapshots_are_read_once_and_old_ones_dropped() {
        let mut sent = SentBlocks::default();
        let a = sent.record(vec![(1, 2)]);
        let b = sent.record(vec![(3, 4)]);
        assert_eq!(sent.take(b), Some(vec![(3, 4)]));
        assert_eq!(sent.take(a), None, "older than one already read");
    }
}
