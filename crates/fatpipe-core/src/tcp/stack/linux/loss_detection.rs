//! Loss detection of the Linux stack (Linux `tcp_identify_packet_loss` and what it calls):
//! which segments of the retransmission queue are lost. RACK by time when it is on
//! (`rack.rs`); otherwise the duplicate-ACK threshold over SACKed segments
//! (`tcp_mark_head_lost`, FACK's forward-acknowledged count when `fack` is set); without SACK,
//! NewReno's rule on duplicate ACKs counted as SACKed segments (`tcp_add_reno_sack`); after a
//! timeout, everything not SACKed (`tcp_timeout_mark_lost`). Also the reordering degree the
//! losses are judged against (`tcp_check_sack_reordering`).
//!
//! `LossDetection` marks segments in the queue and counts them; it never changes the
//! congestion state or the window: the state machine (`state.rs`) asks it and decides.

use super::rack::Rack;
use super::rtx_queue::{RtxQueue, LOST, SACKED};
use crate::cc::CaState;
use crate::tcp::config::TcpConfig;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

/// The loss detection's state (Linux `tp->reordering`, `tp->rack`, `lost_skb_hint`, ...).
#[derive(Debug, Default)]
pub struct LossDetection {
    /// RACK's state (RFC 8985).
    pub rack: Rack,
    /// Segments of reordering the path has shown (Linux `tp->reordering`).
    pub reordering: u32,
    /// Reordering events seen (Linux `reord_seen`).
    pub reord_seen: u32,
    /// FACK in force: the configuration's, until reordering turns it off.
    fack: bool,
    /// Where the duplicate-ACK-threshold marking stopped (Linux `lost_skb_hint`,
    /// `lost_cnt_hint`).
    mark_hint: Option<(u64, u32)>,
    /// Segments marked lost since the start (Linux `tp->lost`).
    pub lost: u64,
}

/// What a loss detection pass found beside the segments it marked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Found {
    /// RACK waits for a segment's reordering window to pass: arm the reordering timer for
    /// then.
    pub reo_timer: Option<Time>,
    /// RACK found a retransmission lost again.
    pub lost_retrans: bool,
}

impl LossDetection {
    /// The reordering degree starts at the duplicate-ACK threshold.
    pub fn new(cfg: &TcpConfig) -> Self {
        LossDetection { reordering: cfg.dupack_threshold, fack: cfg.fack, ..Default::default() }
    }

    /// Linux `tcp_check_sack_reordering`: a hole at `low_seq` was filled by a segment
    /// sent before the highest SACKed one, so the path reorders by that many segments. A
    /// reordering larger than the degree known turns FACK off, whose forward count would take
    /// every such hole for lost (Linux 2.4/2.6 `tcp_update_reordering`: "Disable FACK yet").
    pub fn note_reordering(&mut self, q: &RtxQueue, tcb: &mut Tcb, low_seq: u64) {
        let fack = q.highest_sack_end;
        if low_seq >= fack {
            return;
        }
        let mss = tcb.cfg.mss_bytes as u64;
        let metric = fack - low_seq;
        if tcb.cfg.adaptive_reordering && metric > self.reordering as u64 * mss {
            self.reordering = (metric.div_ceil(mss) as u32).min(tcb.cfg.max_reordering_segments);
            self.fack = false;
        }
        self.reord_seen += 1;
        tcb.stats.reordering_events += 1;
    }

    /// A reordering degree from the destination's metrics cache (`tcp/metrics.rs`, Linux
    /// `tcp_init_metrics`); Linux 2.4 turns FACK off with it (`tp->sack_ok &= ~2`).
    pub fn seed_reordering(&mut self, reordering: u32, disable_fack: bool) {
        self.reordering = reordering;
        if disable_fack {
            self.fack = false;
        }
    }

    /// Linux `tcp_add_reno_sack`: without SACK a duplicate ACK counts one segment out of
    /// order; more than the flight could hold shows reordering. Returns the segments newly
    /// counted as delivered.
    pub fn add_reno_sack(&mut self, q: &mut RtxQueue, cfg: &TcpConfig, num_dupack: u32) -> u32 {
        if num_dupack == 0 {
            return 0;
        }
        let prior = q.sacked_out;
        q.sacked_out += num_dupack;
        let holes = q.lost_out.max(1).min(q.packets_out);
        if q.sacked_out + holes > q.packets_out {
            q.sacked_out = q.packets_out - holes;
            if cfg.adaptive_reordering {
                self.reordering = (q.packets_out + 1).min(cfg.max_reordering_segments).max(self.reordering);
            }
            self.reord_seen += 1;
        }
        q.sacked_out - prior
    }

    /// Linux `tcp_remove_reno_sacks`: a cumulative ACK of `acked` segments fills one hole;
    /// the rest were counted by duplicate ACKs already. Returns the segments it delivered.
    pub fn remove_reno_sacks(q: &mut RtxQueue, acked: u32) -> u32 {
        if acked == 0 {
            return 0;
        }
        let delivered = acked.saturating_sub(q.sacked_out).max(1);
        q.sacked_out = q.sacked_out.saturating_sub(acked - 1);
        delivered
    }

    /// Marks losses by the configured rule (Linux `tcp_identify_packet_loss`).
    pub fn identify(&mut self, q: &mut RtxQueue, tcb: &Tcb, now: Time, una_advanced: bool) -> Found {
        let mut found = Found::default();
        if q.is_empty() {
            return found;
        }
        let before = q.lost_out;
        if !tcb.sack() {
            self.newreno_mark_lost(q, tcb, una_advanced);
        } else if tcb.cfg.rack {
            let prior_retrans = q.retrans_out;
            let reo_wnd = self.reo_wnd(q, tcb);
            found.reo_timer = self.rack.mark_lost(q, now, reo_wnd).1;
            found.lost_retrans = prior_retrans > q.retrans_out;
        }
        self.count_lost(q, before);
        found
    }

    /// RACK's reordering timer fired (Linux `tcp_rack_reo_timeout`): marks what is due.
    pub fn on_reo_timeout(&mut self, q: &mut RtxQueue, tcb: &Tcb, now: Time) {
        let before = q.lost_out;
        let reo_wnd = self.reo_wnd(q, tcb);
        self.rack.detect_loss(q, now, reo_wnd);
        self.count_lost(q, before);
    }

    /// After a timeout (Linux `tcp_timeout_mark_lost`): every segment not SACKed is lost, but
    /// those sent so recently that RACK would not call them lost yet (all but the head).
    pub fn mark_timeout_lost(&mut self, q: &mut RtxQueue, tcb: &Tcb, now: Time) {
        let before = q.lost_out;
        let rack_rtt = self.rack.rtt_ps;
        let ids = q.ids();
        let head = ids.start;
        for id in ids {
            let s = q.get(id).unwrap();
            if s.has(SACKED) {
                continue;
            }
            if id != head && tcb.cfg.rack && s.xmit_ps + rack_rtt > now {
                continue;
            }
            q.mark_lost(id);
        }
        self.count_lost(q, before);
    }

    /// An undo: nothing is lost after all (Linux `tcp_undo_cwnd_reduction` with
    /// `unmark_loss`).
    pub fn unmark_all(&mut self, q: &mut RtxQueue) {
        q.unmark_all_lost();
        self.mark_hint = None;
    }

    /// The reordering a hole must be SACKed (or duplicate-ACKed) past before it is lost,
    /// without RACK: Linux's `tp->reordering`, and with Delayed Congestion Response
    /// (document 004's patch to Linux 2.4) at least cwnd / dcr_div, so that the response
    /// waits about an RTT.
    pub fn dupthresh(&self, tcb: &Tcb) -> u32 {
        match tcb.cfg.dcr_div {
            Some(div) => self.reordering.max(tcb.cc_state.cwnd / div),
            None => self.reordering,
        }
    }

    /// RACK's reordering window now.
    fn reo_wnd(&self, q: &RtxQueue, tcb: &Tcb) -> Time {
        let in_recovery = tcb.ca_state == CaState::Recovery;
        let (min_rtt, srtt) = (tcb.rtt.min_rtt, tcb.rtt.srtt);
        self.rack.reo_wnd(self.reord_seen > 0, in_recovery, q.sacked_out, self.reordering, min_rtt, srtt)
    }

    /// Adds the segments newly marked lost since `lost_out` was `before` to the total.
    fn count_lost(&mut self, q: &RtxQueue, before: u32) {
        // lost_out also falls as segments are SACKed or acknowledged; only rises count here.
        if q.lost_out > before {
            self.lost += (q.lost_out - before) as u64;
        }
    }

    /// Linux `tcp_newreno_mark_lost`: without SACK the head is lost once enough duplicate
    /// ACKs came, or on a partial ACK during recovery.
    fn newreno_mark_lost(&mut self, q: &mut RtxQueue, tcb: &Tcb, una_advanced: bool) {
        let recovery = tcb.ca_state == CaState::Recovery;
        let open_or_disorder = matches!(tcb.ca_state, CaState::Open | CaState::Cwr);
        if (open_or_disorder && q.sacked_out >= self.dupthresh(tcb)) || (recovery && una_advanced) {
            let head = q.ids().start;
            if q.get(head).is_some_and(|s| !s.has(LOST)) {
                q.mark_lost(head);
            }
        }
    }

    /// Without RACK (Linux before 4.4, or `rack = false`), with SACK: marks lost the holes with
    /// at least `reordering` SACKed segments above them (Linux `tcp_mark_head_lost` from
    /// `tcp_update_scoreboard`); with FACK, the first (forward-acknowledged - reordering)
    /// segments; on entering recovery at least the head.
    pub fn update_scoreboard(&mut self, q: &mut RtxQueue, tcb: &Tcb, fast_rexmit: bool) {
        let before = q.lost_out;
        let reordering = self.dupthresh(tcb);
        let (limit, count_all) = if self.fack {
            // FACK: segments from SND.UNA to the highest SACKed one.
            let fackets = q.highest_sack_end.saturating_sub(tcb.snd_una).div_ceil(tcb.cfg.mss_bytes as u64) as u32;
            (fackets.saturating_sub(reordering).max(1), true)
        } else if q.sacked_out >= reordering {
            (q.sacked_out - reordering, false)
        } else if fast_rexmit {
            (1, true)
        } else {
            return;
        };
        let mark_head_only = !self.fack && q.sacked_out < reordering;
        let ids = q.ids();
        let (mut id, mut cnt) = match self.mark_hint {
            Some((h, c)) if h >= ids.start && !mark_head_only => (h, c),
            _ => (ids.start, 0),
        };
        let loss_high = tcb.snd_nxt;
        while id < ids.end {
            let s = q.get(id).unwrap();
            self.mark_hint = Some((id, cnt));
            if s.end > loss_high {
                break;
            }
            if count_all || s.has(SACKED) {
                cnt += 1;
            }
            if cnt > limit {
                break;
            }
            q.mark_lost(id);
            if mark_head_only {
                break;
            }
            id += 1;
        }
        self.count_lost(q, before);
    }

    /// Linux `tcp_time_to_recover`: a loss is proven (marked), or without RACK more segments
    /// are SACKed (or duplicate-ACKed) than the reordering degree allows.
    pub fn time_to_recover(&self, q: &RtxQueue, tcb: &Tcb) -> bool {
        if q.lost_out > 0 {
            return true;
        }
        // Linux `tcp_dupack_heuristics`: with FACK (2.4/2.6) the segments up to the highest
        // SACKed one, otherwise the SACKed (or duplicate-ACKed) ones plus the hole.
        let heuristic = if self.fack {
            q.highest_sack_end.saturating_sub(tcb.snd_una).div_ceil(tcb.cfg.mss_bytes as u64) as u32
        } else {
            q.sacked_out + 1
        };
        !tcb.cfg.rack && heuristic > self.dupthresh(tcb)
    }
}
