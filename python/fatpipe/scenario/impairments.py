"""Impairments: losses on entering a link (Bernoulli, Gilbert-Elliott, outages) and
parallel paths, attached by link name after a shape has built its links, so the same
``[[topology.impairments]]`` entries work on any shape."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

from ..units import UnitError, format_duration
from .kinds import Duration, Integer, Rate, Real, Size
from .network import Network
from .schema import (
    UNSET, Derived, Field, Kind, Scalar, ScenarioError, Table, TableArray, Tagged, _fail,
    _join, _num,
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


def _normalize_policer(params: Dict[str, Any], path: str, duration_ps: int) -> Dict[str, Any]:
    return {"kind": "policer", "rate_bps": params["rate"], "burst_bytes": params["burst"]}


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
    "policer": ImpairmentKind(
        Table(
            fields=(
                _IMPAIRMENT_LINK,
                Field("rate", Rate(), "the policed rate, bits per second of IP packets"),
                Field(
                    "burst",
                    Size(minimum=1, example="64KB"),
                    "the token bucket's depth: what passes at any rate after a quiet period "
                    "(the bucket starts full)",
                ),
            ),
            doc="A token-bucket policer (issue 28; Flach et al., SIGCOMM 2016, found policers "
            "on up to 7 % of connections): a packet entering the link passes if the bucket, "
            "filling at rate up to burst bytes, holds its IP bytes, and takes them; otherwise "
            "it is dropped, never queued (Linux act_police with conform-exceed drop). Drops "
            "are counted per link as policer_drops_packets.",
        ),
        _normalize_policer,
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
