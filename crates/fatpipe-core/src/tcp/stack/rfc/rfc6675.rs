//! SACK-based loss recovery as RFC 6675 writes it (with RFC 2018's option): the scoreboard
//! (`scoreboard.rs`) says which holes are lost -- by the duplicate-ACK threshold counted
//! in SACKed segments above a hole (IsLost), or with FACK by the forward-most SACK --
//! recovery sets cwnd = ssthresh, and segments go out while pipe < cwnd: lost holes first
//! (NextSeg rule 1), then new data (rule 2). Recovery ends when an ACK covers `recover`.
//! The RFC stack's shared ACK path is in `mod.rs`.

use super::scoreboard::LossBoundary;
use super::RfcStack;
use crate::cc::CaState;
use crate::packet::Packet;
use crate::tcp::config::SackVariant;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl RfcStack {
    /// RFC 6675 section 5 steps 4.1-4.3 (ssthresh set, and Recovery entered, by the caller).
    pub(crate) fn sack_enter_recovery(&mut self, tcb: &mut Tcb, now: Time, dupthresh: u32, out: &mut Vec<Packet>) {
        self.scoreboard.start_recovery(tcb.snd_una);
        if tcb.cfg.sack_variant == SackVariant::Sack1 {
            self.sack1_enter_recovery(tcb, dupthresh);
        }
        if !tcb.controls {
            tcb.cc_state.cwnd = tcb.cc_state.ssthresh; // step 4.2
        }
        // The first hole goes out at once, lost by the rule or not (step 4.3).
        self.retransmit_first_unacked(tcb, now, out);
    }

    /// The scoreboard holds a lost hole (IsLost of the first unacknowledged byte): recovery
    /// starts before the duplicate-ACK count reaches the threshold (RFC 6675 section 5 step 2).
    pub(crate) fn sack_says_lost(&self, tcb: &Tcb) -> bool {
        self.scoreboard
            .loss_boundary(tcb.snd_una, tcb.cfg.mss_bytes as u64, self.dupthresh(tcb) as u64, tcb.cfg.fack)
            .below
            > tcb.snd_una
    }

    /// A new ACK in recovery: a full one ends it, with cwnd at ssthresh where recovery set it
    /// (RFC 6675 section 5).
    pub(crate) fn sack_on_new_ack(&mut self, tcb: &mut Tcb, now: Time, full: bool) {
        if tcb.cfg.sack_variant == SackVariant::Sack1 {
            self.sack1_on_ack(!full);
        }
        if full {
            self.exit_recovery(tcb, now);
        }
    }

    /// RFC 6675 section 5 (C): while cwnd - pipe >= 1 SMSS, send lost holes first (NextSeg
    /// rule 1), then new data (rule 2).
    pub(crate) fn send_sack_recovery(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        if tcb.cfg.sack_variant == SackVariant::Sack1 && tcb.ca_state == CaState::Recovery {
            return self.send_sack1_recovery(tcb, now, out);
        }
        let mss = tcb.cfg.mss_bytes as u64;
        let lost = self.scoreboard.loss_boundary(tcb.snd_una, mss, self.dupthresh(tcb) as u64, tcb.cfg.fack);
        let mut pipe = self.scoreboard.pipe(tcb.snd_una, tcb.snd_max, lost);
        let cwnd_bytes = tcb.cc_state.cwnd as u64 * mss;
        while pipe + mss <= cwnd_bytes {
            match self.send_next_segment(tcb, now, lost, out) {
                Some(len) => pipe += len,
                None => break,
            }
        }
        tcb.cc_state.cwnd_limited = pipe + mss > cwnd_bytes;
    }

    /// Sends one segment in SACK recovery: the first hole below `lost` not yet retransmitted
    /// (NextSeg rule 1), else new data within the windows (rule 2). Returns the bytes sent,
    /// or None when nothing could go (paced, refused, or nothing to send).
    pub(crate) fn send_next_segment(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        lost: LossBoundary,
        out: &mut Vec<Packet>,
    ) -> Option<u64> {
        let mss = tcb.cfg.mss_bytes as u64;
        // Checked before the segment is chosen: TSQ's doubled limit for retransmissions is
        // the Linux stack's (its send loop), not this one's.
        if tcb.paced_out(now, false) {
            return None;
        }
        if let Some((seq, len)) = self.scoreboard.next_lost_hole(tcb.snd_una, tcb.snd_max, lost, mss) {
            if !tcb.emit(now, seq, len as u32, out) {
                return None;
            }
            self.scoreboard.on_retransmit(seq, len);
            return Some(len);
        }
        let new_data_end = (tcb.snd_una + tcb.rwnd.min(tcb.cfg.snd_buffer_bytes)).min(tcb.written);
        if tcb.snd_max >= new_data_end {
            return None;
        }
        let len = (new_data_end - tcb.snd_max).min(mss);
        if (len < mss && tcb.snd_max + len < tcb.written) || !tcb.emit(now, tcb.snd_max, len as u32, out) {
            return None;
        }
        tcb.snd_max += len;
        tcb.snd_nxt = tcb.snd_max;
        Some(len)
    }
}
