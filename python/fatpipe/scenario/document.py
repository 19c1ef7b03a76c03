"""The whole scenario: its top-level table, reading files, and :func:`load`, which turns a
user's scenario into the normalized document for the core."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from ..units import U64_MAX, UnitError, describe_value, format_duration
from .bpf import paths_relative_to
from .budget import check_budget, check_counts
from .flows import _FLOW, _check_unique_names, _expand_streams, _normalize_flow
from .impairments import attach_impairments
from .kinds import Duration, Integer, Name
from .network import SHAPE_COMMON_KEYS
from .output import _OUTPUT, _capture_points, default_sample_interval_ps
from .schema import Derived, Field, PathLike, ScenarioError, Table, TableArray, Tagged, _fail
from .topologies import SHAPE_LABELS, SHAPES

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.9/3.10 only
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

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


@dataclass
class Loaded:
    """A validated scenario: ``core`` is the normalized document for the core (exactly the
    keys of ``docs/core-interface.md``); ``plots`` is the Python-side output option."""

    core: Dict[str, Any]
    plots: bool = True
    #: capture specs for the core's ``captures`` without ``path`` (the runner decides where)
    captures: List[Dict[str, Any]] = field(default_factory=list)
    #: ``output.memory_budget``, bytes (None: a normalized document, which has no [output])
    memory_budget: Optional[int] = None


#: The largest scenario or sweep file read (and standard input for `fatpipe run -`): far more
#: than any scenario written by hand or generated (the 100-group benchmark of 100,000 flows
#: is 4 KB as streams; 100,000 [[flows]] tables written out are about 5 MB), and a bound on
#: what `fatpipe run /dev/zero` or an endless pipe can make fatpipe read (issue 23: 330 MB/s
#: without end).
MAX_SCENARIO_BYTES = 16 * 2**20


def read_capped(file: Any) -> bytes:
    """Reads a binary file object to its end, refusing (ScenarioError) past
    :data:`MAX_SCENARIO_BYTES` without reading more than one byte beyond."""
    data = file.read(MAX_SCENARIO_BYTES + 1)
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(
            f"larger than {MAX_SCENARIO_BYTES // 2**20} MiB, the most a scenario or sweep file may be (a device or "
            "an endless stream?); a scenario this large is better built as a dict (fatpipe.run) or with streams"
        )
    return data


def read_scenario_file(path: PathLike) -> Dict[str, Any]:
    """Reads a TOML file (or ``.json`` with the same structure) into a dict.

    Raises ``OSError`` if the file cannot be read and :class:`ScenarioError` if it is not
    valid TOML/JSON (the message gives the line) or larger than :data:`MAX_SCENARIO_BYTES`.
    """
    p = Path(path)
    with open(p, "rb") as file:
        data = read_capped(file)
    return read_scenario_bytes(data, json_format=p.suffix.lower() == ".json")


#: The deepest nesting of tables and arrays a scenario or sweep may have: a scenario's own
#: go five deep ([topology.links.queue], sweeps' [grid.flows...] a few more); 10,000 levels
#: made the parser fail with a RecursionError (issue 23).
MAX_DEPTH = 32
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels of tables and arrays, which no scenario or sweep needs"


def check_depth(doc: Any) -> None:
    """Refuses (ScenarioError) tables and arrays nested deeper than :data:`MAX_DEPTH`."""
    if _depth(doc) > MAX_DEPTH:
        raise ScenarioError(_TOO_DEEP)


def _depth(value: Any) -> int:
    """How deep tables and arrays nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:
            stack.extend((child, level + 1) for child in children)
    return deepest


def read_scenario_bytes(data: bytes, json_format: bool = False) -> Dict[str, Any]:
    """A scenario's text (TOML, or JSON with ``json_format``) as a dict: what
    :func:`read_scenario_file` reads, and ``fatpipe run -`` from standard input. Raises
    :class:`ScenarioError` if it is not valid UTF-8 TOML/JSON (the message gives the line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(f"not UTF-8 text (byte {err.start})") from None
    if json_format:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise ScenarioError(
                f"invalid JSON: {err.msg} (at line {err.lineno}, column {err.colno})"
            ) from None
        except RecursionError:
            raise ScenarioError(_TOO_DEEP) from None
    else:
        if _toml is None:
            raise ImportError(
                "reading TOML on Python < 3.11 needs the tomli package (pip install tomli)"
            )
        try:
            doc = _toml.loads(text)
        except _toml.TOMLDecodeError as err:
            raise ScenarioError(f"invalid TOML: {err}") from None
        except RecursionError:
            raise ScenarioError(_TOO_DEEP) from None
    check_depth(doc)
    if not isinstance(doc, dict):
        raise _fail("scenario", doc, "expected a table at the top level")
    return doc


def load(source: Union[PathLike, Mapping[str, Any]]) -> Loaded:
    """Validates a scenario (a file path or a dict in the user format) and normalizes it."""
    if isinstance(source, Mapping):
        doc: Mapping[str, Any] = source
        default_name = "scenario"
        # Counts first: a million flows are refused before they are walked for their depth.
        check_counts(doc, _memory_budget(doc))
        check_depth(doc)
        base = None
    elif not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"a scenario is a file path or a dict, not {type(source).__name__}")
    else:
        doc = read_scenario_file(source)  # no deeper than MAX_DEPTH, at most 16 MiB
        default_name = Path(source).stem or "scenario"
        check_counts(doc, _memory_budget(doc))
        base = Path(source).resolve().parent
    # A BPF congestion control's file is found beside the scenario file (scenario/bpf.py).
    with paths_relative_to(base):
        top = SCENARIO.parse(doc, "")
    duration_ps = top["duration"]
    output = top["output"]
    if output["sample_interval"] is None:
        output["sample_interval"] = default_sample_interval_ps(duration_ps)
    elif output["sample_interval"] > duration_ps:
        raise ScenarioError(
            f"output.sample_interval: {format_duration(output['sample_interval'])} is not allowed: "
            f"must be at most the duration ({format_duration(duration_ps)})",
            "output.sample_interval",
        )
    name = top["name"] if top["name"] is not None else _default_name(default_name)
    topo = top["topology"]
    shape = SHAPES[topo["shape"]]
    own = {k: v for k, v in topo.items() if k != "shape" and k not in SHAPE_COMMON_KEYS}
    network = shape.build(own, "topology")
    network.shape = topo["shape"]
    attach_impairments(
        network, topo["impairments"], "topology.impairments", duration_ps,
        shape=SHAPE_LABELS.get(topo["shape"], topo["shape"]),
    )
    # Which field set each link's queue (for the budget's message), then the core's keys only.
    queue_fields = {i: link["queue"].pop("_field") for i, link in enumerate(network.links) if "_field" in link["queue"]}
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
    _check_in_core(core, top["flows"])
    captures = _capture_points(output, network, duration_ps)
    check_budget(core, captures, output, queue_fields)
    return Loaded(core=core, plots=output["plots"], captures=captures, memory_budget=output["memory_budget"])


def _memory_budget(doc: Mapping[str, Any]) -> int:
    """``output.memory_budget`` as written (its default if absent or not yet valid: the
    validation proper reports a bad value), read before the rest of the scenario."""
    budget = next(f for f in _OUTPUT.fields if f.key == "memory_budget")
    output = doc.get("output")
    raw = output.get("memory_budget", budget.default) if isinstance(output, Mapping) else budget.default
    try:
        return budget.kind.parse(raw, "output.memory_budget")
    except ScenarioError:
        return budget.kind.parse(budget.default, "output.memory_budget")


def _default_name(stem: str) -> str:
    """The file's name as the scenario's name, if it can be one (a name is checked as if
    written in the file, and the message says where it came from)."""
    try:
        return Name().convert(stem)
    except UnitError as err:
        raise ScenarioError(
            f"name: not given, and the file name, {describe_value(stem)}, cannot be one: {err.allowed}; "
            'give name = "..." in the scenario',
            "name",
        ) from None


def _check_in_core(core: Dict[str, Any], parsed_flows: List[Dict[str, Any]]) -> None:
    """Asks the core to validate the normalized scenario. Rules the core must enforce anyway
    live there alone and are not restated here: every flow of a custom network finds its way
    (routes are the core's to compute, shortest paths with the explicit routes laid over
    them) and each algorithm's own parameter rules (CUBIC's Linux fixed point, ...). Either
    comes back as data naming the normalized flow, mapped here to the user's."""
    from ..core import import_core

    core_module = import_core()
    # Streams are expanded after validation: map the core's flow back to the user's.
    origin = [i for i, flow in enumerate(parsed_flows) for _ in range(flow["streams"])]
    try:
        core_module.check(core)
    except core_module.RouteError as err:
        i = origin[err.flow]
        problem = err.problem if err.loops else f"{err.problem} over topology.links"
        raise _fail(f"flows[{i}].dst", parsed_flows[i]["dst"], problem) from None
    except core_module.FlowFieldError as err:
        path = f"flows[{origin[err.flow]}]{err.field}"
        raise ScenarioError(f"{path}: {err.problem}", path) from None
    except ValueError as err:  # the normalizer wrote something the core refuses: a bug here
        raise ScenarioError(f"the core refused the normalized scenario: {err}") from None


def load_scenario(source: Union[PathLike, Mapping[str, Any]]) -> Dict[str, Any]:
    """Reads and validates a scenario; returns the normalized, JSON-ready document.

    ``source`` is a path to a TOML file or a dict of the same structure. Raises
    :class:`ScenarioError` (one line naming the field) for any mistake, ``OSError`` if the
    file cannot be read.
    """
    return load(source).core
