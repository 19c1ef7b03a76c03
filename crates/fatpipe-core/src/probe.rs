//! Probes: per-flow and per-queue state sampled at a fixed interval into columns.
//!
//! Sampling costs O(flows + links) per interval and nothing per packet. The tables are
//! declared with `columns!`, which also gives each its list of columns (`into_columns`): the
//! field names are the column names Python receives, defined once.

use crate::net::queue::holding::AqmStats;
use crate::net::Link;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Serialize;

/// One column of a table, moved out whole (Python views its memory without a copy).
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    F64(Vec<f64>),
}

impl From<Vec<u64>> for Column {
    fn from(v: Vec<u64>) -> Self {
        Column::U64(v)
    }
}

impl From<Vec<i64>> for Column {
    fn from(v: Vec<i64>) -> Self {
        Column::I64(v)
    }
}

impl From<Vec<u32>> for Column {
    fn from(v: Vec<u32>) -> Self {
        Column::U32(v)
    }
}

impl From<Vec<f64>> for Column {
    fn from(v: Vec<f64>) -> Self {
        Column::F64(v)
    }
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Declares a table of columns (`Vec`s of one length) with `into_columns` and `reserve`.
#[macro_export]
macro_rules! columns {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[doc = $doc:expr])* pub $field:ident: Vec<$ty:ty>,)* }) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[doc = $doc])* pub $field: Vec<$ty>,)*
        }

        impl $name {
            /// The columns in declaration order, moved out.
            pub fn into_columns(self) -> Vec<(&'static str, $crate::probe::Column)> {
                vec![$((stringify!($field), $crate::probe::Column::from(self.$field)),)*]
            }

            /// Room for `rows` more rows in every column, so that filling them never copies.
            pub fn reserve(&mut self, rows: usize) {
                $(self.$field.reserve_exact(rows);)*
            }
        }
    };
}

columns! {
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
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
}

columns! {
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueSeries {
    pub time_ps: Vec<u64>,
    pub link: Vec<u32>,
    pub queue_packets: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    /// Cumulative drops.
    pub drops_packets: Vec<u64>,
    /// Cumulative wire bytes transmitted.
    pub departed_bytes: Vec<u64>,
    /// RED's average queue at the sample, in RED's unit (packets, or cells where the queue
    /// counts cells), as the next arrival would find it before adding itself (decayed over
    /// an idle spell); -1 for other disciplines.
    pub red_avg_packets: Vec<f64>,
    /// Cumulative drops by an active queue manager: RED's early drops, CoDel's and
    /// FQ-CoDel's control-law drops at dequeue.
    pub early_drops_packets: Vec<u64>,
    /// Cumulative CE marks (RED, CoDel, FQ-CoDel's control law and ce_threshold).
    pub ecn_marks: Vec<u64>,
    /// CoDel, FQ-CoDel: the sojourn time of the latest packet to leave the queue before the
    /// sample; -1 for other disciplines and before the first departure.
    pub sojourn_ps: Vec<i64>,
    /// CoDel: 1 in its dropping state, else 0; FQ-CoDel: how many flow queues are in it;
    /// -1 for other disciplines.
    pub aqm_dropping: Vec<i64>,
    /// CoDel: its count (drops since entering the dropping state, the control law's
    /// count); FQ-CoDel: the largest count among the queues in the dropping state; -1 for
    /// other disciplines.
    pub aqm_control: Vec<f64>,
    /// DualPI2: packets waiting in its L4S queue (the classic queue's are queue_packets
    /// minus these); -1 for other disciplines.
    pub l4s_queue_packets: Vec<i64>,
    /// DualPI2: the sojourn time of the latest packet to leave its L4S queue (sojourn_ps is
    /// then the classic queue's); -1 for other disciplines and before the first.
    pub l4s_sojourn_ps: Vec<i64>,
    /// DualPI2: the classic queue's drop/mark probability p_C = p'^2 and the L4S queue's
    /// coupled marking probability p_CL = min(k p', 1) (aqm_control is p'); -1 for others.
    pub prob_classic: Vec<f64>,
    pub prob_l4s_coupled: Vec<f64>,
}
}

columns! {
/// Every flow's counters at one moment (for reports while a run goes on), one row per flow.
#[derive(Clone, Debug, Default)]
pub struct FlowCounters {
    /// Bytes delivered in order to the receiving application, cumulative.
    pub delivered_bytes: Vec<u64>,
    /// Payload bytes put on the wire, retransmissions included, cumulative.
    pub sent_bytes: Vec<u64>,
    /// TCP: data segments sent, retransmissions included (UDP: datagrams sent).
    pub segments_sent: Vec<u64>,
    /// TCP: segments retransmitted (0 for UDP).
    pub segments_retransmitted: Vec<u64>,
    /// Bytes sent and not yet acknowledged (UDP: datagram bytes in flight).
    pub outstanding_bytes: Vec<u64>,
    /// UDP: datagrams lost (0 for TCP).
    pub datagrams_lost: Vec<u64>,
    /// -1 for a UDP flow.
    pub cwnd_segments: Vec<i64>,
    /// -1 before the first RTT sample (always for a UDP flow).
    pub srtt_ps: Vec<i64>,
    /// TCP: the retransmission timeout now, backoff included (-1 for UDP): what Linux's
    /// TCP_INFO calls tcpi_rto, for comparing a run with the kernel's.
    pub rto_ps: Vec<i64>,
    /// TCP: retransmission timeouts so far (0 for UDP).
    pub timeouts: Vec<u64>,
}
}

impl QueueSeries {
    /// One sample of every link at `now` (the simulation's probe and the emulator's), each
    /// brought up to that moment first (`Link::advance`).
    pub fn sample(&mut self, now: Time, links: &[Link]) {
        for (i, link) in links.iter().enumerate() {
            self.time_ps.push(now);
            self.link.push(i as u32);
            self.queue_packets.push(link.queue().len_packets() as u64);
            self.queue_bytes.push(link.queue().len_bytes());
            self.drops_packets.push(link.stats.drops_packets);
            self.departed_bytes.push(link.stats.bytes_sent);
            self.red_avg_packets.push(link.queue().red_average(now).unwrap_or(-1.0));
            self.early_drops_packets.push(link.stats.early_drops_packets);
            self.ecn_marks.push(link.queue().ecn_marks());
            let held = link.queue().held();
            let dual = held.and_then(|h| h.dualpi2());
            let last = |s: &AqmStats| (s.dequeued > 0).then_some(s.sojourn_last_ps as i64);
            // DualPI2's sojourn_ps is its classic queue's; l4s_sojourn_ps its L4S queue's.
            let sojourn = match dual {
                Some(d) => last(d.lane_stats().1),
                None => held.and_then(|h| last(h.stats())),
            };
            self.sojourn_ps.push(sojourn.unwrap_or(-1));
            let (dropping, control) = held.map_or((-1, -1.0), |h| h.control());
            self.aqm_dropping.push(dropping);
            self.aqm_control.push(control);
            self.l4s_queue_packets.push(dual.map_or(-1, |d| d.l4s_packets() as i64));
            self.l4s_sojourn_ps.push(dual.and_then(|d| last(d.lane_stats().0)).unwrap_or(-1));
            self.prob_classic.push(dual.map_or(-1.0, |d| d.prob_classic()));
            self.prob_l4s_coupled.push(dual.map_or(-1.0, |d| d.prob_l4s_coupled()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_the_serialized_fields_in_order() {
        let serde_keys = |v: serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        let names = |c: Vec<(&'static str, Column)>| c.into_iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>();
        let mut flow_keys = serde_keys(serde_json::to_value(FlowSeries::default()).unwrap());
        let mut flow_names = names(FlowSeries::default().into_columns());
        assert_eq!(flow_names[..2], ["time_ps", "flow"]);
        flow_keys.sort();
        flow_names.sort();
        assert_eq!(flow_keys, flow_names);
        let mut s = QueueSeries::default();
        s.reserve(10);
        s.time_ps.push(5);
        assert!(s.time_ps.capacity() >= 10 && s.link.capacity() >= 10);
        assert_eq!(s.into_columns()[0].1, Column::U64(vec![5]));
    }
}
