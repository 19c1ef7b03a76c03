"""The schema machinery: errors, field markers, and the containers a scenario is made of.

A :class:`Table` has :class:`Field` entries (key, kind, meaning, default and the default's
source); a :class:`TableArray` is ``[[x]]``; a :class:`Tagged` table's keys depend on one of
them (``shape``, ``discipline``, ``algorithm``). Parsing checks unknown keys, missing keys
and types, and names the field as the user wrote it. Value kinds are in :mod:`.kinds`.
"""

from __future__ import annotations

import abc
import difflib
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..units import describe_value, plain_scalar, UnitError

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
            # numpy scalars (np.int64(10_000_000) as a rate or a seed) are the numbers they hold.
            return self.convert(plain_scalar(value))
        except UnitError as err:
            raise ScenarioError(f"{path}: {err}", path) from None


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
