"""The building blocks of an algorithm's parameter table: the `Algorithm` pair (table and
normalizer), the one-to-one mapping most algorithms use, and the common fields. Apart from
`congestion.py`, which registers the algorithms, so that the algorithms' own modules
(`congestion_linux.py`, ...) use them without importing the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from .kinds import Choice, Real
from .schema import Field, Table


@dataclass(frozen=True)
class Algorithm:
    """A congestion control algorithm: its parameters and the normalizer to the core's JSON."""

    table: Table
    normalize: Callable[[Dict[str, Any], str], Dict[str, Any]]


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


def _packets(key: str, default: float, meaning: str, source: str) -> Field:
    return Field(key, Real(lower=0.0, lower_open=False, example=default), meaning + ", packets", default, source)


def _fraction(key: str, default: float, meaning: str, source: str) -> Field:
    return Field(key, Real(lower=0.0, upper=1.0, example=default), meaning, default, source)
