"""Congestion control: every algorithm's parameters and normalizer, and the presets that
name the documents' TCP versions (algorithm + loss recovery)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from .ecn_algorithms import ECN_NEEDS, ECN_TABLES
from .congestion_linux import LINUX_ALGORITHMS
from .bpf import BPF_TABLE, KERNEL_HZ, KERNEL_HZ_SOURCE, normalize_bpf
from .python_cc import PYTHON_TABLE, normalize_python, python_value
from .bbr3 import BBR3_TABLE, normalize_bbr3
from ..units import format_duration
from .algorithm import Algorithm, _fraction, _packets, _simple_algorithm, _variant_field
from .kinds import Boolean, Choice, Duration, Integer, Real, Size
from .schema import UNSET, Derived, Field, ScenarioError, Table, Tagged, _fail, _join, _num, _toml_literal



# ---- congestion control --------------------------------------------------------------

_RENO = Table(
    fields=(
        Field(
            "a",
            Real(lower=0.0, example=1.0),
            "additive increase: segments added to cwnd per RTT in congestion avoidance",
            1.0,
            "RFC 5681 section 3.1",
        ),
        Field(
            "b",
            Real(lower=0.0, upper=1.0, example=0.5),
            "multiplicative decrease: the fraction of the window given up after a loss "
            "(ssthresh = (1 - b) x cwnd; 0.5 halves it). Same meaning as b in Scalable and "
            "HighSpeed TCP (documents 001, 003)",
            0.5,
            "RFC 5681 equation 4 (ssthresh = FlightSize / 2)",
        ),
        Field(
            "byte_counting",
            Boolean(),
            "grow cwnd by the segments each ACK covers (RFC 3465 appropriate byte counting, as "
            "Linux does) instead of by one per ACK, which delayed ACKs slow down",
            False,
            "RFC 5681 grows cwnd per ACK; RFC 3465 byte counting is experimental",
        ),
        Field(
            "variant",
            Choice(("rfc", "bsd")),
            "which growth: rfc (RFC 5681, in segments) or bsd (BSD's tcp_input.c, in bytes: one "
            "maxseg per ACK while cwnd <= ssthresh, maxseg^2 / cwnd per ACK above it, so a little "
            "under one segment per window of ACKs; needs a = 1 and byte_counting = false)",
            "rfc",
            "RFC 5681 section 3.1 (profiles bsd-4.3-reno and bsd-4.4 set bsd: CSRG sys/netinet/tcp_input.c, "
            "4.3BSD-Reno 7.25 to 4.4BSD-Lite2 8.12)",
        ),
        Field(
            "eighth",
            Boolean(),
            "with variant = \"bsd\": add maxseg / 8 bytes per ACK in congestion avoidance, as "
            "4.3BSD-Reno did, about W / 8 more segments per round trip at a window of W segments",
            Derived('false with variant = "bsd" (by profile: true with bsd-4.3-reno)'),
            "CSRG tcp_input.c 7.23 (1990-06-28, 'faster window opening in linear mode') to 8.6; "
            "removed in 8.7 (1994-10-27, 'per Van via Sally Floyd')",
        ),
    ),
    doc="Standard TCP congestion control: slow start, then AIMD(a, b) congestion avoidance "
    "(RFC 5681, Jacobson 1988).",
)


def _normalize_reno(params: Dict[str, Any], path: str) -> Dict[str, Any]:
    values = dict(params)
    _fill_by_variant(values, path, {"eighth": {"bsd": False}})
    if values["variant"] == "bsd":
        # BSD's tcp_input.c has neither a nor byte counting: refuse them rather than ignore them.
        for key, allowed, why in (("a", 1.0, "BSD adds one segment per window of ACKs (a = 1)"),
                                  ("byte_counting", False, "BSD opens the window per ACK")):
            if values[key] != allowed:
                raise ScenarioError(
                    f'{_join(path, key)}: {_toml_literal(values[key])} is not allowed with variant = "bsd": {why}',
                    _join(path, key),
                )
    return {
        "algorithm": "reno",
        "a": float(values["a"]),
        "b": float(values["b"]),
        "byte_counting": bool(values["byte_counting"]),
        "variant": values["variant"],
        "eighth": bool(values["eighth"]),
    }


def _fill_by_choice(
    values: Dict[str, Any], path: str, choice: str, defaults: Mapping[str, Mapping[str, Any]]
) -> None:
    """Fills each key left unset with its default for the value of ``choice`` (a variant, a
    mode). A key that value does not use (no default for it) must stay unset; the core, which
    takes every key, then gets the key's first default and ignores it."""
    chosen = values[choice]
    for key, by_choice in defaults.items():
        if chosen in by_choice:
            if values[key] is None:
                values[key] = by_choice[chosen]
            continue
        if values[key] is not None:
            used = " or ".join(json.dumps(v) for v in by_choice)
            raise ScenarioError(
                f"{_join(path, key)}: not used with {choice} = {json.dumps(chosen)}; only with {choice} = {used}",
                _join(path, key),
            )
        values[key] = next(iter(by_choice.values()))


def _fill_by_variant(values: Dict[str, Any], path: str, defaults: Mapping[str, Mapping[str, Any]]) -> None:
    _fill_by_choice(values, path, "variant", defaults)




def _kernel_hz_field(used_with: str) -> Field:
    return Field(
        "kernel_hz",
        Integer(minimum=1, maximum=100_000, example=KERNEL_HZ),
        "jiffies per second of the Linux form's clock (tcp_jiffies32); only with " + used_with,
        Derived(f"{KERNEL_HZ} with {used_with}"),
        KERNEL_HZ_SOURCE,
    )


_BYTE_COUNTING = Field(
    "byte_counting",
    Boolean(),
    "grow by the segments each ACK covers (RFC 3465) instead of per ACK",
    False,
    "RFC 5681 (per ACK), as Reno here and the documents' kernels and ns-2",
)

#: Vegas's thresholds by variant: the paper's (ns-2 v_alpha_, v_beta_, v_gamma_) and Linux's
#: tcp_vegas.c module parameters.
_VEGAS_DEFAULTS = {
    "alpha": {"paper": 1.0, "linux": 2.0},
    "beta": {"paper": 3.0, "linux": 4.0},
    "gamma": {"paper": 1.0, "linux": 1.0},
}


def _vegas_threshold(key: str, meaning: str) -> Field:
    by_variant = _VEGAS_DEFAULTS[key]
    return Field(
        key,
        Real(lower=0.0, lower_open=False, example=by_variant["paper"]),
        meaning + ", packets",
        Derived(f"{_num(by_variant['paper'])} (paper), {_num(by_variant['linux'])} (linux)"),
        f"Brakmo and Peterson 1995, ns-2 v_{key}_; Linux tcp_vegas.c {key}",
    )


_VEGAS = _simple_algorithm(
    "vegas",
    "TCP Vegas (Brakmo and Peterson 1995): once per RTT compares the expected rate cwnd/baseRTT "
    "with the actual cwnd/RTT; the difference is the flow's packets queued in the network. "
    "The paper's form (ns-2's) decides on the round's average RTT in slow start and grows every "
    "other RTT; Linux's decides every RTT on the round's minimum RTT.",
    (
        _variant_field(
            ("paper", "linux"),
            "which Vegas: paper (Brakmo and Peterson 1995 as ns-2 runs it: slow start doubles every "
            "other RTT, leaves it giving back 1/8 of the window) or linux (tcp_vegas.c: the round's "
            "minimum RTT, slow start every RTT that ends at the measured rate + 1, a fresh start "
            "after idle)",
            "the paper's form; Linux: net/ipv4/tcp_vegas.c",
        ),
        "variant",
    ),
    (_vegas_threshold("alpha", "fewer queued than this: grow one segment per RTT"), "alpha"),
    (_vegas_threshold("beta", "more queued than this: shrink one segment per RTT"), "beta"),
    (_vegas_threshold("gamma", "more queued than this at the end of a slow-start round: leave slow start"), "gamma"),
    finish=lambda values, path: _fill_by_variant(values, path, _VEGAS_DEFAULTS),
)

_WESTWOOD = _simple_algorithm(
    "westwood",
    "TCP Westwood (Mascolo et al. 2001): a bandwidth estimate filtered from every ACK; after a "
    "loss ssthresh = BWE x RTTmin / MSS instead of halving.",
    (Field("filter_time_constant", Duration(example="1s"), "time constant tau of the bandwidth filter", "1s", "ns-2 UCLA TCP Westwood, tau_ 1.0"), "filter_time_constant_ps"),
    (_BYTE_COUNTING, "byte_counting"),
)

def _finish_westwood_plus(values: Dict[str, Any], path: str) -> None:
    _fill_by_variant(values, path, {"byte_counting": {"paper": False, "linux": True}, "kernel_hz": {"linux": KERNEL_HZ}})
    if values["variant"] == "linux" and not values["byte_counting"]:
        raise ScenarioError(
            f'{_join(path, "byte_counting")}: false is not allowed with variant = "linux": Linux grows '
            "by tcp_reno_cong_avoid, which counts the segments each ACK covers",
            _join(path, "byte_counting"),
        )


_WESTWOOD_PLUS = _simple_algorithm(
    "westwood_plus",
    "TCP Westwood+ (Grieco and Mascolo 2004): one bandwidth sample per RTT, low-pass filtered "
    "as Linux does; the same response to losses as Westwood, or Linux's.",
    (
        _variant_field(
            ("paper", "linux"),
            "which response to losses: paper (ssthresh = BWE x RTTmin at the loss, cwnd never "
            "raised to it) or linux (tcp_westwood.c: Reno's halving, then cwnd = ssthresh = BWE x "
            "RTTmin when the reduction completes; Linux's integer estimate in jiffies)",
            "Grieco and Mascolo 2004; Linux: net/ipv4/tcp_westwood.c",
        ),
        "variant",
    ),
    (Field("min_sample_interval", Duration(positive=False, example="50ms"), "shortest bandwidth-sampling interval (a sample spans max(RTT, this)); the linux form rounds it down to jiffies", "50ms", "Linux TCP_WESTWOOD_RTT_MIN"), "min_sample_interval_ps"),
    (
        Field(
            _BYTE_COUNTING.key,
            _BYTE_COUNTING.kind,
            _BYTE_COUNTING.doc + "; the linux form requires it (tcp_reno_cong_avoid counts segments)",
            Derived("false (paper), true (linux)"),
            _BYTE_COUNTING.source + "; Linux tcp_reno_cong_avoid",
        ),
        "byte_counting",
    ),
    (_kernel_hz_field('variant = "linux"'), "kernel_hz"),
    finish=lambda values, path: _finish_westwood_plus(values, path),
)

_FAST = _simple_algorithm(
    "fast",
    "FAST TCP (Jin, Wei and Low 2004): w <- min(2w, (1 - gamma) w + gamma (baseRTT / RTT x w + "
    "alpha)); holds about alpha of its packets in queues; beta is the top of the band where "
    "the window is left alone (document 004).",
    (_packets("alpha", 200.0, "the flow's packets queued in the network at equilibrium", "document 004: the prototype's default 200/212"), "alpha"),
    (_packets("beta", 212.0, "top of the band [alpha, beta) of queued packets where the window is not changed (at least alpha)", "document 004"), "beta"),
    (Field("gamma", Real(lower=0.0, upper=1.0, upper_open=False, example=0.5), "weight of one update's step towards the target window", 0.5, "ns-2 FAST module gamma_"), "gamma"),
    (Field("update_interval", Duration(positive=False, example="20ms"), "time between window updates; 0 updates once per RTT", "0s", "Jin, Wei and Low 2004 (per RTT)"), "update_interval_ps"),
    (_packets("slow_start_exit", 1.0, "slow start ends when more of the flow's packets than this are queued", "Vegas's gamma (document 004 gives no value)"), "slow_start_exit_packets"),
)

_GRIDDT = _simple_algorithm(
    "griddt",
    "GridDT (document 004 section 4.3): additive increase mssval x rttval segments per RTT "
    "(mssval = max(1, mss_ref / MSS), rttval = max(1, (minRTT / rtt_ref)^2)), spread over the "
    "RTT; a loss takes cwnd / cwnd_decr off.",
    (Field("mss_ref", Size(minimum=1, example=1500), "reference segment size, bytes", 1500, "document 004 (sysctl_tcp_mss_ref)"), "mss_ref_bytes"),
    (Field("rtt_ref", Duration(example="10ms"), "reference RTT", "10ms", "document 004 (sysctl_tcp_rtt_ref); its tests used 50 ms"), "rtt_ref_ps"),
    (Field("cwnd_decr", Integer(minimum=1, example=2), "a loss takes cwnd / cwnd_decr off the window", 2, "document 004 (sysctl_tcp_cwnd_decr); its tests used 8"), "cwnd_decr"),
    (_BYTE_COUNTING, "byte_counting"),
)

_NOCC = _simple_algorithm(
    "nocc",
    "No congestion control (document 000): the receiver's window alone limits the sender; no "
    "cut on loss, no slow start after a timeout.",
    (Field("cwnd_segments", Integer(minimum=1, example=1000), "fix the window at this many segments (document 000's TCP_SET_CWND)", UNSET, "unset: no congestion window at all (TCP_NO_CONGESTION)"), "cwnd_segments"),
)

#: How HighSpeed and Scalable count ACKs, and how they reduce without a loss: the members by
#: which the linux-2.4 profile gives them Linux 2.4's window handling (profiles.py).
_ACK_COUNTING = Field(
    "byte_counting",
    Boolean(),
    "grow by the segments each ACK covers (RFC 3465, as Linux since 2.6.13) instead of once per "
    "ACK (Linux 2.4 and its HighSpeed and Scalable patches: with delayed ACKs half the growth, "
    "slow start at 1.5x per round trip)",
    True,
    "RFC 3649 and Kelly 2003 state their increase per acknowledged segment",
)
_CWR_HALVES = Field(
    "cwr_halves",
    Boolean(),
    "a window reduction without a loss (CWR: the host's interface queue refused a segment, or "
    "an ECN echo) halves the window, as Linux 2.4's __tcp_enter_cwr did with tcp_recalc_ssthresh, "
    "instead of taking the algorithm's own decrease; the Linux stack only",
    False,
    "the algorithm's decrease on every congestion signal (Linux since 2.6.13: tcp_init_cwnd_reduction "
    "asks the module's ssthresh)",
)


def _check_fixed_table(values: Dict[str, Any], path: str) -> None:
    """Linux's HighSpeed reads RFC 3649 appendix B's fixed table: the RFC's parameters cannot
    change it."""
    if values["variant"] != "linux":
        return
    for f in _HIGHSPEED.table.fields:
        if f.key not in ("variant", "byte_counting", "cwr_halves") and values[f.key] != f.kind.parse(f.default, f.key):
            raise ScenarioError(
                f"{_join(path, f.key)}: {_num(values[f.key])} is not allowed with variant = \"linux\": "
                f"Linux tcp_highspeed.c uses RFC 3649 appendix B's fixed table; leave it at "
                f"{_toml_literal(f.default)} or use variant = \"rfc\"",
                _join(path, f.key),
            )


_HIGHSPEED = _simple_algorithm(
    "highspeed",
    "HighSpeed TCP (RFC 3649): above low_window the increase a(w) grows and the decrease b(w) "
    "shrinks with the window, so that the response function reaches high_window at loss rate "
    "high_p; a(w), b(w) from the RFC's formulas, tabulated once. Linux's form reads RFC 3649 "
    "appendix B's fixed table.",
    (
        _variant_field(
            ("rfc", "linux"),
            "which HighSpeed: rfc (RFC 3649's formulas from the parameters below, a(w) rounded to "
            "the nearest row) or linux (tcp_highspeed.c: the RFC's appendix B table read one row "
            "up, a(w) added per ACK whatever it acknowledged, the decrease of the row last used; "
            "the parameters below must keep their defaults)",
            "RFC 3649; Linux: net/ipv4/tcp_highspeed.c",
        ),
        "variant",
    ),
    (Field("low_window", Integer(minimum=1, example=38), "up to this window (segments) it is standard TCP", 38, "RFC 3649 section 5"), "low_window"),
    (Field("high_window", Integer(minimum=2, example=83000), "window (segments) reached at loss rate high_p", 83000, "RFC 3649 section 5 (10 Gb/s, 1500-byte packets, 100 ms)"), "high_window"),
    (Field("high_p", Real(lower=0.0, upper=1.0, example=1e-7), "loss rate at which the window is high_window", 1e-7, "RFC 3649 section 5"), "high_p"),
    (_fraction("high_decrease", 0.1, "b(w) at high_window: the fraction of the window given up on a loss", "RFC 3649 section 5"), "high_decrease"),
    (_ACK_COUNTING, "byte_counting"),
    (_CWR_HALVES, "cwr_halves"),
    finish=lambda values, path: _check_fixed_table(values, path),
)

_SCALABLE = _simple_algorithm(
    "scalable",
    "Scalable TCP (Kelly 2003): multiplicative increase a per acknowledged segment (a x cwnd "
    "per RTT) and decrease b on a loss, above a legacy window where it is standard TCP; Linux's "
    "form (Kelly's patch as tcp_scalable.c carries it) grows one segment per min(cwnd, 1/a) "
    "counted units and always decreases by b.",
    (
        _variant_field(
            ("paper", "linux"),
            "which Scalable: paper (Kelly 2003: a per counted unit above low_window, standard TCP "
            "below it) or linux (tcp_scalable.c, from Kelly's 2.4.19 patch: one segment per "
            "min(cwnd, TCP_SCALABLE_AI_CNT = 1/a) counted units, ssthresh = cwnd - floor(b x cwnd) at "
            "every window; no low_window)",
            "Kelly 2003; Linux: net/ipv4/tcp_scalable.c (2.6.13, ported from Kelly's 2.4.19 patch)",
        ),
        "variant",
    ),
    (Field("a", Real(lower=0.0, example=0.01), "increase per counted unit (acknowledged segment; an ACK without byte_counting), segments; the linux form's TCP_SCALABLE_AI_CNT is 1/a", 0.01, "Kelly 2003 (document 001 uses 0.02 = 1/50)"), "a"),
    (_fraction("b", 0.125, "fraction of the window given up on a loss", "Kelly 2003; Linux TCP_SCALABLE_MD_SCALE"), "b"),
    (Field("low_window", Integer(minimum=1, example=16), "below this window (segments) it is standard TCP; only with variant = \"paper\"", Derived('16 with variant = "paper"'), "Kelly 2003 (lwnd)"), "low_window"),
    (_ACK_COUNTING, "byte_counting"),
    (_CWR_HALVES, "cwr_halves"),
    finish=lambda values, path: _fill_by_variant(values, path, {"low_window": {"paper": 16}}),
)

_HTCP = _simple_algorithm(
    "htcp",
    "H-TCP (Leith and Shorten 2004): after delta_L without loss the increase grows with the "
    "time since the last loss, alpha = 1 + 10 (d - delta_L) + ((d - delta_L) / 2)^2; adaptive "
    "backoff beta = RTTmin / RTTmax within [beta_min, beta_max].",
    (Field("delta_l", Duration(example="1s"), "time after a loss during which it increases as standard TCP", "1s", "Leith and Shorten 2004; Linux"), "delta_l_ps"),
    (_fraction("beta_min", 0.5, "smallest backoff factor (window kept after a loss)", "Leith and Shorten 2004; Linux BETA_MIN"), "beta_min"),
    (_fraction("beta_max", 0.8, "largest backoff factor", "Leith and Shorten 2004; Linux BETA_MAX"), "beta_max"),
    (Field("adaptive_backoff", Boolean(), "beta = RTTmin / RTTmax, reset to beta_min when throughput changes by more than 20%", True, "Leith and Shorten 2004; Linux use_bandwidth_switch"), "adaptive_backoff"),
    (Field("rtt_scaling", Boolean(), "scale the increase by RTTmin / 100 ms", False, "draft-leith-tcp-htcp-06 (optional), FreeBSD; Linux turns it on"), "rtt_scaling"),
)

_BIC = _simple_algorithm(
    "bic",
    "BIC-TCP (Xu, Harfoush and Rhee 2004), as Linux tcp_bic.c: binary search toward the window "
    "of the last loss, at most max_increment segments per RTT.",
    (Field("max_increment", Integer(minimum=1, example=16), "largest increase per RTT, segments (S_max)", 16, "Linux max_increment"), "max_increment"),
    (Field("low_window", Integer(minimum=1, example=14), "up to this window (segments) it is standard TCP", 14, "Linux low_window"), "low_window"),
    (_fraction("beta", 0.7998046875, "window kept after a loss, as a fraction", "Linux beta 819/1024"), "beta"),
    (Field("smooth_part", Integer(minimum=1, example=20), "RTTs to cross the last max_increment segments below W_max", 20, "Linux smooth_part"), "smooth_part"),
    (Field("fast_convergence", Boolean(), "lower W_max further on a loss below the previous W_max", True, "Linux fast_convergence"), "fast_convergence"),
)

#: Linux's HyStart module parameters (tcp_cubic.c), for hystart = "linux"; the ACK delta in
#: picoseconds (hystart_ack_delta_us = 2000).
_HYSTART_LINUX_DEFAULTS = {
    "hystart_detect": {"linux": "both"},
    "hystart_low_window": {"linux": 16},
    "hystart_ack_delta": {"linux": 2 * 10**9},
}


def _finish_cubic(values: Dict[str, Any], path: str) -> None:
    _fill_by_variant(values, path, {"kernel_hz": {"linux": KERNEL_HZ}})
    _fill_by_choice(values, path, "hystart", _HYSTART_LINUX_DEFAULTS)
    # Linux's fixed-point limits on c and beta (variant "linux") are the core's to check
    # (cc/cubic.rs CubicConfig::validate); the loader asks it (document.py _check_in_core).


_CUBIC = _simple_algorithm(
    "cubic",
    "CUBIC (RFC 9438): W(t) = C (t - K)^3 + W_max with K = cbrt(W_max (1 - beta) / C), and a "
    "Reno-friendly region; Linux's default congestion control. Either form can leave slow "
    "start early with HyStart (as Linux) or HyStart++ (RFC 9406).",
    (
        _variant_field(
            ("rfc", "linux"),
            "which CUBIC: rfc (RFC 9438 in floating point: target from the smoothed RTT, "
            "alpha_cubic switching to 1 past the old W_max, a new epoch after idle) or linux "
            "(tcp_cubic.c in its fixed point: target from the minimum RTT, at least 5 % growth per "
            "RTT before the first loss, Reno emulation at 8/15 segment per RTT, the epoch shifted "
            "by idle time; c and beta rounded to Linux's bic_scale / 1024 x 10 and beta / 1024)",
            "RFC 9438; Linux: net/ipv4/tcp_cubic.c",
        ),
        "variant",
    ),
    (Field("c", Real(lower=0.0, example=0.4), "aggressiveness C, segments per second cubed", 0.4, "RFC 9438 section 5; Linux bic_scale 41"), "c"),
    (_fraction("beta", 0.7, "window kept after a loss, as a fraction (beta_cubic)", "RFC 9438 section 4.6; Linux beta 717/1024"), "beta"),
    (Field("fast_convergence", Boolean(), "lower W_max when a loss comes below the previous one", True, "RFC 9438 section 4.7; Linux fast_convergence"), "fast_convergence"),
    (Field("tcp_friendliness", Boolean(), "follow the Reno-friendly window when it is larger", True, "RFC 9438 section 4.3; Linux tcp_friendliness"), "tcp_friendliness"),
    (
        Field(
            "hystart",
            Choice(("off", "linux", "rfc9406")),
            "leave the first slow start before a loss: off (standard slow start), linux (HyStart "
            "as tcp_cubic.c runs it: a train of ACKs spanning half the minimum RTT, or a round's "
            "minimum RTT 1/8 above it, clamped to 4..16 ms, sets ssthresh = cwnd) or rfc9406 "
            "(HyStart++: a round's minimum RTT above the last's by clamp(1/8, 4..16 ms) starts "
            "Conservative Slow Start, a quarter as fast, for 5 rounds)",
            "off",
            "RFC 9438 section 4.10 (standard slow start); Linux runs hystart = 1; RFC 9406",
        ),
        "hystart",
    ),
    (
        Field(
            "hystart_detect",
            Choice(("both", "ack_train", "delay")),
            "HyStart's tests; only with hystart = \"linux\"",
            Derived(f'"{_HYSTART_LINUX_DEFAULTS["hystart_detect"]["linux"]}" with hystart = "linux"'),
            "Linux hystart_detect = 3",
        ),
        "hystart_detect",
    ),
    (
        Field(
            "hystart_low_window",
            Integer(minimum=1, example=_HYSTART_LINUX_DEFAULTS["hystart_low_window"]["linux"]),
            "HyStart runs from this window on, segments; only with hystart = \"linux\"",
            Derived(f'{_HYSTART_LINUX_DEFAULTS["hystart_low_window"]["linux"]} with hystart = "linux"'),
            "Linux hystart_low_window",
        ),
        "hystart_low_window",
    ),
    (
        Field(
            "hystart_ack_delta",
            Duration(example=format_duration(_HYSTART_LINUX_DEFAULTS["hystart_ack_delta"]["linux"])),
            "ACKs closer than this form a train; only with hystart = \"linux\"",
            Derived(f'{format_duration(_HYSTART_LINUX_DEFAULTS["hystart_ack_delta"]["linux"])} with hystart = "linux"'),
            "Linux hystart_ack_delta_us = 2000",
        ),
        "hystart_ack_delta_ps",
    ),
    (_kernel_hz_field('variant = "linux"'), "kernel_hz"),
    finish=lambda values, path: _finish_cubic(values, path),
)

_BBR = _simple_algorithm(
    "bbr",
    "BBR v1 (Cardwell et al. 2016; draft-cardwell-iccrg-bbr-congestion-control-00): paces at "
    "gain x the bottleneck bandwidth it measures and keeps cwnd_gain x its BDP in flight; "
    "STARTUP, DRAIN, PROBE_BW (gain cycle 1.25, 0.75, 1 x 6) and PROBE_RTT. Pair it with SACK "
    "(the preset does): without it, recovery starves the bandwidth estimate.",
    (
        _variant_field(
            ("draft", "linux"),
            "which BBR: draft (draft-00's RTprop update with Linux's constants) or linux (tcp_bbr.c: "
            "an ACK that may have been delayed, a lone runt acknowledged alone, does not refresh an "
            "expired RTprop; a timeout ends a round)",
            "draft-cardwell-iccrg-bbr-congestion-control-00; Linux: net/ipv4/tcp_bbr.c bbr_update_min_rtt, bbr_set_state",
        ),
        "variant",
    ),
    (Field("high_gain", Real(lower=1.0, example=2.885), "STARTUP pacing and cwnd gain (DRAIN paces at 1 / high_gain)", 2.885, "2 / ln 2 (draft-00 BBRHighGain; Linux 739/256)"), "high_gain"),
    (Field("cwnd_gain", Real(lower=0.0, example=2.0), "PROBE_BW cwnd = cwnd_gain x BtlBw x RTprop (+ 3 send quanta)", 2.0, "Linux bbr_cwnd_gain"), "cwnd_gain"),
    (Field("bw_window_rounds", Integer(minimum=1, example=10), "window of the bottleneck-bandwidth max filter, round trips", 10, "draft-00 BtlBwFilterLen; Linux bbr_bw_rtts"), "bw_window_rounds"),
    (Field("min_rtt_window", Duration(example="10s"), "window of the RTprop min filter; when it expires, PROBE_RTT", "10s", "draft-00 RTpropFilterLen; Linux bbr_min_rtt_win_sec"), "min_rtt_window_ps"),
    (Field("probe_rtt_duration", Duration(positive=False, example="200ms"), "how long PROBE_RTT holds cwnd at 4 segments (0: never probe)", "200ms", "draft-00 ProbeRTTDuration; Linux bbr_probe_rtt_mode_ms"), "probe_rtt_duration_ps"),
    (Field("extra_acked", Boolean(), "ACK aggregation (issue 26): once the pipe is full, cwnd's target also carries the most data acknowledged beyond what BtlBw expects over an ACK epoch (max over 10 round trips, at most 100 ms of BtlBw), for ACKs that arrive in bursts (GRO, stretch ACKs)", False, "off, as before it existed here; Linux 5.1+ always (tcp_bbr.c bbr_update_ack_aggregation, bbr_extra_acked_gain 1)"), "extra_acked"),
    (Field("lt_bw", Boolean(), "policer detection (issue 26): from the first loss on, the delivery rate is sampled over intervals of 4 to 16 round trips, each ended by a loss; two intervals in a row with losses >= 50/256 of what was delivered and rates within 1/8 (or 4 kbit/s) of each other mean a token-bucket policer, and BBR paces at their average with gain 1 for 48 round trips of PROBE_BW", False, "off, as before it existed here; Linux 4.9+ always (tcp_bbr.c bbr_lt_bw_sampling: bbr_lt_intvl_min_rtts 4, bbr_lt_loss_thresh 50, bbr_lt_bw_ratio 1/8, bbr_lt_bw_diff 4 kbit/s, bbr_lt_bw_max_rtts 48)"), "lt_bw"),
)

# The rest of mainline Linux's algorithms (issue 28), in a module of their own; it uses the
# helpers above, so it is imported here.

#: Congestion control algorithms by name.
CC_ALGORITHMS: Dict[str, Algorithm] = {
    "reno": Algorithm(table=_RENO, normalize=_normalize_reno),
    "vegas": _VEGAS,
    "westwood": _WESTWOOD,
    "westwood_plus": _WESTWOOD_PLUS,
    "fast": _FAST,
    "griddt": _GRIDDT,
    "nocc": _NOCC,
    "highspeed": _HIGHSPEED,
    "scalable": _SCALABLE,
    "htcp": _HTCP,
    "bic": _BIC,
    "cubic": _CUBIC,
    "bbr": _BBR,
    **{name: _simple_algorithm(name, doc, *params) for name, (doc, *params) in ECN_TABLES.items()},
    # A BPF struct_ops program of the user's: cc = { bpf = "algo.bpf.o" } (scenario/bpf.py).
    "bpf": Algorithm(table=BPF_TABLE, normalize=normalize_bpf),
    # A class of the user's in Python: cc = { python = "module:Class" } (scenario/python_cc.py).
    "python": Algorithm(table=PYTHON_TABLE, normalize=normalize_python),
    "bbr3": Algorithm(table=BBR3_TABLE, normalize=normalize_bbr3),
    **LINUX_ALGORITHMS,
}



def core_defaults() -> Dict[str, Dict[str, Any]]:
    """Every algorithm's parameters at their defaults, as the core reads them (a user's
    BPF program has none). These tables own the defaults: the core has none, and its tests,
    which build configs without Python, read this from ``fatpipe/schemas/cc-defaults.json``
    (tests/test_contract.py checks that the file is what this returns)."""
    return {
        name: algorithm.normalize(algorithm.table.parse({}, "cc"), "cc")
        for name, algorithm in CC_ALGORITHMS.items()
        if name not in ("bpf", "python")
    }

# ---- presets: the documents' "TCP versions" ----------------------------------------------
#
# The naming rule (README, docs/scenario.md, `fatpipe algorithms`): the name in ``cc`` chooses
# the congestion control; ``[flows.tcp] profile`` chooses the stack (``linux`` when unset:
# nothing else ever moves a flow to another stack), and the stack decides how a name
# recovers from loss. On the Linux stack every algorithm recovers with Linux's SACK recovery
# (RACK, PRR, undo); ``newreno`` is Reno without SACK (net.ipv4.tcp_sack = 0, where Linux
# recovers as RFC 6582 NewReno); so ``reno`` there is Linux's reno (tcp_reno_cong_avoid).
# The RFC stack (profiles rfc, bsd-4.3-reno, bsd-4.4, ns2) is where the classic recoveries live: there the
# four Reno versions of document 003 name their recovery (``tahoe``, ``reno``: RFC 5681's
# classic Reno, ``newreno``, ``sack``) and every other algorithm recovers with SACK.
# ``[flows.tcp] recovery`` names a recovery explicitly on either stack.

#: Recoveries each stack has (``[flows.tcp] recovery``).
STACK_RECOVERIES: Dict[str, Tuple[str, ...]] = {
    "linux": ("sack", "newreno"),
    "rfc": ("tahoe", "reno", "newreno", "sack"),
}


@dataclass(frozen=True)
class Preset:
    """A named TCP version: an algorithm with parameters and a loss recovery, as the
    documents compare them (document 003's eight versions; documents 001 and 004's tunings)."""

    algorithm: str
    #: The loss recovery on the RFC stack (profiles rfc, bsd-4.3-reno, bsd-4.4, ns2).
    recovery: str
    doc: str
    source: str
    #: Algorithm parameters, written as a user would write them in [flows.cc].
    params: Mapping[str, Any] = field(default_factory=dict)
    #: Defaults for [flows.tcp] keys the user leaves unset (already in base units).
    tcp: Mapping[str, Any] = field(default_factory=dict)
    #: The loss recovery on the Linux stack (profiles linux, linux-2.4): "sack" (Linux's own,
    #: with RACK, PRR and undo), "newreno" (Linux without SACK), or None: the version has no
    #: Linux form and runs on the RFC stack only.
    linux_recovery: Optional[str] = "sack"


PRESETS: Dict[str, Preset] = {
    "tahoe": Preset(
        "reno", "tahoe", "fast retransmit, then slow start from one segment", "Jacobson 1988; 4.3BSD Tahoe",
        linux_recovery=None,
    ),
    "reno": Preset(
        "reno", "reno", "Reno's congestion control; on the RFC stack RFC 5681's classic fast recovery, left on "
        "the first new ACK; on Linux the kernel's reno (tcp_reno_cong_avoid) with Linux's SACK recovery",
        "RFC 5681; Linux net/ipv4/tcp_cong.c",
    ),
    "newreno": Preset(
        "reno", "newreno", "fast recovery until all data outstanding at the loss is acknowledged, without SACK "
        "(on Linux: net.ipv4.tcp_sack = 0)", "RFC 6582", linux_recovery="newreno",
    ),
    "sack": Preset("reno", "sack", "standard TCP with selective acknowledgments", "RFC 2018, RFC 6675"),
    "vegas": Preset("vegas", "sack", "delay-based: keeps alpha..beta packets queued", "Brakmo and Peterson 1995"),
    "westwood": Preset("westwood", "sack", "bandwidth estimate sets ssthresh after a loss", "Mascolo et al. 2001"),
    "westwood_plus": Preset("westwood_plus", "sack", "Westwood with per-RTT samples", "Grieco and Mascolo 2004"),
    "fast": Preset("fast", "sack", "delay-based, alpha 200 / beta 212", "Jin, Wei and Low 2004; document 004"),
    "fast-500": Preset(
        "fast", "sack", "FAST tuned as in document 004's tests", "document 004 section 5", params={"alpha": 500, "beta": 512}
    ),
    "griddt": Preset("griddt", "sack", "MSS- and RTT-scaled AIMD", "document 004 section 4.3"),
    "griddt-doc004": Preset(
        "griddt",
        "sack",
        "GridDT as document 004 tested it, with Limited Slow Start",
        "document 004 section 5",
        params={"cwnd_decr": 8, "rtt_ref": "50ms"},
        tcp={"max_ssthresh": 8000},
    ),
    "nocc": Preset("nocc", "sack", "congestion control off: only the receiver window limits", "document 000"),
    "highspeed": Preset("highspeed", "sack", "HighSpeed TCP", "RFC 3649"),
    "scalable": Preset("scalable", "sack", "Scalable TCP, a = 0.01, b = 0.125", "Kelly 2003"),
    "scalable-doc001": Preset(
        "scalable", "sack", "Scalable TCP as document 001 ran it (a = 1/50)", "document 001", params={"a": 0.02}
    ),
    "htcp": Preset("htcp", "sack", "H-TCP", "Leith and Shorten 2004"),
    "bic": Preset("bic", "sack", "BIC-TCP", "Xu, Harfoush and Rhee 2004; Linux"),
    "cubic": Preset("cubic", "sack", "CUBIC, Linux's default", "RFC 9438"),
    "bbr": Preset("bbr", "sack", "BBR v1: model-based, paced", "Cardwell et al. 2016"),
    "bbr3": Preset("bbr3", "sack", "BBRv3: BBR with loss and ECN bounds", "Google's v3 tcp_bbr.c; draft-ietf-ccwg-bbr"),
    "hybla": Preset("hybla", "sack", "Hybla: grows as a 25 ms flow whatever the RTT", "Caini and Firrincieli 2004; Linux"),
    "illinois": Preset("illinois", "sack", "Illinois: AIMD with delay-set alpha, beta", "Liu, Basar and Srikant 2006; Linux"),
    "veno": Preset("veno", "sack", "Veno: 4/5 on random loss, 1/2 on congestion", "Fu and Liew 2003; Linux"),
    "yeah": Preset("yeah", "sack", "YeAH: Scalable or Reno by queue, precautionary decongestion", "Baiocchi et al. 2007; Linux"),
    "nv": Preset("nv", "sack", "NV: cuts the window toward the rate's before a loss", "Brakmo 2010; Linux"),
    "cdg": Preset("cdg", "sack", "CDG: probabilistic backoff on the delay gradient", "Hayes and Armitage 2011; Linux"),
    "dctcp": Preset("dctcp", "sack", "DCTCP: window cut in proportion to the ECN-marked fraction", "RFC 8257; Linux tcp_dctcp.c"),
    "prague": Preset("prague", "sack", "TCP Prague, the L4S congestion control (ECT(1), AccECN)", "draft-briscoe-iccrg-prague-congestion-control; L4S tcp_prague.c"),
    "lp": Preset("lp", "sack", "TCP-LP: low priority, yields on one-way delay", "Kuzmanovic and Knightly 2003; Linux tcp_lp.c"),
}

#: Document 003's Reno versions: on the RFC stack their names say the recovery, so a
#: [flows.cc] table with algorithm = "reno" there must say which (``[flows.tcp] recovery``).
RENO_VERSIONS = tuple(name for name, p in PRESETS.items() if p.algorithm == "reno")
#: The RFC-stack profiles, as users write them in messages (profiles.py defines them).
RFC_STACK_PROFILES_TEXT = '"rfc" (or "bsd-4.3-reno", "bsd-4.4", "ns2")'


def stack_recovery(
    stack: str, profile: str, cc: Mapping[str, Any], recovery: Optional[str], path: str, tcp_path: str,
    profile_given: bool,
) -> str:
    """The flow's loss recovery on ``stack`` (see the naming rule above): ``recovery`` if the
    flow set it, else what its ``cc`` means on that stack. A recovery the stack does not have,
    and a Reno table on the RFC stack without a recovery, are refused in one line saying what
    to write instead."""
    named = f'profile = "{profile}"' + ("" if profile_given else " (the default)")
    classic = {"tahoe": "Tahoe", "reno": "classic Reno"}
    if recovery is not None:
        if recovery not in STACK_RECOVERIES[stack]:
            key = _join(tcp_path, "recovery")
            raise ScenarioError(
                f'{key}: "{recovery}" is not allowed with {named}: {classic.get(recovery, recovery)} recovery runs '
                f"on the RFC stack: set profile = {RFC_STACK_PROFILES_TEXT} beside it; the Linux stack has "
                '"sack" and "newreno" (without SACK)',
                key,
            )
        return recovery
    preset = PRESETS[cc["preset"]]
    if stack == "linux":
        if preset.linux_recovery is None:
            key = _join(path, "cc")
            raise ScenarioError(
                f'{key}: "{cc["preset"]}" is not allowed with {named}: {classic.get(preset.recovery, preset.recovery)} '
                f"recovery runs on the RFC stack: set [flows.tcp] profile = {RFC_STACK_PROFILES_TEXT}; on Linux "
                'write "reno" (with SACK) or "newreno" (without SACK)',
                key,
            )
        return preset.linux_recovery
    if cc.get("table") and cc["algorithm"] == "reno":
        key = _join(tcp_path, "recovery")
        names = ", ".join(json.dumps(n) for n in RENO_VERSIONS)
        raise ScenarioError(
            f'{key}: missing; required with [flows.cc] algorithm = "reno" and {named}: the RFC stack has '
            f"the four Reno recoveries of document 003; set recovery = one of {names} (or write cc = one of them)",
            key,
        )
    return preset.recovery


class CongestionControlChoice(Tagged):
    """``cc``: a preset name (``cc = "newreno"``, ``cc = "griddt-doc004"``) or a table with
    ``algorithm = ...`` and parameters. The parsed value carries the preset's name and the
    keys the flow wrote (``given``: a stack profile sets the others' forms)."""

    def parse(self, value: Any, path: str) -> Dict[str, Any]:
        if isinstance(value, str):
            if value not in PRESETS:
                names = ", ".join(json.dumps(n) for n in PRESETS)
                raise _fail(path, value, f"expected a preset, one of: {names}; or a [flows.cc] table")
            preset = PRESETS[value]
            parsed = super().parse({self.tag: preset.algorithm, **preset.params}, path)
            return {**parsed, "preset": value, "given": frozenset(preset.params), "table": False}
        if isinstance(value, Mapping) and "bpf" in value and self.tag not in value:
            value = {self.tag: "bpf", **value}  # cc = { bpf = "algo.bpf.o" }
        if isinstance(value, Mapping) and "python" in value:
            value = python_value(value, self.tag)  # cc = { python = "module:Class", ...parameters }
        parsed = super().parse(value, path)
        given = frozenset(value) if isinstance(value, Mapping) else frozenset()
        # Every algorithm has a preset of its name: the table takes its recovery from it. A BPF
        # program recovers as every algorithm but Reno's versions does: with SACK ("sack"'s).
        preset = "sack" if parsed[self.tag] in ("bpf", "python") else parsed[self.tag]
        return {**parsed, "preset": preset, "given": given, "table": True}


def cc_name(flow: Mapping[str, Any]) -> str:
    """What a normalized TCP flow runs, by the name a scenario would write for it (the rule
    above, read backwards): a Reno flow by its version ("newreno", and on the RFC stack
    "tahoe", "reno" or "sack"; Linux's reno with SACK is "reno"), any other by its
    algorithm; "udp" for a UDP flow. Reports and tables show this, not the core's algorithm
    alone (which is "reno" for every Reno version)."""
    if flow.get("tcp") is None:
        return "udp"
    algorithm, tcp = flow["cc"]["algorithm"], flow["tcp"]
    if algorithm != "reno":
        return algorithm
    if tcp["stack"] == "linux":
        return "newreno" if tcp["recovery"] == "newreno" else "reno"
    return tcp["recovery"]


#: The naming rule in a paragraph (the reference, `fatpipe algorithms`).
NAMING_RULE = (
    "The name in `cc` chooses the congestion control; `[flows.tcp] profile` chooses the stack "
    '(`"linux"` when unset: nothing moves a flow to another stack), and the stack decides how the '
    "flow recovers from loss. On the Linux stack (`linux`, `linux-2.4`) every algorithm recovers with "
    "Linux's SACK recovery, so `reno` is Linux's reno (tcp_reno_cong_avoid) and `sack` the same; "
    "`newreno` is Reno without SACK (net.ipv4.tcp_sack = 0). The classic recoveries live on the RFC "
    "stack (`rfc`, `bsd-4.3-reno`, `bsd-4.4`, `ns2`): there document 003's four Reno versions name theirs (`tahoe`, "
    "`reno` with RFC 5681's classic fast recovery, `newreno`, `sack`) and every other algorithm "
    "recovers with SACK. `[flows.tcp] recovery` names a recovery explicitly; a request a stack cannot "
    "run is refused, saying what to write instead."
)


def format_presets() -> str:
    """The presets as a Markdown table (for the reference and `fatpipe algorithms`)."""
    rows = [
        "| preset | algorithm | recovery on the RFC stack (rfc, bsd-4.3-reno, bsd-4.4, ns2) | on the Linux stack (linux, linux-2.4) "
        "| settings | what it is | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in PRESETS.items():
        settings = ", ".join(f"{k} = {_toml_literal(v)}" for k, v in {**p.params, **p.tcp}.items())
        linux = p.linux_recovery or "not allowed: RFC stack only"
        # check_ecn_needs refuses these off the Linux stack: the table says so, not "sack".
        rfc = "not allowed: Linux stack only" if p.algorithm in ECN_NEEDS else p.recovery
        rows.append(f"| `{name}` | {p.algorithm} | {rfc} | {linux} | {settings or '-'} | {p.doc} | {p.source} |")
    return NAMING_RULE + "\n\n" + "\n".join(rows) + "\n"
