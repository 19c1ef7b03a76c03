"""BBRv3's parameters (``cc = "bbr3"``), each with its default and where it comes from:
Google's v3 ``net/ipv4/tcp_bbr.c`` (github.com/google/bbr, branch v3) and
draft-ietf-ccwg-bbr. The core's ``cc/bbr3/`` reads them; its fixed gains (STARTUP 2.77 and
2, DRAIN 1/2.885, PROBE_BW 1.25 / 0.91 / 1) are constants there, with their sources."""

from __future__ import annotations

from typing import Any, Dict

from .kinds import Boolean, Duration, Integer, Real
from .schema import Field, Table


def _fraction(key: str, default: float, meaning: str, source: str, upper_open: bool = True) -> Field:
    return Field(key, Real(lower=0.0, upper=1.0, lower_open=False, upper_open=upper_open, example=default),
                 meaning, default, source)


#: (field, the core's key).
_PARAMS = (
    (_fraction("loss_thresh", 0.02, "loss rate over a flight above which bandwidth probing went too far: "
               "inflight_hi is set to that flight (and STARTUP ends on it)", "v3 bbr_loss_thresh = 2 %; "
               "draft-ietf-ccwg-bbr BBRLossThresh"), "loss_thresh"),
    (Field("beta", Real(lower=0.0, upper=1.0, upper_open=False, example=0.7),
           "multiplicative decrease: bw_lo and inflight_lo fall to beta x their value per round trip with "
           "loss (never below what that round delivered); inflight_hi never below beta x the BDP", 0.7,
           "draft-ietf-ccwg-bbr BBRBeta = 0.7; v3 bbr_beta = 30 % cut"), "beta"),
    (Field("ecn", Boolean(), "use ECN marks as a congestion signal: only where the bottleneck marks at a "
           "shallow threshold and the receiver echoes each mark (DCTCP-style feedback); with RFC 3168 "
           "feedback every ACK until CWR echoes ECE and the marked fraction is overstated. Needs "
           "[flows.tcp] ecn = true to see any mark", False,
           "v3 bbr_can_use_ecn: ECN negotiated and the route's ecn_low feature, off unless set"), "ecn"),
    (_fraction("ecn_thresh", 0.5, "CE-marked fraction of the data delivered above which probing went too far "
               "(two such rounds end STARTUP)", "v3 bbr_ecn_thresh = 1/2"), "ecn_thresh"),
    (_fraction("ecn_factor", 1 / 3, "per round with marks, inflight_lo falls to 1 - ecn_factor x alpha of itself",
               "v3 bbr_ecn_factor = 1/3"), "ecn_factor"),
    (_fraction("ecn_alpha_gain", 1 / 16, "gain of alpha, the EWMA of the CE-marked fraction, updated once per "
               "round trip (alpha starts at 1)", "v3 bbr_ecn_alpha_gain = 1/16, bbr_ecn_alpha_init = 1"),
     "ecn_alpha_gain"),
    (Field("ecn_max_rtt", Duration(positive=False, example="5ms"), "ECN is used only on paths whose min_rtt is at "
           "most this (0: any)", "5ms", "v3 bbr_ecn_max_rtt_us = 5000"), "ecn_max_rtt_ps"),
    (_fraction("inflight_headroom", 0.15, "fraction of inflight_hi left unused while cruising after a probe found "
               "its limit, for other flows", "v3 bbr_inflight_headroom = 15 %; draft BBRHeadroom"),
     "inflight_headroom"),
    (Field("probe_rtt_interval", Duration(example="5s"), "PROBE_RTT when no lower RTT was seen for this long",
           "5s", "v3 bbr_probe_rtt_win_ms = 5000; draft ProbeRTTInterval"), "probe_rtt_interval_ps"),
    (Field("probe_rtt_duration", Duration(positive=False, example="200ms"), "how long PROBE_RTT holds its window "
           "(and at least a round trip); 0: never probe", "200ms",
           "v3 bbr_probe_rtt_mode_ms; draft ProbeRTTDuration"), "probe_rtt_duration_ps"),
    (_fraction("probe_rtt_cwnd_gain", 0.5, "PROBE_RTT's window as a fraction of the BDP (at least 4 segments)",
               "v3 bbr_probe_rtt_cwnd_gain = 1/2; draft BBRProbeRTTCwndGain", upper_open=False),
     "probe_rtt_cwnd_gain"),
    (Field("min_rtt_window", Duration(example="10s"), "window of the min_rtt filter (at least probe_rtt_interval)",
           "10s", "v3 bbr_min_rtt_win_sec; draft MinRTTFilterLen"), "min_rtt_window_ps"),
    (Field("bw_probe_base", Duration(positive=False, example="2s"), "wall-clock wait from the start of a cycle "
           "(PROBE_DOWN) to the next bandwidth probe, before the random part", "2s",
           "v3 bbr_bw_probe_base_us"), "bw_probe_base_ps"),
    (Field("bw_probe_rand", Duration(positive=False, example="1s"), "the wait's random part: uniform below this",
           "1s", "v3 bbr_bw_probe_rand_us"), "bw_probe_rand_ps"),
    (Field("bw_probe_max_rounds", Integer(minimum=1, maximum=255, example=63), "probe at least every "
           "min(this, BDP in segments) round trips, as often as Reno would (plus 0 or 1 at random)", 63,
           "v3 bbr_bw_probe_max_rounds (Reno's epoch at 25 Mb/s x 30 ms)"), "bw_probe_max_rounds"),
    (Field("full_loss_count", Integer(minimum=0, maximum=15, example=6), "STARTUP ends after this many "
           "loss-marking ACKs in a recovery round whose loss rate exceeds loss_thresh (0: never on loss)", 6,
           "v3 bbr_full_loss_cnt; draft BBRStartupFullLossCnt"), "full_loss_count"),
    (Field("full_ecn_rounds", Integer(minimum=0, maximum=3, example=2), "STARTUP ends after this many rounds "
           "in a row with a CE-marked fraction at least ecn_thresh (0: never on ECN)", 2,
           "v3 bbr_full_ecn_cnt"), "full_ecn_rounds"),
)

BBR3_TABLE = Table(
    fields=tuple(f for f, _ in _PARAMS),
    doc="BBRv3 (Google's v3 tcp_bbr.c; draft-ietf-ccwg-bbr): BBR's model with a loss and ECN response. "
    "PROBE_BW cycles DOWN (0.91), CRUISE (1), REFILL (1) and UP (1.25) every 2-3 s (or Reno's "
    "epoch), bounding the flight by inflight_hi (what probing found before 2 % loss or 50 % "
    "marks) and by bw_lo / inflight_lo (cut by beta per round with loss); STARTUP at 2.77 "
    "also ends on loss or ECN; PROBE_RTT every 5 s at half the BDP. Pair it with SACK (the "
    "preset does).",
)
_CORE_KEYS = {f.key: key for f, key in _PARAMS}


def normalize_bbr3(values: Dict[str, Any], path: str) -> Dict[str, Any]:
    """The core's ``Bbr3Config`` from the parsed table (durations already in picoseconds)."""
    return {"algorithm": "bbr3", **{_CORE_KEYS[k]: v for k, v in values.items()}}
