"""The queue disciplines that hold their packets (issue 28): CoDel (RFC 8289, Linux
sch_codel.c), FQ-CoDel (RFC 8290, Linux sch_fq_codel.c) and PIE (RFC 8033, Linux
sch_pie.c): their tables, every default with its source, and their normalizers to the
core's queue JSON (net/queue/codel.rs, fq_codel.rs, pie.rs). Registered in
:data:`fatpipe.scenario.queues.QUEUE_DISCIPLINES`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Dict, Optional, Tuple

from ..units import PS_PER_S, U64_MAX, format_duration, format_rate
from .kinds import Boolean, Duration, Integer, Real, Size
from .queue_limits import _queue_limit
from .schema import U32_MAX, UNSET, Derived, Field, Table, _fail, _join

#: Linux's names for the settings, with the files the defaults come from.
_CODEL_C = "Linux net/sched/sch_codel.c"
_FQ_CODEL_C = "Linux net/sched/sch_fq_codel.c"
_CODEL_H = "Linux include/net/codel.h codel_params_init"
_PIE_C = "Linux net/sched/sch_pie.c and include/net/pie.h (pie_params_init, pie_vars_init)"

#: The limit keys these disciplines take (they count packets, as Linux's do).
AQM_LIMIT_KEYS = ("limit_packets", "limit_bdp")


def _codel_fields(ecn_default: bool, ecn_source: str) -> Tuple[Field, ...]:
    """target, interval, ecn and ce_threshold: CoDel's own settings, shared by FQ-CoDel."""
    return (
        Field(
            "target",
            Duration(example="5ms"),
            "acceptable standing queue delay: CoDel acts when every packet's sojourn time has "
            "been at or above this for a whole interval; must be below what a full queue "
            "takes to drain",
            "5ms",
            f"RFC 8289 section 4.4 (TARGET 5 ms); {_CODEL_H} (target 5 ms)",
        ),
        Field(
            "interval",
            Duration(example="100ms"),
            "the window the sojourn must stay above target before the first drop, and the "
            "control law's scale: the next drop comes interval / sqrt(count) after the last",
            "100ms",
            f"RFC 8289 section 4.3 (INTERVAL 100 ms, a worst-case RTT); {_CODEL_H} (interval 100 ms)",
        ),
        Field(
            "ecn",
            Boolean(),
            "mark ECN-capable packets (ECT(0), ECT(1)) Congestion Experienced where the control "
            "law would drop them; others are still dropped",
            ecn_default,
            ecn_source,
        ),
        Field(
            "ce_threshold",
            Duration(example="1ms"),
            "mark CE every ECN-capable packet whose sojourn time exceeds this, whatever CoDel's "
            "state (a step marking for DCTCP-like senders); must be below what a full queue "
            "takes to drain",
            UNSET,
            "unset: off, as Linux (CODEL_DISABLED_THRESHOLD)",
        ),
    )


def _limit_field(default: int, source: str) -> Tuple[Field, ...]:
    return (
        Field(
            "limit_packets",
            Integer(minimum=1, maximum=U64_MAX, example=1000),
            "most packets waiting (not counting the one being transmitted)",
            Derived(f"{default} when limit_bdp is unset"),
            source,
        ),
        Field(
            "limit_bdp",
            Real(lower=0.0, example=1.0),
            "limit as a multiple of the bandwidth-delay product (this link's rate x the path's "
            "rtt), in packets of MTU size, rounded up, at least 1",
            UNSET,
            "",
        ),
    )


def _codel_table(_key: str, _value: Any, _source: str) -> Table:
    """CoDel's table. Its limit defaults to Linux's, not to the link's queue default: a
    CoDel queue is meant to be deep and kept short by its control law."""
    return Table(
        fields=(
            *_limit_field(1000, f"{_CODEL_C} (sch->limit = DEFAULT_CODEL_LIMIT, 1000 packets)"),
            *_codel_fields(False, f"{_CODEL_H} (ecn false; tc's codel ecn flag turns it on)"),
        ),
        doc="CoDel, Controlled Delay (RFC 8289, Linux sch_codel): one FIFO; when the sojourn "
        "time of the packets leaving has stayed at or above target for an interval, the "
        "packet leaving is dropped (or marked CE with ecn) and further drops follow at "
        "interval / sqrt(count); leaving below target ends the dropping state, and a "
        "re-entry soon after starts from the last cycle's count. Set at most one of "
        "limit_packets, limit_bdp.",
    )


def _fq_codel_table(_key: str, _value: Any, _source: str) -> Table:
    return Table(
        fields=(
            *_limit_field(10240, f"{_FQ_CODEL_C} fq_codel_init (sch->limit = 10*1024 packets)"),
            Field(
                "flows",
                Integer(minimum=1, maximum=65536, example=1024),
                "number of flow queues; flows are hashed into them (data and ACKs of a flow "
                "into the same one), so two flows may share a queue",
                1024,
                f"RFC 8290 section 5.2.1; {_FQ_CODEL_C} fq_codel_init (flows_cnt = 1024); "
                "65536 is Linux's maximum",
            ),
            Field(
                "quantum",
                Size(minimum=1, maximum=U32_MAX, example=1514),
                "bytes a queue may send per round of the deficit round robin",
                Derived("the link's MTU"),
                f"RFC 8290 section 5.2.2 (one MTU); {_FQ_CODEL_C} fq_codel_init (psched_mtu: "
                "the MTU plus the Ethernet header, which fatpipe's IP-byte counts leave out)",
            ),
            Field(
                "drop_batch_size",
                Integer(minimum=1, maximum=U32_MAX, example=64),
                "at the limit, the fattest queue loses packets from its head up to half its "
                "backlog or this many",
                64,
                f"{_FQ_CODEL_C} fq_codel_init (drop_batch_size = 64)",
            ),
            *_codel_fields(True, f"{_FQ_CODEL_C} fq_codel_init (cparams.ecn = true)"),
        ),
        doc="FQ-CoDel (RFC 8290, Linux sch_fq_codel): flows hashed into flow queues, each "
        "under its own CoDel, served by deficit round robin with a byte quantum; a queue "
        "that becomes active goes first (new-flows list) for one quantum; at the limit the "
        "fattest queue loses packets from its head. Set at most one of limit_packets, "
        "limit_bdp. Linux's memory_limit is not modelled.",
    )


def _drain_ps(limit_packets: int, mtu_bytes: int, rate_bps: int) -> int:
    """What a full queue of MTU-size packets takes to drain at the link's rate."""
    return int(Fraction(limit_packets * mtu_bytes * 8 * PS_PER_S, rate_bps))


def _check_reachable(params: Dict[str, Any], path: str, key: str, limit: int, mtu_bytes: int, rate_bps: int) -> None:
    """A delay threshold (``key``) must be reachable: a sojourn above it needs a queue that
    takes longer than it to drain."""
    value: Optional[int] = params[key]
    drain = _drain_ps(limit, mtu_bytes, rate_bps)
    if value is not None and value >= drain:
        raise _fail(
            _join(path, key), format_duration(value),
            f"a full queue ({limit} packets of {mtu_bytes} bytes at {format_rate(rate_bps)}) drains in "
            f"{format_duration(drain)}, so no packet would wait that long; must be below "
            f"{format_duration(drain)} (or raise limit_packets)",
        )


def _check_codel(params: Dict[str, Any], path: str, limit: int, mtu_bytes: int, rate_bps: int) -> None:
    """target and ce_threshold must be reachable: a sojourn above them needs a queue that
    takes longer than them to drain."""
    for key in ("target", "ce_threshold"):
        _check_reachable(params, path, key, limit, mtu_bytes, rate_bps)
    if params["target"] >= params["interval"]:
        raise _fail(
            _join(path, "target"), format_duration(params["target"]),
            f"must be below interval ({format_duration(params['interval'])}); RFC 8289 section 4.4 "
            "sets it to 5-10 % of interval",
        )


def _aqm_limit(params: Dict[str, Any], path: str, default: int, rate_bps: int, rtt_ps: int, mtu_bytes: int) -> int:
    limit, _ = _queue_limit(
        params, path, AQM_LIMIT_KEYS, rate_bps=rate_bps, rtt_ps=rtt_ps, mtu_bytes=mtu_bytes,
        default_key="limit_packets", default_value=default,
    )
    assert limit is not None  # a packet count: both keys give one
    return limit


def _codel_core(params: Dict[str, Any], mtu_bytes: int) -> Dict[str, Any]:
    return {
        "target_ps": params["target"],
        "interval_ps": params["interval"],
        "mtu_bytes": mtu_bytes,
        "ecn": params["ecn"],
        "ce_threshold_ps": params["ce_threshold"],
    }


def _normalize_codel(
    params: Dict[str, Any], path: str, *, rate_bps: int, rtt_ps: int, mtu_bytes: int, **_: Any,
) -> Dict[str, Any]:
    limit = _aqm_limit(params, path, 1000, rate_bps, rtt_ps, mtu_bytes)
    _check_codel(params, path, limit, mtu_bytes, rate_bps)
    return {"discipline": "codel", "limit_packets": limit, **_codel_core(params, mtu_bytes)}


def _normalize_fq_codel(
    params: Dict[str, Any], path: str, *, rate_bps: int, rtt_ps: int, mtu_bytes: int, **_: Any,
) -> Dict[str, Any]:
    limit = _aqm_limit(params, path, 10240, rate_bps, rtt_ps, mtu_bytes)
    _check_codel(params, path, limit, mtu_bytes, rate_bps)
    quantum = params["quantum"] if params["quantum"] is not None else mtu_bytes
    return {
        "discipline": "fq_codel",
        "limit_packets": limit,
        "flows": params["flows"],
        "quantum_bytes": quantum,
        "drop_batch_size": params["drop_batch_size"],
        **_codel_core(params, mtu_bytes),
    }


def _pie_table(_key: str, _value: Any, _source: str) -> Table:
    return Table(
        fields=(
            *_limit_field(1000, f"{_PIE_C}: limit 1000 packets"),
            Field(
                "target",
                Duration(example="15ms"),
                "queue delay the controller aims at (QDELAY_REF); must be below what a full "
                "queue takes to drain",
                "15ms",
                f"RFC 8033 section 4.1 (QDELAY_REF 15 ms); {_PIE_C} (target 15 ms)",
            ),
            Field(
                "tupdate",
                Duration(example="15ms"),
                "time between updates of the drop probability (T_UPDATE)",
                "15ms",
                f"RFC 8033 section 4.2 (T_UPDATE 15 ms); {_PIE_C} (tupdate 15 ms)",
            ),
            Field(
                "alpha",
                Real(lower=0.0, lower_open=False, example=0.125),
                "gain on the delay's distance from target, per second (scaled down while the "
                "probability is small, RFC 8033 section 4.2)",
                0.125,
                f"RFC 8033 section 4.2 (alpha 0.125 Hz); {_PIE_C} (alpha 2, in 1/16)",
            ),
            Field(
                "beta",
                Real(lower=0.0, lower_open=False, example=1.25),
                "gain on the delay's change since the last update, per second",
                1.25,
                f"RFC 8033 section 4.2 (beta 1.25 Hz); {_PIE_C} (beta 20, in 1/16)",
            ),
            Field(
                "max_burst",
                Duration(positive=False, example="150ms"),
                "burst allowance: after a quiet spell no arrival is dropped early until this "
                "much time has passed between departures",
                "150ms",
                f"RFC 8033 section 4.4 (MAX_BURST 150 ms); {_PIE_C} (burst_time 150 ms)",
            ),
            Field(
                "ecn",
                Boolean(),
                "mark ECN-capable arrivals CE instead of dropping them while the drop "
                "probability is at most 10 % (above it they are dropped)",
                False,
                f"RFC 8033 section 5.1 (the 10 % bound); {_PIE_C} (ecn off)",
            ),
            Field(
                "bytemode",
                Boolean(),
                "scale each arrival's drop probability by its size / MTU",
                False,
                f"{_PIE_C} (bytemode off)",
            ),
        ),
        doc="PIE, Proportional Integral controller Enhanced (RFC 8033, Linux sch_pie with "
        "timestamps): every tupdate the drop probability moves with the queue delay's "
        "distance from target and its trend; arrivals are dropped (or marked) with it, "
        "de-randomized, after a burst allowance. Set at most one of limit_packets, limit_bdp.",
    )


def _normalize_pie(
    params: Dict[str, Any], path: str, *, rate_bps: int, rtt_ps: int, mtu_bytes: int, **_: Any,
) -> Dict[str, Any]:
    limit = _aqm_limit(params, path, 1000, rate_bps, rtt_ps, mtu_bytes)
    _check_reachable(params, path, "target", limit, mtu_bytes, rate_bps)
    return {
        "discipline": "pie",
        "limit_packets": limit,
        "target_ps": params["target"],
        "tupdate_ps": params["tupdate"],
        "alpha": float(params["alpha"]),
        "beta": float(params["beta"]),
        "max_burst_ps": params["max_burst"],
        "ecn": params["ecn"],
        "bytemode": params["bytemode"],
        "mtu_bytes": mtu_bytes,
    }


#: The disciplines of this module: name -> (table factory, normalizer).
AQM_DISCIPLINES = {
    "codel": (_codel_table, _normalize_codel),
    "fq_codel": (_fq_codel_table, _normalize_fq_codel),
    "pie": (_pie_table, _normalize_pie),
}
