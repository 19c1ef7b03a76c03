//! The TCP sender: windowing, RTT and retransmission timeout, and loss recovery.
//!
//! Loss recovery lives here, not in the congestion control algorithms (as in Linux):
//! - fast retransmit on the `dupack_threshold`-th duplicate ACK (RFC 5681 3.2);
//! - NewReno fast recovery with window inflation and partial ACKs (RFC 6582), with the
//!   `recover` guard against repeated fast retransmits; every partial ACK restarts the
//!   retransmission timer ("Slow-but-Steady", as Linux and ns-2) unless the "Impatient"
//!   variant is chosen, which restarts it on the first only;
//! - retransmission timeout per RFC 6298 with Karn's algorithm and exponential backoff, then
//!   go-back-N from the first unacknowledged byte in slow start from one segment (RFC 5681 3.1).
//!
//! Sequence numbers are 64-bit byte offsets from the start of the stream (no wrap-around).
//! The window is counted in segments as in Linux; the byte limit is `cwnd * mss`.

use super::config::TcpConfig;
use super::rtt::RttEstimator;
use crate::cc::{AckSample, CaState, CcState, CongestionControl, INFINITE_SSTHRESH};
use crate::packet::{Packet, PacketKind};
use crate::time::Time;

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub dupacks_received: u64,
    pub acks_received: u64,
}

pub struct TcpSender {
    flow: u32,
    node: u32,
    peer: u32,
    mss: u32,
    header_bytes: u32,
    dupack_threshold: u32,
    newreno_impatient: bool,
    timestamps: bool,
    snd_buffer: u64,
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
    pub rtt: RttEstimator,
    rto_deadline: Option<Time>,
    /// Without timestamps, one segment at a time is timed (end byte, send time); Karn's
    /// algorithm discards the measurement if that segment is retransmitted.
    timed_segment: Option<(u64, Time)>,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(flow: u32, node: u32, peer: u32, cfg: &TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let mss = cfg.mss_bytes;
        let mut sender = TcpSender {
            flow,
            node,
            peer,
            mss,
            header_bytes: cfg.header_bytes(),
            dupack_threshold: cfg.dupack_threshold.max(1),
            newreno_impatient: cfg.newreno_impatient,
            timestamps: cfg.timestamps,
            snd_buffer: cfg.snd_buffer_bytes,
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
                ssthresh: INFINITE_SSTHRESH,
                cwnd_limited: false,
                in_flight_segments: 0,
                mss_bytes: mss,
                now: 0,
                srtt: None,
                min_rtt: None,
                max_ssthresh: 0,
                delivered_bytes: 0,
            },
            cc,
            ca_state: CaState::Open,
            dupacks: 0,
            recover: None,
            first_partial_ack: false,
            prior_cwnd: 0,
            rtt: RttEstimator::new(cfg.initial_rto_ps, cfg.min_rto_ps, cfg.max_rto_ps),
            rto_deadline: None,
            timed_segment: None,
            stats: SenderStats::default(),
        };
        sender.cc.init(&mut sender.cc_state);
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
        self.ca_state = state;
        self.sync_cc_view(now);
        self.cc.set_state(&mut self.cc_state, state);
    }

    /// Sends as much new (or, after a timeout, resent) data as the windows allow.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.refill();
        let cwnd_bytes = self.cc_state.cwnd as u64 * self.mss as u64;
        let window = cwnd_bytes.min(self.rwnd).min(self.snd_buffer);
        let end = (self.snd_una + window).min(self.written);
        while self.snd_nxt < end {
            let len = (end - self.snd_nxt).min(self.mss as u64);
            // Sender silly-window avoidance (RFC 1122 4.2.3.4): no runt segment while a full
            // one may follow, unless nothing is in flight (which would stall the connection).
            if len < self.mss as u64 && self.snd_nxt + len < self.written && self.snd_nxt > self.snd_una {
                break;
            }
            self.emit(now, self.snd_nxt, len as u32, out);
            self.snd_nxt += len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
        // Linux `tcp_is_cwnd_limited`: in slow start the window may grow while it is less than
        // twice what is in flight; in congestion avoidance only while the flight fills it.
        let flight = self.segments(self.snd_nxt - self.snd_una);
        self.cc_state.cwnd_limited = if self.cc_state.in_slow_start() {
            self.cc_state.cwnd < 2 * flight
        } else {
            flight >= self.cc_state.cwnd
        };
        if self.snd_max > self.snd_una && self.rto_deadline.is_none() {
            // RFC 6298 5.1: start the timer when data goes out and it is not running.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    fn emit(&mut self, now: Time, seq: u64, len: u32, out: &mut Vec<Packet>) {
        let retransmission = seq < self.snd_max;
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
        out.push(Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Data,
            seq,
            payload_bytes: len,
            ip_bytes: self.header_bytes + len,
            ack: 0,
            window_bytes: 0,
            ts_val: now,
            ts_ecr: 0,
            retransmission,
        });
    }

    fn retransmit_first_unacked(&mut self, now: Time, out: &mut Vec<Packet>) {
        let len = (self.snd_max - self.snd_una).min(self.mss as u64) as u32;
        if len > 0 {
            self.emit(now, self.snd_una, len, out);
        }
    }

    /// Handles one arriving ACK.
    pub fn on_ack(&mut self, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(ack_pkt.kind, PacketKind::Ack);
        self.stats.acks_received += 1;
        let ack = ack_pkt.ack;
        if ack > self.snd_max {
            return; // acknowledges data never sent (RFC 793): ignore
        }
        let window_changed = ack_pkt.window_bytes as u64 != self.rwnd;
        self.rwnd = ack_pkt.window_bytes as u64;

        if ack > self.snd_una {
            self.on_new_ack(now, ack_pkt, out);
        } else if ack == self.snd_una && self.snd_max > self.snd_una && !window_changed {
            // A duplicate ACK (RFC 5681 section 2).
            self.stats.dupacks_received += 1;
            self.dupacks += 1;
            match self.ca_state {
                CaState::Recovery => {
                    // Each duplicate ACK means a segment left the network: inflate (RFC 6582 3.2 step 4).
                    self.cc_state.cwnd += 1;
                }
                CaState::Open | CaState::Loss => {
                    let past_recover = self.recover.is_none_or(|r| ack >= r);
                    if self.dupacks == self.dupack_threshold && past_recover {
                        self.enter_fast_recovery(now, out);
                    }
                }
            }
        }
        self.send(now, out);
    }

    fn on_new_ack(&mut self, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
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
            delivered_bytes: acked_bytes,
            ..Default::default()
        };
        self.snd_una = ack;
        if self.snd_nxt < ack {
            // After go-back-N the receiver may already hold data we were about to resend.
            self.snd_nxt = ack;
        }
        self.sync_cc_view(now);
        self.cc.pkts_acked(&self.cc_state, &sample);

        let mut restart_timer = true;
        match self.ca_state {
            CaState::Recovery => {
                if self.recover.is_some_and(|r| ack >= r) {
                    // Full ACK: deflate to min(ssthresh, FlightSize + 1 segment) so that the
                    // window does not release a burst (RFC 6582 3.2 step 3, option 1).
                    let flight = self.segments(self.snd_max - self.snd_una).max(1);
                    self.cc_state.cwnd = self.cc_state.ssthresh.min(flight + 1);
                    self.cc_state.cwnd_cnt = 0;
                    self.dupacks = 0;
                    self.set_ca_state(now, CaState::Open);
                } else {
                    // Partial ACK: the next hole is lost too. Retransmit it, deflate by what was
                    // acknowledged and add back one segment (RFC 6582 3.2 step 5).
                    self.retransmit_first_unacked(now, out);
                    let cwnd = self.cc_state.cwnd.saturating_sub(sample.acked_segments);
                    let add_back = u32::from(acked_bytes >= self.mss as u64);
                    self.cc_state.cwnd = (cwnd + add_back).max(1);
                    restart_timer = !self.newreno_impatient || self.first_partial_ack;
                    self.first_partial_ack = false;
                }
            }
            CaState::Loss => {
                self.dupacks = 0;
                if self.recover.is_some_and(|r| ack >= r) {
                    self.set_ca_state(now, CaState::Open);
                }
                self.cc.cong_avoid(&mut self.cc_state, &sample);
            }
            CaState::Open => {
                self.dupacks = 0;
                self.cc.cong_avoid(&mut self.cc_state, &sample);
            }
        }
        if self.snd_una == self.snd_max {
            self.rto_deadline = None; // RFC 6298 5.2
        } else if restart_timer {
            self.rto_deadline = Some(now + self.rtt.rto()); // RFC 6298 5.3
        }
    }

    fn enter_fast_recovery(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.fast_retransmits += 1;
        self.sync_cc_view(now);
        self.prior_cwnd = self.cc_state.cwnd;
        let ssthresh = self.cc.ssthresh(&self.cc_state);
        self.cc_state.ssthresh = ssthresh;
        self.recover = Some(self.snd_max);
        self.retransmit_first_unacked(now, out);
        // RFC 6582 3.2 step 2 / RFC 5681 3.2 step 3: inflate by the segments that left.
        self.cc_state.cwnd = ssthresh + self.dupack_threshold;
        self.cc_state.cwnd_cnt = 0;
        self.first_partial_ack = true;
        self.set_ca_state(now, CaState::Recovery);
    }

    /// The retransmission timer expired.
    pub fn on_rto_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rto_deadline = None;
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
        // Loss window of one segment, then slow start (RFC 5681 3.1); resend everything
        // from the first unacknowledged byte (go-back-N, as a cumulative-ACK sender must).
        self.cc_state.cwnd = 1;
        self.cc_state.cwnd_cnt = 0;
        self.recover = Some(self.snd_max);
        self.dupacks = 0;
        self.snd_nxt = self.snd_una;
        self.timed_segment = None;
        self.rtt.back_off();
        self.set_ca_state(now, CaState::Loss);
        self.send(now, out);
        self.rto_deadline = Some(now + self.rtt.rto());
    }
}
