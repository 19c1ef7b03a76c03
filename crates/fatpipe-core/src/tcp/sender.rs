//! The TCP sender: a transmission control block (`tcb.rs`: settings, sequence space,
//! windows, RTT, pacing, the congestion control, counters) and a loss detection and recovery
//! stack (`stack/`: the RFC stack or the Linux stack, chosen per flow by the scenario's
//! profile). This file is what the simulation and the applications call: the application's
//! writes, the ACKs and the timers, each handed to the stack with the TCB.
//!
//! Loss detection and recovery are the TCP core's, not the congestion control's (as in
//! Linux). Window reduction without a loss (Linux `tcp_enter_cwr`, state CWR) has two causes:
//! the host's interface queue refusing a segment (local congestion, see `set_tx_budget`) and,
//! with ECN (RFC 3168), an ACK echoing a router's CE mark. Either sets ssthresh from the
//! algorithm and cwnd down to it, once per window of data.
//!
//! Flow control: the receiver's window limits what is sent (RFC 9293; only ACKs that do not
//! go back, SEG.ACK >= SND.UNA, update it, as SND.WL2). When the window is zero with nothing
//! in flight, the retransmission timer becomes the persist timer (as Linux's one timer serves
//! ICSK_TIME_PROBE0): it sends a zero-length probe every RTO, doubling up to max_rto (RFC 9293
//! 3.8.6.1, Linux `tcp_probe_timer`; `persist.rs`), so a lost window update cannot stall the
//! flow; a timeout with the window closed still resends the first unacknowledged segment
//! (Linux `tcp_retransmit_skb` lets SND.UNA go beyond the window).

use super::config::TcpConfig;
use super::metrics::{Closing, Opening, RttSeed, Seed};
use super::send_delay::RandomSendDelay;
use super::stack::{Stack, TcpStack};
pub use super::stats::SenderStats;
use super::tcb::Tcb;
use crate::cc::CongestionControl;
use crate::packet::{Packet, PacketKind};
use crate::time::Time;

pub struct TcpSender {
    /// What every stack shares: the connection's settings and state.
    pub tcb: Tcb,
    /// The loss detection and recovery in force (`tcp/stack/`).
    pub(crate) stack: Stack,
}

impl TcpSender {
    pub fn new(flow: u32, node: u32, peer: u32, cfg: &TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let mut tcb = Tcb::new(flow, node, peer, cfg, cc);
        let stack = Stack::new(&mut tcb);
        TcpSender { tcb, stack }
    }

    /// Waits a random time before each send pass (ns-2 `overhead_`, `send_delay.rs`).
    pub fn set_random_send_delay(&mut self, delay: RandomSendDelay) {
        self.tcb.send_delay = Some(delay);
    }

    /// The reordering degree the Linux stack has learnt, segments (Linux `tp->reordering`);
    /// the duplicate-ACK threshold in the RFC stack.
    pub fn reordering_segments(&self) -> u32 {
        self.stack.reordering_segments(&self.tcb)
    }

    pub fn algorithm(&self) -> &'static str {
        self.tcb.cc.name()
    }

    pub fn mss(&self) -> u32 {
        self.tcb.cfg.mss_bytes
    }

    pub fn header_bytes(&self) -> u32 {
        self.tcb.cfg.header_bytes()
    }

    /// When the retransmission timer expires, if it runs.
    pub fn rto_deadline(&self) -> Option<Time> {
        self.tcb.rto_deadline
    }

    /// When pacing next lets a segment go, if it is holding one back.
    pub fn pacing_deadline(&self) -> Option<Time> {
        self.tcb.pacing_deadline
    }

    /// The pacing rate in force, bits per second (`Tcb::pacing_rate_bps`).
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        self.tcb.pacing_rate_bps()
    }

    /// How many data segments the host's interface queue can take now (Linux txqueuelen
    /// minus what waits in it, shared by every flow of the host). The simulation sets it
    /// before each call; each segment sent uses one, and a segment beyond it is not sent but
    /// stays first in line (Linux: `dev_queue_xmit` returns NET_XMIT_DROP, `tcp_write_xmit`
    /// stops, snd_nxt does not advance), and the window is reduced (CWR).
    pub fn set_tx_budget(&mut self, packets: u64) {
        self.tcb.tx_budget = packets;
    }

    /// With TCP Small Queues on (`host/tsq.rs`), the interface as it is before a call: when
    /// its last packet finishes serializing, its rate and the framing it adds per packet.
    /// The simulation passes it with every budget; a test may too.
    #[inline]
    pub fn set_interface(&mut self, tail: Time, rate_bps: u64, framing_bytes: u32) {
        self.tcb.set_interface(tail, rate_bps, framing_bytes);
    }

    /// TCP Small Queues is on: the simulation passes the interface with every budget.
    #[inline]
    pub fn has_tsq(&self) -> bool {
        self.tcb.tsq.is_some()
    }

    /// Bytes below TCP (in the interface) at `now`, with TCP Small Queues on.
    pub fn tsq_below_bytes(&mut self, now: Time) -> Option<u64> {
        self.tcb.tsq.as_deref_mut().map(|t| t.below_bytes(now))
    }

    /// The last send pass stopped at a segment the host's interface queue refused: the
    /// sender wants to be called again when the queue has room.
    pub fn interface_blocked(&self) -> bool {
        self.tcb.interface_blocked
    }

    /// The host's interface queue has room again (the simulation wakes senders it blocked).
    pub fn on_interface_ready(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.send(now, out);
    }

    /// Bytes sent and not yet acknowledged.
    pub fn outstanding_bytes(&self) -> u64 {
        self.tcb.snd_max - self.tcb.snd_una
    }

    pub fn bytes_written(&self) -> u64 {
        self.tcb.written
    }

    /// The application has stopped writing and every byte it wrote is acknowledged.
    pub fn is_finished(&self) -> bool {
        let t = &self.tcb;
        t.bulk_target != u64::MAX && t.written == t.bulk_target && t.snd_una == t.written
    }

    /// A bulk ("full blast") application starts: it keeps the send buffer full until it has
    /// written `total_bytes` (None: without end).
    pub fn start_bulk(&mut self, now: Time, total_bytes: Option<u64>, out: &mut Vec<Packet>) {
        self.tcb.bulk_target = total_bytes.unwrap_or(u64::MAX);
        self.send(now, out);
    }

    /// A paced application hands over its next burst of `burst_bytes`. Returns true when the
    /// previous burst is not fully written yet (a failed burst cycle); its rest is dropped
    /// unless `carry_over`.
    pub fn write_burst(&mut self, now: Time, burst_bytes: u64, carry_over: bool, out: &mut Vec<Packet>) -> bool {
        let t = &mut self.tcb;
        t.refill();
        let failed = t.written < t.bulk_target;
        if failed && !carry_over {
            t.bulk_target = t.written;
        }
        t.bulk_target += burst_bytes;
        self.send(now, out);
        failed
    }

    /// The three-way handshake completed at this end (`tcp/handshake.rs`): its RTT sample
    /// seeds the estimator, as Linux's. After more than one SYN or SYN-ACK retransmission the
    /// initial window is one segment (RFC 5681 section 3.1 says after any; Linux
    /// `tcp_init_transfer` waits for a second, given the 1 s initial RTO of RFC 6298).
    pub fn on_handshake(&mut self, rtt: Option<Time>, retransmits: u32) {
        if let Some(r) = rtt {
            self.tcb.rtt.sample(r);
        }
        if retransmits > 1 && !self.tcb.controls {
            self.tcb.cc_state.cwnd = 1;
        }
        // Linux initializes the algorithm here (tcp_init_transfer, after the initial window).
        self.tcb.cc_state.srtt = self.tcb.rtt.srtt;
        self.tcb.cc.established(&mut self.tcb.cc_state);
    }

    /// What Linux's `tcp_update_metrics` reads of this connection as it closes.
    pub fn closing_metrics(&self) -> Closing {
        let t = &self.tcb;
        let (srtt8, mdev4, _) = t.rtt.linux_scaled();
        let open = self.stack.undisturbed_open(t);
        Closing {
            backed_off: t.rtt.backoff > 0,
            srtt8,
            mdev4,
            cwnd: t.cc_state.cwnd,
            ssthresh: t.cc_state.ssthresh,
            open,
            reordering: self.reordering_segments(),
            default_reordering: t.cfg.dupack_threshold,
        }
    }

    /// What Linux's `tcp_init_metrics` reads of this connection as it opens.
    pub fn opening_metrics(&self) -> Opening {
        let t = &self.tcb;
        let (srtt8, mdev4, rttvar4) = t.rtt.linux_scaled();
        Opening {
            srtt8,
            mdev4,
            rttvar4,
            timestamps: t.cfg.timestamps,
            reordering: self.reordering_segments(),
            mss_bytes: t.cfg.mss_bytes,
            min_rto: t.rtt.min_rto(),
        }
    }

    /// Starts this connection from a destination's cached metrics (Linux `tcp_init_metrics`),
    /// before any data is sent.
    pub fn apply_metrics(&mut self, seed: &Seed) {
        let t = &mut self.tcb;
        if let Some(ssthresh) = seed.ssthresh {
            t.cc_state.ssthresh = ssthresh;
        }
        if let Some(r) = seed.reordering {
            self.stack.seed_reordering(r, seed.disable_fack);
        }
        match seed.rtt {
            RttSeed::Keep => {}
            RttSeed::Raise { srtt8, mdev4 } => t.rtt.seed_linux24(srtt8, mdev4),
            RttSeed::Forget { timeout } => t.rtt.forget(timeout),
            RttSeed::FirstRto(rto) => t.rtt.set_first_rto(rto),
        }
        if let (Some(cwnd), false) = (seed.cwnd, t.controls) {
            t.cc_state.cwnd = cwnd;
        }
    }

    /// The application stops writing; what it wrote is still delivered.
    pub fn stop_application(&mut self) {
        self.tcb.refill();
        self.tcb.bulk_target = self.tcb.written;
    }

    /// The application writes up to `bytes` into the send buffer; returns how many fit.
    pub fn write(&mut self, now: Time, bytes: u64, out: &mut Vec<Packet>) -> u64 {
        let t = &mut self.tcb;
        let space = (t.snd_una + t.cfg.snd_buffer_bytes).saturating_sub(t.written);
        let accepted = bytes.min(space);
        t.written += accepted;
        self.send(now, out);
        accepted
    }

    /// Sends what the windows (and pacing) allow.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stack.send(&mut self.tcb, now, out);
    }

    /// The pacing timer expired.
    pub fn on_pacing_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.tcb.pacing_deadline = None;
        self.send(now, out);
    }

    /// Handles one arriving ACK.
    pub fn on_ack(&mut self, now: Time, ack_pkt: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(ack_pkt.kind, PacketKind::Ack);
        self.stack.on_ack(&mut self.tcb, now, ack_pkt, out);
    }

    /// The retransmission timer expired (or, with a zero window, the persist timer).
    pub fn on_rto_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.tcb.rto_deadline = None;
        if self.tcb.persisting {
            self.tcb.send_zero_window_probe(now, out);
            return;
        }
        self.stack.on_rto_timer(&mut self.tcb, now, out);
    }
}
