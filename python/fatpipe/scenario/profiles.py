"""Stack profiles: ``[flows.tcp] profile``, a coherent set of TCP behaviours as a kernel
release ships them, each member still settable on its own.

This module is the one definition of what each profile sets: the loss detection and
recovery stack and its members (``[flows.tcp]`` keys), the congestion control a flow runs
when it names none, and the form of each algorithm (``[flows.cc]`` keys). Sources are stated
per value; `fatpipe algorithms` and docs/scenario.md print them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

from .schema import UNSET, Derived, ScenarioError, _join, _toml_literal

#: [flows.tcp] keys that only the Linux stack has (the RFC stack refuses them).
LINUX_ONLY_KEYS = (
    "rack", "tlp", "frto", "undo", "window_reduction", "adaptive_reordering", "max_reordering",
    "no_metrics_save", "no_ssthresh_metrics_save",
)
#: [flows.tcp] keys that only the RFC stack has.
RFC_ONLY_KEYS = (
    "limited_transmit", "newreno_impatient", "ssthresh_every_timeout", "bsd_window", "reno_recover_guard", "sack_variant",
)


@dataclass(frozen=True)
class Member:
    """One behaviour a profile sets: its value and where the value comes from."""

    value: Any
    source: str


@dataclass(frozen=True)
class Profile:
    """A stack profile."""

    name: str
    doc: str
    #: "rfc" or "linux": which loss detection and recovery runs (the core's `stack`).
    stack: str
    #: The preset of a flow that names no congestion control.
    default_cc: Member
    #: [flows.tcp] keys the profile sets, unless the flow sets them.
    tcp: Mapping[str, Member]
    #: Per algorithm, [flows.cc] keys the profile sets, unless the flow sets them.
    cc: Mapping[str, Mapping[str, Member]] = field(default_factory=dict)
    #: Whose per-destination metrics cache the profile's kernel keeps (the core's
    #: MetricsKernel: "linux24" or "linux"); None: none modelled (tcp/metrics.rs).
    metrics_kernel: Optional[str] = None


_LINUX_6 = "Linux 6.x as shipped"

#: The retransmission timer's bounds and first value, as Linux and RFC 6298 set them (the
#: linux, linux-2.4 and rfc profiles share them).
_LINUX_RTO = {
    "min_rto": Member("200ms", "Linux TCP_RTO_MIN (RFC 6298 2.4 says 1 s)"),
    "max_rto": Member("120s", "Linux TCP_RTO_MAX (RFC 6298 2.5: at least 60 s)"),
    "initial_rto": Member("1s", "RFC 6298 2.1; Linux TCP_TIMEOUT_INIT"),
}
#: 4.4BSD-Lite (netinet/tcp_timer.h, tcp_timer.c, tcp_input.c, tcp_output.c); Stevens, TCP/IP
#: Illustrated vol. 2 (1995), chapters 25 to 29.
_BSD = "4.4BSD"
#: The CSRG SCCS history of sys/netinet (read in the jonathangray/csrg git conversion): the
#: versions of tcp_input.c and tcp_timer.c each BSD profile follows, with their dates.
_RENO_INPUT = "4.3BSD-Reno tcp_input.c 7.25 (CSRG, 1990-06-30)"
_RENO_TIMER = "4.3BSD-Reno tcp_timer.c 7.18 (CSRG, 1990-06-28)"
_LITE2_INPUT = "4.4BSD-Lite2 tcp_input.c 8.12 (CSRG, 1995-05-24)"

def _bsd_growth(source: str, eighth: Member) -> Dict[str, Dict[str, Member]]:
    """A BSD profile's Reno: tcp_input.c's window in bytes (read at ``source``), with or
    without 4.3BSD-Reno's eighth of a segment per ACK."""
    return {"reno": {
        "variant": Member("bsd", f"{source}: the window in bytes, maxseg per ACK while snd_cwnd <= "
                          "snd_ssthresh, maxseg * maxseg / snd_cwnd above"),
        "eighth": eighth,
    }}


#: What both BSD profiles share: BSD's loss recovery, timers and window bookkeeping, which did
#: not change between 4.3BSD-Reno (1990) and 4.4BSD-Lite2 (1995) in what they model.
_BSD_TCP = {
    "rto_estimator": Member("bsd", f"{_BSD} tcp_input.c tcp_xmit_timer: SRTT and RTTVAR in slow ticks"),
    "slow_timer": Member("500ms", f"{_BSD} tcp_slowtimo, PR_SLOWHZ = 2"),
    "fast_timer": Member("200ms", f"{_BSD} tcp_fasttimo, PR_FASTHZ = 5 (TF_DELACK)"),
    "min_rto": Member("1s", f"{_BSD} TCPTV_MIN = 2 slow ticks (t_rttmin)"),
    "max_rto": Member("64s", f"{_BSD} TCPTV_REXMTMAX = 128 slow ticks"),
    "initial_rto": Member("6s", f"{_BSD} TCPTV_SRTTDFLT 3 s: first timeout (6 << 2) >> 1 = 12 ticks"),
    "initial_window": Member(1, f"{_BSD} tcp_mss: snd_cwnd = one segment"),
    "limited_transmit": Member(False, "RFC 3042 came in 2001"),
    "newreno_impatient": Member(False, "BSD has no NewReno: its Reno recovery ends on the first new ACK"),
    "ssthresh_every_timeout": Member(True, f"{_RENO_TIMER} lines 237-243, TCPT_REXMT: on every expiry "
                                     "ssthresh = max(2, min(snd_wnd, snd_cwnd) / 2 / maxseg) segments and "
                                     "snd_cwnd = maxseg; the same in 8.1 (1993) and 8.2 (1995)"),
    "bsd_window": Member(True, f"{_RENO_INPUT} lines 853-861 (ssthresh from min(snd_wnd, snd_cwnd) on the "
                         "third duplicate ACK), 885-887 (the window retracted to ssthresh only when "
                         "t_dupacks > tcprexmtthresh), 919-934 (the window opened on that ACK too); "
                         f"the same in {_LITE2_INPUT}"),
    "reno_recover_guard": Member(False, f"{_RENO_INPUT} line 853: three duplicate ACKs always retransmit"),
    "sack_variant": Member("rfc6675", "BSD has no SACK (RFC 2018 came in 1996); RFC 6675 when set"),
    "dsack": Member(False, "RFC 2883 came in 2000"),
    "fack": Member(False, "no SACK (RFC 2018 came in 1996)"),
}

#: Linux 2.4's window growth, which the 2.4.19 HighSpeed and Scalable patches kept: once per
#: ACK (document 001: HighSpeed "uses the same slow start" as Standard TCP).
_PATCHES_PER_ACK = (
    "Linux 2.4 tcp_ack calls tcp_cong_avoid once per ACK of new data; document 001: HighSpeed \"uses "
    "the same slow start\" as the standard 2.4.20 kernel"
)
#: Linux 2.4's reduction without loss, which the patches left alone (document 001 Figure 12).
_PATCHES_CWR = (
    "Linux 2.4 include/net/tcp.h __tcp_enter_cwr: ssthresh = tcp_recalc_ssthresh = max(cwnd / 2, 2); "
    "document 001 Figure 12: the window after the interface's back-off is equal for all three algorithms"
)

#: Where net.ipv4.tcp_no_ssthresh_metrics_save comes from (the linux profile's member).
_NO_SSTHRESH_SOURCE = (
    "net.ipv4.tcp_no_ssthresh_metrics_save = 1 since Linux 5.6 (commit 65e6d90168f3, \"net-tcp: Disable TCP "
    "ssthresh metrics cache by default\", Dec. 2019; this machine's 6.18 reads 1); ssthresh was cached "
    "before it"
)

PROFILES: Dict[str, Profile] = {
    "linux": Profile(
        "linux",
        "Linux 6.x as shipped (this machine's kernel is 6.18): SACK and D-SACK, RACK-TLP, "
        "PRR, undo by DSACK, Eifel and F-RTO, adaptive reordering, limited transmit, Linux's "
        "RTO estimator and per-ACK RTT samples, CUBIC with HyStart",
        "linux",
        Member("cubic", "Linux net.ipv4.tcp_congestion_control default (CONFIG_DEFAULT_TCP_CONG)"),
        {
            "rack": Member(True, "net.ipv4.tcp_recovery = 1 (RACK loss detection, Linux 4.18+)"),
            "tlp": Member(True, "net.ipv4.tcp_early_retrans = 3 (tail loss probe)"),
            "frto": Member(True, "net.ipv4.tcp_frto = 2 (SACK-enhanced F-RTO, RFC 5682)"),
            "dsack": Member(True, "net.ipv4.tcp_dsack = 1"),
            "undo": Member(True, "tcp_input.c tcp_try_undo_* (no sysctl: always on)"),
            "window_reduction": Member("prr", "tcp_input.c tcp_cwnd_reduction (RFC 6937, Linux 3.2+)"),
            "adaptive_reordering": Member(True, "tcp_input.c tcp_check_sack_reordering"),
            "max_reordering": Member(300, "net.ipv4.tcp_max_reordering = 300"),
            "rto_estimator": Member("linux", "tcp_input.c tcp_rtt_estimator, tcp_set_rto"),
            "fack": Member(False, "FACK removed in Linux 4.15 (RACK replaces it)"),
            "initial_window": Member(10, "RFC 6928; Linux default since 2.6.39"),
            "no_metrics_save": Member(False, "net.ipv4.tcp_no_metrics_save = 0 (tcp_metrics.c tcp_update_metrics)"),
            "no_ssthresh_metrics_save": Member(True, _NO_SSTHRESH_SOURCE),
            **_LINUX_RTO,
        },
        {
            "cubic": {
                "variant": Member("linux", "net/ipv4/tcp_cubic.c"),
                "hystart": Member("linux", "tcp_cubic.c hystart = 1, hystart_detect = 3"),
            },
            "highspeed": {"variant": Member("linux", "net/ipv4/tcp_highspeed.c")},
            "bbr": {"variant": Member("linux", "net/ipv4/tcp_bbr.c")},
            "vegas": {"variant": Member("linux", "net/ipv4/tcp_vegas.c")},
            "westwood_plus": {"variant": Member("linux", "net/ipv4/tcp_westwood.c")},
            "reno": {
                "byte_counting": Member(
                    True,
                    "tcp_cong.c tcp_reno_cong_avoid: tcp_slow_start and tcp_cong_avoid_ai count every "
                    "segment an ACK covers, SACKed ones included",
                ),
            },
        },
        metrics_kernel="linux",
    ),
    "linux-2.4": Profile(
        "linux-2.4",
        "the Linux 2.4/2.6 hosts of documents 000, 001 and 004: SACK with FACK, D-SACK undo, "
        "adaptive reordering, rate halving; no PRR, RACK, TLP, F-RTO or HyStart; Reno "
        "congestion control (2.4 had no other), and HighSpeed and Scalable as document 001's "
        "2.4.19 patches ran them: growth counted per ACK, Linux's forms, and a reduction without "
        "loss that halves for every algorithm; a fresh connection starts at 2 segments (tcp_v4_init_sock)",
        "linux",
        Member("sack", "Linux 2.4 tcp_input.c: Reno congestion control with SACK (net.ipv4.tcp_sack = 1)"),
        {
            "rack": Member(False, "RACK arrived in Linux 4.4"),
            "tlp": Member(False, "tail loss probes arrived in Linux 3.10"),
            "frto": Member(False, "F-RTO arrived in Linux 2.6.22 (off by default until 2.6.24)"),
            "dsack": Member(True, "Linux 2.4 net.ipv4.tcp_dsack = 1"),
            "undo": Member(True, "Linux 2.4 tcp_input.c tcp_try_undo_* (Eifel, D-SACK)"),
            "window_reduction": Member("rate_halving", "Linux 2.4 tcp_input.c tcp_cwnd_down"),
            "adaptive_reordering": Member(True, "Linux 2.4 tcp_input.c tcp_update_reordering"),
            "max_reordering": Member(127, "Linux 2.4 TCP_MAX_REORDERING 127"),
            "rto_estimator": Member("linux", "Linux 2.4 tcp_input.c tcp_rtt_estimator (the same estimator)"),
            "fack": Member(True, "Linux 2.4 net.ipv4.tcp_fack = 1"),
            "initial_window": Member(2, "Linux 2.4 tcp_ipv4.c tcp_v4_init_sock: snd_cwnd = 2; tcp_input.c "
                                     "tcp_init_metrics replaces it (tcp_init_cwnd) only when the route cache "
                                     "holds an RTT for the destination (2.4.27), so a fresh connection starts "
                                     "at 2 segments"),
            "no_metrics_save": Member(False, "Linux 2.4 tcp_input.c tcp_update_metrics: metrics saved in the "
                                      "route cache at every close (sysctl_tcp_nometrics_save = 0 in 2.4.27; "
                                      "`ip route flush cache` empties it)"),
            **_LINUX_RTO,
        },
        {
            "reno": {
                "byte_counting": Member(
                    False,
                    "Linux 2.4 tcp_cong_avoid: one segment per ACK in slow start, one per cwnd ACKs "
                    "after (byte counting came in 2.6.13, off by default)",
                ),
            },
            "highspeed": {
                "variant": Member(
                    "linux",
                    "document 001 Figure 3 (2.4.19-hstcp): a(w) = 4 at w = 262 and 5 past 347, RFC 3649 "
                    "appendix B's table read one row up, as Linux tcp_highspeed.c reads it",
                ),
                "byte_counting": Member(False, _PATCHES_PER_ACK),
                "cwr_halves": Member(True, _PATCHES_CWR),
            },
            "scalable": {
                "variant": Member(
                    "linux",
                    "Kelly's scalable-0.5.1 patch for 2.4.19 as Linux 2.6.13 tcp_scalable.c ported it: one "
                    "segment per min(cwnd, TCP_SCALABLE_AI_CNT) ACKs, ssthresh = cwnd - (cwnd >> "
                    "TCP_SCALABLE_MD_SCALE 3)",
                ),
                "a": Member(
                    0.02,
                    "TCP_SCALABLE_AI_CNT 50 \"to account for delayed ack\" (tcp_scalable.c, 2.6.13 to 5.x): "
                    "1/50 per ACK, Kelly's 0.01 per segment with delayed ACKs, 1 % per round trip",
                ),
                "byte_counting": Member(False, _PATCHES_PER_ACK),
                "cwr_halves": Member(True, _PATCHES_CWR),
            },
        },
        metrics_kernel="linux24",
    ),
    "rfc": Profile(
        "rfc",
        "the RFC reference stack fatpipe ran before profiles existed, kept byte for byte: "
        "RFC 5681, 6582, 6675 and 6298 as written, the recovery variant per flow (tahoe, reno, "
        "newreno, sack), ns-2 in spirit",
        "rfc",
        Member("newreno", "RFC 6582: standard TCP without SACK"),
        {
            "rto_estimator": Member("rfc6298", "RFC 6298 section 2"),
            "limited_transmit": Member(False, "off, as before profiles; RFC 3042 when set"),
            "newreno_impatient": Member(False, "Slow-but-Steady, as before profiles; RFC 6582 section 4 allows either"),
            "ssthresh_every_timeout": Member(False, "RFC 5681 section 3.1: only the first timeout of a congestion event"),
            "bsd_window": Member(False, "RFC 5681 3.1 eq. 4: ssthresh from the flight (cwnd without inflation)"),
            "reno_recover_guard": Member(False, "RFC 5681 3.2: classic Reno, as before profiles"),
            "sack_variant": Member("rfc6675", "RFC 6675, as before profiles"),
            "dsack": Member(False, "off, as before profiles; RFC 2883 when set"),
            "fack": Member(False, "RFC 6675 loss rule; FACK (Mathis and Mahdavi 1996) when set"),
            "initial_window": Member(10, "RFC 6928, as before profiles"),
            **_LINUX_RTO,
        },
    ),
    "bsd-4.3-reno": Profile(
        "bsd-4.3-reno",
        "4.3BSD-Reno (1990), whose TCP IRIX 5.2, the hosts of document 002, was based on: Reno "
        "fast retransmit and recovery without NewReno or SACK, the window opened by maxseg^2 / "
        "cwnd plus maxseg / 8 bytes per ACK in congestion avoidance (about W / 8 segments more "
        "per round trip), ssthresh = half of min(peer's window, cwnd) at a fast retransmit and at "
        "every timeout, one-segment initial window, and the coarse timers: the retransmission "
        "timer counts 500 ms ticks of the slow timer, delayed ACKs go out on the 200 ms ticks of "
        "the fast timer",
        "rfc",
        Member("reno", f"{_RENO_INPUT}: fast retransmit and fast recovery, no SACK"),
        _BSD_TCP,
        _bsd_growth(
            f"{_RENO_INPUT} lines 919-934",
            Member(True, f"{_RENO_INPUT} line 932: incr = incr * incr / cw + incr / 8, added in 7.23 "
                   "(1990-06-28, 'faster window opening in linear mode (add 1/8 packet, was 146 bytes)'), "
                   "kept to 8.6 (1994-08-05), removed in 8.7 (1994-10-27, 'per Van via Sally Floyd')"),
        ),
    ),
    "bsd-4.4": Profile(
        "bsd-4.4",
        "4.4BSD-Lite2 (1995): bsd-4.3-reno without the eighth of a segment per ACK (tcp_input.c "
        "8.7 removed it in 1994), so congestion avoidance grows a little under one segment per "
        "round trip; 4.4BSD (1993) and 4.4BSD-Lite (1994) still had it",
        "rfc",
        Member("reno", f"{_LITE2_INPUT}: fast retransmit and fast recovery (4.3BSD-Reno's), no SACK"),
        _BSD_TCP,
        _bsd_growth(
            _LITE2_INPUT,
            Member(False, "CSRG tcp_input.c 8.7 (1994-10-27): 'per Van via Sally Floyd, do not add the "
                   "constant maxseg/8 to the congestion window on each new ack in congestion avoidance'"),
        ),
    ),
}

#: ns-2.35 (the last release; document 003 used ns-2 of 2004-05, whose TCP defaults are the
#: same): tcl/lib/ns-default.tcl, tcp/tcp.cc, tcp/tcp-sink.cc.
_NS2 = "ns-2 ns-default.tcl"
_NS2_PROFILE = Profile(
    "ns2",
    "ns-2's one-way Agent/TCP and TCPSink, as document 003 ran them: windows counted in "
    "packets (window_ = 20 by default: set rcv_buffer to window_ x packetSize_; maxcwnd_ = 0 "
    "leaves cwnd unbounded), packetSize_ 1000 bytes of payload to which useHeaders_ adds "
    "tcpip_base_hdr_size_ = 40 (1040 bytes on the wire: set mss = 1000, and the topology's "
    "framing_bytes = 0, as ns-2 links add no link layer), a sink that ACKs "
    "every packet, no timestamps, no SACK but Agent/TCP/Sack1's, a SYN before the data (syn_, "
    "delay_growth_) and then windowInit_ = 2, limited transmit (singledup_), BSD's RTO estimator "
    "in ticks of tcpTick_ = 10 ms; ns-2's Tahoe, Reno, Newreno and Sack1 agents are the RFC "
    "stack's tahoe, reno, newreno and sack recoveries",
    "rfc",
    Member("reno", f"{_NS2}: Agent/TCP/Reno is the reference agent of ns-2's TCP studies"),
    {
        "delayed_ack": Member(False, f"{_NS2}: Agent/TCPSink ACKs every packet (Agent/TCPSink/DelAck delays)"),
        "timestamps": Member(False, f"{_NS2} Agent/TCP set timestamps_ false"),
        "initial_window": Member(2, f"{_NS2} Agent/TCP set windowInit_ 2 (default since 2001/5/26)"),
        "handshake": Member(True, f"{_NS2} Agent/TCP set syn_ true, delay_growth_ true: tcp.cc "
                            "set_initial_window starts at cwnd 1 for the SYN, whose ACK opens it to 2"),
        "limited_transmit": Member(True, f"{_NS2} Agent/TCP set singledup_ 1: tcp.cc send_one sends a new "
                                   "packet on the first and second duplicate ACK (RFC 3042)"),
        "dsack": Member(False, f"{_NS2} Agent/TCPSink set generateDSacks_ false"),
        "newreno_impatient": Member(True, f"{_NS2} Agent/TCP/Newreno set newreno_changes1_ 1 (default since "
                                    "5/5/03, RFC 2582): tcp-newreno.cc partialnewack_helper restarts the "
                                    "timer on the first partial ACK only"),
        "ssthresh_every_timeout": Member(True, "ns-2 tcp.cc TcpAgent::timeout: slowdown(CLOSE_SSTHRESH_HALF|"
                                         "CLOSE_CWND_RESTART) on every expiry, half of cwnd_ (which holds "
                                         "recovery's inflation apart, in dupwnd_), at least 2"),
        "bsd_window": Member(False, "ns-2 tcp.cc slowdown: half of cwnd_ (without dupwnd_), never of the "
                             "peer's window"),
        "reno_recover_guard": Member(True, f"{_NS2} Agent/TCP set bug_fix_ true: tcp-reno.cc dupack_action "
                                     "retransmits again only past recover_ once recovery was left "
                                     "(last_cwnd_action_ EXITED)"),
        "sack_variant": Member("sack1", "ns-2 tcp-sack1.cc: Agent/TCP/Sack1 (Fall and Floyd 1996), the SACK of "
                               "document 003, with ns-default.tcl's partial_ack_ false, oldCode_ false"),
        "fack": Member(False, "ns-2 tcp-sack1.cc: Sack1 counts pipe as RFC 6675 does; FACK is Agent/TCP/Fack"),
        "rto_estimator": Member("bsd", "ns-2 tcp.cc rtt_update: BSD's fixed-point estimator (T_SRTT_BITS 3, "
                                "T_RTTVAR_BITS 2, RTO = srtt + 4 rttvar) in ticks of tcpTick_; ns-2 arms "
                                "the timer at the exact time, fatpipe on the next tick (at most 10 ms later)"),
        "slow_timer": Member("10ms", f"{_NS2} Agent/TCP set tcpTick_ 0.01 (default since 2002/03/07)"),
        "min_rto": Member("200ms", f"{_NS2} Agent/TCP set minrto_ 0.2"),
        "max_rto": Member("60s", f"{_NS2} Agent/TCP set maxrto_ 60"),
        "initial_rto": Member("3s", f"{_NS2} Agent/TCP set rtxcur_init_ 3.0 (RFC 2988's initial RTO)"),
    },
)
PROFILES["ns2"] = _NS2_PROFILE

def _grouped(values: Mapping[str, Any]) -> str:
    """``{profile: value}`` as the reference writes it: each value once, in TOML, with the
    profiles that have it ("10 (linux, rfc), 1 (bsd-4.4)")."""
    groups: Dict[str, List[str]] = {}
    for name, value in values.items():
        groups.setdefault(_toml_literal(value), []).append(name)
    return ", ".join(f"{value} ({', '.join(names)})" for value, names in groups.items())


def by_profile(key: str, otherwise: Any = UNSET) -> Derived:
    """The reference's default of ``[flows.tcp] key``, read from the profiles: what each one
    sets, and ``otherwise`` for a profile that sets nothing (UNSET: the key stays unset). A
    profile whose stack lacks the key is left out."""
    values, unset = {}, False
    for name, p in PROFILES.items():
        if key in (LINUX_ONLY_KEYS if p.stack == "rfc" else RFC_ONLY_KEYS):
            continue
        if key in p.tcp:
            values[name] = p.tcp[key].value
        elif otherwise is UNSET:
            unset = True
        else:
            values[name] = otherwise
    return Derived("by profile: " + _grouped(values) + ("; unset otherwise" if unset else ""))


def default_cc_by_profile() -> Derived:
    """The reference's default of a flow's ``cc``: each profile's."""
    return Derived("by profile: " + _grouped({n: p.default_cc.value for n, p in PROFILES.items()}))


#: The profile of a flow that names none. Nothing else chooses a flow's stack: a name the
#: default stack cannot run is refused (congestion.stack_recovery), never moved elsewhere.
DEFAULT_PROFILE = "linux"


def flow_profile(tcp: Mapping[str, Any]) -> Profile:
    """The flow's profile: as given, else the default."""
    return PROFILES[tcp["profile"] or DEFAULT_PROFILE]


def resolve_tcp_members(
    profile: Profile, tcp: Dict[str, Any], tcp_path: str,
    parse: Callable[[str, Any], Any] = lambda key, value: value,
) -> Dict[str, Any]:
    """The [flows.tcp] members with the profile's values where the flow left them unset
    (``parse(key, value)`` reads a profile's value as the flow's key would be read); a member
    the profile's stack does not have is refused in one line."""
    wrong = LINUX_ONLY_KEYS if profile.stack == "rfc" else RFC_ONLY_KEYS
    for key in wrong:
        if tcp[key] is not None:
            sub = _join(tcp_path, key)
            stacks = '"linux" or "linux-2.4"' if key in LINUX_ONLY_KEYS else '"rfc"'
            why = {
                "limited_transmit": "the Linux stack always clocks out new data on duplicate ACKs (SACKed segments leave the flight)",
                "newreno_impatient": "the Linux stack rearms the retransmission timer on every ACK of new data (tcp_rearm_rto)",
                "ssthresh_every_timeout": "the Linux stack lowers ssthresh once per loss episode (tcp_enter_loss)",
                "bsd_window": "it is BSD's window bookkeeping; Linux reduces the window its own way",
                "reno_recover_guard": "the Linux stack recovers as NewReno without SACK (tcp_fastretrans_alert)",
                "sack_variant": "the Linux stack runs its own SACK recovery (RACK, PRR, undo)",
                "no_metrics_save": _NO_CACHE.get(profile.name, _NO_CACHE["rfc"]),
                "no_ssthresh_metrics_save": _NO_CACHE.get(profile.name, _NO_CACHE["rfc"]),
            }.get(key, "it belongs to the Linux stack")
            raise ScenarioError(
                f'{sub}: not allowed with profile = "{profile.name}": {why}; set profile = {stacks}', sub
            )
    if tcp.get("no_ssthresh_metrics_save") is not None and "no_ssthresh_metrics_save" not in profile.tcp:
        sub = _join(tcp_path, "no_ssthresh_metrics_save")
        raise ScenarioError(
            f'{sub}: not allowed with profile = "{profile.name}": its kernel has no such switch (Linux 5.6 '
            'added it); its cache keeps ssthresh unless no_metrics_save = true; set profile = "linux"', sub)
    resolved = dict(tcp)
    for key, member in profile.tcp.items():
        if resolved.get(key) is None:
            resolved[key] = parse(key, member.value)
    # The core takes every member; one the flow's stack lacks reaches it unread: a switch off,
    # any other at the value of the profile that names the other stack.
    for key in wrong:
        value = PROFILES["linux" if key in LINUX_ONLY_KEYS else "rfc"].tcp[key].value
        resolved[key] = False if isinstance(value, bool) else parse(key, value)
    if tcp.get("slow_timer") is None and resolved.get("rto_estimator") != "bsd":
        # The profile's slow timer clocks its BSD estimator only: a flow that picks another
        # estimator (ns2 with rto_estimator = "rfc6298") does not get it.
        resolved["slow_timer"] = None
    if profile.stack == "linux" and resolved["rack"]:
        for key, why in (("fack", "RACK replaced FACK (Linux 4.15)"),
                         ("dcr_div", "DCR raises the duplicate-ACK threshold, which RACK does not use")):
            if resolved[key]:
                sub = _join(tcp_path, key)
                raise ScenarioError(
                    f"{sub}: {_toml_literal(resolved[key])} is not allowed with rack = true: {why}; "
                    'set rack = false (profile = "linux-2.4" has it off)', sub)
    if resolved.get("rto_estimator") == "bsd" and profile.stack != "rfc":
        sub = _join(tcp_path, "rto_estimator")
        raise ScenarioError(
            f'{sub}: "bsd" is not allowed with profile = "{profile.name}": BSD\'s timers run on the RFC stack; '
            'set profile = "bsd-4.3-reno" or "bsd-4.4" (or "rfc")', sub)
    if resolved.get("slow_timer") is not None and resolved.get("rto_estimator") != "bsd":
        sub = _join(tcp_path, "slow_timer")
        raise ScenarioError(
            f'{sub}: not allowed with rto_estimator = "{resolved.get("rto_estimator")}": the slow timer '
            'is BSD\'s retransmission clock; set rto_estimator = "bsd"', sub)
    if resolved.get("rto_estimator") == "bsd" and resolved.get("slow_timer") is None:
        sub = _join(tcp_path, "slow_timer")
        raise ScenarioError(f'{sub}: missing; required with rto_estimator = "bsd" (4.4BSD: "500ms")', sub)
    return resolved


#: Why a profile on the RFC stack has no per-destination metrics cache.
_NO_CACHE = {
    "rfc": "the RFC stack keeps nothing between connections (RFC 2140's sharing is not modelled)",
    "bsd-4.4": "4.4BSD keeps its own cache in the route (tcp_close saves rtt, rttvar and ssthresh in "
               "rt_metrics once more than 16 send buffers of data were sent; tcp_mss reads them), not modelled",
    "ns2": "ns-2's agents keep nothing between connections",
}
# BSD's cache in the route is modelled for neither BSD profile; the message names 4.4BSD's.
_NO_CACHE["bsd-4.3-reno"] = _NO_CACHE["bsd-4.4"]


def metrics_cache(profile: Profile, tcp: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The normalized ``tcp.metrics``: the cache the profile's kernel keeps with the flow's
    switches, or None when the profile has none modelled."""
    if profile.metrics_kernel is None:
        return None
    return {
        "kernel": profile.metrics_kernel,
        "no_metrics_save": bool(tcp["no_metrics_save"]),
        "no_ssthresh_metrics_save": bool(tcp["no_ssthresh_metrics_save"]),
    }


def resolve_cc(profile: Profile, cc: Dict[str, Any]) -> Dict[str, Any]:
    """The [flows.cc] values with the profile's forms where the flow left the key unset
    (``cc["given"]``: the keys the flow wrote)."""
    forms = profile.cc.get(cc["algorithm"], {})
    resolved = dict(cc)
    for key, member in forms.items():
        if key not in cc["given"]:
            resolved[key] = member.value
    return resolved


def format_profiles() -> str:
    """Every profile and member with its value and source, as Markdown (the reference and
    `fatpipe algorithms`)."""
    keys: List[str] = []
    for p in PROFILES.values():
        for k in p.tcp:
            if k not in keys:
                keys.append(k)
    names = list(PROFILES)
    lines = ["| member | " + " | ".join(f"`{n}`" for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    lines.append("| stack | " + " | ".join(PROFILES[n].stack for n in names) + " |")
    lines.append("| cc when unset | " + " | ".join(f'`{PROFILES[n].default_cc.value}`' for n in names) + " |")
    for k in keys:
        cells = [_toml_literal(PROFILES[n].tcp[k].value) if k in PROFILES[n].tcp else "-" for n in names]
        lines.append(f"| tcp.{k} | " + " | ".join(cells) + " |")
    algorithms: List[str] = []
    for p in PROFILES.values():
        for a in p.cc:
            if a not in algorithms:
                algorithms.append(a)
    for a in algorithms:
        for k in sorted({k for p in PROFILES.values() for k in p.cc.get(a, {})}):
            cells = [_toml_literal(PROFILES[n].cc[a][k].value) if k in PROFILES[n].cc.get(a, {}) else "default" for n in names]
            lines.append(f"| {a}: cc.{k} | " + " | ".join(cells) + " |")
    out = ["Profiles (`[flows.tcp] profile`), and what each sets unless the flow sets it:", ""]
    out += [f"- `{p.name}`: {p.doc}." for p in PROFILES.values()]
    out += ["", *lines, "", "Sources:", ""]
    for p in PROFILES.values():
        srcs = [f"cc {p.default_cc.value}: {p.default_cc.source}"]
        srcs += [f"{k} {_toml_literal(m.value)}: {m.source}" for k, m in p.tcp.items()]
        srcs += [f"{a} {k} {_toml_literal(m.value)}: {m.source}" for a, ms in p.cc.items() for k, m in ms.items()]
        out.append(f"- `{p.name}`: " + "; ".join(srcs) + ".")
    return "\n".join(out) + "\n"
