"""Queue disciplines: drop-tail (packets, bytes, buffer cells) and RED, their tables and
their normalizers to the core's queue JSON; CoDel, FQ-CoDel and PIE's are in :mod:`.aqm`,
FQ-PIE's in :mod:`.fq_pie`, the TBF shaper's in :mod:`.tbf`, DualPI2's in :mod:`.dualpi2`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from ..units import U64_MAX
from .aqm import AQM_DISCIPLINES
from .fq_pie import FQ_PIE_DISCIPLINES
from .tbf import TBF_DISCIPLINES
from .dualpi2 import DUALPI2_DISCIPLINES
from .queue_limits import _LIMIT_KEYS, _limit_fields, _queue_limit
from .kinds import Boolean, Duration, Integer, Real, Size
from .schema import (
    U32_MAX, UNSET, Derived, Field, ScenarioError, Table, Tagged, _fail, _fail_number,
    _join, _num,
)


@dataclass(frozen=True)
class QueueDiscipline:
    """A queue discipline: a table of parameters given the default limit (which differs
    between bottleneck and access queues), and the normalizer to the core's queue JSON."""

    table: Callable[[str, Any, str], Table]
    normalize: Callable[..., Dict[str, Any]]


# ---- queue disciplines ---------------------------------------------------------------

def _cell_fields(what: str) -> Tuple[Field, ...]:
    """cell_size and limit_cells: buffers of a fixed size, shared by drop-tail and RED;
    ``what`` says what else counts in cells."""
    return (
        Field(
            "cell_size",
            Size(minimum=1, maximum=U32_MAX, example=2048),
            "size of one buffer cell, bytes: the router stores a packet in "
            "ceil(IP bytes / cell_size) cells (document 002's ANSNET routers: 2 KB cells, "
            f"so a packet over 4 KB takes 3); set together with limit_cells{what}",
            UNSET,
            "unset: no cell accounting",
        ),
        Field(
            "limit_cells",
            Integer(minimum=1, maximum=U64_MAX, example=60),
            "number of buffer cells; an arriving packet that needs more cells than are "
            "free is dropped. Applies together with a limit_* key if one is set; with "
            "cells alone there is no other limit (document 002: 60 cells of 2048 bytes "
            "hold 20 packets of 4096 + 52 bytes)",
            UNSET,
            "unset: no cell accounting",
        ),
    )


def _cells(params: Dict[str, Any], path: str, mtu_bytes: int) -> Tuple[Optional[int], Optional[int]]:
    """(cell_bytes, limit_cells): both or neither, and enough cells for a full-size packet."""
    cell_bytes, limit_cells = params["cell_size"], params["limit_cells"]
    if (cell_bytes is None) != (limit_cells is None):
        given, missing = (
            ("cell_size", "limit_cells") if cell_bytes is not None else ("limit_cells", "cell_size")
        )
        raise ScenarioError(
            f"{_join(path, missing)}: missing; required with {given} (the queue holds "
            "limit_cells cells of cell_size bytes)",
            _join(path, missing),
        )
    if cell_bytes is not None:
        cells_per_mtu = -(-mtu_bytes // cell_bytes)  # ceiling division
        if limit_cells < cells_per_mtu:
            raise _fail(
                _join(path, "limit_cells"),
                limit_cells,
                f"a full-size packet (MTU {mtu_bytes} bytes) takes {cells_per_mtu} cells of "
                f"{cell_bytes} bytes, so at least {cells_per_mtu} are needed",
            )
    return cell_bytes, limit_cells


def _droptail_table(default_key: str, default_value: Any, default_source: str) -> Table:
    """Drop-tail parameters; ``default_key = default_value`` applies when no limit (and no
    cells) is set."""
    return Table(
        fields=(
            *_limit_fields(
                _LIMIT_KEYS, default_key, default_value, default_source,
                "when no limit and no cells are set",
            ),
            *_cell_fields(""),
            Field(
                "mark_threshold",
                Integer(minimum=0, example=20),
                "step marking (issue 28): an ECN-capable packet that arrives to find at least this "
                "many packets waiting is marked Congestion Experienced (the queue it joins is above "
                "the threshold K); others queue or drop as before. The DCTCP paper's switch "
                "marking (Alizadeh et al. 2010 section 3.1: K > C x RTT / 7). Below limit_packets",
                UNSET,
                "unset: no marking",
            ),
        ),
        doc="First in, first out; arrivals that do not fit are dropped. Set at most one of "
        "limit_packets, limit_bytes, limit_bdp, and optionally buffer cells (cell_size and "
        "limit_cells), which apply as well; mark_threshold adds step ECN marking.",
    )


def _normalize_droptail(
    params: Dict[str, Any],
    path: str,
    *,
    rate_bps: int,
    rtt_ps: int,
    mtu_bytes: int,
    default_key: str,
    default_value: Any,
) -> Dict[str, Any]:
    cell_bytes, limit_cells = _cells(params, path, mtu_bytes)
    limit_packets, limit_bytes = _queue_limit(
        params,
        path,
        _LIMIT_KEYS,
        rate_bps=rate_bps,
        rtt_ps=rtt_ps,
        mtu_bytes=mtu_bytes,
        default_key=default_key,
        default_value=default_value,
        # Cells alone are the whole limit: the default packet limit must not cut in.
        apply_default=cell_bytes is None,
    )
    normalized = {
        "discipline": "droptail",
        "limit_packets": limit_packets,
        "limit_bytes": limit_bytes,
        "cell_bytes": cell_bytes,
        "limit_cells": limit_cells,
    }
    mark = params["mark_threshold"]
    if mark is not None:
        if limit_packets is not None and mark >= limit_packets:
            raise _fail(
                _join(path, "mark_threshold"),
                mark,
                f"must be below the queue limit ({limit_packets} packets): a full queue drops "
                "before it could mark",
            )
        # Only when set: a queue without it normalizes as before.
        normalized["mark_threshold_packets"] = mark
    return normalized


#: RED's hard limit counts packets, or cells (cell_size and limit_cells); not bytes.
_RED_LIMIT_KEYS = ("limit_packets", "limit_bdp")
_RED_AUTOMATIC = "C = link rate / (8 x mean_packet_size) packets/s"
#: ns-2's automatic thresholds, which the core computes (net/queue/red.rs, Red::new): the
#: reference and the messages describe them with these words.
_RED_AUTOMATIC_MIN_TH = "max(5, target_delay x C / 2)"
_RED_AUTOMATIC_MAX_TH = "3 x min_th"


def _red_table(default_key: str, default_value: Any, default_source: str) -> Table:
    """RED parameters; the hard limit defaults as the drop-tail limit of the same queue."""
    return Table(
        fields=(
            *_limit_fields(
                _RED_LIMIT_KEYS, default_key, default_value,
                f"as for drop-tail: {default_source}", "when no limit and no cells are set",
            ),
            *_cell_fields(
                "; RED then counts the queue, its average, min_th and max_th in cells (document "
                "002's r200 build runs RED on the 200 cells of its transmit side)"
            ),
            Field(
                "min_th",
                Real(lower=0.0, lower_open=False, example=5.0),
                "lower threshold of the average queue, packets (cells with cell_size): below it "
                "nothing is dropped early; must be below the hard limit",
                Derived(f"automatic: {_RED_AUTOMATIC_MIN_TH}, {_RED_AUTOMATIC} (in cells: "
                        "times the cells a mean_packet_size packet takes)"),
                "ns-2 red.cc automatic thresholds (thresh_ 0; Floyd, Gummadi and Shenker, "
                "Adaptive RED, 2001)",
            ),
            Field(
                "max_th",
                Real(lower=0.0, example=15.0),
                "upper threshold of the average queue, packets or cells (greater than min_th): "
                "the early-drop probability reaches max_p there; setting it needs min_th too",
                Derived(_RED_AUTOMATIC_MAX_TH),
                "ns-2 red.cc (maxthresh_ 0); Floyd, Gummadi and Shenker 2001 recommend "
                "max_th = 3 min_th",
            ),
            Field(
                "max_p",
                Real(lower=0.0, upper=1.0, upper_open=False, example=0.1),
                "early-drop probability at max_th (before the spacing by the count of packets "
                "since the last drop)",
                0.1,
                "ns-2 Queue/RED linterm_ 10 (max_p = 1 / linterm_)",
            ),
            Field(
                "w_q",
                Real(lower=0.0, upper=1.0, upper_open=False, example=0.002),
                "weight of the latest queue length in the average queue (exponentially "
                "weighted moving average, updated on every arrival)",
                Derived(f"automatic: 1 - exp(-1 / C), {_RED_AUTOMATIC}: a time constant of "
                        "one second of arrivals at the link rate"),
                "ns-2 red.cc with q_weight_ 0 (Floyd, Gummadi and Shenker 2001); ns-2.35's "
                "default q_weight_ -1 scales it by 10 RTTs instead",
            ),
            Field(
                "gentle",
                Boolean(),
                "between max_th and 2 x max_th the early-drop probability climbs from max_p to "
                "1 instead of jumping to 1 (Floyd 2000)",
                True,
                "ns-2 default since April 2001 (gentle_ true); document 003 ran RED in gentle mode",
            ),
            Field(
                "byte_mode",
                Boolean(),
                "scale the early-drop probability by packet size / mean_packet_size, so large "
                "packets are dropped more often",
                False,
                "packet mode, as Floyd and Jacobson 1993 and ns-2 before October 2004 "
                "(bytes_ false)",
            ),
            Field(
                "mean_packet_size",
                Size(minimum=1, maximum=65535, example=500),
                "typical packet size, bytes: the unit of C in the automatic parameters, of "
                "the average's decay while the queue is idle, and of byte_mode",
                500,
                "ns-2 Queue/RED mean_pktsize_ 500",
            ),
            Field(
                "wait",
                Boolean(),
                "space early drops further apart: no drop until count x p_b reaches 1, then "
                "p_b / (2 - count x p_b); false is Floyd and Jacobson's p_b / (1 - count x p_b)",
                True,
                "ns-2 Queue/RED wait_ true",
            ),
            Field(
                "target_delay",
                Duration(positive=True, example="5ms"),
                "queueing delay the automatic min_th aims at (target_delay x C packets, halved)",
                "5ms",
                "ns-2 Queue/RED targetdelay_ 0.005 (Floyd, Gummadi and Shenker 2001)",
            ),
            Field(
                "ecn",
                Boolean(),
                "Explicit Congestion Notification (RFC 3168): where RED would drop a packet "
                "early it marks it Congestion Experienced instead, if the packet is ECN-capable "
                "(a flow with tcp.ecn); others are still dropped. As ns-2, the gentle region "
                "marks too; above max_th (2 x max_th when gentle) and at the hard limit every "
                "packet is dropped. Marks are counted per link (ecn_marks)",
                False,
                "ns-2 Queue/RED setbit_ false; Linux sch_red marks only with the ecn flag (and, "
                "unlike ns-2, above max_th too unless harddrop is set)",
            ),
        ),
        doc="Random Early Detection (Floyd and Jacobson 1993) as ns-2 runs it: an arrival is "
        "dropped early with a probability that grows with the average queue from min_th to "
        "max_th (and, gentle, on to 2 x max_th); the hard limit drops arrivals to a full "
        "queue. Set at most one of limit_packets, limit_bdp, and optionally buffer cells "
        "(cell_size and limit_cells). Queue, thresholds and limit count packets whatever "
        "their size, or cells when cell_size is set.",
    )


def _normalize_red(
    params: Dict[str, Any],
    path: str,
    *,
    rate_bps: int,
    rtt_ps: int,
    mtu_bytes: int,
    default_key: str,
    default_value: Any,
) -> Dict[str, Any]:
    cell_bytes, limit_cells = _cells(params, path, mtu_bytes)
    limit_packets, _ = _queue_limit(
        params,
        path,
        _RED_LIMIT_KEYS,
        rate_bps=rate_bps,
        rtt_ps=rtt_ps,
        mtu_bytes=mtu_bytes,
        default_key=default_key,
        default_value=default_value,
        apply_default=cell_bytes is None,
    )
    # The hard limit in the unit the thresholds count.
    hard_limit, unit = (limit_cells, "cells") if cell_bytes is not None else (limit_packets, "packets")
    min_th, max_th = params["min_th"], params["max_th"]
    if max_th is not None and min_th is None:
        raise _fail_number(
            _join(path, "max_th"),
            max_th,
            f"give min_th too, or neither (both automatic: min_th = {_RED_AUTOMATIC_MIN_TH}, "
            f"max_th = {_RED_AUTOMATIC_MAX_TH})",
        )
    if min_th is not None:
        if max_th is None:
            # ns-2 derives the missing upper threshold the same way (red.cc).
            if min_th == 0:
                raise _fail_number(
                    _join(path, "min_th"),
                    min_th,
                    f"with max_th unset ({_RED_AUTOMATIC_MAX_TH}) min_th must be positive; give max_th "
                    "to start early drops at an empty queue",
                )
            # The core derives the missing upper threshold as ns-2's red.cc does (3 x min_th).
        elif not min_th < max_th:
            raise _fail_number(_join(path, "max_th"), max_th, f"must be greater than min_th ({_num(min_th)})")
        if hard_limit is not None and min_th >= hard_limit:
            raise _fail_number(
                _join(path, "min_th"),
                min_th,
                f"must be below the hard limit ({hard_limit} {unit}): the average queue "
                "never reaches it, so RED would never drop early",
            )
    return {
        "discipline": "red",
        "limit_packets": limit_packets,
        "min_th_packets": None if min_th is None else float(min_th),
        "max_th_packets": None if max_th is None else float(max_th),
        "max_p": float(params["max_p"]),
        "w_q": None if params["w_q"] is None else float(params["w_q"]),
        "gentle": params["gentle"],
        "byte_mode": params["byte_mode"],
        "mean_packet_bytes": params["mean_packet_size"],
        "wait": params["wait"],
        "target_delay_ps": params["target_delay"],
        "ecn": params["ecn"],
        "cell_bytes": cell_bytes,
        "limit_cells": limit_cells,
    }


#: Queue disciplines by name. Each gives (table factory, normalizer).
QUEUE_DISCIPLINES: Dict[str, QueueDiscipline] = {
    "droptail": QueueDiscipline(table=_droptail_table, normalize=_normalize_droptail),
    "red": QueueDiscipline(table=_red_table, normalize=_normalize_red),
    **{name: QueueDiscipline(table=t, normalize=n) for name, (t, n) in AQM_DISCIPLINES.items()},
    **{name: QueueDiscipline(table=t, normalize=n) for name, (t, n) in FQ_PIE_DISCIPLINES.items()},
    **{name: QueueDiscipline(table=t, normalize=n) for name, (t, n) in TBF_DISCIPLINES.items()},
    **{name: QueueDiscipline(table=t, normalize=n) for name, (t, n) in DUALPI2_DISCIPLINES.items()},
}

#: The disciplines that hold their packets; a host's transmit ring cannot sit behind them.
HOLDING_DISCIPLINES = (*AQM_DISCIPLINES, *FQ_PIE_DISCIPLINES, *TBF_DISCIPLINES, *DUALPI2_DISCIPLINES)


def _queue_kind(default_key: str, default_value: Any, default_source: str) -> Tagged:
    return Tagged(
        tag="discipline",
        variants={
            name: d.table(default_key, default_value, default_source)
            for name, d in QUEUE_DISCIPLINES.items()
        },
        default_tag="droptail",
        tag_doc="queue discipline",
    )


def _normalize_queue(parsed: Dict[str, Any], path: str, **context: Any) -> Dict[str, Any]:
    params = {k: v for k, v in parsed.items() if k != "discipline"}
    queue = QUEUE_DISCIPLINES[parsed["discipline"]].normalize(params, path, **context)
    # Which field set the queue, for the budget check's message; load() removes it.
    queue["_field"] = path
    return queue


# Defaults of the two queues of the dumbbell, with their sources.
_BOTTLENECK_QUEUE_DEFAULT = (
    "limit_bdp",
    1.0,
    "rule of thumb: a queue of one bandwidth-delay product lets one Reno flow keep the "
    "link busy through its window halving (Villamizar & Song 1994, document 002)",
)
_ACCESS_QUEUE_DEFAULT = (
    "limit_packets",
    1000,
    "Linux default txqueuelen of an Ethernet interface (1000 packets)",
)
