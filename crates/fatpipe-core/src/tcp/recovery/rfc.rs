//! The RFC stack (`Stack::Rfc`): RFC 5681, 6582, 6675 and 6298 as written, ns-2 in spirit.
//! This file holds what its four recovery variants share -- the ACK path, duplicate-ACK
//! counting and the `recover` guard, the retransmission timeout, window reduction without a
//! loss -- and asks the flow's variant (`Recovery`) at the three points where they differ:
//! entering recovery, a duplicate ACK during it, and a new ACK during it. Each variant's
//! rules are in its own file:
//! - `tahoe.rs`: fast retransmit, then slow start from one segment (go-back-N);
//! - `reno.rs`: RFC 5681 3.2 fast recovery with window inflation, left on the first new ACK,
//!   so several losses in a window usually end in a timeout;
//! - `newreno.rs`: RFC 6582, recovery until everything outstanding at the loss is
//!   acknowledged, each partial ACK retransmitting the next hole ("Slow-but-Steady" timer
//!   restarts, as Linux, unless the "Impatient" variant is chosen, as ns-2 does);
//! - `rfc6675.rs`: SACK (RFC 2018, RFC 6675): the scoreboard (`tcp/scoreboard.rs`) says which
//!   holes are lost; cwnd = ssthresh and segments go out while pipe < cwnd, lost holes first
//!   (NextSeg), then new data; optional FACK loss detection;
//! - `sack1.rs`: ns-2's SACK (Agent/TCP/Sack1), the ns2 profile's: every hole below the
//!   highest SACK retransmitted, pipe a counter.
//!
//! Delayed Congestion Response (document 004) raises the duplicate-ACK threshold to cwnd/div
//! and sends a new segment per duplicate ACK meanwhile (`TcpSender::send_window`). A
//! retransmission timeout (RFC 6298, Karn, exponential backoff) sets cwnd to one segment;
//! without SACK the sender goes back to the first unacknowledged byte, with SACK it resends
//! the holes (every unSACKed byte counts as lost, as in Linux).

use crate::cc::{AckSample, CaState};
use crate::packet::{Ecn, Packet};
use crate::tcp::config::{Recovery, SackVariant};
use crate::tcp::TcpSender;
use crate::time::Time;

impl TcpSender {
    /// The send pass: a refused head retransmission first, then RFC 6675's loop in SACK
    /// recovery, else the window.
    pub(crate) fn send_rfc(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.head_rtx_pending {
            self.retransmit_first_unacked(now, out);
        }
        if self.sack() && matches!(self.ca_state, CaState::Recovery | CaState::Loss) {
            self.send_sack_recovery(now, out);
        } else {
            self.send_window(now, out);
        }
    }

    /// Handles one arriving ACK.
    pub(crate) fn on_ack_rfc(&mut self, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
        self.stats.acks_received += 1;
        self.ts_recent = self.ts_recent.max(ack_pkt.ts_val);
        let ack = ack_pkt.ack;
        if ack > self.snd_max {
            return; // acknowledges data never sent (RFC 793): ignore
        }
        let window_changed = ack_pkt.window_bytes as u64 != self.rwnd;
        if ack >= self.snd_una {
            // An older ACK (reordered) must not bring back an older window (RFC 9293 SND.WL2).
            self.rwnd = ack_pkt.window_bytes as u64;
        }
        if self.persisting && self.rwnd > 0 {
            // The window opened: the timer is the retransmission timer again.
            self.persisting = false;
            self.persist_backoff = 0;
            self.rto_deadline = None;
        }
        let prior_in_flight = self.in_flight_bytes();

        let mut newly_sacked = 0;
        // Bytes the cumulative ACK covers that were SACKed before: delivered already.
        let mut sacked_before = 0;
        if self.sack() {
            if ack > self.snd_una {
                sacked_before = self.scoreboard.on_cumulative_ack(self.snd_una, ack);
            }
            let una = ack.max(self.snd_una);
            let rate = &mut self.rate;
            for (s, e) in ack_pkt.sack.iter(ack) {
                newly_sacked += self.scoreboard.on_sack_block(s, e.min(self.snd_max), una, |a, b| {
                    if let Some(r) = rate.as_mut() {
                        r.on_sacked(a, b);
                    }
                });
            }
        }
        if let Some(r) = &mut self.rate {
            r.on_cumulative_ack(ack);
        }

        if ack > self.snd_una {
            self.on_new_ack(now, ack_pkt, newly_sacked, sacked_before, prior_in_flight, out);
        } else if ack == self.snd_una && self.snd_max > self.snd_una && !window_changed {
            // A duplicate ACK (RFC 5681 section 2).
            self.stats.dupacks_received += 1;
            self.dupacks += 1;
            self.cc_state.delivered_bytes += newly_sacked;
            // The hook reads the time only: no full view sync per duplicate ACK.
            self.cc_state.now = now;
            self.cc.duplicate_ack(&self.cc_state);
            self.on_duplicate_ack(now, out);
            if self.controls {
                // Rate-based algorithms see every ACK, duplicates included (Linux cong_control).
                let mut sample = AckSample {
                    delivered_bytes: newly_sacked,
                    prior_in_flight_bytes: prior_in_flight,
                    ..Default::default()
                };
                self.fill_rate_sample(now, &mut sample);
                self.sync_cc_view(now);
                self.cong_control(&sample);
            }
        }
        if self.cfg.ecn && ack_pkt.ecn.has(Ecn::ECE) && ack >= self.snd_una {
            // RFC 3168 6.1.2: respond to ECN-Echo as to a loss, at most once per window; in
            // recovery the window is being reduced already (Linux tcp_try_to_open).
            self.stats.ecn_echoes += 1;
            self.enter_cwr(now);
        }
        self.note_milestones(now);
        self.send(now, out);
    }

    pub(crate) fn on_duplicate_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        match self.ca_state {
            CaState::Recovery => {
                if matches!(self.cfg.recovery, Recovery::Reno | Recovery::Newreno) {
                    self.reno_inflate();
                } else if self.cfg.recovery == Recovery::Sack && self.cfg.sack_variant == SackVariant::Sack1 {
                    self.sack1_on_ack(false);
                }
            }
            CaState::Open | CaState::Cwr | CaState::Loss => {
                let open = self.ca_state != CaState::Loss;
                // Classic Reno has no guard: three more duplicate ACKs start another recovery
                // (unless `reno_recover_guard`, as ns-2's Reno). The others start one only once
                // the cumulative ACK covers more than `recover` (RFC 6582 3.2 step 2; ns-2's
                // bug_fix_ `highest_ack_ > recover_`). `recover` is one past the highest byte
                // sent, so "more than" is `>`: an ACK that only reaches it comes from the
                // resends and tells of no new loss.
                let guarded = !(self.cfg.recovery == Recovery::Reno && open && !self.cfg.reno_recover_guard);
                let past_recover = !guarded || self.recover.is_none_or(|r| self.snd_una > r);
                let sack_says_lost = self.sack() && open && self.sack_says_lost();
                if past_recover
                    && (self.dupacks >= self.dupthresh() || sack_says_lost)
                    && (open || self.cfg.recovery != Recovery::Sack)
                {
                    self.enter_recovery(now, out);
                }
            }
        }
    }

    pub(crate) fn on_new_ack(
        &mut self,
        now: Time,
        ack_pkt: &Packet,
        newly_sacked: u64,
        sacked_before: u64,
        prior_in_flight: u64,
        out: &mut Vec<Packet>,
    ) {
        let ack = ack_pkt.ack;
        let acked_bytes = ack - self.snd_una;
        // When the segment this ACK times left: the echoed timestamp, or the timed segment.
        let timed_sent = if self.cfg.timestamps {
            Some(ack_pkt.ts_ecr.min(now))
        } else {
            match self.timed_segment {
                Some((end, sent)) if ack >= end => {
                    self.timed_segment = None;
                    Some(sent)
                }
                _ => None,
            }
        };
        if let Some(sent) = timed_sent {
            self.rtt.sample_sent(sent, now);
        }
        // The algorithm's sample: the timed segment's, or, for one that times every segment
        // (ns-2's Vegas), the newest segment this ACK covers; the retransmission timer keeps
        // to the timed segment.
        let rtt_sample = match &mut self.ack_timing {
            Some(timing) => timing.on_ack(now, ack),
            None => timed_sent.map(|sent| now - sent),
        };
        // Each byte is delivered once: SACKed bytes counted when SACKed, not again when the
        // cumulative ACK passes them (Linux counts SACKed segments out of `delivered` in
        // tcp_clean_rtx_queue). The window grows by these (Linux tcp_cong_avoid's acked_sacked).
        let delivered_bytes = acked_bytes - sacked_before + newly_sacked;
        let sample = AckSample {
            acked_segments: self.segments(acked_bytes),
            delivered_segments: self.segments(delivered_bytes),
            acked_bytes,
            rtt: rtt_sample,
            delivered_bytes,
            prior_in_flight_bytes: prior_in_flight,
            is_ack_delayed: self.ack_maybe_delayed(
                ack,
                acked_bytes,
                sacked_before + newly_sacked,
                ack_pkt.ecn.has(Ecn::ECE),
            ),
            ..Default::default()
        };
        self.snd_una = ack;
        if self.snd_nxt < ack {
            // After go-back-N the receiver may already hold data we were about to resend.
            self.snd_nxt = ack;
        }
        self.cc_state.delivered_bytes += sample.delivered_bytes;
        let mut sample = sample;
        self.fill_rate_sample(now, &mut sample);
        self.sync_cc_view(now);
        self.cc.pkts_acked(&mut self.cc_state, &sample);
        let controls = self.controls;

        let mut restart_timer = true;
        match self.ca_state {
            CaState::Recovery => {
                let full = self.recover.is_some_and(|r| ack >= r);
                match self.cfg.recovery {
                    Recovery::Reno => self.reno_on_new_ack(now),
                    Recovery::Newreno | Recovery::Tahoe => {
                        restart_timer = self.newreno_on_new_ack(now, full, sample.acked_segments, acked_bytes, out);
                    }
                    Recovery::Sack => self.sack_on_new_ack(now, full),
                }
            }
            CaState::Loss => {
                self.dupacks = 0;
                if self.recover.is_some_and(|r| ack >= r) {
                    self.set_ca_state(now, CaState::Open);
                }
                if !controls {
                    self.cc.cong_avoid(&mut self.cc_state, &sample);
                }
            }
            CaState::Cwr => {
                // No growth while reduced. CWR ends once data sent after the reduction is
                // acknowledged (Linux: snd_una past high_seq, so that a CWR flag has reached
                // the receiver); cwnd stays at ssthresh, where entering CWR put it.
                self.dupacks = 0;
                if ack > self.cwr_high_seq {
                    self.set_ca_state(now, CaState::Open);
                    if !controls {
                        self.cc.cong_avoid(&mut self.cc_state, &sample);
                    }
                }
            }
            CaState::Open => {
                self.dupacks = 0;
                if !controls {
                    self.cc.cong_avoid(&mut self.cc_state, &sample);
                }
            }
        }
        if controls {
            self.cong_control(&sample);
        }
        if self.snd_una == self.snd_max {
            self.rto_deadline = None; // RFC 6298 5.2
        } else if restart_timer {
            self.rto_deadline = Some(self.rtt.deadline(now)); // RFC 6298 5.3
        }
    }

    /// Bytes marked lost since the last report (Linux `tp->lost` minus its value before the
    /// ACK). With SACK a hole is lost once it falls below the loss boundary; each hole is
    /// reported once, when the boundary first passes it.
    pub(crate) fn take_newly_lost_bytes(&mut self) -> u64 {
        let mut lost = std::mem::take(&mut self.head_lost_bytes);
        if self.sack() {
            let boundary = self.scoreboard.loss_boundary(
                self.snd_una,
                self.cfg.mss_bytes as u64,
                self.dupthresh() as u64,
                self.fack,
            );
            let below = boundary.below.min(self.snd_max);
            let from = self.lost_reported_below.max(self.snd_una);
            if below > from {
                lost += self.scoreboard.unsacked_bytes(from, below);
                self.lost_reported_below = below;
            }
        }
        lost
    }

    pub(crate) fn exit_recovery(&mut self, now: Time) {
        self.head_rtx_pending = false;
        self.cc_state.cwnd_cnt = 0;
        self.dupacks = 0;
        self.set_ca_state(now, CaState::Open);
    }

    /// Duplicate ACKs (or SACK information) signal a loss.
    pub(crate) fn enter_recovery(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.fast_retransmits += 1;
        self.sync_cc_view(now);
        let dupthresh = self.dupthresh();
        if self.ca_state != CaState::Cwr {
            self.prior_cwnd = self.cc_state.cwnd;
            self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
            self.ecn_cwr_pending = self.cfg.ecn;
        }
        // From CWR the window was reduced for this window of data already: ssthresh stays
        // (Linux tcp_enter_recovery only recomputes it below CWR).
        self.recover = Some(self.snd_max);
        self.cc_state.cwnd_cnt = 0;
        match self.cfg.recovery {
            Recovery::Tahoe => self.tahoe_enter_recovery(now),
            Recovery::Reno | Recovery::Newreno => self.reno_enter_recovery(now, dupthresh, out),
            Recovery::Sack => self.sack_enter_recovery(now, dupthresh, out),
        }
    }

    /// Window reduction without a loss (see `TcpSender::enter_cwr`).
    pub(crate) fn enter_cwr_rfc(&mut self, now: Time) {
        if self.ca_state != CaState::Open {
            return;
        }
        self.stats.cwr_entries += 1;
        self.sync_cc_view(now);
        self.prior_cwnd = self.cc_state.cwnd;
        self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
        if !self.controls {
            self.cc_state.cwnd = self.cc_state.cwnd.min(self.cc_state.ssthresh).max(1);
        }
        self.cc_state.cwnd_cnt = 0;
        self.cwr_high_seq = self.snd_max;
        self.ecn_cwr_pending = self.cfg.ecn;
        self.set_ca_state(now, CaState::Cwr);
    }

    /// The retransmission timer expired (not the persist timer).
    pub(crate) fn on_rto_timer_rfc(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.snd_una == self.snd_max {
            return;
        }
        self.stats.timeouts += 1;
        self.sync_cc_view(now);
        if self.ca_state != CaState::Loss {
            self.prior_cwnd = self.cc_state.cwnd;
        }
        if self.ca_state == CaState::Open {
            // After a first timeout only: a repeated timeout must not lower ssthresh again
            // (RFC 5681 eq. 4 applies to the first retransmission), and in fast recovery it
            // was already reduced for this congestion event.
            self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
        } else if self.cfg.ssthresh_every_timeout && self.ca_state != CaState::Cwr {
            // ns-2 halves on every timeout (but not in an ECN reduction's window), from
            // cwnd_, which holds Reno's and NewReno's inflation apart (dupwnd_): in recovery
            // the window is ssthresh, after a timeout the slow-start window (1 after a
            // back-off, so ssthresh falls to 2).
            if self.ca_state == CaState::Recovery && !self.controls {
                self.cc_state.cwnd = self.cc_state.cwnd.min(self.cc_state.ssthresh);
            }
            self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
        }
        // Loss window of one segment, then slow start (RFC 5681 3.1).
        self.cc_state.cwnd = 1;
        self.cc_state.cwnd_cnt = 0;
        self.recover = Some(self.snd_max);
        self.dupacks = 0;
        if self.sack() {
            // Resend every hole; SACKed data stays delivered (as Linux's tcp_enter_loss).
            self.scoreboard.mark_all_lost(self.snd_una, self.snd_max);
            // Losses marked by a timeout are counted at the timeout, not by the next ACK.
            self.lost_reported_below = self.snd_max;
        } else {
            // A cumulative-ACK sender can only go back to the first unacknowledged byte.
            self.snd_nxt = self.snd_una;
        }
        self.timed_segment = None;
        self.head_rtx_pending = false;
        self.ecn_cwr_pending = self.cfg.ecn;
        self.rtt.back_off();
        self.set_ca_state(now, CaState::Loss);
        let sent_before = out.len();
        self.send(now, out);
        if self.rwnd == 0 && out.len() == sent_before && self.snd_nxt == self.snd_una {
            // The head goes out even with the window closed (Linux tcp_retransmit_skb), so a
            // lost window update cannot leave the flow waiting for ever.
            let len = (self.snd_max - self.snd_una).min(self.cfg.mss_bytes as u64);
            self.retransmit_first_unacked(now, out);
            self.snd_nxt += len;
        }
        self.rto_deadline = Some(self.rtt.deadline(now));
    }

    pub(crate) fn retransmit_first_unacked(&mut self, now: Time, out: &mut Vec<Packet>) {
        let len = (self.snd_max - self.snd_una).min(self.cfg.mss_bytes as u64);
        // Refused by the interface: sent first on the next pass (Linux keeps it marked lost).
        self.head_rtx_pending = len > 0 && !self.emit(now, self.snd_una, len as u32, out);
        if len > 0 && !self.head_rtx_pending {
            if self.sack() {
                self.scoreboard.on_retransmit(self.snd_una, len);
            } else if self.rate.is_some() {
                // Without SACK the head is the one segment known lost (Linux marks it so).
                self.head_lost_bytes += len;
            }
        }
    }

    /// The duplicate-ACK threshold in force: with DCR, max(dupthresh, cwnd / dcr_div).
    pub(crate) fn dupthresh(&self) -> u32 {
        match self.cfg.dcr_div {
            Some(div) => self.cfg.dupack_threshold.max(self.cc_state.cwnd / div),
            None => self.cfg.dupack_threshold,
        }
    }

    pub(crate) fn sack(&self) -> bool {
        self.cfg.recovery == Recovery::Sack
    }
}
