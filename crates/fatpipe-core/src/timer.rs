//! A timer that keeps at most one live entry in the event queue.
//!
//! TCP restarts its retransmission timer on nearly every ACK. Pushing a heap entry each time
//! would fill the heap with one stale entry per ACK in the last RTO (hundreds of thousands at
//! 10 Gb/s) and make every event cost grow with the rate. Instead the timer remembers its
//! deadline; the queue holds one entry at or before it. When that entry fires early, the timer
//! re-arms itself for the current deadline. The entry is rescheduled only when the deadline
//! moves *earlier* than the pending entry; the event queue then moves the timer's one entry
//! (`event/timer_heap.rs`) rather than leaving the old one to fire, stale, and be ignored.

use crate::time::Time;

#[derive(Clone, Copy, Debug, Default)]
pub struct LazyTimer {
    /// When the owner wants the timer to expire (None: stopped).
    deadline: Option<Time>,
    /// Time of the live entry in the event queue, if any.
    scheduled: Option<Time>,
}

/// What a popped timer entry means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// The deadline has passed: run the timer's action.
    Expired,
    /// The deadline moved later: push a new entry at this time.
    Rearm(Time),
    /// A superseded entry or a stopped timer: nothing to do.
    Ignore,
}

impl LazyTimer {
    /// Sets (or with None, stops) the deadline. Returns a time at which the caller must push
    /// a queue entry, when one is needed.
    #[inline]
    pub fn set(&mut self, deadline: Option<Time>) -> Option<Time> {
        self.deadline = deadline;
        match (deadline, self.scheduled) {
            (Some(d), None) => {
                self.scheduled = Some(d);
                Some(d)
            }
            (Some(d), Some(s)) if d < s => {
                // The entry at `s` moves to `d` (a queue that kept it would see it stale:
                // `fire` recognises such an entry by its time).
                self.scheduled = Some(d);
                Some(d)
            }
            _ => None,
        }
    }

    /// Interprets a queue entry for this timer that fired at `now`.
    #[inline]
    pub fn fire(&mut self, now: Time) -> Fired {
        if self.scheduled != Some(now) {
            return Fired::Ignore;
        }
        self.scheduled = None;
        match self.deadline {
            Some(d) if d <= now => {
                self.deadline = None;
                Fired::Expired
            }
            Some(d) => {
                self.scheduled = Some(d);
                Fired::Rearm(d)
            }
            None => Fired::Ignore,
        }
    }

    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_deadlines_reuse_the_pending_entry() {
        let mut t = LazyTimer::default();
        assert_eq!(t.set(Some(100)), Some(100));
        // Restarting later many times pushes nothing.
        for d in 101..200 {
            assert_eq!(t.set(Some(d)), None);
        }
        assert_eq!(t.fire(100), Fired::Rearm(199));
        assert_eq!(t.fire(199), Fired::Expired);
        assert_eq!(t.deadline(), None);
    }

    #[test]
    fn earlier_deadline_supersedes_and_stale_entry_is_ignored() {
        let mut t = LazyTimer::default();
        assert_eq!(t.set(Some(100)), Some(100));
        assert_eq!(t.set(Some(50)), Some(50));
        assert_eq!(t.fire(50), Fired::Expired);
        assert_eq!(t.fire(100), Fired::Ignore);
    }

    #[test]
    fn stopped_timer_does_not_expire() {
        let mut t = LazyTimer::default();
        t.set(Some(10));
        t.set(None);
        assert_eq!(t.fire(10), Fired::Ignore);
        // And it can be started again afterwards.
        assert_eq!(t.set(Some(20)), Some(20));
        assert_eq!(t.fire(20), Fired::Expired);
    }
}
