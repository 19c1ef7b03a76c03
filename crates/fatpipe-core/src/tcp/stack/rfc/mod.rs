//! The RFC stack (`Stack::Rfc`): RFC 5681, 6582, 6675 and 6298 as written, ns-2 in spirit.
//! This file holds what its recovery variants share -- the ACK path, duplicate-ACK
//! counting and the `recover` guard, the retransmission timeout, window reduction without a
//! loss -- and is the one place that sets the congestion state. It asks the flow's variant
//! (`Recovery`) at the three points where they differ: entering recovery, a duplicate ACK
//! during it, and a new ACK during it. Each variant's rules are in its own file, which
//! changes the window and what is sent, never the state:
//! - `tahoe.rs`: fast retransmit, then slow start from one segment (go-back-N);
//! - `reno.rs`: RFC 5681 3.2 fast recovery with window inflation, left on the first new ACK,
//!   so several losses in a window usually end in a timeout;
//! - `newreno.rs`: RFC 6582, recovery until everything outstanding at the loss is
//!   acknowledged, each partial ACK retransmitting the next hole ("Slow-but-Steady" timer
//!   restarts, as Linux, unless the "Impatient" variant is chosen, as ns-2 does);
//! - `rfc6675.rs`: SACK (RFC 2018, RFC 6675): the scoreboard (`scoreboard.rs`) says which
//!   holes are lost; cwnd = ssthresh and segments go out while pipe < cwnd, lost holes first
//!   (NextSeg), then new data; optional FACK loss detection;
//! - `sack1.rs`: ns-2's SACK (Agent/TCP/Sack1), the ns2 profile's: every hole below the
//!   highest SACK retransmitted, pipe a counter.
//!
//! Delayed Congestion Response (document 004) raises the duplicate-ACK threshold to cwnd/div
//! and sends a new segment per duplicate ACK meanwhile (`send.rs`). A
//! retransmission timeout (RFC 6298, Karn, exponential backoff) sets cwnd to one segment;
//! without SACK the sender goes back to the first unacknowledged byte, with SACK it resends
//! the holes (every unSACKed byte counts as lost, as in Linux).

mod newreno;
mod reno;
mod rfc6675;
mod sack1;
pub mod scoreboard;
mod send;
mod tahoe;

use super::TcpStack;
use crate::cc::{AckSample, CaState};
use crate::packet::{Ecn, Packet};
use crate::tcp::ack_timing::AckTiming;
use crate::tcp::config::{Recovery, SackVariant};
use crate::tcp::tcb::Tcb;
use crate::time::Time;
use scoreboard::Scoreboard;

/// The RFC stack's state beside the TCB.
#[derive(Debug, Default)]
pub struct RfcStack {
    /// Consecutive duplicate ACKs.
    dupacks: u32,
    /// RFC 6582 `recover`: one past the highest byte sent when the last recovery began;
    /// duplicate ACKs below it do not start another fast retransmit.
    recover: Option<u64>,
    /// No partial ACK yet in this recovery (the Impatient variant restarts the timer on the first).
    first_partial_ack: bool,
    /// SACK scoreboard (used only with `Recovery::Sack`).
    pub scoreboard: Scoreboard,
    /// Loss accounting for `AckSample::newly_lost_bytes` (kept with rate sampling only). With
    /// SACK: every hole below this byte has been reported lost once.
    lost_reported_below: u64,
    /// Without SACK: bytes of head segments retransmitted as lost since the last report.
    head_lost_bytes: u64,
    /// CWR ends when an ACK passes this byte (Linux `high_seq`: snd_nxt on entering CWR).
    cwr_high_seq: u64,
    /// The head retransmission of a recovery was refused by the interface: send it first.
    head_rtx_pending: bool,
    /// Sack1's pipe counter (segments; may go below zero, as ns-2's `pipe_`).
    sack1_pipe: i64,
}

impl RfcStack {
    /// The RFC stack for the TCB's flow; an algorithm that times every ACK without
    /// timestamps (ns-2's Vegas) gets every segment's send time (`ack_timing.rs`).
    pub(crate) fn new(tcb: &mut Tcb) -> RfcStack {
        if !tcb.cfg.timestamps && tcb.cc.times_every_ack() {
            tcb.ack_timing = Some(AckTiming::default());
        }
        RfcStack::default()
    }
}

impl TcpStack for RfcStack {
    /// Handles one arriving ACK.
    fn on_ack(&mut self, tcb: &mut Tcb, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
        tcb.ts_recent = tcb.ts_recent.max(ack_pkt.ts_val);
        let ack = ack_pkt.ack;
        if ack > tcb.snd_max {
            return; // acknowledges data never sent (RFC 793): ignore
        }
        let window_changed = ack_pkt.window_bytes as u64 != tcb.rwnd;
        if ack >= tcb.snd_una {
            // An older ACK (reordered) must not bring back an older window (RFC 9293 SND.WL2).
            tcb.rwnd = ack_pkt.window_bytes as u64;
        }
        if tcb.persisting && tcb.rwnd > 0 {
            // The window opened: the timer is the retransmission timer again.
            tcb.persisting = false;
            tcb.persist_backoff = 0;
            tcb.rto_deadline = None;
        }
        let prior_in_flight = self.in_flight_bytes(tcb);

        let mut newly_sacked = 0;
        // Bytes the cumulative ACK covers that were SACKed before: delivered already.
        let mut sacked_before = 0;
        if tcb.sack() {
            if ack > tcb.snd_una {
                sacked_before = self.scoreboard.on_cumulative_ack(tcb.snd_una, ack);
            }
            let una = ack.max(tcb.snd_una);
            let rate = &mut tcb.rate;
            for (s, e) in ack_pkt.sack.iter(ack) {
                newly_sacked += self.scoreboard.on_sack_block(s, e.min(tcb.snd_max), una, |a, b| {
                    if let Some(r) = rate.as_mut() {
                        r.on_sacked(a, b);
                    }
                });
            }
        }
        if let Some(r) = &mut tcb.rate {
            r.on_cumulative_ack(ack);
        }

        if ack > tcb.snd_una {
            self.on_new_ack(tcb, now, ack_pkt, newly_sacked, sacked_before, prior_in_flight, out);
        } else if ack == tcb.snd_una && tcb.snd_max > tcb.snd_una && !window_changed {
            // A duplicate ACK (RFC 5681 section 2).
            tcb.stats.dupacks_received += 1;
            self.dupacks += 1;
            tcb.cc_state.delivered_bytes += newly_sacked;
            // The hook reads the time only: no full view sync per duplicate ACK.
            tcb.cc_state.now = now;
            tcb.cc.duplicate_ack(&tcb.cc_state);
            self.on_duplicate_ack(tcb, now, out);
            if tcb.controls {
                // Rate-based algorithms see every ACK, duplicates included (Linux cong_control).
                let mut sample = AckSample {
                    delivered_bytes: newly_sacked,
                    prior_in_flight_bytes: prior_in_flight,
                    is_ece: tcb.cfg.ecn && ack_pkt.ecn.has(Ecn::ECE),
                    ..Default::default()
                };
                self.fill_rate_sample(tcb, now, &mut sample);
                tcb.sync_cc_view(now);
                tcb.cong_control(&sample);
            }
        }
        if tcb.cfg.ecn && ack_pkt.ecn.has(Ecn::ECE) && ack >= tcb.snd_una {
            // RFC 3168 6.1.2: respond to ECN-Echo as to a loss, at most once per window; in
            // recovery the window is being reduced already (Linux tcp_try_to_open).
            tcb.stats.ecn_echoes += 1;
            self.enter_cwr(tcb, now);
        }
        tcb.note_milestones(now);
        self.send(tcb, now, out);
    }

    /// The retransmission timer expired (not the persist timer).
    fn on_rto_timer(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        if tcb.snd_una == tcb.snd_max {
            return;
        }
        tcb.stats.timeouts += 1;
        tcb.sync_cc_view(now);
        if tcb.ca_state != CaState::Loss {
            tcb.prior_cwnd = tcb.cc_state.cwnd;
        }
        if tcb.ca_state == CaState::Open {
            // After a first timeout only: a repeated timeout must not lower ssthresh again
            // (RFC 5681 eq. 4 applies to the first retransmission), and in fast recovery it
            // was already reduced for this congestion event.
            tcb.cc_state.ssthresh = reduced_ssthresh(tcb);
        } else if tcb.cfg.ssthresh_every_timeout && tcb.ca_state != CaState::Cwr {
            // ns-2 halves on every timeout (but not in an ECN reduction's window), from
            // cwnd_, which holds Reno's and NewReno's inflation apart (dupwnd_): in recovery
            // the window is ssthresh, after a timeout the slow-start window (1 after a
            // back-off, so ssthresh falls to 2). BSD's tcp_timers (TCPT_REXMT) halves
            // min(snd_wnd, snd_cwnd) as it stands, inflation included (`bsd_window`).
            if tcb.ca_state == CaState::Recovery && !tcb.controls && !tcb.cfg.bsd_window {
                tcb.cc_state.cwnd = tcb.cc_state.cwnd.min(tcb.cc_state.ssthresh);
            }
            tcb.cc_state.ssthresh = reduced_ssthresh(tcb);
        }
        // Loss window of one segment, then slow start (RFC 5681 3.1).
        tcb.cc_state.cwnd = 1;
        tcb.cc_state.cwnd_cnt = 0;
        self.recover = Some(tcb.snd_max);
        self.dupacks = 0;
        if tcb.sack() {
            // Resend every hole; SACKed data stays delivered (as Linux's tcp_enter_loss).
            self.scoreboard.mark_all_lost(tcb.snd_una, tcb.snd_max);
            // Losses marked by a timeout are counted at the timeout, not by the next ACK.
            self.lost_reported_below = tcb.snd_max;
        } else {
            // A cumulative-ACK sender can only go back to the first unacknowledged byte.
            tcb.snd_nxt = tcb.snd_una;
        }
        tcb.timed_segment = None;
        self.head_rtx_pending = false;
        tcb.ecn_cwr_pending = tcb.cfg.ecn;
        tcb.rtt.back_off();
        tcb.set_ca_state(now, CaState::Loss);
        let sent_before = out.len();
        self.send(tcb, now, out);
        if tcb.rwnd == 0 && out.len() == sent_before && tcb.snd_nxt == tcb.snd_una {
            // The head goes out even with the window closed (Linux tcp_retransmit_skb), so a
            // lost window update cannot leave the flow waiting for ever.
            let len = (tcb.snd_max - tcb.snd_una).min(tcb.cfg.mss_bytes as u64);
            self.retransmit_first_unacked(tcb, now, out);
            tcb.snd_nxt += len;
        }
        tcb.rto_deadline = Some(tcb.rtt.deadline(now));
    }

    /// Window reduction without a loss: ssthresh from the algorithm (so HighSpeed and
    /// Scalable back off by their own b), cwnd down to it at once, as this stack does on a
    /// fast retransmit (RFC 5681, RFC 6675), state CWR until everything sent so far is
    /// acknowledged. Linux lowers cwnd gradually to the same end point within the round
    /// trip: 2.4/2.6 by one segment every second ACK (`tcp_cwnd_down`, rate halving, then
    /// `tcp_complete_cwr` sets cwnd = min(cwnd, ssthresh)), 3.2 and later by Proportional
    /// Rate Reduction (RFC 6937). The immediate cut sends nothing until the flight falls
    /// below the new window instead of one segment per two ACKs meanwhile: the same data
    /// per round trip, sent later in it.
    fn enter_cwr(&mut self, tcb: &mut Tcb, now: Time) {
        if tcb.ca_state != CaState::Open {
            return;
        }
        tcb.stats.cwr_entries += 1;
        tcb.sync_cc_view(now);
        tcb.prior_cwnd = tcb.cc_state.cwnd;
        tcb.cc_state.ssthresh = tcb.cc.ssthresh(&tcb.cc_state);
        if !tcb.controls {
            tcb.cc_state.cwnd = tcb.cc_state.cwnd.min(tcb.cc_state.ssthresh).max(1);
        }
        tcb.cc_state.cwnd_cnt = 0;
        self.cwr_high_seq = tcb.snd_max;
        tcb.ecn_cwr_pending = tcb.cfg.ecn;
        tcb.set_ca_state(now, CaState::Cwr);
    }

    /// The send pass: a refused head retransmission first, then RFC 6675's loop in SACK
    /// recovery, else the window.
    fn send_segments(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        if self.head_rtx_pending {
            self.retransmit_first_unacked(tcb, now, out);
        }
        if tcb.sack() && matches!(tcb.ca_state, CaState::Recovery | CaState::Loss) {
            self.send_sack_recovery(tcb, now, out);
        } else {
            self.send_window(tcb, now, out);
        }
        if tcb.snd_max > tcb.snd_una && tcb.rto_deadline.is_none() {
            // RFC 6298 5.1: start the timer when data goes out and it is not running.
            tcb.rto_deadline = Some(tcb.rtt.deadline(now));
        }
    }

    /// The RFC stack judges losses by the duplicate-ACK threshold alone.
    fn reordering_segments(&self, tcb: &Tcb) -> u32 {
        tcb.cfg.dupack_threshold
    }
}

/// ssthresh after a congestion signal: the algorithm's, from cwnd, or with `bsd_window` from
/// min(snd_wnd, snd_cwnd) in whole segments, as BSD computes `win = min(tp->snd_wnd,
/// tp->snd_cwnd) / 2 / tp->t_maxseg` (at least 2) on the third duplicate ACK (CSRG
/// tcp_input.c 7.25, 1990-06-30, lines 853-861; the same through 8.12, 4.4BSD-Lite2) and on
/// every expiry of the retransmission timer (tcp_timer.c 7.18, 1990-06-28, lines 237-242; the
/// same in 8.1, 1993, and 8.2, 1995). Reno's b = 0.5 of that window is BSD's halving; the
/// bytes of cwnd past its last whole segment do not change the half's whole segments.
fn reduced_ssthresh(tcb: &mut Tcb) -> u32 {
    if !tcb.cfg.bsd_window {
        return tcb.cc.ssthresh(&tcb.cc_state);
    }
    let cwnd = tcb.cc_state.cwnd;
    let peer = (tcb.rwnd / tcb.cfg.mss_bytes.max(1) as u64).min(u32::MAX as u64) as u32;
    tcb.cc_state.cwnd = cwnd.min(peer);
    let ssthresh = tcb.cc.ssthresh(&tcb.cc_state);
    tcb.cc_state.cwnd = cwnd;
    ssthresh
}

impl RfcStack {
    /// Bytes in the network (Linux `tcp_packets_in_flight`): with SACK the RFC 6675 pipe,
    /// otherwise every byte outstanding.
    pub(crate) fn in_flight_bytes(&self, tcb: &Tcb) -> u64 {
        if tcb.sack() {
            let lost = self.scoreboard.loss_boundary(
                tcb.snd_una,
                tcb.cfg.mss_bytes as u64,
                self.dupthresh(tcb) as u64,
                tcb.cfg.fack,
            );
            self.scoreboard.pipe(tcb.snd_una, tcb.snd_max, lost)
        } else {
            tcb.snd_max - tcb.snd_una
        }
    }

    /// The ACK's delivery-rate sample, with what is in flight and what was found lost, for
    /// an algorithm that sets the window from it.
    pub(crate) fn fill_rate_sample(&mut self, tcb: &mut Tcb, now: Time, sample: &mut AckSample) {
        if tcb.rate.is_some() {
            sample.in_flight_bytes = self.in_flight_bytes(tcb);
            sample.newly_lost_bytes = self.take_newly_lost_bytes(tcb);
            tcb.rate_sample(now, sample);
        }
    }

    pub(crate) fn on_duplicate_ack(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        match tcb.ca_state {
            CaState::Recovery => {
                if matches!(tcb.cfg.recovery, Recovery::Reno | Recovery::Newreno) {
                    self.reno_inflate(tcb);
                } else if tcb.cfg.recovery == Recovery::Sack && tcb.cfg.sack_variant == SackVariant::Sack1 {
                    self.sack1_on_ack(false);
                }
            }
            CaState::Open | CaState::Cwr | CaState::Loss => {
                let open = tcb.ca_state != CaState::Loss;
                // Classic Reno has no guard: three more duplicate ACKs start another recovery
                // (unless `reno_recover_guard`, as ns-2's Reno). The others start one only once
                // the cumulative ACK covers more than `recover` (RFC 6582 3.2 step 2; ns-2's
                // bug_fix_ `highest_ack_ > recover_`). `recover` is one past the highest byte
                // sent, so "more than" is `>`: an ACK that only reaches it comes from the
                // resends and tells of no new loss.
                let guarded = !(tcb.cfg.recovery == Recovery::Reno && open && !tcb.cfg.reno_recover_guard);
                let past_recover = !guarded || self.recover.is_none_or(|r| tcb.snd_una > r);
                let sack_says_lost = tcb.sack() && open && self.sack_says_lost(tcb);
                if past_recover
                    && (self.dupacks >= self.dupthresh(tcb) || sack_says_lost)
                    && (open || tcb.cfg.recovery != Recovery::Sack)
                {
                    self.enter_recovery(tcb, now, out);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_new_ack(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        ack_pkt: &Packet,
        newly_sacked: u64,
        sacked_before: u64,
        prior_in_flight: u64,
        out: &mut Vec<Packet>,
    ) {
        let ack = ack_pkt.ack;
        let acked_bytes = ack - tcb.snd_una;
        // When the segment this ACK times left: the echoed timestamp, or the timed segment.
        let timed_sent = if tcb.cfg.timestamps {
            Some(ack_pkt.ts_ecr.min(now))
        } else {
            match tcb.timed_segment {
                Some((end, sent)) if ack >= end => {
                    tcb.timed_segment = None;
                    Some(sent)
                }
                _ => None,
            }
        };
        if let Some(sent) = timed_sent {
            tcb.rtt.sample_sent(sent, now);
        }
        // The algorithm's sample: the timed segment's, or, for one that times every segment
        // (ns-2's Vegas), the newest segment this ACK covers; the retransmission timer keeps
        // to the timed segment.
        let rtt_sample = match &mut tcb.ack_timing {
            Some(timing) => timing.on_ack(now, ack),
            None => timed_sent.map(|sent| now - sent),
        };
        // Each byte is delivered once: SACKed bytes counted when SACKed, not again when the
        // cumulative ACK passes them (Linux counts SACKed segments out of `delivered` in
        // tcp_clean_rtx_queue). The window grows by these (Linux tcp_cong_avoid's acked_sacked).
        let delivered_bytes = acked_bytes - sacked_before + newly_sacked;
        let sample = AckSample {
            acked_segments: tcb.segments(acked_bytes),
            delivered_segments: tcb.segments(delivered_bytes),
            acked_bytes,
            rtt: rtt_sample,
            delivered_bytes,
            prior_in_flight_bytes: prior_in_flight,
            is_ack_delayed: tcb.ack_maybe_delayed(
                ack,
                acked_bytes,
                sacked_before + newly_sacked,
                ack_pkt.ecn.has(Ecn::ECE),
            ),
            is_ece: tcb.cfg.ecn && ack_pkt.ecn.has(Ecn::ECE),
            timestamps: tcb.cfg.timestamps.then_some((ack_pkt.ts_val, ack_pkt.ts_ecr)),
            ..Default::default()
        };
        tcb.snd_una = ack;
        if tcb.snd_nxt < ack {
            // After go-back-N the receiver may already hold data we were about to resend.
            tcb.snd_nxt = ack;
        }
        tcb.cc_state.delivered_bytes += sample.delivered_bytes;
        let mut sample = sample;
        self.fill_rate_sample(tcb, now, &mut sample);
        tcb.sync_cc_view(now);
        tcb.cc.pkts_acked(&mut tcb.cc_state, &sample);
        let controls = tcb.controls;

        let mut restart_timer = true;
        match tcb.ca_state {
            CaState::Recovery => {
                let full = self.recover.is_some_and(|r| ack >= r);
                match tcb.cfg.recovery {
                    Recovery::Reno => {
                        self.reno_on_new_ack(tcb, now);
                        if tcb.cfg.bsd_window && !controls {
                            // BSD opens the window on the ACK that ends recovery too (tcp_input.c
                            // 7.25 lines 885-934: the retraction, then "open the congestion window").
                            tcb.cc.cong_avoid(&mut tcb.cc_state, &sample);
                        }
                    }
                    Recovery::Newreno | Recovery::Tahoe => {
                        restart_timer =
                            self.newreno_on_new_ack(tcb, now, full, sample.acked_segments, acked_bytes, out);
                    }
                    Recovery::Sack => self.sack_on_new_ack(tcb, now, full),
                }
            }
            CaState::Loss => {
                self.dupacks = 0;
                if self.recover.is_some_and(|r| ack >= r) {
                    tcb.set_ca_state(now, CaState::Open);
                }
                if !controls {
                    tcb.cc.cong_avoid(&mut tcb.cc_state, &sample);
                }
            }
            CaState::Cwr => {
                // No growth while reduced. CWR ends once data sent after the reduction is
                // acknowledged (Linux: snd_una past high_seq, so that a CWR flag has reached
                // the receiver); cwnd stays at ssthresh, where entering CWR put it.
                self.dupacks = 0;
                if ack > self.cwr_high_seq {
                    tcb.set_ca_state(now, CaState::Open);
                    if !controls {
                        tcb.cc.cong_avoid(&mut tcb.cc_state, &sample);
                    }
                }
            }
            CaState::Open => {
                self.dupacks = 0;
                if !controls {
                    tcb.cc.cong_avoid(&mut tcb.cc_state, &sample);
                    if std::mem::take(&mut tcb.cc_state.request_cwr) {
                        // The algorithm's own signal (CDG's delay backoff): a reduction as ECN's.
                        self.enter_cwr(tcb, now);
                    }
                }
            }
        }
        if controls {
            tcb.cong_control(&sample);
        }
        if tcb.snd_una == tcb.snd_max {
            tcb.rto_deadline = None; // RFC 6298 5.2
        } else if restart_timer {
            tcb.rto_deadline = Some(tcb.rtt.deadline(now)); // RFC 6298 5.3
        }
    }

    /// Bytes marked lost since the last report (Linux `tp->lost` minus its value before the
    /// ACK). With SACK a hole is lost once it falls below the loss boundary; each hole is
    /// reported once, when the boundary first passes it.
    pub(crate) fn take_newly_lost_bytes(&mut self, tcb: &mut Tcb) -> u64 {
        let mut lost = std::mem::take(&mut self.head_lost_bytes);
        if tcb.sack() {
            let boundary = self.scoreboard.loss_boundary(
                tcb.snd_una,
                tcb.cfg.mss_bytes as u64,
                self.dupthresh(tcb) as u64,
                tcb.cfg.fack,
            );
            let below = boundary.below.min(tcb.snd_max);
            let from = self.lost_reported_below.max(tcb.snd_una);
            if below > from {
                lost += self.scoreboard.unsacked_bytes(from, below);
                self.lost_reported_below = below;
            }
        }
        lost
    }

    pub(crate) fn exit_recovery(&mut self, tcb: &mut Tcb, now: Time) {
        self.head_rtx_pending = false;
        tcb.cc_state.cwnd_cnt = 0;
        self.dupacks = 0;
        tcb.set_ca_state(now, CaState::Open);
    }

    /// Duplicate ACKs (or SACK information) signal a loss.
    pub(crate) fn enter_recovery(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        tcb.stats.fast_retransmits += 1;
        tcb.sync_cc_view(now);
        let dupthresh = self.dupthresh(tcb);
        if tcb.ca_state != CaState::Cwr {
            tcb.prior_cwnd = tcb.cc_state.cwnd;
            tcb.cc_state.ssthresh = reduced_ssthresh(tcb);
            tcb.ecn_cwr_pending = tcb.cfg.ecn;
        }
        // From CWR the window was reduced for this window of data already: ssthresh stays
        // (Linux tcp_enter_recovery only recomputes it below CWR).
        self.recover = Some(tcb.snd_max);
        tcb.cc_state.cwnd_cnt = 0;
        let state = match tcb.cfg.recovery {
            Recovery::Tahoe => {
                self.tahoe_enter_recovery(tcb);
                CaState::Loss
            }
            Recovery::Reno | Recovery::Newreno => {
                self.reno_enter_recovery(tcb, now, dupthresh, out);
                CaState::Recovery
            }
            Recovery::Sack => {
                self.sack_enter_recovery(tcb, now, dupthresh, out);
                CaState::Recovery
            }
        };
        tcb.set_ca_state(now, state);
    }

    /// The duplicate-ACK threshold in force: with DCR, max(dupthresh, cwnd / dcr_div).
    pub(crate) fn dupthresh(&self, tcb: &Tcb) -> u32 {
        match tcb.cfg.dcr_div {
            Some(div) => tcb.cfg.dupack_threshold.max(tcb.cc_state.cwnd / div),
            None => tcb.cfg.dupack_threshold,
        }
    }
}
