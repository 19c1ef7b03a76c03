"""The user's scenario format as JSON Schema (``fatpipe schema``), generated from the same
field definitions that parse scenarios and generate docs/scenario.md.

Editors use it for completion, hover documentation and red squiggles in TOML files (taplo,
Even Better TOML; see the README). It checks every key, type, unit spelling and range a
single field can check; rules that tie several fields together (stop after start, MSS
against the MTU, a UDP flow's keys) are for ``fatpipe validate``. A misspelled key anywhere
is refused: every table allows only its own keys.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

from ..units import _DURATION_UNITS, _RATE_UNITS, _SIZE_UNITS, U64_MAX
from .congestion import PRESETS, CongestionControlChoice
from .bpf import ObjectPath, Parameters
from .python_cc import PYTHON_TABLE, ClassSpec, ReportEvery
from .python_cc import Parameters as ClassParameters
from .document import SCENARIO
from .impairments import LinkName, OutageWindows
from .kinds import Boolean, Choice, Duration, DurationList, Integer, Name, Rate, Real, Size, SizeList
from .output import CapturePoints
from .reference import _default_doc
from .schema import REQUIRED, Derived, Field, Kind, Table, TableArray, Tagged
from .tcp import InitialWindow
from .topologies import NodePath

__all__ = ["user_schema", "SCHEMA_ID"]

SCHEMA_ID = "https://fatpipe.invalid/scenario.schema.json"

_NUMBER = r"[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"


def _quantity(units: List[str], unit_optional: bool) -> str:
    alternatives = "|".join(re.escape(u) for u in sorted(units, key=len, reverse=True) if u)
    unit = f"(?:{alternatives})"
    return rf"^\s*{_NUMBER}\s*{unit}{'?' if unit_optional else ''}\s*$"


_RATE = {"type": "string", "pattern": _quantity(list(_RATE_UNITS), unit_optional=True)}
_DURATION = {"type": "string", "pattern": _quantity(list(_DURATION_UNITS), unit_optional=False)}
_SIZE = {"type": "string", "pattern": _quantity(list(_SIZE_UNITS), unit_optional=True)}


def _kind(kind: Kind) -> Dict[str, Any]:
    """The JSON Schema of one kind of value."""
    if isinstance(kind, Tagged):
        return _tagged(kind)
    if isinstance(kind, Table):
        return _table(kind)
    if isinstance(kind, TableArray):
        return {"type": "array", "minItems": kind.min_items, "items": _kind(kind.table)}
    if isinstance(kind, Rate):
        return {"anyOf": [_RATE, {"type": "number", "exclusiveMinimum": 0}], "examples": ["100Mbps", "44.736 Mb/s"]}
    if isinstance(kind, Duration):
        forms: List[Dict[str, Any]] = [_DURATION] if kind.positive else [_DURATION, {"const": 0}]
        return {"anyOf": forms, "examples": [kind.example]}
    if isinstance(kind, Size):
        number: Dict[str, Any] = {"type": "integer", "minimum": kind.minimum}
        if kind.maximum != U64_MAX:
            number["maximum"] = kind.maximum
        return {"anyOf": [_SIZE, number], "examples": [kind.example]}
    if isinstance(kind, InitialWindow):
        return {"anyOf": [{"type": "integer", "minimum": kind.minimum, "maximum": kind.maximum},
                          {"const": InitialWindow.RFC3390}]}
    if isinstance(kind, Integer):
        return {"type": "integer", "minimum": kind.minimum, "maximum": kind.maximum}
    if isinstance(kind, Real):
        schema: Dict[str, Any] = {"type": "number"}
        if kind.lower is not None:
            schema["exclusiveMinimum" if kind.lower_open else "minimum"] = kind.lower
        if kind.upper is not None:
            schema["exclusiveMaximum" if kind.upper_open else "maximum"] = kind.upper
        return schema
    if isinstance(kind, Boolean):
        return {"type": "boolean"}
    if isinstance(kind, Choice):
        return {"enum": list(kind.options)}
    if isinstance(kind, (Name, LinkName)):
        return {"type": "string", "minLength": 1}
    if isinstance(kind, (CapturePoints, NodePath)):
        return {"type": "array", "items": {"type": "string", "minLength": 1},
                "minItems": 2 if isinstance(kind, NodePath) else 0}
    if isinstance(kind, DurationList):
        return {"type": "array", "minItems": 1, "items": _kind(Duration(positive=False))}
    if isinstance(kind, SizeList):
        return {"type": "array", "minItems": 1, "items": _kind(Size(minimum=1))}
    if isinstance(kind, OutageWindows):
        window = {"type": "array", "minItems": 2, "maxItems": 2, "items": _kind(Duration(positive=False))}
        return {"type": "array", "minItems": 1, "items": window}
    if isinstance(kind, ObjectPath):
        return {"type": "string", "pattern": r"\.(o|c)$"}
    if isinstance(kind, Parameters):
        return {"type": "object", "additionalProperties": {"type": ["number", "boolean", "string"]}}
    if isinstance(kind, ClassSpec):
        return {"type": "string", "pattern": r"^[^:]+:[^:]+$", "examples": ["reno:Reno"]}
    if isinstance(kind, ReportEvery):
        return {"anyOf": [{"const": "rtt"}, {"type": "integer", "minimum": 1}, _DURATION]}
    if isinstance(kind, ClassParameters):
        return {"type": "object"}
    raise TypeError(f"no JSON Schema for {type(kind).__name__}")  # a new kind: add it here


def _field(f: Field) -> Dict[str, Any]:
    schema = _kind(f.kind)
    description = f.doc[:1].upper() + f.doc[1:]
    if f.default is not REQUIRED:
        description += f". Default: {_default_doc(f).strip('`')}"
        if f.source:
            description += f" ({f.source})"
        if not isinstance(f.default, Derived) and isinstance(f.default, (str, int, float, bool)):
            schema["default"] = f.default
    schema["description"] = description
    schema["markdownDescription"] = f"{description}\n\nType: {f.kind.type_doc}."
    return schema


def _table(table: Table, tag: str = "", value: str = "", tag_required: bool = True) -> Dict[str, Any]:
    properties: Dict[str, Any] = {}
    required: List[str] = []
    if tag:
        properties[tag] = {"const": value}
        if tag_required:
            required.append(tag)
    for f in table.fields:
        properties[f.key] = _field(f)
        if f.default is REQUIRED:
            required.append(f.key)
    # cc = { python = ... }: every other key is a keyword argument of the class (python_cc.py).
    schema: Dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": table is PYTHON_TABLE}
    if required:
        schema["required"] = required
    if table.doc:
        schema["description"] = table.doc
    return schema


def _tagged(kind: Tagged) -> Dict[str, Any]:
    # cc = { bpf = "..." } and cc = { python = "..." } may leave their algorithm out (congestion.py).
    cc = isinstance(kind, CongestionControlChoice)
    variants = [
        dict(_table(table, kind.tag, value,
                    tag_required=value != kind.default_tag and not (cc and value in ("bpf", "python"))),
             title=f"{kind.tag} = {json.dumps(value)}")
        for value, table in kind.variants.items()
    ]
    if isinstance(kind, CongestionControlChoice):
        presets = {"enum": list(PRESETS), "description": "a preset: " + ", ".join(PRESETS)}
        variants.insert(0, presets)
    return {"anyOf": variants}


def user_schema() -> Dict[str, Any]:
    """JSON Schema (draft 2020-12) of a scenario as users write it."""
    schema = _table(SCENARIO)
    schema.update({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "fatpipe scenario",
        "description": "A fatpipe scenario (docs/scenario.md). Generated by `fatpipe schema` from the "
        "same field definitions that validate scenarios.",
    })
    return schema

