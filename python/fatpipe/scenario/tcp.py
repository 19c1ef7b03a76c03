"""``[flows.tcp]``: the TCP options of a flow's two endpoints."""

from __future__ import annotations

from typing import Any

from ..units import UnitError
from .kinds import Boolean, Choice, Duration, Integer, Rate, Real, Size
from .profiles import DEFAULT_PROFILE, PROFILES, by_profile
from .schema import UNSET, Derived, Field, Table, _toml_literal

#: The largest receive buffer: 1 GiB, just above RFC 7323's largest window (65535 x 2^14).
MAX_RCV_BUFFER_BYTES = 2**30
#: The largest send buffer: Linux's sk_sndbuf is an int.
MAX_SND_BUFFER_BYTES = 2**31 - 1
#: The largest window any receiver can advertise (RFC 7323 section 2.3).
MAX_WINDOW_BYTES = 65535 * 2**14
#: IPv4 (20) + TCP (20) header bytes without options (RFC 791, RFC 9293).
IPV4_TCP_HEADER_BYTES = 40
#: [flows.tcp] members whose default only the ns2 profile changes: the value every other
#: profile keeps (Linux net.ipv4.tcp_timestamps = 1; RFC 1122 4.2.3.2 delayed ACKs).
UNLESS_PROFILE_SETS = {"timestamps": True, "delayed_ack": True}
#: The RFC 7323 timestamps option: 10 bytes, padded to 12 with two NOPs (as Linux sends it).
TIMESTAMPS_OPTION_BYTES = 12


class InitialWindow(Integer):
    """Segments, or ``"rfc3390"`` for RFC 3390's min(4 MSS, max(2 MSS, 4380 bytes)), which
    depends on the MSS and is computed at normalization."""

    RFC3390 = "rfc3390"

    def __init__(self) -> None:
        super().__init__(minimum=1, example=10)
        self.type_doc = 'integer >= 1, or "rfc3390"'

    def convert(self, value: Any) -> Any:
        if value == self.RFC3390:
            return value
        if isinstance(value, str):
            raise UnitError(value, 'expected a number of segments such as 10, or "rfc3390"')
        return super().convert(value)


def rfc3390_initial_window(mss_bytes: int) -> int:
    """RFC 3390: IW = min(4 * MSS, max(2 * MSS, 4380 bytes)), in whole segments."""
    return max(1, min(4 * mss_bytes, max(2 * mss_bytes, 4380)) // mss_bytes)


_TCP = Table(
    fields=(
        Field(
            "mss",
            Size(minimum=1, maximum=65535, example=1448),
            "maximum segment size: payload bytes per full segment; at most mtu - 40 - 12 (with "
            "timestamps)",
            Derived("mtu - 40 - (12 if timestamps), 1448 for Ethernet"),
            "RFC 6691 (MSS = MTU minus the IP and TCP headers); Linux also subtracts the "
            "12-byte timestamps option",
        ),
        Field(
            "initial_window",
            InitialWindow(),
            'initial congestion window, segments; "rfc3390" for min(4 MSS, max(2 MSS, 4380 '
            'bytes)) (3 segments of 1448 bytes)',
            by_profile("initial_window"),
            "RFC 6928; Linux default since 2.6.39; Linux 2.4 tcp_v4_init_sock (snd_cwnd = 2); 4.4BSD "
            "tcp_mss (one segment); ns-2 windowInit_",
        ),
        Field(
            "rcv_buffer",
            Size(minimum=1, maximum=MAX_RCV_BUFFER_BYTES, example="8MiB", why_maximum=(
                "RFC 7323 section 2.3 caps a window at 65535 x 2^14 bytes, so a larger receive "
                "buffer could never be advertised")),
            "receive buffer: the largest window the receiver advertises, bytes (at least one "
            "MSS, at most 1 GiB: RFC 7323 caps any window at 65535 x 2^14 bytes, 16 KiB less)",
            "8MiB",
            "fatpipe default, large enough not to limit paths up to ~670 Mb/s at 100 ms RTT "
            "(Linux autotunes up to net.ipv4.tcp_rmem's maximum, 6 MiB by default)",
        ),
        Field(
            "snd_buffer",
            Size(minimum=1, maximum=MAX_SND_BUFFER_BYTES, example="8MiB", why_maximum=(
                "Linux's socket buffer sizes are C ints (sk_sndbuf), and twice the largest "
                "window (RFC 7323) is room for any path")),
            "send buffer: most bytes written by the application and not yet acknowledged (at "
            "least one MSS, at most 2 GiB - 1)",
            "8MiB",
            "fatpipe default, as rcv_buffer (Linux autotunes up to net.ipv4.tcp_wmem's maximum, "
            "4 MiB by default)",
        ),
        Field(
            "window_scaling",
            Boolean(),
            "RFC 7323 window scaling; false caps the advertised window at 65535 bytes",
            True,
            "RFC 7323; Linux net.ipv4.tcp_window_scaling = 1",
        ),
        Field(
            "timestamps",
            Boolean(),
            "RFC 7323 timestamps option: 12 header bytes per segment, an RTT sample from every ACK",
            by_profile("timestamps", UNLESS_PROFILE_SETS["timestamps"]),
            "Linux net.ipv4.tcp_timestamps = 1",
        ),
        Field(
            "delayed_ack",
            Boolean(),
            "delay ACKs: acknowledge every ack_every full segments or after delayed_ack_timeout",
            by_profile("delayed_ack", UNLESS_PROFILE_SETS["delayed_ack"]),
            "RFC 1122 section 4.2.3.2, RFC 5681 section 4.2",
        ),
        Field(
            "delayed_ack_timeout",
            Duration(positive=True),
            "longest time an ACK may be delayed",
            "40ms",
            "Linux TCP_DELACK_MIN; RFC 1122 allows up to 500 ms",
        ),
        Field(
            "ack_every",
            Integer(minimum=1, example=2),
            "with delayed ACKs, acknowledge at least every this many full-sized segments",
            2,
            "RFC 5681 section 4.2 (at least every second full-sized segment)",
        ),
        Field(
            "dupack_threshold",
            Integer(minimum=1, example=3),
            "duplicate ACKs that trigger fast retransmit",
            3,
            "RFC 5681 section 3.2",
        ),
        Field(
            "profile",
            Choice(tuple(PROFILES)),
            "stack profile: a coherent set of TCP behaviours as a kernel ships them (linux: Linux 6.x; "
            "linux-2.4: the documents' Linux 2.4/2.6 hosts; rfc: the RFC reference stack, fatpipe's "
            "behaviour before profiles; bsd-4.3-reno: 4.3BSD-Reno with its coarse timers, document "
            "002's IRIX 5.2 hosts; bsd-4.4: 4.4BSD-Lite2, the same without Reno's faster linear growth; ns2: ns-2's one-way Agent/TCP and TCPSink, document 003's simulator). Each member below can still be set on its own; the "
            "profiles and what they set: `fatpipe algorithms`",
            Derived(_toml_literal(DEFAULT_PROFILE)),
            "Linux 6.x as shipped: the kernel users run",
        ),
        Field(
            "rack",
            Boolean(),
            "RACK loss detection (RFC 8985): a segment is lost when one sent after it was delivered "
            "more than RACK.rtt + a reordering window ago, retransmissions too; off: the duplicate-ACK "
            "threshold (or FACK). Linux stack only",
            by_profile("rack"),
            "Linux net.ipv4.tcp_recovery = 1 (4.18 and later)",
        ),
        Field(
            "tlp",
            Boolean(),
            "tail loss probe (RFC 8985 section 7): with SACK, two smoothed RTTs after the ACK clock "
            "stops, send one segment (new, or the last again) so that a tail loss is repaired by fast "
            "recovery, not a timeout. Linux stack only",
            by_profile("tlp"),
            "Linux net.ipv4.tcp_early_retrans = 3",
        ),
        Field(
            "frto",
            Boolean(),
            "F-RTO (RFC 5682, SACK-enhanced): after a timeout, new data probes whether it was "
            "spurious; if never-retransmitted data is then acknowledged, the window is restored. "
            "Linux stack only",
            by_profile("frto"),
            "Linux net.ipv4.tcp_frto = 2",
        ),
        Field(
            "undo",
            Boolean(),
            "undo a window reduction that proves spurious (all retransmissions reported duplicate "
            "by D-SACK, an Eifel timestamp echo older than the retransmission, or F-RTO). Linux "
            "stack only",
            by_profile("undo"),
            "Linux tcp_input.c tcp_try_undo_* (no sysctl)",
        ),
        Field(
            "dsack",
            Boolean(),
            "the receiver reports duplicate segments with D-SACK (RFC 2883); the Linux stack uses "
            "them to undo and to widen RACK's reordering window",
            by_profile("dsack"),
            "Linux net.ipv4.tcp_dsack = 1",
        ),
        Field(
            "window_reduction",
            Choice(("prr", "rate_halving")),
            "how cwnd comes down in recovery and CWR: prr (Proportional Rate Reduction, RFC 6937) "
            "or rate_halving (Linux 2.4/2.6 tcp_cwnd_down: one segment every second ACK). Linux "
            "stack only (the RFC stack sets cwnd to ssthresh at once)",
            by_profile("window_reduction"),
            "Linux tcp_cwnd_reduction (3.2 and later); Linux 2.4 tcp_cwnd_down",
        ),
        Field(
            "adaptive_reordering",
            Boolean(),
            "the reordering degree (duplicate-ACK threshold, RACK's window) grows with the "
            "reordering SACKs, DSACKs and timestamps show, up to max_reordering. Linux stack only",
            by_profile("adaptive_reordering"),
            "Linux tcp_input.c tcp_check_sack_reordering (tp->reordering)",
        ),
        Field(
            "max_reordering",
            Integer(minimum=1, maximum=100_000, example=300),
            "the largest reordering degree adaptive_reordering learns, segments. Linux stack only",
            by_profile("max_reordering"),
            "Linux net.ipv4.tcp_max_reordering = 300; Linux 2.4 TCP_MAX_REORDERING 127",
        ),
        Field(
            "no_metrics_save",
            Boolean(),
            "Linux's per-destination metrics cache off: a closing connection saves nothing (a new "
            "one still starts from what is cached). On, a connection that closes (a flow with "
            "transfers) leaves its RTT, RTT variation, ssthresh and reordering degree for the next "
            "connection from its host to the same destination, as the profile's kernel did "
            "(linux-2.4: tcp_input.c, SRTT and mdev seeded, FACK off with a cached reordering; "
            "linux: tcp_metrics.c, the first RTO only, entries stale after an hour). Linux stack only",
            by_profile("no_metrics_save"),
            "Linux net.ipv4.tcp_no_metrics_save = 0; Linux 2.4 tcp_update_metrics, tcp_init_metrics",
        ),
        Field(
            "no_ssthresh_metrics_save",
            Boolean(),
            "the metrics cache neither saves nor reads ssthresh (the rest as no_metrics_save says). "
            'profile = "linux" only: Linux 5.6 added it',
            by_profile("no_ssthresh_metrics_save"),
            "Linux net.ipv4.tcp_no_ssthresh_metrics_save = 1 (5.6 and later, commit 65e6d90168f3)",
        ),
        Field(
            "rto_estimator",
            Choice(("linux", "rfc6298", "bsd")),
            "the retransmission timeout: linux (tcp_rtt_estimator: RTO = SRTT + max(4 mdev, "
            "min_rto), falling samples damped, about SRTT + 200 ms), rfc6298 (SRTT + 4 RTTVAR, "
            "clamped at min_rto) or bsd (4.4BSD tcp_xmit_timer: RTTs counted in ticks of "
            "slow_timer, SRTT + 4 RTTVAR ticks in BSD's fixed point, at least min_rto, doubled per "
            "backoff up to 64 times, the timer expiring on a tick; RFC stack only)",
            by_profile("rto_estimator"),
            "Linux tcp_input.c tcp_rtt_estimator, tcp_set_rto; RFC 6298 section 2; 4.4BSD "
            "tcp_input.c tcp_xmit_timer, tcp_timer.c (Stevens, TCP/IP Illustrated vol. 2, ch. 25)",
        ),
        Field(
            "slow_timer",
            Duration(positive=True, example="500ms"),
            "with rto_estimator = \"bsd\": the period of BSD's slow timer (tcp_slowtimo): the "
            "retransmission timer counts its ticks and expires on one (k ticks: between k - 1 "
            "and k periods after it was set), and RTTs are measured in ticks",
            by_profile("slow_timer"),
            "4.4BSD PR_SLOWHZ = 2 (netinet/tcp_timer.h): two ticks a second",
        ),
        Field(
            "fast_timer",
            Duration(positive=True, example="200ms"),
            "delayed ACKs go out on the next tick of a clock of this period (BSD's fast timer, "
            "tcp_fasttimo) instead of delayed_ack_timeout after the segment, so an ACK waits 0 to "
            "one period",
            by_profile("fast_timer"),
            "4.4BSD PR_FASTHZ = 5 (netinet/tcp_timer.h): five ticks a second",
        ),
        Field(
            "limited_transmit",
            Boolean(),
            "RFC 3042: the first two duplicate ACKs each send a new segment. RFC stack only (the "
            "Linux stack does it by counting SACKed segments out of the flight)",
            by_profile("limited_transmit"),
            "RFC 3042",
        ),
        Field(
            "ssthresh_every_timeout",
            Boolean(),
            "every retransmission timeout halves ssthresh from the window (without fast "
            "recovery's inflation unless bsd_window), also during recovery and after a backed-off timeout (ssthresh "
            "then falls to 2); false lowers it only on a timeout that starts a congestion event. "
            "RFC stack only (Linux lowers it once per loss episode)",
            by_profile("ssthresh_every_timeout"),
            "RFC 5681 section 3.1 (false)",
        ),
        Field(
            "bsd_window",
            Boolean(),
            "BSD's window bookkeeping: a fast retransmit and a timeout halve min(the peer's "
            "window, cwnd), cwnd as it stands (a timeout during fast recovery takes the inflated "
            "window), and the ACK that ends fast recovery deflates cwnd only after more than "
            "three duplicate ACKs, then opens it as any new ACK does; false reduces cwnd alone "
            "(without the inflation). RFC stack only",
            by_profile("bsd_window"),
            "4.3BSD-Reno tcp_input.c 7.25 and tcp_timer.c 7.18 (CSRG, 1990)",
        ),
        Field(
            "reno_recover_guard",
            Boolean(),
            "Reno starts another fast retransmit only once the cumulative ACK passes what was "
            "outstanding at the last one (recover), as NewReno does; false is classic Reno, whose "
            "three further duplicate ACKs start another recovery in the same window. RFC stack "
            "only (Linux recovers as NewReno without SACK)",
            by_profile("reno_recover_guard"),
            "RFC 5681 3.2 (false); RFC 6582 3.2 step 2 (true)",
        ),
        Field(
            "sack_variant",
            Choice(("rfc6675", "sack1")),
            "which SACK recovery runs with recovery = \"sack\": rfc6675 (a hole is lost once "
            "dupack_threshold segments are SACKed above it; pipe recomputed from the "
            "scoreboard) or sack1 (ns-2's Agent/TCP/Sack1: every hole below the highest SACK is "
            "retransmitted, holes before new data, and pipe is a counter: outstanding minus the "
            "duplicate ACKs at the start, one less per ACK, one more per segment sent). RFC stack only",
            by_profile("sack_variant"),
            "RFC 6675; ns-2 tcp-sack1.cc (Fall and Floyd 1996)",
        ),
        Field(
            "recovery",
            Choice(("tahoe", "reno", "newreno", "sack")),
            "loss recovery in the TCP core: tahoe (fast retransmit, then slow start from one "
            "segment), reno (RFC 5681 fast recovery, left on the first new ACK), newreno "
            "(RFC 6582: stays in recovery until all data outstanding at the loss is "
            "acknowledged), sack (RFC 2018 selective acknowledgments with RFC 6675 recovery, or "
            "Linux's); the Linux stack has sack and newreno (Linux without SACK), the RFC stack all four",
            Derived('by stack and cc: the Linux stack sack (newreno with cc = "newreno"); the RFC stack tahoe, '
                    'reno, newreno or sack as cc names them, sack for the other algorithms'),
            "Linux recovers with SACK (net.ipv4.tcp_sack = 1); on the RFC stack the documents' TCP versions "
            "(document 003), SACK for the newer algorithms, as document 001's hosts had it",
        ),
        Field(
            "fack",
            Boolean(),
            "with recovery = sack: forward acknowledgment loss detection (Mathis and Mahdavi "
            "1996): every hole more than dupack_threshold segments below the highest SACKed "
            "byte is lost (the Linux stack: only with rack = false)",
            by_profile("fack"),
            "RFC 6675 detects loss by the SACKed bytes above a hole; Linux 2.4 net.ipv4.tcp_fack = 1; "
            "Linux dropped FACK in 4.15",
        ),
        Field(
            "dcr_div",
            Integer(minimum=1, example=1),
            "Delayed Congestion Response: on the first duplicate ACK raise the threshold to "
            "max(dupack_threshold, cwnd / dcr_div) and send one new segment per duplicate ACK "
            "meanwhile, so reordering within about an RTT does not cut the window",
            UNSET,
            "unset: off. Document 004 section 4.3 and draft-ietf-tcpm-tcp-dcr use 1 (respond "
            "one RTT later)",
        ),
        Field(
            "receiver_drain_rate",
            Rate(),
            "the receiving application reads at most this many payload bits per second; unread "
            "data holds the receive buffer, the advertised window shrinks, and the sender is "
            "throttled by flow control: the window's right edge moves in steps of at least "
            "min(buffer / 2, MSS) (receiver silly-window avoidance, RFC 1122 4.2.3.3); a window "
            "update goes out when reading at least doubles a window of at most half the "
            "buffer (Linux __tcp_cleanup_rbuf); the sender probes a zero window (RFC 9293 "
            "3.8.6.1, Linux tcp_probe_timer)",
            UNSET,
            "unset: the application reads every byte at once. Document 000's hosts managed "
            "about 130 Mbps",
        ),
        Field(
            "initial_ssthresh",
            Integer(minimum=2, example=300),
            "ssthresh before the first loss, segments: slow start ends when cwnd reaches it",
            UNSET,
            'unset: "arbitrarily high" (RFC 5681 3.1); Linux may take it from a route\'s '
            "cached metrics (ip route ... ssthresh)",
        ),
        Field(
            "max_ssthresh",
            Integer(minimum=1, example=100),
            "Limited Slow Start: above this many segments slow start adds at most "
            "max_ssthresh / 2 segments per RTT",
            UNSET,
            "unset: off. RFC 3742 suggests 100; document 004's GridDT tests used 8000",
        ),
        Field(
            "pacing_gain",
            Real(lower=0.0, lower_open=True, example=1.0),
            "pace transmissions at pacing_gain x cwnd / smoothed RTT instead of sending bursts "
            "(BBR always paces at its own rate)",
            UNSET,
            "unset: no pacing, as a TCP without the fq queue discipline",
        ),
        Field(
            "max_send_rate",
            Rate(),
            "the sending host puts this flow's packets on the wire at most at this rate (IP bits "
            "per second): a host whose CPU, memory or bus cannot feed its interface faster. "
            "Caps any pacing rate and paces a flow that would not pace otherwise; per "
            "connection, as Linux's SO_MAX_PACING_RATE",
            UNSET,
            "unset: the host keeps up with its interface. Document 000's hosts managed about "
            "130 Mbps (a receiver-side cap is receiver_drain_rate)",
        ),
        Field(
            "newreno_impatient",
            Boolean(),
            "RFC 6582's Impatient variant: during NewReno recovery restart the retransmission "
            "timer only on the first partial ACK; false is the Slow-but-Steady variant, which "
            "restarts it on every partial ACK. RFC stack only (Linux rearms the timer on every "
            "ACK of new data)",
            by_profile("newreno_impatient"),
            "RFC 6582 section 4 (either variant)",
        ),
        Field(
            "ecn",
            Boolean(),
            "Explicit Congestion Notification (RFC 3168), on at both ends: new data goes out "
            "ECN-capable; the receiver echoes a Congestion Experienced mark (ECN-Echo) on its "
            "ACKs until a segment with CWR arrives; on ECN-Echo the sender reduces its window "
            "as after a loss but retransmits nothing (ssthresh from the algorithm, cwnd down to "
            "it, at most once per window of data) and sets CWR on its next new segment. Only a "
            "RED queue with ecn = true marks",
            False,
            "Linux net.ipv4.tcp_ecn = 2: ECN is accepted when the peer asks but connections "
            "do not ask for it",
        ),
        Field(
            "accecn",
            Boolean(),
            "Accurate ECN feedback (RFC 9768), on at both ends (needs ecn = true; Linux stack): "
            "the receiver counts CE-marked segments and returns the count modulo 8 in every ACK's "
            "ACE field (the AE, CWR and ECE bits), acknowledging at once when a mark follows an "
            "unmarked segment or two marks are unacknowledged; the sender takes the newly marked "
            "segments of each ACK from it and any new mark is its ECN echo; no CWR is sent. Each "
            "ACK also carries the AccECN option (its CE byte counter; 12 option bytes, 8 or none "
            "when SACK blocks leave less room), which decides how many segments were marked when "
            "an ACK covers more than 7 (without it, the most the ACE field allows). Prague needs it",
            False,
            "off, as Linux before 6.18 (net.ipv4.tcp_ecn = 3 asks for it there)",
        ),
        Field(
            "min_rto",
            Duration(positive=True, example="200ms"),
            "lower bound of the retransmission timeout",
            by_profile("min_rto"),
            "Linux TCP_RTO_MIN; RFC 6298 section 2.4 says 1 s; 4.4BSD TCPTV_MIN (2 slow ticks)",
        ),
        Field(
            "max_rto",
            Duration(positive=True, example="120s"),
            "upper bound of the retransmission timeout (at least min_rto)",
            by_profile("max_rto"),
            "Linux TCP_RTO_MAX; RFC 6298 section 2.5 allows any maximum of at least 60 s; "
            "4.4BSD TCPTV_REXMTMAX",
        ),
        Field(
            "initial_rto",
            Duration(positive=True, example="1s"),
            "retransmission timeout before the first RTT sample",
            by_profile("initial_rto"),
            "RFC 6298 section 2.1; Linux TCP_TIMEOUT_INIT; 4.4BSD's first timeout, "
            "(TCPTV_SRTTDFLT << 2) >> 1 = 12 slow ticks",
        ),
        Field(
            "handshake",
            Boolean(),
            "model the three-way handshake (SYN, SYN-ACK, ACK; SYN and SYN-ACK resent after "
            "initial_rto, doubling) before the first data, which then starts one RTT after the "
            "application; the exchange gives the sender its first RTT sample. HTTP/1.0 needs it; "
            "a persistent HTTP/1.1 connection without it starts established",
            Derived("true with [flows.http] or profile ns2 (syn_), false otherwise (the connection starts established)"),
            "RFC 793 section 3.4; a bulk flow is usually measured once established (iperf)",
        ),
        Field(
            "slow_start_after_idle",
            Boolean(),
            "when new data is sent with nothing in flight more than an RTO after the last "
            "data, restart from min(cwnd, initial_window): cwnd halves per RTO idle down to it "
            "(not for bbr, which sets cwnd itself)",
            True,
            "Linux net.ipv4.tcp_slow_start_after_idle = 1 (tcp_cwnd_restart); RFC 5681 section "
            "4.1, RFC 2861; document 000 section 2 notes Linux 2.x does it",
        ),
        Field(
            "random_send_delay",
            Duration(positive=False, example="1ms"),
            "longest random wait before the sender sends: whenever the window lets data go, "
            "it first waits a uniform random time on [0, random_send_delay], then sends all "
            "the window allows (retransmissions on duplicate and partial ACKs go at once). "
            "Breaks the phase locking of flows that share a drop-tail queue (Floyd and "
            "Jacobson 1992); replications with different seeds then differ. The draws come "
            "from the scenario seed and the flow's name",
            "0s",
            "off, as ns-2's Agent/TCP overhead_ 0 (tcp.cc send_much), which this models; "
            "real hosts get such dither from interrupts and scheduling",
        ),
    ),
    doc="TCP options of the flow's two endpoints.",
)
