//! Probes: per-flow and per-queue state sampled at a fixed interval into columns.
//!
//! Sampling costs O(flows + links) per interval and nothing per packet.

use crate::net::Link;
use crate::time::Time;
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

impl QueueSeries {
    /// One sample of every link at `now` (the simulation's probe and the emulator's).
    pub fn sample(&mut self, now: Time, links: &[Link]) {
        for (i, link) in links.iter().enumerate() {
            self.time_ps.push(now);
            self.link.push(i as u32);
            self.queue_packets.push(link.queue().len_packets() as u64);
            self.queue_bytes.push(link.queue().len_bytes());
            self.drops_packets.push(link.stats.drops_packets);
            self.departed_bytes.push(link.stats.bytes_sent);
        }
    }
}
