"""fatpipe's side of a comparison: measures over the runs' summary table, the document's
numbers against them, and its qualitative findings.

Every measure takes the runs its ``where`` selects, evaluates its expression per run,
averages each point over its replications (the document's "mean of ten runs"), then
reduces the points to one number. A number agrees when fatpipe's value is within the
tolerance of the document's; a finding holds when its condition over its measures is true.
Something the runs cannot give (no run matches, as in ``--quick``) is reported as not
measured, never as agreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .catalog import UNITS, Finding, Measure, Number, Ranking
from .expressions import ExpressionError

__all__ = ["Results", "MeasureError", "evaluate_number", "evaluate_finding", "kendall_tau"]


class MeasureError(ValueError):
    """A measure the runs cannot give (no run selected), or a mistake in it."""


@dataclass
class Results:
    """The runs of an experiment: one row per run (the sweeps' summaries, a ``sweep``
    column, per-interval columns), and each varied parameter's values in sweep order."""

    table: Any
    parameters: Dict[str, List[Any]]
    #: The length of the per-interval columns' intervals, seconds (0: none).
    interval_s: float = 0.0

    def select(self, where: Mapping[str, Any], what: str = "where") -> Any:
        rows = self.table[self.table["status"] == "ok"] if "status" in self.table else self.table
        for key, wanted in where.items():
            if key not in rows.columns:
                known = ", ".join(["sweep", *self.parameters]) or "none"
                raise MeasureError(f"{what}: {key!r} is not a parameter of these runs; parameters: {known}")
            values = wanted if isinstance(wanted, list) else [wanted]
            # .loc with a boolean mask: an empty selection stays a table with its columns.
            rows = rows.loc[rows[key].map(lambda v: any(_same(v, w) for w in values)).astype(bool)]
        return rows

    def point_values(self, rows: Any, series: Any) -> Any:
        """Per point (sweep and parameters), the mean over its replications."""
        keys = ["sweep"] + [p for p in self.parameters if p in rows.columns and rows[p].notna().any()]
        frame = rows[keys].astype(str).assign(__value=series)
        return frame.groupby(keys, sort=False, dropna=False)["__value"].mean(), frame.groupby(
            keys, sort=False, dropna=False).size()

    def order_of(self, x: str, value: Any) -> int:
        for i, v in enumerate(self.parameters.get(x, [])):
            if _same(v, value):
                return i
        return len(self.parameters.get(x, []))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    return str(a) == str(b)


def measure(results: Results, m: Measure, what: str) -> Tuple[float, int]:
    """(value in base units, points used)."""
    rows = results.select(m.where, f"{what}.where")
    if rows.empty:
        raise MeasureError("no run matches " + (", ".join(f"{k} = {v}" for k, v in m.where.items()) or "(all)"))
    points = _points(results, rows, m.value, f"{what}.value")
    if m.reduce == "at_max":
        return _at_max(results, rows, m, points, what), len(points)
    if m.x is not None:
        keys = list(points.index.names)
        if m.x not in keys:
            raise MeasureError(f"{what}.x: {m.x!r} is not varied in the chosen runs")
        pos = keys.index(m.x)
        order = sorted(range(len(points)), key=lambda i: results.order_of(m.x, _key(points.index[i], pos)))
        values = [float(points.iloc[i]) for i in order]
    else:
        values = [float(v) for v in points]
    values = [v for v in values if not math.isnan(v)]
    if not values:
        raise MeasureError("every chosen run gives NaN")
    return _reduce(m.reduce, values), len(values)


def _points(results: Results, rows: Any, expression: Any, what: str) -> Any:
    """The expression per run of ``rows``, averaged per point over its replications."""
    try:
        series = expression.evaluate(rows)
    except ExpressionError as err:
        raise MeasureError(str(err)) from None
    except (KeyError, TypeError, ValueError) as err:
        raise MeasureError(f"{what}: {err}") from None
    if not hasattr(series, "index"):
        series = rows.index.to_series().map(lambda _: series)
    return results.point_values(rows, series.astype(float))[0]


def _at_max(results: Results, rows: Any, m: Measure, points: Any, what: str) -> float:
    """The ``at`` expression's value (averaged over the point's replications) at the point
    whose ``value`` is largest: where a curve peaks, such as the windows' sum at the peak."""
    assert m.at is not None
    at_points = _points(results, rows, m.at, f"{what}.at")
    valid = [i for i in range(len(points)) if not math.isnan(float(points.iloc[i]))]
    if not valid:
        raise MeasureError("every chosen run gives NaN")
    best = max(valid, key=lambda i: float(points.iloc[i]))
    return float(at_points.iloc[best])


def _key(index_value: Any, pos: int) -> Any:
    return index_value[pos] if isinstance(index_value, tuple) else index_value


def _reduce(how: str, values: Sequence[float]) -> float:
    if how == "mean":
        return sum(values) / len(values)
    if how == "sum":
        return float(sum(values))
    if how == "median":
        s = sorted(values)
        mid = len(s) // 2
        return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    if how == "first":
        return values[0]
    if how == "last":
        return values[-1]
    # peak_drop: how far the points fall below their peak after it, as a fraction of it
    # (document 002's superscripts: "percent degradation from the peak").
    peak = max(range(len(values)), key=lambda i: values[i])
    after = values[peak + 1:]
    return 0.0 if not after or values[peak] <= 0 else (values[peak] - min(after)) / values[peak]


def _display(value: float, unit: str) -> float:
    return value / UNITS[unit]


def tolerance_text(tol: Tuple[str, float], unit: str) -> str:
    kind, amount = tol
    if kind == "relative":
        return f"±{amount * 100:g} %"
    # An absolute band on a percentage is in percentage points, not a fraction of the value.
    return f"±{amount:g} points" if unit == "%" else f"±{amount:g}{(' ' + unit) if unit else ''}"


def evaluate_number(results: Results, n: Number, default_tolerance: Tuple[str, float], where: str) -> Dict[str, Any]:
    tol = n.tolerance or default_tolerance
    record: Dict[str, Any] = {
        "what": n.what, "source": n.source, "unit": n.unit, "document": n.document, "fatpipe": None,
        "tolerance": tolerance_text(tol, n.unit), "agrees": None, "points": 0, "note": n.note,
    }
    if n.calibration:
        record["calibration"] = n.calibration
    try:
        if n.measures:
            variables, points = {}, None
            for name, m in n.measures.items():
                variables[name], used = measure(results, m, f"{where}.measures.{name}")
                points = used if points is None else min(points, used)
            value = float(n.measure.value.evaluate(None, variables))
        else:
            value, points = measure(results, n.measure, where)
    except MeasureError as err:
        record["error"] = str(err)
        return record
    except (ExpressionError, ZeroDivisionError) as err:
        record["error"] = f"{where}.value: {err}"
        return record
    shown = _display(value, n.unit)
    band = tol[1] * abs(n.document) if tol[0] == "relative" else tol[1]
    record.update(fatpipe=shown, points=points, agrees=abs(shown - n.document) <= band + 1e-12)
    return record


def kendall_tau(ours: Sequence[Any], theirs: Sequence[Any]) -> float:
    """Kendall's tau between two orders of the same items (1: the same order, -1: reversed)."""
    common = [x for x in theirs if x in ours]
    pairs = concordant = 0
    for i in range(len(common)):
        for j in range(i + 1, len(common)):
            pairs += 1
            concordant += 1 if ours.index(common[i]) < ours.index(common[j]) else -1
    return concordant / pairs if pairs else float("nan")


def rank(results: Results, r: Ranking, where: str) -> List[Tuple[Any, ...]]:
    """The items, best first: by key, and among keys within ``tie`` of each other by the
    tiebreak."""
    rows = results.select(r.where, f"{where}.where")
    if rows.empty:
        raise MeasureError("no run matches the ranking's where")
    for item in r.items:
        if item not in rows.columns:
            raise MeasureError(f"{where}.items: {item!r} is not a parameter of these runs")
    frame = rows[r.items].copy()
    frame["__key"] = r.key.evaluate(rows).astype(float)
    frame["__tie"] = r.tiebreak.evaluate(rows).astype(float) if r.tiebreak else 0.0
    means = frame.groupby(r.items, sort=False)[["__key", "__tie"]].mean()
    entries = [(tuple(_plain(v) for v in (k if isinstance(k, tuple) else (k,))), row["__key"], row["__tie"])
               for k, row in means.iterrows()]
    entries.sort(key=lambda e: -e[1])
    # Keys within the tie band of each other are ordered by the tiebreak (a stable pass).
    changed = True
    while changed:
        changed = False
        for i in range(len(entries) - 1):
            a, b = entries[i], entries[i + 1]
            if abs(a[1] - b[1]) <= r.tie * max(abs(a[1]), abs(b[1])) and b[2] > a[2]:
                entries[i], entries[i + 1] = b, a
                changed = True
    return [e[0] for e in entries]


def _plain(v: Any) -> Any:
    return round(float(v), 12) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def evaluate_finding(results: Results, f: Finding, where: str) -> Dict[str, Any]:
    record: Dict[str, Any] = {"claim": f.claim, "source": f.source, "holds": None, "measures": {}, "note": f.note,
                              "condition": f.holds_if.text}
    variables: Dict[str, float] = {}
    try:
        for name, m in f.measures.items():
            value, _ = measure(results, m, f"{where}.measures.{name}")
            variables[name] = value
            record["measures"][name] = value
        if f.ranking is not None:
            ours = rank(results, f.ranking, f"{where}.ranking")
            theirs = [tuple(_plain(v) for v in (d if isinstance(d, list) else [d])) for d in f.ranking.document]
            variables["tau"] = kendall_tau(ours, theirs)
            record["measures"]["tau"] = variables["tau"]
            record["ranking"] = {"fatpipe": [list(x) for x in ours], "document": [list(x) for x in theirs]}
        record["holds"] = bool(f.holds_if.evaluate(None, variables))
    except MeasureError as err:
        record["error"] = str(err)
    except ExpressionError as err:
        record["error"] = f"{where}.holds_if: {err}"
    return record


def count(records: Sequence[Mapping[str, Any]], key: str) -> Dict[str, int]:
    """How many records there are, were measured, and agree (hold). A calibration value
    (the assumption was solved from it) is counted apart, never as agreement."""
    calibration = [r for r in records if r.get("calibration")]
    scored = [r for r in records if not r.get("calibration")]
    measured = [r for r in scored if r.get(key) is not None]
    return {"total": len(scored), "measured": len(measured), "agree": sum(1 for r in measured if r[key]),
            "calibration": len(calibration)}


__all__ += ["measure", "rank", "count", "tolerance_text"]
