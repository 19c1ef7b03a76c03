"""The ECN-driven congestion controls of issue 28: DCTCP (RFC 8257) and TCP Prague (L4S),
their parameters with sources, and what a flow needs to run them (ECN, Accurate ECN, the
Linux stack). ``congestion.py`` builds them into ``CC_ALGORITHMS`` from :data:`ECN_TABLES`
(this module imports nothing of it); ``flows.py`` calls :func:`check_ecn_needs` once the
flow's stack and ``[flows.tcp]`` are known."""

from __future__ import annotations

from typing import Any, Mapping

from .kinds import Choice, Duration, Integer
from .schema import Field, ScenarioError, _join

_DCTCP = (
    "DCTCP (Alizadeh et al. 2010; RFC 8257), as Linux tcp_dctcp.c: alpha, the EWMA (gain g) of "
    "the fraction of segments CE-marked per window, sets the window cut on an ECN echo, cwnd x "
    "(1 - alpha / 2), once per window; a loss halves it; Reno's growth. The receiver echoes "
    "every change of the CE state at once (RFC 8257 section 3.2). Needs [flows.tcp] ecn = true "
    "and the Linux stack; a queue must mark (RED with ecn = true, or drop-tail's "
    "mark_threshold for the step marking of the DCTCP paper).",
    (
        Field(
            "shift_g",
            Integer(minimum=0, maximum=10, example=4),
            "the estimation gain g = 2^-shift_g of alpha's moving average",
            4,
            "RFC 8257 section 3.3 (g = 1/16); Linux tcp_dctcp.c dctcp_shift_g",
        ),
        "shift_g",
    ),
    (
        Field(
            "alpha_on_init",
            Integer(minimum=0, maximum=1024, example=1024),
            "alpha before the first window is measured, in 1/1024 (1024: as if every segment "
            "were marked, so the first echo halves the window)",
            1024,
            "Linux tcp_dctcp.c dctcp_alpha_on_init = DCTCP_MAX_ALPHA (RFC 8257 section 3.3 "
            "leaves the initial value open)",
        ),
        "alpha_on_init",
    ),
)

_PRAGUE = (
    "TCP Prague (draft-briscoe-iccrg-prague-congestion-control; the L4S team's Linux "
    "tcp_prague.c v0.6), the L4S scalable congestion control (RFC 9330): ECT(1) segments, "
    "Accurate ECN feedback, a DCTCP-like alpha (g = 1/16, updated once per round trip after a "
    "first mark) whose cut, alpha x cwnd / 2 once per window, is spread over the following ACKs "
    "(one segment per ACK at most); marked segments do not grow the window; a loss halves it as "
    "Reno; paced at cwnd x MTU / SRTT. Needs [flows.tcp] ecn = true, accecn = true and the Linux "
    "stack.",
    (
        Field(
            "rtt_scaling",
            Choice(("rate", "none")),
            "RTT independence: rate (RTT_CONTROL_RATE: past rtt_transition round trips after slow "
            "start, a flow whose RTT is below rtt_target grows (RTT / rtt_target)^2 as fast, so it "
            "gets the rate of a flow at the target, and updates alpha and reduces at most once per "
            "rtt_target) or none (one segment per round trip, as DCTCP)",
            "rate",
            "tcp_prague.c prague_rtt_scaling = RTT_CONTROL_RATE",
        ),
        "rtt_scaling",
    ),
    (
        Field(
            "rtt_target",
            Duration(example="25ms"),
            "the RTT a flow with rtt_scaling = \"rate\" behaves as if it had when its own is shorter",
            "25ms",
            "tcp_prague.c prague_rtt_target = 25 ms",
        ),
        "rtt_target_ps",
    ),
    (
        Field(
            "rtt_transition",
            Integer(minimum=0, example=500),
            "round trips after slow start before RTT independence starts",
            500,
            "tcp_prague.c prague_rtt_transition = DEFAULT_RTT_TRANSITION (500)",
        ),
        "rtt_transition_rounds",
    ),
)

#: What each ECN algorithm needs of its flow: (tcp key, why).
ECN_NEEDS = {
    "dctcp": (("ecn", "DCTCP reacts to ECN marks (RFC 8257; Linux TCP_CONG_NEEDS_ECN)"),),
    "prague": (
        ("ecn", "Prague is an L4S congestion control: it reacts to ECN marks (Linux TCP_CONG_NEEDS_ECN)"),
        ("accecn", "Prague needs Accurate ECN feedback to count the marks (RFC 9768; Linux TCP_CONG_NEEDS_ACCECN)"),
    ),
}


def check_ecn_needs(algorithm: str, tcp: Mapping[str, Any], stack: str, path: str, tcp_path: str) -> None:
    """Refuses, in one line, a DCTCP or Prague flow without what it needs, and Accurate ECN
    without ECN or off the Linux stack."""
    if tcp["accecn"] and not tcp["ecn"]:
        key = _join(tcp_path, "accecn")
        raise ScenarioError(f"{key}: true needs ecn = true beside it: Accurate ECN is a form of ECN feedback (RFC 9768)", key)
    if tcp["accecn"] and stack != "linux":
        key = _join(tcp_path, "accecn")
        raise ScenarioError(f'{key}: true runs on the Linux stack only (profile "linux" or "linux-2.4")', key)
    for key, why in ECN_NEEDS.get(algorithm, ()):
        if not tcp[key]:
            at = _join(tcp_path, key)
            raise ScenarioError(f'{at}: false is not allowed with cc "{algorithm}": {why}; set {key} = true', at)
    if algorithm in ECN_NEEDS and stack != "linux":
        at = _join(path, "cc")
        raise ScenarioError(
            f'{at}: "{algorithm}" runs on the Linux stack only (profile "linux" or "linux-2.4"), after Linux tcp_{algorithm}.c',
            at,
        )


#: name -> (doc, (Field, core key)...), for congestion._simple_algorithm.
ECN_TABLES = {"dctcp": _DCTCP, "prague": _PRAGUE}
