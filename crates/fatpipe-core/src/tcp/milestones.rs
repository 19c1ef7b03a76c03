//! The milestones of document 003 (and docs/metrics.md), watched from outside the loss
//! recovery: the end of the first slow start, the first congestion event, and when cwnd,
//! back in the open state, regains 95 % and 100 % of what it was before that event (the
//! summary's `slow_start_*`, `first_loss_*` and `recovered_*`). Both stacks report to the
//! observer at the same two points -- a change of congestion state, and the end of each ACK's
//! processing -- so no recovery code measures anything itself, and checking after every ACK
//! makes the times exact.

use crate::cc::CaState;
use crate::time::Time;

/// What the sender tells the observer about itself.
#[derive(Clone, Copy, Debug)]
pub struct SenderView {
    pub now: Time,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub ca_state: CaState,
    /// New data segments sent so far (retransmissions excluded).
    pub new_segments_sent: u64,
    /// One past the highest byte sent.
    pub snd_max: u64,
    /// Whether any data has gone out yet.
    pub started: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Milestones {
    /// The end of the first slow start (a loss, or cwnd reaching ssthresh), the segments
    /// sent before it and the highest sequence sent by then (document 003's slow-start time
    /// and loss rate during slow start).
    pub slow_start_end_ps: Option<Time>,
    pub slow_start_segments_sent: u64,
    pub slow_start_end_seq: Option<u64>,
    /// The first congestion event (fast retransmit, timeout or other window reduction), the
    /// cwnd just before it, and when cwnd, back in the open state, regained 95% and 100% of
    /// that cwnd (document 003's recovery time).
    pub first_loss_ps: Option<Time>,
    pub first_loss_cwnd_segments: u32,
    pub recovered_95_ps: Option<Time>,
    pub recovered_ps: Option<Time>,
}

impl Milestones {
    /// Every milestone is behind: the per-ACK check can be skipped.
    pub fn done(&self) -> bool {
        self.recovered_ps.is_some()
    }

    /// The congestion state changes to `v.ca_state`; `prior_cwnd` is cwnd before the
    /// reduction that comes with it.
    pub fn on_state(&mut self, v: &SenderView, prior_cwnd: u32) {
        if v.ca_state != CaState::Open && self.first_loss_ps.is_none() {
            self.end_slow_start(v);
            self.first_loss_ps = Some(v.now);
            self.first_loss_cwnd_segments = prior_cwnd.max(1);
        }
    }

    /// An ACK has been processed: slow start's end by growth, and recovery from the first
    /// congestion event.
    pub fn after_ack(&mut self, v: &SenderView) {
        if self.slow_start_end_ps.is_none() && v.cwnd >= v.ssthresh {
            self.end_slow_start(v);
        }
        if self.first_loss_ps.is_some() && self.recovered_ps.is_none() && v.ca_state == CaState::Open {
            let target = self.first_loss_cwnd_segments as u64;
            if self.recovered_95_ps.is_none() && 100 * v.cwnd as u64 >= 95 * target {
                self.recovered_95_ps = Some(v.now);
            }
            if v.cwnd as u64 >= target {
                self.recovered_ps = Some(v.now);
            }
        }
    }

    /// Records the end of the first slow start (once, and only once data has gone out).
    fn end_slow_start(&mut self, v: &SenderView) {
        if self.slow_start_end_ps.is_none() && v.started {
            self.slow_start_end_ps = Some(v.now);
            // New data only: the retransmission that ends slow start may already be out.
            self.slow_start_segments_sent = v.new_segments_sent;
            self.slow_start_end_seq = Some(v.snd_max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(now: Time, cwnd: u32, ssthresh: u32, ca_state: CaState) -> SenderView {
        SenderView { now, cwnd, ssthresh, ca_state, new_segments_sent: 7, snd_max: 7000, started: true }
    }

    #[test]
    fn a_loss_ends_slow_start_and_recovery_is_timed_against_the_prior_window() {
        let mut m = Milestones::default();
        m.after_ack(&view(1, 10, u32::MAX, CaState::Open));
        assert_eq!(m.slow_start_end_ps, None);
        m.on_state(&view(2, 50, 50, CaState::Recovery), 100);
        assert_eq!((m.slow_start_end_ps, m.first_loss_ps, m.first_loss_cwnd_segments), (Some(2), Some(2), 100));
        assert_eq!((m.slow_start_segments_sent, m.slow_start_end_seq), (7, Some(7000)));
        m.after_ack(&view(3, 99, 50, CaState::Recovery));
        assert_eq!(m.recovered_95_ps, None, "only counted back in the open state");
        m.after_ack(&view(4, 95, 50, CaState::Open));
        assert_eq!((m.recovered_95_ps, m.recovered_ps), (Some(4), None));
        m.after_ack(&view(5, 100, 50, CaState::Open));
        assert_eq!(m.recovered_ps, Some(5));
        assert!(m.done());
    }

    #[test]
    fn slow_start_ends_by_growth_without_a_loss() {
        let mut m = Milestones::default();
        m.after_ack(&view(1, 64, 64, CaState::Open));
        assert_eq!((m.slow_start_end_ps, m.first_loss_ps), (Some(1), None));
    }
}
