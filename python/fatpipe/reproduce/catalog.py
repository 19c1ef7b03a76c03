"""The reproductions: documents and their experiments, read from the package's
``reproductions/`` folder (data only, no code per experiment).

Each document is a folder with ``document.toml`` (its name, number, title, the default
tolerance and the assumptions all its experiments share) and one file per experiment,
``E<n>.<m>.toml``: the sweeps that run it, what ``--quick`` cuts, the document's numbers
with the measure that gives fatpipe's value and a tolerance, its qualitative findings, the
figures, and every assumption the document leaves open. ``docs/reproductions.md`` explains
the format; a new document is a new folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..scenario import ScenarioError, read_scenario_file
from ..scenario.kinds import Choice, Duration, Integer, Name, Real
from ..scenario.schema import UNSET, Field, Kind, Table, TableArray, _fail
from .expressions import Expression, ExpressionError

__all__ = [
    "REPRODUCTIONS_DIR", "CatalogError", "Document", "Experiment", "SweepDef", "Measure", "Number",
    "Finding", "Ranking", "Figure", "Variant", "Quick", "UNITS", "documents", "load_document",
]

REPRODUCTIONS_DIR = Path(__file__).resolve().parent.parent / "reproductions"

#: Display units of numbers and figures: the factor from the base unit (bits/s, a fraction,
#: seconds, bytes, segments).
UNITS: Dict[str, float] = {
    "Mb/s": 1e6, "kb/s": 1e3, "b/s": 1.0, "%": 0.01, "": 1.0, "s": 1.0, "ms": 1e-3, "kB": 1e3, "MB": 1e6,
    "bytes": 1.0, "segments": 1.0, "packets": 1.0, "events": 1.0,
}
#: How a measure turns the chosen points into one number (each point first averaged over
#: its replications).
REDUCES = ("mean", "median", "min", "max", "first", "last", "peak_drop", "sum", "at_max")
FIGURE_KINDS = ("lines", "bars", "intervals", "series", "scatter")
_EXPERIMENT_FILE = re.compile(r"^E(\d+)\.(\d+)\.toml$")


class CatalogError(ScenarioError):
    """A mistake in a reproduction's files, in one line naming the file and the key."""


class _Text(Kind):
    type_doc = "string"

    def parse(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise _fail(path, value, "expected a non-empty string")
        return " ".join(value.split()) if "\n" not in value.strip() else value.strip()


class _Any(Kind):
    """A value passed on as written (a sweep's tables, a selection, document values)."""

    type_doc = "any"

    def parse(self, value: Any, path: str) -> Any:
        return value


class _Texts(Kind):
    type_doc = "array of strings"

    def parse(self, value: Any, path: str) -> List[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise _fail(path, value, "expected a list of strings")
        return list(value)


class _Tolerance(Kind):
    type_doc = "number (relative) or table {absolute = x}"

    def parse(self, value: Any, path: str) -> Tuple[str, float]:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return ("relative", float(value))
        if isinstance(value, Mapping) and set(value) == {"absolute"} and isinstance(value["absolute"], (int, float)):
            return ("absolute", float(value["absolute"]))
        raise _fail(path, value, "expected a fraction such as 0.1 (10 %), or {absolute = 20} in the number's unit")


_MEASURE_FIELDS = (
    Field("value", _Text(), "expression over the summary table's columns"),
    Field("where", _Any(), "the runs it takes: {parameter = value or [values]}", {}),
    Field("reduce", Choice(REDUCES), "how the chosen points become one number", "mean"),
    Field("x", _Text(), "the parameter that orders the points (first, last, peak_drop)", UNSET),
    Field("at", _Text(), "at_max: the expression whose value (per point) at the point where value is largest "
          "the measure gives, such as the sum of the windows there", UNSET),
)
_MEASURE = Table(fields=_MEASURE_FIELDS, doc="A measure.")
_ASSUMPTION = Table(fields=(
    Field("what", _Text(), "what the document leaves open"),
    Field("assumed", _Text(), "the value or model used"),
    Field("why", _Text(), "the reason, with its source"),
), doc="An assumption.")
_NUMBER = Table(fields=(
    Field("what", _Text(), "the quantity, as the document describes it"),
    Field("document", Real(example=828.0), "the document's value, in unit"),
    Field("unit", Choice(tuple(UNITS)), "display unit", ""),
    *_MEASURE_FIELDS,
    Field("measures", _Any(), "name = {value, where, reduce, x}: then value is an expression over these names", {}),
    Field("tolerance", _Tolerance(), "agreement band", UNSET),
    Field("source", _Text(), "where the document gives it"),
    Field("note", _Text(), "why fatpipe differs, with the evidence", UNSET),
    Field("calibration", _Text(), "the assumption solved from this very value: it is shown, never counted as "
          "agreement or disagreement", UNSET),
), doc="A number the document reports.")
_RANKING = Table(fields=(
    Field("items", _Texts(), "the parameter columns that name an item"),
    Field("key", _Text(), "expression: larger ranks higher"),
    Field("tie", Real(lower=0.0, lower_open=False, example=0.01), "keys within this fraction are tied", 0.0),
    Field("tiebreak", _Text(), "expression ordering tied items", UNSET),
    Field("document", _Any(), "the document's order, best first: a list of item values"),
    Field("where", _Any(), "the runs it takes", {}),
), doc="A ranking.")
_VARIANT = Table(fields=(
    Field("label", _Text(), "what differs in these runs, shown after each finding's claim"),
    Field("replace", _Any(), "old = new: each value of a finding's where (a sweep's or a point's name) replaced"),
    Field("why", _Text(), "why the document's findings are scored on these runs too"),
    Field("base_label", _Text(), "what the findings' own runs are, shown after their claims (as label is after "
          "the variant's)", UNSET),
), doc="A variant: every finding scored again on other runs.")
_FINDING = Table(fields=(
    Field("claim", _Text(), "the qualitative finding"),
    Field("holds_if", _Text(), "expression over the measures (and, for a ranking, tau)"),
    Field("measures", _Any(), "name = {value, where, reduce, x}", {}),
    Field("ranking", _RANKING, "a ranking to compare with the document's (Kendall's tau)", UNSET),
    Field("source", _Text(), "where the document says it"),
    Field("note", _Text(), "why fatpipe differs, with the evidence", UNSET),
), doc="A qualitative finding.")
_FIGURE = Table(fields=(
    Field("file", Name(), "file name without extension"),
    Field("title", _Text(), "title (say which figure of the document it is the analogue of)"),
    Field("kind", Choice(FIGURE_KINDS), "lines or bars: y against a parameter x, one series per by; intervals: "
          "per-interval throughput of one point; series: a time series of runs; scatter: y against x"),
    Field("x", _Text(), "lines, bars: a parameter; scatter: an expression", UNSET),
    Field("y", _Text(), "expression (lines, bars, scatter); the column of the flow series (series)", UNSET),
    Field("series", _Any(), "lines, bars: several expressions, {label = expression}, instead of y", UNSET),
    Field("by", _Texts(), "parameters (or sweep) whose values make the series", UNSET),
    Field("where", _Any(), "the runs it draws", {}),
    Field("unit", Choice(tuple(UNITS)), "unit of y", ""),
    Field("x_label", _Text(), "x axis label", UNSET),
    Field("y_label", _Text(), "y axis label", UNSET),
    Field("flows", _Texts(), "intervals, series: the flows (patterns allowed)", UNSET),
    Field("document", _Any(), "the document's values to overlay: {series label = [values]}", UNSET),
    Field("every", Duration(positive=True, example="1s"), "series: resample to this interval", UNSET),
), doc="A figure.")
_SWEEP = Table(fields=(
    Field("name", Name(), "the sweep's name, unique in the document"),
    Field("base", _Any(), "scenario file (relative to the experiment file) or table"),
    Field("set", _Any(), "path = value set in the base scenario before the sweep varies it", {}),
    Field("grid", _Any(), "as a sweep file's [grid]", UNSET),
    Field("zip", _Any(), "as a sweep file's [[zip]]", UNSET),
    Field("replications", Integer(minimum=1, maximum=1000, example=10), "runs of each point", 1),
), doc="A sweep.")
_QUICK = Table(fields=(
    Field("replications", Integer(minimum=1, maximum=1000, example=1), "runs of each point", 1),
    Field("set", _Any(), "path = value set in every base scenario (a shorter duration)", {}),
    Field("keep", _Any(), "parameter = [values]: only these values of a varied parameter", {}),
    Field("sweeps", _Texts(), "only these sweeps (default: all)", UNSET),
), doc="What --quick runs.")
_EXPERIMENT = Table(fields=(
    Field("id", _Text(), "E<document>.<n>, as in the experiments guide"),
    Field("title", _Text(), "what the experiment is"),
    Field("reports", _Text(), "what the document reports for it (figures, tables)"),
    Field("summary", _Text(), "the document's setup and findings, in a few sentences"),
    Field("sweeps", TableArray(_SWEEP, min_items=0, header="sweeps"), "the runs", []),
    Field("uses", _Texts(), "ids of experiments of the same document whose runs this one reads", []),
    Field("quick", _QUICK, "what --quick runs", {}),
    Field("interval", Duration(positive=True, example="5s"), "per-run throughput per interval (iperf -i): "
          "columns interval.<flow>.<k>", UNSET),
    Field("assumptions", TableArray(_ASSUMPTION, min_items=0, header="assumptions"), "", []),
    Field("numbers", TableArray(_NUMBER, min_items=0, header="numbers"), "", []),
    Field("findings", TableArray(_FINDING, min_items=0, header="findings"), "", []),
    Field("figures", TableArray(_FIGURE, min_items=0, header="figures"), "", []),
    Field("note", _Text(), "what fatpipe's runs show, beyond the tables", UNSET),
), doc="An experiment.")
_DOCUMENT = Table(fields=(
    Field("name", Name(), "the name `fatpipe reproduce` takes"),
    Field("document", _Text(), "its number among the source documents (000 to 004)"),
    Field("title", _Text(), "the document"),
    Field("summary", _Text(), "what it studies"),
    Field("tolerance", _Tolerance(), "default agreement band of its numbers"),
    Field("tolerance_why", _Text(), "why that band"),
    Field("assumptions", TableArray(_ASSUMPTION, min_items=0, header="assumptions"), "", []),
    Field("shows", _Text(), "what fatpipe's results show, for docs/reproductions.md", UNSET),
    Field("variants", TableArray(_VARIANT, min_items=0, header="variants"), "every finding scored again on "
          "other runs (such as the document's hosts' own limit)", []),
), doc="A document.")


@dataclass
class Measure:
    value: Expression
    where: Dict[str, Any]
    reduce: str = "mean"
    x: Optional[str] = None
    #: With reduce = "at_max": the expression whose value at the largest point is the measure's.
    at: Optional[Expression] = None


@dataclass
class Number:
    what: str
    document: float
    unit: str
    measure: Measure
    tolerance: Tuple[str, float]
    source: str
    note: Optional[str]
    #: When set, ``measure.value`` is an expression over these measures' values.
    measures: Dict[str, Measure] = field(default_factory=dict)
    #: The assumption solved from this value (then it is shown, not counted).
    calibration: Optional[str] = None


@dataclass
class Ranking:
    items: List[str]
    key: Expression
    tie: float
    tiebreak: Optional[Expression]
    document: List[Any]
    where: Dict[str, Any]


@dataclass
class Finding:
    claim: str
    holds_if: Expression
    measures: Dict[str, Measure]
    ranking: Optional[Ranking]
    source: str
    note: Optional[str]


@dataclass
class Variant:
    label: str
    replace: Dict[str, Any]
    why: str
    base_label: Optional[str] = None

    def of(self, finding: "Finding") -> Optional["Finding"]:
        """The finding with its measures' where values replaced; None when nothing changes."""
        changed = False

        def swap(value: Any) -> Any:
            nonlocal changed
            if isinstance(value, list):
                return [swap(v) for v in value]
            if isinstance(value, str) and value in self.replace:
                changed = True
                return self.replace[value]
            return value

        measures = {name: replace(m, where={k: swap(v) for k, v in m.where.items()})
                    for name, m in finding.measures.items()}
        ranking = finding.ranking
        if ranking is not None:
            ranking = replace(ranking, where={k: swap(v) for k, v in ranking.where.items()})
        if not changed:
            return None
        return replace(finding, claim=f"{finding.claim} [{self.label}]", measures=measures, ranking=ranking)


@dataclass
class Figure:
    file: str
    title: str
    kind: str
    spec: Dict[str, Any]


@dataclass
class SweepDef:
    name: str
    owner: str
    doc: Dict[str, Any]
    folder: Path


@dataclass
class Quick:
    replications: int
    set: Dict[str, Any]
    keep: Dict[str, List[Any]]
    sweeps: Optional[List[str]]


@dataclass
class Experiment:
    id: str
    title: str
    reports: str
    summary: str
    sweeps: List[SweepDef]
    uses: List[str]
    quick: Quick
    interval_ps: Optional[int]
    assumptions: List[Dict[str, str]]
    numbers: List[Number]
    findings: List[Finding]
    figures: List[Figure]
    note: Optional[str]
    path: Path


@dataclass
class Document:
    name: str
    number: str
    title: str
    summary: str
    tolerance: Tuple[str, float]
    tolerance_why: str
    assumptions: List[Dict[str, str]]
    shows: Optional[str]
    folder: Path
    experiments: Dict[str, Experiment] = field(default_factory=dict)
    variants: List[Variant] = field(default_factory=list)

    def sweeps_of(self, experiment: Experiment) -> List[SweepDef]:
        """The experiment's own sweeps, then those of the experiments it uses."""
        out = list(experiment.sweeps)
        for used in experiment.uses:
            out.extend(self.experiments[used].sweeps)
        return out


def _where(value: Any, path: str) -> Dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, value, 'expected a table {parameter = value}, such as {"flows[0].cc" = "sack"}')
    return dict(value)


def _measure(raw: Mapping[str, Any], path: str) -> Measure:
    m = _MEASURE.parse({k: v for k, v in raw.items() if k in _MEASURE.keys() and v is not None}, path)
    at = Expression(m["at"], f"{path}.at") if m["at"] is not None else None
    if (at is None) != (m["reduce"] != "at_max"):
        raise CatalogError(f"{path}.at: " + ("missing; required with reduce = \"at_max\"" if at is None else
                                             "only read with reduce = \"at_max\""), f"{path}.at")
    return Measure(Expression(m["value"], f"{path}.value"), _where(m["where"], f"{path}.where"), m["reduce"], m["x"],
                   at)


def _check_reduce(m: Measure, path: str) -> None:
    if m.reduce in ("first", "last", "peak_drop") and m.x is None:
        raise CatalogError(f"{path}.x: missing; required with reduce = \"{m.reduce}\" (the parameter that orders "
                           "the points)", f"{path}.x")


def _experiment(path: Path, document_name: str) -> Experiment:
    raw = read_scenario_file(path)
    e = _EXPERIMENT.parse(raw, "")
    expected = path.stem
    if e["id"] != expected:
        raise CatalogError(f"id: {e['id']!r} is not allowed: the file {path.name} holds experiment {expected}", "id")
    sweeps = [SweepDef(s["name"], e["id"], {k: v for k, v in s.items() if k != "name" and v is not None}, path.parent)
              for s in e["sweeps"]]
    if not sweeps and not e["uses"]:
        raise CatalogError("sweeps: missing; an experiment runs sweeps ([[sweeps]]) or uses another's (uses)",
                           "sweeps")
    numbers = []
    for i, n in enumerate(e["numbers"]):
        where = f"numbers[{i}]"
        m = _measure(n, where)
        _check_reduce(m, where)
        named = _measures(n["measures"], where)
        _known_names(m.value, named, set(), f"{where}.value")
        numbers.append(Number(n["what"], n["document"], n["unit"], m, n["tolerance"], n["source"], n["note"], named,
                              n["calibration"]))
    findings = []
    for i, f in enumerate(e["findings"]):
        where = f"findings[{i}]"
        measures = _measures(f["measures"], where)
        ranking = None
        if f["ranking"] is not None:
            r = f["ranking"]
            if not isinstance(r["document"], list) or not r["document"]:
                raise _fail(f"{where}.ranking.document", r["document"], "expected the document's order, a list")
            ranking = Ranking(r["items"], Expression(r["key"], f"{where}.ranking.key"), r["tie"],
                              Expression(r["tiebreak"], f"{where}.ranking.tiebreak") if r["tiebreak"] else None,
                              r["document"], _where(r["where"], f"{where}.ranking.where"))
        holds = Expression(f["holds_if"], f"{where}.holds_if")
        _known_names(holds, measures, {"tau"} if ranking else set(), f"{where}.holds_if")
        findings.append(Finding(f["claim"], holds, measures, ranking, f["source"], f["note"]))
    figures = []
    for i, fig in enumerate(e["figures"]):
        need = {"lines": ("x", "y"), "bars": ("x", "y"), "intervals": ("flows",), "series": ("y",),
                "scatter": ("x", "y")}[fig["kind"]]
        for key in need:
            if fig[key] is None and not (key == "y" and fig["series"] is not None):
                raise CatalogError(f"figures[{i}].{key}: missing; required with kind = \"{fig['kind']}\"",
                                   f"figures[{i}].{key}")
        if fig["document"] is not None and fig["kind"] == "scatter":
            raise CatalogError(f"figures[{i}].document: not drawn on a scatter plot; allowed with kind = "
                               "\"lines\", \"bars\", \"intervals\" or \"series\"", f"figures[{i}].document")
        if fig["document"] is not None and fig["kind"] == "series" and fig["every"] is None:
            raise CatalogError(f"figures[{i}].document: a series overlays the document's values per interval; "
                               "set every (the document's interval)", f"figures[{i}].document")
        figures.append(Figure(fig["file"], fig["title"], fig["kind"], fig))
    q = e["quick"]
    quick = Quick(q["replications"], dict(q["set"]), dict(q["keep"]), q["sweeps"])
    return Experiment(e["id"], e["title"], e["reports"], e["summary"], sweeps, e["uses"], quick, e["interval"],
                      e["assumptions"], numbers, findings, figures, e["note"], path)


def _measures(raw: Any, where: str) -> Dict[str, Measure]:
    if not isinstance(raw, Mapping):
        raise _fail(f"{where}.measures", raw, "expected a table name = {value = ..., ...}")
    measures: Dict[str, Measure] = {}
    for name, spec in raw.items():
        if not isinstance(spec, Mapping):
            raise _fail(f"{where}.measures.{name}", spec, "expected a table {value = ..., where = ...}")
        measures[name] = _measure(spec, f"{where}.measures.{name}")
        _check_reduce(measures[name], f"{where}.measures.{name}")
    return measures


def _known_names(expr: Expression, measures: Mapping[str, Measure], extra: set, where: str) -> None:
    known = set(measures) | extra
    unknown = [n for n in expr.names() if n not in known]
    if unknown:
        raise CatalogError(f"{where}: {unknown[0]} is not a measure here; measures: {', '.join(sorted(known)) or 'none'}",
                           where)
    if measures and expr.columns:
        raise CatalogError(f"{where}: with measures the value combines them by name, not columns", where)


def _experiment_order(path: Path) -> Tuple[int, int]:
    match = _EXPERIMENT_FILE.match(path.name)
    assert match
    return int(match.group(1)), int(match.group(2))


def load_document(folder: Path) -> Document:
    """Reads one document's folder; raises :class:`CatalogError` naming the file and key."""
    where = folder / "document.toml"
    try:
        d = _DOCUMENT.parse(read_scenario_file(where), "")
    except ScenarioError as err:
        raise CatalogError(f"{where}: {err}", err.field) from None
    variants = []
    for i, v in enumerate(d["variants"]):
        ok = isinstance(v["replace"], Mapping) and v["replace"] and all(
            isinstance(k, str) and isinstance(x, str) for k, x in v["replace"].items())
        if not ok:
            raise CatalogError(f"{where}: variants[{i}].replace: expected a table old = new of names, such as "
                               '{"free" = "host-130"}', f"variants[{i}].replace")
        variants.append(Variant(v["label"], dict(v["replace"]), v["why"], v["base_label"]))
    doc = Document(d["name"], d["document"], d["title"], d["summary"], d["tolerance"], d["tolerance_why"],
                   d["assumptions"], d["shows"], folder, variants=variants)
    files = sorted((p for p in folder.iterdir() if _EXPERIMENT_FILE.match(p.name)), key=_experiment_order)
    sweep_names: Dict[str, str] = {}
    for path in files:
        try:
            exp = _experiment(path, doc.name)
        except (ScenarioError, ExpressionError) as err:
            raise CatalogError(f"{path}: {err}", getattr(err, "field", None)) from None
        for s in exp.sweeps:
            if s.name in sweep_names:
                raise CatalogError(f"{path}: sweeps: {s.name!r} is also a sweep of {sweep_names[s.name]}; "
                                   "sweep names are unique in a document", "sweeps")
            sweep_names[s.name] = exp.id
        doc.experiments[exp.id] = exp
    for exp in doc.experiments.values():
        for used in exp.uses:
            if used not in doc.experiments or used == exp.id:
                raise CatalogError(f"{exp.path}: uses: {used!r} is not another experiment of {doc.name}: "
                                   f"{', '.join(doc.experiments)}", "uses")
            if doc.experiments[used].uses:
                raise CatalogError(f"{exp.path}: uses: {used} uses other experiments itself; use theirs directly",
                                   "uses")
    return doc


def documents(root: Path = REPRODUCTIONS_DIR) -> Dict[str, Document]:
    """Every document with a folder under ``root``, by name, in the order of their numbers."""
    found = [load_document(p) for p in sorted(root.iterdir()) if (p / "document.toml").is_file()]
    names: Dict[str, Document] = {}
    for d in sorted(found, key=lambda d: d.number):
        if d.name in names:
            raise CatalogError(f"{d.folder}: name {d.name!r} is also the name of {names[d.name].folder}")
        names[d.name] = d
    return names
