"""The measures the source documents define, computed from a run's counters and series.

Every function is defined in ``docs/metrics.md`` with its source. Functions take plain
numbers or a run's tables; none of them runs a simulation. The run's data
(:class:`~fatpipe.rundata.RunData`) computes its summary with these functions, so this
module never imports it: :func:`recovery_events` takes anything with a ``flow_series``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Protocol, Sequence

import numpy as np

from .units import PS_PER_S

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "jain_index",
    "throughput_ratio",
    "fairness_deviation",
    "utilization_estimate",
    "flow_metrics",
    "transfer_metrics",
    "fairness",
    "recovery_events",
    "regain_time",
    "regain",
    "REGAIN_SHARE",
    "CLIMB_RTTS",
]


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (Jain, Chiu and Hawe 1984): (sum x)^2 / (n * sum x^2).

    1 when every value is equal, 1/n when one takes everything. NaN for no values or all
    zeros (nothing to share)."""
    x = np.asarray(list(values), dtype=np.float64)
    if x.size and (not np.all(np.isfinite(x)) or np.any(x < 0)):
        raise ValueError(f"jain_index: values must be finite and >= 0, got {x.tolist()!r}")
    if x.size == 0:
        return math.nan
    square_sum = float(np.sum(x * x))
    if square_sum == 0:
        return math.nan
    return float(np.sum(x)) ** 2 / (x.size * square_sum)


def throughput_ratio(a: float, b: float) -> float:
    """a / b (document 003's throughput ratio of two flows); inf when b is 0 and a is not,
    NaN when both are 0."""
    if b == 0:
        return math.nan if a == 0 else math.inf
    return a / b


def fairness_deviation(values: Sequence[float]) -> float:
    """Document 002's deviation: (fastest - slowest) / fastest, a fraction (the document
    plots it in %). 0 when all are equal; NaN for no values or a fastest of 0."""
    x = [float(v) for v in values]
    if not x or max(x) == 0:
        return math.nan
    return (max(x) - min(x)) / max(x)


def utilization_estimate(rates_bps: Sequence[float], link_rate_bps: float) -> float:
    """Document 002's link utilization estimate (section 5.6): the number of flows times the
    slowest flow's rate, over the link rate; a lower bound on the real utilization."""
    x = [float(v) for v in rates_bps]
    if not x or link_rate_bps <= 0:
        return math.nan
    return len(x) * min(x) / link_rate_bps


def interval_rates(times_s: Any, delivered_bytes: Any, every_s: float) -> List[float]:
    """Payload delivered in each whole interval of ``every_s`` from the run's start, in bits
    per second (iperf -i), from a flow's cumulative ``delivered_bytes`` sampled at ``times_s``
    (linearly interpolated between samples)."""
    times = np.asarray(times_s, dtype=np.float64)
    delivered = np.asarray(delivered_bytes, dtype=np.float64)
    rates: List[float] = []
    k = 0
    while len(times) and (k + 1) * every_s <= times[-1] + 1e-9:
        start, end = np.interp([k * every_s, (k + 1) * every_s], times, delivered)
        rates.append(float(end - start) * 8 / every_s)
        k += 1
    return rates


def written_interval_rates(times_s: Any, delivered_bytes: Any, every_s: float, written_total: float,
                           delivered_total: float) -> List[float]:
    """What iperf's client reports per interval: the bytes the application wrote, in bits per
    second. A bulk writer fills its send buffer at the start and then writes as fast as ACKs
    free it, so its count runs ahead of delivery by the buffer's backlog: written(t) =
    min(total written, delivered(t) + backlog), the backlog read from the run's own end
    (bytes written - bytes delivered; the sender's buffer is still full then). The ACK's
    one-way delay between delivery and the buffer freeing is not modelled (60 ms of a 5 s
    interval on document 004's path)."""
    times = np.asarray(times_s, dtype=np.float64)
    delivered = np.asarray(delivered_bytes, dtype=np.float64)
    backlog = max(0.0, float(written_total) - float(delivered_total))
    rates: List[float] = []
    k = 0
    previous = 0.0
    while len(times) and (k + 1) * every_s <= times[-1] + 1e-9:
        now = min(float(written_total), float(np.interp((k + 1) * every_s, times, delivered)) + backlog)
        rates.append((now - previous) * 8 / every_s)
        previous = now
        k += 1
    return rates


def _seconds(ps: Optional[int]) -> float:
    return math.nan if ps is None else ps / PS_PER_S


def flow_metrics(flow: Mapping[str, Any], duration_ps: int) -> Dict[str, Any]:
    """The derived per-flow measures of docs/metrics.md from one summary flow entry (the
    core's counters): goodput, transmitted throughput, slow-start time and loss rate,
    recovery times, retransmission rate."""
    start = int(flow["start_ps"])
    end = flow.get("end_ps")
    active_ps = (int(end) - start) if end is not None else 0
    delivered_bits = 8 * int(flow["bytes_delivered"])
    sent_bits = 8 * int(flow["bytes_sent"])
    out: Dict[str, Any] = {
        "goodput_bps": delivered_bits * PS_PER_S / active_ps if active_ps > 0 else 0.0,
        "run_goodput_bps": delivered_bits * PS_PER_S / duration_ps,
        "transmitted_throughput_bps": sent_bits * PS_PER_S / active_ps if active_ps > 0 else 0.0,
    }
    segments = int(flow.get("segments_sent", 0))
    out["retransmission_rate"] = (
        int(flow.get("segments_retransmitted", 0)) / segments if segments else math.nan
    )
    first = flow.get("first_send_ps")
    ss_end = flow.get("slow_start_end_ps")
    out["slow_start_duration_s"] = (
        _seconds(ss_end - first) if first is not None and ss_end is not None else math.nan
    )
    ss_sent = int(flow.get("slow_start_segments_sent", 0) or 0)
    out["slow_start_loss_rate"] = (
        int(flow.get("slow_start_segments_lost", 0)) / ss_sent if ss_sent else math.nan
    )
    loss = flow.get("first_loss_ps")
    for key, at in (("recovery_time_s", "recovered_ps"), ("recovery_time_95_s", "recovered_95_ps")):
        t = flow.get(at)
        out[key] = _seconds(t - loss) if loss is not None and t is not None else math.nan
    return out


def transfer_metrics(flow: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Each transfer of a flow with ``transfers`` (the core's records) with its goodput: the
    payload it delivered over its own time, from its start to its connection's close (the
    live one's: to the flow's last in-order delivery), as iperf reports each run."""
    out = []
    for t in flow["transfers"]:
        entry = dict(t)
        end = t["end_ps"] if t["end_ps"] is not None else flow.get("end_ps")
        active_ps = int(end) - int(t["start_ps"]) if end is not None else 0
        entry["goodput_bps"] = 8 * int(t["bytes_delivered"]) * PS_PER_S / active_ps if active_ps > 0 else 0.0
        out.append(entry)
    return out


def fairness(rates_bps: Sequence[float], link_rate_bps: Optional[float]) -> Dict[str, float]:
    """Run-level sharing measures of a set of flows' rates (docs/metrics.md)."""
    x = [float(v) for v in rates_bps]
    out = {
        "jain_index": jain_index(x) if x else math.nan,
        "max_min_ratio": throughput_ratio(max(x), min(x)) if x else math.nan,
        "deviation": fairness_deviation(x),
    }
    out["utilization_estimate"] = (
        utilization_estimate(x, link_rate_bps) if link_rate_bps else math.nan
    )
    return out


class HasFlowSeries(Protocol):
    """A run's data as :func:`recovery_events` reads it: a :class:`~fatpipe.result.Result`."""

    @property
    def flow_series(self) -> "pd.DataFrame": ...


def recovery_events(result: HasFlowSeries, flow: str) -> "pd.DataFrame":
    """Every congestion event of ``flow`` visible in its sampled series, with how long cwnd
    took to regain its pre-event value: one row per event with ``time_s`` (the sample where
    ssthresh changed), ``cwnd_before_segments`` (cwnd at the sample before),
    ``ssthresh_segments`` (after), ``recovery_95_s`` and ``recovery_s`` (from the event to
    the first later sample with cwnd >= 95% / 100% of cwnd_before; NaN if never before the
    next event or the end). Resolution: the sample interval; the first event's exact times
    are in the summary (``recovery_time_s``)."""
    series = result.flow_series
    rows = series[series["flow"] == flow]
    if rows.empty:
        names = sorted(set(series["flow"]))
        raise KeyError(f"no flow {flow!r}; flows: {', '.join(names)}")
    t = rows["time_s"].to_numpy()
    cwnd = rows["cwnd_segments"].to_numpy(dtype=np.float64)
    ssthresh = rows["ssthresh_segments"].to_numpy(dtype=np.float64)
    changed = [
        i
        for i in range(1, len(t))
        if not np.isnan(ssthresh[i]) and (np.isnan(ssthresh[i - 1]) or ssthresh[i] != ssthresh[i - 1])
    ]
    events: List[Dict[str, float]] = []
    for k, i in enumerate(changed):
        before = cwnd[i - 1]
        stop = changed[k + 1] if k + 1 < len(changed) else len(t)
        rec = {}
        for key, share in (("recovery_95_s", 0.95), ("recovery_s", 1.0)):
            hits = np.nonzero(cwnd[i:stop] >= share * before)[0]
            rec[key] = float(t[i + hits[0]] - t[i]) if hits.size else math.nan
        events.append(
            {
                "time_s": float(t[i]),
                "cwnd_before_segments": float(before),
                "ssthresh_segments": float(ssthresh[i]),
                **rec,
            }
        )
    import pandas as pd

    return pd.DataFrame(
        events,
        columns=["time_s", "cwnd_before_segments", "ssthresh_segments", "recovery_95_s", "recovery_s"],
    )


#: A climb counts as back at the ceiling once cwnd reaches this share of it: a sawtooth's
#: peaks differ by a segment or two (when the loss falls within the RTT that detects it), so
#: 100 % could skip the climb whose peak came out one segment short and count a whole cycle
#: more. 1 % of 3325 segments is 33 RTTs of linear growth (0.8 s of a 70 s recovery).
REGAIN_SHARE = 0.99
#: A climb lasts at least this many smoothed RTTs: the window inflation of Reno's and
#: NewReno's fast recovery (one segment per duplicate ACK, within about an RTT) is not one.
CLIMB_RTTS = 4
#: Segments a congestion event's window may exceed twice its new ssthresh by (the window
#: grows while the loss is detected).
DEFLATION_SLACK = 3


def _climbs(t: Any, w: Any, rtt: Any, th: Any, first_loss_s: float) -> List[Any]:
    """The climbs after the first loss: (first, top) sample indices of each run over which
    cwnd never falls, lasting at least CLIMB_RTTS smoothed RTTs and ended by a congestion
    event. A congestion event sets ssthresh to at least about half the window (RFC 5681
    eq. 4; HighSpeed, Scalable and Westwood keep more); a fall from more than twice the
    ssthresh after it is the deflation that ends a fast recovery's inflation (RFC 6582),
    and the run before it is no climb."""
    falls = np.nonzero(w[1:] < w[:-1])[0]  # the sample before each fall: a climb's top
    min_rtt = float(np.nanmedian(rtt)) if np.isfinite(rtt).any() else 0.0
    climbs = []
    start = 0
    after_loss = int(np.searchsorted(t, first_loss_s))
    for top in falls:
        # A reduction within one sample interval shows no fall: a run over the first loss
        # climbs from the first sample after it.
        first = max(start, after_loss)
        deflation = np.isfinite(th[top + 1]) and w[top] > 2 * th[top + 1] + DEFLATION_SLACK
        if first <= top and t[top] - t[first] >= CLIMB_RTTS * min_rtt and not deflation:
            climbs.append((first, top))
        start = top + 1
    return climbs


def regain(time_s: Sequence[float], cwnd: Sequence[float], srtt_s: Sequence[float],
           ssthresh: Sequence[float], first_loss_s: Optional[float]) -> Dict[str, float]:
    """Document 003's recovery time (section 4.1, Figure 13): "the time that it normally
    takes the congestion window to reach its maximum value after a drastic reduction
    resulting from a packet drop" ("only the first Congestion Avoidance phase was
    utilized"), from one flow's sampled series: ``regain_time_s``, the maximum
    (``cwnd_ceiling_segments``) and the cwnd the first climb starts from
    (``first_climb_cwnd_segments``: document 003's "the cwnd was set equal to 41").

    A climb is a run of samples over which cwnd never falls, lasting at least CLIMB_RTTS
    smoothed RTTs and ended by a congestion event (a fall to a window whose ssthresh is at
    least about half the top: not the deflation after a fast recovery's inflation). The maximum is the window the
    path sustains: the largest cwnd at the top of a climb after the first loss. The time
    runs from the first congestion event (``first_loss_ps``) to the first sample of the
    first climb that reaches REGAIN_SHARE of the maximum. Reno halving at W and growing one
    segment per RTT takes W/2 RTTs. NaN without a loss, or when no climb after it ends in
    another. Unlike ``recovery_time_s`` (back to the cwnd just before the first loss, NaN
    after a slow-start overshoot), this counts the climb to the sawtooth's ceiling, as the
    document does. Resolution: the sample interval."""
    t = np.asarray(time_s, dtype=np.float64)
    w = np.asarray(cwnd, dtype=np.float64)
    rtt = np.asarray(srtt_s, dtype=np.float64)
    th = np.asarray(ssthresh, dtype=np.float64)
    out = {"regain_time_s": math.nan, "cwnd_ceiling_segments": math.nan, "first_climb_cwnd_segments": math.nan}
    if first_loss_s is None or not math.isfinite(first_loss_s) or len(t) < 3:
        return out
    climbs = _climbs(t, w, rtt, th, first_loss_s)
    if not climbs:
        return out
    ceiling = max(w[top] for _, top in climbs)
    out["cwnd_ceiling_segments"] = float(ceiling)
    out["first_climb_cwnd_segments"] = float(w[climbs[0][0]])
    target = REGAIN_SHARE * ceiling
    for start, top in climbs:
        if w[top] >= target:
            j = start + int(np.argmax(w[start:top + 1] >= target))
            out["regain_time_s"] = float(t[j] - first_loss_s)
            break
    return out


def regain_time(time_s: Sequence[float], cwnd: Sequence[float], srtt_s: Sequence[float],
                ssthresh: Sequence[float], first_loss_s: Optional[float]) -> float:
    """``regain(...)["regain_time_s"]``: document 003's recovery time."""
    return regain(time_s, cwnd, srtt_s, ssthresh, first_loss_s)["regain_time_s"]
