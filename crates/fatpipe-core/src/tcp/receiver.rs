//! The TCP receiver: cumulative ACKs, delayed ACKs, an out-of-order queue, and flow control
//! against an application that reads at a limited rate.
//!
//! Sans-I/O: it is driven by `on_segment` and its two timers (delayed ACK, window update) with
//! the current time and pushes the ACKs to send into a caller's buffer. It never sees the
//! network or a clock.
//!
//! Flow control (only with `receiver_drain_rate_bps`; otherwise the application reads at once
//! and the full buffer is always advertised):
//! - bytes delivered in order wait in the buffer until the application (`reader.rs`) reads
//!   them; the window offered is the buffer minus the unread bytes, rounded down to the window
//!   scale and capped at 65,535 x 2^shift;
//! - receiver silly-window avoidance (RFC 1122 4.2.3.3, Fr = 1/2): the window's right edge
//!   moves forward only by at least min(buffer / 2, MSS), and never back;
//! - window updates (Linux `__tcp_cleanup_rbuf`): when the window still open at the sender is
//!   at most half the largest window and the application's reading would at least double it
//!   (and move the edge as above), an ACK goes out at once; the receiver computes when that
//!   happens and sets its window-update timer for it, so there is no event per byte read;
//! - a segment that starts at or beyond the right edge is dropped and answered with an
//!   immediate ACK (Linux `tcp_data_queue`, out_of_window); a zero-length segment (the
//!   sender's zero-window probe) is answered at once.

use super::config::TcpConfig;
use super::ranges::RangeSet;
use super::reader::AppReader;
use crate::packet::{
    accecn_option_bytes, sack_option_bytes, Ecn, Packet, PacketKind, SackBlocks, IPV4_TCP_HEADER_BYTES,
    TCP_MAX_OPTION_BYTES,
};
use crate::time::Time;

#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    pub acks_sent: u64,
    pub segments_received: u64,
    pub out_of_order_segments: u64,
    pub duplicate_segments: u64,
    /// Data segments that arrived marked Congestion Experienced (ECN).
    pub ce_segments: u64,
    /// ACKs sent only to open the window (no new data arrived).
    pub window_updates_sent: u64,
    /// ACKs that advertised a zero window.
    pub zero_window_acks_sent: u64,
    /// Segments dropped because they started at or beyond the window's right edge.
    pub out_of_window_segments: u64,
    /// Zero-length segments (zero-window probes) answered.
    pub probes_received: u64,
    /// When the in-order byte count last advanced.
    pub last_delivery_ps: Option<Time>,
    /// ACKs that reported a duplicate segment with a D-SACK block (RFC 2883).
    pub dsacks_sent: u64,
}

/// How the receiver feeds congestion marks back to the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnFeedback {
    /// RFC 3168 section 6.1.3: ECN-Echo on every ACK from a CE mark until a CWR arrives.
    Rfc3168,
    /// RFC 8257 section 3.2 (DCTCP; Linux `dctcp_ece_ack_update`): ECN-Echo is the CE state
    /// of the latest segment, and a change of that state first acknowledges at once what
    /// arrived before it, with the old state, so that every ECE-flagged ACK covers exactly
    /// the marked segments even with delayed ACKs. CWR is ignored.
    Dctcp,
    /// RFC 9768: the ACE field carries the count of CE-marked packets modulo 8.
    AccEcn,
}

/// AccECN's increment-triggered ACK (RFC 9768 section 3.2.2.5.2: an ACK once n CE marks
/// have arrived since the last one; n SHOULD be 2, so the 3-bit counter cannot wrap
/// between ACKs).
const ACCECN_CE_PER_ACK: u32 = 2;
/// RFC 9768 section 3.2.1: r.cep and s.cep start at 5, so that a middlebox zeroing the
/// ACE field is detected.
pub const ACCECN_CEP_INIT: u32 = 5;

/// The sender's half of Accurate ECN (RFC 9768): s.cep, the CE packets reported so far, and
/// s.ceb, the CE bytes the AccECN option reported (Linux `delivered_ecn_bytes[CE]`).
#[derive(Clone, Copy, Debug)]
pub struct AccEcnSender {
    pub cep: u32,
    pub ceb: u32,
}

impl Default for AccEcnSender {
    fn default() -> Self {
        AccEcnSender { cep: ACCECN_CEP_INIT, ceb: 0 }
    }
}

/// Linux `TCP_ACCECN_SAFETY_SHIFT` (the RFC's SAFETY_FACTOR of 2).
const ACCECN_SAFETY_SHIFT: u32 = 1;

impl AccEcnSender {
    /// The CE-marked segments an ACK reports, from its ACE field, the segments and payload
    /// bytes it newly delivered, and the ECEB field if the option came (Linux
    /// `__tcp_accecn_process`). Up to 7 deliveries the 3-bit counter cannot have wrapped
    /// unseen and its change is the count. Beyond, the count is ambiguous by multiples of 8:
    /// without the option the sender takes the largest the field allows (`safe_delta`, RFC
    /// 9768 Appendix A.2); with it, the CE bytes decide: none means the ACE change, more
    /// than the ACE change's full segments means the safe count, less than half the safe
    /// count's means the ACE change, and for ACKs of 16 segments or more (`sack_or_open`:
    /// SACK in use, or the state Open or CWR) the count the CE bytes' share of the delivered
    /// bytes implies.
    pub fn ce_delta(
        &mut self,
        ace: u8,
        eceb: Option<u32>,
        delivered: u32,
        delivered_bytes: u64,
        mss: u32,
        sack_or_open: bool,
    ) -> u32 {
        let old_ceb = self.ceb;
        if let Some(eceb) = eceb {
            // The option's 24-bit field: advance by its change, modulo 2^24.
            self.ceb = self.ceb.wrapping_add(eceb.wrapping_sub(self.ceb) & 0xFF_FFFF);
        }
        let seen = (ace as u32).wrapping_sub(self.cep) & 7;
        let delta = if delivered <= 7 {
            seen
        } else {
            let safe = delivered - ((delivered - seen) & 7);
            match eceb.map(|_| self.ceb.wrapping_sub(old_ceb) as u64) {
                Some(0) => seen,
                Some(d_ceb) if delivered >= 16 && sack_or_open => {
                    if delivered_bytes <= d_ceb {
                        safe
                    } else {
                        let estimate = (d_ceb * delivered as u64).div_ceil(delivered_bytes) as u32;
                        safe.min(seen + (estimate & !7))
                    }
                }
                Some(d_ceb) if d_ceb > seen as u64 * mss as u64 => safe,
                Some(d_ceb) if d_ceb < (safe as u64 * mss as u64) >> ACCECN_SAFETY_SHIFT => seen,
                _ => safe,
            }
        };
        self.cep = self.cep.wrapping_add(delta);
        delta
    }
}

pub struct TcpReceiver {
    flow: u32,
    /// The connection its packets belong to (`Packet::conn`); 0 unless a workload opens several.
    pub conn: u16,
    /// This host (source of ACKs) and the data sender (their destination).
    node: u32,
    peer: u32,
    /// Next byte expected in order; every byte below it has been delivered (RFC 793 RCV.NXT).
    pub rcv_nxt: u64,
    /// Data received above a hole.
    ooo: RangeSet,
    window_bytes: u32,
    delayed_ack: bool,
    ack_every_segments: u32,
    delayed_ack_timeout: Time,
    /// 4.4BSD's fast timer period: delayed ACKs wait for its next tick instead.
    fast_timer: Option<Time>,
    timestamps: bool,
    header_bytes: u32,
    /// SACK blocks per ACK (RFC 2018: 3 beside timestamps, else 4); 0 without SACK.
    max_sack_blocks: usize,
    /// Report duplicates with D-SACK (RFC 2883), and the duplicate the next ACK reports.
    dsack: bool,
    pending_dsack: Option<(u64, u64)>,
    /// Blocks reported most recently, most recent first (RFC 2018 section 4).
    recent_blocks: [(u64, u64); 4],
    recent_count: usize,
    /// Segments received since the last ACK.
    unacked_segments: u32,
    /// When the delayed ACK must go out, if one is pending.
    delayed_ack_deadline: Option<Time>,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: Time,
    last_ack_sent: u64,
    /// ECN negotiated; while `ece` is set every ACK carries ECN-Echo (RFC 3168 6.1.3: from a
    /// CE mark until a segment with CWR arrives; Linux `TCP_ECN_DEMAND_CWR`; with DCTCP's
    /// feedback, the CE state of the latest segment).
    ecn: bool,
    ece: bool,
    feedback: EcnFeedback,
    /// Accurate ECN (RFC 9768 section 3.2.1): r.cep, CE-marked packets received (from 5),
    /// r.ceb, their payload bytes (from 0), the CE marks since the last ACK, and whether the
    /// latest segment was CE.
    cep: u32,
    ceb: u32,
    ce_unacked: u32,
    last_ce: bool,
    /// The application reading at a limited rate; None: it reads every byte at once.
    reader: Option<AppReader>,
    rcv_buffer: u64,
    /// Window scale granularity (2^shift bytes) and the largest window the field carries.
    window_granularity: u64,
    max_window: u64,
    /// RFC 1122 4.2.3.3: the right edge moves by at least min(buffer / 2, MSS).
    sws_threshold: u64,
    /// Right edge of the window last advertised (RCV.NXT + RCV.WND when it was sent).
    rcv_adv: u64,
    /// When the application's reading makes a window update due, if the window is small.
    window_update_deadline: Option<Time>,
    /// The receiving host's GRO and interrupt coalescing (`host/gro.rs`); None: off, every
    /// segment reaches TCP as it arrives.
    gro: Option<crate::host::gro::Gro>,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(flow: u32, node: u32, peer: u32, cfg: &TcpConfig) -> Self {
        TcpReceiver {
            flow,
            conn: 0,
            node,
            peer,
            rcv_nxt: 0,
            ooo: RangeSet::default(),
            window_bytes: cfg.advertised_window_bytes(),
            delayed_ack: cfg.delayed_ack,
            ack_every_segments: cfg.ack_every_segments.max(1),
            delayed_ack_timeout: cfg.delayed_ack_timeout_ps,
            fast_timer: cfg.fast_timer_ps.filter(|&p| p > 0),
            timestamps: cfg.timestamps,
            header_bytes: cfg.header_bytes(),
            max_sack_blocks: match cfg.recovery {
                super::config::Recovery::Sack if cfg.timestamps => 3,
                super::config::Recovery::Sack => 4,
                _ => 0,
            },
            dsack: cfg.dsack && cfg.recovery == super::config::Recovery::Sack,
            pending_dsack: None,
            recent_blocks: [(0, 0); 4],
            recent_count: 0,
            unacked_segments: 0,
            delayed_ack_deadline: None,
            ts_recent: 0,
            last_ack_sent: 0,
            ecn: cfg.ecn,
            ece: false,
            feedback: if cfg.accecn { EcnFeedback::AccEcn } else { EcnFeedback::Rfc3168 },
            cep: ACCECN_CEP_INIT,
            ceb: 0,
            ce_unacked: 0,
            last_ce: false,
            reader: cfg.receiver_drain_rate_bps.map(AppReader::new),
            rcv_buffer: cfg.rcv_buffer_bytes,
            gro: cfg.host.filter(|h| h.gro).map(|h| crate::host::gro::Gro::new(&h, cfg.mss_bytes)),
            window_granularity: 1 << cfg.window_shift(),
            max_window: 65_535 << cfg.window_shift(),
            sws_threshold: (cfg.rcv_buffer_bytes / 2).min(cfg.mss_bytes as u64).max(1),
            // The SYN exchange advertised the whole buffer.
            rcv_adv: cfg.advertised_window_bytes() as u64,
            window_update_deadline: None,
            stats: ReceiverStats::default(),
        }
    }

    /// The receiver runs DCTCP, whose feedback replaces RFC 3168's (Linux: the receiving
    /// socket's congestion control is dctcp). Accurate ECN, when negotiated, takes precedence,
    /// as in Linux, where DCTCP's echo state machine runs only without AccECN.
    pub fn use_dctcp_feedback(&mut self) {
        if self.feedback == EcnFeedback::Rfc3168 {
            self.feedback = EcnFeedback::Dctcp;
        }
    }

    pub fn ecn_feedback(&self) -> EcnFeedback {
        self.feedback
    }

    pub fn delayed_ack_deadline(&self) -> Option<Time> {
        match &self.gro {
            // The receiver's one timer serves the NIC's interrupt too (`on_delayed_ack_timer`).
            Some(g) => [self.delayed_ack_deadline, g.deadline].into_iter().flatten().min(),
            None => self.delayed_ack_deadline,
        }
    }

    /// When the window-update timer must fire (only with a rate-limited application).
    pub fn window_update_deadline(&self) -> Option<Time> {
        self.window_update_deadline
    }

    /// Bytes the application has read by `now` (all delivered bytes when it reads at once).
    pub fn bytes_read(&self, now: Time) -> u64 {
        self.reader.as_ref().map_or(self.rcv_nxt, |r| r.read(now, self.rcv_nxt))
    }

    /// Bytes held above a hole.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.ooo.bytes()
    }

    /// Handles one data segment arriving from the wire: through GRO if the host has it.
    pub fn on_segment(&mut self, now: Time, seg: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(seg.kind, PacketKind::Data);
        self.stats.segments_received += 1;
        let Some(gro) = &mut self.gro else { return self.receive(now, seg, out) };
        if gro.arrive(now, seg) {
            self.gro_interrupt(now, out);
        }
    }

    /// The receiving NIC's interrupt: TCP takes what GRO holds, oldest first.
    fn gro_interrupt(&mut self, now: Time, out: &mut Vec<Packet>) {
        let Some(gro) = &mut self.gro else { return };
        let held = gro.interrupt();
        for s in &held {
            self.receive(now, s, out);
        }
        if let Some(gro) = &mut self.gro {
            gro.restore(held);
        }
    }

    /// TCP takes one (super-)segment.
    fn receive(&mut self, now: Time, seg: &Packet, out: &mut Vec<Packet>) {
        let (start, end) = (seg.seq, seg.end_seq());
        let ack_now = self.ecn && self.note_ecn(now, seg, out);
        if self.reader.is_some() {
            if seg.payload_bytes == 0 {
                // A zero-window probe: answer with the window as it stands.
                self.stats.probes_received += 1;
                self.send_ack(now, out);
                self.schedule_window_update(now, out);
                return;
            }
            if start >= self.rcv_adv && end > self.rcv_nxt {
                // Beyond the window offered: no room for it (Linux tcp_data_queue out_of_window).
                self.stats.out_of_window_segments += 1;
                self.send_ack(now, out);
                self.schedule_window_update(now, out);
                return;
            }
        }
        // RFC 7323 4.3: remember the timestamp of the segment that the next ACK acknowledges,
        // so that RTT samples include the time an ACK was delayed: a segment that covers
        // Last.ACK.sent (SEG.SEQ <= Last.ACK.sent < SEG.SEQ + SEG.LEN), such as the one that
        // fills a hole. An old duplicate does not: its ACK echoes the last segment that
        // advanced the window, which tells a sender that its retransmission was spurious
        // (Eifel, RFC 3522; Linux drops such a duplicate in `tcp_sequence` before it could
        // touch TS.Recent, though it also takes one that ends exactly at Last.ACK.sent).
        if self.timestamps && start <= self.last_ack_sent && self.last_ack_sent < end && seg.ts_val >= self.ts_recent {
            self.ts_recent = seg.ts_val;
        }
        if end <= self.rcv_nxt {
            // Everything already received: a spurious retransmission. ACK at once so the
            // sender learns where we are (RFC 5681 4.2), reporting the duplicate (RFC 2883).
            self.stats.duplicate_segments += 1;
            if self.dsack && end > start {
                self.pending_dsack = Some((start, end));
            }
            self.send_ack(now, out);
        } else if start > self.rcv_nxt {
            // Above a hole: buffer it and send an immediate duplicate ACK (RFC 5681 4.2).
            self.stats.out_of_order_segments += 1;
            if self.dsack && self.ooo.containing(start).is_some_and(|(_, e)| e >= end) {
                // Held already: a duplicate above a hole (RFC 2883 section 4 case 2).
                self.pending_dsack = Some((start, end));
            }
            self.ooo.insert(start, end);
            self.update_sack_blocks(start);
            self.send_ack(now, out);
        } else {
            let had_hole = !self.ooo.is_empty();
            if let Some(r) = &mut self.reader {
                r.on_arrival(now, self.rcv_nxt);
            }
            self.rcv_nxt = end;
            while let Some(e) = self.ooo.pop_reached(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            self.stats.last_delivery_ps = Some(now);
            // A GRO super-segment counts as the segments it carries (Linux acknowledges at
            // once when more than one full segment is unacknowledged).
            self.unacked_segments += self.gro.as_ref().map_or(1, |g| g.segments(seg.payload_bytes));
            if had_hole {
                self.update_sack_blocks(self.rcv_nxt);
            }
            if had_hole || ack_now || !self.delayed_ack || self.unacked_segments >= self.ack_every_segments {
                // A segment that fills a hole is acknowledged at once (RFC 5681 4.2).
                self.send_ack(now, out);
            } else if self.delayed_ack_deadline.is_none() {
                self.delayed_ack_deadline = Some(match self.fast_timer {
                    // 4.4BSD tcp_fasttimo: pending delayed ACKs go out on its next tick.
                    Some(period) => super::bsd_timers::next_tick(now, period),
                    None => now + self.delayed_ack_timeout,
                });
            }
        }
        self.schedule_window_update(now, out);
    }

    /// The segment's ECN bits, by the feedback in use; returns whether its ACK must go out
    /// at once (AccECN's change- and increment-triggered ACKs).
    fn note_ecn(&mut self, now: Time, seg: &Packet, out: &mut Vec<Packet>) -> bool {
        let ce = seg.ecn.has(Ecn::CE);
        self.stats.ce_segments += u64::from(ce);
        match self.feedback {
            EcnFeedback::Rfc3168 => {
                // CWR first: a segment with both CWR and CE asks for ECN-Echo again. A
                // delayed ACK echoes a CE on any segment it covers, since the flag stays set.
                if seg.ecn.has(Ecn::CWR) {
                    self.ece = false;
                }
                self.ece |= ce;
                false
            }
            EcnFeedback::Dctcp => {
                if ce != self.ece {
                    // RFC 8257 section 3.2: the segments held for a delayed ACK are
                    // acknowledged now with the state they arrived in; this one starts the
                    // new state (its ACK follows the delayed-ACK rules).
                    if self.unacked_segments > 0 {
                        self.send_ack(now, out);
                    }
                    self.ece = ce;
                }
                false
            }
            EcnFeedback::AccEcn => {
                let first_after_unmarked = ce && !self.last_ce;
                self.last_ce = ce;
                if !ce {
                    return false;
                }
                let n = self.gro.as_ref().map_or(1, |g| g.segments(seg.payload_bytes));
                self.cep = self.cep.wrapping_add(n);
                self.ceb = self.ceb.wrapping_add(seg.payload_bytes);
                self.ce_unacked += n;
                // RFC 9768 section 3.2.2.5: change-triggered and increment-triggered ACKs.
                first_after_unmarked || self.ce_unacked >= ACCECN_CE_PER_ACK
            }
        }
    }

    /// The delayed-ACK timer expired (or, with GRO, the NIC's interrupt is due).
    pub fn on_delayed_ack_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.gro.as_ref().is_some_and(|g| g.deadline.is_some_and(|t| t <= now)) {
            self.gro_interrupt(now, out);
            if self.delayed_ack_deadline.is_none_or(|t| t > now) {
                return;
            }
        }
        if self.unacked_segments > 0 {
            self.send_ack(now, out);
        }
        self.delayed_ack_deadline = None;
        self.schedule_window_update(now, out);
    }

    /// The window-update timer expired: the application has read enough to reopen the window.
    pub fn on_window_update_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.window_update_deadline = None;
        self.schedule_window_update(now, out);
    }

    /// With a rate-limited application: sends a window update if the reading has made one due
    /// (Linux `__tcp_cleanup_rbuf`: the window open at the sender is at most half the largest
    /// and would at least double; RFC 1122's edge step must be met too), then sets the timer
    /// for when the next one will be due, if the window is that small.
    fn schedule_window_update(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.reader.is_none() {
            return;
        }
        self.window_update_deadline = self.window_update_due(now);
        if self.window_update_deadline == Some(now) {
            self.stats.window_updates_sent += 1;
            self.send_ack(now, out);
            // The update opened the window to at least the target, so the next one lies ahead.
            self.window_update_deadline = self.window_update_due(now);
            debug_assert!(self.window_update_deadline.is_none_or(|t| t > now));
        }
    }

    /// When the application's reading makes the next window update due (`now` if it is due
    /// already); None while the window open at the sender is more than half the largest.
    fn window_update_due(&self, now: Time) -> Option<Time> {
        let reader = self.reader.as_ref()?;
        let open = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let largest = self.window_bytes as u64;
        if 2 * open > largest {
            return None;
        }
        if open + self.sws_threshold > largest {
            return None; // no reading can move the edge far enough (a buffer of under 2 MSS)
        }
        // The window to wait for, in whole scale units, and the bytes read that make room for it.
        let target = (2 * open).max(open + self.sws_threshold).next_multiple_of(self.window_granularity).min(largest);
        let must_read = (self.rcv_nxt + target).saturating_sub(self.rcv_buffer);
        Some(reader.time_to_read(now, self.rcv_nxt, must_read))
    }

    /// RFC 2018 section 4: the first block holds the segment that just arrived (if it is above
    /// a hole); then the blocks reported before, as they stand now, most recent first.
    fn update_sack_blocks(&mut self, newest: u64) {
        if self.max_sack_blocks == 0 {
            return;
        }
        let mut blocks = [(0u64, 0u64); 4];
        let mut n = 0;
        let candidates = std::iter::once(newest).chain(self.recent_blocks[..self.recent_count].iter().map(|b| b.0));
        for seq in candidates {
            if n == self.max_sack_blocks {
                break;
            }
            if let Some(r) = self.ooo.containing(seq) {
                if !blocks[..n].contains(&r) {
                    blocks[n] = r;
                    n += 1;
                }
            }
        }
        self.recent_blocks = blocks;
        self.recent_count = n;
    }

    /// The window to advertise now, moving the right edge if RFC 1122's step allows.
    fn advertised_window(&mut self, now: Time) -> u32 {
        let Some(reader) = &self.reader else { return self.window_bytes };
        let g = self.window_granularity;
        let unread = self.rcv_nxt - reader.read(now, self.rcv_nxt);
        let free = self.rcv_buffer.saturating_sub(unread).min(self.max_window) / g * g;
        if self.rcv_nxt + free >= self.rcv_adv + self.sws_threshold {
            self.rcv_adv = self.rcv_nxt + free;
        }
        let window = self.rcv_adv.saturating_sub(self.rcv_nxt) / g * g;
        if window == 0 {
            self.stats.zero_window_acks_sent += 1;
        }
        window as u32
    }

    fn send_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        let window_bytes = self.advertised_window(now);
        self.unacked_segments = 0;
        let mut ecn = Ecn::default();
        let accecn = self.feedback == EcnFeedback::AccEcn;
        if accecn {
            ecn.set_ace(self.cep);
            self.ce_unacked = 0;
        } else if self.ece {
            ecn.set(Ecn::ECE);
        }
        self.delayed_ack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.stats.acks_sent += 1;
        let mut sack = SackBlocks::default();
        let mut room = self.recent_count;
        if let Some((s, e)) = self.pending_dsack.take() {
            // RFC 2883: the D-SACK block first, then as many SACK blocks as still fit.
            sack.push(self.rcv_nxt, s, e);
            self.stats.dsacks_sent += 1;
            room = room.min(self.max_sack_blocks - 1);
        }
        for &(s, e) in &self.recent_blocks[..room] {
            sack.push(self.rcv_nxt, s, e);
        }
        let mut option_bytes = sack_option_bytes(sack.len());
        let mut accecn_option = 0;
        if accecn {
            // The AccECN option in what SACK and timestamps leave (Linux: SACK first).
            let room = TCP_MAX_OPTION_BYTES.saturating_sub(self.header_bytes - IPV4_TCP_HEADER_BYTES + option_bytes);
            accecn_option = accecn_option_bytes(room);
            option_bytes += accecn_option;
        }
        let mut ack = Packet {
            flow: self.flow,
            conn: self.conn,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Ack,
            seq: 0,
            payload_bytes: 0,
            ip_bytes: self.header_bytes + option_bytes,
            ack: self.rcv_nxt,
            window_bytes,
            sack,
            ts_val: now, // the receiver's clock (RFC 7323), for captures: the sender reads only ts_ecr
            ts_ecr: self.ts_recent,
            retransmission: false,
            ecn,
        };
        if accecn_option >= 8 {
            ack.set_accecn_eceb(self.ceb);
        }
        out.push(ack);
    }
}
