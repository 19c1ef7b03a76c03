//! Undoing a window reduction that proves spurious (Linux `tcp_try_undo_*`): the segments
//! taken for lost were only delayed or reordered, so the reduction is taken back.
//!
//! The evidence, each from its RFC:
//! - DSACK (RFC 2883, RFC 3708): the receiver reports every retransmission of the recovery as
//!   a duplicate, so none was needed (`undo_retrans` counts retransmissions not yet reported
//!   as duplicates; zero means all were);
//! - Eifel detection (RFC 3522), with timestamps: the ACK that ends recovery echoes a
//!   timestamp older than the first retransmission, so it acknowledges an original;
//! - F-RTO (RFC 5682, SACK-enhanced, section 3.1): after a timeout the first ACKs deliver
//!   segments that were never retransmitted, so the timeout was spurious.
//!
//! An undo restores cwnd (the algorithm's `undo_cwnd`, by default max(cwnd, prior_cwnd)) and
//! ssthresh (the larger of it and the one before the reduction). `UndoState` keeps the
//! evidence and restores the window; when to undo, and the state after, is the state
//! machine's (`state.rs`, Linux `tcp_try_undo_*`).

use crate::tcp::tcb::Tcb;
use crate::time::Time;

/// What the undo mechanism remembers of the reduction in progress (Linux `undo_marker`,
/// `undo_retrans`, `prior_ssthresh`, `retrans_stamp`).
#[derive(Clone, Copy, Debug, Default)]
pub struct UndoState {
    /// SND.UNA when the reduction began; None: nothing to undo.
    pub marker: Option<u64>,
    /// Retransmissions not yet reported as duplicates by DSACK; negative: none were sent.
    pub retrans: i64,
    /// ssthresh before the reduction; 0: an undo must not restore it (ECN reductions).
    pub prior_ssthresh: u32,
    /// When the first retransmission of this episode went out (Linux `retrans_stamp`).
    pub retrans_stamp: Option<Time>,
}

impl UndoState {
    /// A reduction starts (Linux `tcp_init_undo`): retransmissions already in flight may be
    /// DSACKed later, so they count.
    pub fn init(&mut self, snd_una: u64, retrans_out: u32) {
        self.marker = Some(snd_una);
        self.retrans = if retrans_out > 0 { retrans_out as i64 } else { -1 };
    }

    /// A retransmission goes out (Linux `tcp_retransmit_skb`).
    pub fn on_retransmit(&mut self, now: Time) {
        if self.retrans < 0 {
            self.retrans = 0;
        }
        self.retrans += 1;
        self.retrans_stamp.get_or_insert(now);
    }

    /// A DSACK reported `segments` duplicates (Linux `tcp_check_dsack`).
    pub fn on_dsack(&mut self, segments: u32) {
        if self.marker.is_some() && self.retrans > 0 {
            self.retrans = (self.retrans - segments as i64).max(0);
        }
    }

    /// The ACK acknowledges an original transmission, not a retransmission (Linux
    /// `tcp_packet_delayed`): its timestamp echo is older than the first retransmission
    /// (Eifel), or, with SACK, nothing was retransmitted at all. Without SACK the stamp is
    /// also cleared while NewReno holds recovery at high_seq (Linux 6.x returns false then;
    /// earlier kernels undid such recoveries wrongly).
    pub fn packet_delayed(&self, ts_ecr: Option<Time>, sack: bool) -> bool {
        match self.retrans_stamp {
            None => sack,
            Some(stamp) => ts_ecr.is_some_and(|ecr| ecr < stamp),
        }
    }

    /// The reduction may be undone (Linux `tcp_may_undo`).
    pub fn may_undo(&self, ts_ecr: Option<Time>, sack: bool) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed(ts_ecr, sack))
    }

    /// Every retransmission was reported a duplicate (Linux `tcp_try_undo_dsack`).
    pub fn dsack_says_spurious(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// Takes the reduction back (the window part of Linux `tcp_undo_cwnd_reduction`): cwnd
    /// from the algorithm's `undo_cwnd`, ssthresh back to what it was before unless the
    /// reduction was ECN's; nothing is left to undo.
    pub(crate) fn undo_reduction(&mut self, tcb: &mut Tcb, now: Time) {
        if self.prior_ssthresh > 0 {
            tcb.sync_cc_view(now);
            tcb.cc_state.cwnd = tcb.cc.undo_cwnd(&tcb.cc_state, tcb.prior_cwnd);
            if self.prior_ssthresh > tcb.cc_state.ssthresh {
                tcb.cc_state.ssthresh = self.prior_ssthresh;
                tcb.ecn_cwr_pending = false;
            }
        }
        self.marker = None;
        tcb.stats.undos += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsacks_of_every_retransmission_allow_an_undo() {
        let mut u = UndoState::default();
        u.init(1000, 0);
        assert_eq!(u.retrans, -1);
        u.on_retransmit(10);
        u.on_retransmit(11);
        assert!(!u.dsack_says_spurious());
        u.on_dsack(1);
        assert!(!u.dsack_says_spurious());
        u.on_dsack(1);
        assert!(u.dsack_says_spurious());
        assert!(u.may_undo(None, true));
    }

    #[test]
    fn eifel_undo_needs_an_echo_older_than_the_first_retransmission() {
        let mut u = UndoState::default();
        u.init(0, 0);
        u.on_retransmit(100);
        assert!(!u.may_undo(None, true), "no timestamps, no DSACK: no evidence");
        assert!(!u.may_undo(Some(100), true));
        assert!(u.may_undo(Some(99), true), "the echo is of a segment sent before the retransmission");
        u.retrans_stamp = None;
        assert!(u.may_undo(None, true), "with SACK, no stamp: nothing was retransmitted");
        assert!(!u.may_undo(None, false), "without SACK the stamp is cleared while recovery holds");
        u.marker = None;
        assert!(!u.may_undo(Some(99), true), "nothing to undo");
    }
}
