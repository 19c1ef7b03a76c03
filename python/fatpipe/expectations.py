"""What an example says its run shows, in a form a program checks (issue 22: examples whose
"Expect" lines described another stack, and nothing noticed).

An example states its expectation in prose and, next to it, in ``check`` lines::

    # Expect: no drops and no retransmission, about 530 Mb/s.
    # check: sum({links.*.total_drops_packets}) == 0 and {flows.standard.segments_retransmitted} == 0
    # check: 505e6 < {flows.standard.goodput_bps} < 560e6
    # check with topology.txqueuelen = 250: 855e6 < {flows.standard.goodput_bps} < 945e6

A check is an expression of the reproductions' language (:mod:`fatpipe.reproduce.expressions`:
numbers, arithmetic, comparisons, ``and``/``or``, ``min``/``max``/``sum``/``mean``/``abs``) over
the run's summary as one row: a sweep's columns (``flows.<name>.<key>``, ``links.<name>.<key>``,
``total_goodput_bps``, ...), each link's ``links.<name>.mean_queue_packets`` (the mean of its
queue's samples) and, for HTTP flows, ``requests.<flow>.<object bytes>.<stat>`` with
stat ``min_response_time_s``, ``median_response_time_s`` or ``max_response_time_s``. It must
be true. ``check with PATH = VALUE; PATH = VALUE: ...`` runs the example with those sweep
paths set (values written as in TOML) and checks that run; ``check every 5s: ...`` adds each
flow's goodput per 5 s interval from the start, ``interval.<flow>.<k>`` (bits per second, as
the reproductions' ``interval``). The example file is the one
definition of what it expects; ``tests/test_examples_run.py`` runs every example and every
variant and checks every line.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from .metrics import interval_rates
from .reproduce.expressions import Expression, ExpressionError
from .scenario import read_scenario_file
from .scenario.document import read_scenario_bytes
from .sweep_runner import flatten_summary
from .sweeps import SweepError, parse_path, set_path
from .units import PS_PER_S, UnitError, parse_duration

__all__ = ["Check", "ExpectationError", "read_checks", "check_row", "evaluate", "scenario_for", "failures", "variants", "example_paths", "REQUEST_STATS"]

PathLike = Union[str, "os.PathLike[str]"]

_LINE = re.compile(r"^#\s*check(?:\s+with\s+(?P<with>[^:]+?))?(?:\s+every\s+(?P<every>[^\s:]+))?\s*:\s*(?P<expr>.+?)\s*$")
#: Per HTTP flow and object size: what a check can read of its requests' response times.
REQUEST_STATS = ("min", "median", "max")


class ExpectationError(ValueError):
    """A check line that cannot be read or evaluated, in one line naming the file and line."""


@dataclass(frozen=True)
class Check:
    """One ``check`` line of an example."""

    path: Path
    line: int
    #: (sweep path, value) set before the run; empty for the example as written.
    changes: Tuple[Tuple[str, Any], ...]
    expression: Expression
    #: With ``every DURATION``: the interval of the ``interval.<flow>.<k>`` columns, seconds.
    every_s: Optional[float] = None

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def variant(self) -> str:
        """The run it checks, as a label: "as written" or the changes."""
        return "; ".join(f"{k} = {_literal(v)}" for k, v in self.changes) or "as written"


def _literal(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def _changes(text: str, where: str) -> Tuple[Tuple[str, Any], ...]:
    out = []
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if not sep:
            raise ExpectationError(f"{where}: check with {text.strip()!r}: expected PATH = VALUE; PATH = VALUE")
        try:
            parse_path(key.strip())
            parsed = read_scenario_bytes(f"value = {value.strip()}".encode("utf-8"))["value"]
        except (SweepError, ValueError) as err:
            raise ExpectationError(f"{where}: check with {part.strip()!r}: {err}") from None
        out.append((key.strip(), parsed))
    return tuple(out)


def read_checks(path: PathLike) -> List[Check]:
    """The example's check lines, in order."""
    p = Path(path)
    checks = []
    for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if not re.match(r"^#\s*check\b", stripped):
            continue
        where = f"{p.name}:{number}"
        m = _LINE.match(stripped)
        if m is None:
            raise ExpectationError(f"{where}: expected '# check: EXPRESSION' or '# check with PATH = VALUE: EXPRESSION'")
        changes = _changes(m.group("with"), where) if m.group("with") else ()
        every_s = None
        try:
            if m.group("every"):
                every_s = parse_duration(m.group("every")) / PS_PER_S
            expression = Expression(m.group("expr"), where)
        except (ExpressionError, UnitError) as err:
            raise ExpectationError(f"{where}: {err}") from None
        checks.append(Check(p, number, changes, expression, every_s))
    return checks


def scenario_for(check: Check) -> Dict[str, Any]:
    """The example's scenario with the check's changes made."""
    doc = read_scenario_file(check.path)
    for key, value in check.changes:
        try:
            set_path(doc, parse_path(key), value)
        except SweepError as err:
            raise ExpectationError(f"{check.where}: check with {key}: {err}") from None
    return doc


def check_row(result: Any, every_s: Optional[float] = None) -> Any:
    """The table a check reads: one row, the run's summary flattened as a sweep's row, with
    each link's mean queue, the HTTP request statistics and, with ``every_s``, each flow's goodput per interval
    (``interval.<flow>.<k>``, bits per second, as the reproductions' ``interval``)."""
    import pandas as pd

    row = flatten_summary(result.summary)
    for link, q in result.queue_series.groupby("link", sort=False, observed=True):
        row[f"links.{link}.mean_queue_packets"] = float(q["queue_packets"].mean())
    if every_s is not None:
        series = result.flow_series
        for flow, s in series.groupby("flow", sort=False, observed=True):
            for k, rate in enumerate(interval_rates(s["time_s"], s["delivered_bytes"], every_s)):
                row[f"interval.{flow}.{k}"] = rate
    requests = result.requests
    if len(requests):
        stats = requests.groupby(["flow", "size_bytes"])["response_time_s"].agg(list(REQUEST_STATS))
        for (flow, size), values in stats.iterrows():
            for stat in REQUEST_STATS:
                row[f"requests.{flow}.{int(size)}.{stat}_response_time_s"] = float(values[stat])
    return pd.DataFrame([row])


def evaluate(check: Check, table: Any) -> Tuple[bool, str]:
    """Whether the check holds on ``table`` (:func:`check_row`), and the values it read."""
    try:
        value = check.expression.evaluate(table)
    except ExpressionError as err:
        raise ExpectationError(str(err)) from None
    held = bool(value.iloc[0]) if hasattr(value, "iloc") else bool(value)
    read = []
    for column in dict.fromkeys(check.expression.columns):
        matched = [c for c in table.columns if fnmatch.fnmatchcase(str(c), column)]
        read += [f"{c} = {table[c].iloc[0]:.6g}" if isinstance(table[c].iloc[0], float) else f"{c} = {table[c].iloc[0]}"
                 for c in matched]
    return held, "; ".join(read)


def failures(checks: List[Check], result: Any) -> List[str]:
    """One line per check of ``checks`` that does not hold on ``result``."""
    out = []
    for check in checks:
        held, read = evaluate(check, check_row(result, check.every_s))
        if not held:
            out.append(f"{check.where} ({check.variant}): {check.expression.text} is false: {read}")
    return out


def variants(checks: List[Check]) -> Dict[str, List[Check]]:
    """The checks grouped by the run they need, by :attr:`Check.variant` (the example as
    written first)."""
    out: Dict[str, List[Check]] = {"as written": []}
    for check in checks:
        out.setdefault(check.variant, []).append(check)
    return out


def example_paths(root: Optional[PathLike] = None) -> List[Path]:
    """The example scenarios shipped with fatpipe."""
    folder = Path(root) if root is not None else Path(__file__).resolve().parent / "examples"
    return sorted(folder.glob("*.toml"))
