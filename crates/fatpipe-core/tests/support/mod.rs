//! Test support: scenarios built in Rust, and a packet-by-packet harness that drives a TCP
//! sender and receiver over an ideal path with losses chosen by the test.
#![allow(dead_code)]

use fatpipe_core::cc::{reno::RenoConfig, CcSpec, CongestionControl};
use fatpipe_core::net::link::LinkSpec;
use fatpipe_core::net::queue::{droptail::DropTailConfig, QueueSpec};
use fatpipe_core::packet::{Packet, PacketKind};
use fatpipe_core::scenario::{FlowSpec, NodeKind, NodeSpec, Scenario};
use fatpipe_core::source::{bulk::BulkConfig, SourceSpec};
use fatpipe_core::tcp::{Handshake, TcpConfig, TcpReceiver, TcpSender};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use std::collections::BTreeMap;

pub fn tcp_config() -> TcpConfig {
    TcpConfig {
        mss_bytes: 1448,
        initial_window_segments: 10,
        rcv_buffer_bytes: 64 << 20,
        snd_buffer_bytes: 64 << 20,
        window_scaling: true,
        timestamps: true,
        delayed_ack: true,
        delayed_ack_timeout_ps: 40 * PS_PER_MS,
        ack_every_segments: 2,
        dupack_threshold: 3,
        newreno_impatient: false,
        ecn: false,
        accecn: false,
        recovery: fatpipe_core::tcp::config::Recovery::Newreno,
        fack: false,
        dcr_div: None,
        max_ssthresh_segments: 0,
        initial_ssthresh_segments: None,
        pacing_gain: None,
        min_rto_ps: 200 * PS_PER_MS,
        max_rto_ps: 120 * PS_PER_S,
        initial_rto_ps: PS_PER_S,
        handshake: false,
        slow_start_after_idle: true,
        receiver_drain_rate_bps: None,
        random_send_delay_ps: 0,
        stack: fatpipe_core::tcp::config::StackKind::Rfc,
        limited_transmit: false,
        ssthresh_every_timeout: false,
        bsd_window: false,
        reno_recover_guard: false,
        sack_variant: fatpipe_core::tcp::config::SackVariant::Rfc6675,
        rto_estimator: fatpipe_core::tcp::config::RtoEstimator::Rfc6298,
        dsack: false,
        rack: false,
        tlp: false,
        frto: false,
        undo: false,
        window_reduction: fatpipe_core::tcp::config::WindowReduction::Prr,
        adaptive_reordering: false,
        max_reordering_segments: 300,
        slow_timer_ps: None,
        fast_timer_ps: None,
        metrics: None,
        host: None,
        max_send_rate_bps: None,
    }
}

/// The Linux stack as the `linux` profile runs it (scenario/profiles.py): SACK, D-SACK,
/// RACK-TLP, F-RTO, undo, PRR, adaptive reordering, Linux's RTO estimator.
pub fn linux_profile_tcp() -> TcpConfig {
    use fatpipe_core::tcp::config::{Recovery, RtoEstimator, StackKind, WindowReduction};
    TcpConfig {
        stack: StackKind::Linux,
        recovery: Recovery::Sack,
        dsack: true,
        rack: true,
        tlp: true,
        frto: true,
        undo: true,
        window_reduction: WindowReduction::Prr,
        adaptive_reordering: true,
        rto_estimator: RtoEstimator::Linux,
        ..tcp_config()
    }
}

/// The Linux stack without delayed ACKs (every segment answered at once, so the first RTT
/// sample is the path's RTT) with the hosts' elements `host`.
pub fn linux_host_tcp(
    host: Option<fatpipe_core::host::HostConfig>,
    initial_window: u32,
    ssthresh: Option<u32>,
) -> TcpConfig {
    use fatpipe_core::tcp::config::{Recovery, RtoEstimator, StackKind};
    TcpConfig {
        stack: StackKind::Linux,
        recovery: Recovery::Sack,
        rto_estimator: RtoEstimator::Linux,
        delayed_ack: false,
        initial_window_segments: initial_window,
        initial_ssthresh_segments: ssthresh,
        host,
        ..tcp_config()
    }
}

pub fn reno() -> CcSpec {
    CcSpec::Reno(fatpipe_core::cc::scenario_defaults::<RenoConfig>("reno"))
}

/// sender -> r1 -> (bottleneck) -> r2 -> receiver, and back; access links 10x faster with
/// no delay, so the whole RTT is on the bottleneck.
pub fn dumbbell(rate_bps: u64, rtt: Time, queue_packets: u64, duration: Time, tcp: TcpConfig) -> Scenario {
    let link = |name: &str, from: u32, to: u32, rate_bps: u64, delay_ps: Time, limit: u64| LinkSpec {
        name: name.into(),
        from,
        to,
        rate_bps,
        delay_ps,
        framing_bytes: 38,
        mtu_bytes: 1500,
        queue: QueueSpec::Droptail(DropTailConfig {
            limit_packets: Some(limit),
            limit_bytes: None,
            cell_bytes: None,
            limit_cells: None,
            mark_threshold_packets: None,
        }),
        impairments: Vec::new(),
        tx_ring: None,
    };
    let node = |name: &str, kind| NodeSpec { name: name.into(), kind };
    Scenario {
        name: "test".into(),
        seed: 1,
        duration_ps: duration,
        sample_interval_ps: 10 * PS_PER_MS,
        nodes: vec![
            node("sender", NodeKind::Host),
            node("r1", NodeKind::Router),
            node("r2", NodeKind::Router),
            node("receiver", NodeKind::Host),
        ],
        links: vec![
            link("access_fwd_sender", 0, 1, rate_bps * 10, 0, 100_000),
            link("bottleneck", 1, 2, rate_bps, rtt / 2, queue_packets),
            link("access_fwd_receiver", 2, 3, rate_bps * 10, 0, 100_000),
            link("access_rev_receiver", 3, 2, rate_bps * 10, 0, 100_000),
            link("bottleneck_rev", 2, 1, rate_bps, rtt / 2, queue_packets),
            link("access_rev_sender", 1, 0, rate_bps * 10, 0, 100_000),
        ],
        flows: vec![FlowSpec {
            name: "flow0".into(),
            src: 0,
            dst: 3,
            source: SourceSpec::Bulk(BulkConfig {
                start_ps: 0,
                stop_ps: None,
                bytes: None,
                transfers: None,
                transfer_gap_ps: 0,
            }),
            tcp: Some(tcp),
            cc: Some(reno()),
            group: None,
            start_jitter_ps: 0,
        }],
        captures: Vec::new(),
        routes: Vec::new(),
        splits: Vec::new(),
    }
}

/// Bandwidth-delay product in packets of `wire_bytes` on the wire.
pub fn bdp_packets(rate_bps: u64, rtt: Time, wire_bytes: u64) -> u64 {
    (rate_bps as u128 * rtt as u128 / 8 / PS_PER_S as u128).div_ceil(wire_bytes as u128) as u64
}

/// An ideal path (one-way delay, no rate limit) between one sender and one receiver, where the
/// test decides which data segments are lost.
pub struct Harness {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub now: Time,
    one_way: Time,
    /// Packets in both directions by (arrival time, sequence of sending): a path may reorder.
    in_flight: BTreeMap<(Time, u64), Packet>,
    sent_count: u64,
    /// Extra one-way delay of each data segment (zero: a FIFO path).
    pub extra_delay: Box<dyn FnMut(&Packet) -> Time>,
    /// Returns true for a data segment (or SYN, SYN-ACK, handshake ACK) to drop (sees each
    /// transmission once).
    drop: Box<dyn FnMut(&Packet) -> bool>,
    pub dropped: Vec<Packet>,
    /// Every data segment sent: (time, packet).
    pub sent: Vec<(Time, Packet)>,
    /// With `start_with_handshake`: the connection setup (the sender opens it) and every
    /// SYN, SYN-ACK and handshake ACK sent.
    pub handshake: Option<Handshake>,
    pub setup_sent: Vec<(Time, Packet)>,
    /// Bytes the bulk application writes once the connection is established.
    bytes_after_setup: Option<u64>,
    /// Returns true for an ACK to drop (sees each ACK once).
    pub drop_ack: Box<dyn FnMut(&Packet) -> bool>,
    /// Every ACK sent, dropped or not: (time, packet).
    pub acks: Vec<(Time, Packet)>,
}

impl Harness {
    pub fn new(tcp: TcpConfig, cc: CcSpec, rtt: Time, drop: Box<dyn FnMut(&Packet) -> bool>) -> Harness {
        Harness::with_algorithm(tcp, cc.build(), rtt, drop)
    }

    /// A harness whose sender runs an algorithm built by the test (a probe of the core's hooks).
    pub fn with_algorithm(
        tcp: TcpConfig,
        cc: Box<dyn CongestionControl>,
        rtt: Time,
        drop: Box<dyn FnMut(&Packet) -> bool>,
    ) -> Harness {
        Harness {
            sender: TcpSender::new(0, 0, 1, &tcp, cc),
            receiver: TcpReceiver::new(0, 1, 0, &tcp),
            now: 0,
            one_way: rtt / 2,
            in_flight: BTreeMap::new(),
            sent_count: 0,
            extra_delay: Box::new(|_| 0),
            drop,
            dropped: Vec::new(),
            sent: Vec::new(),
            handshake: None,
            setup_sent: Vec::new(),
            bytes_after_setup: None,
            drop_ack: Box::new(|_| false),
            acks: Vec::new(),
        }
    }

    fn post(&mut self, out: &mut Vec<Packet>) {
        for p in out.drain(..) {
            if p.kind != PacketKind::Ack {
                if p.kind == PacketKind::Data {
                    self.sent.push((self.now, p));
                } else {
                    self.setup_sent.push((self.now, p));
                }
                if (self.drop)(&p) {
                    self.dropped.push(p);
                    continue;
                }
            } else {
                self.acks.push((self.now, p));
                if (self.drop_ack)(&p) {
                    continue;
                }
            }
            let extra = if p.kind == PacketKind::Data { (self.extra_delay)(&p) } else { 0 };
            self.sent_count += 1;
            self.in_flight.insert((self.now + self.one_way + extra, self.sent_count), p);
        }
    }

    pub fn start(&mut self, bytes: Option<u64>) {
        let mut out = Vec::new();
        self.sender.start_bulk(self.now, bytes, &mut out);
        self.post(&mut out);
    }

    /// The sender opens the connection (SYN) and starts a bulk transfer of `bytes` when the
    /// SYN-ACK arrives, as the simulation does with `tcp.handshake`.
    pub fn start_with_handshake(&mut self, tcp: &TcpConfig, bytes: Option<u64>) {
        let mut out = Vec::new();
        let mut h = Handshake::new(0, 0, 0, 1, tcp);
        h.open(self.now, &mut out);
        self.handshake = Some(h);
        self.bytes_after_setup = bytes;
        self.post(&mut out);
    }

    fn on_setup_packet(&mut self, t: Time, p: &Packet, out: &mut Vec<Packet>) {
        let Some(h) = &mut self.handshake else { return };
        match p.kind {
            PacketKind::Syn => h.on_syn(t, p, out),
            PacketKind::SynAck => {
                if let Some(est) = h.on_synack(t, p, out) {
                    self.sender.on_handshake(est.rtt, est.retransmits);
                    h.ack(t, out);
                    self.sender.start_bulk(t, self.bytes_after_setup, out);
                }
            }
            _ => {
                h.on_opener_segment(t, p);
            }
        }
    }

    /// Runs until `until`, delivering packets and firing the timers.
    pub fn run_until(&mut self, until: Time) {
        let mut out = Vec::new();
        loop {
            let next_pkt = self.in_flight.first_key_value().map(|(k, _)| k.0);
            let rto = self.sender.rto_deadline();
            let delack = self.receiver.delayed_ack_deadline();
            let pacing = self.sender.pacing_deadline();
            let setup = self.handshake.as_ref().and_then(|h| h.deadline());
            let window_update = self.receiver.window_update_deadline();
            let next = [next_pkt, rto, delack, pacing, setup, window_update].into_iter().flatten().min();
            let Some(t) = next else { break };
            if t > until {
                break;
            }
            self.now = t;
            if next_pkt == Some(t) {
                let (_, p) = self.in_flight.pop_first().unwrap();
                match p.kind {
                    PacketKind::Data => {
                        self.receiver.on_segment(t, &p, &mut out);
                        if let Some(h) = &mut self.handshake {
                            h.on_opener_segment(t, &p); // data carries the ACK of the SYN-ACK
                        }
                    }
                    PacketKind::Ack => self.sender.on_ack(t, &p, &mut out),
                    PacketKind::Datagram => unreachable!("TCP endpoints send no datagrams"),
                    _ => self.on_setup_packet(t, &p, &mut out),
                }
            } else if setup == Some(t) {
                self.handshake.as_mut().unwrap().on_timer(t, &mut out);
            } else if rto == Some(t) {
                self.sender.on_rto_timer(t, &mut out);
            } else if pacing == Some(t) {
                self.sender.on_pacing_timer(t, &mut out);
            } else if window_update == Some(t) {
                self.receiver.on_window_update_timer(t, &mut out);
            } else {
                self.receiver.on_delayed_ack_timer(t, &mut out);
            }
            self.post(&mut out);
        }
        self.now = until;
    }
}
