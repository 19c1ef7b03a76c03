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
//! ssthresh (the larger of it and the one before the reduction).

use super::AckFlags;
use super::LinuxStack;
use crate::cc::CaState;
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
}

/// The undo decisions of the Linux stack's state machine, and F-RTO's (Linux
/// `tcp_process_loss`).
impl LinuxStack {
    /// Linux `tcp_undo_cwnd_reduction`.
    pub(crate) fn undo_cwnd_reduction(&mut self, tcb: &mut Tcb, now: Time, unmark_loss: bool) {
        if unmark_loss {
            self.q.unmark_all_lost();
            self.mark_hint = None;
        }
        if self.undo.prior_ssthresh > 0 {
            tcb.sync_cc_view(now);
            tcb.cc_state.cwnd = tcb.cc.undo_cwnd(&tcb.cc_state, tcb.prior_cwnd);
            if self.undo.prior_ssthresh > tcb.cc_state.ssthresh {
                tcb.cc_state.ssthresh = self.undo.prior_ssthresh;
                tcb.ecn_cwr_pending = false;
            }
        }
        self.undo.marker = None;
        self.rack.advanced = true;
        tcb.stats.undos += 1;
    }

    /// Linux `tcp_try_undo_recovery`: recovery is over; undo it if it was spurious.
    /// Returns true when the state must be held (NewReno without SACK).
    pub(crate) fn try_undo_recovery(&mut self, tcb: &mut Tcb, now: Time, ts_ecr: Option<Time>) -> bool {
        if tcb.cfg.undo && self.undo.may_undo(ts_ecr, tcb.sack()) {
            self.undo_cwnd_reduction(tcb, now, false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if tcb.snd_una == self.high_seq && !tcb.sack() {
            // RFC 6582: hold until something above high_seq is acknowledged.
            if self.q.retrans_out == 0 {
                self.undo.retrans_stamp = None;
            }
            return true;
        }
        tcb.set_ca_state(now, CaState::Open);
        self.disorder = false;
        false
    }

    /// Linux `tcp_try_undo_dsack`.
    pub(crate) fn try_undo_dsack(&mut self, tcb: &mut Tcb, now: Time) -> bool {
        if tcb.cfg.undo && self.undo.dsack_says_spurious() {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(super::rack::RECOVERY_THRESH);
            self.undo_cwnd_reduction(tcb, now, false);
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`.
    pub(crate) fn try_undo_loss(&mut self, tcb: &mut Tcb, now: Time, frto_undo: bool, ts_ecr: Option<Time>) -> bool {
        if !tcb.cfg.undo || !(frto_undo || self.undo.may_undo(ts_ecr, tcb.sack())) {
            return false;
        }
        self.undo_cwnd_reduction(tcb, now, true);
        if frto_undo {
            tcb.stats.spurious_timeouts += 1;
        }
        self.retransmits = 0;
        if frto_undo || tcb.sack() {
            tcb.set_ca_state(now, CaState::Open);
            self.disorder = false;
        }
        true
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK of original data during recovery.
    /// Returns true to stop processing this ACK; `do_lost` says whether to mark more losses.
    pub(crate) fn try_undo_partial(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        prior_snd_una: u64,
        ts_ecr: Option<Time>,
        do_lost: &mut bool,
    ) -> bool {
        if tcb.cfg.undo && self.undo.marker.is_some() && self.undo.packet_delayed(ts_ecr, tcb.sack()) {
            self.note_reordering(tcb, prior_snd_una);
            if self.q.retrans_out > 0 {
                return true;
            }
            self.undo.retrans_stamp = None;
            self.undo_cwnd_reduction(tcb, now, true);
            self.try_keep_open(tcb, now);
        } else {
            *do_lost = !tcb.sack() || self.q.sacked_out + 1 > self.reordering;
        }
        false
    }

    /// F-RTO and the Loss state (Linux `tcp_process_loss`). Returns whether new data may
    /// go out instead of retransmissions (F-RTO step 2b).
    pub(crate) fn process_loss(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        f: &AckFlags,
        num_dupack: u32,
        ts_ecr: Option<Time>,
    ) {
        let recovered = tcb.snd_una >= self.high_seq;
        if f.una_advanced && self.try_undo_loss(tcb, now, false, ts_ecr) {
            return;
        }
        if self.frto {
            // RFC 5682 3.1 step 3b: never-retransmitted data was (S)ACKed: spurious.
            if f.orig_sack_acked && self.try_undo_loss(tcb, now, true, ts_ecr) {
                return;
            }
            if tcb.snd_nxt > self.high_seq {
                if f.data_sacked || num_dupack > 0 {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if f.una_advanced && !recovered {
                // Step 2b: send new data next (the send loop does, window permitting).
                self.high_seq = tcb.snd_nxt;
                if tcb.written > tcb.snd_max && tcb.snd_una + tcb.rwnd > tcb.snd_max {
                    self.frto_send_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery(tcb, now, ts_ecr);
            return;
        }
        if !tcb.sack() {
            if tcb.snd_nxt > self.high_seq && num_dupack > 0 {
                self.add_reno_sack(tcb, num_dupack);
            } else if f.una_advanced {
                self.q.sacked_out = 0;
            }
        }
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
