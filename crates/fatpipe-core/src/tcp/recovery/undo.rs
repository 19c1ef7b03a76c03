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

use super::linux::AckFlags;
use crate::cc::CaState;
use crate::tcp::TcpSender;
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
impl TcpSender {
    /// Linux `tcp_undo_cwnd_reduction`.
    pub(crate) fn lx_undo_cwnd_reduction(&mut self, now: Time, unmark_loss: bool) {
        if unmark_loss {
            self.lx.q.unmark_all_lost();
            self.lx.mark_hint = None;
        }
        if self.lx.undo.prior_ssthresh > 0 {
            self.sync_cc_view(now);
            self.cc_state.cwnd = self.cc.undo_cwnd(&self.cc_state, self.prior_cwnd);
            if self.lx.undo.prior_ssthresh > self.cc_state.ssthresh {
                self.cc_state.ssthresh = self.lx.undo.prior_ssthresh;
                self.ecn_cwr_pending = false;
            }
        }
        self.lx.undo.marker = None;
        self.lx.rack.advanced = true;
        self.stats.undos += 1;
    }

    /// Linux `tcp_try_undo_recovery`: recovery is over; undo it if it was spurious.
    /// Returns true when the state must be held (NewReno without SACK).
    pub(crate) fn lx_try_undo_recovery(&mut self, now: Time, ts_ecr: Option<Time>) -> bool {
        if self.cfg.undo && self.lx.undo.may_undo(ts_ecr, self.lx_sack()) {
            self.lx_undo_cwnd_reduction(now, false);
        } else if self.lx.rack.reo_wnd_persist > 0 {
            self.lx.rack.reo_wnd_persist -= 1;
        }
        if self.snd_una == self.lx.high_seq && !self.lx_sack() {
            // RFC 6582: hold until something above high_seq is acknowledged.
            if self.lx.q.retrans_out == 0 {
                self.lx.undo.retrans_stamp = None;
            }
            return true;
        }
        self.set_ca_state(now, CaState::Open);
        self.lx.disorder = false;
        false
    }

    /// Linux `tcp_try_undo_dsack`.
    pub(crate) fn lx_try_undo_dsack(&mut self, now: Time) -> bool {
        if self.cfg.undo && self.lx.undo.dsack_says_spurious() {
            self.lx.rack.reo_wnd_persist = (self.lx.rack.reo_wnd_persist + 1).min(super::rack::RECOVERY_THRESH);
            self.lx_undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`.
    pub(crate) fn lx_try_undo_loss(&mut self, now: Time, frto_undo: bool, ts_ecr: Option<Time>) -> bool {
        if !self.cfg.undo || !(frto_undo || self.lx.undo.may_undo(ts_ecr, self.lx_sack())) {
            return false;
        }
        self.lx_undo_cwnd_reduction(now, true);
        if frto_undo {
            self.stats.spurious_timeouts += 1;
        }
        self.lx.retransmits = 0;
        if frto_undo || self.lx_sack() {
            self.set_ca_state(now, CaState::Open);
            self.lx.disorder = false;
        }
        true
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK of original data during recovery.
    /// Returns true to stop processing this ACK; `do_lost` says whether to mark more losses.
    pub(crate) fn lx_try_undo_partial(
        &mut self,
        now: Time,
        prior_snd_una: u64,
        ts_ecr: Option<Time>,
        do_lost: &mut bool,
    ) -> bool {
        if self.cfg.undo && self.lx.undo.marker.is_some() && self.lx.undo.packet_delayed(ts_ecr, self.lx_sack()) {
            self.lx_note_reordering(prior_snd_una);
            if self.lx.q.retrans_out > 0 {
                return true;
            }
            self.lx.undo.retrans_stamp = None;
            self.lx_undo_cwnd_reduction(now, true);
            self.lx_try_keep_open(now);
        } else {
            *do_lost = !self.lx_sack() || self.lx.q.sacked_out + 1 > self.lx.reordering;
        }
        false
    }

    /// F-RTO and the Loss state (Linux `tcp_process_loss`). Returns whether new data may
    /// go out instead of retransmissions (F-RTO step 2b).
    pub(crate) fn lx_process_loss(&mut self, now: Time, f: &AckFlags, num_dupack: u32, ts_ecr: Option<Time>) {
        let recovered = self.snd_una >= self.lx.high_seq;
        if f.una_advanced && self.lx_try_undo_loss(now, false, ts_ecr) {
            return;
        }
        if self.lx.frto {
            // RFC 5682 3.1 step 3b: never-retransmitted data was (S)ACKed: spurious.
            if f.orig_sack_acked && self.lx_try_undo_loss(now, true, ts_ecr) {
                return;
            }
            if self.snd_nxt > self.lx.high_seq {
                if f.data_sacked || num_dupack > 0 {
                    self.lx.frto = false; // step 3a: the loss was real
                }
            } else if f.una_advanced && !recovered {
                // Step 2b: send new data next (the send loop does, window permitting).
                self.lx.high_seq = self.snd_nxt;
                if self.written > self.snd_max && self.snd_una + self.rwnd > self.snd_max {
                    self.frto_send_new = true;
                    return;
                }
                self.lx.frto = false;
            }
        }
        if recovered {
            self.lx_try_undo_recovery(now, ts_ecr);
            return;
        }
        if !self.lx_sack() {
            if self.snd_nxt > self.lx.high_seq && num_dupack > 0 {
                self.lx_add_reno_sack(num_dupack);
            } else if f.una_advanced {
                self.lx.q.sacked_out = 0;
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
