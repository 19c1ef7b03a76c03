"""DualPI2, the DualQ Coupled AQM of L4S (RFC 9332, Linux net/sched/sch_dualpi2.c): its
table, every default with its source, and its normalizer to the core's queue JSON
(net/queue/dualpi2.rs). Registered in :data:`fatpipe.scenario.queues.QUEUE_DISCIPLINES`."""

from __future__ import annotations

from typing import Any, Dict

from ..units import U64_MAX, format_duration
from .aqm import _aqm_limit, _check_reachable, _limit_field
from .kinds import Boolean, Choice, Duration, Integer, Real, Size
from .schema import UNSET, Derived, Field, Table, _fail, _join

#: Where Linux's defaults are set.
_DUALPI2_C = "Linux net/sched/sch_dualpi2.c dualpi2_reset_default"

#: The default step threshold, when step_thresh_packets is not set either.
_STEP_THRESH_DEFAULT = "1ms"


def _dualpi2_table(_key: str, _value: Any, _source: str) -> Table:
    return Table(
        fields=(
            *_limit_field(10000, f"{_DUALPI2_C} (sch->limit = 10000 packets, 'max 125 ms at 1 Gb/s')"),
            Field(
                "memory_limit",
                Size(minimum=1, example="30MB"),
                "most bytes waiting in both queues together (IP bytes here; Linux counts the "
                "buffers' truesize)",
                Derived("limit_packets x 2 x the link's MTU"),
                "Linux sch_dualpi2.c get_memory_limit (limit x 2 x MTU, 'doubling the packet "
                "length' for the per-packet overhead)",
            ),
            Field(
                "target",
                Duration(example="15ms"),
                "queue delay the PI controller aims at (the larger of the two queues' head "
                "delays); must be below what a full queue takes to drain",
                "15ms",
                f"RFC 9332 appendix A (target 15 ms); {_DUALPI2_C} (pi2_target 15 ms)",
            ),
            Field(
                "tupdate",
                Duration(example="16ms"),
                "time between updates of the base probability p'",
                "16ms",
                f"{_DUALPI2_C} (pi2_tupdate 16 ms)",
            ),
            Field(
                "alpha",
                Real(lower=0.0, lower_open=False, example=0.16),
                "integral gain on the delay's distance from target, per second",
                0.16,
                f"{_DUALPI2_C} (alpha 41/256 Hz, '~0.16 Hz'); the PI2 gains need none of PIE's "
                "auto-tuning (RFC 9332 appendix A)",
            ),
            Field(
                "beta",
                Real(lower=0.0, lower_open=False, example=3.2),
                "proportional gain on the delay's change since the last update, per second",
                3.2,
                f"{_DUALPI2_C} (beta 819/256 Hz, '~3.20 Hz')",
            ),
            Field(
                "coupling_factor",
                Real(lower=0.0, example=2.0),
                "k: the L4S queue is marked with p_CL = k p' while the classic queue drops or "
                "marks with p_C = p'^2; k = 2 gives equal windows to a Reno-like and a "
                "DCTCP-like flow of equal RTT",
                2.0,
                f"RFC 9332 section 2.1 (k = 2); {_DUALPI2_C} (coupling_factor 2, 'window "
                "fairness for equal RTTs')",
            ),
            Field(
                "ecn_mask",
                Choice(("l4s_ect", "any_ect")),
                "which packets the L4S queue takes: l4s_ect, ECT(1) and CE (RFC 9331's L4S "
                "identifier); any_ect, ECT(0) too (DCTCP in a data centre, whose packets are "
                "ECT(0))",
                "l4s_ect",
                f"{_DUALPI2_C} (ecn_mask TC_DUALPI2_ECN_MASK_L4S_ECT); tc-dualpi2(8) any_ect",
            ),
            Field(
                "step_thresh",
                Duration(example="1ms"),
                "the L4S queue's own AQM: an L4S packet that waited longer than this is "
                "marked CE when it leaves; must be below what a full queue takes to drain",
                Derived(f"{_STEP_THRESH_DEFAULT} unless step_thresh_packets is set"),
                f"{_DUALPI2_C} (step_thresh 1 ms, in time)",
            ),
            Field(
                "step_thresh_packets",
                Integer(minimum=1, maximum=U64_MAX, example=5),
                "the step in packets instead: an L4S packet leaving with more than this many "
                "L4S packets still waiting is marked",
                UNSET,
                "unset: the step is in time, as Linux's default",
            ),
            Field(
                "classic_protection",
                Integer(minimum=0, maximum=100, example=10),
                "the classic queue's weight in the scheduler between the two queues, percent "
                "(wc; the L4S queue's is 100 - wc): a weighted round robin on a byte credit, "
                "so that neither queue starves the other",
                10,
                f"{_DUALPI2_C} (dualpi2_calculate_c_protection(10): wc 10 %, wl 90 %)",
            ),
            Field(
                "drop_overload",
                Boolean(),
                "when k p' exceeds 1 (overload), drop L4S packets with p_C as classic ones and "
                "drop classic ECN-capable packets instead of marking them; off: keep marking "
                "(p' capped at 1/k) and let the queue overflow",
                True,
                f"RFC 9332 section 4.2.3; {_DUALPI2_C} (drop_overload on)",
            ),
            Field(
                "drop_early",
                Boolean(),
                "drop or mark packets as they arrive instead of as they leave",
                False,
                f"{_DUALPI2_C} (drop_early off: drop_dequeue)",
            ),
        ),
        doc="DualPI2, the DualQ Coupled AQM of L4S (RFC 9332, Linux sch_dualpi2): ECT(1) and "
        "CE packets wait in an L4S queue marked by a 1 ms step and by the coupled probability "
        "k p'; the others in a classic queue dropped (or, ECT(0), marked) with p'^2; p' from "
        "a PI controller on the larger queue delay; a weighted round robin between the two "
        "queues, which share one limit. Set at most one of limit_packets, limit_bdp, and of "
        "step_thresh, step_thresh_packets. Not modelled: tc filters, min_qlen_step "
        "(0), GSO splitting.",
    )


def _normalize_dualpi2(
    params: Dict[str, Any], path: str, *, rate_bps: int, rtt_ps: int, mtu_bytes: int, **_: Any,
) -> Dict[str, Any]:
    limit = _aqm_limit(params, path, 10000, rate_bps, rtt_ps, mtu_bytes)
    step_ps, step_packets = params["step_thresh"], params["step_thresh_packets"]
    if step_ps is not None and step_packets is not None:
        key = _join(path, "step_thresh_packets")
        raise _fail(key, step_packets, f"set at most one of step_thresh ({format_duration(step_ps)}), "
                    "step_thresh_packets")
    if step_packets is None and step_ps is None:
        step_ps = Duration().convert(_STEP_THRESH_DEFAULT)
    if step_packets is not None and step_packets >= limit:
        raise _fail(_join(path, "step_thresh_packets"), step_packets,
                    f"must be below limit_packets ({limit}): no more L4S packets can wait")
    _check_reachable({**params, "step_thresh": step_ps}, path, "step_thresh", limit, mtu_bytes, rate_bps)
    _check_reachable(params, path, "target", limit, mtu_bytes, rate_bps)
    memory = params["memory_limit"] if params["memory_limit"] is not None else limit * 2 * mtu_bytes
    if memory < mtu_bytes:
        raise _fail(_join(path, "memory_limit"), memory,
                    f"must be at least one MTU ({mtu_bytes} bytes), or no full-size packet fits")
    return {
        "discipline": "dualpi2",
        "limit_packets": limit,
        "memory_limit_bytes": memory,
        "target_ps": params["target"],
        "tupdate_ps": params["tupdate"],
        "alpha": float(params["alpha"]),
        "beta": float(params["beta"]),
        "step_thresh_ps": step_ps,
        "step_thresh_packets": step_packets,
        "coupling_factor": float(params["coupling_factor"]),
        "any_ect": params["ecn_mask"] == "any_ect",
        "c_protection_percent": params["classic_protection"],
        "drop_overload": params["drop_overload"],
        "drop_early": params["drop_early"],
        "mtu_bytes": mtu_bytes,
    }


#: The disciplines of this module: name -> (table factory, normalizer).
DUALPI2_DISCIPLINES = {"dualpi2": (_dualpi2_table, _normalize_dualpi2)}
