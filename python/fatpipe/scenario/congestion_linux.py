"""The congestion controls of mainline Linux that the documents do not name (issue 28): each
after its net/ipv4/tcp_<name>.c and its paper, every default from the Linux file (a module
parameter where Linux has one, else the #define or constant named) and the paper.

congestion.py imports this module once its helpers exist and adds these entries to
CC_ALGORITHMS."""

from __future__ import annotations

from typing import Any, Dict

from .bpf import KERNEL_HZ, KERNEL_HZ_SOURCE
from .algorithm import Algorithm, _packets, _simple_algorithm
from .kinds import Boolean, Duration, Integer, Real
from .schema import Field, ScenarioError, _join


def _count(key: str, default: int, meaning: str, source: str, minimum: int = 0, maximum: int = 2**32 - 1) -> Field:
    return Field(key, Integer(minimum=minimum, maximum=maximum, example=default), meaning, default, source)


_HYBLA = _simple_algorithm(
    "hybla",
    "TCP Hybla (Caini and Firrincieli 2004), as Linux tcp_hybla.c: with rho = RTT / rtt0 (at "
    "least 1), each ACK adds 2^rho - 1 segments in slow start and rho^2 / cwnd in congestion "
    "avoidance, so a long-RTT flow's window grows in time as a flow with RTT rtt0 would; cwnd "
    "starts at rho after the handshake; Reno outside the Open state and on a loss.",
    (
        Field(
            "rtt0",
            Duration(example="25ms"),
            "the reference RTT: a flow with this RTT or less grows as Reno",
            "25ms",
            "Linux tcp_hybla.c module parameter rtt0 = 25 (ms); Caini and Firrincieli 2004 (RTT0 = 25 ms)",
        ),
        "rtt0_ps",
    ),
)

_ILLINOIS = _simple_algorithm(
    "illinois",
    "TCP-Illinois (Liu, Basar and Srikant 2006), as Linux tcp_illinois.c: AIMD whose increase "
    "alpha (10 down to 0.3 segments per RTT on a convex curve) and decrease beta (1/8 up to 1/2, "
    "linear) are set once per RTT from the average queueing delay against the largest seen.",
    (
        _count(
            "win_thresh",
            15,
            "below this window, segments, alpha and beta are Reno's (1 and 1/2)",
            "Linux tcp_illinois.c module parameter win_thresh = 15",
            minimum=1,
        ),
        "win_thresh",
    ),
    (
        _count(
            "theta",
            5,
            "RTTs in a row with low delay before alpha returns to its maximum after delay rose",
            "Linux tcp_illinois.c module parameter theta = 5",
            minimum=1,
            maximum=255,
        ),
        "theta",
    ),
)

_VENO = _simple_algorithm(
    "veno",
    "TCP Veno (Fu and Liew 2003), as Linux tcp_veno.c: Vegas's backlog N = cwnd (RTT - "
    "baseRTT) / RTT tells congestion from random loss: below beta a loss keeps 4/5 of the "
    "window and growth is Reno's; at or above beta a loss halves it and growth is one segment "
    "every other RTT.",
    (
        _packets(
            "beta",
            3.0,
            "backlog N of the flow's packets queued at or above which the path counts as congested",
            "Fu and Liew 2003 (beta = 3); Linux tcp_veno.c beta = 3 << V_PARAM_SHIFT (a constant, "
            "kept in halves of a packet)",
        ),
        "beta",
    ),
)

_YEAH_SOURCE = "Linux tcp_yeah.c {} (a #define; Baiocchi, Castellani and Vacirca 2007)"

_YEAH = _simple_algorithm(
    "yeah",
    "YeAH-TCP (Baiocchi, Castellani and Vacirca 2007), as Linux tcp_yeah.c: Scalable growth "
    "(1 % per RTT) while its own queue Q <= alpha packets and the queueing delay <= base RTT / "
    "phy, Reno's growth otherwise, draining its queue at once when Q > alpha (precautionary "
    "decongestion); a loss takes off Q (cwnd/8 to cwnd/2), or half after rho slow RTTs.",
    (_count("alpha", 80, "largest queue of its own, packets, kept in fast mode", _YEAH_SOURCE.format("TCP_YEAH_ALPHA = 80")), "alpha"),
    (_count("gamma", 1, "precautionary decongestion removes Q / gamma packets", _YEAH_SOURCE.format("TCP_YEAH_GAMMA = 1"), minimum=1), "gamma"),
    (_count("delta", 3, "a loss in fast mode removes at least cwnd / 2^delta", _YEAH_SOURCE.format("TCP_YEAH_DELTA = 3"), maximum=31), "delta"),
    (_count("epsilon", 1, "decongestion removes at most cwnd / 2^epsilon", _YEAH_SOURCE.format("TCP_YEAH_EPSILON = 1"), maximum=31), "epsilon"),
    (_count("phy", 8, "slow (Reno) mode once the queueing delay exceeds base RTT / phy", _YEAH_SOURCE.format("TCP_YEAH_PHY = 8"), minimum=1), "phy"),
    (_count("rho", 16, "slow RTTs in a row after which a loss halves the window as Reno", _YEAH_SOURCE.format("TCP_YEAH_RHO = 16")), "rho"),
    (_count("zeta", 50, "fast RTTs after which the estimate of a competing Reno window resets", _YEAH_SOURCE.format("TCP_YEAH_ZETA = 50")), "zeta"),
)

def _finish_nv(values: Dict[str, Any], path: str) -> None:
    if values["pad_buffer"] > values["pad"]:
        key = _join(path, "pad_buffer")
        raise ScenarioError(f"{key}: {values['pad_buffer']} is not allowed: must be at most pad ({values['pad']})", key)


def _finish_cdg(values: Dict[str, Any], path: str) -> None:
    window = values["window"]
    if window & (window - 1):
        key = _join(path, "window")
        raise ScenarioError(f"{key}: {window} is not allowed: a power of two from 1 to 256 (tcp_cdg.c)", key)


_NV = _simple_algorithm(
    "nv",
    "TCP-NV (Brakmo 2010), as Linux tcp_nv.c: Vegas for data centres. Once per RTT the largest "
    "rate seen times the smallest RTT gives the window the rate needs; above it plus pad packets, "
    "ssthresh = that window and cwnd loses 30 % of the excess before any loss; a loss keeps 80 %.",
    (_count("pad", 10, "packets of queue allowed above the window the measured rate needs", "Linux tcp_nv.c module parameter nv_pad = 10"), "pad"),
    (_count("pad_buffer", 2, "no growth within this many packets of pad", "Linux tcp_nv.c nv_pad_buffer = 2"), "pad_buffer"),
    (Field("reset_period", Duration(example="5s"), "how often the minimum RTT is renewed (each period drawn on 3/4 to 5/4 of it)", "5s", "Linux tcp_nv.c module parameter nv_reset_period = 5 (s)"), "reset_period_ps"),
    (_count("min_cwnd", 2, "NV never lowers cwnd below this without a loss, segments", "Linux tcp_nv.c module parameter nv_min_cwnd = 2", minimum=1), "min_cwnd"),
    (Field("kernel_hz", Integer(minimum=1, maximum=100_000, example=KERNEL_HZ), "jiffies per second of the min-RTT reset timer", KERNEL_HZ, KERNEL_HZ_SOURCE), "kernel_hz"),
    finish=_finish_nv,
)

_CDG = _simple_algorithm(
    "cdg",
    "CAIA Delay-Gradient (Hayes and Armitage 2011), as Linux tcp_cdg.c: once per RTT the change "
    "of the RTT's minimum and maximum, summed over a window of rounds, backs the window off to "
    "backoff_beta with probability 1 - exp(-gradient x backoff_factor / 10^6) (a reduction without "
    "loss, drawn from the flow's seeded generator); Reno's growth otherwise; a shadow window "
    "keeps loss-based competitors from taking advantage.",
    (_count("window", 8, "rounds in the moving gradient window, a power of two up to 256", "Linux tcp_cdg.c module parameter window = 8", minimum=1, maximum=256), "window"),
    (Field("backoff_beta", Real(lower=0.0, upper=1.0, upper_open=False, example=0.7071), "window kept on a delay backoff", 0.7071, "Linux tcp_cdg.c module parameter backoff_beta = 0.7071 x 1024 (sqrt 0.5)"), "backoff_beta"),
    (_count("backoff_factor", 42, "backoff probability scale per microsecond of summed gradient, x 10^-6 (the paper's G = 1000 / (factor x window))", "Linux tcp_cdg.c module parameter backoff_factor = 42"), "backoff_factor"),
    (_count("hystart_detect", 3, "HyStart in slow start: 0 off, 1 ACK trains, 2 delay, 3 both", "Linux tcp_cdg.c module parameter hystart_detect = 3", maximum=3), "hystart_detect"),
    (_count("use_ineff", 5, "delay backoffs in a row without effect after which they pause (0: never)", "Linux tcp_cdg.c module parameter use_ineff = 5"), "use_ineff"),
    (Field("use_shadow", Boolean(), "a loss keeps half the shadow window (the window without delay backoffs) if larger", True, "Linux tcp_cdg.c module parameter use_shadow = true"), "use_shadow"),
    (Field("use_tolerance", Boolean(), "a loss while the gradients say the queue is not full keeps the window", False, "Linux tcp_cdg.c module parameter use_tolerance = false"), "use_tolerance"),
    finish=_finish_cdg,
)

_LP = _simple_algorithm(
    "lp",
    "TCP-LP (Kuzmanovic and Knightly 2003), as Linux tcp_lp.c: a low-priority flow that yields "
    "to others on one-way delay (from the timestamp option, so it needs timestamps): a smoothed "
    "delay at or above min + 15 % of (max - min) halves the window, or cuts it to one segment "
    "within 3 RTTs of the last such indication, and restarts min and max around the smoothed "
    "delay; no growth within those 3 RTTs; Reno otherwise.",
    (_count("threshold_percent", 15, "the early congestion threshold: percent of (max - min) one-way delay above the minimum", "Kuzmanovic and Knightly 2003 (delta = 0.15); Linux tcp_lp.c 15 * (owd_max - owd_min) / 100, a constant", maximum=100), "threshold_percent"),
    (_count("inference_rtts", 3, "the inference time after an indication, RTTs (of the sender's clock: now - TSecr)", "Kuzmanovic and Knightly 2003 (3 RTTs); Linux tcp_lp.c lp->inference = 3 * delta, a constant"), "inference_rtts"),
)

#: The entries congestion.py adds to CC_ALGORITHMS, in issue 28's order of work.
LINUX_ALGORITHMS: Dict[str, Algorithm] = {
    "hybla": _HYBLA,
    "illinois": _ILLINOIS,
    "veno": _VENO,
    "yeah": _YEAH,
    "nv": _NV,
    "cdg": _CDG,
    "lp": _LP,
}
