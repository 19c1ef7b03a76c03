//! `TCP_INFO` (linux/tcp.h `struct tcp_info`) as Linux 6.7 and later fill it. An older
//! kernel fills a prefix; `TcpInfo::has` tells which fields it wrote.

use crate::sys;
use serde::{Deserialize, Serialize};
use std::io;
use std::mem::offset_of;
use std::os::fd::AsRawFd;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub app_limited_bits: u8,
    pub rto_us: u32,
    pub ato_us: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Segments sent and not yet acknowledged (packets_out).
    pub unacked: u32,
    pub sacked: u32,
    /// Segments the sender currently deems lost.
    pub lost: u32,
    /// Segments retransmitted and not yet acknowledged.
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent_ms: u32,
    pub last_ack_sent_ms: u32,
    pub last_data_recv_ms: u32,
    pub last_ack_recv_ms: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// Segments; 0x7fffffff (TCP_INFINITE_SSTHRESH) before the first reduction.
    pub snd_ssthresh: u32,
    /// Segments.
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt_us: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    /// Bytes per second.
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt_us: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    /// Bytes per second.
    pub delivery_rate: u64,
    pub busy_time_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    /// Payload bytes sent, retransmissions included (RFC 4898 HCDataOctetsOut).
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    /// Retransmission timeouts, SYN and recurring ones included (Linux 6.7).
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time_ms: u32,
}

/// The kernel's "no threshold yet" (TCP_INFINITE_SSTHRESH).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// tcpi_options bits (linux/tcp.h).
pub const OPT_TIMESTAMPS: u8 = 1;
pub const OPT_SACK: u8 = 2;
pub const OPT_WSCALE: u8 = 4;
pub const OPT_ECN: u8 = 8;

/// A field of `TcpInfo`, for `has`.
pub enum Field {
    BytesSent,
    RcvOooPack,
    TotalRto,
}

/// Serializable so that `fatpipe probe` carries one host's readings to the other.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Sampled {
    pub info: TcpInfo,
    /// Bytes the kernel wrote.
    pub len: usize,
}

impl Sampled {
    /// Whether the running kernel filled `field`.
    pub fn has(&self, field: Field) -> bool {
        let end = match field {
            Field::BytesSent => offset_of!(TcpInfo, bytes_sent) + 8,
            Field::RcvOooPack => offset_of!(TcpInfo, rcv_ooopack) + 4,
            Field::TotalRto => offset_of!(TcpInfo, total_rto) + 2,
        };
        self.len >= end
    }
}

pub fn read(fd: &impl AsRawFd) -> io::Result<Sampled> {
    let (info, len) = sys::getsockopt::<TcpInfo>(fd, libc::IPPROTO_TCP, libc::TCP_INFO)?;
    Ok(Sampled { info, len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_linux() {
        // Offsets from linux/tcp.h: tcpi_rto after the eight u8 fields, tcpi_pacing_rate at
        // 104 (the 3.15 struct), tcpi_snd_wnd at 228, tcpi_total_rto at 240 (6.7), 248 in all.
        assert_eq!(offset_of!(TcpInfo, rto_us), 8);
        assert_eq!(offset_of!(TcpInfo, pacing_rate), 104);
        assert_eq!(offset_of!(TcpInfo, delivery_rate), 160);
        assert_eq!(offset_of!(TcpInfo, snd_wnd), 228);
        assert_eq!(offset_of!(TcpInfo, total_rto), 240);
        assert_eq!(std::mem::size_of::<TcpInfo>(), 248);
    }
}
