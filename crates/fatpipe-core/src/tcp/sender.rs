//! The TCP sender: windowing, RTT and retransmission timeout, pacing, and loss recovery.
//!
//! Loss recovery lives here, not in the congestion control algorithms (as in Linux), in four
//! variants chosen per flow (`Recovery`):
//! - Tahoe: fast retransmit on the `dupack_threshold`-th duplicate ACK, then slow start from
//!   one segment, resending from the first unacknowledged byte (go-back-N);
//! - Reno (RFC 5681 3.2): fast retransmit and fast recovery with window inflation, left on the
//!   first ACK of new data, so several losses in a window usually end in a timeout;
//! - NewReno (RFC 6582): fast recovery lasts until everything outstanding at the loss is
//!   acknowledged; each partial ACK retransmits the next hole. The `recover` guard prevents
//!   repeated fast retransmits. Every partial ACK restarts the retransmission timer
//!   ("Slow-but-Steady", as Linux and ns-2) unless the "Impatient" variant is chosen;
//! - SACK (RFC 2018, RFC 6675): a scoreboard (`scoreboard.rs`) says which holes are lost;
//!   during recovery cwnd = ssthresh and segments go out while pipe < cwnd, lost holes first
//!   (NextSeg), then new data; optional FACK loss detection.
//! Delayed Congestion Response (document 004) raises the duplicate-ACK threshold to cwnd/div
//! and sends a new segment per duplicate ACK meanwhile.
//! A retransmission timeout (RFC 6298, Karn, exponential backoff) sets cwnd to one segment;
//! without SACK the sender goes back to the first unacknowledged byte, with SACK it resends
//! the holes (every unSACKed byte counts as lost, as in Linux).
//!
//! Window reduction without a loss (Linux `tcp_enter_cwr`, state CWR) has two causes: the
//! host's interface queue refusing a segment (local congestion, see `set_tx_budget`) and,
//! with ECN (RFC 3168), an ACK echoing a router's CE mark. Either sets ssthresh from the
//! algorithm and cwnd down to it, once per window of data.
//! Flow control: the receiver's window limits what is sent (RFC 9293; only ACKs that do not
//! go back, SEG.ACK >= SND.UNA, update it, as SND.WL2). When the window is zero with nothing
//! in flight, the retransmission timer becomes the persist timer (as Linux's one timer serves
//! ICSK_TIME_PROBE0): it sends a zero-length probe every RTO, doubling up to max_rto (RFC 9293
//! 3.8.6.1, Linux `tcp_probe_timer`), so a lost window update cannot stall the flow; a
//! timeout with the window closed still resends the first unacknowledged segment (Linux
//! `tcp_retransmit_skb` lets SND.UNA go beyond the window).
//!
//! Sequence numbers are 64-bit byte offsets from the start of the stream (no wrap-around).
//! The window is counted in segments as in Linux; the byte limit is `cwnd * mss`.

use super::config::{Recovery, TcpConfig};
use super::rate::RateSampler;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use crate::cc::{AckSample, CaState, CcState, CongestionControl, CwndEvent, INFINITE_SSTHRESH};
use crate::packet::{Ecn, Packet, PacketKind};
use crate::time::{transmission_time, Time, PS_PER_S};

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Recoveries started by duplicate ACKs or SACK information (fast retransmits).
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub dupacks_received: u64,
    pub acks_received: u64,
    /// When the first data segment went out.
    pub first_send_ps: Option<Time>,
    /// The end of the first slow start (a loss, or cwnd reaching ssthresh), the segments
    /// sent before it and the highest sequence sent by then (document 003's slow-start time
    /// and loss rate during slow start).
    pub slow_start_end_ps: Option<Time>,
    pub slow_start_segments_sent: u64,
    pub slow_start_end_seq: Option<u64>,
    /// The first congestion event (fast retransmit, timeout or other window reduction), the
    /// cwnd just before it, and when cwnd, back in the open state, regained 95% and 100% of
    /// that cwnd (document 003's recovery time).
    pub first_loss_ps: Option<Time>,
    pub first_loss_cwnd_segments: u32,
    pub recovered_95_ps: Option<Time>,
    pub recovered_ps: Option<Time>,
    /// Times the host's interface queue refused a segment of this flow after accepting the
    /// one before: how often the queue filled up on the sender (retries refused while it
    /// stays full are not counted again).
    pub local_congestion_events: u64,
    /// Entries into CWR (window reduced without a loss: local congestion or ECN).
    pub cwr_entries: u64,
    /// ACKs received with ECN-Echo set.
    pub ecn_echoes: u64,
    /// Zero-window probes sent by the persist timer.
    pub zero_window_probes: u64,
}

pub struct TcpSender {
    flow: u32,
    /// The connection its packets belong to (`Packet::conn`); 0 unless a workload opens several.
    pub conn: u16,
    node: u32,
    peer: u32,
    mss: u32,
    header_bytes: u32,
    dupack_threshold: u32,
    recovery: Recovery,
    fack: bool,
    dcr_div: Option<u32>,
    newreno_impatient: bool,
    timestamps: bool,
    /// The peer's latest timestamp value, echoed in our segments (RFC 7323 TS.Recent;
    /// nothing here reads the echo, captures show it).
    ts_recent: Time,
    snd_buffer: u64,
    pacing_gain: Option<f64>,
    /// Oldest unacknowledged byte (RFC 793 SND.UNA).
    pub snd_una: u64,
    /// Next byte to send (SND.NXT); below `snd_max` after a timeout (go-back-N).
    pub snd_nxt: u64,
    /// One past the highest byte ever sent.
    pub snd_max: u64,
    /// Bytes the application has written so far.
    written: u64,
    /// A bulk application keeps the send buffer full until it has written this many bytes
    /// (`u64::MAX`: without end); 0 when the application writes nothing by itself.
    bulk_target: u64,
    /// The receiver's advertised window, bytes.
    rwnd: u64,
    /// Window state shared with the congestion control algorithm.
    pub cc_state: CcState,
    cc: Box<dyn CongestionControl>,
    pub ca_state: CaState,
    /// Consecutive duplicate ACKs.
    dupacks: u32,
    /// RFC 6582 `recover`: one past the highest byte sent when the last recovery began;
    /// duplicate ACKs below it do not start another fast retransmit.
    recover: Option<u64>,
    /// cwnd when the last loss recovery began (Linux `prior_cwnd`), segments.
    pub prior_cwnd: u32,
    /// No partial ACK yet in this recovery (the Impatient variant restarts the timer on the first).
    first_partial_ack: bool,
    /// SACK scoreboard (used only with `Recovery::Sack`).
    pub scoreboard: Scoreboard,
    /// Delivery-rate sampling, for algorithms that control the window from it (BBR).
    rate: Option<RateSampler>,
    /// The algorithm sets cwnd itself (`has_cong_control`), asked once: the answer is fixed
    /// and the per-packet path should not pay a virtual call for it.
    controls: bool,
    /// Transmissions are paced (pacing_gain set, or the algorithm paces).
    paces: bool,
    /// Loss accounting for `AckSample::newly_lost_bytes` (kept with rate sampling only). With
    /// SACK: every hole below this byte has been reported lost once.
    lost_reported_below: u64,
    /// Without SACK: bytes of head segments retransmitted as lost since the last report.
    head_lost_bytes: u64,
    pub rtt: RttEstimator,
    rto_deadline: Option<Time>,
    /// The retransmission timer runs as the persist timer (zero window, nothing in flight).
    persisting: bool,
    /// Probes sent since the window closed: the persist interval is RTO x 2^this.
    persist_backoff: u32,
    /// Earliest time pacing lets the next segment go.
    next_send_ps: Time,
    /// Set while pacing holds back data that the window would allow.
    pacing_deadline: Option<Time>,
    /// Without timestamps, one segment at a time is timed (end byte, send time); Karn's
    /// algorithm discards the measurement if that segment is retransmitted.
    timed_segment: Option<(u64, Time)>,
    /// Initial window, segments: where slow start after idle restarts from.
    initial_window: u32,
    slow_start_after_idle: bool,
    /// When a data segment last went out (Linux `lsndtime`).
    last_data_sent_ps: Option<Time>,
    /// ECN negotiated (RFC 3168): new data goes out ECN-capable, ECN-Echo reduces the window.
    ecn: bool,
    /// Set CWR on the next new data segment (RFC 3168 6.1.2; Linux `TCP_ECN_QUEUE_CWR`).
    ecn_cwr_pending: bool,
    /// CWR ends when an ACK passes this byte (Linux `high_seq`: snd_nxt on entering CWR).
    cwr_high_seq: u64,
    /// Data segments the host's interface queue can still take during this call; the
    /// simulation sets it before every entry point (unlimited unless it does).
    tx_budget: u64,
    /// A segment was refused during the current send pass, and during the previous one.
    refused: bool,
    interface_blocked: bool,
    /// The last segment the sender tried to send was refused.
    last_refused: bool,
    /// The head retransmission of a recovery was refused by the interface: send it first.
    head_rtx_pending: bool,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(flow: u32, node: u32, peer: u32, cfg: &TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let mss = cfg.mss_bytes;
        let mut sender = TcpSender {
            flow,
            conn: 0,
            node,
            peer,
            mss,
            header_bytes: cfg.header_bytes(),
            dupack_threshold: cfg.dupack_threshold.max(1),
            recovery: cfg.recovery,
            fack: cfg.fack,
            dcr_div: cfg.dcr_div.filter(|&d| d > 0),
            newreno_impatient: cfg.newreno_impatient,
            timestamps: cfg.timestamps,
            ts_recent: 0,
            snd_buffer: cfg.snd_buffer_bytes,
            pacing_gain: cfg.pacing_gain,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            written: 0,
            bulk_target: 0,
            // The connection starts established: the SYN exchange told us the receiver's window.
            rwnd: cfg.advertised_window_bytes() as u64,
            cc_state: CcState {
                cwnd: cfg.initial_window_segments.max(1),
                cwnd_cnt: 0,
                ssthresh: cfg.initial_ssthresh_segments.unwrap_or(INFINITE_SSTHRESH),
                cwnd_limited: false,
                in_flight_segments: 0,
                mss_bytes: mss,
                now: 0,
                srtt: None,
                min_rtt: None,
                max_ssthresh: cfg.max_ssthresh_segments,
                delivered_bytes: 0,
            },
            cc,
            ca_state: CaState::Open,
            dupacks: 0,
            recover: None,
            prior_cwnd: 0,
            first_partial_ack: false,
            scoreboard: Scoreboard::default(),
            rate: None,
            controls: false,
            paces: false,
            lost_reported_below: 0,
            head_lost_bytes: 0,
            rtt: RttEstimator::new(cfg.initial_rto_ps, cfg.min_rto_ps, cfg.max_rto_ps),
            rto_deadline: None,
            persisting: false,
            persist_backoff: 0,
            next_send_ps: 0,
            pacing_deadline: None,
            timed_segment: None,
            initial_window: cfg.initial_window_segments.max(1),
            slow_start_after_idle: cfg.slow_start_after_idle,
            last_data_sent_ps: None,
            ecn: cfg.ecn,
            ecn_cwr_pending: false,
            cwr_high_seq: 0,
            tx_budget: u64::MAX,
            refused: false,
            interface_blocked: false,
            last_refused: false,
            head_rtx_pending: false,
            stats: SenderStats::default(),
        };
        sender.cc.init(&mut sender.cc_state);
        sender.controls = sender.cc.has_cong_control();
        sender.paces = sender.pacing_gain.is_some() || sender.controls;
        if sender.controls {
            sender.rate = Some(RateSampler::default());
        }
        sender
    }

    pub fn algorithm(&self) -> &'static str {
        self.cc.name()
    }

    pub fn mss(&self) -> u32 {
        self.mss
    }

    pub fn header_bytes(&self) -> u32 {
        self.header_bytes
    }

    /// When the retransmission timer expires, if it runs.
    pub fn rto_deadline(&self) -> Option<Time> {
        self.rto_deadline
    }

    /// When pacing next lets a segment go, if it is holding one back.
    pub fn pacing_deadline(&self) -> Option<Time> {
        self.pacing_deadline
    }

    /// How many data segments the host's interface queue can take now (Linux txqueuelen
    /// minus what waits in it, shared by every flow of the host). The simulation sets it
    /// before each call; each segment sent uses one, and a segment beyond it is not sent but
    /// stays first in line (Linux: `dev_queue_xmit` returns NET_XMIT_DROP, `tcp_write_xmit`
    /// stops, snd_nxt does not advance), and the window is reduced (CWR).
    pub fn set_tx_budget(&mut self, packets: u64) {
        self.tx_budget = packets;
    }

    /// The last send pass stopped at a segment the host's interface queue refused: the
    /// sender wants to be called again when the queue has room.
    pub fn interface_blocked(&self) -> bool {
        self.interface_blocked
    }

    /// The host's interface queue has room again (the simulation wakes senders it blocked).
    pub fn on_interface_ready(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.send(now, out);
    }

    /// Bytes sent and not yet acknowledged.
    pub fn outstanding_bytes(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The application has stopped writing and every byte it wrote is acknowledged.
    pub fn is_finished(&self) -> bool {
        self.bulk_target != u64::MAX && self.written == self.bulk_target && self.snd_una == self.written
    }

    /// A bulk ("full blast") application starts: it keeps the send buffer full until it has
    /// written `total_bytes` (None: without end).
    pub fn start_bulk(&mut self, now: Time, total_bytes: Option<u64>, out: &mut Vec<Packet>) {
        self.bulk_target = total_bytes.unwrap_or(u64::MAX);
        self.send(now, out);
    }

    /// A paced application hands over its next burst of `burst_bytes`. Returns true when the
    /// previous burst is not fully written yet (a failed burst cycle); its rest is dropped
    /// unless `carry_over`.
    pub fn write_burst(&mut self, now: Time, burst_bytes: u64, carry_over: bool, out: &mut Vec<Packet>) -> bool {
        self.refill();
        let failed = self.written < self.bulk_target;
        if failed && !carry_over {
            self.bulk_target = self.written;
        }
        self.bulk_target += burst_bytes;
        self.send(now, out);
        failed
    }

    /// The three-way handshake completed at this end (`tcp/handshake.rs`): its RTT sample
    /// seeds the estimator, as Linux's. After more than one SYN or SYN-ACK retransmission the
    /// initial window is one segment (RFC 5681 section 3.1 says after any; Linux
    /// `tcp_init_transfer` waits for a second, given the 1 s initial RTO of RFC 6298).
    pub fn on_handshake(&mut self, rtt: Option<Time>, retransmits: u32) {
        if let Some(r) = rtt {
            self.rtt.sample(r);
        }
        if retransmits > 1 && !self.controls {
            self.cc_state.cwnd = 1;
        }
    }

    /// The application stops writing; what it wrote is still delivered.
    pub fn stop_application(&mut self) {
        self.refill();
        self.bulk_target = self.written;
    }

    /// The application writes up to `bytes` into the send buffer; returns how many fit.
    pub fn write(&mut self, now: Time, bytes: u64, out: &mut Vec<Packet>) -> u64 {
        let space = (self.snd_una + self.snd_buffer).saturating_sub(self.written);
        let accepted = bytes.min(space);
        self.written += accepted;
        self.send(now, out);
        accepted
    }

    /// Bulk writing: the application tops the send buffer up whenever ACKs free space.
    fn refill(&mut self) {
        if self.bulk_target > self.written {
            self.written = self.bulk_target.min(self.snd_una + self.snd_buffer);
        }
    }

    fn segments(&self, bytes: u64) -> u32 {
        bytes.div_ceil(self.mss as u64) as u32
    }

    fn sync_cc_view(&mut self, now: Time) {
        self.cc_state.now = now;
        self.cc_state.srtt = self.rtt.srtt;
        self.cc_state.min_rtt = self.rtt.min_rtt;
        self.cc_state.in_flight_segments = self.segments(self.snd_max - self.snd_una);
    }

    fn set_ca_state(&mut self, now: Time, state: CaState) {
        if state != CaState::Open && self.stats.first_loss_ps.is_none() {
            self.end_first_slow_start(now);
            self.stats.first_loss_ps = Some(now);
            self.stats.first_loss_cwnd_segments = self.prior_cwnd.max(1);
        }
        self.ca_state = state;
        self.sync_cc_view(now);
        self.cc.set_state(&mut self.cc_state, state);
    }

    /// Records the end of the first slow start (once).
    fn end_first_slow_start(&mut self, now: Time) {
        if self.stats.slow_start_end_ps.is_none() && self.stats.first_send_ps.is_some() {
            self.stats.slow_start_end_ps = Some(now);
            // New data only: the retransmission that ends slow start may already be out.
            self.stats.slow_start_segments_sent = self.stats.segments_sent - self.stats.segments_retransmitted;
            self.stats.slow_start_end_seq = Some(self.snd_max);
        }
    }

    /// Slow start's end by growth, and recovery from the first congestion event (document
    /// 003's measures): checked after every ACK, so the times are exact.
    fn note_milestones(&mut self, now: Time) {
        let cwnd = self.cc_state.cwnd;
        if self.stats.slow_start_end_ps.is_none() && cwnd >= self.cc_state.ssthresh {
            self.end_first_slow_start(now);
        }
        if self.stats.first_loss_ps.is_some() && self.stats.recovered_ps.is_none() && self.ca_state == CaState::Open {
            let target = self.stats.first_loss_cwnd_segments as u64;
            if self.stats.recovered_95_ps.is_none() && 100 * cwnd as u64 >= 95 * target {
                self.stats.recovered_95_ps = Some(now);
            }
            if cwnd as u64 >= target {
                self.stats.recovered_ps = Some(now);
            }
        }
    }

    fn sack(&self) -> bool {
        self.recovery == Recovery::Sack
    }

    /// Bytes in the network (Linux `tcp_packets_in_flight`): with SACK the RFC 6675 pipe,
    /// otherwise every byte outstanding.
    fn in_flight_bytes(&self) -> u64 {
        if self.sack() {
            let lost = self.scoreboard.loss_boundary(self.snd_una, self.mss as u64, self.dupthresh() as u64, self.fack);
            self.scoreboard.pipe(self.snd_una, self.snd_max, lost)
        } else {
            self.snd_max - self.snd_una
        }
    }

    /// The duplicate-ACK threshold in force: with DCR, max(dupthresh, cwnd / dcr_div).
    fn dupthresh(&self) -> u32 {
        match self.dcr_div {
            Some(div) => self.dupack_threshold.max(self.cc_state.cwnd / div),
            None => self.dupack_threshold,
        }
    }

    /// The pacing rate in force, bits per second: the algorithm's own (BBR), else
    /// gain x cwnd / SRTT when pacing is on and an RTT is known.
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        if let Some(rate) = self.cc.pacing_rate_bps(&self.cc_state) {
            return Some(rate.max(1));
        }
        let gain = self.pacing_gain?;
        let srtt = self.rtt.srtt?.max(1);
        let bits = self.cc_state.cwnd as f64 * self.mss as f64 * 8.0;
        Some(((gain * bits * PS_PER_S as f64 / srtt as f64) as u64).max(1))
    }

    /// Whether pacing holds the next segment back; if so the pacing timer is set.
    fn paced_out(&mut self, now: Time) -> bool {
        if !self.paces {
            return false;
        }
        if self.pacing_rate_bps().is_some() && now < self.next_send_ps {
            self.pacing_deadline = Some(self.next_send_ps);
            return true;
        }
        false
    }

    /// The pacing timer expired.
    pub fn on_pacing_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.pacing_deadline = None;
        self.send(now, out);
    }

    /// Sends what the windows (and pacing) allow.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.refill();
        if self.snd_max == self.snd_una && self.written > self.snd_max && self.slow_start_after_idle {
            self.restart_after_idle(now);
        }
        self.pacing_deadline = None;
        self.refused = false;
        if self.head_rtx_pending {
            self.retransmit_first_unacked(now, out);
        }
        if self.sack() && matches!(self.ca_state, CaState::Recovery | CaState::Loss) {
            self.send_sack_recovery(now, out);
        } else {
            self.send_window(now, out);
        }
        if self.refused {
            // Local congestion (Linux tcp_transmit_skb: a positive return from the queue
            // calls tcp_enter_cwr).
            self.enter_cwr(now);
        }
        self.interface_blocked = self.refused;
        if self.snd_max > self.snd_una && self.rto_deadline.is_none() {
            // RFC 6298 5.1: start the timer when data goes out and it is not running.
            self.rto_deadline = Some(now + self.rtt.rto());
        } else if self.rwnd == 0
            && self.snd_max == self.snd_una
            && self.written > self.snd_una
            && self.rto_deadline.is_none()
        {
            // Data waits behind a zero window with nothing in flight: persist (Linux
            // tcp_check_probe_timer).
            self.persisting = true;
            self.rto_deadline = Some(now + self.persist_interval());
        }
        if let Some(rate) = &mut self.rate {
            let in_flight = self.snd_max - self.snd_una;
            let unsent = self.written - self.snd_max;
            if unsent < self.mss as u64 && in_flight < self.cc_state.cwnd as u64 * self.mss as u64 {
                rate.mark_app_limited(self.cc_state.delivered_bytes, in_flight);
            }
        }
    }

    /// Slow start after idle (Linux `tcp_slow_start_after_idle_check` and `tcp_cwnd_restart`,
    /// RFC 2861): new data, nothing in flight and no data sent for more than an RTO: cwnd is
    /// halved for each RTO of idle time but not below min(initial window, cwnd), and ssthresh
    /// becomes at least 3/4 of the old cwnd. Not for algorithms that set cwnd themselves (Linux skips
    /// those with `cong_control`).
    fn restart_after_idle(&mut self, now: Time) {
        let Some(last) = self.last_data_sent_ps else { return };
        let rto = self.rtt.rto();
        if self.controls || now - last <= rto {
            return;
        }
        let s = &mut self.cc_state;
        if self.ca_state == CaState::Open {
            // Linux tcp_current_ssthresh outside recovery.
            s.ssthresh = s.ssthresh.max((s.cwnd >> 1) + (s.cwnd >> 2));
        }
        let restart = self.initial_window.min(s.cwnd);
        let mut cwnd = s.cwnd;
        let mut idle = now - last;
        while idle > rto && cwnd > restart {
            idle -= rto;
            cwnd >>= 1;
        }
        s.cwnd = cwnd.max(restart);
    }

    /// Sending outside SACK recovery: everything up to SND.UNA + min(cwnd, rwnd, buffer).
    fn send_window(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mss = self.mss as u64;
        let mut cwnd_bytes = self.cc_state.cwnd as u64 * mss;
        if self.dcr_div.is_some() && matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            // DCR: each duplicate ACK releases one new segment while the response waits.
            cwnd_bytes += self.dupacks as u64 * mss;
        }
        let window = cwnd_bytes.min(self.rwnd).min(self.snd_buffer);
        let end = (self.snd_una + window).min(self.written);
        while self.snd_nxt < end {
            if self.sack() && self.snd_nxt < self.snd_max {
                // Never resend what the receiver has SACKed.
                self.snd_nxt = self.scoreboard.next_unsacked(self.snd_nxt).min(self.snd_max).max(self.snd_nxt);
                if self.snd_nxt >= end {
                    break;
                }
            }
            let len = (end - self.snd_nxt).min(mss);
            // Sender silly-window avoidance (RFC 1122 4.2.3.4): no runt segment while a full
            // one may follow, unless nothing is in flight (which would stall the connection).
            if len < mss && self.snd_nxt + len < self.written && self.snd_nxt > self.snd_una {
                break;
            }
            if self.paced_out(now) || !self.emit(now, self.snd_nxt, len as u32, out) {
                break;
            }
            self.snd_nxt += len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
        // Linux `tcp_is_cwnd_limited`: in slow start the window may grow while it is less than
        // twice what is in flight; in congestion avoidance only while the flight fills it.
        let flight = self.segments(self.snd_nxt - self.snd_una);
        self.cc_state.cwnd_limited =
            if self.cc_state.in_slow_start() { self.cc_state.cwnd < 2 * flight } else { flight >= self.cc_state.cwnd };
    }

    /// RFC 6675 section 5 (C): while cwnd - pipe >= 1 SMSS, send lost holes first (NextSeg
    /// rule 1), then new data (rule 2).
    fn send_sack_recovery(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mss = self.mss as u64;
        let lost = self.scoreboard.loss_boundary(self.snd_una, mss, self.dupthresh() as u64, self.fack);
        let mut pipe = self.scoreboard.pipe(self.snd_una, self.snd_max, lost);
        let cwnd_bytes = self.cc_state.cwnd as u64 * mss;
        let new_data_end = (self.snd_una + self.rwnd.min(self.snd_buffer)).min(self.written);
        while pipe + mss <= cwnd_bytes {
            if self.paced_out(now) {
                break;
            }
            if let Some((seq, len)) = self.scoreboard.next_lost_hole(self.snd_una, self.snd_max, lost, mss) {
                if !self.emit(now, seq, len as u32, out) {
                    break;
                }
                self.scoreboard.on_retransmit(seq, len);
                pipe += len;
            } else if self.snd_max < new_data_end {
                let len = (new_data_end - self.snd_max).min(mss);
                if (len < mss && self.snd_max + len < self.written) || !self.emit(now, self.snd_max, len as u32, out) {
                    break;
                }
                self.snd_max += len;
                self.snd_nxt = self.snd_max;
                pipe += len;
            } else {
                break;
            }
        }
        self.cc_state.cwnd_limited = pipe + mss > cwnd_bytes;
    }

    /// Sends one segment, if the host's interface queue takes it; returns false, having
    /// changed nothing but the refusal mark, when it does not (the caller stops sending).
    #[must_use]
    fn emit(&mut self, now: Time, seq: u64, len: u32, out: &mut Vec<Packet>) -> bool {
        if self.tx_budget == 0 {
            self.refused = true;
            self.stats.local_congestion_events += u64::from(!self.last_refused);
            self.last_refused = true;
            return false;
        }
        self.tx_budget -= 1;
        self.last_refused = false;
        if self.snd_max == self.snd_una {
            // Nothing in flight: time-based algorithms restart their clocks (Linux CA_EVENT_TX_START).
            self.cc.cwnd_event(&mut self.cc_state, CwndEvent::TxStart);
        }
        let retransmission = seq < self.snd_max;
        if self.stats.first_send_ps.is_none() {
            self.stats.first_send_ps = Some(now);
        }
        self.last_data_sent_ps = Some(now);
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        if retransmission {
            self.stats.segments_retransmitted += 1;
            // Karn: never take an RTT sample from a retransmitted segment.
            if matches!(self.timed_segment, Some((end, _)) if end > seq) {
                self.timed_segment = None;
            }
        } else if !self.timestamps && self.timed_segment.is_none() {
            self.timed_segment = Some((seq + len as u64, now));
        }
        if let Some(rate) = &mut self.rate {
            rate.on_send(now, seq, seq + len as u64, self.cc_state.delivered_bytes, self.snd_max == self.snd_una);
        }
        let mut ecn = Ecn::default();
        if self.ecn && !retransmission {
            // RFC 3168 6.1.5: retransmissions are not ECN-capable; CWR rides on new data.
            ecn.set(Ecn::ECT);
            if std::mem::take(&mut self.ecn_cwr_pending) {
                ecn.set(Ecn::CWR);
            }
        }
        let ip_bytes = self.header_bytes + len;
        if self.paces {
            if let Some(rate) = self.pacing_rate_bps() {
                self.next_send_ps = now + transmission_time(ip_bytes as u64, rate);
            }
        }
        out.push(Packet {
            flow: self.flow,
            conn: self.conn,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Data,
            seq,
            payload_bytes: len,
            ip_bytes,
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: now,
            ts_ecr: self.ts_recent,
            retransmission,
            ecn,
        });
        true
    }

    fn retransmit_first_unacked(&mut self, now: Time, out: &mut Vec<Packet>) {
        let len = (self.snd_max - self.snd_una).min(self.mss as u64);
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

    /// Handles one arriving ACK.
    pub fn on_ack(&mut self, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(ack_pkt.kind, PacketKind::Ack);
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
        if self.ecn && ack_pkt.ecn.has(Ecn::ECE) && ack >= self.snd_una {
            // RFC 3168 6.1.2: respond to ECN-Echo as to a loss, at most once per window; in
            // recovery the window is being reduced already (Linux tcp_try_to_open).
            self.stats.ecn_echoes += 1;
            self.enter_cwr(now);
        }
        if self.stats.recovered_ps.is_none() {
            self.note_milestones(now);
        }
        self.send(now, out);
    }

    fn on_duplicate_ack(&mut self, now: Time, out: &mut Vec<Packet>) {
        match self.ca_state {
            CaState::Recovery => {
                if matches!(self.recovery, Recovery::Reno | Recovery::Newreno) && !self.controls {
                    // Each duplicate ACK means a segment left the network: inflate
                    // (RFC 5681 3.2 step 4).
                    self.cc_state.cwnd = self.cc_state.cwnd.saturating_add(1);
                }
            }
            CaState::Open | CaState::Cwr | CaState::Loss => {
                let open = self.ca_state != CaState::Loss;
                // Classic Reno has no guard: three more duplicate ACKs start another recovery.
                let guarded = !(self.recovery == Recovery::Reno && open);
                let past_recover = !guarded || self.recover.is_none_or(|r| self.snd_una >= r);
                let sack_says_lost = self.sack()
                    && open
                    && self
                        .scoreboard
                        .loss_boundary(self.snd_una, self.mss as u64, self.dupthresh() as u64, self.fack)
                        .below
                        > self.snd_una;
                if past_recover && (self.dupacks >= self.dupthresh() || sack_says_lost) {
                    if open || self.recovery != Recovery::Sack {
                        self.enter_recovery(now, out);
                    }
                }
            }
        }
    }

    fn on_new_ack(
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
        let rtt_sample = if self.timestamps {
            Some(now.saturating_sub(ack_pkt.ts_ecr))
        } else {
            match self.timed_segment {
                Some((end, sent)) if ack >= end => {
                    self.timed_segment = None;
                    Some(now - sent)
                }
                _ => None,
            }
        };
        if let Some(r) = rtt_sample {
            self.rtt.sample(r);
        }
        let sample = AckSample {
            acked_segments: self.segments(acked_bytes),
            acked_bytes,
            rtt: rtt_sample,
            // Each byte is delivered once: SACKed bytes counted when SACKed, not again when
            // the cumulative ACK passes them (Linux counts SACKed segments out of `delivered`
            // in tcp_clean_rtx_queue).
            delivered_bytes: acked_bytes - sacked_before + newly_sacked,
            prior_in_flight_bytes: prior_in_flight,
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
        self.cc.pkts_acked(&self.cc_state, &sample);
        let controls = self.controls;

        let mut restart_timer = true;
        match self.ca_state {
            CaState::Recovery => {
                let full = self.recover.is_some_and(|r| ack >= r);
                match self.recovery {
                    Recovery::Reno => {
                        // RFC 5681 3.2 step 6: the first new ACK ends recovery; deflate.
                        if !controls {
                            self.cc_state.cwnd = self.cc_state.ssthresh;
                        }
                        self.exit_recovery(now);
                    }
                    Recovery::Newreno | Recovery::Tahoe if full => {
                        // Full ACK: deflate to min(ssthresh, FlightSize + 1 segment) so that
                        // the window does not release a burst (RFC 6582 3.2 step 3, option 1).
                        if !controls {
                            let flight = self.segments(self.snd_max - self.snd_una).max(1);
                            self.cc_state.cwnd = self.cc_state.ssthresh.min(flight + 1);
                        }
                        self.exit_recovery(now);
                    }
                    Recovery::Newreno | Recovery::Tahoe => {
                        // Partial ACK: the next hole is lost too. Retransmit it, deflate by what
                        // was acknowledged and add back one segment (RFC 6582 3.2 step 5).
                        self.retransmit_first_unacked(now, out);
                        if !controls {
                            let cwnd = self.cc_state.cwnd.saturating_sub(sample.acked_segments);
                            let add_back = u32::from(acked_bytes >= self.mss as u64);
                            self.cc_state.cwnd = (cwnd + add_back).max(1);
                        }
                        restart_timer = !self.newreno_impatient || self.first_partial_ack;
                        self.first_partial_ack = false;
                    }
                    Recovery::Sack if full => {
                        // cwnd stays at ssthresh, where recovery set it (RFC 6675 section 5).
                        self.exit_recovery(now);
                    }
                    Recovery::Sack => {}
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
            self.rto_deadline = Some(now + self.rtt.rto()); // RFC 6298 5.3
        }
    }

    fn fill_rate_sample(&mut self, now: Time, sample: &mut AckSample) {
        if let Some(r) = &mut self.rate {
            let rs = r.finish_ack(now, self.cc_state.delivered_bytes, self.rtt.min_rtt);
            sample.delivery_rate_bps = rs.delivery_rate_bps;
            sample.is_app_limited = rs.is_app_limited;
            sample.prior_delivered_bytes = rs.prior_delivered_bytes;
            sample.in_flight_bytes = self.in_flight_bytes();
            sample.newly_lost_bytes = self.take_newly_lost_bytes();
        }
    }

    /// Bytes marked lost since the last report (Linux `tp->lost` minus its value before the
    /// ACK). With SACK a hole is lost once it falls below the loss boundary; each hole is
    /// reported once, when the boundary first passes it.
    fn take_newly_lost_bytes(&mut self) -> u64 {
        let mut lost = std::mem::take(&mut self.head_lost_bytes);
        if self.sack() {
            let boundary =
                self.scoreboard.loss_boundary(self.snd_una, self.mss as u64, self.dupthresh() as u64, self.fack);
            let below = boundary.below.min(self.snd_max);
            let from = self.lost_reported_below.max(self.snd_una);
            if below > from {
                lost += self.scoreboard.unsacked_bytes(from, below);
                self.lost_reported_below = below;
            }
        }
        lost
    }

    /// Hands an ACK to an algorithm that controls cwnd itself, and lets it mark the rate
    /// samples of what follows as application-limited (BBR's PROBE_RTT).
    fn cong_control(&mut self, sample: &AckSample) {
        self.cc.cong_control(&mut self.cc_state, sample);
        if self.cc.marks_app_limited() {
            if let Some(r) = &mut self.rate {
                r.mark_app_limited(self.cc_state.delivered_bytes, self.snd_max - self.snd_una);
            }
        }
    }

    fn exit_recovery(&mut self, now: Time) {
        self.head_rtx_pending = false;
        self.cc_state.cwnd_cnt = 0;
        self.dupacks = 0;
        self.set_ca_state(now, CaState::Open);
    }

    /// Duplicate ACKs (or SACK information) signal a loss.
    fn enter_recovery(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.fast_retransmits += 1;
        self.sync_cc_view(now);
        let dupthresh = self.dupthresh();
        if self.ca_state != CaState::Cwr {
            self.prior_cwnd = self.cc_state.cwnd;
            self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
            self.ecn_cwr_pending = self.ecn;
        }
        // From CWR the window was reduced for this window of data already: ssthresh stays
        // (Linux tcp_enter_recovery only recomputes it below CWR).
        self.recover = Some(self.snd_max);
        self.cc_state.cwnd_cnt = 0;
        let controls = self.controls;
        match self.recovery {
            Recovery::Tahoe => {
                // Slow start from one segment, resending from the hole (go-back-N).
                if !controls {
                    self.cc_state.cwnd = 1;
                }
                if self.rate.is_some() {
                    self.head_lost_bytes += (self.snd_max - self.snd_una).min(self.mss as u64);
                }
                self.snd_nxt = self.snd_una;
                self.timed_segment = None;
                self.set_ca_state(now, CaState::Loss);
            }
            Recovery::Reno | Recovery::Newreno => {
                self.retransmit_first_unacked(now, out);
                // RFC 5681 3.2 step 3: inflate by the segments that have left the network.
                if !controls {
                    self.cc_state.cwnd = self.cc_state.ssthresh.saturating_add(dupthresh);
                }
                self.first_partial_ack = true;
                self.set_ca_state(now, CaState::Recovery);
            }
            Recovery::Sack => {
                self.scoreboard.start_recovery(self.snd_una);
                if !controls {
                    self.cc_state.cwnd = self.cc_state.ssthresh; // RFC 6675 section 5 step 4.2
                }
                // The first hole goes out at once, lost by the rule or not (RFC 6675 step 4.3).
                self.retransmit_first_unacked(now, out);
                self.set_ca_state(now, CaState::Recovery);
            }
        }
    }

    /// Reduces the window without a loss (Linux `tcp_enter_cwr`): ssthresh from the algorithm
    /// (so HighSpeed and Scalable back off by their own b), cwnd down to it, state CWR until
    /// everything sent so far is acknowledged. Only from the open state: once per window of
    /// data, and never on top of a recovery, which reduces the window already.
    ///
    /// cwnd falls to ssthresh at once, as this sender does on a fast retransmit (RFC 5681,
    /// RFC 6675). Linux lowers it gradually to the same end point within the round trip:
    /// 2.4/2.6 by one segment every second ACK (`tcp_cwnd_down`, rate halving, then
    /// `tcp_complete_cwr` sets cwnd = min(cwnd, ssthresh)), 3.2 and later by Proportional
    /// Rate Reduction (RFC 6937). The immediate cut sends nothing until the flight falls
    /// below the new window instead of one segment per two ACKs meanwhile: the same data
    /// per round trip, sent later in it.
    fn enter_cwr(&mut self, now: Time) {
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
        self.ecn_cwr_pending = self.ecn;
        self.set_ca_state(now, CaState::Cwr);
    }

    /// The retransmission timer expired.

    /// The persist interval: the RTO (at least min_rto), doubled per unanswered probe, at most
    /// max_rto (Linux `tcp_probe0_when`).
    fn persist_interval(&self) -> Time {
        self.rtt.rto().checked_shl(self.persist_backoff).unwrap_or(Time::MAX).min(self.rtt.max_rto())
    }

    /// The persist timer expired: a zero-length segment at SND.UNA makes the receiver answer
    /// with its current window (Linux sends an old sequence number, `tcp_xmit_probe_skb`).
    fn send_zero_window_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.zero_window_probes += 1;
        out.push(Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Data,
            seq: self.snd_una,
            payload_bytes: 0,
            ip_bytes: self.header_bytes,
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: now,
            ts_ecr: self.ts_recent,
            retransmission: false,
            conn: self.conn,
            ecn: Ecn::default(),
        });
        if self.persist_interval() < self.rtt.max_rto() {
            self.persist_backoff += 1;
        }
        self.rto_deadline = Some(now + self.persist_interval());
    }

    /// The retransmission timer expired (or, with a zero window, the persist timer).
    pub fn on_rto_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rto_deadline = None;
        if self.persisting {
            self.send_zero_window_probe(now, out);
            return;
        }
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
        self.ecn_cwr_pending = self.ecn;
        self.rtt.back_off();
        self.set_ca_state(now, CaState::Loss);
        let sent_before = out.len();
        self.send(now, out);
        if self.rwnd == 0 && out.len() == sent_before && self.snd_nxt == self.snd_una {
            // The head goes out even with the window closed (Linux tcp_retransmit_skb), so a
            // lost window update cannot leave the flow waiting for ever.
            let len = (self.snd_max - self.snd_una).min(self.mss as u64);
            self.retransmit_first_unacked(now, out);
            self.snd_nxt += len;
        }
        self.rto_deadline = Some(now + self.rtt.rto());
    }
}
