"""The comparison files: ``comparison.md`` and ``comparison.json`` per experiment and per
document, and the pages of ``docs/reproductions.md``."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..version import version
from .catalog import Document, Experiment

__all__ = ["write_experiment", "write_document", "docs_page", "number_text", "format_reference"]


def number_text(value: Optional[float]) -> str:
    """Three significant figures, no exponent for everyday magnitudes."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    a = abs(value)
    if a >= 100:
        return f"{value:,.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 0.01 or a == 0:
        return f"{value:.3g}"
    return f"{value:.2e}"


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _verdict(value: Optional[bool], error: Optional[str] = None) -> str:
    if value is None:
        return "not measured" + (f" ({error})" if error else "")
    return "**yes**" if value else "no"


def _with_unit(value: Optional[float], unit: str) -> str:
    text = number_text(value)
    return f"{text} {unit}".rstrip() if text != "-" else text


def experiment_json(doc: Document, outcome: Any) -> Dict[str, Any]:
    exp: Experiment = outcome.experiment
    return {
        "document": doc.number, "name": doc.name, "experiment": exp.id, "title": exp.title,
        "reports": exp.reports, "mode": "quick" if outcome.quick else "full", "fatpipe_version": version(),
        "runs": outcome.runs, "failed_runs": outcome.failed, "wall_s": round(outcome.wall_s, 1),
        "compute_s": round(outcome.compute_s, 1), "reused_runs": outcome.reused,
        "counts": outcome.counts, "numbers": outcome.numbers, "findings": outcome.findings,
        "figures": outcome.figures, "assumptions": doc.assumptions + exp.assumptions, "note": exp.note,
    }


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _json_safe(value.item())
    return value


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def counts_line(counts: Mapping[str, Mapping[str, int]]) -> str:
    n, f = counts["numbers"], counts["findings"]
    parts = []
    aside = [f"{n['total'] - n['measured']} not measured"] if n["measured"] < n["total"] else []
    if n.get("calibration"):
        aside.append(f"{n['calibration']} calibration value{'s' if n['calibration'] > 1 else ''} not counted")
    if n["total"] or aside:
        parts.append(f"{n['agree']} of {n['measured']} numbers agree within tolerance"
                     + (f" ({'; '.join(aside)})" if aside else ""))
    if f["total"]:
        parts.append(f"{f['agree']} of {f['measured']} findings hold"
                     + (f" ({f['total'] - f['measured']} not measured)" if f["measured"] < f["total"] else ""))
    return "; ".join(parts) or "nothing to compare"


def experiment_markdown(doc: Document, data: Mapping[str, Any], figure_dir: str = "", level: int = 1) -> str:
    """The experiment's comparison as Markdown (figures linked from ``figure_dir``)."""
    h = "#" * level
    lines = [f"{h} {data['experiment']}: {data['title']}", "",
             f"Document {doc.number} ({doc.name}). {data['reports']}.", ""]
    exp = doc.experiments[data["experiment"]]
    lines += [exp.summary, ""]
    mode = "quick mode (fewer points, shorter runs: not the document's conditions)" if data["mode"] == "quick" \
        else "full mode"
    lines += [f"fatpipe {data['fatpipe_version']}, {mode}: {data['runs']} runs"
              + (f", {data['failed_runs']} failed" if data["failed_runs"] else "") + ".", "",
              f"**{counts_line(data['counts'])}.**", ""]
    if data["numbers"]:
        lines += [f"{h}# Numbers", "", "| # | what | document | fatpipe | tolerance | agrees | source |",
                  "|---|---|---|---|---|---|---|"]
        for i, r in enumerate(data["numbers"], 1):
            verdict = "calibration" if r.get("calibration") else _verdict(r["agrees"], r.get("error"))
            lines.append(f"| {i} | {_cell(r['what'])} | {_with_unit(r['document'], r['unit'])} | "
                         f"{_with_unit(r['fatpipe'], r['unit'])} | {r['tolerance']} | "
                         f"{verdict} | {_cell(r['source'])} |")
        notes = [(i, (f"calibration, not counted: {r['calibration']}" + (f" {r['note']}" if r.get("note") else "")
                      if r.get("calibration") else r["note"]))
                 for i, r in enumerate(data["numbers"], 1) if r.get("note") or r.get("calibration")]
        if notes:
            lines += ["", "Where they differ:", ""] + [f"- {i}: {n}" for i, n in notes]
        lines.append("")
    if data["findings"]:
        lines += [f"{h}# Findings", "", "| # | finding | holds | fatpipe | condition | source |",
                  "|---|---|---|---|---|---|"]
        for i, r in enumerate(data["findings"], 1):
            measures = ", ".join(f"{k} = {number_text(v)}" for k, v in r["measures"].items())
            if r.get("ranking"):
                measures += "; fatpipe's order: " + " > ".join("/".join(str(x) for x in item)
                                                                 for item in r["ranking"]["fatpipe"])
            lines.append(f"| {i} | {_cell(r['claim'])} | {_verdict(r['holds'], r.get('error'))} | "
                         f"{_cell(measures) or '-'} | `{_cell(r['condition'])}` | {_cell(r['source'])} |")
        notes = [(i, r["note"]) for i, r in enumerate(data["findings"], 1) if r.get("note")]
        if notes:
            lines += ["", "Where they differ:", ""] + [f"- {i}: {n}" for i, n in notes]
        lines.append("")
    if exp.note:
        lines += [f"{h}# What fatpipe shows", "", exp.note, ""]
    figures = [f for f in data["figures"] if f["drawn"]]
    if figures or any(not f["drawn"] for f in data["figures"]):
        lines += [f"{h}# Figures", ""]
        for f in data["figures"]:
            if f["drawn"]:
                lines += [f"![{f['title']}]({figure_dir}{f['file']})", ""]
            else:
                lines += [f"- {f['title']}: not drawn ({f.get('error', '')})", ""]
    lines += [f"{h}# Assumptions", "", "| what the document leaves open | assumed | why |", "|---|---|---|"]
    lines += [f"| {_cell(a['what'])} | {_cell(a['assumed'])} | {_cell(a['why'])} |" for a in data["assumptions"]]
    return "\n".join(lines) + "\n"


def write_experiment(doc: Document, outcome: Any, target: Path) -> Dict[str, Any]:
    data = _json_safe(experiment_json(doc, outcome))
    _write(target / "comparison.json", json.dumps(data, indent=2) + "\n")
    _write(target / "comparison.md", experiment_markdown(doc, data))
    return data


def document_json(doc: Document, outcomes: Sequence[Any]) -> Dict[str, Any]:
    experiments = [_json_safe(experiment_json(doc, o)) for o in outcomes]
    total = {k: {c: sum(e["counts"][k].get(c, 0) for e in experiments)
                 for c in ("total", "measured", "agree", "calibration")}
             for k in ("numbers", "findings")}
    return {"document": doc.number, "name": doc.name, "title": doc.title, "fatpipe_version": version(),
            "mode": "quick" if outcomes and outcomes[0].quick else "full", "counts": total,
            "wall_s": round(sum(o.wall_s for o in outcomes), 1), "runs": sum(o.runs for o in outcomes),
            "compute_s": round(sum(o.compute_s for o in outcomes), 1),
            "experiments": experiments}


def document_markdown(doc: Document, data: Mapping[str, Any], figure_dirs: Optional[Mapping[str, str]] = None,
                      level: int = 1) -> str:
    h = "#" * level
    lines = [f"{h} Document {doc.number}: {doc.title} (`fatpipe reproduce {doc.name}`)", "", doc.summary, ""]
    if doc.shows and data["mode"] == "full":
        lines += [f"{h}# What this shows", "", doc.shows, ""]
    lines += [f"**{counts_line(data['counts'])}** ({data['runs']} runs, {data['mode']} mode).", "",
              f"Tolerance: {doc.tolerance_why}", "",
              "| experiment | numbers agree | findings hold |", "|---|---|---|"]
    for e in data["experiments"]:
        n, f = e["counts"]["numbers"], e["counts"]["findings"]
        lines.append(f"| {e['experiment']}: {_cell(e['title'])} | {n['agree']} / {n['measured']} | "
                     f"{f['agree']} / {f['measured']} |")
    lines.append("")
    for e in data["experiments"]:
        lines.append(experiment_markdown(doc, e, (figure_dirs or {}).get(e["experiment"], f"{e['experiment']}/"),
                                         level + 1))
    return "\n".join(lines)


def write_document(doc: Document, outcomes: Sequence[Any], outdir: Path) -> Dict[str, Any]:
    data = document_json(doc, outcomes)
    _write(outdir / "comparison.json", json.dumps(data, indent=2) + "\n")
    _write(outdir / "comparison.md", document_markdown(doc, data))
    return data


def docs_page(sections: Sequence[tuple], page: Path, command: str, wall_s: float) -> None:
    """``docs/reproductions.md``: every document's section, figures copied beside the page
    (``docs/reproductions/<name>/<id>-<file>``)."""
    runs = sum(data["runs"] for _, data, _ in sections)
    compute_s = sum(data["compute_s"] for _, data, _ in sections)
    reused = sum(e["reused_runs"] for _, data, _ in sections for e in data["experiments"])
    figures_root = page.parent / "reproductions"
    head = [
        "# Reproductions of the source documents", "",
        "<!-- Generated by the command below; do not edit by hand. -->", "",
        "`fatpipe reproduce NAME` reruns a document's experiments and compares fatpipe's results with "
        "the numbers and findings the document reports (`fatpipe reproduce --list`). This page is the "
        "output of a full run, regenerated with:", "",
        "<!-- docs-test: skip: every reproduction, hours (tests/test_reproduce.py runs them quick) -->",
        "```sh", command, "```", "",
        f"{runs} runs. Their simulations took {compute_s / 60:.0f} minutes of one core in all (each run's "
        f"own wall time, summed): a full run from scratch takes about that divided by `--jobs`. This "
        f"invocation took {wall_s / 60:.1f} minutes and reused {reused} finished runs. Timings are from the "
        "project's 2-core machine, shared with other work while they ran.",
        "", "How to read it: each experiment lists the document's numbers with fatpipe's value, the "
        "tolerance and whether they agree, then the document's qualitative findings and whether they "
        "hold in fatpipe's runs. Where they differ the note gives the reason we believe, with its "
        "evidence. No parameter was tuned toward a document's number: every assumption a document "
        "leaves open is listed with its source.", "",
    ]
    body: List[str] = []
    for doc, data, outdir in sections:
        target = figures_root / doc.name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        dirs: Dict[str, str] = {}
        for e in data["experiments"]:
            for f in e["figures"]:
                if f["drawn"]:
                    shutil.copyfile(outdir / e["experiment"] / f["file"], target / f"{e['experiment']}-{f['file']}")
            dirs[e["experiment"]] = f"reproductions/{doc.name}/{e['experiment']}-"
        body.append(document_markdown(doc, data, dirs, level=2))
    _write(page, "\n".join(head + body + [format_reference()]))


FORMAT_INTRO = """\
## The format of a reproduction

A reproduction is data in the package, never code: a folder
`python/fatpipe/reproductions/<name>/` holding `document.toml`, one file per experiment,
`E<document>.<n>.toml`, and the scenario files its sweeps start from (by convention in
`bases/`). `fatpipe reproduce --list` shows every folder that has a `document.toml`; adding
a document is adding a folder (the name in `document.toml` is the one the command takes,
its number orders the list). This format is stable: the keys below keep their meaning.

An experiment runs its `[[sweeps]]` through the sweep machinery (each is a sweep file's
`base`, `grid`, `[[zip]]` and `replications`, plus `set`: values changed in the base before
the sweep varies it), so `--jobs`, `--dask` and resuming work as for `fatpipe sweep`. An
experiment may read another's runs instead of running its own (`uses`). Every run is a row
of the experiment's table (`runs.csv`): the sweep's name (`sweep`), the varied parameters
as the sweep writes them (`flows[*].tcp.rcv_buffer`), `replication`, `seed`, and every
column of the run's summary (`flows.<flow>.goodput_bps`, `links.<link>.drops_packets`,
...; see docs/metrics.md). With `interval = "5s"` each flow also gets its payload rate per
interval from the run's start, `interval.<flow>.<k>` (iperf's `-i`).

A *measure* selects runs (`where = {parameter = value or [values]}`; the parameter may
also be `sweep` or `replication`), evaluates its expression per run, averages each point
over its replications (the document's "mean of ten runs") and reduces the points to one
number (`reduce`: mean, median, min, max, sum, first, last, peak_drop; the last three
order the points by the parameter `x`). A `[[numbers]]` entry is the document's value with
one measure (or several, named in `measures` and combined by `value`) and a tolerance
(`0.1` is 10 % of the document's value; `{absolute = 20}` is in the number's unit). A
`[[findings]]` entry is a qualitative claim: its condition `holds_if` is an expression
over its named measures (and `tau`, Kendall's rank agreement, when it has a `ranking`).
Whatever the runs cannot give (no run matches, as in `--quick`) is reported as not
measured, never as agreement.

Expressions are parsed, never executed: numbers, `+ - * / **`, comparisons, `and`, `or`,
`not`; a column in braces, `{flows.standard.goodput_bps}`, or a pattern,
`{flows.f*.goodput_bps}`, for `min`, `max`, `sum`, `mean`, `count`; `abs`; and `bytes`,
`rate`, `seconds`, which read a parameter written as a size, rate or duration.

`[quick]` says what `--quick` runs: fewer replications, a `set` (a shorter duration),
`keep` (only these values of a varied parameter) and `sweeps` (only these). Quick mode is
a check that everything runs and draws; its numbers are not the document's conditions.

Every `[[figures]]` entry is drawn from the runs into `<id>/<file>.png`: `lines` or `bars`
(an expression against a varied parameter, one series per `by`), `intervals` (per-interval
throughput of the chosen runs' flows), `series` (a column of the flow series over time,
`every` resampling it, one run per `by` value), `scatter`. `document = {label = [values]}`
draws the document's values over fatpipe's.

Every `[[assumptions]]` entry (in `document.toml` for all its experiments, or in one
experiment) says what the document leaves open, what fatpipe assumes and why, with the
source. Where fatpipe disagrees, a number's or finding's `note` gives the reason and the
evidence; an experiment's `note` says what its runs show.
"""


def format_reference() -> str:
    """The format section of docs/reproductions.md: the text above, then every key of
    ``document.toml`` and of an experiment file, from the catalog's own schema."""
    from ..scenario.reference import _walk
    from .catalog import _DOCUMENT, _EXPERIMENT

    lines = [FORMAT_INTRO]
    lines += _walk("`document.toml`", "", _DOCUMENT.doc, _DOCUMENT)
    lines += _walk("`E<document>.<n>.toml`", "", _EXPERIMENT.doc, _EXPERIMENT)
    return "\n".join(lines)
