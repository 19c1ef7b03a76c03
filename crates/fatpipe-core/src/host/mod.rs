//! The sending and receiving hosts' own elements, between TCP and the wire: what a Linux host
//! does to a flow's packets at 1-10 Gb/s besides congestion control (issue 26). One file per
//! element, each after the Linux source it names, each off unless the flow's `host`
//! settings turn it on (`HostConfig`; the scenario's `[flows.host]`, documented with defaults
//! and sources in `docs/scenario.md`):
//! - `pacing.rs`: TCP's internal pacing (`tcp_update_pacing_rate`, `tcp_update_skb_after_send`);
//! - `tso.rs`: TSO/GSO autosizing (`tcp_tso_autosize`): a paced flow leaves its host in
//!   line-rate trains of one super-segment each;
//! - `fq.rs`: the fq qdisc's per-flow maxrate (`sch_fq.c` `fq_dequeue`) on the sender's
//!   interface, which also makes Linux pace the flow; `fq_sched.rs`: its deficit round robin
//!   among the flows sharing an interface (quantum, initial quantum, new and old flows,
//!   flow_limit, horizon), a scheduler no link runs yet (links are first in, first out);
//! - `gro.rs`: the receiver's GRO and interrupt coalescing (`tcp_gro_receive`, `rx-usecs`):
//!   what arrives back to back reaches TCP as one super-segment, and one ACK covers it;
//! - `tsq.rs`: TCP Small Queues (`tcp_small_queue_check`, `tcp_wfree`): at most about 1 ms
//!   of the pacing rate below TCP, in the interface's queue and ring; the sender resumes
//!   when the NIC frees the bytes.

pub mod fq;
pub mod fq_sched;
pub mod gro;
pub mod pacing;
pub mod tso;
pub mod tsq;

use crate::time::Time;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A flow's host elements. The Python layer fills every field (the defaults and their
/// sources live in `python/fatpipe/scenario/host.py`); a flow without a `host` table in the
/// normalized document runs none of them.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct HostConfig {
    /// Linux's internal pacing (`pacing.rs`): the pacing rate is
    /// `pacing_ss_ratio_percent` (slow start: cwnd < ssthresh / 2) or `pacing_ca_ratio_percent`
    /// of max(cwnd, packets out) x MSS / SRTT (`tcp_update_pacing_rate`), or the algorithm's
    /// own (BBR); a segment's departure follows `tcp_update_skb_after_send` (the first 10
    /// segments unpaced, half a gap forgiven for lateness). Linux paces so when the fq qdisc
    /// is on the interface, when the algorithm asks (BBR) or with SO_MAX_PACING_RATE.
    pub linux_pacing: bool,
    /// Linux `net.ipv4.tcp_pacing_ss_ratio`, percent.
    pub pacing_ss_ratio_percent: u32,
    /// Linux `net.ipv4.tcp_pacing_ca_ratio`, percent.
    pub pacing_ca_ratio_percent: u32,
    /// TSO/GSO (`tso.rs`): a paced sender hands out super-segments of
    /// `tcp_tso_autosize` segments that leave back to back; pacing spaces the super-segments.
    pub tso: bool,
    /// The interface's `gso_max_size` (`ip link`), bytes; the socket's `sk_gso_max_size` is
    /// this less `MAX_TCP_HEADER` + 1.
    pub gso_max_size_bytes: u32,
    /// Linux `net.ipv4.tcp_min_tso_segs`.
    pub min_tso_segs: u32,
    /// Linux `net.ipv4.tcp_tso_rtt_log`: TSO's allowance for near peers halves every
    /// 2^this microseconds of minimum RTT.
    pub tso_rtt_log: u32,
    /// Linux `sk_pacing_shift`: a super-segment holds about 2^-this seconds of the pacing rate.
    pub pacing_shift: u32,
    /// The receiving host's GRO (`gro.rs`): segments that arrive together reach TCP as one.
    pub gro: bool,
    /// The receiving interface's `gro_max_size`, bytes: a super-segment stays below it.
    pub gro_max_size_bytes: u32,
    /// Interrupt coalescing, ethtool `rx-usecs`: the receiving NIC interrupts this long after
    /// the first frame that finds no interrupt pending (with GRO on).
    pub rx_coalesce_ps: Time,
    /// ethtool `rx-frames`: or once this many frames have arrived.
    pub rx_frames: u32,
    /// The fq qdisc on the sender's interface (`fq.rs`): Linux paces the flow as with
    /// `linux_pacing` (`SK_PACING_FQ`).
    pub fq: bool,
    /// fq's `maxrate`, bits per second on the wire (the qdisc's packet length: IP bytes and
    /// the Ethernet header); None: unlimited.
    pub fq_maxrate_bps: Option<u64>,
    /// TCP Small Queues (`tsq.rs`): the sender keeps at most max(2 skbs, rate >>
    /// `pacing_shift`) bytes in its interface's queue and ring, capped by
    /// `limit_output_bytes` when Linux does not pace it.
    pub tsq: bool,
    /// Linux `net.ipv4.tcp_limit_output_bytes`, bytes.
    pub limit_output_bytes: u64,
}

/// The scenario's `[flows.host]` left empty (every element off, Linux's values), as the Python
/// tables write it to `python/fatpipe/schemas/host-defaults.json`: the one builder for tests,
/// which make configs without Python (tests/test_host_elements.py keeps the file current).
/// Read once: an algorithm that works out what Linux's host would do with its default
/// settings (HyStart's ACK-train allowance) asks for it per ACK.
pub fn scenario_defaults() -> HostConfig {
    static DEFAULTS: std::sync::OnceLock<HostConfig> = std::sync::OnceLock::new();
    *DEFAULTS.get_or_init(|| {
        serde_json::from_str(include_str!("../../../../python/fatpipe/schemas/host-defaults.json"))
            .expect("host-defaults.json is a HostConfig")
    })
}

impl HostConfig {
    /// Linux computes departure times for the flow (`sk_pacing_status` set): its own
    /// pacing, or fq's.
    pub fn linux_paces(&self) -> bool {
        self.linux_pacing || self.fq
    }
}
