"""The TBF shaper (Linux net/sched/sch_tbf.c with its default bfifo child; the settings as
iproute2's tc-tbf(8) takes them): its table, every default and rule with its source, and its
normalizer to the core's queue JSON (net/queue/tbf.rs). Registered in
:data:`fatpipe.scenario.queues.QUEUE_DISCIPLINES`. The policer (drops rather than delays
what exceeds a bucket) is an impairment (:mod:`.impairments`)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Dict

from ..units import PS_PER_S, format_rate, format_size
from .kinds import Duration, Rate, Size
from .schema import REQUIRED, UNSET, Field, ScenarioError, Table, _fail, _join

_TBF_C = "Linux net/sched/sch_tbf.c"
_TC_TBF = "iproute2 tc/q_tbf.c tbf_parse_opt"


def _tbf_table(_key: str, _value: Any, _source: str) -> Table:
    return Table(
        fields=(
            Field("rate", Rate(), "the shaped rate, bits per second of IP packets", REQUIRED,
                  f"required, as tc requires it ({_TC_TBF})"),
            Field(
                "burst",
                Size(minimum=1, example="32KB"),
                "the bucket's depth: what leaves at the line's rate after a quiet spell (the "
                "bucket starts full); at least the link's MTU",
                REQUIRED,
                f"required, as tc requires it ({_TC_TBF}); below the MTU {_TBF_C} tbf_change "
                "warns and then drops every larger packet, so fatpipe refuses it",
            ),
            Field(
                "limit",
                Size(minimum=1, example="100KB"),
                "most IP bytes waiting behind the bucket (the bfifo's limit); an arrival "
                "beyond it is dropped",
                UNSET,
                f"give exactly one of limit, latency, as tc requires ({_TC_TBF})",
            ),
            Field(
                "latency",
                Duration(example="50ms"),
                "the limit as the longest a packet may wait: limit = rate x latency + burst "
                "(with peakrate, the smaller of that and peakrate x latency + minburst)",
                UNSET,
                f"tc's conversion ({_TC_TBF})",
            ),
            Field(
                "peakrate",
                Rate(),
                "a second bucket's rate, above rate: bursts leave at this rate instead of "
                "the line's",
                UNSET,
                f"unset: no peak bucket, as tc; {_TBF_C} tbf_change refuses a peakrate not "
                "above rate",
            ),
            Field(
                "minburst",
                Size(minimum=1, example="1500"),
                "the peak bucket's depth (tc's mtu or minburst); at least the link's MTU; "
                "required with peakrate",
                UNSET,
                f"tc requires it with peakrate ({_TC_TBF})",
            ),
        ),
        doc="TBF, a token-bucket shaper (Linux sch_tbf with its default bfifo child): packets "
        "wait in a byte-limited FIFO and the one at its head leaves when a bucket of burst "
        "bytes, filling at rate and full at the start, holds its bytes (and, with peakrate, a "
        "second bucket of minburst bytes filling at peakrate); arrivals beyond the limit are "
        "dropped. Unlike a policer it delays, never drops, what exceeds the rate while the "
        "FIFO has room. Give exactly one of limit, latency.",
    )


def _normalize_tbf(params: Dict[str, Any], path: str, *, mtu_bytes: int, **_: Any) -> Dict[str, Any]:
    rate, burst, peak, minburst = params["rate"], params["burst"], params["peakrate"], params["minburst"]
    if burst < mtu_bytes:
        raise _fail(_join(path, "burst"), format_size(burst),
                    f"must be at least the link's MTU ({mtu_bytes} bytes): Linux (sch_tbf.c "
                    "tbf_change) warns and then drops every packet larger than the burst")
    if peak is not None and peak <= rate:
        raise _fail(_join(path, "peakrate"), format_rate(peak),
                    f"must be above rate ({format_rate(rate)}), as Linux requires (sch_tbf.c tbf_change)")
    if peak is not None and minburst is None:
        raise ScenarioError(f"{_join(path, 'minburst')}: missing; required with peakrate (tc requires mtu "
                            "with peakrate)", _join(path, "minburst"))
    if peak is None and minburst is not None:
        raise _fail(_join(path, "minburst"), format_size(minburst), "goes with peakrate, which is unset")
    if minburst is not None and minburst < mtu_bytes:
        raise _fail(_join(path, "minburst"), format_size(minburst),
                    f"must be at least the link's MTU ({mtu_bytes} bytes): no larger packet could leave")
    limit, latency = params["limit"], params["latency"]
    if limit is None and latency is None:
        raise ScenarioError(f"{_join(path, 'limit')}: missing; give limit or latency (one of them, as tc "
                            "requires)", _join(path, "limit"))
    if limit is not None and latency is not None:
        raise _fail(_join(path, "limit"), format_size(limit),
                    "latency is set too: give one of limit, latency (as tc requires)")
    if latency is not None:
        # tc: limit = rate x latency + burst, and with peakrate no more than peakrate x
        # latency + mtu (rates in bytes per second).
        limit = int(Fraction(rate * latency, 8 * PS_PER_S)) + burst
        if peak is not None:
            limit = min(limit, int(Fraction(peak * latency, 8 * PS_PER_S)) + minburst)
    if limit < mtu_bytes:
        raise _fail(_join(path, "limit"), format_size(limit),
                    f"must be at least the link's MTU ({mtu_bytes} bytes), so a full-size packet fits")
    return {
        "discipline": "tbf",
        "rate_bps": rate,
        "burst_bytes": burst,
        "limit_bytes": limit,
        "peakrate_bps": peak,
        "minburst_bytes": minburst,
    }


#: The discipline of this module: name -> (table factory, normalizer).
TBF_DISCIPLINES = {"tbf": (_tbf_table, _normalize_tbf)}
