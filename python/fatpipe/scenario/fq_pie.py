"""FQ-PIE (Linux net/sched/sch_fq_pie.c, since 5.6): FQ-CoDel's flow queues and deficit
round robin, each queue under its own PIE (RFC 8033). Its table, every default with its
source, and its normalizer to the core's queue JSON (net/queue/fq_pie.rs). Registered in
:data:`fatpipe.scenario.queues.QUEUE_DISCIPLINES`."""

from __future__ import annotations

from typing import Any, Dict

from .aqm import (
    _aqm_limit, _bytemode_field, _check_reachable, _flows_field, _limit_field, _pie_core, _pie_fields,
)
from .kinds import Boolean, Integer, Size
from .schema import Derived, Field, Table

_FQ_PIE_C = "Linux net/sched/sch_fq_pie.c fq_pie_init"
#: FQ-PIE's controller defaults are PIE's: fq_pie_init calls pie_params_init.
_FQ_PIE_PARAMS = f"{_FQ_PIE_C} -> include/net/pie.h pie_params_init, pie_vars_init"
#: Linux's default limit (fq_pie_init: sch->limit = 10 * 1024).
FQ_PIE_LIMIT_PACKETS = 10240


def _fq_pie_table(_key: str, _value: Any, _source: str) -> Table:
    return Table(
        fields=(
            *_limit_field(FQ_PIE_LIMIT_PACKETS, f"{_FQ_PIE_C} (sch->limit = 10 * 1024 packets)"),
            _flows_field(f"{_FQ_PIE_C} (flows_cnt = 1024); fq_pie_change allows 1 to 65536"),
            Field(
                "quantum",
                Size(minimum=1, maximum=1 << 20, example=1514),
                "bytes a queue may send per round of the deficit round robin",
                Derived("the link's MTU"),
                f"{_FQ_PIE_C} (quantum = psched_mtu: the MTU plus the Ethernet header, which "
                "fatpipe's IP-byte counts leave out); fq_pie_policy allows 1 to 2^20",
            ),
            *_pie_fields(_FQ_PIE_PARAMS),
            Field(
                "ecn",
                Boolean(),
                "mark ECN-capable arrivals CE instead of dropping them while their queue's drop "
                "probability is at most ecn_prob (above it they are dropped)",
                False,
                f"{_FQ_PIE_PARAMS} (ecn off: 'ECN capability is off by default')",
            ),
            Field(
                "ecn_prob",
                Integer(minimum=0, maximum=100, example=10),
                "with ecn, the drop probability (per cent) up to which an ECN-capable arrival "
                "is marked rather than dropped",
                10,
                f"{_FQ_PIE_C} (ecn_prob = 10); RFC 8033 section 5.1's 10 %",
            ),
            _bytemode_field(_FQ_PIE_PARAMS),
        ),
        doc="FQ-PIE (Linux sch_fq_pie): flows hashed into flow queues served by deficit round "
        "robin with a byte quantum, new flows first (as FQ-CoDel), each queue under its own "
        "PIE: every tupdate (the first half a second after setup, fq_pie_init) each queue's "
        "drop probability moves with its own queue delay; arrivals are dropped (or marked) "
        "early with their queue's probability, after that queue's burst allowance; an arrival "
        "at the limit is dropped. Queue delay from timestamps (Linux's dq_rate_estimator off, "
        "its default; the estimator is not modelled). Linux's memory_limit (32 MB of buffer "
        "truesize) is not modelled: sch_fq_pie.c only counts arrivals over it, it drops none. "
        "Set at most one of limit_packets, limit_bdp.",
    )


def _normalize_fq_pie(
    params: Dict[str, Any], path: str, *, rate_bps: int, rtt_ps: int, mtu_bytes: int, **_: Any,
) -> Dict[str, Any]:
    limit = _aqm_limit(params, path, FQ_PIE_LIMIT_PACKETS, rate_bps, rtt_ps, mtu_bytes)
    _check_reachable(params, path, "target", limit, mtu_bytes, rate_bps)
    quantum = params["quantum"] if params["quantum"] is not None else mtu_bytes
    return {
        "discipline": "fq_pie",
        "flows": params["flows"],
        "quantum_bytes": quantum,
        "ecn_prob_percent": params["ecn_prob"],
        # Linux's p_params, PIE's own settings (its limit over all queues together).
        "pie": _pie_core(params, limit, mtu_bytes),
    }


#: The discipline of this module: name -> (table factory, normalizer).
FQ_PIE_DISCIPLINES = {"fq_pie": (_fq_pie_table, _normalize_fq_pie)}
