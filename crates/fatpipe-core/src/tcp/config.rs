//! Per-connection TCP settings. The scenario's tables (python/fatpipe/scenario/tcp.py and
//! the profiles, profiles.py) own every default and its source, and fill every field: the
//! core reads them all and has no defaults (no `#[serde(default)]`, no `Default`).

use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the sender detects and repairs losses (all in the TCP core, as in Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// Fast retransmit, then slow start from one segment (Jacobson 1988; 4.3BSD Tahoe).
    Tahoe,
    /// Fast retransmit and fast recovery, left on the first new ACK (RFC 5681).
    Reno,
    /// Fast recovery that stays until all data outstanding at the loss is acknowledged,
    /// retransmitting on partial ACKs (RFC 6582).
    Newreno,
    /// Selective acknowledgments (RFC 2018) with conservative SACK-based recovery (RFC 6675).
    Sack,
}

/// Which SACK-based recovery the RFC stack runs with `Recovery::Sack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SackVariant {
    /// RFC 6675: a hole is lost once DupThresh segments are SACKed above it; pipe is
    /// recomputed from the scoreboard (SetPipe).
    Rfc6675,
    /// ns-2's Agent/TCP/Sack1 (Fall and Floyd 1996, `tcp/stack/rfc/sack1.rs`): every hole
    /// below the highest SACKed segment is retransmitted, holes first, and pipe is a counter
    /// (outstanding minus the duplicate ACKs at entry, one less per ACK, one more per send).
    Sack1,
}

/// Which loss detection and recovery runs: the RFC reference stack, or Linux's
/// (`tcp_input.c`'s state machine over a per-segment scoreboard, `tcp/stack/linux/`).
// The sender's stack itself is `tcp::stack::Stack`, a value built from this choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Stack")]
pub enum StackKind {
    /// RFC 5681, 6582, 6675 and 6298 as written (and ns-2 in spirit), with the `recovery`
    /// variant chosen per flow.
    Rfc,
    /// Linux's: SACK (or NewReno by duplicate-ACK counting without SACK), per-segment
    /// scoreboard, per-ACK RTT samples, limited transmit by construction, and the members
    /// below (RACK-TLP, PRR or rate halving, undo, F-RTO, adaptive reordering).
    Linux,
}

/// How the Linux stack brings the window down during recovery and CWR (`tcp/stack/linux/prr.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WindowReduction {
    /// RFC 6937, Linux 3.2 and later.
    Prr,
    /// Linux 2.4/2.6 `tcp_cwnd_down`.
    RateHalving,
}

/// The RTO estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RtoEstimator {
    /// RFC 6298: RTO = SRTT + 4 RTTVAR, clamped to [min_rto, max_rto].
    Rfc6298,
    /// Linux `tcp_rtt_estimator`/`tcp_set_rto`: RTO = SRTT + RTTVAR with RTTVAR at least
    /// min_rto once per RTT (so about SRTT + 200 ms) and falling samples damped.
    Linux,
    /// 4.4BSD `tcp_xmit_timer` in ticks of the slow timer (`slow_timer_ps`), the timer
    /// expiring on a tick (`tcp/bsd_timers.rs`). RFC stack only.
    Bsd,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// Maximum segment size: payload bytes per full segment.
    pub mss_bytes: u32,
    /// Initial congestion window, segments (RFC 6928: 10; RFC 3390: 2-4).
    pub initial_window_segments: u32,
    /// Receive buffer = the window the receiver advertises, bytes.
    pub rcv_buffer_bytes: u64,
    /// Send buffer: at most this many bytes written but not yet acknowledged.
    pub snd_buffer_bytes: u64,
    /// RFC 7323 window scaling; without it the advertised window is capped at 65,535 bytes.
    pub window_scaling: bool,
    /// RFC 7323 timestamps: 12 header bytes per segment, an RTT sample from every ACK.
    pub timestamps: bool,
    /// Delay ACKs (RFC 1122 4.2.3.2, RFC 5681 4.2).
    pub delayed_ack: bool,
    /// Longest time an ACK may be delayed.
    pub delayed_ack_timeout_ps: Time,
    /// With delayed ACKs, acknowledge at least every this many full segments.
    pub ack_every_segments: u32,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dupack_threshold: u32,
    pub recovery: Recovery,
    /// With SACK: forward acknowledgment (Mathis and Mahdavi 1996): every hole more than
    /// DupThresh segments below the highest SACKed byte is lost.
    pub fack: bool,
    /// Delayed Congestion Response (document 004, draft-ietf-tcpm-tcp-dcr): on the first
    /// duplicate ACK the threshold becomes max(dupack_threshold, cwnd / dcr_div) and each
    /// duplicate ACK sends one new segment meanwhile. None: off.
    pub dcr_div: Option<u32>,
    /// Limited Slow Start (RFC 3742) max_ssthresh, segments; 0: off.
    pub max_ssthresh_segments: u32,
    /// ssthresh before the first loss, segments; None: "arbitrarily high" (RFC 5681 3.1).
    /// Linux takes it from a route's cached metrics; ns-2's window_ plays the same part.
    pub initial_ssthresh_segments: Option<u32>,
    /// Pace transmissions at gain x cwnd / SRTT; None: no pacing (unless the algorithm paces).
    pub pacing_gain: Option<f64>,
    /// The sending host puts this flow's segments on the wire at most at this rate, IP bits
    /// per second (a host limited by its CPU or bus; Linux SO_MAX_PACING_RATE): it caps any
    /// pacing rate and paces a flow that would not pace otherwise. None: no cap.
    pub max_send_rate_bps: Option<u64>,
    /// RFC 6582's "Impatient" variant: restart the retransmission timer only on the first
    /// partial ACK of a recovery. Off ("Slow-but-Steady"), every partial ACK restarts it, as
    /// Linux (which rearms on every ACK of new data) and ns-2's NewReno do.
    pub newreno_impatient: bool,
    /// Explicit Congestion Notification (RFC 3168), negotiated by both ends: the sender marks
    /// new data ECN-capable and answers an ECN-Echo with one window reduction (CWR) per
    /// window of data; the receiver echoes a CE mark until it sees CWR.
    pub ecn: bool,
    /// Accurate ECN (RFC 9768), negotiated by both ends (needs `ecn`): the receiver counts
    /// CE-marked packets and returns the count modulo 8 in every ACK's ACE field (AE, CWR,
    /// ECE) instead of RFC 3168's ECE-until-CWR; the sender derives the newly marked packets
    /// of each ACK, with the AccECN option's CE byte counter where the option fits.
    pub accecn: bool,
    pub min_rto_ps: Time,
    pub max_rto_ps: Time,
    pub initial_rto_ps: Time,
    /// Model the three-way handshake before the first data (`tcp/handshake.rs`): the data
    /// starts one RTT after the application does. False: the connection starts established.
    /// HTTP/1.0 opens every connection with one (this must be on); a persistent HTTP/1.1
    /// connection opens with one when this is on, else starts established.
    pub handshake: bool,
    /// Slow start after idle (RFC 5681 section 4.1, RFC 2861; Linux
    /// `net.ipv4.tcp_slow_start_after_idle` = 1): new data sent with nothing in flight more
    /// than an RTO after the last data restarts from min(cwnd, initial window), halving cwnd
    /// once per RTO idle down to that, ssthresh at least 3/4 of the old cwnd (Linux
    /// `tcp_cwnd_restart`).
    pub slow_start_after_idle: bool,
    /// Payload bits per second the receiving application reads (document 000's receiver
    /// limited by memory and bus); unread bytes hold the receive buffer and shrink the
    /// advertised window. None: the application reads every byte at once.
    pub receiver_drain_rate_bps: Option<u64>,
    /// Longest random wait before each send pass (ns-2 `Agent/TCP overhead_`, uniform on
    /// [0, this]; `send_delay.rs`), to break phase effects. 0: off (ns-2's default), and the
    /// run draws nothing.
    pub random_send_delay_ps: Time,
    /// The loss detection and recovery stack (the profile's main choice).
    pub stack: StackKind,
    /// RFC 3042 limited transmit in the RFC stack: the first two duplicate ACKs each send a
    /// new segment. (The Linux stack does it by counting SACKed segments out of the flight.)
    pub limited_transmit: bool,
    /// RFC stack: every retransmission timeout halves ssthresh from the window (without fast
    /// recovery's inflation), also during recovery and after a backed-off timeout, as ns-2's
    /// `TcpAgent::timeout` (slowdown(CLOSE_SSTHRESH_HALF)). False: only a timeout that starts
    /// a congestion event lowers it (RFC 5681 section 3.1, eq. 4).
    pub ssthresh_every_timeout: bool,
    /// RFC stack: BSD's window bookkeeping (4.3BSD-Reno and 4.4BSD tcp_input.c, tcp_timer.c).
    /// A fast retransmit and a timeout reduce the window min(snd_wnd, snd_cwnd) -- the peer's
    /// window bounds it, and a timeout during fast recovery takes the inflated window as it
    /// stands -- where otherwise cwnd alone is reduced (without the inflation, as ns-2's
    /// `cwnd_`). The ACK that ends fast recovery deflates cwnd to ssthresh only after more
    /// than three duplicate ACKs (`t_dupacks > tcprexmtthresh`), and then opens the window
    /// as every new ACK does.
    pub bsd_window: bool,
    /// RFC stack: Reno starts another fast retransmit only once the cumulative ACK passes
    /// `recover`, as NewReno does (RFC 6582 3.2 step 2; ns-2's `bug_fix_`, which its
    /// RenoTcpAgent applies once it has left fast recovery). False: classic Reno, whose three
    /// further duplicate ACKs start another recovery in the same window (RFC 5681).
    pub reno_recover_guard: bool,
    /// RFC stack: the SACK recovery `Recovery::Sack` runs.
    pub sack_variant: SackVariant,
    pub rto_estimator: RtoEstimator,
    /// The receiver reports duplicate segments with D-SACK (RFC 2883; Linux
    /// `net.ipv4.tcp_dsack` = 1), and the Linux stack uses them to undo and to widen RACK's
    /// reordering window.
    pub dsack: bool,
    /// Linux stack: RACK time-based loss detection (RFC 8985; `net.ipv4.tcp_recovery` = 1).
    /// Off: duplicate-ACK threshold (or FACK) marking, as Linux before 4.4.
    pub rack: bool,
    /// Linux stack: tail loss probes (RFC 8985 section 7; `net.ipv4.tcp_early_retrans` = 3).
    pub tlp: bool,
    /// Linux stack: F-RTO detection of spurious timeouts (RFC 5682; `net.ipv4.tcp_frto` = 2).
    pub frto: bool,
    /// Linux stack: undo spurious reductions (DSACK, Eifel with timestamps, F-RTO).
    pub undo: bool,
    /// Linux stack: how cwnd comes down in recovery and CWR.
    pub window_reduction: WindowReduction,
    /// Linux stack: the reordering degree adapts to what SACKs and DSACKs show
    /// (`tp->reordering`, from `dupack_threshold` up to `max_reordering_segments`).
    pub adaptive_reordering: bool,
    /// Linux stack: the largest reordering degree (Linux `net.ipv4.tcp_max_reordering`).
    pub max_reordering_segments: u32,
    /// The period of 4.4BSD's slow timer (`tcp_slowtimo`, 500 ms), with `rto_estimator` Bsd:
    /// the retransmission timer counts its ticks. None: exact timers.
    pub slow_timer_ps: Option<Time>,
    /// The period of 4.4BSD's fast timer (`tcp_fasttimo`, 200 ms): a delayed ACK goes out on
    /// its next tick instead of `delayed_ack_timeout` after the segment. None: per segment.
    pub fast_timer_ps: Option<Time>,
    /// The per-destination metrics cache as the profile's kernel kept it (`tcp/metrics.rs`);
    /// None: the profile's stack has none (or none is modelled).
    pub metrics: Option<super::metrics::MetricsConfig>,
    /// The hosts' own elements (pacing, TSO, GRO, fq; `crate::host`). None (the key absent
    /// from the scenario): none of them, as before they existed.
    pub host: Option<crate::host::HostConfig>,
}

impl TcpConfig {
    /// The settings as a sender runs them: counts of at least one, and an optional divisor
    /// or rate of zero as off (the scenario's checks refuse such values; a sender built
    /// from a hand-made config must still never divide by zero).
    pub fn for_sender(&self) -> TcpConfig {
        TcpConfig {
            initial_window_segments: self.initial_window_segments.max(1),
            dupack_threshold: self.dupack_threshold.max(1),
            dcr_div: self.dcr_div.filter(|&d| d > 0),
            max_send_rate_bps: self.max_send_rate_bps.filter(|&r| r > 0),
            max_reordering_segments: self.max_reordering_segments.max(1),
            ..self.clone()
        }
    }

    /// IP + TCP header bytes of every segment.
    pub fn header_bytes(&self) -> u32 {
        crate::packet::IPV4_TCP_HEADER_BYTES
            + if self.timestamps { crate::packet::TCP_TIMESTAMPS_OPTION_BYTES } else { 0 }
    }

    /// The window the receiver advertises, bytes: the receive buffer, capped at 65,535 without
    /// window scaling, else rounded down to the window-scale granularity (RFC 7323 2.3: the
    /// shift is the smallest that makes the buffer fit 16 bits, at most 14).
    pub fn advertised_window_bytes(&self) -> u32 {
        let buf = self.rcv_buffer_bytes.min(u32::MAX as u64);
        let shift = self.window_shift();
        (((buf >> shift).min(65_535)) << shift) as u32
    }

    /// The RFC 7323 window scale shift this end announces (0 without window scaling).
    pub fn window_shift(&self) -> u8 {
        if !self.window_scaling {
            return 0;
        }
        let buf = self.rcv_buffer_bytes.min(u32::MAX as u64);
        let mut shift = 0;
        while shift < 14 && (buf >> shift) > 65_535 {
            shift += 1;
        }
        shift
    }
}
