//! ns-2's SACK TCP, Agent/TCP/Sack1 (tcp/tcp-sack1.cc; Fall and Floyd, "Simulation-based
//! Comparisons of Tahoe, Reno, and SACK TCP", CCR 26(3), 1996): document 003's "SACK". The
//! RFC stack runs it for `Recovery::Sack` with `SackVariant::Sack1` (the ns2 profile). Where
//! it departs from RFC 6675 (`rfc6675.rs`):
//! - every hole below the highest SACKed segment is retransmitted, lowest first and each
//!   once (ScoreBoard::GetNextRetran: not acknowledged, not SACKed, not retransmitted), where
//!   RFC 6675 waits until DupThresh segments are SACKed above a hole;
//! - pipe is a counter, not recomputed from the scoreboard: on entering recovery it is the
//!   segments outstanding minus the duplicate-ACK threshold (`pipe_ = maxseq_ - highest_ack_
//!   - numdupacks_`), every ACK in recovery takes one off, a partial ACK one more
//!   (`partial_ack_ false`), every segment sent adds one; segments go out while pipe < cwnd,
//!   holes first, then new data (`send_much`);
//! - recovery ends when the cumulative ACK reaches what was outstanding at its start, with
//!   cwnd where the halving put it.
//!
//! Entering recovery, the duplicate-ACK guard and the timeout are the RFC stack's (`mod.rs`),
//! which with the ns2 profile follow ns-2 as well, with one departure: after a timeout ns-2
//! clears Sack1's scoreboard and goes back to the first unacknowledged packet, resending
//! SACKed ones too (`Sack1TcpAgent::timeout`); here the SACKed data stays delivered and only
//! the holes are resent, as RFC 6675 and Linux do. (Not met in the runs compared with ns-2.35
//! in docs/validation.md, which have no SACK timeout.)

use super::scoreboard::LossBoundary;
use super::RfcStack;
use crate::cc::CaState;
use crate::packet::Packet;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl RfcStack {
    /// `sack_action`: pipe_ = outstanding - numdupacks_ (the fast retransmit itself is sent
    /// with `output`, outside the counter).
    pub(crate) fn sack1_enter_recovery(&mut self, tcb: &mut Tcb, dupthresh: u32) {
        self.sack1_pipe = tcb.segments(tcb.snd_max - tcb.snd_una) as i64 - i64::from(dupthresh);
    }

    /// An ACK in recovery: one segment left the network; a partial ACK means its
    /// retransmission arrived too, one more.
    pub(crate) fn sack1_on_ack(&mut self, partial: bool) {
        self.sack1_pipe -= 1 + i64::from(partial);
    }

    /// `send_much` in fast recovery: while pipe < cwnd, the next hole below the highest
    /// SACKed segment, else new data.
    pub(crate) fn send_sack1_recovery(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        let below = self.scoreboard.highest_sacked().unwrap_or(tcb.snd_una);
        let lost = LossBoundary { below, sacked_above: 0 };
        let cwnd = i64::from(tcb.cc_state.cwnd);
        while self.sack1_pipe < cwnd && self.send_next_segment(tcb, now, lost, out).is_some() {
            self.sack1_pipe += 1;
        }
        tcb.cc_state.cwnd_limited = self.sack1_pipe >= cwnd && tcb.ca_state == CaState::Recovery;
    }
}
