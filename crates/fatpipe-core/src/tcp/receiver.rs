//! The TCP receiver: cumulative ACKs, delayed ACKs, an out-of-order queue.
//!
//! Sans-I/O: it is driven by `on_segment` and `on_delayed_ack_timer` with the current time and
//! pushes the ACKs to send into a caller's buffer. It never sees the network or a clock.

use super::config::TcpConfig;
use super::ranges::RangeSet;
use crate::packet::{sack_option_bytes, Ecn, Packet, PacketKind, SackBlocks};
use crate::time::Time;

#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    pub acks_sent: u64,
    pub segments_received: u64,
    pub out_of_order_segments: u64,
    pub duplicate_segments: u64,
    /// Data segments that arrived marked Congestion Experienced (ECN).
    pub ce_segments: u64,
    /// When the in-order byte count last advanced.
    pub last_delivery_ps: Option<Time>,
}

pub struct TcpReceiver {
    flow: u32,
    /// The connection its packets belong to (`Packet::conn`); 0 unless a workload opens several.
    pub conn: u16,
    /// This host (source of ACKs) and the data sender (their destination).
    node: u32,
    peer: u32,
    /// Next byte expected in order; every byte below it has been delivered (RFC 793 RCV.NXT).
    pub rcv_nxt: u64,
    /// Data received above a hole.
    ooo: RangeSet,
    window_bytes: u32,
    delayed_ack: bool,
    ack_every_segments: u32,
    delayed_ack_timeout: Time,
    timestamps: bool,
    header_bytes: u32,
    /// SACK blocks per ACK (RFC 2018: 3 beside timestamps, else 4); 0 without SACK.
    max_sack_blocks: usize,
    /// Blocks reported most recently, most recent first (RFC 2018 section 4).
    recent_blocks: [(u64, u64); 4],
    recent_count: usize,
    /// Segments received since the last ACK.
    unacked_segments: u32,
    /// When the delayed ACK must go out, if one is pending.
    delayed_ack_deadline: Option<Time>,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: Time,
    last_ack_sent: u64,
    /// ECN negotiated; while `ece` is set every ACK carries ECN-Echo (RFC 3168 6.1.3: from a
    /// CE mark until a segment with CWR arrives; Linux `TCP_ECN_DEMAND_CWR`).
    ecn: bool,
    ece: bool,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(flow: u32, node: u32, peer: u32, cfg: &TcpConfig) -> Self {
        TcpReceiver {
            flow,
            conn: 0,
            node,
            peer,
            rcv_nxt: 0,
            ooo: RangeSet::default(),
            window_bytes: cfg.advertised_window_bytes(),
            delayed_ack: cfg.delayed_ack,
            ack_every_segments: cfg.ack_every_segments.max(1),
            delayed_ack_timeout: cfg.delayed_ack_timeout_ps,
            timestamps: cfg.timestamps,
            header_bytes: cfg.header_bytes(),
            max_sack_blocks: match cfg.recovery {
                super::config::Recovery::Sack if cfg.timestamps => 3,
                super::config::Recovery::Sack => 4,
                _ => 0,
            },
            recent_blocks: [(0, 0); 4],
            recent_count: 0,
            unacked_segments: 0,
            delayed_ack_deadline: None,
            ts_recent: 0,
            last_ack_sent: 0,
            ecn: cfg.ecn,
            ece: false,
            stats: ReceiverStats::default(),
        }
    }

    pub fn delayed_ack_deadline(&self) -> Option<Time> {
        self.delayed_ack_deadline
    }

    /// Bytes held above a hole.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.ooo.bytes()
    }

    /// Handles one arriving data segment.
    pub fn on_segment(&mut self, now: Time, seg: &Packet, out: &mut Vec<Packet>) {
        debug_assert_eq!(seg.kind, PacketKind::Data);
        self.stats.segments_received += 1;
        let (start, end) = (seg.seq, seg.end_seq());
        if self.ecn {
            // CWR first: a segment with both CWR and CE asks for ECN-Echo again. A delayed
            // ACK echoes a CE on any segment it covers, since the flag stays set.
            if seg.ecn.has(Ecn::CWR) {
                self.ece = false;
            }
            if seg.ecn.has(Ecn::CE) {
                self.ece = true;
                self.stats.ce_segments += 1;
            }
        }
        // RFC 7323 4.3: remember the timestamp of the segment that the next ACK acknowledges,
        // so that RTT samples include the time an ACK was delayed.
        if self.timestamps && start <= self.last_ack_sent && seg.ts_val >= self.ts_recent {
            self.ts_recent = seg.ts_val;
        }
        if end <= self.rcv_nxt {
            // Everything already received: a spurious retransmission. ACK at once so the
            // sender learns where we are (RFC 5681 4.2).
            self.stats.duplicate_segments += 1;
            self.send_ack(out);
        } else if start > self.rcv_nxt {
            // Above a hole: buffer it and send an immediate duplicate ACK (RFC 5681 4.2).
            self.stats.out_of_order_segments += 1;
            self.ooo.insert(start, end);
            self.update_sack_blocks(start);
            self.send_ack(out);
        } else {
            let had_hole = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some(e) = self.ooo.pop_reached(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            self.stats.last_delivery_ps = Some(now);
            self.unacked_segments += 1;
            if had_hole {
                self.update_sack_blocks(self.rcv_nxt);
            }
            if had_hole || !self.delayed_ack || self.unacked_segments >= self.ack_every_segments {
                // A segment that fills a hole is acknowledged at once (RFC 5681 4.2).
                self.send_ack(out);
            } else if self.delayed_ack_deadline.is_none() {
                self.delayed_ack_deadline = Some(now + self.delayed_ack_timeout);
            }
        }
    }

    /// The delayed-ACK timer expired.
    pub fn on_delayed_ack_timer(&mut self, _now: Time, out: &mut Vec<Packet>) {
        if self.unacked_segments > 0 {
            self.send_ack(out);
        }
        self.delayed_ack_deadline = None;
    }

    /// RFC 2018 section 4: the first block holds the segment that just arrived (if it is above
    /// a hole); then the blocks reported before, as they stand now, most recent first.
    fn update_sack_blocks(&mut self, newest: u64) {
        if self.max_sack_blocks == 0 {
            return;
        }
        let mut blocks = [(0u64, 0u64); 4];
        let mut n = 0;
        let candidates = std::iter::once(newest).chain(self.recent_blocks[..self.recent_count].iter().map(|b| b.0));
        for seq in candidates {
            if n == self.max_sack_blocks {
                break;
            }
            if let Some(r) = self.ooo.containing(seq) {
                if !blocks[..n].contains(&r) {
                    blocks[n] = r;
                    n += 1;
                }
            }
        }
        self.recent_blocks = blocks;
        self.recent_count = n;
    }

    fn send_ack(&mut self, out: &mut Vec<Packet>) {
        self.unacked_segments = 0;
        self.delayed_ack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.stats.acks_sent += 1;
        let mut sack = SackBlocks::default();
        for &(s, e) in &self.recent_blocks[..self.recent_count] {
            sack.push(self.rcv_nxt, s, e);
        }
        out.push(Packet {
            flow: self.flow,
            conn: self.conn,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Ack,
            seq: 0,
            payload_bytes: 0,
            ip_bytes: self.header_bytes + sack_option_bytes(sack.len()),
            ack: self.rcv_nxt,
            window_bytes: self.window_bytes,
            sack,
            ts_val: 0,
            ts_ecr: self.ts_recent,
            retransmission: false,
            ecn: if self.ece { Ecn::ECE } else { Ecn::default() },
        });
    }
}
