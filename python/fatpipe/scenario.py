"""Scenario files: read, validate, and normalize for the core.

A user writes a scenario in TOML (or passes the same structure as a Python dict) with
quantities as people write them (``"100Mbps"``, ``"40ms"``). :func:`load_scenario` checks
every key and value and returns the *normalized scenario* of ``docs/core-interface.md``:
nodes, simplex links and flows, every quantity an integer in base units (bps, picoseconds,
bytes), every field present.

The module has three layers, so that later steps add shapes, queue disciplines and
congestion-control algorithms by adding entries rather than code paths:

1. **Schema** -- value kinds (:class:`Rate`, :class:`Duration`, :class:`Size`, ...) and
   containers (:class:`Table`, :class:`TableArray`, :class:`Tagged`) made of
   :class:`Field` entries: key, kind, meaning, default and the default's source. Parsing a
   table checks unknown keys, missing keys, types and single-value ranges, and names the
   field as the user wrote it. The reference in ``docs/scenario.md`` is generated from the
   same entries (:func:`format_reference`), so docs, defaults and errors cannot drift.
2. **Registries** -- :data:`SHAPES`, :data:`QUEUE_DISCIPLINES`, :data:`IMPAIRMENTS`,
   :data:`CC_ALGORITHMS`: each entry pairs a table of parameters with the function that
   turns parsed parameters into the core's JSON. Impairments are attached to links by name
   after a shape has built them (:func:`attach_impairments`), so every shape has them.
3. **Normalization** -- :func:`load` builds the network from the shape, then the flows, and
   checks what involves several values (MSS against MTU, stop after start, ...).

Every mistake raises :class:`ScenarioError` with one line:
``<field path>: <value> is not allowed: <what is allowed>``.
"""

from __future__ import annotations

import abc
import difflib
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .units import (
    PS_PER_S,
    U64_MAX,
    UnitError,
    describe_value,
    format_duration,
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
)

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.9/3.10 only
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

__all__ = [
    "ScenarioError",
    "load_scenario",
    "load",
    "Loaded",
    "read_scenario_file",
    "format_reference",
    "SHAPES",
    "QUEUE_DISCIPLINES",
    "IMPAIRMENTS",
    "CC_ALGORITHMS",
    "attach_impairments",
    "red_automatic_parameters",
    "IPV4_TCP_HEADER_BYTES",
    "TIMESTAMPS_OPTION_BYTES",
]

#: IPv4 (20) + TCP (20) header bytes without options (RFC 791, RFC 9293).
IPV4_TCP_HEADER_BYTES = 40
#: The RFC 7323 timestamps option: 10 bytes, padded to 12 with two NOPs (as Linux sends it).
TIMESTAMPS_OPTION_BYTES = 12
#: IPv4 (20) + UDP (8) header bytes (RFC 791, RFC 768): a datagram's IP packet is its payload
#: plus these.
IPV4_UDP_HEADER_BYTES = 28
#: The largest UDP payload an IPv4 datagram can carry (65535 - 28).
UDP_MAX_PAYLOAD_BYTES = 65535 - IPV4_UDP_HEADER_BYTES
#: Counts of segments and packets are 32-bit in the core.
U32_MAX = 2**32 - 1

PathLike = Union[str, "os.PathLike[str]"]


class ScenarioError(ValueError):
    """A mistake in a scenario, explained on one line.

    ``field`` is the path of the offending field as the user wrote it (``flows[0].tcp.mss``),
    or None for problems of the whole document (such as a TOML syntax error).
    """

    def __init__(self, message: str, field: Optional[str] = None) -> None:
        # One line, always: the CLI prints it after "fatpipe: error: ".
        message = " ".join(message.splitlines())
        super().__init__(message)
        self.field = field


def _fail(path: str, value: Any, allowed: str) -> ScenarioError:
    """The standard error: ``<path>: <value> is not allowed: <allowed>``."""
    return ScenarioError(f"{path}: {describe_value(value)} is not allowed: {allowed}", path)


def _fail_number(path: str, x: float, allowed: str) -> ScenarioError:
    """:func:`_fail` for a parsed number, shown as a person writes it (30, not 30.0)."""
    return ScenarioError(f"{path}: {_num(x)} is not allowed: {allowed}", path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ======================================================================================
# 1. Schema
# ======================================================================================


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: Default of a field that must be given.
REQUIRED = _Marker("REQUIRED")
#: Default of an optional field that is simply absent (None in the parsed table).
UNSET = _Marker("UNSET")


@dataclass(frozen=True)
class Derived:
    """A default computed from other values at normalization time.

    The parsed table holds None; ``text`` says (in the reference docs) how it is computed.
    """

    text: str


class Kind(abc.ABC):
    """What a field's value may be. Subclasses parse a user value into a Python value."""

    #: How the reference docs name the type, e.g. ``"rate"`` or ``"integer >= 1"``.
    type_doc: str = ""

    @abc.abstractmethod
    def parse(self, value: Any, path: str) -> Any:
        """The Python value of ``value``; raises :class:`ScenarioError` naming ``path``."""


class Scalar(Kind):
    """A single value. ``convert`` raises :class:`UnitError`; ``parse`` adds the path."""

    @abc.abstractmethod
    def convert(self, value: Any) -> Any:
        """The base-unit value of ``value``; raises :class:`UnitError`."""

    def parse(self, value: Any, path: str) -> Any:
        try:
            return self.convert(value)
        except UnitError as err:
            raise ScenarioError(f"{path}: {err}", path) from None


class Rate(Scalar):
    """A positive rate; parsed to int bits per second."""

    type_doc = "rate (bit/s)"

    def convert(self, value: Any) -> int:
        return parse_rate(value)


class Duration(Scalar):
    """A duration; parsed to int picoseconds. ``positive`` refuses zero."""

    def __init__(self, positive: bool = True, example: str = "40ms") -> None:
        self.positive = positive
        self.example = example
        self.type_doc = "duration > 0" if positive else "duration >= 0"

    def convert(self, value: Any) -> int:
        ps = parse_duration(value)
        if self.positive and ps == 0:
            raise UnitError(value, f'must be positive, such as "{self.example}"')
        return ps


class Size(Scalar):
    """An amount of data; parsed to int bytes within [minimum, maximum]."""

    def __init__(self, minimum: int = 0, maximum: int = U64_MAX, example: Any = "64KiB") -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.example = example
        self.type_doc = "size (bytes)" if minimum == 0 else f"size (bytes) >= {minimum}"
        if maximum != U64_MAX:
            self.type_doc = f"size (bytes), {minimum} to {maximum}"

    def convert(self, value: Any) -> int:
        nbytes = parse_size(value)
        if nbytes < self.minimum:
            at_least = (
                "must be positive"
                if self.minimum == 1
                else f"must be at least {self.minimum} bytes"
            )
            raise UnitError(value, f"{at_least}, such as {_toml_literal(self.example)}")
        if nbytes > self.maximum:
            raise UnitError(value, f"must be at most {self.maximum} bytes")
        return nbytes


class Integer(Scalar):
    """A whole number (a TOML integer; never a boolean or a float) within [minimum, maximum]."""

    def __init__(self, minimum: int = 0, maximum: int = U32_MAX, example: int = 10) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.example = example
        self.type_doc = f"integer >= {minimum}"

    def convert(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UnitError(
                value, f"expected a whole number >= {self.minimum}, such as {self.example}"
            )
        if value < self.minimum:
            raise UnitError(value, f"must be at least {self.minimum}")
        if value > self.maximum:
            raise UnitError(value, f"must be at most {self.maximum}")
        return value


class InitialWindow(Integer):
    """Segments, or ``"rfc3390"`` for RFC 3390's min(4 MSS, max(2 MSS, 4380 bytes)), which
    depends on the MSS and is computed at normalization."""

    RFC3390 = "rfc3390"

    def __init__(self) -> None:
        super().__init__(minimum=1, example=10)
        self.type_doc = 'integer >= 1, or "rfc3390"'

    def convert(self, value: Any) -> Any:
        if value == self.RFC3390:
            return value
        if isinstance(value, str):
            raise UnitError(value, 'expected a number of segments such as 10, or "rfc3390"')
        return super().convert(value)


def rfc3390_initial_window(mss_bytes: int) -> int:
    """RFC 3390: IW = min(4 * MSS, max(2 * MSS, 4380 bytes)), in whole segments."""
    return max(1, min(4 * mss_bytes, max(2 * mss_bytes, 4380)) // mss_bytes)


class Real(Scalar):
    """A finite number (integer or float, never a boolean) in an open or closed interval.

    ``lower``/``upper`` are bounds (None for none); the ``*_open`` flags exclude them.
    """

    def __init__(
        self,
        lower: Optional[float] = None,
        upper: Optional[float] = None,
        lower_open: bool = True,
        upper_open: bool = True,
        example: float = 1.0,
    ) -> None:
        self.lower, self.upper = lower, upper
        self.lower_open, self.upper_open = lower_open, upper_open
        self.example = example
        # "0 < x < 1", "0 < x", "x <= 10": the interval as a person would write it.
        low = f"{_num(lower)} {'<' if lower_open else '<='} " if lower is not None else ""
        high = f" {'<' if upper_open else '<='} {_num(upper)}" if upper is not None else ""
        self.range_doc = f"{low}x{high}"
        self.type_doc = "number" if lower is None and upper is None else f"number, {self.range_doc}"

    def convert(self, value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise UnitError(value, f"expected a number such as {_num(self.example)}")
        x = float(value)
        too_low = self.lower is not None and (
            x <= self.lower if self.lower_open else x < self.lower
        )
        too_high = self.upper is not None and (
            x >= self.upper if self.upper_open else x > self.upper
        )
        if too_low or too_high:
            raise UnitError(value, f"expected a number x with {self.range_doc}")
        return x


class Boolean(Scalar):
    type_doc = "boolean"

    def convert(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise UnitError(value, "expected true or false")
        return value


class Name(Scalar):
    """A name for a scenario or flow: printable, no path separators (names become file and
    directory names and plot labels)."""

    type_doc = "string"
    _BAD = re.compile(r"[\x00-\x1f\x7f/\\]")

    def convert(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise UnitError(value, 'expected a non-empty string, such as "reno"')
        # "." and ".." would name the parent directory in runs/<name>.
        if self._BAD.search(value) or value != value.strip() or not value.strip("."):
            raise UnitError(
                value,
                "a name may not contain control characters, / or \\, be only dots, "
                "nor start or end with a space",
            )
        return value


class Choice(Scalar):
    """One of a fixed set of strings."""

    def __init__(self, options: Sequence[str]) -> None:
        self.options = tuple(options)
        self.type_doc = "one of " + ", ".join(json.dumps(o) for o in self.options)

    def convert(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise UnitError(
                value, "expected one of: " + ", ".join(json.dumps(o) for o in self.options)
            )
        return value


@dataclass(frozen=True)
class Field:
    """One key of a table.

    ``default`` is :data:`REQUIRED`, :data:`UNSET`, a :class:`Derived` rule, or a literal
    written as a user would write it (``"40ms"``), which is parsed by ``kind`` like user
    input, so the reference docs show defaults in the user's notation.
    ``source`` says where the default comes from (an RFC, Linux, a source document).
    """

    key: str
    kind: Kind
    doc: str
    default: Any = REQUIRED
    source: str = ""


@dataclass(frozen=True)
class Table(Kind):
    """A TOML table with a fixed set of keys."""

    fields: Tuple[Field, ...]
    doc: str = ""
    type_doc: str = "table"

    def keys(self) -> List[str]:
        return [f.key for f in self.fields]

    def parse(self, value: Any, path: str, extra_keys: Sequence[str] = ()) -> Dict[str, Any]:
        """Parses ``value`` (a mapping) into {key: parsed value}, defaults filled in.

        Unknown keys are reported before missing ones: a misspelt required key is then
        reported as the typo it is, not as a missing key. ``extra_keys`` are keys the
        caller consumed (a :class:`Tagged` table's tag) and are allowed here too.
        """
        if not isinstance(value, Mapping):
            raise _fail(path or "scenario", value, "expected a table")
        allowed = list(extra_keys) + self.keys()
        for key in value:
            if key in extra_keys:
                continue
            if key not in self.keys():
                message = (
                    f"{_join(path, str(key))}: unknown key; allowed keys: {', '.join(allowed)}"
                )
                close = difflib.get_close_matches(str(key), allowed, n=1)
                if close:
                    message += f'; did you mean "{close[0]}"?'
                raise ScenarioError(message, _join(path, str(key)))
        parsed: Dict[str, Any] = {}
        for f in self.fields:
            sub = _join(path, f.key)
            if f.key in value:
                parsed[f.key] = f.kind.parse(value[f.key], sub)
            elif f.default is REQUIRED:
                raise ScenarioError(f"{sub}: missing; required", sub)
            elif f.default is UNSET or isinstance(f.default, Derived):
                parsed[f.key] = None
            else:
                parsed[f.key] = f.kind.parse(f.default, sub)
        return parsed


@dataclass(frozen=True)
class TableArray(Kind):
    """A TOML array of tables (``[[flows]]``) with at least ``min_items`` entries."""

    #: The entries' table, or a :class:`Tagged` table (``[[topology.impairments]]`` with
    #: ``kind = ...``).
    table: Union[Table, "Tagged"]
    min_items: int = 1
    header: str = ""
    type_doc: str = "array of tables"

    def parse(self, value: Any, path: str) -> List[Dict[str, Any]]:
        if isinstance(value, Mapping):
            raise _fail(
                path,
                value,
                f"expected an array of tables: write [[{self.header or path}]] (double brackets), once per entry",
            )
        if not isinstance(value, (list, tuple)):
            raise _fail(path, value, f"expected an array of tables, [[{self.header or path}]]")
        if len(value) < self.min_items:
            count = "one" if self.min_items == 1 else str(self.min_items)
            raise _fail(
                path, value, f"at least {count} [[{self.header or path}]] table(s) required"
            )
        return [self.table.parse(item, f"{path}[{i}]") for i, item in enumerate(value)]


@dataclass(frozen=True)
class Tagged(Kind):
    """A table whose keys depend on one of them, the tag (``shape``, ``discipline``,
    ``algorithm``): each tag value has its own :class:`Table` of further keys.

    With ``shorthand`` the whole value may be just the tag as a string
    (``cc = "reno"`` means ``[flows.cc] algorithm = "reno"`` with default parameters).
    """

    tag: str
    variants: Mapping[str, Table]
    default_tag: Optional[str] = None
    shorthand: bool = False
    tag_doc: str = ""
    type_doc: str = "table"

    def parse(self, value: Any, path: str) -> Dict[str, Any]:
        choices = ", ".join(json.dumps(v) for v in self.variants)
        if self.shorthand and isinstance(value, str):
            table: Mapping[str, Any] = {self.tag: value}
            tag_path = path
        elif isinstance(value, Mapping):
            table = value
            tag_path = _join(path, self.tag)
        else:
            expected = "a table" + (f" or a name ({choices})" if self.shorthand else "")
            raise _fail(path, value, f"expected {expected}")
        if self.tag in table:
            tag = table[self.tag]
        elif self.default_tag is not None:
            tag = self.default_tag
        else:
            raise ScenarioError(f"{tag_path}: missing; required", tag_path)
        if not isinstance(tag, str) or tag not in self.variants:
            raise _fail(tag_path, tag, f"expected one of: {choices}")
        parsed = self.variants[tag].parse(table, path, extra_keys=(self.tag,))
        return {self.tag: tag, **parsed}


def _num(x: float) -> str:
    """0.5 -> "0.5", 1.0 -> "1": numbers in messages as a person would write them."""
    return f"{x:g}"


def _toml_literal(value: Any) -> str:
    """A default as it would be written in TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


# ======================================================================================
# 2. Registries: shapes, queue disciplines, congestion control algorithms
# ======================================================================================


@dataclass
class Network:
    """What a topology shape produces: core nodes and links, and where flows run."""

    nodes: List[Dict[str, Any]]
    links: List[Dict[str, Any]]
    #: direction name -> (src node index, dst node index), of pair 0
    endpoints: Dict[str, Tuple[int, int]]
    #: the smallest MTU on any path a flow can take (MSS is checked against it)
    path_mtu_bytes: int
    #: per host pair (a flow's ``pair``): direction -> (src, dst); None: one pair, ``endpoints``
    pairs: Optional[List[Dict[str, Tuple[int, int]]]] = None
    #: what the pairs are, for messages ("0 = sender0 -> receiver0, ...")
    pair_doc: str = ""
    #: shapes whose flows name their hosts (src, dst) instead of pair and direction:
    #: host name -> node index
    hosts: Optional[Dict[str, int]] = None
    #: the shape's name, for messages (set by :func:`load`)
    shape: str = "topology"
    #: groups of parallel links a packet chooses among (``parallel_paths``): the core's
    #: ``splits``
    splits: List[Dict[str, Any]] = field(default_factory=list)
    #: explicit routes (custom topologies): the core's ``routes``
    routes: List[Dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Shape:
    """A named topology: its parameters and the function that builds the network.

    Keys every shape has (:data:`SHAPE_COMMON_KEYS`, such as ``impairments``) are handled
    by :func:`load` after ``build``; ``build`` gets the shape's own keys only. Make the
    table with :func:`shape_table`, which adds them.
    """

    table: Table
    build: Callable[[Dict[str, Any], str], Network]


@dataclass(frozen=True)
class QueueDiscipline:
    """A queue discipline: a table of parameters given the default limit (which differs
    between bottleneck and access queues), and the normalizer to the core's queue JSON."""

    table: Callable[[str, Any, str], Table]
    normalize: Callable[..., Dict[str, Any]]


@dataclass(frozen=True)
class Algorithm:
    """A congestion control algorithm: its parameters and the normalizer to the core's JSON."""

    table: Table
    normalize: Callable[[Dict[str, Any], str], Dict[str, Any]]


# ---- queue disciplines ---------------------------------------------------------------

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


def _droptail_table(default_key: str, default_value: Any, default_source: str) -> Table:
    """Drop-tail parameters; ``default_key = default_value`` applies when no limit (and no
    cells) is set."""
    return Table(
        fields=(
            *_limit_fields(
                _LIMIT_KEYS, default_key, default_value, default_source,
                "when no limit and no cells are set",
            ),
            Field(
                "cell_size",
                Size(minimum=1, maximum=U32_MAX, example=2048),
                "size of one buffer cell, bytes: the router stores a packet in "
                "ceil(IP bytes / cell_size) cells (document 002's ANSNET routers: 2 KB cells, "
                "so a packet over 4 KB takes 3); set together with limit_cells",
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
        ),
        doc="First in, first out; arrivals that do not fit are dropped. Set at most one of "
        "limit_packets, limit_bytes, limit_bdp, and optionally buffer cells (cell_size and "
        "limit_cells), which apply as well.",
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
    return {
        "discipline": "droptail",
        "limit_packets": limit_packets,
        "limit_bytes": limit_bytes,
        "cell_bytes": cell_bytes,
        "limit_cells": limit_cells,
    }


#: RED's hard limit counts packets (the core's RED has no byte or cell limit).
_RED_LIMIT_KEYS = ("limit_packets", "limit_bdp")
#: ns-2 automatic thresholds (red.cc): min_th = max(5, target queue / 2), max_th = 3 min_th.
RED_MIN_TH_FLOOR_PACKETS = 5.0
RED_MAX_TH_OVER_MIN_TH = 3.0


def red_automatic_parameters(
    rate_bps: int, mean_packet_bytes: int, target_delay_ps: int
) -> Tuple[float, float, float]:
    """(min_th, max_th, w_q) as ns-2's red.cc chooses them when left unset, for a link of
    ``rate_bps``: C = rate / (8 x mean packet size) packets/s, min_th = max(5,
    target_delay x C / 2), max_th = 3 x min_th, w_q = 1 - exp(-1 / C). The core computes the
    same; this is for documentation and checks."""
    packets_per_s = rate_bps / (8 * mean_packet_bytes)
    min_th = max(RED_MIN_TH_FLOOR_PACKETS, target_delay_ps / PS_PER_S * packets_per_s / 2)
    return min_th, RED_MAX_TH_OVER_MIN_TH * min_th, 1.0 - math.exp(-1.0 / packets_per_s)


_RED_AUTOMATIC = "C = link rate / (8 x mean_packet_size) packets/s"


def _red_table(default_key: str, default_value: Any, default_source: str) -> Table:
    """RED parameters; the hard limit defaults as the drop-tail limit of the same queue."""
    return Table(
        fields=(
            *_limit_fields(
                _RED_LIMIT_KEYS, default_key, default_value,
                f"as for drop-tail: {default_source}", "when no limit is set",
            ),
            Field(
                "min_th",
                Real(lower=0.0, lower_open=False, example=5.0),
                "lower threshold of the average queue, packets: below it nothing is dropped "
                "early; must be below the hard limit",
                Derived(f"automatic: max(5, target_delay x C / 2), {_RED_AUTOMATIC}"),
                "ns-2 red.cc automatic thresholds (thresh_ 0; Floyd, Gummadi and Shenker, "
                "Adaptive RED, 2001)",
            ),
            Field(
                "max_th",
                Real(lower=0.0, example=15.0),
                "upper threshold of the average queue, packets (greater than min_th): the "
                "early-drop probability reaches max_p there; setting it needs min_th too",
                Derived("3 x min_th"),
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
        "queue. Set at most one of limit_packets, limit_bdp. Queue, thresholds and limit "
        "count packets whatever their size.",
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
    limit_packets, _ = _queue_limit(
        params,
        path,
        _RED_LIMIT_KEYS,
        rate_bps=rate_bps,
        rtt_ps=rtt_ps,
        mtu_bytes=mtu_bytes,
        default_key=default_key,
        default_value=default_value,
    )
    min_th, max_th = params["min_th"], params["max_th"]
    if max_th is not None and min_th is None:
        raise _fail_number(
            _join(path, "max_th"),
            max_th,
            "give min_th too, or neither (both automatic: min_th = max(5, target_delay x C / 2), "
            "max_th = 3 x min_th)",
        )
    if min_th is not None:
        if max_th is None:
            # ns-2 derives the missing upper threshold the same way (red.cc).
            if min_th == 0:
                raise _fail_number(
                    _join(path, "min_th"),
                    min_th,
                    "with max_th unset (3 x min_th) min_th must be positive; give max_th "
                    "to start early drops at an empty queue",
                )
            max_th = RED_MAX_TH_OVER_MIN_TH * min_th
        elif not min_th < max_th:
            raise _fail_number(_join(path, "max_th"), max_th, f"must be greater than min_th ({_num(min_th)})")
        if limit_packets is not None and min_th >= limit_packets:
            raise _fail_number(
                _join(path, "min_th"),
                min_th,
                f"must be below the hard limit ({limit_packets} packets): the average queue "
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
    }


#: Queue disciplines by name. Each gives (table factory, normalizer).
QUEUE_DISCIPLINES: Dict[str, QueueDiscipline] = {
    "droptail": QueueDiscipline(table=_droptail_table, normalize=_normalize_droptail),
    "red": QueueDiscipline(table=_red_table, normalize=_normalize_red),
}


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
    return QUEUE_DISCIPLINES[parsed["discipline"]].normalize(params, path, **context)


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


# ---- impairments ----------------------------------------------------------------------
# Losses on entering a link, attached by link name after a shape has built its links: the
# same [[topology.impairments]] entries work on any shape.


class LinkName(Scalar):
    """The name of one of the shape's links; checked against them once the links exist."""

    type_doc = "link name"

    def convert(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise UnitError(value, 'expected the name of a link, such as "bottleneck"')
        return value


class OutageWindows(Kind):
    """``[["10s", "10.5s"], ...]``: half-open windows [start, end), in time order, not
    overlapping; parsed to a list of (start_ps, end_ps)."""

    type_doc = "array of [start, end] durations"
    _EXAMPLE = '[["10s", "10.5s"]]'

    def parse(self, value: Any, path: str) -> List[Tuple[int, int]]:
        if not isinstance(value, (list, tuple)):
            raise _fail(path, value, f"expected an array of [start, end] windows, such as {self._EXAMPLE}")
        if not value:
            raise _fail(path, value, f"at least one [start, end] window, such as {self._EXAMPLE}")
        moment = Duration(positive=False, example="10s")
        windows: List[Tuple[int, int]] = []
        for i, item in enumerate(value):
            sub = f"{path}[{i}]"
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise _fail(sub, item, 'expected [start, end], two durations such as ["10s", "10.5s"]')
            start, end = (moment.parse(v, f"{sub}[{j}]") for j, v in enumerate(item))
            if end <= start:
                raise ScenarioError(
                    f"{sub}: [{format_duration(start)}, {format_duration(end)}) is not allowed: "
                    "the end must be after the start",
                    sub,
                )
            if windows and start < windows[-1][1]:
                raise ScenarioError(
                    f"{sub}: [{format_duration(start)}, {format_duration(end)}) is not allowed: "
                    f"windows must be in time order and not overlap ({path}[{i - 1}] ends at "
                    f"{format_duration(windows[-1][1])})",
                    sub,
                )
            windows.append((start, end))
        return windows


def _probability(example: float) -> Real:
    return Real(lower=0.0, upper=1.0, lower_open=False, upper_open=False, example=example)


_IMPAIRMENT_LINK = Field(
    "link",
    LinkName(),
    'the link whose entering packets this impairs, by name ("bottleneck", "bottleneck_rev", '
    '"access_fwd_sender", ...: the names of the shape\'s links)',
)


@dataclass(frozen=True)
class ImpairmentKind:
    """An impairment: its parameters and the normalizer to the core's JSON. ``normalize``
    gets the parsed entry (without ``kind`` and ``link``), its path and the run's duration."""

    table: Table
    normalize: Callable[[Dict[str, Any], str, int], Dict[str, Any]]


def _normalize_bernoulli(params: Dict[str, Any], path: str, duration_ps: int) -> Dict[str, Any]:
    return {"kind": "bernoulli", "probability": float(params["probability"])}


def _normalize_gilbert_elliott(params: Dict[str, Any], path: str, duration_ps: int) -> Dict[str, Any]:
    return {"kind": "gilbert_elliott", **{k: float(v) for k, v in params.items()}}


def _normalize_outage(params: Dict[str, Any], path: str, duration_ps: int) -> Dict[str, Any]:
    windows, start, length = params["windows"], params["start"], params["duration"]
    if windows is not None:
        for key in ("start", "duration"):
            if params[key] is not None:
                raise ScenarioError(
                    f"{_join(path, key)}: not allowed together with windows: give either windows "
                    "or start and duration",
                    _join(path, key),
                )
        for i, (begin, end) in enumerate(windows):
            if end > duration_ps:
                sub = f"{_join(path, 'windows')}[{i}]"
                raise ScenarioError(
                    f"{sub}: [{format_duration(begin)}, {format_duration(end)}) is not allowed: "
                    f"an outage must end by the end of the run (duration {format_duration(duration_ps)})",
                    sub,
                )
    else:
        if start is None or length is None:
            missing, other = ("start", "duration") if start is None else ("duration", "start")
            given = f" with {other}" if params[other] is not None else ""
            raise ScenarioError(
                f"{_join(path, missing)}: missing; required{given} (give windows = "
                '[["10s", "10.5s"], ...], or one outage as start and duration)',
                _join(path, missing),
            )
        if start + length > duration_ps:
            sub = _join(path, "duration")
            raise ScenarioError(
                f"{sub}: {format_duration(length)} is not allowed: the outage from "
                f"{format_duration(start)} would end at {format_duration(start + length)}, after "
                f"the end of the run (duration {format_duration(duration_ps)})",
                sub,
            )
        windows = [(start, start + length)]
    return {"kind": "outage", "windows_ps": [[begin, end] for begin, end in windows]}


#: Impairments by ``kind``.
IMPAIRMENTS: Dict[str, ImpairmentKind] = {
    "bernoulli": ImpairmentKind(
        Table(
            fields=(
                _IMPAIRMENT_LINK,
                Field(
                    "probability",
                    _probability(0.01),
                    "probability that a packet entering the link is lost, independently of "
                    "all others",
                ),
            ),
            doc="Independent (Bernoulli) loss: the loss model behind the TCP response "
            "functions (Mathis et al. 1997; RFC 3649).",
        ),
        _normalize_bernoulli,
    ),
    "gilbert_elliott": ImpairmentKind(
        Table(
            fields=(
                _IMPAIRMENT_LINK,
                Field(
                    "p_good_to_bad",
                    Real(lower=0.0, upper=1.0, upper_open=False, example=0.001),
                    "per-packet probability of moving from the Good state to the Bad state",
                ),
                Field(
                    "p_bad_to_good",
                    Real(lower=0.0, upper=1.0, upper_open=False, example=0.25),
                    "per-packet probability of moving from Bad back to Good; with loss_bad = 1 "
                    "the mean loss burst is 1 / p_bad_to_good packets",
                ),
                Field(
                    "loss_good",
                    _probability(0.0),
                    "loss probability of a packet in the Good state",
                    0.0,
                    "Gilbert 1960: no losses in Good (Elliott 1963 allows some)",
                ),
                Field(
                    "loss_bad",
                    _probability(1.0),
                    "loss probability of a packet in the Bad state",
                    1.0,
                    "the simple Gilbert model: every packet in Bad is lost",
                ),
            ),
            doc="Bursty loss (Gilbert 1960, Elliott 1963): a two-state Markov chain, Good and "
            "Bad, advanced once per packet entering the link, starting in Good; each state "
            "has its own loss probability. Long-run loss rate: "
            "(p_good_to_bad x loss_bad + p_bad_to_good x loss_good) / (p_good_to_bad + "
            "p_bad_to_good).",
        ),
        _normalize_gilbert_elliott,
    ),
    "outage": ImpairmentKind(
        Table(
            fields=(
                _IMPAIRMENT_LINK,
                Field(
                    "windows",
                    OutageWindows(),
                    'outage windows [start, end) from the start of the run, such as [["10s", '
                    '"10.5s"]]; in time order, not overlapping, each ending by the end of the run',
                    UNSET,
                    "unset: one window given as start and duration",
                ),
                Field(
                    "start",
                    Duration(positive=False, example="10s"),
                    "start of a single outage (with duration; instead of windows)",
                    UNSET,
                    "unset: the outages are given as windows",
                ),
                Field(
                    "duration",
                    Duration(positive=True, example="500ms"),
                    "length of a single outage (with start; instead of windows)",
                    UNSET,
                    "unset: the outages are given as windows",
                ),
            ),
            doc="Total outages (document 004: 0.5 s and 3 s): every packet entering the link "
            "from start up to, not including, end is lost. Give windows, or start and "
            "duration for one outage.",
        ),
        _normalize_outage,
    ),
}

#: One member of a ``parallel_paths`` impairment.
_PARALLEL_PATH = Table(
    fields=(
        Field("probability", Real(lower=0.0, upper=1.0, lower_open=True, upper_open=False, example=0.3),
              "probability that a packet takes this path (the paths' probabilities sum to 1)"),
        Field("rate", Rate(), "the path's transmission rate"),
        Field("delay", Duration(positive=False, example="100ms"), "the path's one-way propagation delay"),
        Field(
            "limit_packets",
            Integer(minimum=1, example=100),
            "the path's drop-tail queue, packets",
            Derived("the split link's queue"),
            "the link's own queue settings, one copy per path (dummynet gives every pipe its own queue)",
        ),
    ),
    doc="One path of a parallel_paths split.",
)


def _normalize_parallel_paths(params: Dict[str, Any], path: str, duration_ps: int) -> Dict[str, Any]:
    paths = params["paths"]
    total = sum(p["probability"] for p in paths)
    if abs(total - 1.0) > 1e-9:
        sub = _join(path, "paths")
        raise ScenarioError(
            f"{sub}: probabilities sum to {_num(total)}, not allowed: they must sum to 1 "
            "(document 004's three pipes: 0.3, 0.35, 0.35)",
            sub,
        )
    # Not a per-link impairment in the core: attach_impairments turns it into links and a
    # split.
    return {"kind": "parallel_paths", "paths": paths}


IMPAIRMENTS["parallel_paths"] = ImpairmentKind(
    Table(
        fields=(
            _IMPAIRMENT_LINK,
            Field("paths", TableArray(_PARALLEL_PATH, min_items=2, header="topology.impairments.paths"),
                  "the paths, at least two ([[topology.impairments.paths]] or an array of inline tables)"),
        ),
        doc="Parallel paths that reorder (document 004's three dummynet pipes chosen per packet "
        "with ipfw prob): the link is replaced by one link per path, named <link>.path0, "
        "<link>.path1, ..., each with its own rate, delay and queue, and every packet entering "
        "takes one of them at random with the given probabilities, so packets on a faster path "
        "overtake those on a slower one. Other impairments on the same link apply to every path.",
    ),
    _normalize_parallel_paths,
)

_IMPAIRMENTS_FIELD = Field(
    "impairments",
    TableArray(
        Tagged(
            tag="kind",
            variants={name: k.table for name, k in IMPAIRMENTS.items()},
            tag_doc="impairment",
        ),
        min_items=0,
        header="topology.impairments",
    ),
    "losses of packets entering a link, besides queue overflow ([[topology.impairments]], "
    "one table per impairment); several on one link apply in the order given, and a packet "
    "lost to one is not offered to the next",
    [],
    "none: packets are lost only to queues",
)


def attach_impairments(
    network: Network, entries: List[Dict[str, Any]], path: str, duration_ps: int, shape: str
) -> None:
    """Normalizes parsed ``[[topology.impairments]]`` entries and appends each to its link's
    ``impairments`` list (every link gets the key). Works on any shape's network."""
    names = [link["name"] for link in network.links]
    for link in network.links:
        link["impairments"] = []
    splits: Dict[str, Tuple[int, List[Dict[str, Any]]]] = {}
    for i, entry in enumerate(entries):
        sub = f"{path}[{i}]"
        name = entry["link"]
        if name not in names:
            allowed = f"expected a link of the {shape}: " + ", ".join(json.dumps(n) for n in names)
            close = difflib.get_close_matches(name, names, n=1)
            if close:
                allowed += f'; did you mean "{close[0]}"?'
            raise _fail(_join(sub, "link"), name, allowed)
        params = {k: v for k, v in entry.items() if k not in ("kind", "link")}
        spec = IMPAIRMENTS[entry["kind"]].normalize(params, sub, duration_ps)
        if spec["kind"] == "parallel_paths":
            if name in splits:
                raise _fail(_join(sub, "link"), name, f"one parallel_paths per link ({path}[{splits[name][0]}] splits it already)")
            splits[name] = (i, spec["paths"])
            continue
        network.links[names.index(name)]["impairments"].append(spec)
    for name, (_, paths) in splits.items():
        _split_link(network, names.index(name), paths)


def _split_link(network: Network, index: int, paths: List[Dict[str, Any]]) -> None:
    """Replaces link ``index`` by one link per path (the first in its place, so routes found
    through it still hold) and records the split for the core."""
    original = network.links[index]
    members = []
    for j, p in enumerate(paths):
        link = json.loads(json.dumps(original))
        link.update(name=f"{original['name']}.path{j}", rate_bps=p["rate"], delay_ps=p["delay"])
        if p["limit_packets"] is not None:
            link["queue"] = {"discipline": "droptail", "limit_packets": p["limit_packets"], "limit_bytes": None,
                             "cell_bytes": None, "limit_cells": None}
        if j == 0:
            network.links[index] = link
            members.append(index)
        else:
            network.links.append(link)
            members.append(len(network.links) - 1)
    network.splits.append({
        "name": original["name"],
        "links": members,
        "probabilities": [float(p["probability"]) for p in paths],
    })


# ---- topology shapes -----------------------------------------------------------------

_COMMON_LINK_FIELDS = (
    Field(
        "mtu",
        Size(minimum=68, maximum=65535, example=1500),
        "largest IP packet, bytes, on every link",
        1500,
        "Ethernet (RFC 894); 68 is the IPv4 minimum (RFC 791), 65535 the maximum",
    ),
    Field(
        "framing_bytes",
        Size(maximum=65535, example=38),
        "link-layer bytes added to every packet on the wire (they take transmission time but "
        "carry no IP data); 0 models ns-2-style links",
        38,
        "Ethernet: 14 header + 4 FCS + 8 preamble and start delimiter + 12 inter-frame gap "
        "(IEEE 802.3)",
    ),
)

#: Keys of [topology] that every shape has, handled independently of the shape.
SHAPE_COMMON_KEYS = ("impairments",)


def shape_table(*fields: Field, doc: str) -> Table:
    """A shape's table: its own fields, then the keys every shape has (impairments)."""
    return Table(fields=(*fields, _IMPAIRMENTS_FIELD), doc=doc)


class DurationList(Kind):
    """An array of non-negative durations (one per host pair); parsed to int picoseconds."""

    type_doc = "array of durations >= 0"
    _EXAMPLE = '["10ms", "40ms"]'

    def parse(self, value: Any, path: str) -> List[int]:
        if not isinstance(value, (list, tuple)) or not value:
            raise _fail(path, value, f"expected an array of durations, one per pair, such as {self._EXAMPLE}")
        moment = Duration(positive=False, example="10ms")
        return [moment.parse(v, f"{path}[{i}]") for i, v in enumerate(value)]


def _link(
    name: str, src: int, dst: int, rate_bps: int, delay_ps: int, queue: Dict[str, Any],
    topo: Dict[str, Any],
) -> Dict[str, Any]:
    """One simplex link of the core (impairments are attached later by name)."""
    return {
        "name": name,
        "from": src,
        "to": dst,
        "rate_bps": rate_bps,
        "delay_ps": delay_ps,
        "framing_bytes": topo["framing_bytes"],
        "mtu_bytes": topo["mtu"],
        "queue": dict(queue),
    }


def _two_queues(
    topo: Dict[str, Any], path: str, bottleneck_bps: int, access_bps: int, rtt_ps: int,
    access_default: Tuple[str, Any, str],
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(bottleneck queue, access queue) of a shape with [topology.queue] and
    [topology.access_queue]; limit_bdp multiplies each link's rate by ``rtt_ps``."""
    bottleneck = _normalize_queue(
        topo["queue"], _join(path, "queue"), rate_bps=bottleneck_bps, rtt_ps=rtt_ps,
        mtu_bytes=topo["mtu"], default_key=_BOTTLENECK_QUEUE_DEFAULT[0],
        default_value=_BOTTLENECK_QUEUE_DEFAULT[1],
    )
    access = _normalize_queue(
        topo["access_queue"], _join(path, "access_queue"), rate_bps=access_bps, rtt_ps=rtt_ps,
        mtu_bytes=topo["mtu"], default_key=access_default[0], default_value=access_default[1],
    )
    return bottleneck, access


def _pairs_of(senders: Sequence[int], receivers: Sequence[int]) -> List[Dict[str, Tuple[int, int]]]:
    return [{"forward": (s, r), "reverse": (r, s)} for s, r in zip(senders, receivers)]


def _pair_doc(nodes: List[Dict[str, Any]], pairs: List[Dict[str, Tuple[int, int]]]) -> str:
    return ", ".join(
        f"{i} = {nodes[p['forward'][0]]['name']} -> {nodes[p['forward'][1]]['name']}"
        for i, p in enumerate(pairs)
    )


_BOTTLENECK_QUEUE_FIELD = Field(
    "queue",
    _queue_kind(*_BOTTLENECK_QUEUE_DEFAULT),
    "queue of the bottleneck link(s), the same in each direction; limit_bdp uses the "
    "shape's rtt (see the shape's description)",
    {},
    "each key's own default",
)


def _access_queue_field(default: Tuple[str, Any, str]) -> Field:
    return Field(
        "access_queue",
        _queue_kind(*default),
        "queue of each access link: the routers' queues toward the hosts, and the hosts' "
        "interface queues unless txqueuelen is set",
        {},
        "each key's own default",
    )


def _txqueuelen_field(unset: str) -> Field:
    return Field(
        "txqueuelen",
        Integer(minimum=1, maximum=U64_MAX, example=100),
        "length of every host's interface queue, packets (Linux ifconfig txqueuelen): the "
        "drop-tail queue of each link leaving a host. When it is full a TCP sender's segment "
        "is not lost: the sender keeps it, sends it when the queue has room, and reduces its "
        "window (local congestion, Linux tcp_enter_cwr; counted per flow). Other packets "
        "that find it full (ACKs, UDP datagrams) are dropped. Overrides access_queue on the "
        "hosts' side",
        Derived(unset),
        "Linux's default txqueuelen for Ethernet is 1000 packets; document 001's hosts ran "
        "with 100",
    )


def _host_interfaces(network: Network, txqueuelen: Optional[int]) -> Network:
    """Gives every link leaving a host a drop-tail queue of ``txqueuelen`` packets (if set):
    the host's interface queue, where the core models local congestion."""
    if txqueuelen is not None:
        for link in network.links:
            if network.nodes[link["from"]]["kind"] == "host":
                link["queue"] = _txqueuelen_queue(txqueuelen)
    return network


def _txqueuelen_queue(txqueuelen: int) -> Dict[str, Any]:
    # pfifo_fast, Linux's default interface queue discipline, counts packets only.
    return {"discipline": "droptail", "limit_packets": txqueuelen, "limit_bytes": None,
            "cell_bytes": None, "limit_cells": None}


_TXQUEUELEN_UNSET = (
    "unset: the hosts' interface queues are access_queue, 1000 packets by default"
)

_DUMBBELL = shape_table(
        Field("bottleneck_rate", Rate(), "rate of the bottleneck link r1 -> r2 (and r2 -> r1)"),
        Field(
            "rtt",
            Duration(positive=True),
            "round-trip propagation delay of pair 0's path sender -> receiver -> sender, "
            "without queueing or transmission time; it sets the bottleneck's one-way delay "
            "(rtt/2 - pair 0's sender access delay - access_delay) and is the rtt of limit_bdp",
        ),
        Field(
            "access_rate",
            Rate(),
            "rate of the access links (hosts to routers)",
            Derived("10 x bottleneck_rate"),
            "access links faster than the bottleneck, so the queue forms at the bottleneck, "
            "as in document 003's dumbbell",
        ),
        Field(
            "access_delay",
            Duration(positive=False, example="1ms"),
            "one-way propagation delay of each access link (of the senders' too unless "
            "access_delays is set); the bottleneck's one-way delay is rtt/2 - 2 x access_delay "
            "(rtt/2 - access_delays[0] - access_delay with access_delays)",
            "0ms",
            "all of the path's delay on the bottleneck",
        ),
        Field(
            "pairs",
            Integer(minimum=1, maximum=1000, example=2),
            "number of sender/receiver host pairs, each with its own access links; with 1 the "
            'hosts are "sender" and "receiver", with more "sender0", "receiver0", "sender1", ...; '
            "a flow chooses its pair with flows.pair",
            1,
            "one pair; document 003's two-flow dumbbell has 2",
        ),
        Field(
            "access_delays",
            DurationList(),
            "one-way delay of the sender-side access link of each pair (both directions), "
            "one per pair; pair i's RTT is rtt + 2 x (access_delays[i] - access_delays[0]), "
            "i.e. 2 x (bottleneck delay + access_delays[i] + access_delay)",
            Derived("access_delay for every pair"),
            "equal RTTs; document 003 E3.9 uses 10 ms against 20 to 60 ms",
        ),
        *_COMMON_LINK_FIELDS,
        Field(
            "queue",
            _queue_kind(*_BOTTLENECK_QUEUE_DEFAULT),
            "queue of the bottleneck in each direction (r1 -> r2, and the same for r2 -> r1)",
            {},
            "each key's own default",
        ),
        _access_queue_field(_ACCESS_QUEUE_DEFAULT),
        _txqueuelen_field(_TXQUEUELEN_UNSET),
    doc="sender -> access link -> router r1 -> bottleneck -> router r2 -> access link -> "
    "receiver, and the same links in reverse (for ACKs and reverse flows). Links: "
    '"bottleneck" (r1 -> r2), "bottleneck_rev" (r2 -> r1), "access_fwd_sender" (sender -> '
    'r1), "access_rev_sender" (r1 -> sender), "access_fwd_receiver" (r2 -> receiver), '
    '"access_rev_receiver" (receiver -> r2); with pairs > 1 the access links end in the '
    'pair number ("access_fwd_sender0", ...). Flows choose pair and direction.',
)

# Node indices and link names of the dumbbell with one pair, in the order the core receives
# them (with more pairs each access link is repeated per pair, numbered).
DUMBBELL_NODES = (("sender", "host"), ("r1", "router"), ("r2", "router"), ("receiver", "host"))
#: (name, from node, to node, role) -- role selects rate, delay and queue.
DUMBBELL_LINKS = (
    ("access_fwd_sender", 0, 1, "access"),
    ("bottleneck", 1, 2, "bottleneck_fwd"),
    ("access_fwd_receiver", 2, 3, "access"),
    ("access_rev_receiver", 3, 2, "access"),
    ("bottleneck_rev", 2, 1, "bottleneck_rev"),
    ("access_rev_sender", 1, 0, "access"),
)


def _build_dumbbell(topo: Dict[str, Any], path: str) -> Network:
    bottleneck_bps = topo["bottleneck_rate"]
    access_bps = topo["access_rate"] if topo["access_rate"] is not None else 10 * bottleneck_bps
    rtt_ps = topo["rtt"]
    access_delay_ps = topo["access_delay"]
    n = topo["pairs"]
    sender_delays = topo["access_delays"]
    if sender_delays is None:
        sender_delays = [access_delay_ps] * n
    elif len(sender_delays) != n:
        sub = _join(path, "access_delays")
        raise ScenarioError(
            f"{sub}: {len(sender_delays)} delay(s) is not allowed: give one per pair "
            f"(pairs = {n})",
            sub,
        )
    # The forward and reverse bottleneck delays add up to exactly rtt minus pair 0's four
    # access delays even when rtt is an odd number of picoseconds.
    fwd_delay_ps = rtt_ps // 2 - sender_delays[0] - access_delay_ps
    rev_delay_ps = rtt_ps - rtt_ps // 2 - sender_delays[0] - access_delay_ps
    if fwd_delay_ps < 0:
        if topo["access_delays"] is None:
            sub = _join(path, "access_delay")
            raise ScenarioError(
                f"{sub}: {format_duration(access_delay_ps)} is not allowed: the four access links "
                f"({format_duration(4 * access_delay_ps)} in all) would take more than the rtt "
                f"({format_duration(rtt_ps)}); the bottleneck's one-way delay is rtt/2 - 2 x access_delay",
                sub,
            )
        sub = _join(path, "access_delays") + "[0]"
        raise ScenarioError(
            f"{sub}: {format_duration(sender_delays[0])} is not allowed: with access_delay "
            f"{format_duration(access_delay_ps)}, pair 0's access links would take more than the "
            f"rtt ({format_duration(rtt_ps)}); the bottleneck's one-way delay is "
            "rtt/2 - access_delays[0] - access_delay",
            sub,
        )
    bottleneck_q, access_q = _two_queues(
        topo, path, bottleneck_bps, access_bps, rtt_ps, _ACCESS_QUEUE_DEFAULT
    )
    suffix = [""] if n == 1 else [str(i) for i in range(n)]
    senders = list(range(n))
    r1, r2 = n, n + 1
    receivers = [n + 2 + i for i in range(n)]
    nodes = (
        [{"name": f"sender{s}", "kind": "host"} for s in suffix]
        + [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}]
        + [{"name": f"receiver{s}", "kind": "host"} for s in suffix]
    )

    def access(name: str, src: int, dst: int, delay_ps: int) -> Dict[str, Any]:
        return _link(name, src, dst, access_bps, delay_ps, access_q, topo)

    links = (
        [access(f"access_fwd_sender{s}", senders[i], r1, sender_delays[i]) for i, s in enumerate(suffix)]
        + [_link("bottleneck", r1, r2, bottleneck_bps, fwd_delay_ps, bottleneck_q, topo)]
        + [access(f"access_fwd_receiver{s}", r2, receivers[i], access_delay_ps) for i, s in enumerate(suffix)]
        + [access(f"access_rev_receiver{s}", receivers[i], r2, access_delay_ps) for i, s in enumerate(suffix)]
        + [_link("bottleneck_rev", r2, r1, bottleneck_bps, rev_delay_ps, bottleneck_q, topo)]
        + [access(f"access_rev_sender{s}", r1, senders[i], sender_delays[i]) for i, s in enumerate(suffix)]
    )
    pairs = _pairs_of(senders, receivers)
    network = Network(
        nodes=nodes,
        links=links,
        endpoints=pairs[0],
        path_mtu_bytes=topo["mtu"],
        pairs=pairs,
        pair_doc=_pair_doc(nodes, pairs),
    )
    return _host_interfaces(network, topo["txqueuelen"])


# ---- two-to-one (document 001) ---------------------------------------------------------

#: Document 001's hosts: the sender's interface queue, txqueuelen 100 packets.
_TWO_TO_ONE_ACCESS_QUEUE_DEFAULT = (
    "limit_packets",
    100,
    "document 001: sender interface queue txqueuelen = 100 packets",
)

_TWO_TO_ONE = shape_table(
    Field(
        "bottleneck_rate",
        Rate(),
        "rate of the receiver's link router -> receiver (and receiver -> router), where the "
        "two senders' traffic meets",
    ),
    Field(
        "rtt",
        Duration(positive=True),
        "round-trip propagation delay of each sender's path sender -> receiver -> sender "
        "(both are equal), without queueing or transmission time; it is the rtt of limit_bdp",
    ),
    Field(
        "access_rate",
        Rate(),
        "rate of the senders' links to the router (both directions)",
        Derived("bottleneck_rate"),
        "document 001: every host has a 1 Gb/s NIC, so two senders offer twice what the "
        "receiver's link carries",
    ),
    Field(
        "access_delay",
        Duration(positive=False, example="1ms"),
        "one-way propagation delay of each sender's link; the bottleneck's one-way delay is "
        "rtt/2 - access_delay",
        "0ms",
        "all of the path's delay on the bottleneck",
    ),
    *_COMMON_LINK_FIELDS,
    _BOTTLENECK_QUEUE_FIELD,
    _access_queue_field(_TWO_TO_ONE_ACCESS_QUEUE_DEFAULT),
    _txqueuelen_field(
        "unset: the senders' interface queues are access_queue (100 packets by default, "
        "document 001) and the receiver's (its link bottleneck_rev) is queue"
    ),
    doc="Document 001's two-to-one: sender0 and sender1 -> router -> bottleneck -> receiver, "
    "and the same links in reverse. Links: \"access_fwd_sender0\", \"access_fwd_sender1\" "
    "(sender -> router), \"bottleneck\" (router -> receiver), \"bottleneck_rev\" (receiver -> "
    "router), \"access_rev_sender0\", \"access_rev_sender1\" (router -> sender). Flows choose "
    "the sender with pair = 0 or 1 (direction \"reverse\": the receiver sends to it).",
)


def _build_two_to_one(topo: Dict[str, Any], path: str) -> Network:
    bottleneck_bps = topo["bottleneck_rate"]
    access_bps = topo["access_rate"] if topo["access_rate"] is not None else bottleneck_bps
    rtt_ps, access_delay_ps = topo["rtt"], topo["access_delay"]
    fwd_delay_ps = rtt_ps // 2 - access_delay_ps
    rev_delay_ps = rtt_ps - rtt_ps // 2 - access_delay_ps
    if fwd_delay_ps < 0:
        sub = _join(path, "access_delay")
        raise ScenarioError(
            f"{sub}: {format_duration(access_delay_ps)} is not allowed: a sender's two access links "
            f"({format_duration(2 * access_delay_ps)}) would take more than the rtt "
            f"({format_duration(rtt_ps)}); the bottleneck's one-way delay is rtt/2 - access_delay",
            sub,
        )
    bottleneck_q, access_q = _two_queues(
        topo, path, bottleneck_bps, access_bps, rtt_ps, _TWO_TO_ONE_ACCESS_QUEUE_DEFAULT
    )
    nodes = [
        {"name": "sender0", "kind": "host"},
        {"name": "sender1", "kind": "host"},
        {"name": "router", "kind": "router"},
        {"name": "receiver", "kind": "host"},
    ]
    router, receiver = 2, 3
    links = (
        [_link(f"access_fwd_sender{i}", i, router, access_bps, access_delay_ps, access_q, topo) for i in (0, 1)]
        + [_link("bottleneck", router, receiver, bottleneck_bps, fwd_delay_ps, bottleneck_q, topo)]
        + [_link("bottleneck_rev", receiver, router, bottleneck_bps, rev_delay_ps, bottleneck_q, topo)]
        + [_link(f"access_rev_sender{i}", router, i, access_bps, access_delay_ps, access_q, topo) for i in (0, 1)]
    )
    pairs = _pairs_of([0, 1], [receiver, receiver])
    network = Network(
        nodes=nodes, links=links, endpoints=pairs[0], path_mtu_bytes=topo["mtu"],
        pairs=pairs, pair_doc=_pair_doc(nodes, pairs),
    )
    return _host_interfaces(network, topo["txqueuelen"])


# ---- parking lot -----------------------------------------------------------------------

_PARKING_LOT = shape_table(
    Field(
        "hops",
        Integer(minimum=1, maximum=1000, example=3),
        "number of bottleneck links in a row, router0 -> router1 -> ... -> router<hops>",
    ),
    Field("bottleneck_rate", Rate(), "rate of every hop (both directions)"),
    Field(
        "hop_delay",
        Duration(positive=True, example="10ms"),
        "one-way propagation delay of every hop",
    ),
    Field(
        "access_rate",
        Rate(),
        "rate of the access links (hosts to routers)",
        Derived("10 x bottleneck_rate"),
        "access links faster than the hops, so the queues form at the hops",
    ),
    Field(
        "access_delay",
        Duration(positive=False, example="1ms"),
        "one-way propagation delay of each access link",
        "0ms",
        "all of the delay on the hops",
    ),
    *_COMMON_LINK_FIELDS,
    _BOTTLENECK_QUEUE_FIELD,
    _access_queue_field(_ACCESS_QUEUE_DEFAULT),
    _txqueuelen_field(_TXQUEUELEN_UNSET),
    doc="Cross traffic: hops bottleneck links in a row; pair 0 (sender0 -> receiver0) crosses "
    "all of them, pair i (sender<i> -> receiver<i>, i = 1 .. hops) only hop i. RTTs: "
    "2 x (hops x hop_delay + 2 x access_delay) for pair 0, 2 x (hop_delay + 2 x access_delay) "
    "for the others; limit_bdp uses pair 0's (the longest). Links: \"hop1\" .. (router<i-1> "
    "-> router<i>), \"hop1_rev\" .., and per pair i \"access_fwd_sender<i>\", "
    "\"access_fwd_receiver<i>\", \"access_rev_receiver<i>\", \"access_rev_sender<i>\".",
)


def _build_parking_lot(topo: Dict[str, Any], path: str) -> Network:
    hops, hop_bps, hop_delay_ps = topo["hops"], topo["bottleneck_rate"], topo["hop_delay"]
    access_bps = topo["access_rate"] if topo["access_rate"] is not None else 10 * hop_bps
    access_delay_ps = topo["access_delay"]
    long_rtt_ps = 2 * (hops * hop_delay_ps + 2 * access_delay_ps)
    hop_q, access_q = _two_queues(
        topo, path, hop_bps, access_bps, long_rtt_ps, _ACCESS_QUEUE_DEFAULT
    )
    nodes = [{"name": f"router{i}", "kind": "router"} for i in range(hops + 1)]
    links = [
        _link(f"hop{i}", i - 1, i, hop_bps, hop_delay_ps, hop_q, topo) for i in range(1, hops + 1)
    ] + [
        _link(f"hop{i}_rev", i, i - 1, hop_bps, hop_delay_ps, hop_q, topo) for i in range(1, hops + 1)
    ]
    senders, receivers = [], []
    for i in range(hops + 1):
        # Pair 0 enters at router0 and leaves at router<hops>; pair i crosses hop i only.
        enter, leave = (0, hops) if i == 0 else (i - 1, i)
        s, r = len(nodes), len(nodes) + 1
        nodes += [{"name": f"sender{i}", "kind": "host"}, {"name": f"receiver{i}", "kind": "host"}]
        links += [
            _link(f"access_fwd_sender{i}", s, enter, access_bps, access_delay_ps, access_q, topo),
            _link(f"access_fwd_receiver{i}", leave, r, access_bps, access_delay_ps, access_q, topo),
            _link(f"access_rev_receiver{i}", r, leave, access_bps, access_delay_ps, access_q, topo),
            _link(f"access_rev_sender{i}", enter, s, access_bps, access_delay_ps, access_q, topo),
        ]
        senders.append(s)
        receivers.append(r)
    pairs = _pairs_of(senders, receivers)
    network = Network(
        nodes=nodes, links=links, endpoints=pairs[0], path_mtu_bytes=topo["mtu"],
        pairs=pairs, pair_doc=_pair_doc(nodes, pairs),
    )
    return _host_interfaces(network, topo["txqueuelen"])


# ---- custom ----------------------------------------------------------------------------

#: Custom links have no single rtt, so their default limit is in packets.
_CUSTOM_QUEUE_DEFAULT = (
    "limit_packets",
    1000,
    "Linux default txqueuelen of an Ethernet interface (1000 packets); a custom link has no "
    "single rtt, so limit_bdp is not available",
)

_CUSTOM_NODE = Table(
    fields=(
        Field("name", Name(), "name of the node, unique; links and flows refer to it"),
        Field(
            "kind",
            Choice(("host", "router")),
            '"host": flows start and end here; "router": only forwards',
        ),
        Field(
            "txqueuelen",
            Integer(minimum=1, maximum=U64_MAX, example=100),
            "hosts only: length of the host's interface queue, packets (Linux ifconfig "
            "txqueuelen): every link leaving the host gets a drop-tail queue of this many "
            "packets instead of its own queue (which still applies to the reverse direction "
            "of a duplex link). Whatever the queue, a TCP sender's segment that finds the "
            "interface queue of its host full is not lost: the sender sends it later and "
            "reduces its window (local congestion)",
            UNSET,
            "unset: each link leaving the host keeps its own queue (1000 packets by default, "
            "Linux's default txqueuelen for Ethernet)",
        ),
    ),
    doc="A node of a custom topology.",
)

_CUSTOM_LINK = Table(
    fields=(
        Field("from", Name(), "name of the node the link leaves"),
        Field("to", Name(), "name of the node the link enters"),
        Field("rate", Rate(), "rate of the link"),
        Field("delay", Duration(positive=False, example="5ms"), "one-way propagation delay"),
        Field(
            "queue",
            _queue_kind(*_CUSTOM_QUEUE_DEFAULT),
            "queue in front of the link (and of its reverse, if duplex); limit_bdp is refused "
            "(a link lies on many paths, so there is no single rtt)",
            {},
            "each key's own default",
        ),
        Field(
            "duplex",
            Boolean(),
            "also make the reverse link to -> from with the same rate, delay and queue",
            True,
            "fatpipe default: ACKs need a way back",
        ),
        Field(
            "name",
            Name(),
            "name of the link (impairments refer to it); the reverse link of a duplex link is "
            "named <name>_rev",
            Derived('"<from>-><to>" (and "<to>-><from>" for the reverse)'),
            "fatpipe default",
        ),
    ),
    doc="A link of a custom topology, simplex from -> to, or duplex (two simplex links).",
)

class NodePath(Kind):
    """An array of at least two node names: a route through the topology."""

    type_doc = "array of node names"

    def parse(self, value: Any, path: str) -> List[str]:
        if not isinstance(value, (list, tuple)) or len(value) < 2 or not all(isinstance(v, str) and v for v in value):
            raise _fail(path, value, 'expected an array of at least two node names, such as ["h1", "r1", "r3", "h2"]')
        return list(value)


_CUSTOM_ROUTE = Table(
    fields=(
        Field(
            "path",
            NodePath(),
            "the nodes in order, first to last; each consecutive pair joined by a link (the "
            "first given, if several)",
        ),
    ),
    doc="An explicit route: packets for the path's last node leave each node on the path by "
    "the path's next link, instead of the shortest path (nodes off the path, and other "
    "destinations, keep theirs). Give the way back as a route of its own if it should differ.",
)

_CUSTOM = shape_table(
    Field(
        "nodes",
        TableArray(_CUSTOM_NODE, min_items=2, header="topology.nodes"),
        "the nodes, at least two ([[topology.nodes]])",
    ),
    Field(
        "links",
        TableArray(_CUSTOM_LINK, min_items=1, header="topology.links"),
        "the links ([[topology.links]]); routes are shortest paths by hop count, ties to the "
        "link given first",
    ),
    Field(
        "routes",
        TableArray(_CUSTOM_ROUTE, min_items=0, header="topology.routes"),
        "explicit routes over the shortest paths ([[topology.routes]])",
        [],
        "none: every route is a shortest path",
    ),
    *_COMMON_LINK_FIELDS,
    doc="Any network: [[topology.nodes]] and [[topology.links]]. Flows name their hosts with "
    "src and dst (not pair or direction); both directions need a route (ACKs go back). "
    "There is no rtt: queue limits are in packets or bytes (default 1000 packets).",
)


def _build_custom(topo: Dict[str, Any], path: str) -> Network:
    nodes: List[Dict[str, Any]] = []
    index: Dict[str, int] = {}
    for i, node in enumerate(topo["nodes"]):
        if node["name"] in index:
            sub = f"{path}.nodes[{i}].name"
            raise _fail(sub, node["name"], f"node names must be unique, and {path}.nodes"
                        f"[{index[node['name']]}] is named {json.dumps(node['name'])} too")
        index[node["name"]] = i
        nodes.append({"name": node["name"], "kind": node["kind"]})
        if node["txqueuelen"] is not None and node["kind"] != "host":
            raise _fail(
                f"{path}.nodes[{i}].txqueuelen", node["txqueuelen"],
                "only a host has an interface queue; a router's queues are its links' queue tables",
            )
    known = ", ".join(json.dumps(n["name"]) for n in nodes)
    links: List[Dict[str, Any]] = []
    where: Dict[str, str] = {}
    for i, link in enumerate(topo["links"]):
        sub = f"{path}.links[{i}]"
        for key in ("from", "to"):
            if link[key] not in index:
                raise _fail(f"{sub}.{key}", link[key], f"expected a node of [[{path}.nodes]]: {known}")
        if link["from"] == link["to"]:
            raise _fail(f"{sub}.to", link["to"], "must differ from from (a link joins two nodes)")
        queue = link["queue"]
        if queue.get("limit_bdp") is not None:
            raise _fail_number(
                f"{sub}.queue.limit_bdp", queue["limit_bdp"],
                "a custom link lies on many paths, so there is no rtt to multiply; "
                "give limit_packets or limit_bytes",
            )
        q = _normalize_queue(
            queue, f"{sub}.queue", rate_bps=link["rate"], rtt_ps=0, mtu_bytes=topo["mtu"],
            default_key=_CUSTOM_QUEUE_DEFAULT[0], default_value=_CUSTOM_QUEUE_DEFAULT[1],
        )
        a, b = index[link["from"]], index[link["to"]]
        if link["name"] is not None:
            names = [link["name"], f"{link['name']}_rev"]
        else:
            names = [f"{link['from']}->{link['to']}", f"{link['to']}->{link['from']}"]
        ends = [(a, b), (b, a)] if link["duplex"] else [(a, b)]
        for name, (x, y) in zip(names, ends):
            if name in where:
                raise _fail(
                    f"{sub}.name" if link["name"] is not None else f"{sub}.to",
                    link["name"] if link["name"] is not None else link["to"],
                    f"link names must be unique, and {where[name]} already makes the link "
                    f"{json.dumps(name)}" + ("" if link["name"] is not None else "; give this link a name"),
                )
            where[name] = sub
            links.append(_link(name, x, y, link["rate"], link["delay"], q, topo))
    for node in topo["nodes"]:
        if node["txqueuelen"] is not None:
            for link in links:
                if link["from"] == index[node["name"]]:
                    link["queue"] = _txqueuelen_queue(node["txqueuelen"])
    hosts = {n["name"]: i for i, n in enumerate(nodes) if n["kind"] == "host"}
    if not hosts:
        sub = f"{path}.nodes"
        raise ScenarioError(
            f'{sub}: {len(nodes)} routers and no host is not allowed: at least one node of '
            'kind = "host" (flows run between hosts)',
            sub,
        )
    network = Network(nodes=nodes, links=links, endpoints={}, path_mtu_bytes=topo["mtu"], hosts=hosts)
    for i, route in enumerate(topo["routes"]):
        sub = f"{path}.routes[{i}].path"
        chosen = []
        for a, b in zip(route["path"], route["path"][1:]):
            for name in (a, b):
                if name not in index:
                    raise _fail(sub, name, f"expected a node of [[{path}.nodes]]: {known}")
            hop = next((j for j, link in enumerate(links) if link["from"] == index[a] and link["to"] == index[b]), None)
            if hop is None:
                raise _fail(sub, route["path"], f"no link from {json.dumps(a)} to {json.dumps(b)}")
            chosen.append(hop)
        network.routes.append({"links": chosen})
    return network


def hop_count(network: Network, src: int, dst: int) -> Optional[int]:
    """Links on the shortest path src -> dst (breadth-first, as the core routes), or None."""
    out: Dict[int, List[int]] = {}
    for link in network.links:
        out.setdefault(link["from"], []).append(link["to"])
    seen, frontier, hops = {src}, [src], 0
    while frontier:
        if dst in frontier:
            return hops
        hops += 1
        frontier = [n for m in frontier for n in out.get(m, []) if n not in seen and not seen.add(n)]
    return None


#: How messages name a shape ("expected a link of the parking lot: ...").
SHAPE_LABELS = {"two_to_one": "two-to-one", "parking_lot": "parking lot", "custom": "custom topology"}

#: Topology shapes by name.
SHAPES: Dict[str, Shape] = {
    "dumbbell": Shape(table=_DUMBBELL, build=_build_dumbbell),
    "two_to_one": Shape(table=_TWO_TO_ONE, build=_build_two_to_one),
    "parking_lot": Shape(table=_PARKING_LOT, build=_build_parking_lot),
    "custom": Shape(table=_CUSTOM, build=_build_custom),
}


# ---- congestion control --------------------------------------------------------------

_RENO = Table(
    fields=(
        Field(
            "a",
            Real(lower=0.0, example=1.0),
            "additive increase: segments added to cwnd per RTT in congestion avoidance",
            1.0,
            "RFC 5681 section 3.1",
        ),
        Field(
            "b",
            Real(lower=0.0, upper=1.0, example=0.5),
            "multiplicative decrease: the fraction of the window given up after a loss "
            "(ssthresh = (1 - b) x cwnd; 0.5 halves it). Same meaning as b in Scalable and "
            "HighSpeed TCP (documents 001, 003)",
            0.5,
            "RFC 5681 equation 4 (ssthresh = FlightSize / 2)",
        ),
        Field(
            "byte_counting",
            Boolean(),
            "grow cwnd by the segments each ACK covers (RFC 3465 appropriate byte counting, as "
            "Linux does) instead of by one per ACK, which delayed ACKs slow down",
            False,
            "RFC 5681 grows cwnd per ACK; RFC 3465 byte counting is experimental",
        ),
    ),
    doc="Standard TCP congestion control: slow start, then AIMD(a, b) congestion avoidance "
    "(RFC 5681, Jacobson 1988).",
)


def _normalize_reno(params: Dict[str, Any], path: str) -> Dict[str, Any]:
    return {
        "algorithm": "reno",
        "a": float(params["a"]),
        "b": float(params["b"]),
        "byte_counting": bool(params["byte_counting"]),
    }


def _simple_algorithm(
    name: str,
    doc: str,
    *params: Tuple[Field, str],
    finish: Optional[Callable[[Dict[str, Any], str], None]] = None,
) -> Algorithm:
    """An algorithm whose parameters map one to one onto the core's: each (Field, core key).
    Durations arrive in picoseconds (their core keys end in _ps), numbers as given.
    ``finish`` may check the values together and fill defaults that depend on others
    (:class:`Derived`), in place, before they are mapped."""
    table = Table(fields=tuple(f for f, _ in params), doc=doc)
    core_keys = {f.key: core_key for f, core_key in params}

    def normalize(values: Dict[str, Any], path: str) -> Dict[str, Any]:
        if finish is not None:
            values = dict(values)
            finish(values, path)
        return {"algorithm": name, **{core_keys[k]: v for k, v in values.items()}}

    return Algorithm(table=table, normalize=normalize)


def _variant_field(options: Sequence[str], meaning: str, source: str) -> Field:
    """An algorithm's ``variant``: which published form runs; the first option, today's form,
    is the default."""
    return Field("variant", Choice(options), meaning, options[0], source)


def _fill_by_choice(
    values: Dict[str, Any], path: str, choice: str, defaults: Mapping[str, Mapping[str, Any]]
) -> None:
    """Fills each key left unset with its default for the value of ``choice`` (a variant, a
    mode). A key that value does not use (no default for it) must stay unset; the core, which
    takes every key, then gets the key's first default and ignores it."""
    chosen = values[choice]
    for key, by_choice in defaults.items():
        if chosen in by_choice:
            if values[key] is None:
                values[key] = by_choice[chosen]
            continue
        if values[key] is not None:
            used = " or ".join(json.dumps(v) for v in by_choice)
            raise ScenarioError(
                f"{_join(path, key)}: not used with {choice} = {json.dumps(chosen)}; only with {choice} = {used}",
                _join(path, key),
            )
        values[key] = next(iter(by_choice.values()))


def _fill_by_variant(values: Dict[str, Any], path: str, defaults: Mapping[str, Mapping[str, Any]]) -> None:
    _fill_by_choice(values, path, "variant", defaults)


#: Linux's timer frequency, for the Linux forms that count time in jiffies.
_KERNEL_HZ_DEFAULT = 250
_KERNEL_HZ_SOURCE = "Linux CONFIG_HZ: kernel/Kconfig.hz defaults to HZ_250"


def _kernel_hz_field(used_with: str) -> Field:
    return Field(
        "kernel_hz",
        Integer(minimum=1, maximum=100_000, example=_KERNEL_HZ_DEFAULT),
        "jiffies per second of the Linux form's clock (tcp_jiffies32); only with " + used_with,
        Derived(f"{_KERNEL_HZ_DEFAULT} with {used_with}"),
        _KERNEL_HZ_SOURCE,
    )


def _packets(key: str, default: float, meaning: str, source: str) -> Field:
    return Field(key, Real(lower=0.0, lower_open=False, example=default), meaning + ", packets", default, source)


_BYTE_COUNTING = Field(
    "byte_counting",
    Boolean(),
    "grow by the segments each ACK covers (RFC 3465) instead of per ACK",
    False,
    "RFC 5681 (per ACK), as Reno here and the documents' kernels and ns-2",
)

#: Vegas's thresholds by variant: the paper's (ns-2 v_alpha_, v_beta_, v_gamma_) and Linux's
#: tcp_vegas.c module parameters.
_VEGAS_DEFAULTS = {
    "alpha": {"paper": 1.0, "linux": 2.0},
    "beta": {"paper": 3.0, "linux": 4.0},
    "gamma": {"paper": 1.0, "linux": 1.0},
}


def _vegas_threshold(key: str, meaning: str) -> Field:
    by_variant = _VEGAS_DEFAULTS[key]
    return Field(
        key,
        Real(lower=0.0, lower_open=False, example=by_variant["paper"]),
        meaning + ", packets",
        Derived(f"{_num(by_variant['paper'])} (paper), {_num(by_variant['linux'])} (linux)"),
        f"Brakmo and Peterson 1995, ns-2 v_{key}_; Linux tcp_vegas.c {key}",
    )


_VEGAS = _simple_algorithm(
    "vegas",
    "TCP Vegas (Brakmo and Peterson 1995): once per RTT compares the expected rate cwnd/baseRTT "
    "with the actual cwnd/RTT; the difference is the flow's packets queued in the network. "
    "The paper's form (ns-2's) decides on the round's average RTT in slow start and grows every "
    "other RTT; Linux's decides every RTT on the round's minimum RTT.",
    (
        _variant_field(
            ("paper", "linux"),
            "which Vegas: paper (Brakmo and Peterson 1995 as ns-2 runs it: slow start doubles every "
            "other RTT, leaves it giving back 1/8 of the window) or linux (tcp_vegas.c: the round's "
            "minimum RTT, slow start every RTT that ends at the measured rate + 1, a fresh start "
            "after idle)",
            "the paper's form; Linux: net/ipv4/tcp_vegas.c",
        ),
        "variant",
    ),
    (_vegas_threshold("alpha", "fewer queued than this: grow one segment per RTT"), "alpha"),
    (_vegas_threshold("beta", "more queued than this: shrink one segment per RTT"), "beta"),
    (_vegas_threshold("gamma", "more queued than this at the end of a slow-start round: leave slow start"), "gamma"),
    finish=lambda values, path: _fill_by_variant(values, path, _VEGAS_DEFAULTS),
)

_WESTWOOD = _simple_algorithm(
    "westwood",
    "TCP Westwood (Mascolo et al. 2001): a bandwidth estimate filtered from every ACK; after a "
    "loss ssthresh = BWE x RTTmin / MSS instead of halving.",
    (Field("filter_time_constant", Duration(example="1s"), "time constant tau of the bandwidth filter", "1s", "ns-2 UCLA TCP Westwood, tau_ 1.0"), "filter_time_constant_ps"),
    (_BYTE_COUNTING, "byte_counting"),
)

def _finish_westwood_plus(values: Dict[str, Any], path: str) -> None:
    _fill_by_variant(values, path, {"byte_counting": {"paper": False, "linux": True}, "kernel_hz": {"linux": _KERNEL_HZ_DEFAULT}})
    if values["variant"] == "linux" and not values["byte_counting"]:
        raise ScenarioError(
            f'{_join(path, "byte_counting")}: false is not allowed with variant = "linux": Linux grows '
            "by tcp_reno_cong_avoid, which counts the segments each ACK covers",
            _join(path, "byte_counting"),
        )


_WESTWOOD_PLUS = _simple_algorithm(
    "westwood_plus",
    "TCP Westwood+ (Grieco and Mascolo 2004): one bandwidth sample per RTT, low-pass filtered "
    "as Linux does; the same response to losses as Westwood, or Linux's.",
    (
        _variant_field(
            ("paper", "linux"),
            "which response to losses: paper (ssthresh = BWE x RTTmin at the loss, cwnd never "
            "raised to it) or linux (tcp_westwood.c: Reno's halving, then cwnd = ssthresh = BWE x "
            "RTTmin when the reduction completes; Linux's integer estimate in jiffies)",
            "Grieco and Mascolo 2004; Linux: net/ipv4/tcp_westwood.c",
        ),
        "variant",
    ),
    (Field("min_sample_interval", Duration(positive=False, example="50ms"), "shortest bandwidth-sampling interval (a sample spans max(RTT, this)); the linux form rounds it down to jiffies", "50ms", "Linux TCP_WESTWOOD_RTT_MIN"), "min_sample_interval_ps"),
    (
        Field(
            _BYTE_COUNTING.key,
            _BYTE_COUNTING.kind,
            _BYTE_COUNTING.doc + "; the linux form requires it (tcp_reno_cong_avoid counts segments)",
            Derived("false (paper), true (linux)"),
            _BYTE_COUNTING.source + "; Linux tcp_reno_cong_avoid",
        ),
        "byte_counting",
    ),
    (_kernel_hz_field('variant = "linux"'), "kernel_hz"),
    finish=lambda values, path: _finish_westwood_plus(values, path),
)

_FAST = _simple_algorithm(
    "fast",
    "FAST TCP (Jin, Wei and Low 2004): w <- min(2w, (1 - gamma) w + gamma (baseRTT / RTT x w + "
    "alpha)); holds about alpha of its packets in queues; beta is the top of the band where "
    "the window is left alone (document 004).",
    (_packets("alpha", 200.0, "the flow's packets queued in the network at equilibrium", "document 004: the prototype's default 200/212"), "alpha"),
    (_packets("beta", 212.0, "top of the band [alpha, beta) of queued packets where the window is not changed (at least alpha)", "document 004"), "beta"),
    (Field("gamma", Real(lower=0.0, upper=1.0, upper_open=False, example=0.5), "weight of one update's step towards the target window", 0.5, "ns-2 FAST module gamma_"), "gamma"),
    (Field("update_interval", Duration(positive=False, example="20ms"), "time between window updates; 0 updates once per RTT", "0s", "Jin, Wei and Low 2004 (per RTT)"), "update_interval_ps"),
    (_packets("slow_start_exit", 1.0, "slow start ends when more of the flow's packets than this are queued", "Vegas's gamma (document 004 gives no value)"), "slow_start_exit_packets"),
)

_GRIDDT = _simple_algorithm(
    "griddt",
    "GridDT (document 004 section 4.3): additive increase mssval x rttval segments per RTT "
    "(mssval = max(1, mss_ref / MSS), rttval = max(1, (minRTT / rtt_ref)^2)), spread over the "
    "RTT; a loss takes cwnd / cwnd_decr off.",
    (Field("mss_ref", Size(minimum=1, example=1500), "reference segment size, bytes", 1500, "document 004 (sysctl_tcp_mss_ref)"), "mss_ref_bytes"),
    (Field("rtt_ref", Duration(example="10ms"), "reference RTT", "10ms", "document 004 (sysctl_tcp_rtt_ref); its tests used 50 ms"), "rtt_ref_ps"),
    (Field("cwnd_decr", Integer(minimum=1, example=2), "a loss takes cwnd / cwnd_decr off the window", 2, "document 004 (sysctl_tcp_cwnd_decr); its tests used 8"), "cwnd_decr"),
    (_BYTE_COUNTING, "byte_counting"),
)

_NOCC = _simple_algorithm(
    "nocc",
    "No congestion control (document 000): the receiver's window alone limits the sender; no "
    "cut on loss, no slow start after a timeout.",
    (Field("cwnd_segments", Integer(minimum=1, example=1000), "fix the window at this many segments (document 000's TCP_SET_CWND)", UNSET, "unset: no congestion window at all (TCP_NO_CONGESTION)"), "cwnd_segments"),
)

def _fraction(key: str, default: float, meaning: str, source: str) -> Field:
    return Field(key, Real(lower=0.0, upper=1.0, example=default), meaning, default, source)


def _check_fixed_table(values: Dict[str, Any], path: str) -> None:
    """Linux's HighSpeed reads RFC 3649 appendix B's fixed table: the RFC's parameters cannot
    change it."""
    if values["variant"] != "linux":
        return
    for f in _HIGHSPEED.table.fields:
        if f.key != "variant" and values[f.key] != f.kind.parse(f.default, f.key):
            raise ScenarioError(
                f"{_join(path, f.key)}: {_num(values[f.key])} is not allowed with variant = \"linux\": "
                f"Linux tcp_highspeed.c uses RFC 3649 appendix B's fixed table; leave it at "
                f"{_toml_literal(f.default)} or use variant = \"rfc\"",
                _join(path, f.key),
            )


_HIGHSPEED = _simple_algorithm(
    "highspeed",
    "HighSpeed TCP (RFC 3649): above low_window the increase a(w) grows and the decrease b(w) "
    "shrinks with the window, so that the response function reaches high_window at loss rate "
    "high_p; a(w), b(w) from the RFC's formulas, tabulated once. Linux's form reads RFC 3649 "
    "appendix B's fixed table.",
    (
        _variant_field(
            ("rfc", "linux"),
            "which HighSpeed: rfc (RFC 3649's formulas from the parameters below, a(w) rounded to "
            "the nearest row) or linux (tcp_highspeed.c: the RFC's appendix B table read one row "
            "up, a(w) added per ACK whatever it acknowledged, the decrease of the row last used; "
            "the parameters below must keep their defaults)",
            "RFC 3649; Linux: net/ipv4/tcp_highspeed.c",
        ),
        "variant",
    ),
    (Field("low_window", Integer(minimum=1, example=38), "up to this window (segments) it is standard TCP", 38, "RFC 3649 section 5"), "low_window"),
    (Field("high_window", Integer(minimum=2, example=83000), "window (segments) reached at loss rate high_p", 83000, "RFC 3649 section 5 (10 Gb/s, 1500-byte packets, 100 ms)"), "high_window"),
    (Field("high_p", Real(lower=0.0, upper=1.0, example=1e-7), "loss rate at which the window is high_window", 1e-7, "RFC 3649 section 5"), "high_p"),
    (_fraction("high_decrease", 0.1, "b(w) at high_window: the fraction of the window given up on a loss", "RFC 3649 section 5"), "high_decrease"),
    finish=lambda values, path: _check_fixed_table(values, path),
)

_SCALABLE = _simple_algorithm(
    "scalable",
    "Scalable TCP (Kelly 2003): multiplicative increase a per acknowledged segment (a x cwnd "
    "per RTT) and decrease b on a loss, above a legacy window where it is standard TCP.",
    (Field("a", Real(lower=0.0, example=0.01), "increase per acknowledged segment, segments", 0.01, "Kelly 2003 (document 001 uses 0.02 = 1/50)"), "a"),
    (_fraction("b", 0.125, "fraction of the window given up on a loss", "Kelly 2003; Linux TCP_SCALABLE_MD_SCALE"), "b"),
    (Field("low_window", Integer(minimum=1, example=16), "below this window (segments) it is standard TCP", 16, "Kelly 2003 (lwnd)"), "low_window"),
)

_HTCP = _simple_algorithm(
    "htcp",
    "H-TCP (Leith and Shorten 2004): after delta_L without loss the increase grows with the "
    "time since the last loss, alpha = 1 + 10 (d - delta_L) + ((d - delta_L) / 2)^2; adaptive "
    "backoff beta = RTTmin / RTTmax within [beta_min, beta_max].",
    (Field("delta_l", Duration(example="1s"), "time after a loss during which it increases as standard TCP", "1s", "Leith and Shorten 2004; Linux"), "delta_l_ps"),
    (_fraction("beta_min", 0.5, "smallest backoff factor (window kept after a loss)", "Leith and Shorten 2004; Linux BETA_MIN"), "beta_min"),
    (_fraction("beta_max", 0.8, "largest backoff factor", "Leith and Shorten 2004; Linux BETA_MAX"), "beta_max"),
    (Field("adaptive_backoff", Boolean(), "beta = RTTmin / RTTmax, reset to beta_min when throughput changes by more than 20%", True, "Leith and Shorten 2004; Linux use_bandwidth_switch"), "adaptive_backoff"),
    (Field("rtt_scaling", Boolean(), "scale the increase by RTTmin / 100 ms", False, "draft-leith-tcp-htcp-06 (optional), FreeBSD; Linux turns it on"), "rtt_scaling"),
)

_BIC = _simple_algorithm(
    "bic",
    "BIC-TCP (Xu, Harfoush and Rhee 2004), as Linux tcp_bic.c: binary search toward the window "
    "of the last loss, at most max_increment segments per RTT.",
    (Field("max_increment", Integer(minimum=1, example=16), "largest increase per RTT, segments (S_max)", 16, "Linux max_increment"), "max_increment"),
    (Field("low_window", Integer(minimum=1, example=14), "up to this window (segments) it is standard TCP", 14, "Linux low_window"), "low_window"),
    (_fraction("beta", 0.7998046875, "window kept after a loss, as a fraction", "Linux beta 819/1024"), "beta"),
    (Field("smooth_part", Integer(minimum=1, example=20), "RTTs to cross the last max_increment segments below W_max", 20, "Linux smooth_part"), "smooth_part"),
    (Field("fast_convergence", Boolean(), "lower W_max further on a loss below the previous W_max", True, "Linux fast_convergence"), "fast_convergence"),
)

#: Linux's HyStart module parameters (tcp_cubic.c), for hystart = "linux"; the ACK delta in
#: picoseconds (hystart_ack_delta_us = 2000).
_HYSTART_LINUX_DEFAULTS = {
    "hystart_detect": {"linux": "both"},
    "hystart_low_window": {"linux": 16},
    "hystart_ack_delta": {"linux": 2 * 10**9},
}


def _finish_cubic(values: Dict[str, Any], path: str) -> None:
    _fill_by_variant(values, path, {"kernel_hz": {"linux": _KERNEL_HZ_DEFAULT}})
    _fill_by_choice(values, path, "hystart", _HYSTART_LINUX_DEFAULTS)
    if values["variant"] == "linux":
        # Linux's fixed point: C = bic_scale x 10 / 1024, beta = beta / 1024.
        if round(values["c"] * 1024 / 10) < 1:
            raise ScenarioError(
                f'{_join(path, "c")}: {_num(values["c"])} is not allowed with variant = "linux": '
                "Linux's bic_scale = C x 1024 / 10 would round to 0; must be at least 0.005",
                _join(path, "c"),
            )
        if not 1 <= round(values["beta"] * 1024) <= 1023:
            raise ScenarioError(
                f'{_join(path, "beta")}: {_num(values["beta"])} is not allowed with variant = "linux": '
                "must round to 1..1023 / 1024",
                _join(path, "beta"),
            )


_CUBIC = _simple_algorithm(
    "cubic",
    "CUBIC (RFC 9438): W(t) = C (t - K)^3 + W_max with K = cbrt(W_max (1 - beta) / C), and a "
    "Reno-friendly region; Linux's default congestion control. Either form can leave slow "
    "start early with HyStart (as Linux) or HyStart++ (RFC 9406).",
    (
        _variant_field(
            ("rfc", "linux"),
            "which CUBIC: rfc (RFC 9438 in floating point: target from the smoothed RTT, "
            "alpha_cubic switching to 1 past the old W_max, a new epoch after idle) or linux "
            "(tcp_cubic.c in its fixed point: target from the minimum RTT, at least 5 % growth per "
            "RTT before the first loss, Reno emulation at 8/15 segment per RTT, the epoch shifted "
            "by idle time; c and beta rounded to Linux's bic_scale / 1024 x 10 and beta / 1024)",
            "RFC 9438; Linux: net/ipv4/tcp_cubic.c",
        ),
        "variant",
    ),
    (Field("c", Real(lower=0.0, example=0.4), "aggressiveness C, segments per second cubed", 0.4, "RFC 9438 section 5; Linux bic_scale 41"), "c"),
    (_fraction("beta", 0.7, "window kept after a loss, as a fraction (beta_cubic)", "RFC 9438 section 4.6; Linux beta 717/1024"), "beta"),
    (Field("fast_convergence", Boolean(), "lower W_max when a loss comes below the previous one", True, "RFC 9438 section 4.7; Linux fast_convergence"), "fast_convergence"),
    (Field("tcp_friendliness", Boolean(), "follow the Reno-friendly window when it is larger", True, "RFC 9438 section 4.3; Linux tcp_friendliness"), "tcp_friendliness"),
    (
        Field(
            "hystart",
            Choice(("off", "linux", "rfc9406")),
            "leave the first slow start before a loss: off (standard slow start), linux (HyStart "
            "as tcp_cubic.c runs it: a train of ACKs spanning half the minimum RTT, or a round's "
            "minimum RTT 1/8 above it, clamped to 4..16 ms, sets ssthresh = cwnd) or rfc9406 "
            "(HyStart++: a round's minimum RTT above the last's by clamp(1/8, 4..16 ms) starts "
            "Conservative Slow Start, a quarter as fast, for 5 rounds)",
            "off",
            "RFC 9438 section 4.10 (standard slow start); Linux runs hystart = 1; RFC 9406",
        ),
        "hystart",
    ),
    (
        Field(
            "hystart_detect",
            Choice(("both", "ack_train", "delay")),
            "HyStart's tests; only with hystart = \"linux\"",
            Derived('"both" with hystart = "linux"'),
            "Linux hystart_detect = 3",
        ),
        "hystart_detect",
    ),
    (
        Field(
            "hystart_low_window",
            Integer(minimum=1, example=16),
            "HyStart runs from this window on, segments; only with hystart = \"linux\"",
            Derived('16 with hystart = "linux"'),
            "Linux hystart_low_window",
        ),
        "hystart_low_window",
    ),
    (
        Field(
            "hystart_ack_delta",
            Duration(example="2ms"),
            "ACKs closer than this form a train; only with hystart = \"linux\"",
            Derived('2ms with hystart = "linux"'),
            "Linux hystart_ack_delta_us = 2000",
        ),
        "hystart_ack_delta_ps",
    ),
    (_kernel_hz_field('variant = "linux"'), "kernel_hz"),
    finish=lambda values, path: _finish_cubic(values, path),
)

_BBR = _simple_algorithm(
    "bbr",
    "BBR v1 (Cardwell et al. 2016; draft-cardwell-iccrg-bbr-congestion-control-00): paces at "
    "gain x the bottleneck bandwidth it measures and keeps cwnd_gain x its BDP in flight; "
    "STARTUP, DRAIN, PROBE_BW (gain cycle 1.25, 0.75, 1 x 6) and PROBE_RTT. Pair it with SACK "
    "(the preset does): without it, recovery starves the bandwidth estimate.",
    (
        _variant_field(
            ("draft", "linux"),
            "which BBR: draft (draft-00's RTprop update with Linux's constants) or linux (tcp_bbr.c: "
            "an ACK that may have been delayed, a lone runt acknowledged alone, does not refresh an "
            "expired RTprop; a timeout ends a round)",
            "draft-cardwell-iccrg-bbr-congestion-control-00; Linux: net/ipv4/tcp_bbr.c bbr_update_min_rtt, bbr_set_state",
        ),
        "variant",
    ),
    (Field("high_gain", Real(lower=1.0, example=2.885), "STARTUP pacing and cwnd gain (DRAIN paces at 1 / high_gain)", 2.885, "2 / ln 2 (draft-00 BBRHighGain; Linux 739/256)"), "high_gain"),
    (Field("cwnd_gain", Real(lower=0.0, example=2.0), "PROBE_BW cwnd = cwnd_gain x BtlBw x RTprop (+ 3 send quanta)", 2.0, "Linux bbr_cwnd_gain"), "cwnd_gain"),
    (Field("bw_window_rounds", Integer(minimum=1, example=10), "window of the bottleneck-bandwidth max filter, round trips", 10, "draft-00 BtlBwFilterLen; Linux bbr_bw_rtts"), "bw_window_rounds"),
    (Field("min_rtt_window", Duration(example="10s"), "window of the RTprop min filter; when it expires, PROBE_RTT", "10s", "draft-00 RTpropFilterLen; Linux bbr_min_rtt_win_sec"), "min_rtt_window_ps"),
    (Field("probe_rtt_duration", Duration(positive=False, example="200ms"), "how long PROBE_RTT holds cwnd at 4 segments (0: never probe)", "200ms", "draft-00 ProbeRTTDuration; Linux bbr_probe_rtt_mode_ms"), "probe_rtt_duration_ps"),
)

#: Congestion control algorithms by name.
CC_ALGORITHMS: Dict[str, Algorithm] = {
    "reno": Algorithm(table=_RENO, normalize=_normalize_reno),
    "vegas": _VEGAS,
    "westwood": _WESTWOOD,
    "westwood_plus": _WESTWOOD_PLUS,
    "fast": _FAST,
    "griddt": _GRIDDT,
    "nocc": _NOCC,
    "highspeed": _HIGHSPEED,
    "scalable": _SCALABLE,
    "htcp": _HTCP,
    "bic": _BIC,
    "cubic": _CUBIC,
    "bbr": _BBR,
}


# ---- presets: the documents' "TCP versions" ----------------------------------------------


@dataclass(frozen=True)
class Preset:
    """A named TCP version: an algorithm with parameters and a loss recovery, as the
    documents compare them (document 003's eight versions; documents 001 and 004's tunings)."""

    algorithm: str
    recovery: str
    doc: str
    source: str
    #: Algorithm parameters, written as a user would write them in [flows.cc].
    params: Mapping[str, Any] = field(default_factory=dict)
    #: Defaults for [flows.tcp] keys the user leaves unset (already in base units).
    tcp: Mapping[str, Any] = field(default_factory=dict)


PRESETS: Dict[str, Preset] = {
    "tahoe": Preset(
        "reno", "tahoe", "fast retransmit, then slow start from one segment", "Jacobson 1988; 4.3BSD Tahoe"
    ),
    "reno": Preset("reno", "reno", "fast recovery, left on the first new ACK", "RFC 5681"),
    "newreno": Preset(
        "reno", "newreno", "fast recovery until all data outstanding at the loss is acknowledged", "RFC 6582"
    ),
    "sack": Preset("reno", "sack", "standard TCP with selective acknowledgments", "RFC 2018, RFC 6675"),
    "vegas": Preset("vegas", "sack", "delay-based: keeps alpha..beta packets queued", "Brakmo and Peterson 1995"),
    "westwood": Preset("westwood", "sack", "bandwidth estimate sets ssthresh after a loss", "Mascolo et al. 2001"),
    "westwood_plus": Preset("westwood_plus", "sack", "Westwood with per-RTT samples", "Grieco and Mascolo 2004"),
    "fast": Preset("fast", "sack", "delay-based, alpha 200 / beta 212", "Jin, Wei and Low 2004; document 004"),
    "fast-500": Preset(
        "fast", "sack", "FAST tuned as in document 004's tests", "document 004 section 5", params={"alpha": 500, "beta": 512}
    ),
    "griddt": Preset("griddt", "sack", "MSS- and RTT-scaled AIMD", "document 004 section 4.3"),
    "griddt-doc004": Preset(
        "griddt",
        "sack",
        "GridDT as document 004 tested it, with Limited Slow Start",
        "document 004 section 5",
        params={"cwnd_decr": 8, "rtt_ref": "50ms"},
        tcp={"max_ssthresh": 8000},
    ),
    "nocc": Preset("nocc", "sack", "congestion control off: only the receiver window limits", "document 000"),
    "highspeed": Preset("highspeed", "sack", "HighSpeed TCP", "RFC 3649"),
    "scalable": Preset("scalable", "sack", "Scalable TCP, a = 0.01, b = 0.125", "Kelly 2003"),
    "scalable-doc001": Preset(
        "scalable", "sack", "Scalable TCP as document 001 ran it (a = 1/50)", "document 001", params={"a": 0.02}
    ),
    "htcp": Preset("htcp", "sack", "H-TCP", "Leith and Shorten 2004"),
    "bic": Preset("bic", "sack", "BIC-TCP", "Xu, Harfoush and Rhee 2004; Linux"),
    "cubic": Preset("cubic", "sack", "CUBIC, Linux's default", "RFC 9438"),
    "bbr": Preset("bbr", "sack", "BBR v1: model-based, paced", "Cardwell et al. 2016"),
}

#: The preset of a flow that names none.
DEFAULT_PRESET = "newreno"


def preset_for_algorithm(algorithm: str) -> str:
    """The preset a [flows.cc] table with ``algorithm = ...`` takes its recovery from."""
    return DEFAULT_PRESET if algorithm == "reno" else algorithm


class CongestionControlChoice(Tagged):
    """``cc``: a preset name (``cc = "newreno"``, ``cc = "griddt-doc004"``) or a table with
    ``algorithm = ...`` and parameters. The parsed value carries the preset's name."""

    def parse(self, value: Any, path: str) -> Dict[str, Any]:
        if isinstance(value, str):
            if value not in PRESETS:
                names = ", ".join(json.dumps(n) for n in PRESETS)
                raise _fail(path, value, f"expected a preset, one of: {names}; or a [flows.cc] table")
            preset = PRESETS[value]
            parsed = super().parse({self.tag: preset.algorithm, **preset.params}, path)
            return {**parsed, "preset": value}
        parsed = super().parse(value, path)
        return {**parsed, "preset": preset_for_algorithm(parsed[self.tag])}


def format_presets() -> str:
    """The presets as a Markdown table (for the reference and `fatpipe algorithms`)."""
    rows = ["| preset | algorithm | recovery | settings | what it is | source |", "|---|---|---|---|---|---|"]
    for name, p in PRESETS.items():
        settings = ", ".join(f"{k} = {_toml_literal(v)}" for k, v in {**p.params, **p.tcp}.items())
        rows.append(f"| `{name}` | {p.algorithm} | {p.recovery} | {settings or '-'} | {p.doc} | {p.source} |")
    return "\n".join(rows) + "\n"


# ======================================================================================
# The scenario schema
# ======================================================================================

_TCP = Table(
    fields=(
        Field(
            "mss",
            Size(minimum=1, maximum=65535, example=1448),
            "maximum segment size: payload bytes per full segment; at most mtu - 40 - 12 (with "
            "timestamps)",
            Derived("mtu - 40 - (12 if timestamps), 1448 for Ethernet"),
            "RFC 6691 (MSS = MTU minus the IP and TCP headers); Linux also subtracts the "
            "12-byte timestamps option",
        ),
        Field(
            "initial_window",
            InitialWindow(),
            'initial congestion window, segments; "rfc3390" for min(4 MSS, max(2 MSS, 4380 '
            'bytes)) (3 segments of 1448 bytes)',
            10,
            "RFC 6928; Linux default since 2.6.39",
        ),
        Field(
            "rcv_buffer",
            Size(minimum=1, example="8MiB"),
            "receive buffer: the largest window the receiver advertises, bytes (at least one "
            "MSS; RFC 7323 caps any window at 65535 x 2^14 bytes, about 1 GiB)",
            "8MiB",
            "fatpipe default, large enough not to limit paths up to ~670 Mb/s at 100 ms RTT "
            "(Linux autotunes up to net.ipv4.tcp_rmem's maximum, 6 MiB by default)",
        ),
        Field(
            "snd_buffer",
            Size(minimum=1, example="8MiB"),
            "send buffer: most bytes written by the application and not yet acknowledged (at "
            "least one MSS)",
            "8MiB",
            "fatpipe default, as rcv_buffer (Linux autotunes up to net.ipv4.tcp_wmem's maximum, "
            "4 MiB by default)",
        ),
        Field(
            "window_scaling",
            Boolean(),
            "RFC 7323 window scaling; false caps the advertised window at 65535 bytes",
            True,
            "RFC 7323; Linux net.ipv4.tcp_window_scaling = 1",
        ),
        Field(
            "timestamps",
            Boolean(),
            "RFC 7323 timestamps option: 12 header bytes per segment, an RTT sample from every ACK",
            True,
            "Linux net.ipv4.tcp_timestamps = 1",
        ),
        Field(
            "delayed_ack",
            Boolean(),
            "delay ACKs: acknowledge every ack_every full segments or after delayed_ack_timeout",
            True,
            "RFC 1122 section 4.2.3.2, RFC 5681 section 4.2",
        ),
        Field(
            "delayed_ack_timeout",
            Duration(positive=True),
            "longest time an ACK may be delayed",
            "40ms",
            "Linux TCP_DELACK_MIN; RFC 1122 allows up to 500 ms",
        ),
        Field(
            "ack_every",
            Integer(minimum=1, example=2),
            "with delayed ACKs, acknowledge at least every this many full-sized segments",
            2,
            "RFC 5681 section 4.2 (at least every second full-sized segment)",
        ),
        Field(
            "dupack_threshold",
            Integer(minimum=1, example=3),
            "duplicate ACKs that trigger fast retransmit",
            3,
            "RFC 5681 section 3.2",
        ),
        Field(
            "recovery",
            Choice(("tahoe", "reno", "newreno", "sack")),
            "loss recovery in the TCP core: tahoe (fast retransmit, then slow start from one "
            "segment), reno (RFC 5681 fast recovery, left on the first new ACK), newreno "
            "(RFC 6582: stays in recovery until all data outstanding at the loss is "
            "acknowledged), sack (RFC 2018 selective acknowledgments with RFC 6675 recovery)",
            Derived("the cc preset's: tahoe, reno, newreno for those presets, sack for the others"),
            "the documents' TCP versions (document 003); SACK for the newer algorithms, as "
            "Linux and document 001's hosts had it",
        ),
        Field(
            "fack",
            Boolean(),
            "with recovery = sack: forward acknowledgment loss detection (Mathis and Mahdavi "
            "1996): every hole more than dupack_threshold segments below the highest SACKed "
            "byte is lost",
            False,
            "RFC 6675 detects loss by the SACKed bytes above a hole; Linux dropped FACK in 4.15",
        ),
        Field(
            "dcr_div",
            Integer(minimum=1, example=1),
            "Delayed Congestion Response: on the first duplicate ACK raise the threshold to "
            "max(dupack_threshold, cwnd / dcr_div) and send one new segment per duplicate ACK "
            "meanwhile, so reordering within about an RTT does not cut the window",
            UNSET,
            "unset: off. Document 004 section 4.3 and draft-ietf-tcpm-tcp-dcr use 1 (respond "
            "one RTT later)",
        ),
        Field(
            "receiver_drain_rate",
            Rate(),
            "the receiving application reads at most this many payload bits per second; unread "
            "data holds the receive buffer, the advertised window shrinks, and the sender is "
            "throttled by flow control: the window's right edge moves in steps of at least "
            "min(buffer / 2, MSS) (receiver silly-window avoidance, RFC 1122 4.2.3.3); a window "
            "update goes out when reading at least doubles a window of at most half the "
            "buffer (Linux __tcp_cleanup_rbuf); the sender probes a zero window (RFC 9293 "
            "3.8.6.1, Linux tcp_probe_timer)",
            UNSET,
            "unset: the application reads every byte at once. Document 000's hosts managed "
            "about 130 Mbps",
        ),
        Field(
            "initial_ssthresh",
            Integer(minimum=2, example=300),
            "ssthresh before the first loss, segments: slow start ends when cwnd reaches it",
            UNSET,
            'unset: "arbitrarily high" (RFC 5681 3.1); Linux may take it from a route\'s '
            "cached metrics (ip route ... ssthresh)",
        ),
        Field(
            "max_ssthresh",
            Integer(minimum=1, example=100),
            "Limited Slow Start: above this many segments slow start adds at most "
            "max_ssthresh / 2 segments per RTT",
            UNSET,
            "unset: off. RFC 3742 suggests 100; document 004's GridDT tests used 8000",
        ),
        Field(
            "pacing_gain",
            Real(lower=0.0, lower_open=True, example=1.0),
            "pace transmissions at pacing_gain x cwnd / smoothed RTT instead of sending bursts "
            "(BBR always paces at its own rate)",
            UNSET,
            "unset: no pacing, as a TCP without the fq queue discipline",
        ),
        Field(
            "newreno_impatient",
            Boolean(),
            "RFC 6582's Impatient variant: during NewReno recovery restart the retransmission "
            "timer only on the first partial ACK; false is the Slow-but-Steady variant, which "
            "restarts it on every partial ACK",
            False,
            "Linux (rearms the timer on every ACK of new data) and ns-2's NewReno",
        ),
        Field(
            "ecn",
            Boolean(),
            "Explicit Congestion Notification (RFC 3168), on at both ends: new data goes out "
            "ECN-capable; the receiver echoes a Congestion Experienced mark (ECN-Echo) on its "
            "ACKs until a segment with CWR arrives; on ECN-Echo the sender reduces its window "
            "as after a loss but retransmits nothing (ssthresh from the algorithm, cwnd down to "
            "it, at most once per window of data) and sets CWR on its next new segment. Only a "
            "RED queue with ecn = true marks",
            False,
            "Linux net.ipv4.tcp_ecn = 2: ECN is accepted when the peer asks but connections "
            "do not ask for it",
        ),
        Field(
            "min_rto",
            Duration(positive=True, example="200ms"),
            "lower bound of the retransmission timeout",
            "200ms",
            "Linux TCP_RTO_MIN; RFC 6298 section 2.4 says 1 s",
        ),
        Field(
            "max_rto",
            Duration(positive=True, example="120s"),
            "upper bound of the retransmission timeout (at least min_rto)",
            "120s",
            "Linux TCP_RTO_MAX; RFC 6298 section 2.5 allows any maximum of at least 60 s",
        ),
        Field(
            "initial_rto",
            Duration(positive=True, example="1s"),
            "retransmission timeout before the first RTT sample",
            "1s",
            "RFC 6298 section 2.1; Linux TCP_TIMEOUT_INIT",
        ),
        Field(
            "handshake",
            Boolean(),
            "model the three-way handshake (SYN, SYN-ACK, ACK; SYN and SYN-ACK resent after "
            "initial_rto, doubling) before the first data, which then starts one RTT after the "
            "application; the exchange gives the sender its first RTT sample. HTTP/1.0 needs it; "
            "a persistent HTTP/1.1 connection without it starts established",
            Derived("true with [flows.http], false otherwise (the connection starts established)"),
            "RFC 793 section 3.4; a bulk flow is usually measured once established (iperf)",
        ),
        Field(
            "slow_start_after_idle",
            Boolean(),
            "when new data is sent with nothing in flight more than an RTO after the last "
            "data, restart from min(cwnd, initial_window): cwnd halves per RTO idle down to it "
            "(not for bbr, which sets cwnd itself)",
            True,
            "Linux net.ipv4.tcp_slow_start_after_idle = 1 (tcp_cwnd_restart); RFC 5681 section "
            "4.1, RFC 2861; document 000 section 2 notes Linux 2.x does it",
        ),
        Field(
            "random_send_delay",
            Duration(positive=False, example="1ms"),
            "longest random wait before the sender sends: whenever the window lets data go, "
            "it first waits a uniform random time on [0, random_send_delay], then sends all "
            "the window allows (retransmissions on duplicate and partial ACKs go at once). "
            "Breaks the phase locking of flows that share a drop-tail queue (Floyd and "
            "Jacobson 1992); replications with different seeds then differ. The draws come "
            "from the scenario seed and the flow's name",
            "0s",
            "off, as ns-2's Agent/TCP overhead_ 0 (tcp.cc send_much), which this models; "
            "real hosts get such dither from interrupts and scheduling",
        ),
    ),
    doc="TCP options of the flow's two endpoints.",
)


class SizeList(Kind):
    """A non-empty array of positive sizes; parsed to int bytes."""

    type_doc = "array of sizes (bytes) >= 1"

    def parse(self, value: Any, path: str) -> List[int]:
        if not isinstance(value, (list, tuple)) or not value:
            raise _fail(path, value, 'expected a non-empty array of sizes, such as ["2KB", "422KB"]')
        size = Size(minimum=1, example="10KB")
        return [size.parse(v, f"{path}[{i}]") for i, v in enumerate(value)]


#: Document 000's request (section 3.4): the GET line, User-Agent, its Rate and Period
#: fields, Host and Accept, each line ended by CRLF, and the empty line.
DOCUMENT_000_REQUEST = (
    "GET /size100K.txt HTTP/1.1\r\nUser-Agent: ApacheBench/1.1\r\nRate = 64000\r\n"
    "Period = 10000\r\nHost: 140.173.170.11\r\nAccept: */*\r\n\r\n"
)

_HTTP = Table(
    fields=(
        Field(
            "version",
            Choice(("1.0", "1.1")),
            '"1.0": a new connection (handshake, slow start from the initial window) per '
            'request, opened when the previous response is complete; "1.1": one persistent '
            "connection, the next request sent when the previous response's last byte "
            "arrives (no pipelining), the window carried over",
            "1.1",
            "RFC 9112 section 9.3 (HTTP/1.1 connections persist by default); document 000 "
            "compares both (E0.13, E0.14)",
        ),
        Field(
            "objects",
            SizeList(),
            "sizes of the objects the client fetches, in turn; request i fetches object i "
            "modulo their number",
        ),
        Field(
            "requests",
            Integer(minimum=1, maximum=U64_MAX, example=100),
            "requests the client makes, one after another",
            Derived("one per object"),
            "fatpipe default; document 000 made 100 requests per file size (E0.13)",
        ),
        Field(
            "request_size",
            Size(minimum=1, example="124B"),
            "bytes of one request (GET line and headers), sent as one segment (at most the "
            "MSS); on a new connection it carries the ACK of the SYN-ACK",
            f"{len(DOCUMENT_000_REQUEST)}B",
            "document 000 section 3.4: its modified Zeus client's GET with Rate and Period "
            "fields, lines ended by CRLF",
        ),
        Field(
            "burst_size",
            Size(minimum=1, example="64KB"),
            "server pacing (document 000's Apache explicit_rate_size): the server writes each "
            "response in bursts of this many bytes, the first when the request arrives, then "
            "one every burst_period (a burst not yet written when the next is due carries "
            "over; the summary counts these failed burst cycles)",
            UNSET,
            "unset: the server writes each response at once",
        ),
        Field(
            "burst_period",
            Duration(example="10ms"),
            "time between two bursts of a response (with burst_size)",
            UNSET,
            "required with burst_size; document 000 used 10 ms and 5 ms",
        ),
    ),
    doc="An HTTP workload (document 000's web server and client): the flow's sender host is "
    "the server, its receiver host the client, which fetches the objects one request at a "
    "time. result.requests (requests.parquet) has one row per completed request.",
)


# ---- UDP sources -------------------------------------------------------------------

def _udp_payload_field() -> Field:
    return Field(
        "payload_size",
        Size(minimum=1, maximum=UDP_MAX_PAYLOAD_BYTES, example=1472),
        "UDP payload bytes per datagram; with the 28 bytes of IP and UDP headers it must fit "
        "the MTU (datagrams are not fragmented)",
        Derived("mtu - 28, 1472 for Ethernet"),
        "the largest datagram that is not fragmented (iperf's default for IPv4 is 1470)",
    )


def _udp_rate_field(meaning: str, default: Any = REQUIRED, source: str = "") -> Field:
    return Field(
        "rate",
        Rate(),
        f"{meaning}: UDP payload bits per second, as iperf -u -b counts them (the wire "
        "carries 28 header bytes and the link framing more per datagram); the sending host "
        "never exceeds its line rate",
        default,
        source,
    )


_UDP_CBR = Table(
    fields=(_udp_rate_field("constant sending rate"), _udp_payload_field()),
    doc="Constant bit rate (iperf -u -b rate): one datagram every payload_size x 8 / rate.",
)

_UDP_BURST = Table(
    fields=(
        Field(
            "burst_size",
            Size(minimum=1, example="32KB"),
            "bytes of one burst (NetSpec's blocksize); cut into datagrams of payload_size, the "
            "last one shorter",
            REQUIRED,
        ),
        Field(
            "repeats",
            Integer(minimum=1, example=50),
            "bursts sent back to back in each period (NetSpec's repeats): a period sends "
            "burst_size x repeats bytes",
            1,
            "NetSpec: one block per period",
        ),
        Field(
            "burst_period",
            Duration(positive=True, example="3s"),
            "time between the starts of two periods; required unless count = 1",
            UNSET,
            "document 000's periodic congestion used 3 s",
        ),
        Field(
            "count",
            Integer(minimum=1, maximum=U64_MAX, example=1),
            "number of periods; 1 sends a single burst (document 000's minimal congestion event)",
            UNSET,
            "unset: until stop or the end of the run",
        ),
        _udp_rate_field(
            "rate of the datagrams within a period",
            UNSET,
            "unset: the sending host's line rate (a blocking socket write returns as the "
            "interface drains, so the burst leaves back to back)",
        ),
        _udp_payload_field(),
    ),
    doc="Bursts (NetSpec's UDP burst mode, document 000): every burst_period, repeats bursts "
    "of burst_size bytes back to back, for count periods.",
)

_UDP_ONOFF = Table(
    fields=(
        _udp_rate_field("sending rate while on"),
        Field("on_time", Duration(positive=True, example="100ms"), "time sending at rate in each period"),
        Field("off_time", Duration(positive=True, example="900ms"), "silent time in each period"),
        _udp_payload_field(),
    ),
    doc="On-off: constant bit rate for on_time, silent for off_time, repeated (period = "
    "on_time + off_time; mean rate = rate x on_time / period).",
)

#: UDP traffic patterns: [flows.udp] mode = ... -> its table.
UDP_MODES: Dict[str, Table] = {"cbr": _UDP_CBR, "burst": _UDP_BURST, "onoff": _UDP_ONOFF}
#: The core's source kind of each mode.
_UDP_SOURCE_KINDS = {"cbr": "udp_cbr", "burst": "udp_burst", "onoff": "udp_onoff"}
#: [[flows]] keys that belong to TCP flows only.
TCP_ONLY_FLOW_KEYS = ("cc", "tcp", "bytes", "burst_size", "burst_period", "burst_carry_over", "http", "streams")


@dataclass(frozen=True)
class FlowTable(Table):
    """``[[flows]]``: keys of one transport may not appear in a flow of the other. Checked
    on what the user wrote, before defaults fill in ``cc`` and ``tcp``."""

    def parse(self, value: Any, path: str, extra_keys: Sequence[str] = ()) -> Dict[str, Any]:
        parsed = super().parse(value, path, extra_keys)
        if parsed["transport"] == "udp":
            for key in TCP_ONLY_FLOW_KEYS:
                if key in value:
                    raise ScenarioError(
                        f'{_join(path, key)}: not allowed with transport = "udp": {key} is for '
                        "TCP flows; a UDP flow takes its pattern from [flows.udp]",
                        _join(path, key),
                    )
            if parsed["udp"] is None:
                sub = _join(path, "udp")
                raise ScenarioError(
                    f'{sub}: missing; required with transport = "udp" (a [flows.udp] table '
                    f"with mode = {', '.join(json.dumps(m) for m in UDP_MODES)})",
                    sub,
                )
        elif parsed["udp"] is not None:
            sub = _join(path, "udp")
            raise ScenarioError(f'{sub}: not allowed: [flows.udp] needs transport = "udp"', sub)
        return parsed


_FLOW = FlowTable(
    fields=(
        Field(
            "name",
            Name(),
            "label in results and plots; unique among the flows",
            Derived('"flow0", "flow1", ... by position'),
            "fatpipe default",
        ),
        Field(
            "cc",
            CongestionControlChoice(
                tag="algorithm",
                variants={name: alg.table for name, alg in CC_ALGORITHMS.items()},
                default_tag="reno",
                shorthand=True,
                tag_doc="congestion control algorithm",
                type_doc="string or table",
            ),
            'congestion control: a preset name (cc = "newreno"; see the presets below and '
            "`fatpipe algorithms`) or a [flows.cc] table with algorithm = ... and the "
            "algorithm's parameters",
            DEFAULT_PRESET,
            "RFC 6582 NewReno: standard TCP congestion control and recovery without SACK",
        ),
        Field(
            "direction",
            Choice(("forward", "reverse")),
            '"forward": the pair\'s sender host sends to its receiver host; "reverse": the '
            "receiver host sends to the sender host (reverse traffic, as in document 002); not "
            'with shape = "custom"',
            Derived('"forward"'),
            "fatpipe default: data from sender to receiver",
        ),
        Field(
            "pair",
            Integer(minimum=0, maximum=1000, example=1),
            "which host pair of the shape the flow runs between (dumbbell: 0 .. pairs - 1; "
            "two_to_one: 0 or 1, the sender; parking_lot: 0 end to end, i crossing hop i); "
            'not with shape = "custom"',
            Derived("0"),
            "fatpipe default: the first pair",
        ),
        Field(
            "src",
            Name(),
            'with shape = "custom" (and only then; required): the name of the sending host',
            UNSET,
            "unset: other shapes use pair and direction",
        ),
        Field(
            "dst",
            Name(),
            'with shape = "custom" (and only then; required): the name of the receiving host',
            UNSET,
            "unset: other shapes use pair and direction",
        ),
        Field(
            "start",
            Duration(positive=False, example="1s"),
            "when the application starts writing (before the end of the run)",
            "0s",
            "fatpipe default: flows start with the run",
        ),
        Field(
            "start_jitter",
            Duration(positive=False, example="100ms"),
            "the application starts a uniform random time on [0, start_jitter] after start, "
            "drawn from the scenario seed and the flow's name, so that replications with "
            "different seeds do not start in lockstep (start + start_jitter must be before "
            "stop and the end of the run); the summary's start_ps is the drawn start",
            "0s",
            "off: the flow starts exactly at start",
        ),
        Field(
            "stop",
            Duration(positive=True, example="30s"),
            "when the application stops writing; what it wrote is still delivered",
            UNSET,
            "unset: writes until the end of the run",
        ),
        Field(
            "bytes",
            Size(minimum=1, example="100MB"),
            "the application writes this many bytes, then stops",
            UNSET,
            "unset: no limit",
        ),
        Field(
            "burst_size",
            Size(minimum=1, example="64KB"),
            "paced application (NetSpec burst mode, document 000): every burst_period it writes "
            "a burst of this many bytes; offered load = burst_size x 8 / burst_period. The "
            "summary counts failed burst cycles (a period ending before its burst was written)",
            UNSET,
            "unset: bulk transfer (the application writes as fast as the socket takes data)",
        ),
        Field(
            "burst_period",
            Duration(example="10ms"),
            "time between the starts of two bursts (with burst_size)",
            UNSET,
            "required with burst_size; document 000 used 10 ms and 5 ms",
        ),
        Field(
            "burst_carry_over",
            Boolean(),
            "keep writing a burst's unwritten rest after the next period starts (NetSpec's "
            "queued-burst mode); false drops it",
            False,
            "NetSpec burst mode",
        ),
        Field(
            "streams",
            Integer(minimum=1, maximum=1000, example=4),
            "parallel streams (iperf -P): the flow becomes this many TCP connections between "
            'the same hosts, named "<name>.1" ... "<name>.<streams>", each with the same cc and '
            "tcp settings and an equal share of bytes; results keep a row per stream and "
            "result.groups sums them under the flow's name",
            1,
            "iperf's default; document 001 used 2 to 16 (E1.6)",
        ),
        Field(
            "http",
            _HTTP,
            "an HTTP workload instead of a bulk transfer ([flows.http])",
            UNSET,
            "unset: a bulk (or paced) transfer",
        ),
        Field("tcp", _TCP, "TCP options ([flows.tcp])", {}, "each key's own default"),
        Field(
            "transport",
            Choice(("tcp", "udp")),
            '"tcp": a TCP connection (cc, tcp and the application keys above); "udp": '
            "datagrams as [flows.udp] says, with no congestion control and no reaction to loss",
            "tcp",
            "fatpipe default",
        ),
        Field(
            "udp",
            Tagged(
                tag="mode",
                variants=UDP_MODES,
                tag_doc="UDP traffic pattern",
            ),
            'with transport = "udp" (and only then; required): the traffic pattern, a '
            "[flows.udp] table with mode = ... and its keys; the flow's start and stop apply",
            UNSET,
            "unset: a TCP flow",
        ),
    ),
    doc="A flow. TCP by default: a bulk transfer, the application writing as fast as the send "
    "buffer takes data (iperf, NetSpec full blast), or paced with burst_size. With transport "
    '= "udp": datagrams as [flows.udp] says (NetSpec UDP cross traffic, iperf -u).',
)

class CapturePoints(Kind):
    """An array of host or link names where packets are captured; checked against the
    topology once it is built."""

    type_doc = "array of host or link names"
    _EXAMPLE = '["sender", "bottleneck", "receiver"]'

    def parse(self, value: Any, path: str) -> List[str]:
        if not isinstance(value, (list, tuple)):
            raise _fail(path, value, f"expected an array of host or link names, such as {self._EXAMPLE}")
        names: List[str] = []
        for i, v in enumerate(value):
            if not isinstance(v, str) or not v:
                raise _fail(f"{path}[{i}]", v, "expected the name of a host or a link")
            if v in names:
                raise _fail(f"{path}[{i}]", v, "each capture point may be named once")
            names.append(v)
        return names


#: Default bytes kept of each captured frame: Ethernet, IP and TCP headers with timestamps
#: and four SACK blocks take at most 14 + 20 + 60 = 94; 128 keeps them all whole.
CAPTURE_SNAPLEN_DEFAULT = 128

_OUTPUT = Table(
    fields=(
        Field(
            "sample_interval",
            Duration(positive=True, example="10ms"),
            "interval of the time series (cwnd, queue length, throughput); at most duration",
            "10ms",
            "fatpipe default: a few samples per RTT on paths of 20 ms and more",
        ),
        Field("plots", Boolean(), "write cwnd.png and throughput.png", True, "fatpipe default"),
        Field(
            "capture",
            CapturePoints(),
            "packet capture points: host names (what the host sends and receives, as tcpdump "
            "on its interface) or link names (what the link transmits); one pcap file per "
            "point, <name>.pcap, with real Ethernet/IPv4/TCP headers and simulated time stamps",
            [],
            "fatpipe default: no capture",
        ),
        Field(
            "capture_start",
            Duration(positive=False, example="10s"),
            "capture packets from this time on",
            "0s",
            "fatpipe default",
        ),
        Field(
            "capture_stop",
            Duration(positive=True, example="12s"),
            "capture packets before this time only",
            Derived("the end of the run"),
            "fatpipe default",
        ),
        Field(
            "capture_max_packets",
            Integer(minimum=1, maximum=U64_MAX, example=100000),
            "write at most this many packets per capture point (the rest are counted)",
            Derived("no limit"),
            "fatpipe default",
        ),
        Field(
            "capture_snaplen",
            Integer(minimum=64, maximum=262144, example=128),
            "bytes kept of each frame (tcpdump -s); the original length is recorded; payload "
            "bytes are zeros",
            CAPTURE_SNAPLEN_DEFAULT,
            "fatpipe default: every header whole, no payload",
        ),
    ),
    doc="What is recorded and written.",
)

#: The whole scenario.
SCENARIO = Table(
    fields=(
        Field(
            "name",
            Name(),
            "name of the run, in results and plots",
            Derived('file name without extension, or "scenario"'),
            "fatpipe default",
        ),
        Field("duration", Duration(positive=True, example="60s"), "simulated time"),
        Field(
            "seed",
            Integer(minimum=0, maximum=U64_MAX, example=1),
            "seed of the random number generator; the same scenario and seed give the same results",
            1,
            "fatpipe default",
        ),
        Field(
            "topology",
            Tagged(
                tag="shape",
                variants={name: shape.table for name, shape in SHAPES.items()},
                default_tag="dumbbell",
                tag_doc="topology shape",
            ),
            "the network ([topology])",
        ),
        Field(
            "flows",
            TableArray(_FLOW, min_items=1, header="flows"),
            "the flows, TCP or UDP, at least one ([[flows]])",
        ),
        Field("output", _OUTPUT, "recording and output ([output])", {}, "each key's own default"),
    ),
)


# ======================================================================================
# 3. Normalization
# ======================================================================================


@dataclass
class Loaded:
    """A validated scenario: ``core`` is the normalized document for the core (exactly the
    keys of ``docs/core-interface.md``); ``plots`` is the Python-side output option."""

    core: Dict[str, Any]
    plots: bool = True
    #: capture specs for the core's ``captures`` without ``path`` (the runner decides where)
    captures: List[Dict[str, Any]] = field(default_factory=list)


def read_scenario_file(path: PathLike) -> Dict[str, Any]:
    """Reads a TOML file (or ``.json`` with the same structure) into a dict.

    Raises ``OSError`` if the file cannot be read and :class:`ScenarioError` if it is not
    valid TOML/JSON (the message gives the line).
    """
    p = Path(path)
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(f"not UTF-8 text (byte {err.start})") from None
    if p.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise ScenarioError(
                f"invalid JSON: {err.msg} (at line {err.lineno}, column {err.colno})"
            ) from None
    else:
        if _toml is None:
            raise ImportError(
                "reading TOML on Python < 3.11 needs the tomli package (pip install tomli)"
            )
        try:
            doc = _toml.loads(text)
        except _toml.TOMLDecodeError as err:
            raise ScenarioError(f"invalid TOML: {err}") from None
    if not isinstance(doc, dict):
        raise _fail("scenario", doc, "expected a table at the top level")
    return doc


def load(source: Union[PathLike, Mapping[str, Any]]) -> Loaded:
    """Validates a scenario (a file path or a dict in the user format) and normalizes it."""
    if isinstance(source, Mapping):
        doc: Mapping[str, Any] = source
        default_name = "scenario"
    elif not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"a scenario is a file path or a dict, not {type(source).__name__}")
    else:
        doc = read_scenario_file(source)
        default_name = Path(source).stem or "scenario"
    top = SCENARIO.parse(doc, "")
    duration_ps = top["duration"]
    output = top["output"]
    if output["sample_interval"] > duration_ps:
        raise ScenarioError(
            f"output.sample_interval: {format_duration(output['sample_interval'])} is not allowed: "
            f"must be at most the duration ({format_duration(duration_ps)})",
            "output.sample_interval",
        )
    name = top["name"] if top["name"] is not None else default_name
    topo = top["topology"]
    shape = SHAPES[topo["shape"]]
    own = {k: v for k, v in topo.items() if k != "shape" and k not in SHAPE_COMMON_KEYS}
    network = shape.build(own, "topology")
    network.shape = topo["shape"]
    attach_impairments(
        network, topo["impairments"], "topology.impairments", duration_ps,
        shape=SHAPE_LABELS.get(topo["shape"], topo["shape"]),
    )
    flows = [
        _normalize_flow(flow, f"flows[{i}]", i, network, duration_ps)
        for i, flow in enumerate(top["flows"])
    ]
    _check_unique_names(top["flows"], flows)
    flows = _expand_streams(top["flows"], flows)
    core = {
        "name": name,
        "seed": top["seed"],
        "duration_ps": duration_ps,
        "sample_interval_ps": output["sample_interval"],
        "nodes": network.nodes,
        "links": network.links,
        "flows": flows,
        "splits": network.splits,
        "routes": network.routes,
    }
    captures = _capture_points(output, network, duration_ps)
    return Loaded(core=core, plots=output["plots"], captures=captures)


def _capture_points(output: Dict[str, Any], network: Network, duration_ps: int) -> List[Dict[str, Any]]:
    """The core's capture specs without their file paths (the runner adds them)."""
    start, stop = output["capture_start"], output["capture_stop"]
    if output["capture"] and stop is not None and stop <= start:
        raise ScenarioError(
            f"output.capture_stop: {format_duration(stop)} is not allowed: must be after "
            f"capture_start ({format_duration(start)})",
            "output.capture_stop",
        )
    if output["capture"] and start >= duration_ps:
        raise ScenarioError(
            f"output.capture_start: {format_duration(start)} is not allowed: must be before "
            f"the end of the run ({format_duration(duration_ps)})",
            "output.capture_start",
        )
    hosts = {n["name"]: i for i, n in enumerate(network.nodes) if n["kind"] == "host"}
    links = {link["name"]: i for i, link in enumerate(network.links)}
    specs = []
    for i, name in enumerate(output["capture"]):
        if name in hosts:
            point = {"kind": "host", "node": hosts[name]}
        elif name in links:
            point = {"kind": "link", "link": links[name]}
        else:
            raise _fail(
                f"output.capture[{i}]",
                name,
                "expected a host or link of the topology: hosts "
                + ", ".join(sorted(hosts)) + "; links " + ", ".join(links),
            )
        specs.append(
            {
                "name": name,
                "point": point,
                "start_ps": start,
                "stop_ps": stop,
                "max_packets": output["capture_max_packets"],
                "snaplen_bytes": output["capture_snaplen"],
            }
        )
    return specs


def load_scenario(source: Union[PathLike, Mapping[str, Any]]) -> Dict[str, Any]:
    """Reads and validates a scenario; returns the normalized, JSON-ready document.

    ``source`` is a path to a TOML file or a dict of the same structure. Raises
    :class:`ScenarioError` (one line naming the field) for any mistake, ``OSError`` if the
    file cannot be read.
    """
    return load(source).core


def _normalize_http(flow: Dict[str, Any], path: str, start_ps: int, stop_ps: Optional[int], mss: int) -> Dict[str, Any]:
    """An HTTP client and server ([flows.http])."""
    http = flow["http"]
    http_path = _join(path, "http")
    for key, shown, why in (
        ("bytes", format_size, "the objects' sizes say what is sent"),
        ("burst_size", format_size, "pace the server's responses with [flows.http] burst_size"),
        ("burst_period", format_duration, "pace the server's responses with [flows.http] burst_period"),
    ):
        if flow[key] is not None:
            sub = _join(path, key)
            raise ScenarioError(f"{sub}: {shown(flow[key])} is not allowed: not with [flows.http]: {why}", sub)
    if flow["burst_carry_over"]:
        raise _fail(
            _join(path, "burst_carry_over"), True,
            "not with [flows.http]: a paced server always writes the rest of a burst",
        )
    if flow["streams"] > 1:
        raise _fail(_join(path, "streams"), flow["streams"], "not with [flows.http]: one client, one connection at a time")
    if http["request_size"] > mss:
        raise ScenarioError(
            f"{http_path}.request_size: {format_size(http['request_size'])} is not allowed: a request is one "
            f"segment, at most the MSS ({mss} bytes)",
            f"{http_path}.request_size",
        )
    if (http["burst_size"] is None) != (http["burst_period"] is None):
        present, missing = ("burst_size", "burst_period") if http["burst_size"] is not None else ("burst_period", "burst_size")
        raise ScenarioError(f"{http_path}.{missing}: missing; required with {present}", f"{http_path}.{missing}")
    pacing = None
    if http["burst_size"] is not None:
        pacing = {"burst_bytes": http["burst_size"], "period_ps": http["burst_period"]}
    return {
        "kind": "http",
        "start_ps": start_ps,
        "stop_ps": stop_ps,
        "persistent": http["version"] == "1.1",
        "objects_bytes": http["objects"],
        "requests": http["requests"] if http["requests"] is not None else len(http["objects"]),
        "request_bytes": http["request_size"],
        "server_pacing": pacing,
    }


def _normalize_source(flow: Dict[str, Any], path: str, start_ps: int, stop_ps: Optional[int]) -> Dict[str, Any]:
    """The flow's application: bulk, or paced bursts when burst_size is given."""
    if flow["burst_size"] is None:
        if flow["burst_period"] is not None:
            raise ScenarioError(f"{path}.burst_period: set without burst_size; give both or neither", f"{path}.burst_period")
        return {"kind": "bulk", "start_ps": start_ps, "stop_ps": stop_ps, "bytes": flow["bytes"]}
    if flow["burst_period"] is None:
        raise ScenarioError(f"{path}.burst_period: missing; required with burst_size", f"{path}.burst_period")
    if flow["bytes"] is not None:
        raise ScenarioError(
            f"{path}.bytes: not allowed with burst_size: a paced application writes bursts until stop",
            f"{path}.bytes",
        )
    return {
        "kind": "burst",
        "start_ps": start_ps,
        "stop_ps": stop_ps,
        "burst_bytes": flow["burst_size"],
        "period_ps": flow["burst_period"],
        "carry_over": flow["burst_carry_over"],
    }


def _check_start_stop(flow: Dict[str, Any], path: str, duration_ps: int) -> None:
    start_ps, stop_ps, jitter_ps = flow["start"], flow["stop"], flow["start_jitter"]
    if start_ps >= duration_ps:
        raise ScenarioError(
            f"{path}.start: {format_duration(start_ps)} is not allowed: must be before the end of "
            f"the run (duration {format_duration(duration_ps)})",
            f"{path}.start",
        )
    if stop_ps is not None and stop_ps <= start_ps:
        raise ScenarioError(
            f"{path}.stop: {format_duration(stop_ps)} is not allowed: must be after start "
            f"({format_duration(start_ps)})",
            f"{path}.stop",
        )
    # The latest the flow may start must still leave it time to run.
    latest_ps = start_ps + jitter_ps
    end_ps, end_name = (duration_ps, "the end of the run") if stop_ps is None else (stop_ps, "stop")
    if jitter_ps and latest_ps >= end_ps:
        raise ScenarioError(
            f"{path}.start_jitter: {format_duration(jitter_ps)} is not allowed: start + "
            f"start_jitter ({format_duration(latest_ps)}) must be before {end_name} "
            f"({format_duration(end_ps)})",
            f"{path}.start_jitter",
        )


def _normalize_udp_flow(
    flow: Dict[str, Any], path: str, index: int, network: Network, duration_ps: int
) -> Dict[str, Any]:
    """A UDP flow: source kind udp_<mode>, no tcp or cc (docs/core-interface.md)."""
    _check_start_stop(flow, path, duration_ps)
    udp, udp_path = flow["udp"], _join(path, "udp")
    mode = udp["mode"]
    max_payload = network.path_mtu_bytes - IPV4_UDP_HEADER_BYTES
    payload = udp["payload_size"] if udp["payload_size"] is not None else max_payload
    if max_payload < 1 or payload > max_payload:
        raise ScenarioError(
            f"{udp_path}.payload_size: {payload} bytes is larger than the link MTU "
            f"{network.path_mtu_bytes} minus {IPV4_UDP_HEADER_BYTES} bytes of IP/UDP headers "
            f"(max {max_payload})",
            f"{udp_path}.payload_size",
        )
    source: Dict[str, Any] = {
        "kind": _UDP_SOURCE_KINDS[mode],
        "start_ps": flow["start"],
        "stop_ps": flow["stop"],
    }
    if mode == "cbr":
        source.update(rate_bps=udp["rate"])
    elif mode == "onoff":
        source.update(rate_bps=udp["rate"], on_ps=udp["on_time"], off_ps=udp["off_time"])
    else:
        if udp["burst_period"] is None and udp["count"] != 1:
            sub = _join(udp_path, "burst_period")
            raise ScenarioError(f"{sub}: missing; required unless count = 1", sub)
        if udp["burst_size"] * udp["repeats"] > U64_MAX:
            raise _fail(
                _join(udp_path, "repeats"), udp["repeats"],
                f"burst_size x repeats must be at most {U64_MAX} bytes",
            )
        source.update(
            burst_bytes=udp["burst_size"],
            repeats=udp["repeats"],
            period_ps=udp["burst_period"],
            count=udp["count"],
            rate_bps=udp["rate"],
        )
    source["payload_bytes"] = payload
    src, dst = _flow_endpoints(flow, path, network, both_ways=False)
    return {
        "name": flow["name"] if flow["name"] is not None else f"flow{index}",
        "src": src,
        "dst": dst,
        "source": source,
        "start_jitter_ps": flow["start_jitter"],
    }


def _normalize_flow(
    flow: Dict[str, Any], path: str, index: int, network: Network, duration_ps: int
) -> Dict[str, Any]:
    if flow["transport"] == "udp":
        return _normalize_udp_flow(flow, path, index, network, duration_ps)
    tcp = flow["tcp"]
    tcp_path = _join(path, "tcp")
    header_bytes = IPV4_TCP_HEADER_BYTES + (TIMESTAMPS_OPTION_BYTES if tcp["timestamps"] else 0)
    max_mss = network.path_mtu_bytes - header_bytes
    mss = tcp["mss"] if tcp["mss"] is not None else max_mss
    if max_mss < 1 or mss > max_mss:
        raise ScenarioError(
            f"{tcp_path}.mss: {mss} bytes is larger than the link MTU {network.path_mtu_bytes} "
            f"minus {header_bytes} bytes of IP/TCP headers (max {max_mss})",
            f"{tcp_path}.mss",
        )
    for key in ("rcv_buffer", "snd_buffer"):
        if tcp[key] < mss:
            raise ScenarioError(
                f"{tcp_path}.{key}: {format_size(tcp[key])} is not allowed: must hold at least one "
                f"segment (the MSS, {mss} bytes)",
                f"{tcp_path}.{key}",
            )
    if tcp["min_rto"] > tcp["max_rto"]:
        raise ScenarioError(
            f"{tcp_path}.min_rto: {format_duration(tcp['min_rto'])} is not allowed: must be at most "
            f"max_rto ({format_duration(tcp['max_rto'])})",
            f"{tcp_path}.min_rto",
        )
    _check_start_stop(flow, path, duration_ps)
    start_ps, stop_ps = flow["start"], flow["stop"]
    src, dst = _flow_endpoints(flow, path, network)
    cc = flow["cc"]
    algorithm = CC_ALGORITHMS[cc["algorithm"]]
    if cc["algorithm"] == "fast" and cc["beta"] < cc["alpha"]:
        raise ScenarioError(
            f"{path}.cc.beta: {_num(cc['beta'])} is not allowed: must be at least alpha ({_num(cc['alpha'])})",
            f"{path}.cc.beta",
        )
    if cc["algorithm"] == "htcp" and cc["beta_min"] > cc["beta_max"]:
        raise ScenarioError(
            f"{path}.cc.beta_min: {_num(cc['beta_min'])} is not allowed: must be at most beta_max ({_num(cc['beta_max'])})",
            f"{path}.cc.beta_min",
        )
    preset = PRESETS.get(cc["preset"])
    recovery = tcp["recovery"] or (preset.recovery if preset else "sack")
    max_ssthresh = tcp["max_ssthresh"] if tcp["max_ssthresh"] is not None else (preset.tcp.get("max_ssthresh") if preset else None)
    initial_window = tcp["initial_window"]
    if initial_window == InitialWindow.RFC3390:
        initial_window = rfc3390_initial_window(mss)
    if flow["http"] is not None:
        source = _normalize_http(flow, path, start_ps, stop_ps, mss)
    else:
        source = _normalize_source(flow, path, start_ps, stop_ps)
    handshake = tcp["handshake"] if tcp["handshake"] is not None else flow["http"] is not None
    if not handshake and source["kind"] == "http" and not source["persistent"]:
        raise _fail(
            f"{tcp_path}.handshake", False,
            'HTTP/1.0 opens a connection per request with a handshake (only version = "1.1" may start established)',
        )
    return {
        "name": flow["name"] if flow["name"] is not None else f"flow{index}",
        "src": src,
        "dst": dst,
        "group": None,
        "source": source,
        "start_jitter_ps": flow["start_jitter"],
        "tcp": {
            "mss_bytes": mss,
            "initial_window_segments": initial_window,
            "rcv_buffer_bytes": tcp["rcv_buffer"],
            "snd_buffer_bytes": tcp["snd_buffer"],
            "window_scaling": tcp["window_scaling"],
            "timestamps": tcp["timestamps"],
            "delayed_ack": tcp["delayed_ack"],
            "delayed_ack_timeout_ps": tcp["delayed_ack_timeout"],
            "ack_every_segments": tcp["ack_every"],
            "dupack_threshold": tcp["dupack_threshold"],
            "newreno_impatient": tcp["newreno_impatient"],
            "ecn": tcp["ecn"],
            "recovery": recovery,
            "fack": tcp["fack"],
            "dcr_div": tcp["dcr_div"],
            "max_ssthresh_segments": max_ssthresh or 0,
            "initial_ssthresh_segments": tcp["initial_ssthresh"],
            "receiver_drain_rate_bps": tcp["receiver_drain_rate"],
            "pacing_gain": tcp["pacing_gain"],
            "min_rto_ps": tcp["min_rto"],
            "max_rto_ps": tcp["max_rto"],
            "initial_rto_ps": tcp["initial_rto"],
            "handshake": handshake,
            "slow_start_after_idle": tcp["slow_start_after_idle"],
            "random_send_delay_ps": tcp["random_send_delay"],
        },
        "cc": algorithm.normalize(
            {k: v for k, v in cc.items() if k not in ("algorithm", "preset")}, _join(path, "cc")
        ),
    }


def _flow_endpoints(
    flow: Dict[str, Any], path: str, network: Network, both_ways: bool = True
) -> Tuple[int, int]:
    """(src, dst) node indices of a flow: by pair and direction, or by host names (custom).
    ``both_ways``: the flow needs a route back too (TCP's ACKs; UDP does not)."""
    shape = network.shape
    if network.hosts is not None:
        for key in ("pair", "direction"):
            if flow[key] is not None:
                raise _fail(
                    _join(path, key), flow[key],
                    f'with shape = "{shape}" a flow names its hosts with src and dst instead',
                )
        known = ", ".join(json.dumps(h) for h in network.hosts)
        for key in ("src", "dst"):
            if flow[key] is None:
                sub = _join(path, key)
                raise ScenarioError(
                    f'{sub}: missing; required with shape = "{shape}" (a host: {known})', sub
                )
            if flow[key] not in network.hosts:
                raise _fail(_join(path, key), flow[key], f"expected a host of topology.nodes: {known}")
        if flow["src"] == flow["dst"]:
            raise _fail(_join(path, "dst"), flow["dst"], "must differ from src")
        src, dst = network.hosts[flow["src"]], network.hosts[flow["dst"]]
        for a, b in ((src, dst), (dst, src))[: 2 if both_ways else 1]:
            if hop_count(network, a, b) is None:
                what = "data" if a == src else "ACKs"
                raise _fail(
                    _join(path, "dst"), flow["dst"],
                    f"no route for the {what} from {json.dumps(network.nodes[a]['name'])} to "
                    f"{json.dumps(network.nodes[b]['name'])} over topology.links",
                )
        return src, dst
    for key in ("src", "dst"):
        if flow[key] is not None:
            raise _fail(
                _join(path, key), flow[key],
                f'src and dst name hosts only with shape = "custom"; with shape = "{shape}" a '
                "flow chooses pair and direction",
            )
    pairs = network.pairs if network.pairs is not None else [network.endpoints]
    pair = flow["pair"] if flow["pair"] is not None else 0
    if pair >= len(pairs):
        allowed = f'shape = "{shape}" has {len(pairs)} pair(s), 0 to {len(pairs) - 1}'
        if network.pair_doc:
            allowed += f" ({network.pair_doc})"
        raise _fail(_join(path, "pair"), pair, allowed)
    direction = flow["direction"] if flow["direction"] is not None else "forward"
    if direction not in pairs[pair]:
        raise _fail(_join(path, "direction"), direction, f'shape = "{shape}" has no such direction')
    return pairs[pair][direction]


def _expand_streams(parsed: List[Dict[str, Any]], flows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Each flow with streams = N > 1 becomes N flows "<name>.1" ... "<name>.N" in group
    "<name>", with bytes shared out (the first bytes % N streams carry one byte more)."""
    expanded: List[Dict[str, Any]] = []
    owner: Dict[str, int] = {f["name"]: i for i, f in enumerate(flows)}
    for i, (user, flow) in enumerate(zip(parsed, flows)):
        n = user["streams"]
        if n == 1:
            expanded.append(flow)
            continue
        source = flow["source"]
        if source["kind"] != "bulk":
            raise _fail(
                f"flows[{i}].streams", n,
                "parallel streams are bulk transfers; not with burst_size (pace each flow separately)",
            )
        total = source["bytes"]
        if total is not None and total < n:
            raise _fail(f"flows[{i}].bytes", total, f"must give each of the {n} streams at least one byte")
        for k in range(n):
            name = f"{flow['name']}.{k + 1}"
            if name in owner:
                raise _fail(
                    f"flows[{i}].streams", n,
                    f"stream name {json.dumps(name)} is already the name of flows[{owner[name]}]",
                )
            stream = json.loads(json.dumps(flow))
            stream["name"] = name
            stream["group"] = flow["name"]
            if total is not None:
                stream["source"]["bytes"] = total // n + (1 if k < total % n else 0)
            expanded.append(stream)
    return expanded


def _check_unique_names(parsed: List[Dict[str, Any]], flows: List[Dict[str, Any]]) -> None:
    seen: Dict[str, int] = {}
    for i, flow in enumerate(flows):
        name = flow["name"]
        if name in seen:
            j = seen[name]
            if parsed[i]["name"] is None:
                raise ScenarioError(
                    f'flows[{i}].name: the default name "{name}" is already the name of flows[{j}]; '
                    "give this flow a name",
                    f"flows[{i}].name",
                )
            raise _fail(
                f"flows[{i}].name",
                name,
                f"flow names must be unique, and flows[{j}] is named {json.dumps(name)} too",
            )
        seen[name] = i


# ======================================================================================
# Reference documentation, generated from the schema
# ======================================================================================

REFERENCE_BEGIN = "<!-- BEGIN GENERATED REFERENCE: fatpipe reference --update docs/scenario.md -->"
REFERENCE_END = "<!-- END GENERATED REFERENCE -->"


def _default_doc(f: Field) -> str:
    if f.default is REQUIRED:
        return "**required**"
    if f.default is UNSET:
        return "unset"
    if isinstance(f.default, Derived):
        return f.default.text
    if isinstance(f.default, Mapping):
        return "all defaults"
    return f"`{_toml_literal(f.default)}`"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _section(
    title: str, doc: str, table: Table, tag: Optional[Tuple[str, str, str]] = None
) -> List[str]:
    """One Markdown section: a heading, the table's description, and one row per key."""
    lines = [f"### {title}", ""]
    if doc:
        lines += [doc, ""]
    lines += [
        "| key | type | default | source of the default | meaning |",
        "|---|---|---|---|---|",
    ]
    if tag is not None:
        key, value, meaning = tag
        lines.append(f"| `{key}` | string | `{json.dumps(value)}` | | {_md(meaning)} |")
    for f in table.fields:
        lines.append(
            f"| `{f.key}` | {_md(f.kind.type_doc)} | {_md(_default_doc(f))} | {_md(f.source)} | {_md(f.doc)} |"
        )
    return lines + [""]


def _walk(
    title: str, header: str, doc: str, table: Table, tag: Optional[Tuple[str, str, str]] = None
) -> List[str]:
    lines = _section(title, doc, table, tag)
    for f in table.fields:
        child = f"{header}.{f.key}" if header else f.key
        kind = f.kind
        if isinstance(kind, TableArray) and isinstance(kind.table, Tagged):
            lines += _walk_variants(f"[[{child}]]", child, f.doc, kind.table)
        elif isinstance(kind, TableArray):
            lines += _walk(f"`[[{child}]]`", child, kind.table.doc, kind.table)
        elif isinstance(kind, Tagged):
            lines += _walk_variants(f"[{child}]", child, f.doc, kind)
        elif isinstance(kind, Table):
            lines += _walk(f"`[{child}]`", child, kind.doc, kind)
    return lines


def _walk_variants(header_text: str, child: str, doc: str, kind: Tagged) -> List[str]:
    """One section per variant of a tagged table (``header_text`` is ``[x]`` or ``[[x]]``)."""
    lines: List[str] = []
    for value, variant in kind.variants.items():
        default_note = " (the default)" if value == kind.default_tag else ""
        lines += _walk(
            f"`{header_text}` with `{kind.tag} = {json.dumps(value)}`{default_note}",
            child,
            f"{doc[:1].upper()}{doc[1:]}. {variant.doc}".strip(),
            variant,
            tag=(
                kind.tag,
                value,
                f"{kind.tag_doc}; one of {', '.join(json.dumps(v) for v in kind.variants)}",
            ),
        )
    return lines


#: The [flows.tcp] keys that modify how any algorithm runs (listed by `fatpipe algorithms`).
MODIFIER_KEYS = ("recovery", "fack", "dcr_div", "max_ssthresh", "pacing_gain", "initial_window")


def format_algorithms() -> str:
    """Every preset, algorithm (with parameters) and modifier, with defaults and sources
    (Markdown), for `fatpipe algorithms`."""
    lines = [
        "## Presets (`cc = \"name\"`)",
        "",
        format_presets(),
        "## Algorithms (`[flows.cc]` with `algorithm = \"name\"`)",
        "",
    ]
    for name, alg in CC_ALGORITHMS.items():
        lines += _section(f"`{name}`", alg.table.doc, alg.table) + [""]
    modifiers = Table(
        fields=tuple(f for f in _TCP.fields if f.key in MODIFIER_KEYS),
        doc="Loss recovery and the modifiers any algorithm can take.",
    )
    lines += ["## Modifiers (`[flows.tcp]`)", ""] + _section("", modifiers.doc, modifiers)[2:]
    return "\n".join(lines).rstrip() + "\n"


def format_reference() -> str:
    """The reference of every scenario key (Markdown), generated from the schema."""
    return (
        "\n".join(
            _walk("Top level", "", "Keys at the top of the file, before any [table].", SCENARIO)
        ).rstrip()
        + "\n\n### Presets (`cc = \"name\"`)\n\n"
        + "A preset names a TCP version: an algorithm, its parameters and a loss recovery. "
        + "Keys set in [flows.tcp] override the preset's.\n\n"
        + format_presets()
    )


def update_reference(doc_path: PathLike) -> bool:
    """Rewrites the generated block of ``doc_path`` (between the markers); True if changed."""
    p = Path(doc_path)
    text = p.read_text(encoding="utf-8")
    begin, end = text.index(REFERENCE_BEGIN), text.index(REFERENCE_END)
    new = text[: begin + len(REFERENCE_BEGIN)] + "\n\n" + format_reference() + "\n" + text[end:]
    if new != text:
        p.write_text(new, encoding="utf-8")
        return True
    return False
