"""A queue's limit as a scenario writes it (packets, bytes or a multiple of the BDP), shared
by every discipline: `queues.py` (drop-tail, RED) and `aqm.py` (CoDel, FQ-CoDel, PIE) read
the same keys, kinds and rules from here, so neither imports the other for them."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Dict, Optional, Sequence, Tuple

from ..units import PS_PER_S, U64_MAX, format_size
from .kinds import Integer, Real, Size
from .schema import UNSET, Derived, Field, Kind, ScenarioError, _join, _toml_literal

_LIMIT_KEYS = ("limit_packets", "limit_bytes", "limit_bdp")
_LIMIT_KINDS: Dict[str, Kind] = {
    "limit_packets": Integer(minimum=1, maximum=U64_MAX, example=100),
    "limit_bytes": Size(example="500KB"),
    "limit_bdp": Real(lower=0.0, example=1.0),
}
_LIMIT_MEANINGS = {
    "limit_packets": "most packets waiting (not counting the one being transmitted); "
    "an arriving packet that does not fit is dropped",
    "limit_bytes": "most IP bytes waiting; at least the MTU, so a full-size packet fits",
    "limit_bdp": "limit as a multiple of the bandwidth-delay product (this link's rate x the "
    "path's rtt), converted to packets of MTU size, rounded up, at least 1",
}


def _limit_fields(
    keys: Sequence[str],
    default_key: str,
    default_value: Any,
    default_source: str,
    when: str,
) -> Tuple[Field, ...]:
    """The limit keys of a discipline: ``default_key = default_value`` applies ``when``
    (e.g. "when no limit is set"); the other keys are simply unset by default."""
    if default_key not in keys:
        raise ValueError(f"default limit {default_key} is not one of {keys}")  # a schema bug
    return tuple(
        Field(
            key,
            _LIMIT_KINDS[key],
            _LIMIT_MEANINGS[key],
            Derived(f"{_toml_literal(default_value)} {when}") if key == default_key else UNSET,
            default_source if key == default_key else "",
        )
        for key in keys
    )


def _queue_limit(
    params: Dict[str, Any],
    path: str,
    keys: Sequence[str],
    *,
    rate_bps: int,
    rtt_ps: int,
    mtu_bytes: int,
    default_key: str,
    default_value: Any,
    apply_default: bool = True,
) -> Tuple[Optional[int], Optional[int]]:
    """(limit_packets, limit_bytes) from at most one of ``keys``; with none given, the
    default limit if ``apply_default``, else no limit at all (None, None)."""
    given = [k for k in keys if params.get(k) is not None]
    if len(given) > 1:
        raise ScenarioError(
            f"{path}: {' and '.join(given)} are both set; set at most one of {', '.join(keys)}",
            path,
        )
    if given:
        key, value = given[0], params[given[0]]
    elif apply_default:
        # The default is written as a user would write it; parse it the same way.
        key = default_key
        value = _LIMIT_KINDS[key].parse(default_value, _join(path, key))
    else:
        return None, None
    if key == "limit_packets":
        return value, None
    if key == "limit_bytes":
        if value < mtu_bytes:
            raise ScenarioError(
                f"{_join(path, key)}: {format_size(value)} is not allowed: must be at least the MTU "
                f"({mtu_bytes} bytes) so that one full-size packet fits",
                _join(path, key),
            )
        return None, value
    # BDP in bytes = rate x rtt / 8, in packets of MTU size; exact rational arithmetic so
    # that e.g. 100 Mb/s x 40 ms = 500,000 bytes = 333.3 -> 334 packets on every machine.
    bdp_packets = Fraction(repr(value)) * rate_bps * rtt_ps / (8 * PS_PER_S * mtu_bytes)
    return max(1, math.ceil(bdp_packets)), None
