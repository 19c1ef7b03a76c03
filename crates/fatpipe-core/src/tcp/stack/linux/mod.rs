//! The Linux stack (`Stack::Linux`; profiles `linux`, `linux-2.4`): its state and its ACK
//! path (net/ipv4/tcp_input.c: `tcp_ack`, `tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`,
//! `tcp_cong_control`).
//!
//! How the work divides, as in Linux, one piece per file:
//! - the scoreboard (`rtx_queue.rs`) records what each ACK says: cumulatively acknowledged,
//!   SACKed, DSACKed; from it come RTT samples (the send time of the oldest segment newly
//!   acknowledged and never retransmitted), delivery counts and reordering evidence (this
//!   file);
//! - loss detection (`loss_detection.rs`, `rack.rs`) marks segments lost: RACK by time, or
//!   without RACK the duplicate-ACK threshold over SACKed segments (FACK: over
//!   forward-acknowledged ones), or without SACK NewReno's head-of-queue rule on counted
//!   duplicate ACKs; it also keeps the reordering degree;
//! - the state machine (`state.rs`, `tcp_fastretrans_alert` and the functions it calls) is
//!   the one place that sets the state (Open, Disorder, CWR, Recovery, Loss): it enters
//!   recovery when a loss is marked, leaves it when everything sent before it is
//!   acknowledged, and undoes it when the evidence the undo keeps (`undo.rs`) says it was
//!   spurious;
//! - the window: in Recovery and CWR it comes down by PRR or rate halving (`prr.rs`);
//!   otherwise the congestion control grows it by what was delivered (`cong_avoid`), or sets
//!   it (`cong_control`) (this file, `adjust_cwnd`);
//! - the send loop and the timer slot (RTO, RACK's reordering timer, tail loss probe):
//!   `send.rs`.

pub mod loss_detection;
pub mod prr;
pub mod rack;
pub mod rtx_queue;
mod send;
mod state;
pub mod undo;

use super::TcpStack;
use crate::cc::{AckSample, CaState};
use crate::packet::{Ecn, Packet};
use crate::tcp::tcb::Tcb;
use crate::time::Time;
use loss_detection::LossDetection;
use prr::Prr;
use rtx_queue::{RtxQueue, Segment, SACKED};
use undo::UndoState;

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

/// The Linux stack's state beside the TCB.
#[derive(Debug, Default)]
pub struct LinuxStack {
    /// The retransmission queue: every segment outstanding, with its scoreboard flags.
    pub q: RtxQueue,
    /// Which segments are lost, and the reordering degree (`loss_detection.rs`).
    pub loss: LossDetection,
    /// How the window comes down in a reduction (`prr.rs`).
    pub prr: Prr,
    /// What an undo needs (`undo.rs`).
    pub undo: UndoState,
    /// In Linux's Disorder state (SACKed or lost segments, no recovery); the congestion
    /// control sees Open.
    pub disorder: bool,
    /// SND.NXT when the current reduction or loss episode began (Linux `high_seq`).
    pub high_seq: u64,
    /// Segments delivered since the start (`tp->delivered`).
    pub delivered: u64,
    /// SND.NXT when the tail loss probe went out; the probe was a retransmission.
    pub tlp_high_seq: Option<u64>,
    pub tlp_retrans: bool,
    /// F-RTO is judging the last timeout (Linux `tp->frto`).
    pub frto: bool,
    /// F-RTO step 2b: the next send pass sends new data rather than retransmissions.
    pub(crate) frto_send_new: bool,
    /// Timeouts in a row without progress (Linux `icsk_retransmits`).
    pub retransmits: u32,
    pub pending: XmitTimer,
    /// Linux `tcp_is_cwnd_limited`: the most in flight this round trip, and whether cwnd
    /// limited sending in it (`max_packets_out`, `is_cwnd_limited`, `cwnd_usage_seq`).
    pub max_packets_out: u32,
    pub is_cwnd_limited: bool,
    pub cwnd_usage_seq: u64,
}

impl LinuxStack {
    /// The Linux stack for the TCB's flow: the reordering degree starts at the duplicate-ACK
    /// threshold, and pacing counts payload bytes.
    pub(crate) fn new(tcb: &mut Tcb) -> LinuxStack {
        tcb.paces_payload = true;
        LinuxStack { loss: LossDetection::new(&tcb.cfg), ..Default::default() }
    }

    /// Bytes in the network (Linux `tcp_packets_in_flight`).
    pub(crate) fn in_flight_bytes(&self, tcb: &Tcb) -> u64 {
        self.q.in_flight() as u64 * tcb.cfg.mss_bytes as u64
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
    /// Of the segments delivered, those reported CE-marked (`count_ce`).
    ce_segments: u32,
    /// The ACK's TSval and TSecr, with timestamps (`AckSample::timestamps`).
    timestamps: Option<(Time, Time)>,
}

impl TcpStack for LinuxStack {
    /// Handles one arriving ACK (Linux `tcp_ack`).
    fn on_ack(&mut self, tcb: &mut Tcb, now: Time, pkt: &Packet, out: &mut Vec<Packet>) {
        tcb.ts_recent = tcb.ts_recent.max(pkt.ts_val);
        let ack = pkt.ack;
        if ack > tcb.snd_max {
            return; // acknowledges data never sent (RFC 793): ignore
        }
        // With Accurate ECN the ECE bit is part of the ACE counter: the ACK's echo is known
        // once it is known what the ACK delivered (below).
        let mut f = AckFlags { ece: tcb.cfg.ecn && !tcb.cfg.accecn && pkt.ecn.has(Ecn::ECE), ..Default::default() };
        if ack >= tcb.snd_una {
            f.win_update = pkt.window_bytes as u64 != tcb.rwnd;
            tcb.rwnd = pkt.window_bytes as u64;
        }
        if tcb.persisting && tcb.rwnd > 0 {
            tcb.persisting = false;
            tcb.persist_backoff = 0;
            tcb.rto_deadline = None;
        }
        let prior_snd_una = tcb.snd_una;
        f.una_advanced = ack > prior_snd_una;
        let prior_in_flight = self.q.in_flight();
        let prior_delivered = self.delivered;
        let prior_lost = self.loss.lost;
        let prior_fack = self.q.highest_sack_end.max(prior_snd_una);
        let mut t = Tally::default();
        if tcb.sack() {
            self.sacktag(tcb, now, pkt, &mut f, &mut t);
        }
        if let Some(r) = &mut tcb.rate {
            r.on_cumulative_ack(ack);
        }
        if f.una_advanced {
            t.maybe_delayed = tcb.ack_maybe_delayed(ack, ack - prior_snd_una, t.delivered_bytes, f.ece);
            self.clean_rtx_queue(tcb, now, ack, prior_fack, &mut f, &mut t);
        }
        self.count_ce(tcb, pkt, prior_snd_una, prior_delivered, &mut t, &mut f);
        let rtt = self.update_rtt(tcb, now, pkt, &f, &t);
        // Linux calls pkts_acked at the end of tcp_clean_rtx_queue, before the state machine
        // (tcp_fastretrans_alert): the ACK that ends a recovery still finds the algorithm in
        // Recovery (H-TCP then leaves it out of its throughput, as tcp_htcp.c does).
        t.timestamps = tcb.cfg.timestamps.then_some((pkt.ts_val, pkt.ts_ecr));
        let mut sample = self.pkts_acked(tcb, now, &t, rtt, (self.delivered - prior_delivered) as u32, prior_in_flight);
        self.loss.rack.update_reo_wnd(now, tcb.rtt.srtt);
        if self.tlp_high_seq.is_some() {
            self.process_tlp_ack(tcb, now, ack, &f);
        }
        let num_dupack = u32::from(!(f.una_advanced || f.win_update || f.dsack) && tcb.snd_max > tcb.snd_una);
        if num_dupack > 0 {
            tcb.stats.dupacks_received += 1;
            // The hook reads the time only: no full view sync per duplicate ACK.
            tcb.cc_state.now = now;
            tcb.cc.duplicate_ack(&tcb.cc_state);
        }
        let open = tcb.ca_state == CaState::Open && !self.disorder;
        if f.dubious(open) {
            self.fastretrans_alert(tcb, now, prior_snd_una, num_dupack, &mut f, pkt);
        }
        if f.set_xmit_timer {
            self.set_xmit_timer(tcb, now);
        }
        // What the ACK delivered as tcp_cong_control counts it (tcp_newly_delivered, after
        // the state machine: without SACK, duplicate ACKs count as deliveries there).
        sample.delivered_segments = (self.delivered - prior_delivered) as u32;
        let newly_lost = (self.loss.lost - prior_lost) as u32;
        self.adjust_cwnd(tcb, now, &f, &mut sample, newly_lost, out);
        tcb.note_milestones(now);
        if tcb.snd_una == tcb.snd_max {
            tcb.rto_deadline = None;
            self.pending = XmitTimer::Retransmission;
        }
        self.send(tcb, now, out);
    }

    /// The timer slot fired (Linux `tcp_write_timer_handler`).
    fn on_rto_timer(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        self.write_timer(tcb, now, out);
    }

    /// Linux `tcp_enter_cwr` (`state.rs`).
    fn enter_cwr(&mut self, tcb: &mut Tcb, now: Time) {
        LinuxStack::enter_cwr(self, tcb, now);
    }

    /// Lost segments first, then new data (Linux `tcp_xmit_retransmit_queue`, `tcp_write_xmit`).
    fn send_segments(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        self.write_xmit(tcb, now, out);
    }

    fn reordering_segments(&self, _tcb: &Tcb) -> u32 {
        self.loss.reordering
    }

    /// Open and not in Disorder (SACKed, lost or retransmitted segments outstanding).
    fn undisturbed_open(&self, tcb: &Tcb) -> bool {
        tcb.ca_state == CaState::Open && !self.disorder
    }

    fn seed_reordering(&mut self, reordering: u32, disable_fack: bool) {
        self.loss.seed_reordering(reordering, disable_fack);
    }
}

impl LinuxStack {
    pub(crate) fn in_reduction(&self, tcb: &Tcb) -> bool {
        matches!(tcb.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// The SACK blocks of an ACK (Linux `tcp_sacktag_write_queue`): DSACK first, then each
    /// block marks its segments.
    fn sacktag(&mut self, tcb: &mut Tcb, now: Time, pkt: &Packet, f: &mut AckFlags, t: &mut Tally) {
        let ack = pkt.ack;
        let mut blocks = pkt.sack.iter(ack);
        let first = blocks.next();
        let second = pkt.sack.iter(ack).nth(1);
        // RFC 2883: the first block reports a duplicate when it lies below the cumulative
        // ACK, or inside the second block.
        let dsack = first.filter(|&(s, e)| s < ack || second.is_some_and(|(s2, e2)| s >= s2 && e <= e2));
        if let Some((s, e)) = dsack {
            f.dsack = true;
            tcb.stats.dsacks_received += 1;
            let segments = (e - s).div_ceil(tcb.cfg.mss_bytes as u64) as u32;
            self.undo.on_dsack(segments);
            self.loss.rack.dsack_seen = true;
            if self.tlp_retrans && self.tlp_high_seq.is_some_and(|h| e <= h && e + tcb.cfg.mss_bytes as u64 >= h) {
                f.dsack_tlp = true;
            }
        }
        let una = ack.max(tcb.snd_una);
        let prior_highest = self.q.highest_sack_end;
        let min_rtt = tcb.rtt.min_rtt;
        for (i, (s, e)) in pkt.sack.iter(ack).enumerate() {
            if i == 0 && dsack.is_some() {
                continue;
            }
            let (s, e) = (s.max(una), e.min(tcb.snd_max));
            if e <= s {
                continue;
            }
            let rate = &mut tcb.rate;
            let newly = self.q.sack(s, e, |_, seg: &Segment| {
                self.loss.rack.on_delivered(now, seg, min_rtt);
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
                self.delivered += newly as u64;
            }
        }
        if let Some(reord) = t.reord.take() {
            if reord < tcb.snd_max {
                self.loss.note_reordering(&self.q, tcb, reord);
            }
        }
    }

    /// The CE-marked segments this ACK reports (Linux `tcp_count_delivered` with an ECE ACK,
    /// or `tcp_accecn_process`), added to the algorithm's `delivered_ce_segments`. With
    /// Accurate ECN a report of new marks is the ACK's ECN echo (Linux `FLAG_ECE`); an ACK
    /// older than snd_una carries a stale counter and reports nothing.
    fn count_ce(
        &mut self,
        tcb: &mut Tcb,
        pkt: &Packet,
        prior_snd_una: u64,
        prior_delivered: u64,
        t: &mut Tally,
        f: &mut AckFlags,
    ) {
        let delivered = (self.delivered - prior_delivered) as u32;
        let ce = if !tcb.cfg.accecn {
            if f.ece {
                delivered
            } else {
                0
            }
        } else if tcb.cfg.ecn && pkt.ack >= prior_snd_una {
            let sack_or_open = tcb.sack() || matches!(tcb.ca_state, CaState::Open | CaState::Cwr);
            let mss = tcb.cfg.mss_bytes;
            let ce =
                tcb.accecn.ce_delta(pkt.ecn.ace(), pkt.accecn_eceb(), delivered, t.delivered_bytes, mss, sack_or_open);
            f.ece = ce > 0;
            ce
        } else {
            0
        };
        tcb.stats.ecn_echoes += u64::from(f.ece);
        tcb.cc_state.delivered_segments = self.delivered;
        tcb.cc_state.delivered_ce_segments += ce as u64;
        t.ce_segments = ce;
    }

    /// The cumulative ACK (Linux `tcp_clean_rtx_queue`).
    fn clean_rtx_queue(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        ack: u64,
        prior_fack: u64,
        f: &mut AckFlags,
        t: &mut Tally,
    ) {
        let sack = tcb.sack();
        let min_rtt = tcb.rtt.min_rtt;
        let mut acked_segments = 0u32;
        let mut delivered = 0u64;
        let mut retrans_acked = false;
        {
            let high_seq = self.high_seq;
            self.q.ack_to(ack, |seg| {
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
                        self.loss.rack.on_delivered(now, seg, min_rtt);
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
        tcb.snd_una = ack;
        if tcb.snd_nxt < ack {
            tcb.snd_nxt = ack;
        }
        self.retransmits = 0;
        if sack {
            self.delivered += delivered;
            if let Some(reord) = t.reord.take() {
                if reord < prior_fack {
                    self.loss.note_reordering(&self.q, tcb, reord);
                }
            }
        } else {
            self.delivered += u64::from(LossDetection::remove_reno_sacks(&mut self.q, acked_segments));
            if retrans_acked {
                f.orig_sack_acked = false;
            }
        }
    }

    /// RTT samples of this ACK (Linux `tcp_ack_update_rtt`): from the oldest segment newly
    /// acknowledged and never retransmitted for the estimator, the newest for the congestion
    /// control and the minimum; the SACKed ones if nothing was acknowledged; with timestamps,
    /// from the echo when only retransmissions were acknowledged. Returns the newest.
    fn update_rtt(&mut self, tcb: &mut Tcb, now: Time, pkt: &Packet, f: &AckFlags, t: &Tally) -> Option<Time> {
        let mut seq_rtt = t.first_ackt.or(t.first_sackt).map(|x| now - x);
        // The congestion control's sample is the newest segment SACKed if any was, else the
        // newest cumulatively acknowledged (Linux `tcp_clean_rtx_queue`: ca_rtt_us from
        // last_sackt overrides the one from last_ackt).
        let mut ca_rtt = t.last_sackt.or(t.last_ackt).map(|x| now - x);
        if seq_rtt.is_none() && tcb.cfg.timestamps && f.una_advanced && pkt.ts_ecr > 0 {
            seq_rtt = Some(now.saturating_sub(pkt.ts_ecr).max(1));
            ca_rtt = seq_rtt;
        }
        let seq_rtt = seq_rtt?;
        if let Some(ca) = ca_rtt {
            tcb.rtt.note_min_rtt(ca);
        }
        match tcb.cfg.rto_estimator {
            crate::tcp::config::RtoEstimator::Linux => tcb.rtt.sample_linux(seq_rtt, tcb.snd_una, tcb.snd_nxt),
            // BSD's timers run on the RFC stack only (the scenario's checks refuse them here).
            crate::tcp::config::RtoEstimator::Rfc6298 | crate::tcp::config::RtoEstimator::Bsd => {
                tcb.rtt.sample(seq_rtt)
            }
        }
        ca_rtt
    }

    /// What the ACK told the algorithm, given to its `pkts_acked` (Linux
    /// `tcp_clean_rtx_queue`'s end) when it acknowledged or delivered anything; `adjust_cwnd`
    /// uses the same sample.
    fn pkts_acked(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        t: &Tally,
        rtt: Option<Time>,
        delivered: u32,
        prior_in_flight: u32,
    ) -> AckSample {
        let mss = tcb.cfg.mss_bytes as u64;
        let sample = AckSample {
            acked_segments: (t.acked_bytes.div_ceil(mss)) as u32,
            delivered_segments: delivered,
            acked_bytes: t.acked_bytes,
            rtt,
            delivered_bytes: t.delivered_bytes,
            prior_in_flight_bytes: prior_in_flight as u64 * mss,
            is_ack_delayed: t.maybe_delayed,
            ce_segments: t.ce_segments,
            timestamps: t.timestamps,
            ..Default::default()
        };
        tcb.cc_state.delivered_bytes += t.delivered_bytes;
        if t.acked_bytes > 0 || t.delivered_bytes > 0 {
            tcb.sync_cc_view(now);
            tcb.cc_state.in_flight_segments = self.q.in_flight();
            tcb.cc.pkts_acked(&mut tcb.cc_state, &sample);
        }
        sample
    }

    /// The window after an ACK (Linux `tcp_cong_control`).
    fn adjust_cwnd(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        f: &AckFlags,
        sample: &mut AckSample,
        newly_lost: u32,
        _out: &mut Vec<Packet>,
    ) {
        let mss = tcb.cfg.mss_bytes as u64;
        let delivered = sample.delivered_segments;
        if tcb.controls {
            sample.in_flight_bytes = self.in_flight_bytes(tcb);
            sample.newly_lost_bytes = newly_lost as u64 * mss;
            sample.is_ece = f.ece;
            tcb.rate_sample(now, sample);
        }
        tcb.sync_cc_view(now);
        tcb.cc_state.in_flight_segments = self.q.in_flight();
        if tcb.controls {
            tcb.cc_state.cwnd_limited = self.is_cwnd_limited(tcb);
            tcb.cong_control(sample);
            return;
        }
        if self.in_reduction(tcb) {
            let q = &self.q;
            if let Some(cwnd) = self.prr.cwnd_after_ack(
                tcb.cfg.window_reduction,
                tcb.cc_state.cwnd,
                tcb.cc_state.ssthresh,
                tcb.prior_cwnd,
                q.in_flight(),
                delivered,
                newly_lost,
                f.una_advanced,
            ) {
                tcb.cc_state.cwnd = cwnd.max(1);
            }
        } else if self.may_raise_cwnd(tcb, f) {
            tcb.cc_state.cwnd_limited = self.is_cwnd_limited(tcb);
            tcb.cc.cong_avoid(&mut tcb.cc_state, sample);
            if std::mem::take(&mut tcb.cc_state.request_cwr) {
                // The algorithm's own signal (CDG's delay backoff): Linux `tcp_enter_cwr`.
                self.enter_cwr(tcb, now);
            }
        }
    }

    /// Linux `tcp_may_raise_cwnd`: with high reordering grow on any forward progress,
    /// otherwise only on in-order delivery (RFC 5681).
    pub(crate) fn may_raise_cwnd(&self, tcb: &Tcb, f: &AckFlags) -> bool {
        if self.loss.reordering > tcb.cfg.dupack_threshold {
            f.una_advanced || f.data_sacked
        } else {
            f.una_advanced
        }
    }

    /// Linux `tcp_is_cwnd_limited`: cwnd limited sending in this round trip, or in slow
    /// start cwnd is below twice the most sent in it.
    pub(crate) fn is_cwnd_limited(&self, tcb: &Tcb) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        tcb.cc_state.in_slow_start() && tcb.cc_state.cwnd < 2 * self.max_packets_out
    }

    /// The segment `seg` is being resent: the undo and PRR books (Linux
    /// `tcp_retransmit_skb`).
    pub(crate) fn note_retransmit(&mut self, tcb: &mut Tcb, now: Time) {
        self.undo.on_retransmit(now);
        if self.in_reduction(tcb) {
            self.prr.on_send();
        }
    }
}
