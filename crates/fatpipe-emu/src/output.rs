//! The results of an emulated run, in the document a simulation's `finish` returns
//! (docs/core-interface.md) so that the Python side writes the same files.
//!
//! A flow's entry has the keys a real stack can fill -- from TCP_INFO, from the
//! applications, and from the relay, which saw every packet -- and leaves out the rest
//! (docs/emulation.md lists them): a missing key is "not measured", never zero. Emulation
//! facts (what the kernel granted, the notes, timing) go under `emulation`. The document's
//! types are `summary.rs`'s, and its schema theirs.
//!
//! It reads plain data (`EmulatedRun`, which `Emulation::finish` fills): nothing of the
//! emulation's threads and sockets, so that the emulation uses this module and not the other
//! way round.

use crate::kernel::FlowKnobs;
use crate::netns::Namespace;
use crate::relay::{FlowNet, RelayReport};
use crate::sampler::{FinalState, SamplerOutput};
use crate::summary::{
    EmulationFacts, EmulationOutput, EmulationSummary, HostCounters, LatenessStats, Negotiated, RealFlow, RealTcpFlow,
    RealUdpFlow, RelayFacts, ReleaseLateness, TcpKernel, TunTraffic, UdpHosts,
};
use crate::traffic::tcp::Granted;
use crate::traffic::tcp_info::{Field, Sampled, INFINITE_SSTHRESH, OPT_ECN, OPT_SACK, OPT_TIMESTAMPS, OPT_WSCALE};
use crate::traffic::CountersSnapshot;
use fatpipe_core::packet::{IPV4_TCP_HEADER_BYTES, IPV4_UDP_HEADER_BYTES, TCP_TIMESTAMPS_OPTION_BYTES};
use fatpipe_core::scenario::{FlowSpec, Scenario};
use fatpipe_core::source::SourceSpec;
use fatpipe_core::time::{Time, PS_PER_US};
use std::collections::BTreeMap;

/// The release lateness a run may reach at its 99th percentile and still count as kept up:
/// 1 % of the shortest round-trip propagation delay of its flows (what an RTT sample may be
/// off by), but at least this floor (the wake-up delay of a loaded virtual machine).
pub const LATENESS_FLOOR_PS: Time = 100 * PS_PER_US;
pub const LATENESS_SHARE_OF_RTT: f64 = 0.01;

/// What an emulation knows at its end, besides the relay's and the sampler's reports.
pub struct EmulatedRun<'a> {
    pub scenario: &'a Scenario,
    /// When the run started (the relay's clock), from which flows' times are counted.
    pub epoch: Time,
    pub flows: Vec<EmulatedFlow<'a>>,
    /// The hosts' namespaces, whose kernel counters are read at the end.
    pub namespaces: Vec<&'a Namespace>,
    /// The kernel's congestion control algorithms.
    pub available: &'a [String],
    /// How long the namespaces and connections took to set up.
    pub setup_ps: Time,
    pub spin_margin_ps: Time,
    /// TUN offloads asked for, and the kernel's refusal if it refused.
    pub tun_offload_asked: bool,
    pub offload_refused: Option<&'a str>,
    /// Where the kernel departs from the scenario, one sentence each.
    pub notes: &'a [String],
}

/// One flow at the end of an emulation.
pub struct EmulatedFlow<'a> {
    pub spec: &'a FlowSpec,
    pub udp: bool,
    /// The sending and receiving applications' counters.
    pub counters: CountersSnapshot,
    /// What the kernel was asked (TCP flows).
    pub knobs: Option<&'a FlowKnobs>,
    /// What the kernel granted the sending and the receiving socket (TCP flows).
    pub granted_sender: Option<Granted>,
    pub granted_receiver: Option<Granted>,
}

/// The emulated run's result document (docs/core-interface.md, docs/emulation.md).
pub fn document(emu: &EmulatedRun, relay: RelayReport, sampler: SamplerOutput) -> EmulationOutput {
    let epoch = emu.epoch;
    let flows: Vec<RealFlow> = emu
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if f.udp {
                RealFlow::Udp(Box::new(udp_flow(f, &relay, i)))
            } else {
                RealFlow::Tcp(Box::new(tcp_flow(f, &relay.flows[i], &sampler.finals[i], epoch)))
            }
        })
        .collect();
    let limit = lateness_limit(emu.scenario);
    let hosts: Vec<HostCounters> = emu.namespaces.iter().map(|ns| host_counters(ns)).collect();
    let host_drops: u64 = hosts.iter().map(|h| h.tun_tx_dropped.unwrap_or(0) + h.tun_rx_dropped.unwrap_or(0)).sum();
    // The relay's own lateness: against the interrupts (the release times without coalescing).
    let p99 = relay.interrupt_lateness.quantile_ps(0.99).unwrap_or(0);
    let kept_up = p99 <= limit && relay.delivery_errors == 0 && host_drops == 0;
    let emulation = EmulationFacts {
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default(),
        available_congestion_control: emu.available.to_vec(),
        setup_ps: emu.setup_ps,
        kept_up,
        release_lateness: ReleaseLateness {
            packets: relay.lateness.count(),
            median_ps: relay.lateness.quantile_ps(0.5),
            p99_ps: relay.lateness.quantile_ps(0.99),
            max_ps: (relay.lateness.count() > 0).then_some(relay.lateness.max_ps()),
            limit_p99_ps: limit,
        },
        interrupt_lateness: stats(&relay.interrupt_lateness),
        coalescing_delay: stats(&relay.coalescing_delay),
        relay: RelayFacts {
            realtime_priority: relay.realtime_priority,
            spin_margin_ps: emu.spin_margin_ps,
            cpu_s: relay.cpu_s,
            foreign_packets: relay.foreign_packets,
            other_packets: relay.other_packets,
            delivery_errors: relay.delivery_errors,
            tun: TunTraffic {
                offload_asked: emu.tun_offload_asked,
                offload: emu.tun_offload_asked && emu.offload_refused.is_none(),
                offload_refused: emu.offload_refused.map(String::from),
                reads: relay.reads.reads,
                packets_read: relay.reads.segments,
                super_packets_read: relay.reads.super_packets,
                super_packet_segments_read: relay.reads.super_packet_segments,
                super_packet_bytes_read: relay.reads.super_packet_bytes,
                writes: relay.writes.writes,
                packets_written: relay.writes.segments,
                super_packets_written: relay.writes.super_packets,
                super_packet_segments_written: relay.writes.super_packet_segments,
                interrupts: relay.writes.interrupts,
            },
        },
        hosts,
        notes: emu.notes.to_vec(),
    };
    EmulationOutput {
        summary: EmulationSummary {
            name: emu.scenario.name.clone(),
            seed: emu.scenario.seed,
            duration_ps: emu.scenario.duration_ps,
            events: relay.events,
            flows,
            links: relay.links,
            captures: relay.captures,
            emulation,
        },
        flow_series: sampler.series,
        queue_series: relay.queue_series,
    }
}

/// What a run on real sockets knows of a TCP flow at its end, wherever its two ends ran (the
/// emulator holds both; `fatpipe probe` brings each host's readings together).
pub struct TcpFlowEnd<'a> {
    pub spec: &'a FlowSpec,
    /// The kernel's name of the algorithm asked for.
    pub congestion_asked: &'a str,
    /// The sending and receiving sockets' last TCP_INFO and what the kernel granted them.
    pub sender: Option<Sampled>,
    pub receiver: Option<Sampled>,
    pub granted_sender: Option<Granted>,
    pub granted_receiver: Option<Granted>,
    /// The largest window the receiver announced, as the sender saw it.
    pub max_peer_window_bytes: u32,
    /// The sending and the receiving application's counters.
    pub sent: &'a CountersSnapshot,
    pub got: &'a CountersSnapshot,
    pub notes: &'a [String],
}

/// A TCP flow's summary entry with the keys a real stack fills (docs/emulation.md), and the
/// section of what the kernel was asked and granted (the caller files it under its name).
pub fn tcp_entry(f: &TcpFlowEnd) -> (RealTcpFlow, TcpKernel) {
    let spec = f.spec;
    let t = spec.tcp();
    let read = f.got.read;
    let tx = f.sender.map(|s| s.info);
    let options = tx.map(|i| i.options).unwrap_or(0);
    let completed = match &spec.source {
        SourceSpec::Bulk(b) => b.bytes.is_some_and(|bytes| read >= bytes),
        _ => false,
    };
    let congestion = f.granted_sender.as_ref().map(|g| g.congestion.clone());
    let measured = |field: Field| f.sender.filter(|s| s.has(field)).map(|s| s.info);
    let entry = RealTcpFlow {
        name: spec.name.clone(),
        group: spec.group.clone(),
        algorithm: congestion.clone(),
        mss_bytes: tx.map(|i| i.snd_mss),
        header_bytes: IPV4_TCP_HEADER_BYTES
            + if options & OPT_TIMESTAMPS != 0 { TCP_TIMESTAMPS_OPTION_BYTES } else { 0 },
        start_ps: spec.source.start_ps(),
        end_ps: f.got.last_read_ps,
        completed,
        bytes_delivered: f.receiver.map_or(0, |r| r.info.bytes_received),
        bytes_read: read,
        bytes_written: f.sent.written,
        // Without a sending socket nothing was sent; with one, only a kernel that reports it.
        bytes_sent: if tx.is_some() { measured(Field::BytesSent).map(|i| i.bytes_sent) } else { Some(0) },
        segments_sent: tx.map(|i| u64::from(i.data_segs_out)),
        segments_retransmitted: tx.map(|i| u64::from(i.total_retrans)),
        timeouts: measured(Field::TotalRto).map(|i| u64::from(i.total_rto)),
        cwnd_segments: tx.map(|i| i.snd_cwnd),
        ssthresh_segments: tx.map(|i| (i.snd_ssthresh < INFINITE_SSTHRESH).then_some(i.snd_ssthresh)),
        srtt_ps: tx.map(|i| (i.rtt_us > 0).then_some(i.rtt_us as u64 * PS_PER_US)),
        min_rtt_ps: tx
            .map(|i| (i.min_rtt_us > 0 && i.min_rtt_us != u32::MAX).then_some(i.min_rtt_us as u64 * PS_PER_US)),
        out_of_order_segments: f.receiver.filter(|r| r.has(Field::RcvOooPack)).map(|r| u64::from(r.info.rcv_ooopack)),
        bursts: f.sent.bursts,
        failed_burst_cycles: f.sent.failed_cycles,
        connections: 1,
        data_packets_lost: None,
        data_bytes_lost: None,
        retransmissions_lost: None,
        ack_packets_lost: None,
        setup_packets_lost: None,
        first_send_ps: None,
        syn_retransmits: None,
        synack_retransmits: None,
        emulation: None,
        probe: None,
    };
    let kernel = TcpKernel {
        writer: if matches!(spec.source, SourceSpec::Burst(_)) { "burst" } else { "bulk" }.into(),
        congestion_control: congestion,
        congestion_control_asked: f.congestion_asked.into(),
        mss_asked_bytes: t.mss_bytes,
        snd_buffer_asked_bytes: t.snd_buffer_bytes,
        snd_buffer_granted_bytes: f.granted_sender.as_ref().map(|g| g.snd_buffer_bytes),
        rcv_buffer_asked_bytes: t.rcv_buffer_bytes,
        rcv_buffer_granted_bytes: f.granted_receiver.as_ref().map(|g| g.rcv_buffer_bytes),
        max_receiver_window_bytes: f.max_peer_window_bytes,
        negotiated: Negotiated {
            timestamps: options & OPT_TIMESTAMPS != 0,
            sack: options & OPT_SACK != 0,
            window_scaling: options & OPT_WSCALE != 0,
            ecn: options & OPT_ECN != 0,
        },
        notes: f.notes.to_vec(),
        bpf_program: None,
        wire_data_segments: None,
        wire_retransmitted_segments: None,
        sender: None,
        path_mtu_bytes: None,
    };
    (entry, kernel)
}

/// A UDP flow's summary entry from its applications: what the sender sent and the receiver
/// got (losses and what was in flight are the caller's: only the network knows them).
pub fn udp_entry(spec: &FlowSpec, sent: &CountersSnapshot, got: &CountersSnapshot) -> RealUdpFlow {
    RealUdpFlow {
        name: spec.name.clone(),
        source: spec.source.kind().into(),
        payload_bytes: spec.source.udp_payload_bytes(),
        header_bytes: IPV4_UDP_HEADER_BYTES,
        start_ps: spec.source.start_ps(),
        end_ps: got.last_read_ps,
        bytes_sent: sent.written,
        bytes_delivered: got.read,
        datagrams_sent: sent.datagrams_sent,
        datagrams_received: got.datagrams_received,
        datagrams_lost: None,
        bytes_lost: None,
        datagrams_in_flight_at_end: None,
        emulation: None,
        probe: None,
    }
}

fn tcp_flow(f: &EmulatedFlow, net: &FlowNet, last: &FinalState, epoch: Time) -> RealTcpFlow {
    // Bytes read as of the receiver's last TCP_INFO (`FinalState::read_bytes`).
    let counters = CountersSnapshot { read: last.read_bytes, ..f.counters.clone() };
    let knobs = f.knobs.expect("TCP flows have knobs");
    let (mut e, mut kernel) = tcp_entry(&TcpFlowEnd {
        spec: f.spec,
        congestion_asked: &knobs.congestion,
        sender: last.sender,
        receiver: last.receiver,
        granted_sender: f.granted_sender.clone(),
        granted_receiver: f.granted_receiver.clone(),
        max_peer_window_bytes: last.max_peer_window_bytes,
        sent: &counters,
        got: &counters,
        notes: &knobs.notes,
    });
    kernel.bpf_program = Some(knobs.bpf_program.clone());
    kernel.wire_data_segments = Some(net.data_segments);
    kernel.wire_retransmitted_segments = Some(net.retransmitted_segments);
    e.data_packets_lost = Some(net.data_packets_lost);
    e.data_bytes_lost = Some(net.data_bytes_lost);
    e.retransmissions_lost = Some(net.retransmissions_lost);
    e.ack_packets_lost = Some(net.ack_packets_lost);
    e.setup_packets_lost = Some(net.setup_packets_lost);
    e.first_send_ps = Some(net.first_data_ps.map(|t| t.saturating_sub(epoch)));
    e.syn_retransmits = Some(net.syns.saturating_sub(1));
    e.synack_retransmits = Some(net.synacks.saturating_sub(1));
    e.emulation = Some(kernel);
    e
}

fn udp_flow(f: &EmulatedFlow, relay: &RelayReport, i: usize) -> RealUdpFlow {
    let net = &relay.flows[i];
    let c = &f.counters;
    let mut e = udp_entry(f.spec, c, c);
    e.bytes_lost = Some(net.datagram_bytes_lost);
    e.datagrams_lost = Some(net.datagrams_lost);
    e.datagrams_in_flight_at_end = Some(relay.datagrams_in_flight[i]);
    // Sent by the application but never seen by the relay, or delivered by the relay and
    // never read: lost inside the hosts' kernels.
    let in_hosts = c.datagrams_sent.saturating_sub(net.datagrams_entered)
        + net.datagrams_delivered.saturating_sub(c.datagrams_received);
    e.emulation = Some(UdpHosts { datagrams_dropped_in_hosts: in_hosts });
    e
}

fn stats(l: &crate::lateness::Lateness) -> LatenessStats {
    LatenessStats {
        packets: l.count(),
        median_ps: l.quantile_ps(0.5),
        p99_ps: l.quantile_ps(0.99),
        max_ps: (l.count() > 0).then_some(l.max_ps()),
    }
}

/// The lateness limit of `LATENESS_SHARE_OF_RTT` for the scenario's flows.
fn lateness_limit(scenario: &Scenario) -> Time {
    let routes = scenario.routing_table();
    let one_way = |mut from: u32, to: u32| -> Time {
        let mut delay = 0;
        for _ in 0..scenario.nodes.len() {
            if from == to {
                break;
            }
            let Some(l) = routes.get(from, to) else { break };
            let link = &scenario.links[l as usize];
            delay += link.delay_ps;
            from = link.to;
        }
        delay
    };
    let min_rtt = scenario.flows.iter().map(|f| one_way(f.src, f.dst) + one_way(f.dst, f.src)).min().unwrap_or(0);
    ((min_rtt as f64 * LATENESS_SHARE_OF_RTT) as Time).max(LATENESS_FLOOR_PS)
}

/// A host's kernel counters at the end: its TUN device's drops (/proc/net/dev), its qdisc's
/// (rtnetlink), and every
/// non-zero TCP extended counter (/proc/net/netstat TcpExt: fast retransmits, loss probes,
/// undos...), read from inside its namespace.
fn host_counters(ns: &Namespace) -> HostCounters {
    let read = ns.run(|| {
        let dev = std::fs::read_to_string("/proc/thread-self/net/dev")?;
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat")?;
        Ok((dev, netstat, crate::rtnl::root_qdisc(crate::tun::DEVICE).ok()))
    });
    let mut out = HostCounters {
        name: ns.name.clone(),
        namespace_inode: ns.inode().ok(),
        tun_rx_dropped: None,
        tun_tx_dropped: None,
        qdisc: None,
        tcp_ext: None,
    };
    let Ok((dev, netstat, qdisc)) = read else { return out };
    out.qdisc = qdisc;
    for line in dev.lines() {
        let Some((name, rest)) = line.split_once(':') else { continue };
        if name.trim() == crate::tun::DEVICE {
            let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            // Receive: bytes packets errs drop ...; transmit from the 9th column on.
            if v.len() >= 12 {
                out.tun_rx_dropped = Some(v[3]);
                out.tun_tx_dropped = Some(v[11]);
            }
        }
    }
    out.tcp_ext = tcp_ext(&netstat).map(|counters| counters.into_iter().filter(|&(_, n)| n > 0).collect());
    out
}

/// The TcpExt counters of /proc/net/netstat (a names line, then a values line).
pub fn tcp_ext(netstat: &str) -> Option<BTreeMap<String, u64>> {
    let lines: Vec<&str> = netstat.lines().filter(|l| l.starts_with("TcpExt:")).collect();
    let [names, values] = lines[..] else { return None };
    Some(
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .skip(1)
            .filter_map(|(k, v)| v.parse::<u64>().ok().map(|n| (k.to_string(), n)))
            .collect(),
    )
}
