"""Sweeps: one base scenario, some of its parameters varied, every combination a run.

A sweep is a base scenario (a scenario file or table) plus parameters to vary, each named
by a *path* into the scenario and given a list of values (``docs/sweeps.md``):

- ``grid``: each parameter is an axis; the points are the cartesian product of the axes,
  the last parameter varying fastest.
- ``zip``: one or more groups of equally long lists varied together; each group is one more
  axis of the product (the first values together, then the second values, ...).
- ``replications = N``: every point runs N times with seeds derived from its own
  (:func:`replication_seed`).

Paths (:func:`parse_path`): keys joined by dots, array elements selected in brackets by
position (``flows[0]``), by name (``flows[cubic]``), by a name pattern (``flows[f*]``) or
all at once (``flows[*]``, also written ``flows.*``). Setting a key creates missing tables on the way, so
``flows[0].tcp.rcv_buffer`` works on a flow without a ``[flows.tcp]`` table.

This module only builds and validates the points (no pandas, no compiled core), so
``fatpipe sweep --dry-run`` is quick; ``sweep_runner`` runs them.
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .scenario import (
    SCENARIO,
    UNSET,
    Field,
    Integer,
    Kind,
    Name,
    ScenarioError,
    Table,
    check_depth,
    load,
    read_scenario_file,
)
from .units import UnitError, describe_value

__all__ = [
    "SweepError",
    "Sweep",
    "Point",
    "Parameter",
    "load_sweep",
    "parse_path",
    "format_path",
    "set_path",
    "replication_seed",
    "MAX_REPLICATIONS",
    "MAX_RUNS",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The scenario's seed field's kind (an invalid point still gets its seed in the summary).
SCENARIO_SEED = next(f.kind for f in SCENARIO.fields if f.key == "seed")
#: More replications than this is surely a typo (and would not fit in memory as points).
MAX_REPLICATIONS = 1_000_000
#: The most runs a sweep may have (points x replications), checked before any point is
#: built: every point is validated and kept, its normalized scenario in memory, before the
#: first run. Measured: 10,000 points of a dumbbell, --dry-run: 102 MB peak, 12 s on a loaded
#: 2-core machine (7 KB and 1.2 ms a point), so this bound is under a GB and a few minutes; a
#: sweep of 10^6 points ran --dry-run past 60 s, growing, before this (issue 23).
MAX_RUNS = 100_000


class SweepError(ScenarioError):
    """A mistake in a sweep's definition (not in one of its points), on one line."""


# ======================================================================================
# Paths into a scenario
# ======================================================================================


@dataclass(frozen=True)
class Step:
    """One step of a path: ``key`` (a table's key), ``index`` (an array element by
    position), ``name`` (the element whose ``name`` is this) or ``all`` (every element)."""

    kind: str
    value: Any = None


_KEY = re.compile(r"[A-Za-z0-9_-]+")


def parse_path(text: str) -> Tuple[Step, ...]:
    """Parses a path such as ``topology.bottleneck_rate``, ``flows[0].cc``,
    ``flows[cubic].tcp.mss`` or ``flows[*].tcp.rcv_buffer`` (``flows.*.tcp.rcv_buffer``).

    Keys are TOML bare keys (letters, digits, ``_``, ``-``). In brackets: a whole number
    selects by position, ``*`` selects every element, anything else the element whose
    ``name`` it is. Raises :class:`SweepError` for a malformed path.
    """
    if not isinstance(text, str) or not text:
        raise SweepError(f"{describe_value(text)} is not allowed as a path: expected text such as \"topology.bottleneck_rate\"")

    def bad(why: str) -> SweepError:
        return SweepError(
            f"{json.dumps(text)} is not allowed as a path: {why} (paths look like "
            '"topology.bottleneck_rate", "flows[0].cc", "flows[*].tcp.rcv_buffer")'
        )

    steps: List[Step] = []
    pos = 0
    expect_key = True  # at the start and after a dot
    while pos < len(text):
        if expect_key:
            if text.startswith("*", pos) and steps:
                steps.append(Step("all"))
                pos += 1
            else:
                match = _KEY.match(text, pos)
                if match is None:
                    raise bad(f"expected a key at character {pos + 1}")
                steps.append(Step("key", match.group()))
                pos = match.end()
            expect_key = False
        elif text[pos] == ".":
            pos += 1
            expect_key = True
        elif text[pos] == "[":
            end = text.find("]", pos)
            if end < 0:
                raise bad("a [ without its ]")
            inside = text[pos + 1 : end]
            if inside == "*":
                steps.append(Step("all"))
            elif re.fullmatch(r"[0-9]+", inside):
                steps.append(Step("index", int(inside)))
            elif inside:
                steps.append(Step("name", inside))
            else:
                raise bad("empty brackets")
            pos = end + 1
        else:
            raise bad(f"unexpected {text[pos]!r} at character {pos + 1}")
    if expect_key:
        raise bad("it ends with a dot")
    return tuple(steps)


def format_path(steps: Sequence[Step]) -> str:
    """The canonical spelling of a path (``flows.*.x`` becomes ``flows[*].x``)."""
    parts: List[str] = []
    for step in steps:
        if step.kind == "key":
            parts.append(("." if parts else "") + step.value)
        elif step.kind == "all":
            parts.append("[*]")
        else:
            parts.append(f"[{step.value}]")
    return "".join(parts)


def set_path(doc: Dict[str, Any], steps: Sequence[Step], value: Any) -> None:
    """Sets ``value`` (a copy) at ``steps`` in ``doc``, in place.

    Missing tables on the way are created; arrays are never created or extended (an element
    that does not exist cannot be chosen). Raises :class:`ScenarioError` naming the path
    when the document has no such place.
    """
    _set(doc, tuple(steps), 0, value, "")


def _set(node: Any, steps: Tuple[Step, ...], i: int, value: Any, where: str) -> None:
    step = steps[i]
    last = i == len(steps) - 1
    if step.kind == "key":
        here = f"{where}.{step.value}" if where else step.value
        if not isinstance(node, dict):
            raise ScenarioError(
                f"{where}: {describe_value(node)} is not a table, so it has no key {step.value!r}; "
                f"vary {where} itself",
                where,
            )
        if last:
            node[step.value] = copy.deepcopy(value)
            return
        if node.get(step.value) is None:
            if steps[i + 1].kind != "key":
                raise ScenarioError(
                    f"{here}: missing in the scenario, so no element of it can be chosen",
                    here,
                )
            node[step.value] = {}
        _set(node[step.value], steps, i + 1, value, here)
        return
    # An element selector: the node must be an array.
    if not isinstance(node, list):
        raise ScenarioError(
            f"{where}: {describe_value(node)} is not an array, so {format_path([step])} selects nothing",
            where,
        )
    if step.kind == "all":
        chosen = list(range(len(node)))
        if not chosen:
            raise ScenarioError(f"{where}: the array is empty, so [*] selects nothing", where)
    elif step.kind == "index":
        if step.value >= len(node):
            raise ScenarioError(
                f"{where}[{step.value}]: no such element: {where} has {len(node)} "
                f"(positions 0 to {len(node) - 1})",
                f"{where}[{step.value}]",
            )
        chosen = [step.value]
    else:
        # A name with * or ? is a pattern (fnmatch): every element whose name it matches.
        pattern = any(c in step.value for c in "*?")
        chosen = [
            j for j, e in enumerate(node)
            if isinstance(e, dict) and isinstance(e.get("name"), str)
            and (fnmatch.fnmatchcase(e["name"], step.value) if pattern else e["name"] == step.value)
        ]
        if not chosen:
            names = [str(e["name"]) for e in node if isinstance(e, dict) and "name" in e]
            known = f"names: {', '.join(names)}" if names else "no element has a name"
            what = "matches" if pattern else "is named"
            raise ScenarioError(
                f"{where}[{step.value}]: no element of {where} {what} {step.value!r}; {known}",
                f"{where}[{step.value}]",
            )
    for j in chosen:
        here = f"{where}[{j}]"
        if last:
            node[j] = copy.deepcopy(value)
        else:
            _set(node[j], steps, i + 1, value, here)


# ======================================================================================
# The sweep definition
# ======================================================================================


@dataclass(frozen=True)
class Parameter:
    """A varied parameter: its canonical path, parsed steps and its values."""

    path: str
    steps: Tuple[Step, ...]
    values: Tuple[Any, ...]


@dataclass
class Point:
    """One run of a sweep.

    ``params`` maps each varied path to its value here (in the sweep's order); ``core`` is
    the normalized scenario with this run's seed, or None when the point is invalid, in which
    case ``error`` says why (one line, naming the field). ``run_id`` depends only on the
    parameters and the replication, so it stays the same when other values are added to
    the sweep; ``scenario_sha256`` is the hash of ``core``: a finished run is reused only if
    it ran exactly this document.
    """

    index: int
    run_id: str
    replication: int
    seed: Optional[int]
    params: Dict[str, Any]
    core: Optional[Dict[str, Any]]
    error: Optional[str] = None

    @property
    def valid(self) -> bool:
        return self.core is not None

    @property
    def scenario_sha256(self) -> Optional[str]:
        return None if self.core is None else _sha256(self.core)

    def label(self) -> str:
        """``path=value, ...`` (values as JSON), for messages."""
        parts = [f"{path}={_json(value)}" for path, value in self.params.items()]
        parts.append(f"replication {self.replication}")
        return ", ".join(parts)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _sha256(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def replication_seed(seed: int, replication: int) -> int:
    """The seed of replication ``replication`` of a point whose scenario has ``seed``.

    Replication 0 keeps the scenario's seed, so it repeats ``fatpipe run`` of that point;
    replication r >= 1 uses the first 8 bytes (big-endian) of
    SHA-256("fatpipe-sweep-seed:<seed>:<r>") with the top bit cleared (63 bits, so seeds fit
    the int64 columns of Parquet and pandas). The same replication of different points gets
    the same seed (common random numbers: a difference between two points is not a
    difference of random draws).
    """
    if replication == 0:
        return seed
    digest = hashlib.sha256(f"fatpipe-sweep-seed:{seed}:{replication}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & (2**63 - 1)


class _Base(Kind):
    type_doc = "string or table"

    def parse(self, value: Any, path: str) -> Any:
        if isinstance(value, (str, os.PathLike)) and str(value):
            return value
        if isinstance(value, Mapping):
            return value
        raise ScenarioError(
            f"{path}: {describe_value(value)} is not allowed: expected the path of a scenario "
            'file (base = "../reno.toml") or a scenario table ([base])',
            path,
        )


def _as_list(value: Any) -> Optional[List[Any]]:
    """A list of values from a list, tuple, range or array (``tolist()``); None otherwise."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # numpy arrays, pandas series: plain Python values
    if isinstance(value, (list, tuple, range)):
        return list(value)
    return None


def _flatten(table: Any, path: str, prefix: str = "") -> Iterator[Tuple[str, str, Any]]:
    """(parameter path, where in the sweep file, values) for each list in ``table``; nested
    tables continue the path (``[grid.topology] rtt = [...]`` is ``topology.rtt``)."""
    if not isinstance(table, Mapping):
        raise ScenarioError(
            f"{path}: {describe_value(table)} is not allowed: expected a table of "
            'path = [values], such as "topology.rtt" = ["20ms", "68ms"]',
            path,
        )
    for key, value in table.items():
        param = f"{prefix}.{key}" if prefix else str(key)
        where = f"{path}.{param}"
        if isinstance(value, Mapping):
            yield from _flatten(value, path, param)
            continue
        values = _as_list(value)
        if values is None:
            raise ScenarioError(
                f"{where}: {describe_value(value)} is not allowed: expected a list of the "
                f"values to try, such as [{describe_value(value)}]",
                where,
            )
        if not values:
            raise ScenarioError(f"{where}: [] is not allowed: give at least one value", where)
        yield param, where, values


class _Grid(Kind):
    type_doc = "table of path = [values]"

    def parse(self, value: Any, path: str) -> List[List[Tuple[str, str, List[Any]]]]:
        # Every parameter is an axis of its own.
        return [[entry] for entry in _flatten(value, path)]


class _Zip(Kind):
    type_doc = "table, or array of tables, of path = [values]"

    def parse(self, value: Any, path: str) -> List[List[Tuple[str, str, List[Any]]]]:
        groups = [value] if isinstance(value, Mapping) else _as_list(value)
        if groups is None:
            raise ScenarioError(
                f"{path}: {describe_value(value)} is not allowed: expected a table of "
                "path = [values] ([zip]), or several ([[zip]])",
                path,
            )
        axes = []
        for i, group in enumerate(groups):
            where = path if isinstance(value, Mapping) else f"{path}[{i}]"
            entries = list(_flatten(group, where))
            if not entries:
                continue
            lengths = {len(values) for _, _, values in entries}
            if len(lengths) > 1:
                counts = ", ".join(f"{param} has {len(values)}" for param, _, values in entries)
                raise ScenarioError(
                    f"{where}: lists of different lengths are not allowed: zipped lists go "
                    f"together value by value ({counts})",
                    where,
                )
            axes.append(entries)
        return axes


#: The sweep file's keys (the same machinery as the scenario's: unknown keys, "did you mean").
SWEEP = Table(
    fields=(
        Field("name", Name(), "name of the sweep", UNSET, "the sweep file's name"),
        Field("base", _Base(), "the base scenario: a file path (relative to the sweep file) or a table"),
        Field("grid", _Grid(), "parameters varied as a cartesian product", {}, "none"),
        Field("zip", _Zip(), "groups of parameters varied together", [], "none"),
        Field(
            "replications",
            Integer(minimum=1, maximum=MAX_REPLICATIONS, example=10),
            "runs of every point, with derived seeds",
            1,
            "one run per point",
        ),
    ),
    doc="A sweep.",
)


@dataclass
class Sweep:
    """A validated sweep definition: ``base`` (a scenario in the user format), ``axes``
    (each a list of parameters varied together), ``replications``."""

    name: str
    base: Dict[str, Any]
    axes: List[List[Parameter]]
    replications: int = 1

    @classmethod
    def build(
        cls,
        base: Union[PathLike, Mapping[str, Any]],
        grid: Optional[Mapping[str, Any]] = None,
        zip: Any = None,
        replications: int = 1,
        name: Optional[str] = None,
        relative_to: Optional[Path] = None,
    ) -> "Sweep":
        """A sweep from its parts (the keys of a sweep file). A relative ``base`` path is
        taken from ``relative_to`` (the sweep file's folder) or the working directory.
        Raises :class:`SweepError` naming the key at fault."""
        doc: Dict[str, Any] = {"base": base, "replications": replications}
        if grid is not None:
            doc["grid"] = grid
        if zip is not None:
            doc["zip"] = zip
        if name is not None:
            doc["name"] = name
        return cls._from_doc(doc, relative_to, default_name=None)

    @classmethod
    def from_file(cls, path: PathLike) -> "Sweep":
        """Reads a sweep file (TOML, or JSON of the same structure)."""
        doc = read_scenario_file(path)
        return cls._from_doc(doc, Path(path).parent, default_name=Path(path).stem or "sweep")

    @classmethod
    def _from_doc(
        cls, doc: Mapping[str, Any], relative_to: Optional[Path], default_name: Optional[str]
    ) -> "Sweep":
        check_depth(doc)
        try:
            top = SWEEP.parse(doc, "")
        except SweepError:
            raise
        except ScenarioError as err:
            raise SweepError(str(err), err.field) from None
        base = _read_base(top["base"], relative_to)
        axes: List[List[Parameter]] = []
        seen: Dict[str, str] = {}
        for axis in top["grid"] + top["zip"]:
            params = []
            for text, where, values in axis:
                steps = parse_path_at(text, where)
                canonical = format_path(steps)
                if canonical in seen:
                    raise SweepError(
                        f"{where}: {canonical} is varied twice (also at {seen[canonical]}); "
                        "give each parameter once",
                        where,
                    )
                seen[canonical] = where
                params.append(Parameter(canonical, steps, tuple(values)))
            axes.append(params)
        if top["name"] is not None:
            name = top["name"]
        elif default_name is not None:
            try:
                name = Name().convert(default_name)
            except UnitError as err:
                raise SweepError(f"name: not given, and the sweep file's name cannot be one: {err.allowed}; "
                                 'give name = "..."', "name") from None
        else:
            name = str(base.get("name") or "sweep")
        if "seed" in seen and top["replications"] > 1:
            # The summary's seed column is the seed each run used; a varied seed with
            # derived replication seeds would need two, and mean nothing more.
            raise SweepError(
                f"{seen['seed']}: varying seed is not allowed with replications = "
                f"{top['replications']}: give the seeds to run, or use replications (which "
                "derives them), not both",
                seen["seed"],
            )
        sweep = cls(name=name, base=base, axes=axes, replications=top["replications"])
        if len(sweep) > MAX_RUNS:
            raise SweepError(
                f"{sweep.describe()}: more than the {MAX_RUNS:,} runs a sweep may have (each point is validated and "
                "held before the first run); vary fewer values, or split it into several sweeps"
            )
        sweep._check_distinct()
        return sweep

    # ---- points -------------------------------------------------------------------------

    @property
    def parameters(self) -> List[Parameter]:
        return [p for axis in self.axes for p in axis]

    @property
    def shape(self) -> List[int]:
        """The length of each axis (a grid parameter or a zip group)."""
        return [len(axis[0].values) for axis in self.axes]

    def __len__(self) -> int:
        n = self.replications
        for length in self.shape:
            n *= length
        return n

    def _assignments(self) -> Iterator[Dict[str, Any]]:
        """Every combination, as {path: value}: the product of the axes in order, the last
        varying fastest."""
        for combo in itertools.product(*(range(n) for n in self.shape)):
            params: Dict[str, Any] = {}
            for axis, k in zip(self.axes, combo):
                for p in axis:
                    params[p.path] = p.values[k]
            yield params

    def _check_distinct(self) -> None:
        # A value given twice in one list would make two identical runs with one run id.
        for axis in self.axes:
            rows = [tuple(_json(p.values[k]) for p in axis) for k in range(len(axis[0].values))]
            for k, row in enumerate(rows):
                if row in rows[:k]:
                    first = rows.index(row)
                    params = ", ".join(p.path for p in axis)
                    raise SweepError(
                        f"{params}: value {', '.join(row)} is given twice (positions {first} and "
                        f"{k}); each point runs once (use replications for repeated runs)",
                    )

    def points(self) -> List[Point]:
        """Every run of the sweep, validated: replications of one point are adjacent, so a
        sweep in progress has whole points done. Invalid points carry their error."""
        points: List[Point] = []
        by_path = {p.path: p.steps for p in self.parameters}
        for params in self._assignments():
            doc = copy.deepcopy(self.base)
            core: Optional[Dict[str, Any]] = None
            error: Optional[str] = None
            try:
                for path, value in params.items():
                    set_path(doc, by_path[path], value)
                core = load(doc).core
            except ScenarioError as err:
                error = str(err)
            base_seed = core["seed"] if core is not None else _seed_of(doc)
            for r in range(self.replications):
                seed = None if base_seed is None else replication_seed(base_seed, r)
                point_core = None
                if core is not None:
                    point_core = dict(core)
                    point_core["seed"] = seed
                points.append(
                    Point(
                        index=len(points),
                        run_id=run_id(params, r),
                        replication=r,
                        seed=seed,
                        params=dict(params),
                        core=point_core,
                        error=error,
                    )
                )
        return points

    def describe(self) -> str:
        """``N runs = a x b points x R replications``."""
        shape = " x ".join(str(n) for n in self.shape) or "1"
        reps = f"{self.replications} replication{'s' if self.replications != 1 else ''}"
        total = len(self)
        return f"{total} run{'s' if total != 1 else ''} = {shape} point{'s' if shape != '1' else ''} x {reps}"


def _seed_of(doc: Mapping[str, Any]) -> Optional[int]:
    """The seed an invalid point would have had (for its row), if that much is valid."""
    default = next(f.default for f in SCENARIO.fields if f.key == "seed")
    try:
        return SCENARIO_SEED.parse(doc.get("seed", default), "seed")
    except ScenarioError:
        return None


def run_id(params: Mapping[str, Any], replication: int) -> str:
    """12 hex digits of SHA-256 over the parameters (sorted by path) and the replication:
    the name of the run's directory, stable when the sweep gains other values."""
    key = {"params": sorted((path, value) for path, value in params.items()), "replication": replication}
    return _sha256(key)[:12]


def parse_path_at(text: str, where: str) -> Tuple[Step, ...]:
    """:func:`parse_path` with the sweep file's location in the error."""
    try:
        return parse_path(text)
    except SweepError as err:
        raise SweepError(f"{where}: {err}", where) from None


def _read_base(base: Any, relative_to: Optional[Path]) -> Dict[str, Any]:
    if isinstance(base, Mapping):
        return copy.deepcopy(dict(base))
    path = Path(base)
    if not path.is_absolute() and relative_to is not None:
        path = relative_to / path
    try:
        doc = read_scenario_file(path)
    except ScenarioError as err:
        raise SweepError(f"base: {path}: {err}", "base") from None
    except FileNotFoundError:
        raise SweepError(f"base: {path}: no such file", "base") from None
    except IsADirectoryError:
        raise SweepError(f"base: {path}: is a directory, not a scenario file", "base") from None
    except OSError as err:
        raise SweepError(f"base: {path}: cannot read: {err.strerror or err}", "base") from None
    # As `fatpipe run` names a scenario without a name after its file.
    doc.setdefault("name", path.stem or "scenario")
    return doc


def load_sweep(path: PathLike) -> Sweep:
    """Reads and checks a sweep file; its points are validated by :meth:`Sweep.points`.

    Raises :class:`SweepError` (one line naming the key) for a mistake in the sweep,
    ``OSError`` if the file cannot be read."""
    return Sweep.from_file(path)
