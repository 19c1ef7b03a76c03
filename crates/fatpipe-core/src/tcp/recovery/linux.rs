//! The Linux stack's ACK processing and recovery state machine (net/ipv4/tcp_input.c:
//! `tcp_ack`, `tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`, `tcp_fastretrans_alert`).
//!
//! How the work divides, as in Linux:
//! - the scoreboard (`rtx_queue.rs`) records what each ACK says: cumulatively acknowledged,
//!   SACKed, DSACKed; from it come RTT samples (the send time of the oldest segment newly
//!   acknowledged and never retransmitted), delivery counts and reordering evidence;
//! - loss detection marks segments lost: RACK by time (`rack.rs`), or without RACK the
//!   duplicate-ACK threshold over SACKed segments (FACK: over forward-acknowledged ones), or
//!   without SACK NewReno's head-of-queue rule on counted duplicate ACKs;
//! - the state machine (Open, Disorder, CWR, Recovery, Loss) enters recovery when a loss is
//!   marked, leaves it when everything sent before it is acknowledged, and undoes it when
//!   it proves spurious (`undo.rs`);
//! - the window: in Recovery and CWR it comes down by PRR or rate halving (`prr.rs`);
//!   otherwise the congestion control grows it by what was delivered (`cong_avoid`), or sets
//!   it (`cong_control`).
//!
//! The send loop and the timers of this stack are in `linux_send.rs`.

use super::prr::Prr;
use super::rack::Rack;
use super::rtx_queue::{RtxQueue, Segment, SACKED};
use super::undo::UndoState;
use crate::cc::{AckSample, CaState, CwndEvent};
use crate::packet::{Ecn, Packet};
use crate::tcp::config::Recovery;
use crate::tcp::TcpSender;
use crate::time::Time;

/// What the xmit timer (the retransmission timer's slot) is armed for (Linux
/// `icsk_pending`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XmitTimer {
    #[default]
    Retransmission,
    /// RACK's reordering timer.
    Reordering,
    /// The tail loss probe.
    LossProbe,
}

/// The Linux stack's state beside the fields the stacks share.
#[derive(Debug, Default)]
pub struct LinuxState {
    pub q: RtxQueue,
    pub rack: Rack,
    pub prr: Prr,
    pub undo: UndoState,
    /// Segments of reordering the path has shown (Linux `tp->reordering`).
    pub reordering: u32,
    /// Reordering events seen (Linux `reord_seen`).
    pub reord_seen: u32,
    /// In Linux's Disorder state (SACKed or lost segments, no recovery); the congestion
    /// control sees Open.
    pub disorder: bool,
    /// SND.NXT when the current reduction or loss episode began (Linux `high_seq`).
    pub high_seq: u64,
    /// Segments delivered and segments marked lost since the start (`tp->delivered`,
    /// `tp->lost`).
    pub delivered: u64,
    pub lost: u64,
    /// SND.NXT when the tail loss probe went out; the probe was a retransmission.
    pub tlp_high_seq: Option<u64>,
    pub tlp_retrans: bool,
    /// F-RTO is judging the last timeout (Linux `tp->frto`).
    pub frto: bool,
    /// Timeouts in a row without progress (Linux `icsk_retransmits`).
    pub retransmits: u32,
    pub pending: XmitTimer,
    /// Linux `tcp_is_cwnd_limited`: the most in flight this round trip, and whether cwnd
    /// limited sending in it (`max_packets_out`, `is_cwnd_limited`, `cwnd_usage_seq`).
    pub max_packets_out: u32,
    pub is_cwnd_limited: bool,
    pub cwnd_usage_seq: u64,
    /// Where the duplicate-ACK-threshold marking stopped (Linux `lost_skb_hint`,
    /// `lost_cnt_hint`).
    pub(crate) mark_hint: Option<(u64, u32)>,
}

impl LinuxState {
    pub fn new(dupack_threshold: u32) -> Self {
        LinuxState { reordering: dupack_threshold.max(1), ..Default::default() }
    }
}

/// What one ACK carried (Linux's `FLAG_*`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckFlags {
    pub(crate) una_advanced: bool,
    pub(crate) win_update: bool,
    pub(crate) data_sacked: bool,
    pub(crate) dsack: bool,
    /// The DSACK reports the tail loss probe's retransmission as a duplicate.
    pub(crate) dsack_tlp: bool,
    pub(crate) ece: bool,
    /// A segment never retransmitted was newly SACKed or acknowledged (F-RTO's evidence).
    pub(crate) orig_sack_acked: bool,
    /// RACK found a retransmission lost again.
    pub(crate) lost_retrans: bool,
    /// Rearm the TLP or RTO timer after this ACK.
    pub(crate) set_xmit_timer: bool,
}

impl AckFlags {
    /// Linux `tcp_ack_is_dubious`: the state machine must look at this ACK.
    fn dubious(&self, open: bool) -> bool {
        let not_dup = self.una_advanced || self.win_update;
        !not_dup || self.data_sacked || self.ece || self.dsack || !open
    }
}

/// Per-ACK accumulation of the scoreboard walk.
#[derive(Default)]
struct Tally {
    /// Send times of the oldest and newest segments newly acknowledged (or SACKed) and never
    /// retransmitted: the RTT samples.
    first_ackt: Option<Time>,
    last_ackt: Option<Time>,
    first_sackt: Option<Time>,
    last_sackt: Option<Time>,
    /// Lowest start of a segment delivered out of order and never retransmitted.
    reord: Option<u64>,
    delivered_bytes: u64,
    acked_bytes: u64,
    /// The ACK may have been delayed by the receiver (Linux `FLAG_ACK_MAYBE_DELAYED`).
    maybe_delayed: bool,
}

impl TcpSender {
    pub(crate) fn lx_sack(&self) -> bool {
        self.recovery == Recovery::Sack
    }

    pub(crate) fn lx_in_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// Handles one arriving ACK (Linux `tcp_ack`).
    pub(crate) fn on_ack_linux(&mut self, now: Time, pkt: &Packet, out: &mut Vec<Packet>) {
        self.stats.acks_received += 1;
        self.ts_recent = self.ts_recent.max(pkt.ts_val);
        let ack = pkt.ack;
        if ack > self.snd_max {
            return; // acknowledges data never sent (RFC 793): ignore
        }
        let mut f = AckFlags { ece: self.ecn && pkt.ecn.has(Ecn::ECE), ..Default::default() };
        self.stats.ecn_echoes += u64::from(f.ece);
        if ack >= self.snd_una {
            f.win_update = pkt.window_bytes as u64 != self.rwnd;
            self.rwnd = pkt.window_bytes as u64;
        }
        if self.persisting && self.rwnd > 0 {
            self.persisting = false;
            self.persist_backoff = 0;
            self.rto_deadline = None;
        }
        let prior_snd_una = self.snd_una;
        f.una_advanced = ack > prior_snd_una;
        let prior_in_flight = self.lx.q.in_flight();
        let prior_delivered = self.lx.delivered;
        let prior_lost = self.lx.lost;
        let prior_fack = self.lx.q.highest_sack_end.max(prior_snd_una);
        let mut t = Tally::default();
        if self.lx_sack() {
            self.lx_sacktag(now, pkt, &mut f, &mut t);
        }
        if let Some(r) = &mut self.rate {
            r.on_cumulative_ack(ack);
        }
        if f.una_advanced {
            t.maybe_delayed = self.ack_maybe_delayed(ack, ack - prior_snd_una, t.delivered_bytes, f.ece);
            self.lx_clean_rtx_queue(now, ack, prior_fack, &mut f, &mut t);
        }
        let rtt = self.lx_update_rtt(now, pkt, &f, &t);
        // Linux calls pkts_acked at the end of tcp_clean_rtx_queue, before the state machine
        // (tcp_fastretrans_alert): the ACK that ends a recovery still finds the algorithm in
        // Recovery (H-TCP then leaves it out of its throughput, as tcp_htcp.c does).
        let mut sample =
            self.lx_pkts_acked(now, &t, rtt, (self.lx.delivered - prior_delivered) as u32, prior_in_flight);
        self.lx.rack.update_reo_wnd(now, self.rtt.srtt);
        if self.lx.tlp_high_seq.is_some() {
            self.lx_process_tlp_ack(now, ack, &f);
        }
        let num_dupack = u32::from(!(f.una_advanced || f.win_update || f.dsack) && self.snd_max > self.snd_una);
        if num_dupack > 0 {
            self.stats.dupacks_received += 1;
            // The hook reads the time only: no full view sync per duplicate ACK.
            self.cc_state.now = now;
            self.cc.duplicate_ack(&self.cc_state);
        }
        let open = self.ca_state == CaState::Open && !self.lx.disorder;
        if f.dubious(open) {
            self.lx_fastretrans_alert(now, prior_snd_una, num_dupack, &mut f, pkt, out);
        }
        if f.set_xmit_timer {
            self.lx_set_xmit_timer(now);
        }
        // What the ACK delivered as tcp_cong_control counts it (tcp_newly_delivered, after
        // the state machine: without SACK, duplicate ACKs count as deliveries there).
        sample.delivered_segments = (self.lx.delivered - prior_delivered) as u32;
        let newly_lost = (self.lx.lost - prior_lost) as u32;
        self.lx_cong_control(now, &f, &mut sample, newly_lost, out);
        self.note_milestones(now);
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
            self.lx.pending = XmitTimer::Retransmission;
        }
        self.send(now, out);
    }

    /// The SACK blocks of an ACK (Linux `tcp_sacktag_write_queue`): DSACK first, then each
    /// block marks its segments.
    fn lx_sacktag(&mut self, now: Time, pkt: &Packet, f: &mut AckFlags, t: &mut Tally) {
        let ack = pkt.ack;
        let mut blocks = pkt.sack.iter(ack);
        let first = blocks.next();
        let second = pkt.sack.iter(ack).nth(1);
        // RFC 2883: the first block reports a duplicate when it lies below the cumulative
        // ACK, or inside the second block.
        let dsack = first.filter(|&(s, e)| s < ack || second.is_some_and(|(s2, e2)| s >= s2 && e <= e2));
        if let Some((s, e)) = dsack {
            f.dsack = true;
            self.stats.dsacks_received += 1;
            let segments = (e - s).div_ceil(self.mss as u64) as u32;
            self.lx.undo.on_dsack(segments);
            self.lx.rack.dsack_seen = true;
            if self.lx.tlp_retrans && self.lx.tlp_high_seq.is_some_and(|h| e <= h && e + self.mss as u64 >= h) {
                f.dsack_tlp = true;
            }
        }
        let una = ack.max(self.snd_una);
        let prior_highest = self.lx.q.highest_sack_end;
        let min_rtt = self.rtt.min_rtt;
        for (i, (s, e)) in pkt.sack.iter(ack).enumerate() {
            if i == 0 && dsack.is_some() {
                continue;
            }
            let (s, e) = (s.max(una), e.min(self.snd_max));
            if e <= s {
                continue;
            }
            let lx = &mut self.lx;
            let rate = &mut self.rate;
            let newly = lx.q.sack(s, e, |_, seg: &Segment| {
                lx.rack.on_delivered(now, seg, min_rtt);
                if let Some(r) = rate.as_mut() {
                    r.on_sacked(seg.start, seg.end);
                }
                t.delivered_bytes += seg.end - seg.start;
                if !seg.retransmitted() {
                    t.first_sackt.get_or_insert(seg.xmit_ps);
                    t.last_sackt = Some(seg.xmit_ps);
                    f.orig_sack_acked = true;
                    if seg.start < prior_highest {
                        t.reord = Some(t.reord.map_or(seg.start, |r| r.min(seg.start)));
                    }
                }
            });
            if newly > 0 {
                f.data_sacked = true;
                self.lx.delivered += newly as u64;
            }
        }
        if let Some(reord) = t.reord.take() {
            if reord < self.snd_max {
                self.lx_note_reordering(reord);
            }
        }
    }

    /// The cumulative ACK (Linux `tcp_clean_rtx_queue`).
    fn lx_clean_rtx_queue(&mut self, now: Time, ack: u64, prior_fack: u64, f: &mut AckFlags, t: &mut Tally) {
        let sack = self.lx_sack();
        let min_rtt = self.rtt.min_rtt;
        let mut acked_segments = 0u32;
        let mut delivered = 0u64;
        let mut retrans_acked = false;
        {
            let lx = &mut self.lx;
            let high_seq = lx.high_seq;
            lx.q.ack_to(ack, |seg| {
                acked_segments += 1;
                t.acked_bytes += seg.end - seg.start;
                if seg.retransmitted() {
                    retrans_acked = true;
                } else if !seg.has(SACKED) {
                    t.first_ackt.get_or_insert(seg.xmit_ps);
                    t.last_ackt = Some(seg.xmit_ps);
                    t.reord = Some(t.reord.map_or(seg.start, |r| r.min(seg.start)));
                    if seg.end <= high_seq {
                        f.orig_sack_acked = true;
                    }
                }
                if !seg.has(SACKED) {
                    t.delivered_bytes += seg.end - seg.start;
                    if sack {
                        delivered += 1;
                        lx.rack.on_delivered(now, seg, min_rtt);
                    }
                }
            });
        }
        if retrans_acked {
            // Karn (RFC 6298 3): an ACK that covers a retransmission says nothing of when the
            // original segments beside it were received, so none of them is timed (Linux
            // `tcp_clean_rtx_queue`: no seq_rtt when FLAG_RETRANS_DATA_ACKED). Without this a
            // NewReno partial ACK timed segments sent before the loss, one recovery round
            // later each time, and srtt grew by the time elapsed.
            t.first_ackt = None;
            t.last_ackt = None;
        }
        f.set_xmit_timer = true;
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        self.lx.retransmits = 0;
        if sack {
            self.lx.delivered += delivered;
            if let Some(reord) = t.reord.take() {
                if reord < prior_fack {
                    self.lx_note_reordering(reord);
                }
            }
        } else {
            self.lx_remove_reno_sacks(acked_segments);
            if retrans_acked {
                f.orig_sack_acked = false;
            }
        }
    }

    /// RTT samples of this ACK (Linux `tcp_ack_update_rtt`): from the oldest segment newly
    /// acknowledged and never retransmitted for the estimator, the newest for the congestion
    /// control and the minimum; the SACKed ones if nothing was acknowledged; with timestamps,
    /// from the echo when only retransmissions were acknowledged. Returns the newest.
    fn lx_update_rtt(&mut self, now: Time, pkt: &Packet, f: &AckFlags, t: &Tally) -> Option<Time> {
        let mut seq_rtt = t.first_ackt.or(t.first_sackt).map(|x| now - x);
        // The congestion control's sample is the newest segment SACKed if any was, else the
        // newest cumulatively acknowledged (Linux `tcp_clean_rtx_queue`: ca_rtt_us from
        // last_sackt overrides the one from last_ackt).
        let mut ca_rtt = t.last_sackt.or(t.last_ackt).map(|x| now - x);
        if seq_rtt.is_none() && self.timestamps && f.una_advanced && pkt.ts_ecr > 0 {
            seq_rtt = Some(now.saturating_sub(pkt.ts_ecr).max(1));
            ca_rtt = seq_rtt;
        }
        let seq_rtt = seq_rtt?;
        if let Some(ca) = ca_rtt {
            self.rtt.note_min_rtt(ca);
        }
        match self.rto_estimator {
            crate::tcp::config::RtoEstimator::Linux => self.rtt.sample_linux(seq_rtt, self.snd_una, self.snd_nxt),
            // BSD's timers run on the RFC stack only (the scenario's checks refuse them here).
            crate::tcp::config::RtoEstimator::Rfc6298 | crate::tcp::config::RtoEstimator::Bsd => {
                self.rtt.sample(seq_rtt)
            }
        }
        ca_rtt
    }

    /// Linux `tcp_process_tlp_ack`: the ACK tells whether the probe repaired a loss.
    pub(crate) fn lx_process_tlp_ack(&mut self, now: Time, ack: u64, f: &AckFlags) {
        let Some(high) = self.lx.tlp_high_seq else { return };
        if ack < high {
            return;
        }
        if !self.lx.tlp_retrans || f.dsack_tlp {
            // New data probed, or the original and the probe both arrived: no loss.
            self.lx.tlp_high_seq = None;
        } else if ack > high {
            // The probe repaired a loss: reduce the window once, without a recovery.
            self.lx_init_cwnd_reduction(now);
            self.set_ca_state(now, CaState::Cwr);
            self.lx_end_cwnd_reduction(now);
            self.lx_try_keep_open(now);
            self.stats.loss_probe_recoveries += 1;
        } else if !(f.una_advanced || f.win_update || f.data_sacked) {
            self.lx.tlp_high_seq = None;
        }
    }

    /// Linux `tcp_init_cwnd_reduction`.
    pub(crate) fn lx_init_cwnd_reduction(&mut self, now: Time) {
        self.sync_cc_view(now);
        self.lx.high_seq = self.snd_max;
        self.lx.tlp_high_seq = None;
        self.cc_state.cwnd_cnt = 0;
        self.prior_cwnd = self.cc_state.cwnd;
        self.lx.prr = Prr::default();
        self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
        self.ecn_cwr_pending = self.ecn;
    }

    /// Linux `tcp_end_cwnd_reduction`.
    pub(crate) fn lx_end_cwnd_reduction(&mut self, now: Time) {
        if self.controls {
            return;
        }
        let s = &mut self.cc_state;
        if s.ssthresh < crate::cc::INFINITE_SSTHRESH && (self.ca_state == CaState::Cwr || self.lx.undo.marker.is_some())
        {
            s.cwnd = Prr::cwnd_at_end(self.window_reduction, s.cwnd, s.ssthresh).max(1);
        }
        self.sync_cc_view(now);
        self.cc.cwnd_event(&mut self.cc_state, CwndEvent::CompleteCwr);
    }

    /// Linux `tcp_enter_recovery`.
    pub(crate) fn lx_enter_recovery(&mut self, now: Time, ece: bool) {
        self.stats.fast_retransmits += 1;
        self.lx.undo.prior_ssthresh = 0;
        self.lx.undo.init(self.snd_una, self.lx.q.retrans_out);
        if !self.lx_in_reduction() {
            if !ece {
                self.lx.undo.prior_ssthresh = self.lx_current_ssthresh();
            }
            self.lx_init_cwnd_reduction(now);
        }
        self.lx.disorder = false;
        self.set_ca_state(now, CaState::Recovery);
    }

    /// Linux `tcp_current_ssthresh`: outside a reduction, at least 3/4 of cwnd.
    pub(crate) fn lx_current_ssthresh(&self) -> u32 {
        let s = &self.cc_state;
        if self.lx_in_reduction() {
            s.ssthresh
        } else {
            s.ssthresh.max((s.cwnd >> 1) + (s.cwnd >> 2))
        }
    }

    /// Linux `tcp_try_keep_open`: Disorder while segments are SACKed, lost or retransmitted.
    pub(crate) fn lx_try_keep_open(&mut self, now: Time) {
        let q = &self.lx.q;
        let disorder = q.sacked_out + q.lost_out > 0 || q.retrans_out > 0;
        if self.ca_state != CaState::Open || self.lx.disorder != disorder {
            if self.ca_state != CaState::Open {
                self.set_ca_state(now, CaState::Open);
            }
            self.lx.disorder = disorder;
            self.lx.high_seq = self.snd_max;
        }
    }

    /// Linux `tcp_try_to_open`.
    pub(crate) fn lx_try_to_open(&mut self, now: Time, f: &AckFlags) {
        if self.lx.q.retrans_out == 0 {
            self.lx.undo.retrans_stamp = None;
        }
        if f.ece {
            self.lx_enter_cwr(now);
        }
        if self.ca_state != CaState::Cwr {
            self.lx_try_keep_open(now);
        }
    }

    /// Linux `tcp_enter_cwr`: reduce once for this window without a loss (ECN, local
    /// congestion).
    pub(crate) fn lx_enter_cwr(&mut self, now: Time) {
        self.lx.undo.prior_ssthresh = 0;
        if matches!(self.ca_state, CaState::Open) {
            self.stats.cwr_entries += 1;
            self.lx.undo.marker = None;
            self.lx_init_cwnd_reduction(now);
            self.lx.disorder = false;
            self.set_ca_state(now, CaState::Cwr);
        }
    }

    /// The recovery state machine (Linux `tcp_fastretrans_alert`).
    pub(crate) fn lx_fastretrans_alert(
        &mut self,
        now: Time,
        prior_snd_una: u64,
        num_dupack: u32,
        f: &mut AckFlags,
        pkt: &Packet,
        _out: &mut Vec<Packet>,
    ) {
        let ts_ecr = (self.timestamps && pkt.ts_ecr > 0).then_some(pkt.ts_ecr);
        let mut do_lost = num_dupack > 0 || (f.data_sacked && self.lx.q.sacked_out + 1 > self.lx.reordering);
        let mut fast_rexmit = false;
        if self.lx.q.packets_out == 0 && self.lx.q.sacked_out > 0 {
            self.lx.q.sacked_out = 0;
        }
        if f.ece {
            self.lx.undo.prior_ssthresh = 0; // A: ECN forbids undoing the reduction
        }
        // D: state exit conditions, once high_seq is acknowledged.
        if self.ca_state == CaState::Open && !self.lx.disorder {
            self.lx.undo.retrans_stamp = None;
        } else if self.snd_una >= self.lx.high_seq {
            match self.ca_state {
                CaState::Cwr if self.snd_una != self.lx.high_seq => {
                    // Something above high_seq is acknowledged, so a CWR flag reached the peer.
                    self.lx_end_cwnd_reduction(now);
                    self.set_ca_state(now, CaState::Open);
                }
                CaState::Recovery => {
                    if !self.lx_sack() {
                        self.lx.q.sacked_out = 0;
                    }
                    if self.lx_try_undo_recovery(now, ts_ecr) {
                        return;
                    }
                    self.lx_end_cwnd_reduction(now);
                }
                _ => {}
            }
        }
        // E: process the state.
        match self.ca_state {
            CaState::Recovery => {
                if !f.una_advanced {
                    if !self.lx_sack() {
                        self.lx_add_reno_sack(num_dupack);
                    }
                } else if self.lx_try_undo_partial(now, prior_snd_una, ts_ecr, &mut do_lost) {
                    return;
                }
                if self.lx_try_undo_dsack(now) {
                    self.lx_try_to_open(now, f);
                }
                self.lx_identify_packet_loss(now, f);
                if self.ca_state != CaState::Recovery {
                    if !self.lx_time_to_recover() {
                        return;
                    }
                    // An undo reverted the state, but a loss is evident: recover again.
                    self.lx_enter_recovery(now, f.ece);
                }
            }
            CaState::Loss => {
                self.lx_process_loss(now, f, num_dupack, ts_ecr);
                self.lx_identify_packet_loss(now, f);
                if !(self.ca_state == CaState::Open || f.lost_retrans) {
                    return;
                }
                if !self.lx_default_state(now, num_dupack, f) {
                    return;
                }
                fast_rexmit = true;
            }
            _ => {
                if !self.lx_default_state(now, num_dupack, f) {
                    return;
                }
                fast_rexmit = true;
            }
        }
        if !self.rack_enabled && do_lost && self.lx_sack() {
            self.lx_update_scoreboard(fast_rexmit);
        }
    }

    /// The Open, Disorder and CWR states of `tcp_fastretrans_alert` (and Loss falling through
    /// when retransmissions are lost or the state reopened).
    /// Returns whether recovery began (Linux goes on to mark losses then; otherwise it is done
    /// with the ACK).
    pub(crate) fn lx_default_state(&mut self, now: Time, num_dupack: u32, f: &mut AckFlags) -> bool {
        if !self.lx_sack() {
            if f.una_advanced {
                self.lx.q.sacked_out = 0;
            }
            self.lx_add_reno_sack(num_dupack);
        }
        if self.ca_state != CaState::Loss && !self.lx_in_reduction() {
            self.lx_try_undo_dsack(now);
        }
        self.lx_identify_packet_loss(now, f);
        if !self.lx_time_to_recover() {
            self.lx_try_to_open(now, f);
            return false;
        }
        self.lx_enter_recovery(now, f.ece);
        true
    }

    /// What the ACK told the algorithm, given to its `pkts_acked` (Linux
    /// `tcp_clean_rtx_queue`'s end) when it acknowledged or delivered anything; `lx_cong_control`
    /// uses the same sample.
    fn lx_pkts_acked(
        &mut self,
        now: Time,
        t: &Tally,
        rtt: Option<Time>,
        delivered: u32,
        prior_in_flight: u32,
    ) -> AckSample {
        let mss = self.mss as u64;
        let sample = AckSample {
            acked_segments: (t.acked_bytes.div_ceil(mss)) as u32,
            delivered_segments: delivered,
            acked_bytes: t.acked_bytes,
            rtt,
            delivered_bytes: t.delivered_bytes,
            prior_in_flight_bytes: prior_in_flight as u64 * mss,
            is_ack_delayed: t.maybe_delayed,
            ..Default::default()
        };
        self.cc_state.delivered_bytes += t.delivered_bytes;
        if t.acked_bytes > 0 || t.delivered_bytes > 0 {
            self.sync_cc_view(now);
            self.cc_state.in_flight_segments = self.lx.q.in_flight();
            self.cc.pkts_acked(&mut self.cc_state, &sample);
        }
        sample
    }

    /// The window after an ACK (Linux `tcp_cong_control`).
    fn lx_cong_control(
        &mut self,
        now: Time,
        f: &AckFlags,
        sample: &mut AckSample,
        newly_lost: u32,
        _out: &mut Vec<Packet>,
    ) {
        let mss = self.mss as u64;
        let delivered = sample.delivered_segments;
        if self.controls {
            self.fill_rate_sample(now, sample);
            sample.newly_lost_bytes = newly_lost as u64 * mss;
        }
        self.sync_cc_view(now);
        self.cc_state.in_flight_segments = self.lx.q.in_flight();
        if self.controls {
            self.cong_control(sample);
            return;
        }
        if self.lx_in_reduction() {
            let q = &self.lx.q;
            if let Some(cwnd) = self.lx.prr.cwnd_after_ack(
                self.window_reduction,
                self.cc_state.cwnd,
                self.cc_state.ssthresh,
                self.prior_cwnd,
                q.in_flight(),
                delivered,
                newly_lost,
                f.una_advanced,
            ) {
                self.cc_state.cwnd = cwnd.max(1);
            }
        } else if self.lx_may_raise_cwnd(f) {
            self.cc_state.cwnd_limited = self.lx_is_cwnd_limited();
            self.cc.cong_avoid(&mut self.cc_state, sample);
        }
    }

    /// Linux `tcp_may_raise_cwnd`: with high reordering grow on any forward progress,
    /// otherwise only on in-order delivery (RFC 5681).
    pub(crate) fn lx_may_raise_cwnd(&self, f: &AckFlags) -> bool {
        if self.lx.reordering > self.dupack_threshold {
            f.una_advanced || f.data_sacked
        } else {
            f.una_advanced
        }
    }

    /// Linux `tcp_is_cwnd_limited`: cwnd limited sending in this round trip, or in slow
    /// start cwnd is below twice the most sent in it.
    pub(crate) fn lx_is_cwnd_limited(&self) -> bool {
        if self.lx.is_cwnd_limited {
            return true;
        }
        self.cc_state.in_slow_start() && self.cc_state.cwnd < 2 * self.lx.max_packets_out
    }

    /// The segment `seg` is being resent: the undo and PRR books (Linux
    /// `tcp_retransmit_skb`).
    pub(crate) fn lx_note_retransmit(&mut self, now: Time) {
        self.lx.undo.on_retransmit(now);
        if self.lx_in_reduction() {
            self.lx.prr.on_send();
        }
    }
}
