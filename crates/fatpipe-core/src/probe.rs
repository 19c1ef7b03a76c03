//! Probes: per-flow and per-queue state sampled at a fixed interval into columns.
//!
//! Sampling costs O(flows + links) per interval and nothing per packet.

use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowSeries {
    pub time_ps: Vec<u64>,
    pub flow: Vec<u32>,
    /// -1 for a UDP flow (no window).
    pub cwnd_segments: Vec<i64>,
    /// -1 while no slow-start threshold is set (always for a UDP flow).
    pub ssthresh_segments: Vec<i64>,
    pub outstanding_bytes: Vec<u64>,
    /// -1 before the first RTT sample (always for a UDP flow).
    pub srtt_ps: Vec<i64>,
    /// Bytes delivered in order to the receiving application, cumulative.
    pub delivered_bytes: Vec<u64>,
    /// Payload bytes put on the wire, retransmissions included, cumulative.
    pub sent_bytes: Vec<u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct QueueSeries {
    pub time_ps: Vec<u64>,
    pub link: Vec<u32>,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    /// Cumulative drops.
    pub drops_packets: Vec<u64>,
    /// Cumulative wire bytes transmitted.
    pub departed_bytes: Vec<u64>,
}
