"""Running a reproduction: an experiment's sweeps through the sweep machinery (so ``--jobs``,
``--dask`` and resuming work as for ``fatpipe sweep``), its table of runs, the comparison
and the figures.

Layout of the output directory (one per document)::

    OUTDIR/comparison.md, comparison.json    every experiment's counts, and the tables
    OUTDIR/<id>/comparison.md, .json         the experiment's numbers, findings, assumptions
    OUTDIR/<id>/runs.csv                     one row per run of its sweeps (and used ones)
    OUTDIR/<id>/<figure>.png                 the analogues of the document's figures
    OUTDIR/<id>/sweeps/<sweep>/              what `fatpipe sweep` writes for each sweep
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..scenario import ScenarioError, read_scenario_file
from ..sweeps import Sweep, SweepError, _flatten, format_path, parse_path, set_path
from .catalog import Document, Experiment, SweepDef
from .evaluate import Results, count, evaluate_finding, evaluate_number

__all__ = ["ExperimentOutcome", "run_experiment", "build_sweep"]


@dataclass
class ExperimentOutcome:
    experiment: Experiment
    numbers: List[Dict[str, Any]]
    findings: List[Dict[str, Any]]
    figures: List[Dict[str, Any]]
    runs: int
    failed: int
    wall_s: float
    quick: bool
    errors: List[str] = field(default_factory=list)
    #: The runs' own simulation times, summed (seconds of one core), and how many of the
    #: runs were reused from an earlier invocation rather than run now.
    compute_s: float = 0.0
    reused: int = 0

    @property
    def counts(self) -> Dict[str, Dict[str, int]]:
        return {"numbers": count(self.numbers, "agrees"), "findings": count(self.findings, "holds")}


def _canonical(path: str) -> str:
    return format_path(parse_path(path))


def _flat(table: Any, where: str) -> Dict[str, List[Any]]:
    return {param: values for param, _, values in _flatten(table, where)} if table else {}


def build_sweep(s: SweepDef, quick: Optional[Any]) -> Sweep:
    """The sweep of ``s``, cut down as ``quick`` says (None: the full sweep)."""
    base = s.doc["base"]
    if isinstance(base, str):
        path = s.folder / base
        base = read_scenario_file(path)
        base.setdefault("name", path.stem)
    base = copy.deepcopy(base)
    grid = _flat(s.doc.get("grid"), "grid")
    zips_raw = s.doc.get("zip") or []
    zips = [_flat(z, f"zip[{i}]") for i, z in enumerate(zips_raw if isinstance(zips_raw, list) else [zips_raw])]
    replications = s.doc.get("replications", 1)
    changes = [("set", s.doc.get("set") or {})] + ([("quick.set", quick.set)] if quick is not None else [])
    for where, values in changes:
        for path, value in values.items():
            try:
                set_path(base, parse_path(path), value)
            except ScenarioError as err:
                raise SweepError(f"sweep {s.name!r}: {where}: {err}") from None
    if quick is not None:
        replications = quick.replications
        keep = {_canonical(k): v if isinstance(v, list) else [v] for k, v in quick.keep.items()}
        for key, wanted in keep.items():
            for param in list(grid):
                if _canonical(param) == key:
                    grid[param] = [v for v in grid[param] if v in wanted]
            for group in zips:
                match = [p for p in group if _canonical(p) == key]
                if match:
                    indices = [i for i, v in enumerate(group[match[0]]) if v in wanted]
                    for p in group:
                        group[p] = [group[p][i] for i in indices]
        for where, values in [*(("grid", v) for v in grid.values()), *(("zip", v) for g in zips for v in g.values())]:
            if not values:
                raise SweepError(f"quick.keep: leaves no value of a varied parameter of sweep {s.name!r}")
    return Sweep.build(base, grid=grid or None, zip=[z for z in zips if z] or None, replications=replications,
                       name=s.name, relative_to=s.folder)


def quick_keeps_known(doc: Document, exp: Experiment) -> None:
    """Every parameter ``quick.keep`` names is varied by one of the sweeps."""
    varied = set()
    for s in doc.sweeps_of(exp):
        for table in [s.doc.get("grid")] + list(s.doc.get("zip") or []):
            varied |= {_canonical(p) for p in _flat(table, "grid")}
    for key in exp.quick.keep:
        if _canonical(key) not in varied:
            raise SweepError(f"{exp.path}: quick.keep: {key!r} is not varied by any sweep of {exp.id}")


def _interval_columns(table: Any, run_dirs: Sequence[Optional[Path]], interval_ps: int) -> Any:
    """Per run and flow, the payload delivered in each interval from the run's start, in
    bits per second (iperf -i on the receiving side): columns ``interval.<flow>.<k>``; and
    the bytes the application wrote in each (iperf's client side), ``written.<flow>.<k>``."""
    import pandas as pd

    from ..metrics import interval_rates, written_interval_rates

    every_s = interval_ps / 1e12
    rows: List[Dict[str, float]] = []
    for (_, summary), run_dir in zip(table.iterrows(), run_dirs):
        row: Dict[str, float] = {}
        series_file = run_dir / "flow_series.parquet" if run_dir else None
        if series_file is not None and series_file.exists():
            series = pd.read_parquet(series_file, columns=["time_s", "flow", "delivered_bytes"])
            for flow, s in series.groupby("flow", sort=False, observed=True):
                for k, rate in enumerate(interval_rates(s["time_s"], s["delivered_bytes"], every_s)):
                    row[f"interval.{flow}.{k}"] = rate
                _transfer_intervals(row, summary, flow, s, every_s)
                written = _number(summary.get(f"flows.{flow}.bytes_written"))
                delivered = _number(summary.get(f"flows.{flow}.bytes_delivered"))
                if finite(written) and finite(delivered):
                    for k, rate in enumerate(written_interval_rates(s["time_s"], s["delivered_bytes"], every_s,
                                                                    written, delivered)):
                        row[f"written.{flow}.{k}"] = rate
        rows.append(row)
    extra = pd.DataFrame(rows, index=table.index)
    return pd.concat([table, extra], axis=1)


def _transfer_intervals(row: Dict[str, float], summary: Any, flow: str, series: Any, every_s: float) -> None:
    """A flow with transfers: the payload delivered in each whole interval from transfer n's
    own start to its close (iperf -i of that run), ``interval.<flow>.transfers.<n>.<k>``."""
    import numpy as np

    times = series["time_s"].to_numpy(dtype=np.float64)
    delivered = series["delivered_bytes"].to_numpy(dtype=np.float64)
    n = 1
    while finite(start := _number(summary.get(f"flows.{flow}.transfers.{n}.start_ps"))):
        end = _number(summary.get(f"flows.{flow}.transfers.{n}.end_ps"))
        t0 = start / 1e12
        t1 = end / 1e12 if finite(end) else float(times[-1])
        k = 0
        while t0 + (k + 1) * every_s <= t1 + 1e-9:
            a, b = np.interp([t0 + k * every_s, t0 + (k + 1) * every_s], times, delivered)
            row[f"interval.{flow}.transfers.{n}.{k}"] = float(b - a) * 8 / every_s
            k += 1
        n += 1


def run_experiment(
    doc: Document,
    exp: Experiment,
    outdir: Path,
    *,
    quick: bool,
    jobs: Optional[int],
    executor: str,
    dask: Optional[str],
    progress: bool,
    done: Dict[Tuple[str, str], Tuple[Any, Any]],
    on_sweep: Optional[Callable[[str, Any], None]] = None,
) -> ExperimentOutcome:
    """Runs (or reuses) the experiment's sweeps and compares; ``done`` caches sweeps already
    run in this invocation (an experiment may use another's)."""
    import pandas as pd

    from ..sweep_runner import run_sweep
    from .figures import draw_figure
    from .report import write_experiment

    started = time.perf_counter()
    quick_keeps_known(doc, exp)
    frames, parameters, run_dirs = [], {}, []
    runs = failed = reused = 0
    compute_s = 0.0
    for s in doc.sweeps_of(exp):
        owner = doc.experiments[s.owner]
        if quick and owner.quick.sweeps is not None and s.name not in owner.quick.sweeps:
            continue
        key = (s.owner, s.name)
        if key not in done:
            spec = build_sweep(s, owner.quick if quick else None)
            target = outdir / s.owner / "sweeps" / s.name
            outcome = run_sweep(spec, target, jobs=jobs, executor=executor, dask=dask, plots=False,
                                progress=progress)
            done[key] = (spec, outcome)
            if on_sweep is not None:
                on_sweep(s.name, outcome)
        spec, outcome = done[key]
        frame = outcome.summary.copy()
        frame.insert(0, "sweep", s.name)
        frames.append(frame)
        dirs = [outcome.outdir / "runs" / rid if st == "ok" else None for rid, st in zip(frame["run_id"], frame["status"])]
        run_dirs += dirs
        if s.owner == exp.id:  # another experiment's runs count as its own
            compute_s += sum(_run_wall_s(d) for d in dirs if d)
        runs += len(frame)
        reused += getattr(outcome, "reused", 0)
        failed += int((frame["status"] != "ok").sum())
        for p in spec.parameters:
            known = parameters.setdefault(p.path, [])
            known += [v for v in p.values if v not in known]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"sweep": [], "status": []})
    if exp.interval_ps is not None and len(table):
        table = _interval_columns(table, run_dirs, exp.interval_ps)
    table = table.copy()  # one block per dtype: the interval columns and figures add columns
    table["__run_dir"] = [str(d) if d else "" for d in run_dirs] if run_dirs else []
    results = Results(table, parameters, (exp.interval_ps or 0) / 1e12)
    numbers = [evaluate_number(results, n, doc.tolerance, f"numbers[{i}]") for i, n in enumerate(exp.numbers)]
    findings = []
    for i, f in enumerate(exp.findings):
        # The same finding on the runs of each variant (document 000's hosts limited to
        # 130 Mb/s), right after it, each claim saying which runs it was scored on.
        others = [(v, v.of(f)) for v in doc.variants]
        others = [(v, o) for v, o in others if o is not None]
        labels = [v.base_label for v, _ in others if v.base_label]
        own = replace(f, claim=f"{f.claim} [{labels[0]}]") if labels else f
        findings.append(evaluate_finding(results, own, f"findings[{i}]"))
        for v, other in others:
            findings.append(evaluate_finding(results, other, f"findings[{i}] ({v.label})"))
    target = outdir / exp.id
    target.mkdir(parents=True, exist_ok=True)
    figures = [draw_figure(results, fig, target) for fig in exp.figures]
    outcome = ExperimentOutcome(exp, numbers, findings, figures, runs, failed, time.perf_counter() - started, quick,
                                compute_s=compute_s, reused=reused)
    table.drop(columns=["__run_dir"]).to_csv(target / "runs.csv", index=False)
    write_experiment(doc, outcome, target)
    return outcome


def _run_wall_s(run_dir: Path) -> float:
    """How long the run's simulation took when it ran (its done.json), seconds."""
    import json

    try:
        return float(json.loads((run_dir / "done.json").read_text(encoding="utf-8")).get("wall_s") or 0.0)
    except (OSError, ValueError, TypeError):
        return 0.0


def _number(x: Any) -> Optional[float]:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
