//! The TCP sender: windowing, RTT and retransmission timeout, pacing, and the hand-over to
//! its loss detection and recovery stack.
//!
//! Loss detection and recovery are the TCP core's, not the congestion control's (as in
//! Linux), in one of two stacks chosen per flow (`Stack`, set by the scenario's profile),
//! each in `tcp/recovery/`: the RFC stack (`rfc.rs`, with one file per variant: Tahoe,
//! Reno, NewReno, RFC 6675 SACK) and the Linux stack (`linux.rs` and the files it names:
//! RACK-TLP, PRR, undo, adaptive reordering). This file holds what both share: the
//! connection's state, the application's writes, the send window and the emission of a
//! segment, pacing, RTT sampling helpers, and the reports to the
//! milestone observer (`milestones.rs`); `send`, `on_ack`, `on_rto_timer` and `enter_cwr` hand over to the
//! flow's stack.
//!
//! Window reduction without a loss (Linux `tcp_enter_cwr`, state CWR) has two causes: the
//! host's interface queue refusing a segment (local congestion, see `set_tx_budget`) and,
//! with ECN (RFC 3168), an ACK echoing a router's CE mark. Either sets ssthresh from the
//! algorithm and cwnd down to it, once per window of data.
//! Flow control: the receiver's window limits what is sent (RFC 9293; only ACKs that do not
//! go back, SEG.ACK >= SND.UNA, update it, as SND.WL2). When the window is zero with nothing
//! in flight, the retransmission timer becomes the persist timer (as Linux's one timer serves
//! ICSK_TIME_PROBE0): it sends a zero-length probe every RTO, doubling up to max_rto (RFC 9293
//! 3.8.6.1, Linux `tcp_probe_timer`; `persist.rs`), so a lost window update cannot stall the flow; a
//! timeout with the window closed still resends the first unacknowledged segment (Linux
//! `tcp_retransmit_skb` lets SND.UNA go beyond the window).
//!
//! Sequence numbers are 64-bit byte offsets from the start of the stream (no wrap-around).
//! The window is counted in segments as in Linux; the byte limit is `cwnd * mss`.

use super::ack_timing::AckTiming;
use super::config::{Recovery, RtoEstimator, SackVariant, Stack, TcpConfig};
use super::milestones::{Milestones, SenderView};
use super::rate::RateSampler;
use super::recovery::linux::LinuxState;
use super::recovery::prr::WindowReduction;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::send_delay::RandomSendDelay;
pub use super::stats::SenderStats;
use crate::cc::{AckSample, CaState, CcState, CongestionControl, CwndEvent, INFINITE_SSTHRESH};
use crate::packet::{Ecn, Packet, PacketKind};
use crate::time::{transmission_time, Time, PS_PER_S};

pub struct TcpSender {
    pub(crate) flow: u32,
    /// The connection its packets belong to (`Packet::conn`); 0 unless a workload opens several.
    pub conn: u16,
    pub(crate) node: u32,
    pub(crate) peer: u32,
    pub(crate) mss: u32,
    pub(crate) header_bytes: u32,
    pub(crate) dupack_threshold: u32,
    pub(crate) recovery: Recovery,
    pub(crate) fack: bool,
    pub(crate) dcr_div: Option<u32>,
    pub(crate) newreno_impatient: bool,
    pub(crate) timestamps: bool,
    /// The peer's latest timestamp value, echoed in our segments (RFC 7323 TS.Recent;
    /// nothing here reads the echo, captures show it).
    pub(crate) ts_recent: Time,
    pub(crate) snd_buffer: u64,
    pub(crate) pacing_gain: Option<f64>,
    /// The host's cap on this flow's sending rate, IP bits/s (`TcpConfig::max_send_rate_bps`).
    pub(crate) max_send_rate_bps: Option<u64>,
    /// Oldest unacknowledged byte (RFC 793 SND.UNA).
    pub snd_una: u64,
    /// Next byte to send (SND.NXT); below `snd_max` after a timeout (go-back-N).
    pub snd_nxt: u64,
    /// One past the highest byte ever sent.
    pub snd_max: u64,
    /// Bytes the application has written so far.
    pub(crate) written: u64,
    /// A bulk application keeps the send buffer full until it has written this many bytes
    /// (`u64::MAX`: without end); 0 when the application writes nothing by itself.
    pub(crate) bulk_target: u64,
    /// The receiver's advertised window, bytes.
    pub(crate) rwnd: u64,
    /// Window state shared with the congestion control algorithm.
    pub cc_state: CcState,
    pub(crate) cc: Box<dyn CongestionControl>,
    pub ca_state: CaState,
    /// Consecutive duplicate ACKs.
    pub(crate) dupacks: u32,
    /// RFC 6582 `recover`: one past the highest byte sent when the last recovery began;
    /// duplicate ACKs below it do not start another fast retransmit.
    pub(crate) recover: Option<u64>,
    /// cwnd when the last loss recovery began (Linux `prior_cwnd`), segments.
    pub prior_cwnd: u32,
    /// No partial ACK yet in this recovery (the Impatient variant restarts the timer on the first).
    pub(crate) first_partial_ack: bool,
    /// SACK scoreboard (used only with `Recovery::Sack`).
    pub scoreboard: Scoreboard,
    /// Delivery-rate sampling, for algorithms that control the window from it (BBR).
    pub(crate) rate: Option<RateSampler>,
    /// Every segment's send time, for algorithms that time every ACK on the RFC stack
    /// without timestamps (`ack_timing.rs`).
    pub(crate) ack_timing: Option<AckTiming>,
    /// The algorithm sets cwnd itself (`has_cong_control`), asked once: the answer is fixed
    /// and the per-packet path should not pay a virtual call for it.
    pub(crate) controls: bool,
    /// Transmissions are paced (pacing_gain set, or the algorithm paces).
    pub(crate) paces: bool,
    /// Loss accounting for `AckSample::newly_lost_bytes` (kept with rate sampling only). With
    /// SACK: every hole below this byte has been reported lost once.
    pub(crate) lost_reported_below: u64,
    /// Without SACK: bytes of head segments retransmitted as lost since the last report.
    pub(crate) head_lost_bytes: u64,
    pub rtt: RttEstimator,
    pub(crate) rto_deadline: Option<Time>,
    /// The retransmission timer runs as the persist timer (zero window, nothing in flight).
    pub(crate) persisting: bool,
    /// Probes sent since the window closed: the persist interval is RTO x 2^this.
    pub(crate) persist_backoff: u32,
    /// Earliest time pacing lets the next segment go.
    pub(crate) next_send_ps: Time,
    /// Set while pacing (or the random send delay) holds back data the window would allow.
    pub(crate) pacing_deadline: Option<Time>,
    /// ns-2's `overhead_`: a random wait before each send pass (`send_delay.rs`); None: off.
    pub(crate) send_delay: Option<RandomSendDelay>,
    /// Without timestamps, one segment at a time is timed (end byte, send time); Karn's
    /// algorithm discards the measurement if that segment is retransmitted.
    pub(crate) timed_segment: Option<(u64, Time)>,
    /// A segment shorter than the MSS sent with nothing else outstanding, not retransmitted
    /// since: (seq, end, delivered bytes when sent). Its lone ACK may have been delayed
    /// (`AckSample::is_ack_delayed`, Linux `FLAG_ACK_MAYBE_DELAYED`).
    pub(crate) lone_runt: Option<(u64, u64, u64)>,
    /// Initial window, segments: where slow start after idle restarts from.
    pub(crate) initial_window: u32,
    pub(crate) slow_start_after_idle: bool,
    /// When a data segment last went out (Linux `lsndtime`).
    pub(crate) last_data_sent_ps: Option<Time>,
    /// ECN negotiated (RFC 3168): new data goes out ECN-capable, ECN-Echo reduces the window.
    pub(crate) ecn: bool,
    /// Set CWR on the next new data segment (RFC 3168 6.1.2; Linux `TCP_ECN_QUEUE_CWR`).
    pub(crate) ecn_cwr_pending: bool,
    /// CWR ends when an ACK passes this byte (Linux `high_seq`: snd_nxt on entering CWR).
    pub(crate) cwr_high_seq: u64,
    /// Data segments the host's interface queue can still take during this call; the
    /// simulation sets it before every entry point (unlimited unless it does).
    pub(crate) tx_budget: u64,
    /// A segment was refused during the current send pass, and during the previous one.
    pub(crate) refused: bool,
    pub(crate) interface_blocked: bool,
    /// The last segment the sender tried to send was refused.
    pub(crate) last_refused: bool,
    /// The head retransmission of a recovery was refused by the interface: send it first.
    pub(crate) head_rtx_pending: bool,
    pub stats: SenderStats,
    /// Document 003's milestones, watched from outside the recovery (`milestones.rs`).
    pub milestones: Milestones,
    /// The loss detection and recovery in force (`tcp/recovery/`); the Linux stack's state.
    pub(crate) stack: Stack,
    pub(crate) lx: LinuxState,
    /// RFC stack: RFC 3042 limited transmit.
    pub(crate) limited_transmit: bool,
    /// RFC stack: every timeout lowers ssthresh (`TcpConfig::ssthresh_every_timeout`).
    pub(crate) ssthresh_every_timeout: bool,
    /// RFC stack: Reno's fast retransmits are guarded by `recover` (`TcpConfig::reno_recover_guard`).
    pub(crate) reno_recover_guard: bool,
    /// RFC stack: which SACK recovery (`TcpConfig::sack_variant`), and Sack1's pipe counter
    /// (segments; may go below zero, as ns-2's `pipe_`).
    pub(crate) sack_variant: SackVariant,
    pub(crate) sack1_pipe: i64,
    pub(crate) rto_estimator: RtoEstimator,
    /// Linux stack members (`TcpConfig`).
    pub(crate) rack_enabled: bool,
    pub(crate) tlp_enabled: bool,
    pub(crate) frto_enabled: bool,
    pub(crate) undo_enabled: bool,
    pub(crate) window_reduction: WindowReduction,
    pub(crate) adaptive_reordering: bool,
    pub(crate) max_reordering: u32,
    pub(crate) initial_rto: Time,
    /// F-RTO step 2b: the next send pass sends new data rather than retransmissions.
    pub(crate) frto_send_new: bool,
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
            max_send_rate_bps: cfg.max_send_rate_bps.filter(|&r| r > 0),
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
                rttvar: 0,
                min_rtt: None,
                max_ssthresh: cfg.max_ssthresh_segments,
                delivered_bytes: 0,
                snd_una: 0,
                snd_nxt: 0,
                last_send_ps: None,
                paces: false,
            },
            cc,
            ca_state: CaState::Open,
            dupacks: 0,
            recover: None,
            prior_cwnd: 0,
            first_partial_ack: false,
            scoreboard: Scoreboard::default(),
            rate: None,
            ack_timing: None,
            controls: false,
            paces: false,
            lost_reported_below: 0,
            head_lost_bytes: 0,
            rtt: match (cfg.rto_estimator, cfg.slow_timer_ps) {
                (RtoEstimator::Bsd, Some(tick)) => {
                    RttEstimator::new(cfg.initial_rto_ps, cfg.min_rto_ps, cfg.max_rto_ps).with_bsd_timer(tick)
                }
                _ => RttEstimator::new(cfg.initial_rto_ps, cfg.min_rto_ps, cfg.max_rto_ps),
            },
            rto_deadline: None,
            persisting: false,
            persist_backoff: 0,
            next_send_ps: 0,
            pacing_deadline: None,
            send_delay: None,
            timed_segment: None,
            lone_runt: None,
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
            milestones: Milestones::default(),
            stack: cfg.stack,
            lx: LinuxState::new(cfg.dupack_threshold.max(1)),
            limited_transmit: cfg.limited_transmit,
            ssthresh_every_timeout: cfg.ssthresh_every_timeout,
            reno_recover_guard: cfg.reno_recover_guard,
            sack_variant: cfg.sack_variant,
            sack1_pipe: 0,
            rto_estimator: cfg.rto_estimator,
            rack_enabled: cfg.rack,
            tlp_enabled: cfg.tlp,
            frto_enabled: cfg.frto,
            undo_enabled: cfg.undo,
            window_reduction: cfg.window_reduction,
            adaptive_reordering: cfg.adaptive_reordering,
            max_reordering: cfg.max_reordering_segments.max(1),
            initial_rto: cfg.initial_rto_ps,
            frto_send_new: false,
        };
        sender.cc.init(&mut sender.cc_state);
        sender.controls = sender.cc.has_cong_control();
        sender.paces = sender.pacing_gain.is_some() || sender.controls || sender.max_send_rate_bps.is_some();
        sender.cc_state.paces = sender.paces;
        if sender.controls {
            sender.rate = Some(RateSampler::default());
        }
        if sender.stack == Stack::Rfc && !sender.timestamps && sender.cc.times_every_ack() {
            sender.ack_timing = Some(AckTiming::default());
        }
        sender
    }

    /// Waits a random time before each send pass (ns-2 `overhead_`, `send_delay.rs`).
    pub fn set_random_send_delay(&mut self, delay: RandomSendDelay) {
        self.send_delay = Some(delay);
    }

    /// The reordering degree the Linux stack has learnt, segments (Linux `tp->reordering`);
    /// the duplicate-ACK threshold in the RFC stack.
    pub fn reordering_segments(&self) -> u32 {
        match self.stack {
            Stack::Linux => self.lx.reordering,
            Stack::Rfc => self.dupack_threshold,
        }
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

    pub(crate) fn segments(&self, bytes: u64) -> u32 {
        bytes.div_ceil(self.mss as u64) as u32
    }

    pub(crate) fn sync_cc_view(&mut self, now: Time) {
        self.cc_state.now = now;
        self.cc_state.srtt = self.rtt.srtt;
        self.cc_state.rttvar = self.rtt.rttvar;
        // An algorithm that times its own segments keeps its own base RTT (ns-2's Vegas,
        // v_baseRTT_), over data segments only: see `ack_timing.rs`.
        self.cc_state.min_rtt = self.ack_timing.as_ref().map_or(self.rtt.min_rtt, |t| t.min_rtt_ps);
        self.cc_state.in_flight_segments = self.segments(self.snd_max - self.snd_una);
        (self.cc_state.snd_una, self.cc_state.snd_nxt) = (self.snd_una, self.snd_max);
        self.cc_state.last_send_ps = self.last_data_sent_ps;
    }

    /// What the milestone observer sees of this sender.
    pub(crate) fn milestone_view(&self, now: Time) -> SenderView {
        SenderView {
            now,
            cwnd: self.cc_state.cwnd,
            ssthresh: self.cc_state.ssthresh,
            ca_state: self.ca_state,
            new_segments_sent: self.stats.segments_sent - self.stats.segments_retransmitted,
            snd_max: self.snd_max,
            started: self.stats.first_send_ps.is_some(),
        }
    }

    /// An ACK has been processed: the milestone observer looks (until it has seen them all).
    pub(crate) fn note_milestones(&mut self, now: Time) {
        if !self.milestones.done() {
            let view = self.milestone_view(now);
            self.milestones.after_ack(&view);
        }
    }

    pub(crate) fn set_ca_state(&mut self, now: Time, state: CaState) {
        self.ca_state = state;
        let view = self.milestone_view(now);
        self.milestones.on_state(&view, self.prior_cwnd);
        self.sync_cc_view(now);
        self.cc.set_state(&mut self.cc_state, state);
    }

    /// Bytes in the network (Linux `tcp_packets_in_flight`): with SACK the RFC 6675 pipe,
    /// otherwise every byte outstanding.
    pub(crate) fn in_flight_bytes(&self) -> u64 {
        if self.stack == Stack::Linux {
            return self.lx.q.in_flight() as u64 * self.mss as u64;
        }
        if self.sack() {
            let lost = self.scoreboard.loss_boundary(self.snd_una, self.mss as u64, self.dupthresh() as u64, self.fack);
            self.scoreboard.pipe(self.snd_una, self.snd_max, lost)
        } else {
            self.snd_max - self.snd_una
        }
    }

    /// The pacing rate in force, bits per second: the algorithm's own (BBR), else
    /// gain x cwnd / SRTT when pacing is on and an RTT is known; never above the host's cap.
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        let own = self.cc.pacing_rate_bps(&self.cc_state).map(|r| r.max(1)).or_else(|| {
            let gain = self.pacing_gain?;
            let srtt = self.rtt.srtt?.max(1);
            let bits = self.cc_state.cwnd as f64 * self.mss as f64 * 8.0;
            Some(((gain * bits * PS_PER_S as f64 / srtt as f64) as u64).max(1))
        });
        match (own, self.max_send_rate_bps) {
            (Some(rate), Some(cap)) => Some(rate.min(cap)),
            (rate, cap) => rate.or(cap),
        }
    }

    /// Whether pacing, or the random send delay, holds the next segment back; if so the
    /// pacing timer is set.
    pub(crate) fn paced_out(&mut self, now: Time) -> bool {
        if self.paces && self.pacing_rate_bps().is_some() && now < self.next_send_ps {
            self.pacing_deadline = Some(self.next_send_ps);
            return true;
        }
        if let Some(wait_until) = self.send_delay.as_mut().and_then(|d| d.hold(now)) {
            self.pacing_deadline = Some(wait_until);
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
        match self.stack {
            Stack::Linux => self.send_linux(now, out),
            Stack::Rfc => self.send_rfc(now, out),
        }
        if let Some(d) = &mut self.send_delay {
            d.end_pass();
        }
        if self.refused {
            // Local congestion (Linux tcp_transmit_skb: a positive return from the queue
            // calls tcp_enter_cwr).
            self.enter_cwr(now);
        }
        self.interface_blocked = self.refused;
        // The Linux stack arms its timer slot itself (`linux_send.rs`).
        if self.stack != Stack::Linux && self.snd_max > self.snd_una && self.rto_deadline.is_none() {
            // RFC 6298 5.1: start the timer when data goes out and it is not running.
            self.rto_deadline = Some(self.rtt.deadline(now));
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
    pub(crate) fn restart_after_idle(&mut self, now: Time) {
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
        self.cc.cwnd_event(&mut self.cc_state, CwndEvent::CwndRestart);
    }

    /// Sending outside SACK recovery: everything up to SND.UNA + min(cwnd, rwnd, buffer).
    pub(crate) fn send_window(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mss = self.mss as u64;
        let mut cwnd_bytes = self.cc_state.cwnd as u64 * mss;
        if self.dcr_div.is_some() && matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            // DCR: each duplicate ACK releases one new segment while the response waits.
            cwnd_bytes += self.dupacks as u64 * mss;
        } else if self.limited_transmit && matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            // RFC 3042: the first two duplicate ACKs each release one new segment.
            cwnd_bytes += self.dupacks.min(2) as u64 * mss;
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

    /// Sends one segment, if the host's interface queue takes it; returns false, having
    /// changed nothing but the refusal mark, when it does not (the caller stops sending).
    #[must_use]
    pub(crate) fn emit(&mut self, now: Time, seq: u64, len: u32, out: &mut Vec<Packet>) -> bool {
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
            self.sync_cc_view(now);
            self.cc.cwnd_event(&mut self.cc_state, CwndEvent::TxStart);
        }
        let retransmission = seq < self.snd_max;
        self.note_lone_runt(seq, seq + len as u64, retransmission);
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
        if let Some(timing) = &mut self.ack_timing {
            timing.on_send(now, seq, seq + len as u64);
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
                // Linux spaces segments by their payload (tcp_update_skb_after_send: skb->len
                // at the rate, which BBR and tcp_update_pacing_rate state in payload bytes);
                // the RFC stack, as fatpipe always did, by the IP packet.
                let paced_bytes = if self.stack == Stack::Linux { len } else { ip_bytes };
                self.next_send_ps = now + transmission_time(paced_bytes as u64, rate);
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

    /// Handles one arriving ACK.
    pub fn on_ack(&mut self, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(ack_pkt.kind, PacketKind::Ack);
        match self.stack {
            Stack::Linux => self.on_ack_linux(now, ack_pkt, out),
            Stack::Rfc => self.on_ack_rfc(now, ack_pkt, out),
        }
    }
    /// Remembers a segment shorter than the MSS sent with nothing else outstanding (Linux keeps
    /// `end_seq - snd_una` per segment, `tx.in_flight`); a retransmission forgets it.
    pub(crate) fn note_lone_runt(&mut self, seq: u64, end: u64, retransmission: bool) {
        if retransmission {
            self.lone_runt = self.lone_runt.filter(|&(s, e, _)| seq >= e || end <= s);
        } else if end - self.snd_una < self.mss as u64 {
            self.lone_runt = Some((seq, end, self.cc_state.delivered_bytes));
        }
    }

    /// Linux's `FLAG_ACK_MAYBE_DELAYED` (`tcp_clean_rtx_queue`): this ACK acknowledges exactly
    /// the lone runt, nothing was delivered since it left, and the ACK has no SACK or ECE.
    pub(crate) fn ack_maybe_delayed(&mut self, ack: u64, acked_bytes: u64, sacked_bytes: u64, ece: bool) -> bool {
        let Some((seq, end, delivered)) = self.lone_runt else { return false };
        if ack < end {
            return false;
        }
        self.lone_runt = None;
        seq == self.snd_una
            && ack == end
            && sacked_bytes == 0
            && !ece
            && self.cc_state.delivered_bytes == delivered
            && acked_bytes == end - seq
    }

    pub(crate) fn fill_rate_sample(&mut self, now: Time, sample: &mut AckSample) {
        if let Some(r) = &mut self.rate {
            let rs = r.finish_ack(now, self.cc_state.delivered_bytes, self.rtt.min_rtt);
            sample.delivery_rate_bps = rs.delivery_rate_bps;
            sample.is_app_limited = rs.is_app_limited;
            sample.prior_delivered_bytes = rs.prior_delivered_bytes;
            sample.in_flight_bytes = self.in_flight_bytes();
            sample.newly_lost_bytes = self.take_newly_lost_bytes();
        }
    }

    /// Hands an ACK to an algorithm that controls cwnd itself, and lets it mark the rate
    /// samples of what follows as application-limited (BBR's PROBE_RTT).
    pub(crate) fn cong_control(&mut self, sample: &AckSample) {
        self.cc.cong_control(&mut self.cc_state, sample);
        if self.cc.marks_app_limited() {
            if let Some(r) = &mut self.rate {
                r.mark_app_limited(self.cc_state.delivered_bytes, self.snd_max - self.snd_una);
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
    pub(crate) fn enter_cwr(&mut self, now: Time) {
        match self.stack {
            Stack::Linux => self.lx_enter_cwr(now),
            Stack::Rfc => self.enter_cwr_rfc(now),
        }
    }
    /// The retransmission timer expired (or, with a zero window, the persist timer).
    pub fn on_rto_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rto_deadline = None;
        if self.persisting {
            self.send_zero_window_probe(now, out);
            return;
        }
        match self.stack {
            Stack::Linux => self.on_xmit_timer_linux(now, out),
            Stack::Rfc => self.on_rto_timer_rfc(now, out),
        }
    }
}
