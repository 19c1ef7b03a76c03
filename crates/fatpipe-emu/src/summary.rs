//! The result document of a run on real sockets, as types: an emulation's (`output.rs` fills
//! it) and, for its flows, a probe's (fatpipe-probe's `merge.rs`). It has the shape of a
//! simulation's (`fatpipe_core::sim::Output`) so that the Python side reads both alike, and
//! its JSON Schema, `emulation-results.schema.json`, is generated from these types as the
//! simulator's is from its own (`emulation_schema`, `tests/contract.rs`).
//!
//! A flow's entry has the keys a real stack can fill; a key it cannot is absent, never zero
//! ("not measured", docs/emulation.md): such fields are `Option`s left out when `None`, and
//! `Option<Option<_>>` where a measured value may itself be null (no ssthresh yet).

use crate::sampler::FlowColumns;
use fatpipe_core::probe::QueueSeries;
use fatpipe_core::sim::{CaptureSummary, LinkSummary};
use fatpipe_core::time::Time;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

/// What `Emulation::finish` returns (docs/core-interface.md, docs/emulation.md).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmulationOutput {
    pub summary: EmulationSummary,
    /// One row per sample per flow: a simulation's columns and TCP_INFO's own.
    pub flow_series: FlowColumns,
    /// One row per sample per link, from the relay's links.
    pub queue_series: QueueSeries,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmulationSummary {
    pub name: String,
    pub seed: u64,
    pub duration_ps: Time,
    /// Events the relay processed.
    pub events: u64,
    /// One entry per flow, in scenario order.
    pub flows: Vec<RealFlow>,
    /// The relay's links, as a simulation reports them.
    pub links: Vec<LinkSummary>,
    pub captures: Vec<CaptureSummary>,
    pub emulation: EmulationFacts,
}

/// A flow on a real stack; `transport` says which kind.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum RealFlow {
    // Both boxed: the two entries differ in size, and a summary holds few.
    Tcp(Box<RealTcpFlow>),
    Udp(Box<RealUdpFlow>),
}

/// A TCP flow: TCP_INFO of the sending socket (absent without one), the receiving socket's
/// bytes and the applications' counters; what the network did, where a relay saw it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RealTcpFlow {
    pub name: String,
    pub group: Option<String>,
    /// The algorithm the sending socket ran (read back from the kernel).
    pub algorithm: Option<String>,
    /// tcpi_snd_mss.
    pub mss_bytes: Option<u32>,
    pub header_bytes: u32,
    pub start_ps: Time,
    /// When the receiving application last read.
    pub end_ps: Option<Time>,
    pub completed: bool,
    pub bytes_delivered: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// tcpi_bytes_sent (Linux 4.19); 0 without a sending socket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments_retransmitted: Option<u64>,
    /// tcpi_total_rto (Linux 6.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwnd_segments: Option<u32>,
    /// Null while the kernel's is "infinite" (unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssthresh_segments: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_ps: Option<Option<Time>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_ps: Option<Option<Time>>,
    /// tcpi_rcv_ooopack of the receiving socket (Linux 5.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order_segments: Option<u64>,
    pub bursts: u64,
    pub failed_burst_cycles: u64,
    pub connections: u64,
    /// What the relay saw (an emulation; a probe sees no network).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_packets_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_bytes_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_packets_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_packets_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_send_ps: Option<Option<Time>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syn_retransmits: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synack_retransmits: Option<u64>,
    /// What the kernel was asked and granted, in an emulation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulation: Option<TcpKernel>,
    /// The same, in a probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<TcpKernel>,
}

/// What the kernel was asked for a TCP flow and what it granted.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpKernel {
    /// The sending application: "bulk" or "burst".
    pub writer: String,
    /// The algorithm the sending socket runs, read back (TCP_CONGESTION).
    pub congestion_control: Option<String>,
    pub congestion_control_asked: String,
    pub mss_asked_bytes: u32,
    pub snd_buffer_asked_bytes: u64,
    pub snd_buffer_granted_bytes: Option<u64>,
    pub rcv_buffer_asked_bytes: u64,
    pub rcv_buffer_granted_bytes: Option<u64>,
    /// The largest window the receiver announced, as the sender saw it.
    pub max_receiver_window_bytes: u32,
    /// The options the handshake agreed (tcpi_options).
    pub negotiated: Negotiated,
    /// Where the kernel departs from what the flow asks, one sentence each.
    pub notes: Vec<String>,
    /// The BPF program that ran the algorithm, when fatpipe registered one (an emulation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bpf_program: Option<Option<String>>,
    /// Data segments and retransmissions the relay carried (an emulation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire_data_segments: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire_retransmitted_segments: Option<u64>,
    /// Which host sent, "controller" or "daemon" (a probe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// tcpi_pmtu of the sending socket (a probe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_mtu_bytes: Option<Option<u32>>,
}

#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Negotiated {
    pub timestamps: bool,
    pub sack: bool,
    pub window_scaling: bool,
    pub ecn: bool,
}

/// A UDP flow: the applications' counts; losses where they are known.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RealUdpFlow {
    pub name: String,
    /// The source's kind (udp_cbr, udp_burst, udp_onoff).
    pub source: String,
    pub payload_bytes: Option<u32>,
    pub header_bytes: u32,
    pub start_ps: Time,
    pub end_ps: Option<Time>,
    pub bytes_sent: u64,
    pub bytes_delivered: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Lost in the network (an emulation's relay) or the gaps in the datagram numbers (a
    /// probe, when the numbers tell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datagrams_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datagrams_in_flight_at_end: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulation: Option<UdpHosts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<UdpProbe>,
}

/// Datagrams lost inside the hosts' kernels: sent but never seen by the relay, or delivered
/// by it and never read.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpHosts {
    pub datagrams_dropped_in_hosts: u64,
}

/// Which host sent a probe's UDP flow and how its losses were counted.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpProbe {
    pub sender: String,
    pub loss_count: String,
}

/// The summary's `emulation` section (docs/emulation.md).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmulationFacts {
    /// /proc/sys/kernel/osrelease.
    pub kernel: String,
    pub available_congestion_control: Vec<String>,
    /// How long the namespaces and connections took to set up.
    pub setup_ps: Time,
    /// The relay kept up: lateness within its limit, no delivery errors, no host drops.
    pub kept_up: bool,
    /// Against the links' release times; with interrupt coalescing this includes the
    /// delay it adds.
    pub release_lateness: ReleaseLateness,
    /// Against the receiving device's interrupt each packet was due at (its release time
    /// without coalescing, so then the same as release_lateness): the relay's own lateness,
    /// which kept_up judges.
    pub interrupt_lateness: LatenessStats,
    /// The delay interrupt coalescing added to each packet: its interrupt's time less its
    /// release time (0 without coalescing; docs/emulation.md, "Interrupt coalescing").
    pub coalescing_delay: LatenessStats,
    pub relay: RelayFacts,
    pub hosts: Vec<HostCounters>,
    pub notes: Vec<String>,
}

/// How late the relay released packets against their scheduled times.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseLateness {
    pub packets: u64,
    pub median_ps: Option<Time>,
    pub p99_ps: Option<Time>,
    pub max_ps: Option<Time>,
    pub limit_p99_ps: Time,
}

/// A distribution of per-packet delays (1 us bins; the maximum exact).
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LatenessStats {
    pub packets: u64,
    pub median_ps: Option<Time>,
    pub p99_ps: Option<Time>,
    pub max_ps: Option<Time>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelayFacts {
    pub realtime_priority: bool,
    pub spin_margin_ps: Time,
    pub cpu_s: f64,
    pub foreign_packets: u64,
    pub other_packets: u64,
    pub delivery_errors: u64,
    pub tun: TunTraffic,
}

/// The hosts' TUN devices: whether they carried super-packets (`IFF_VNET_HDR` with TSO
/// offload, docs/emulation.md) and what the relay read from and wrote into them.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TunTraffic {
    /// Offloads asked for (`--no-tun-offload` turns them off) and granted on every device.
    pub offload_asked: bool,
    pub offload: bool,
    /// The kernel's refusal, when it refused (the relay then passes one packet per call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload_refused: Option<String>,
    /// Reads that returned a packet, and the packets they carried (a super-packet counts
    /// its segments).
    pub reads: u64,
    pub packets_read: u64,
    /// Super-packets read (TSO), their segments and their IP bytes.
    pub super_packets_read: u64,
    pub super_packet_segments_read: u64,
    pub super_packet_bytes_read: u64,
    /// Writes into the devices, and the packets they carried.
    pub writes: u64,
    pub packets_written: u64,
    /// Super-packets written (GRO), and their segments.
    pub super_packets_written: u64,
    pub super_packet_segments_written: u64,
    /// Interrupts: the times a device's held packets were written together (one per
    /// relay pass and device without coalescing).
    pub interrupts: u64,
}

/// A host's kernel counters at the end, read inside its namespace.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostCounters {
    pub name: String,
    pub namespace_inode: Option<u64>,
    /// The TUN device's drops (/proc/net/dev), when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tun_rx_dropped: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tun_tx_dropped: Option<u64>,
    /// The TUN device's root qdisc (`tc -s qdisc show dev fp0`), when it could be read: a
    /// drop there refused a packet to the host's TCP, which then entered CWR (local
    /// congestion, `tcp_enter_cwr`) where a simulated host would not (docs/emulation.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<crate::rtnl::QdiscStats>,
    /// Every non-zero TcpExt counter (/proc/net/netstat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_ext: Option<BTreeMap<String, u64>>,
}

/// JSON Schema of `Emulation::finish`'s output. Keys a real stack may not fill are optional;
/// no other key is allowed.
pub fn emulation_schema() -> serde_json::Value {
    fatpipe_core::schema::output_schema::<EmulationOutput>(
        "fatpipe emulation results",
        "What Emulation::finish returns (docs/emulation.md).",
    )
}
