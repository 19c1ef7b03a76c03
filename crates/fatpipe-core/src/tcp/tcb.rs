//! The sender's transmission control block (RFC 9293 3.3.1's TCB; Linux `struct tcp_sock`):
//! what every loss detection and recovery stack shares -- the connection's settings, the
//! sequence space, the windows, the RTT estimator and the retransmission timer's deadline,
//! pacing, the congestion control and the counters -- and the mechanisms that work on it
//! alone: sending one segment (`emit`), pacing, slow start after idle, the congestion
//! control's view, the reports to the milestone observer, and the persist timer
//! (`persist.rs`). The stacks (`tcp/stack/`) own what differs between them and take the
//! TCB as an argument; the sender (`sender.rs`) holds one TCB and one stack.
//!
//! Sequence numbers are 64-bit byte offsets from the start of the stream (no wrap-around).
//! The window is counted in segments as in Linux; the byte limit is `cwnd * mss`.

use super::ack_timing::AckTiming;
use super::config::{Recovery, RtoEstimator, TcpConfig};
use super::milestones::{Milestones, SenderView};
use super::rate::RateSampler;
use super::rtt::RttEstimator;
use super::send_delay::RandomSendDelay;
use super::stats::SenderStats;
use crate::cc::{AckSample, CaState, CcState, CongestionControl, CwndEvent, INFINITE_SSTHRESH};
use crate::host::{fq, pacing, tso, tsq, HostConfig};
use crate::packet::{Ecn, Packet, PacketKind};
use crate::time::{transmission_time, Time, PS_PER_S};

pub struct Tcb {
    pub(crate) flow: u32,
    /// The connection its packets belong to (`Packet::conn`); 0 unless a workload opens several.
    pub conn: u16,
    pub(crate) node: u32,
    pub(crate) peer: u32,
    /// The connection's settings, as `TcpConfig::for_sender` leaves them: the one copy
    /// every part of the sender reads.
    pub(crate) cfg: TcpConfig,
    /// The peer's latest timestamp value, echoed in our segments (RFC 7323 TS.Recent;
    /// nothing here reads the echo, captures show it).
    pub(crate) ts_recent: Time,
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
    /// cwnd when the last loss recovery began (Linux `prior_cwnd`), segments.
    pub prior_cwnd: u32,
    /// Delivery-rate sampling, for algorithms that control the window from it (BBR).
    pub(crate) rate: Option<RateSampler>,
    /// Every segment's send time, for algorithms that time every ACK on the RFC stack
    /// without timestamps (`ack_timing.rs`); the RFC stack sets it up.
    pub(crate) ack_timing: Option<AckTiming>,
    /// The algorithm sets cwnd itself (`has_cong_control`), asked once: the answer is fixed
    /// and the per-packet path should not pay a virtual call for it.
    pub(crate) controls: bool,
    /// Transmissions are paced (pacing_gain set, or the algorithm paces).
    pub(crate) paces: bool,
    /// Pacing spaces segments by their payload, as Linux does (`tcp_update_skb_after_send`:
    /// skb->len at the rate, which BBR and `tcp_update_pacing_rate` state in payload bytes);
    /// false: by the IP packet, as the RFC stack always did. The stack sets it.
    pub(crate) paces_payload: bool,
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
    /// The packet being handed out (`host/tso.rs`): a TSO super-segment, or with TSO off
    /// one segment; only with the host's elements.
    pub(crate) train: tso::Train,
    /// fq's earliest departure for the flow's next packet (`host/fq.rs`), with fq's maxrate.
    pub(crate) fq_next_ps: Option<Time>,
    /// TCP Small Queues (`host/tsq.rs`): the bytes below TCP; only with the host's `tsq`.
    pub(crate) tsq: Option<Box<tsq::Tsq>>,
    /// ns-2's `overhead_`: a random wait before each send pass (`send_delay.rs`); None: off.
    pub(crate) send_delay: Option<RandomSendDelay>,
    /// Without timestamps, one segment at a time is timed (end byte, send time); Karn's
    /// algorithm discards the measurement if that segment is retransmitted.
    pub(crate) timed_segment: Option<(u64, Time)>,
    /// A segment shorter than the MSS sent with nothing else outstanding, not retransmitted
    /// since: (seq, end, delivered bytes when sent). Its lone ACK may have been delayed
    /// (`AckSample::is_ack_delayed`, Linux `FLAG_ACK_MAYBE_DELAYED`).
    pub(crate) lone_runt: Option<(u64, u64, u64)>,
    /// When a data segment last went out (Linux `lsndtime`).
    pub(crate) last_data_sent_ps: Option<Time>,
    /// Set CWR on the next new data segment (RFC 3168 6.1.2; Linux `TCP_ECN_QUEUE_CWR`).
    pub(crate) ecn_cwr_pending: bool,
    /// The ECN codepoint of new data: ECT(0), or ECT(1) when the algorithm asks for it.
    pub(crate) ect: Ecn,
    /// Accurate ECN (RFC 9768): what the receiver has reported so far.
    pub(crate) accecn: crate::tcp::receiver::AccEcnSender,
    /// Data segments the host's interface queue can still take during this call; the
    /// simulation sets it before every entry point (unlimited unless it does).
    pub(crate) tx_budget: u64,
    /// A segment was refused during the current send pass, and during the previous one.
    pub(crate) refused: bool,
    pub(crate) interface_blocked: bool,
    /// The last segment the sender tried to send was refused.
    pub(crate) last_refused: bool,
    pub stats: SenderStats,
    /// Document 003's milestones, watched from outside the recovery (`milestones.rs`).
    pub milestones: Milestones,
}

impl Tcb {
    pub(crate) fn new(flow: u32, node: u32, peer: u32, cfg: &TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let cfg = cfg.for_sender();
        let mut tcb = Tcb {
            flow,
            conn: 0,
            node,
            peer,
            ts_recent: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            written: 0,
            bulk_target: 0,
            // The connection starts established: the SYN exchange told us the receiver's window.
            rwnd: cfg.advertised_window_bytes() as u64,
            cc_state: CcState {
                cwnd: cfg.initial_window_segments,
                cwnd_cnt: 0,
                ssthresh: cfg.initial_ssthresh_segments.unwrap_or(INFINITE_SSTHRESH),
                cwnd_limited: false,
                in_flight_segments: 0,
                mss_bytes: cfg.mss_bytes,
                now: 0,
                srtt: None,
                rttvar: 0,
                min_rtt: None,
                max_ssthresh: cfg.max_ssthresh_segments,
                delivered_bytes: 0,
                delivered_segments: 0,
                delivered_ce_segments: 0,
                snd_una: 0,
                snd_nxt: 0,
                last_send_ps: None,
                request_cwr: false,
                paces: false,
            },
            cc,
            ca_state: CaState::Open,
            prior_cwnd: 0,
            rate: None,
            ack_timing: None,
            controls: false,
            paces: false,
            paces_payload: false,
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
            train: tso::Train::default(),
            fq_next_ps: None,
            tsq: cfg.host.filter(|h| h.tsq).map(|_| Box::new(tsq::Tsq::new())),
            send_delay: None,
            timed_segment: None,
            lone_runt: None,
            last_data_sent_ps: None,
            ecn_cwr_pending: false,
            ect: Ecn::ECT,
            accecn: Default::default(),
            tx_budget: u64::MAX,
            refused: false,
            interface_blocked: false,
            last_refused: false,
            stats: SenderStats::default(),
            milestones: Milestones::default(),
            cfg,
        };
        tcb.cc.init(&mut tcb.cc_state);
        tcb.controls = tcb.cc.has_cong_control();
        if tcb.cc.sends_ect1() {
            tcb.ect = Ecn::ECT1;
        }
        tcb.paces = tcb.cfg.pacing_gain.is_some()
            || tcb.controls
            || tcb.cfg.max_send_rate_bps.is_some()
            || tcb.cfg.host.is_some_and(|h| h.linux_paces());
        tcb.cc_state.paces = tcb.paces;
        if tcb.controls {
            tcb.rate = Some(RateSampler::default());
        }
        tcb
    }

    /// Bulk writing: the application tops the send buffer up whenever ACKs free space.
    pub(crate) fn refill(&mut self) {
        if self.bulk_target > self.written {
            self.written = self.bulk_target.min(self.snd_una + self.cfg.snd_buffer_bytes);
        }
    }

    /// Selective acknowledgments (RFC 2018) are in use.
    pub(crate) fn sack(&self) -> bool {
        self.cfg.recovery == Recovery::Sack
    }

    pub(crate) fn segments(&self, bytes: u64) -> u32 {
        bytes.div_ceil(self.cfg.mss_bytes as u64) as u32
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

    /// The congestion state changes: the milestone observer and the algorithm are told.
    /// Only a stack's state machine calls this.
    pub(crate) fn set_ca_state(&mut self, now: Time, state: CaState) {
        self.ca_state = state;
        let view = self.milestone_view(now);
        self.milestones.on_state(&view, self.prior_cwnd);
        self.sync_cc_view(now);
        self.cc.set_state(&mut self.cc_state, state);
    }

    /// The pacing rate in force, bits per second: the algorithm's own (BBR), else
    /// gain x cwnd / SRTT when pacing is on and an RTT is known, else Linux's
    /// `tcp_update_pacing_rate` with the host's Linux pacing on; never above the host's cap.
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        let own = self.cc.pacing_rate_bps(&self.cc_state).map(|r| r.max(1)).or_else(|| {
            let srtt = self.rtt.srtt?.max(1);
            let Some(gain) = self.cfg.pacing_gain else { return self.linux_pacing_rate_bps(srtt) };
            let bits = self.cc_state.cwnd as f64 * self.cfg.mss_bytes as f64 * 8.0;
            Some(((gain * bits * PS_PER_S as f64 / srtt as f64) as u64).max(1))
        });
        match (own, self.cfg.max_send_rate_bps) {
            (Some(rate), Some(cap)) => Some(rate.min(cap)),
            (rate, cap) => rate.or(cap),
        }
    }

    /// Linux's window-based pacing rate (`host/pacing.rs`), if the host's Linux pacing is on.
    fn linux_pacing_rate_bps(&self, srtt: Time) -> Option<u64> {
        let host = self.cfg.host.filter(|h| h.linux_paces())?;
        let s = &self.cc_state;
        let packets_out = self.segments(self.snd_max - self.snd_una);
        Some(pacing::linux_rate_bps(&host, s.cwnd, s.ssthresh, packets_out, self.cfg.mss_bytes, srtt))
    }

    /// Whether pacing, TCP Small Queues or the random send delay hold the next segment back
    /// (`retransmission`: it repairs a loss); if so the pacing timer is set. A segment that
    /// joins the open TSO super-segment is never held.
    pub(crate) fn paced_out(&mut self, now: Time, retransmission: bool) -> bool {
        if self.train.open(now) {
            return false;
        }
        if self.tsq.is_some() && self.tsq_holds(now, retransmission) {
            return true;
        }
        // The cheap test first: the rate is worked out only for a segment the clock holds.
        let paced =
            (self.paces && now < self.next_send_ps && self.pacing_rate_bps().is_some()).then_some(self.next_send_ps);
        if let Some(until) = paced.into_iter().chain(self.fq_next_ps).max().filter(|&t| now < t) {
            self.pacing_deadline = Some(until);
            return true;
        }
        if let Some(wait_until) = self.send_delay.as_mut().and_then(|d| d.hold(now)) {
            self.pacing_deadline = Some(wait_until);
            return true;
        }
        false
    }

    /// TCP Small Queues before a new skb: too much below TCP holds the sender until the NIC
    /// has freed enough (`host/tsq.rs`); the pacing timer wakes it then. A retransmission
    /// may have twice the limit below it (Linux `tcp_xmit_retransmit_queue` calls
    /// `tcp_small_queue_check` with factor 1: `limit <<= factor`), so that repairing a loss
    /// is not held behind a full allowance of new data.
    fn tsq_holds(&mut self, now: Time, retransmission: bool) -> bool {
        // A segment joining the skb being built is never held: the check is once per skb.
        if self.tsq.as_deref().is_none_or(|t| t.in_skb(now)) {
            return false;
        }
        let Some(host) = self.cfg.host else { return false };
        let rate = self.socket_pacing_rate_bps(&host);
        let segs = self.skb_segments(&host, rate);
        let truesize = u64::from(segs) * u64::from(self.cfg.mss_bytes) + tsq::SKB_OVERHEAD_BYTES;
        let limit = tsq::limit_bytes(rate, host.pacing_shift, truesize, self.paces, host.limit_output_bytes)
            .saturating_mul(1 << u32::from(retransmission));
        let outstanding = self.snd_max - self.snd_una;
        let until = self.tsq.as_deref_mut().and_then(|t| t.hold(now, limit, outstanding));
        if let Some(until) = until {
            self.pacing_deadline = Some(until);
        }
        until.is_some()
    }

    /// Linux's `sk_pacing_rate`, which it keeps even for a socket it does not pace
    /// (`tcp_update_pacing_rate` on every ACK): the pacing rate in force, else the window's
    /// (`host/pacing.rs`); None before an RTT sample (Linux's ~0).
    fn socket_pacing_rate_bps(&self, host: &HostConfig) -> Option<u64> {
        self.pacing_rate_bps().or_else(|| {
            let srtt = self.rtt.srtt?;
            let s = &self.cc_state;
            let packets_out = self.segments(self.snd_max - self.snd_una);
            Some(pacing::linux_rate_bps(host, s.cwnd, s.ssthresh, packets_out, self.cfg.mss_bytes, srtt.max(1)))
        })
    }

    /// Segments in the skb TCP builds next: TSO autosizing's, or one.
    fn skb_segments(&self, host: &HostConfig, rate: Option<u64>) -> u32 {
        if host.tso {
            tso::autosize_segs(host, rate, self.rtt.min_rtt, self.cfg.mss_bytes)
        } else {
            1
        }
    }

    /// The interface as the simulation sees it before a call into the sender: when its last
    /// packet finishes serializing, its rate and framing (`host/tsq.rs`).
    pub(crate) fn set_interface(&mut self, tail: Time, rate_bps: u64, framing_bytes: u32) {
        if let Some(t) = self.tsq.as_deref_mut() {
            t.set_interface(tail, rate_bps, framing_bytes);
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
        let restart = self.cfg.initial_window_segments.min(s.cwnd);
        let mut cwnd = s.cwnd;
        let mut idle = now - last;
        while idle > rto && cwnd > restart {
            idle -= rto;
            cwnd >>= 1;
        }
        s.cwnd = cwnd.max(restart);
        self.cc.cwnd_event(&mut self.cc_state, CwndEvent::CwndRestart);
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
        } else if !self.cfg.timestamps && self.timed_segment.is_none() {
            self.timed_segment = Some((seq + len as u64, now));
        }
        if let Some(rate) = &mut self.rate {
            rate.on_send(now, seq, seq + len as u64, self.cc_state.delivered_bytes, self.snd_max == self.snd_una);
        }
        if let Some(timing) = &mut self.ack_timing {
            timing.on_send(now, seq, seq + len as u64);
        }
        let mut ecn = Ecn::default();
        if self.cfg.ecn && !retransmission {
            // RFC 3168 6.1.5: retransmissions are not ECN-capable; CWR rides on new data.
            ecn.set(self.ect);
            if self.cfg.accecn {
                // RFC 9768: no CWR; the ACE field carries this end's own (unchanging) r.cep.
                ecn.set_ace(crate::tcp::receiver::ACCECN_CEP_INIT);
            } else if std::mem::take(&mut self.ecn_cwr_pending) {
                ecn.set(Ecn::CWR);
            }
        }
        let ip_bytes = self.cfg.header_bytes() + len;
        if self.tsq.is_some() {
            self.tsq_sent(now, ip_bytes, len);
        }
        if self.paces {
            let rate = self.pacing_rate_bps();
            let paced_bytes = if self.paces_payload { len } else { ip_bytes };
            match (self.cfg.host, rate) {
                (Some(host), _) => self.host_departure(&host, now, paced_bytes as u64, len, ip_bytes, rate),
                (None, Some(rate)) => self.next_send_ps = now + transmission_time(paced_bytes as u64, rate),
                (None, None) => {}
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

    /// When the next segment may leave, with the host's elements: the segment is part of a
    /// packet (a TSO super-segment, or itself), whose whole length sets the gaps; Linux's
    /// pacing times TCP's departures as `tcp_update_skb_after_send` (payload bytes), fq's
    /// maxrate spaces the packets on the wire (`host/fq.rs`).
    fn host_departure(
        &mut self,
        host: &HostConfig,
        now: Time,
        paced: u64,
        payload: u32,
        ip_bytes: u32,
        rate: Option<u64>,
    ) {
        if !self.train.open(now) {
            let segs = if host.tso { tso::autosize_segs(host, rate, self.rtt.min_rtt, self.cfg.mss_bytes) } else { 1 };
            self.train.start(now, segs, self.next_send_ps, self.fq_next_ps);
        }
        let bytes = if host.linux_paces() { u64::from(payload) } else { paced };
        self.train.add(bytes, u64::from(ip_bytes) + fq::ETH_HEADER_BYTES);
        let t = self.train;
        if let Some(rate) = rate {
            self.next_send_ps = if host.linux_paces() {
                pacing::next_departure(t.prior, now, t.bytes, rate, self.stats.segments_sent)
            } else {
                now + transmission_time(t.bytes, rate)
            };
        }
        if let Some(maxrate) = host.fq_maxrate_bps.filter(|_| host.fq) {
            self.fq_next_ps = Some(fq::next_packet(t.fq_prior, now, t.wire_bytes, maxrate));
        }
    }

    /// TCP Small Queues: a segment went below TCP, into the skb being built or a new one.
    fn tsq_sent(&mut self, now: Time, ip_bytes: u32, payload: u32) {
        let opens = self.tsq.as_deref().is_some_and(|t| !t.in_skb(now));
        let segs = match self.cfg.host.filter(|_| opens) {
            Some(host) => self.skb_segments(&host, self.socket_pacing_rate_bps(&host)),
            None => 0,
        };
        if let Some(t) = self.tsq.as_deref_mut() {
            t.on_segment(now, ip_bytes, payload, segs);
        }
    }

    /// Remembers a segment shorter than the MSS sent with nothing else outstanding (Linux keeps
    /// `end_seq - snd_una` per segment, `tx.in_flight`); a retransmission forgets it.
    pub(crate) fn note_lone_runt(&mut self, seq: u64, end: u64, retransmission: bool) {
        if retransmission {
            self.lone_runt = self.lone_runt.filter(|&(s, e, _)| seq >= e || end <= s);
        } else if end - self.snd_una < self.cfg.mss_bytes as u64 {
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

    /// The ACK's delivery-rate sample (Linux `tcp_rate_gen`), for an algorithm that sets the
    /// window from it; the stack has filled in what is in flight, what it found lost and
    /// whether the ACK echoed ECN.
    pub(crate) fn rate_sample(&mut self, now: Time, sample: &mut AckSample) {
        if let Some(r) = &mut self.rate {
            let ce_bytes = sample.ce_delivered_bytes(u64::from(self.cfg.mss_bytes));
            r.count_lost_and_ce(sample.newly_lost_bytes, ce_bytes);
            let rs = r.finish_ack(now, self.cc_state.delivered_bytes, self.rtt.min_rtt);
            r.set_in_flight(sample.in_flight_bytes);
            sample.delivery_rate_bps = rs.delivery_rate_bps;
            sample.is_app_limited = rs.is_app_limited;
            sample.prior_delivered_bytes = rs.prior_delivered_bytes;
            sample.rate_delivered_bytes = rs.delivered_bytes;
            sample.tx_in_flight_bytes = rs.tx_in_flight_bytes;
            sample.rate_lost_bytes = rs.lost_bytes;
            sample.rate_delivered_ce_bytes = rs.delivered_ce_bytes;
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

    /// After a send pass: data waits behind a zero window with nothing in flight, so the
    /// retransmission timer becomes the persist timer (Linux `tcp_check_probe_timer`); and
    /// an application that left the window unfilled marks the rate samples to come.
    pub(crate) fn after_send_pass(&mut self, now: Time) {
        // A super-segment never outlives the pass that handed it out.
        self.train.close();
        if let Some(t) = self.tsq.as_deref_mut() {
            t.close_skb();
        }
        if self.rwnd == 0 && self.snd_max == self.snd_una && self.written > self.snd_una && self.rto_deadline.is_none()
        {
            self.persisting = true;
            self.rto_deadline = Some(now + self.persist_interval());
        }
        if let Some(rate) = &mut self.rate {
            let in_flight = self.snd_max - self.snd_una;
            let unsent = self.written - self.snd_max;
            if unsent < self.cfg.mss_bytes as u64 && in_flight < self.cc_state.cwnd as u64 * self.cfg.mss_bytes as u64 {
                rate.mark_app_limited(self.cc_state.delivered_bytes, in_flight);
            }
        }
    }
}
