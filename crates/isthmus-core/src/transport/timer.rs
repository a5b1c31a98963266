//! A restartable transport timer that costs an event only when it must.
//!
//! TCP restarts its retransmission timer on almost every ACK. Scheduling an event per
//! restart would double the event count, so a timer keeps its deadline apart from the one
//! event it has pending: moving the deadline later costs nothing (the pending event, on
//! firing, re-arms itself for the new deadline); moving it earlier schedules a new event
//! and retires the old one through a generation number carried in the event's token.

use super::Outbox;
use crate::units::Time;

/// Bits of a timer token that say which of a flow's timers it belongs to.
pub const TIMER_KIND_BITS: u32 = 5;
/// The kind of timer a token belongs to.
pub const TIMER_KIND_MASK: u32 = (1 << TIMER_KIND_BITS) - 1;

#[derive(Clone, Debug, Default)]
pub struct Timer {
    deadline: Option<Time>,
    armed: Option<Time>,
    generation: u32,
}

impl Timer {
    /// A timer already armed for `at` by an event the engine scheduled with token `kind`
    /// (generation 0), such as a flow's start.
    pub fn armed_at(at: Time) -> Timer {
        Timer {
            deadline: Some(at),
            armed: Some(at),
            generation: 0,
        }
    }

    pub fn token(&self, kind: u32) -> u32 {
        self.generation << TIMER_KIND_BITS | kind
    }

    /// (Re)starts the timer to expire at `at`.
    pub fn set(&mut self, at: Time, kind: u32, out: &mut Outbox) {
        self.deadline = Some(at);
        if self.armed.is_none_or(|armed| armed > at) {
            self.generation = self.generation.wrapping_add(1) & (u32::MAX >> TIMER_KIND_BITS);
            self.armed = Some(at);
            out.timers.push((at, self.token(kind)));
        }
    }

    pub fn cancel(&mut self) {
        self.deadline = None;
    }

    pub fn is_set(&self) -> bool {
        self.deadline.is_some()
    }

    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }

    /// Handles one of this timer's events; returns true when the timer has expired now.
    pub fn fire(&mut self, token: u32, now: Time, kind: u32, out: &mut Outbox) -> bool {
        if token >> TIMER_KIND_BITS != self.generation || self.armed != Some(now) {
            return false;
        }
        self.armed = None;
        match self.deadline {
            None => false,
            Some(deadline) if deadline > now => {
                self.set(deadline, kind, out);
                false
            }
            Some(_) => {
                self.deadline = None;
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a timer like the engine would: pops the earliest pending event.
    fn next(out: &mut Outbox) -> (Time, u32) {
        out.timers.sort();
        out.timers.remove(0)
    }

    #[test]
    fn later_restarts_cost_no_event_and_earlier_ones_retire_the_old() {
        let mut out = Outbox::default();
        let mut t = Timer::default();
        t.set(100, 1, &mut out);
        t.set(150, 1, &mut out);
        t.set(200, 1, &mut out);
        assert_eq!(out.timers.len(), 1);
        let (at, token) = next(&mut out);
        assert!(!t.fire(token, at, 1, &mut out), "fired before its deadline");
        assert_eq!(out.timers, vec![(200, t.token(1))]);
        t.set(120, 1, &mut out);
        assert_eq!(out.timers.len(), 2);
        let (at, token) = next(&mut out);
        assert_eq!(at, 120);
        assert!(t.fire(token, at, 1, &mut out));
        let (at, token) = next(&mut out);
        assert!(!t.fire(token, at, 1, &mut out), "the retired event fired");
    }

    #[test]
    fn cancelled_timers_do_not_expire() {
        let mut out = Outbox::default();
        let mut t = Timer::default();
        t.set(10, 0, &mut out);
        t.cancel();
        let (at, token) = next(&mut out);
        assert!(!t.fire(token, at, 0, &mut out));
        assert!(out.timers.is_empty());
        assert!(!t.is_set());
    }
}
