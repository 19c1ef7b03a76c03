//! Loss detection of the Linux stack (Linux `tcp_identify_packet_loss` and what it calls):
//! RACK by time when it is on; otherwise the duplicate-ACK threshold over SACKed segments
//! (`tcp_mark_head_lost`, FACK's forward-acknowledged count when `fack` is set); without SACK,
//! NewReno's rule on duplicate ACKs counted as SACKed segments (`tcp_add_reno_sack`). Also the
//! reordering degree the losses are judged against (`tcp_check_sack_reordering`).

use super::rtx_queue::SACKED;
use super::AckFlags;
use super::LinuxStack;
use super::XmitTimer;
use crate::cc::CaState;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl LinuxStack {
    /// Linux `tcp_check_sack_reordering`: a hole at `low_seq` was filled by a segment
    /// sent before the highest SACKed one, so the path reorders by that many segments. A
    /// reordering larger than the degree known turns FACK off, whose forward count would take
    /// every such hole for lost (Linux 2.4/2.6 `tcp_update_reordering`: "Disable FACK yet").
    pub(crate) fn note_reordering(&mut self, tcb: &mut Tcb, low_seq: u64) {
        let fack = self.q.highest_sack_end;
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

    /// Linux `tcp_add_reno_sack`: without SACK a duplicate ACK counts one segment out of
    /// order; more than the flight could hold shows reordering.
    pub(crate) fn add_reno_sack(&mut self, tcb: &mut Tcb, num_dupack: u32) {
        if num_dupack == 0 {
            return;
        }
        let q = &mut self.q;
        let prior = q.sacked_out;
        q.sacked_out += num_dupack;
        let holes = q.lost_out.max(1).min(q.packets_out);
        if q.sacked_out + holes > q.packets_out {
            q.sacked_out = q.packets_out - holes;
            if tcb.cfg.adaptive_reordering {
                self.reordering = (q.packets_out + 1).min(tcb.cfg.max_reordering_segments).max(self.reordering);
            }
            self.reord_seen += 1;
        }
        self.delivered += (self.q.sacked_out - prior) as u64;
    }

    /// Linux `tcp_remove_reno_sacks`: a cumulative ACK of `acked` segments fills one hole;
    /// the rest were counted by duplicate ACKs already.
    pub(crate) fn remove_reno_sacks(&mut self, acked: u32) {
        if acked == 0 {
            return;
        }
        let q = &mut self.q;
        self.delivered += acked.saturating_sub(q.sacked_out).max(1) as u64;
        q.sacked_out = q.sacked_out.saturating_sub(acked - 1);
    }

    /// Marks losses by the configured rule (Linux `tcp_identify_packet_loss`).
    pub(crate) fn identify_packet_loss(&mut self, tcb: &mut Tcb, now: Time, f: &mut AckFlags) {
        if self.q.is_empty() {
            return;
        }
        let before = self.q.lost_out;
        if !tcb.sack() {
            self.newreno_mark_lost(tcb, f.una_advanced);
        } else if tcb.cfg.rack {
            let prior_retrans = self.q.retrans_out;
            let reo_wnd = self.reo_wnd(tcb);
            let (_, timer) = self.rack.mark_lost(&mut self.q, now, reo_wnd);
            if let Some(at) = timer {
                tcb.rto_deadline = Some(at.min(now + tcb.rtt.rto()));
                self.pending = XmitTimer::Reordering;
                f.set_xmit_timer = false;
            }
            if prior_retrans > self.q.retrans_out {
                f.lost_retrans = true;
            }
        }
        self.count_lost(before);
    }

    /// The reordering a hole must be SACKed (or duplicate-ACKed) past before it is lost,
    /// without RACK: Linux's `tp->reordering`, and with Delayed Congestion Response
    /// (document 004's patch to Linux 2.4) at least cwnd / dcr_div, so that the response
    /// waits about an RTT.
    pub(crate) fn dupthresh(&self, tcb: &Tcb) -> u32 {
        match tcb.cfg.dcr_div {
            Some(div) => self.reordering.max(tcb.cc_state.cwnd / div),
            None => self.reordering,
        }
    }

    /// RACK's reordering window now.
    pub(crate) fn reo_wnd(&self, tcb: &Tcb) -> Time {
        let in_recovery = tcb.ca_state == CaState::Recovery;
        self.rack.reo_wnd(
            self.reord_seen > 0,
            in_recovery,
            self.q.sacked_out,
            self.reordering,
            tcb.rtt.min_rtt,
            tcb.rtt.srtt,
        )
    }

    /// Adds the segments newly marked lost since `lost_out` was `before` to the total.
    pub(crate) fn count_lost(&mut self, before: u32) {
        // lost_out also falls as segments are SACKed or acknowledged; only rises count here.
        if self.q.lost_out > before {
            self.lost += (self.q.lost_out - before) as u64;
        }
    }

    /// Linux `tcp_newreno_mark_lost`: without SACK the head is lost once enough duplicate
    /// ACKs came, or on a partial ACK during recovery.
    pub(crate) fn newreno_mark_lost(&mut self, tcb: &mut Tcb, una_advanced: bool) {
        let recovery = tcb.ca_state == CaState::Recovery;
        let open_or_disorder = matches!(tcb.ca_state, CaState::Open | CaState::Cwr);
        if (open_or_disorder && self.q.sacked_out >= self.dupthresh(tcb)) || (recovery && una_advanced) {
            let head = self.q.ids().start;
            if self.q.get(head).is_some_and(|s| !s.has(super::rtx_queue::LOST)) {
                self.q.mark_lost(head);
            }
        }
    }

    /// Without RACK (Linux before 4.4, or `rack = false`), with SACK: marks lost the holes with
    /// at least `reordering` SACKed segments above them (Linux `tcp_mark_head_lost` from
    /// `tcp_update_scoreboard`); with FACK, the first (forward-acknowledged - reordering)
    /// segments; on entering recovery at least the head.
    pub(crate) fn update_scoreboard(&mut self, tcb: &mut Tcb, fast_rexmit: bool) {
        let before = self.q.lost_out;
        let reordering = self.dupthresh(tcb);
        let q = &self.q;
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
            let s = self.q.get(id).unwrap();
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
            self.q.mark_lost(id);
            if mark_head_only {
                break;
            }
            id += 1;
        }
        self.count_lost(before);
    }

    /// Linux `tcp_time_to_recover`: a loss is proven (marked), or without RACK more segments
    /// are SACKed (or duplicate-ACKed) than the reordering degree allows.
    pub(crate) fn time_to_recover(&self, tcb: &Tcb) -> bool {
        if self.q.lost_out > 0 {
            return true;
        }
        // Linux `tcp_dupack_heuristics`: with FACK (2.4/2.6) the segments up to the highest
        // SACKed one, otherwise the SACKed (or duplicate-ACKed) ones plus the hole.
        let heuristic = if self.fack {
            self.q.highest_sack_end.saturating_sub(tcb.snd_una).div_ceil(tcb.cfg.mss_bytes as u64) as u32
        } else {
            self.q.sacked_out + 1
        };
        !tcb.cfg.rack && heuristic > self.dupthresh(tcb)
    }
}
