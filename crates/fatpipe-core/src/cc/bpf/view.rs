//! The socket as a BPF congestion control sees it in the simulator: the fields of the
//! kernel's `struct tcp_sock` (with its `inet_connection_sock` and `sock`) that programs read
//! and write, laid out in one buffer by this file, described by a BTF built here, so that
//! CO-RE relocation moves a program's accesses to them by name as the kernel's loader does
//! against vmlinux. A field not here is refused when the program is loaded, by name.
//!
//! Filled from the core's `CcState` before each call and read back after it (the window,
//! its counter and ssthresh: the fields the kernel lets a program write, with icsk_ca_priv,
//! its private state, which stays in the buffer between calls).

use crate::cc::{CaState, CcState};
use crate::time::{Time, PS_PER_S, PS_PER_US};
use fatpipe_bpf::btf::{Btf, Builder, Kind};

// struct sock, at the buffer's start (in the kernel it is the first member of
// inet_connection_sock, itself the first of tcp_sock).
pub const SK_PACING_RATE: usize = 0;
pub const SK_PACING_STATUS: usize = 8;
// struct inet_connection_sock.
pub const ICSK_CA_STATE: usize = 16;
pub const ICSK_CA_PRIV: usize = 24;
pub const ICSK_CA_PRIV_BYTES: usize = 13 * 8;
pub const ICSK_END: usize = 128;
// struct tcp_sock after its inet_conn.
pub const MSS_CACHE: usize = 128;
pub const SND_CWND: usize = 132;
pub const SND_CWND_CNT: usize = 136;
pub const SND_SSTHRESH: usize = 140;
pub const PRIOR_CWND: usize = 144;
pub const SRTT_US: usize = 148;
pub const MDEV_US: usize = 152;
pub const PACKETS_OUT: usize = 156;
pub const SACKED_OUT: usize = 160;
pub const LOST_OUT: usize = 164;
pub const RETRANS_OUT: usize = 168;
pub const MAX_PACKETS_OUT: usize = 172;
pub const IS_CWND_LIMITED: usize = 176;
pub const DELIVERED: usize = 180;
pub const BYTES_ACKED: usize = 184;
pub const SND_UNA: usize = 192;
pub const SND_NXT: usize = 196;
pub const LSNDTIME: usize = 200;
pub const TCP_MSTAMP: usize = 208;
pub const RTT_MIN: usize = 216;
// struct tcp_options_received rx_opt: the last ACK's timestamps (TCP-LP reads them).
pub const RCV_TSVAL: usize = 240;
pub const RCV_TSECR: usize = 244;
pub const TCP_SOCK_BYTES: usize = 248;
// struct ack_sample, a region of its own.
pub const ACK_PKTS_ACKED: usize = 0;
pub const ACK_RTT_US: usize = 4;
pub const ACK_IN_FLIGHT: usize = 8;
pub const ACK_SAMPLE_BYTES: usize = 12;

/// Byte ranges of the socket a program may write (the kernel's bpf_tcp_ca_btf_struct_access:
/// snd_cwnd, snd_cwnd_cnt, snd_ssthresh and icsk_ca_priv).
pub const WRITABLE: [(u32, u32); 2] =
    [(ICSK_CA_PRIV as u32, (ICSK_CA_PRIV + ICSK_CA_PRIV_BYTES) as u32), (SND_CWND as u32, (SND_SSTHRESH + 4) as u32)];

/// The types of the view, for CO-RE relocation.
pub fn btf() -> Btf {
    let mut b = Builder::new();
    let u8t = b.int("__u8", 1, false);
    let u32t = b.int("__u32", 4, false);
    let s32t = b.int("__s32", 4, true);
    let u64t = b.int("__u64", 8, false);
    let ulong = b.int("unsigned long", 8, false);
    let bits = |at: usize| at as u32 * 8;
    b.structure(
        "sock",
        16,
        &[("sk_pacing_rate", ulong, bits(SK_PACING_RATE), 0), ("sk_pacing_status", u8t, bits(SK_PACING_STATUS), 0)],
    );
    let priv_array = b.add("", Kind::Array { elem: u64t, len: 13 });
    let icsk = b.structure(
        "inet_connection_sock",
        ICSK_END as u32,
        &[("icsk_ca_state", u8t, bits(ICSK_CA_STATE), 5), ("icsk_ca_priv", priv_array, bits(ICSK_CA_PRIV), 0)],
    );
    let sample = b.structure("minmax_sample", 8, &[("t", u32t, 0, 0), ("v", u32t, 32, 0)]);
    let samples = b.add("", Kind::Array { elem: sample, len: 3 });
    let minmax = b.structure("minmax", 24, &[("s", samples, 0, 0)]);
    let rx_opt = b.structure("tcp_options_received", 8, &[("rcv_tsval", u32t, 0, 0), ("rcv_tsecr", u32t, 32, 0)]);
    let fields: Vec<(&str, u32, u32, u32)> = vec![
        ("inet_conn", icsk, 0, 0),
        ("mss_cache", u32t, bits(MSS_CACHE), 0),
        ("snd_cwnd", u32t, bits(SND_CWND), 0),
        ("snd_cwnd_cnt", u32t, bits(SND_CWND_CNT), 0),
        ("snd_ssthresh", u32t, bits(SND_SSTHRESH), 0),
        ("prior_cwnd", u32t, bits(PRIOR_CWND), 0),
        ("srtt_us", u32t, bits(SRTT_US), 0),
        ("mdev_us", u32t, bits(MDEV_US), 0),
        ("packets_out", u32t, bits(PACKETS_OUT), 0),
        ("sacked_out", u32t, bits(SACKED_OUT), 0),
        ("lost_out", u32t, bits(LOST_OUT), 0),
        ("retrans_out", u32t, bits(RETRANS_OUT), 0),
        ("max_packets_out", u32t, bits(MAX_PACKETS_OUT), 0),
        ("is_cwnd_limited", u8t, bits(IS_CWND_LIMITED), 1),
        ("delivered", u32t, bits(DELIVERED), 0),
        ("bytes_acked", u64t, bits(BYTES_ACKED), 0),
        ("snd_una", u32t, bits(SND_UNA), 0),
        ("snd_nxt", u32t, bits(SND_NXT), 0),
        ("lsndtime", u32t, bits(LSNDTIME), 0),
        ("tcp_mstamp", u64t, bits(TCP_MSTAMP), 0),
        ("rtt_min", minmax, bits(RTT_MIN), 0),
        ("rx_opt", rx_opt, bits(RCV_TSVAL), 0),
    ];
    b.structure("tcp_sock", TCP_SOCK_BYTES as u32, &fields);
    b.structure(
        "ack_sample",
        ACK_SAMPLE_BYTES as u32,
        &[
            ("pkts_acked", u32t, bits(ACK_PKTS_ACKED), 0),
            ("rtt_us", s32t, bits(ACK_RTT_US), 0),
            ("in_flight", u32t, bits(ACK_IN_FLIGHT), 0),
        ],
    );
    b.build()
}

/// The field names the view provides, for the message refusing a program that reads others.
pub fn provided() -> String {
    "tcp_sock: mss_cache, snd_cwnd, snd_cwnd_cnt, snd_ssthresh, prior_cwnd, srtt_us, mdev_us, packets_out, sacked_out, lost_out, retrans_out, max_packets_out, is_cwnd_limited, delivered, bytes_acked, snd_una, snd_nxt, lsndtime, tcp_mstamp, rtt_min, rx_opt.rcv_tsval, rx_opt.rcv_tsecr, inet_conn.icsk_ca_state, inet_conn.icsk_ca_priv; sock: sk_pacing_rate, sk_pacing_status; ack_sample: pkts_acked, rtt_us, in_flight".into()
}

/// Linux's numbers of the loss-recovery states (enum tcp_ca_state).
pub fn ca_state_number(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

fn put32(v: &mut [u8], at: usize, x: u32) {
    v[at..at + 4].copy_from_slice(&x.to_le_bytes());
}

fn put64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

pub fn get32(v: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(v[at..at + 4].try_into().expect("4 bytes"))
}

/// Writes the core's state into the view (all but icsk_ca_priv, which is the program's).
/// `ca_state` is the state before the transition being announced, as in the kernel;
/// `prior_cwnd` the window before the last reduction; `hz` the jiffies rate of `lsndtime`.
pub fn fill(v: &mut [u8], s: &CcState, ca_state: CaState, prior_cwnd: u32, hz: u64) {
    let mss = s.mss_bytes.max(1) as u64;
    put64(v, SK_PACING_RATE, 0);
    v[SK_PACING_STATUS] = u8::from(s.paces);
    v[ICSK_CA_STATE] = ca_state_number(ca_state);
    put32(v, MSS_CACHE, s.mss_bytes);
    put32(v, SND_CWND, s.cwnd);
    put32(v, SND_CWND_CNT, s.cwnd_cnt);
    put32(v, SND_SSTHRESH, s.ssthresh);
    put32(v, PRIOR_CWND, prior_cwnd);
    // Linux keeps 8 x srtt and 4 x mdev in microseconds.
    put32(v, SRTT_US, s.srtt.map_or(0, |r| (r as u128 * 8 / PS_PER_US as u128) as u32));
    put32(v, MDEV_US, (s.rttvar as u128 * 4 / PS_PER_US as u128) as u32);
    // Segments outstanding; the core does not split what is not in flight into SACKed and
    // lost: sacked_out holds all of it, so that packets_out - sacked_out - lost_out +
    // retrans_out is the core's in-flight count (Linux tcp_packets_in_flight).
    let outstanding = s.snd_nxt.saturating_sub(s.snd_una).div_ceil(mss) as u32;
    let packets_out = outstanding.max(s.in_flight_segments);
    put32(v, PACKETS_OUT, packets_out);
    put32(v, SACKED_OUT, packets_out - s.in_flight_segments);
    put32(v, LOST_OUT, 0);
    put32(v, RETRANS_OUT, 0);
    // tcp_is_cwnd_limited reads is_cwnd_limited, and in slow start cwnd < 2 max_packets_out:
    // both say what the core's cwnd_limited says.
    put32(v, MAX_PACKETS_OUT, if s.cwnd_limited { s.cwnd } else { 0 });
    v[IS_CWND_LIMITED] = u8::from(s.cwnd_limited);
    put32(v, DELIVERED, (s.delivered_bytes / mss) as u32);
    put64(v, BYTES_ACKED, s.snd_una);
    put32(v, SND_UNA, s.snd_una as u32);
    put32(v, SND_NXT, s.snd_nxt as u32);
    put32(v, LSNDTIME, s.last_send_ps.map_or(0, |t| jiffies(t, hz) as u32));
    put64(v, TCP_MSTAMP, s.now / PS_PER_US);
    let min_rtt_us = s.min_rtt.map_or(u32::MAX, |r| (r / PS_PER_US) as u32);
    for k in 0..3 {
        put32(v, RTT_MIN + 8 * k, (s.now / PS_PER_US) as u32);
        put32(v, RTT_MIN + 8 * k + 4, min_rtt_us);
    }
}

/// Reads back what a program may write: cwnd, its counter and ssthresh.
pub fn read_back(v: &[u8], s: &mut CcState) {
    s.cwnd = get32(v, SND_CWND);
    s.cwnd_cnt = get32(v, SND_CWND_CNT);
    s.ssthresh = get32(v, SND_SSTHRESH);
}

/// The jiffies of time `t` at `hz` (fatpipe's `Jiffies::at`).
pub fn jiffies(t: Time, hz: u64) -> u64 {
    (t as u128 * hz as u128 / PS_PER_S as u128) as u64
}
