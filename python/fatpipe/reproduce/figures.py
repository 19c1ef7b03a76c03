"""The analogues of a document's figures, from an experiment's runs: a quantity against a
varied parameter (lines or bars, the document's sweeps), throughput per interval (iperf's
5 s reports), a time series of chosen runs (cwnd, outstanding data, throughput over time),
and scatter plots. The document's own values, where it gives them, are drawn over fatpipe's.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..plots import _figure, _save, same_as_notes, series_style
from .catalog import UNITS, Figure
from .evaluate import MeasureError, Results
from .expressions import Expression, ExpressionError

__all__ = ["draw_figure"]

_BAR_WIDTH = 0.8


def draw_figure(results: Results, fig: Figure, outdir: Path) -> Dict[str, Any]:
    """Draws ``fig`` into ``outdir/<file>.png``; returns what was drawn (or why not)."""
    record: Dict[str, Any] = {"file": f"{fig.file}.png", "title": fig.title, "drawn": False}
    try:
        rows = results.select(fig.spec.get("where") or {}, f"figure {fig.file}: where")
        if rows.empty:
            raise MeasureError("no run matches its where")
        draw = {"lines": _lines, "bars": _lines, "intervals": _intervals, "series": _series,
                "scatter": _scatter}[fig.kind]
        draw(results, rows, fig, outdir / f"{fig.file}.png")
        record["drawn"] = True
    except (MeasureError, ExpressionError, OSError, KeyError, ValueError) as err:
        record["error"] = f"{type(err).__name__}: {err}" if isinstance(err, KeyError) else str(err)
    return record


def _scale(fig: Figure) -> float:
    return UNITS[fig.spec.get("unit") or ""]


def _label(values: Sequence[Any], names: Sequence[str]) -> str:
    parts = []
    for name, value in zip(names, values):
        short = name.split(".")[-1] if name != "sweep" else ""
        parts.append(f"{short} = {value}" if short else str(value))
    return ", ".join(parts)


def _groups(rows: Any, by: Optional[List[str]]) -> List[Tuple[str, Any]]:
    if not by:
        return [("", rows)]
    missing = [b for b in by if b not in rows.columns]
    if missing:
        raise MeasureError(f"by: {missing[0]!r} is not a parameter of these runs")
    out = []
    for key, group in rows.groupby([rows[b].astype(str) for b in by], sort=False):
        out.append((_label(key if isinstance(key, tuple) else (key,), by), group))
    return out


def _lines(results: Results, rows: Any, fig: Figure, path: Path) -> None:
    spec = fig.spec
    x = spec["x"]
    if x not in rows.columns:
        raise MeasureError(f"x: {x!r} is not a parameter of these runs")
    expressions = dict(spec.get("series") or {}) or {"": spec["y"]}
    rows = rows.assign(__x=rows[x].astype(str))
    for i, (label, text) in enumerate(expressions.items()):
        values = Expression(text, f"figure {fig.file}: {label or 'y'}").evaluate(rows).astype(float)
        rows = rows.assign(**{f"__y{i}": values / _scale(fig)})
    order = [str(v) for v in results.parameters.get(x, [])]
    order += [v for v in rows["__x"].unique() if v not in order]
    xs_all = [v for v in order if v in set(rows["__x"])]
    positions = {v: i for i, v in enumerate(xs_all)}
    figure = _figure()
    ax = figure.add_subplot()
    lines = []
    for g_label, group in _groups(rows, spec.get("by")):
        for i, e_label in enumerate(expressions):
            stats = group.groupby("__x", sort=False)[f"__y{i}"].agg(["mean", "min", "max"])
            stats = stats.loc[[v for v in xs_all if v in stats.index]].dropna(subset=["mean"])
            if len(stats):  # the legend lists only what is drawn
                lines.append((f"{g_label}{', ' if g_label and e_label else ''}{e_label}", stats))
    labels = same_as_notes([label for label, _ in lines], [stats["mean"].to_numpy() for _, stats in lines])
    for g, ((_, stats), label) in enumerate(zip(lines, labels)):
        pos = np.array([positions[v] for v in stats.index], dtype=float)
        if fig.kind == "bars":
            width = _BAR_WIDTH / max(1, len(lines))
            offset = (g - (len(lines) - 1) / 2) * width
            ax.bar(pos + offset, stats["mean"], width=width, label=label or None,
                   yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]], capsize=2)
        else:
            (line,) = ax.plot(pos, stats["mean"], label=label or None, alpha=0.9, **series_style(g, len(lines)))
            if (stats["max"] > stats["min"]).any():
                ax.fill_between(pos, stats["min"], stats["max"], color=line.get_color(), alpha=0.15)
    _overlay(ax, spec.get("document"), list(range(len(xs_all))))
    ax.set_xticks(range(len(xs_all)))
    ax.set_xticklabels(xs_all, rotation=45 if len(xs_all) > 8 else 0, fontsize="small")
    _save(figure, ax, path, fig.title, spec.get("x_label") or x, spec.get("y_label") or _unit_label(fig))


def _unit_label(fig: Figure) -> str:
    unit = fig.spec.get("unit") or ""
    return f"{fig.spec.get('y') or ''} ({unit})" if unit else str(fig.spec.get("y") or "")


def _overlay(ax: Any, document: Optional[Dict[str, Any]], positions: Sequence[float]) -> None:
    """The document's values as black markers, one style per series."""
    if not document:
        return
    markers = "sxD^v*"
    for i, (label, values) in enumerate(document.items()):
        pts = [(p, v) for p, v in zip(positions, values) if isinstance(v, (int, float))]
        if pts:
            ax.plot([p for p, _ in pts], [v for _, v in pts], linestyle="--", linewidth=0.8, color="black",
                    marker=markers[i % len(markers)], markersize=5, markerfacecolor="none",
                    label=f"document: {label}")


def _matching(columns: Sequence[str], prefix: str, patterns: Sequence[str]) -> Dict[str, List[str]]:
    """Per flow matching ``patterns``, its ``<prefix>.<flow>.<k>`` columns in k order."""
    flows: Dict[str, List[Tuple[int, str]]] = {}
    for c in columns:
        if not str(c).startswith(prefix + "."):
            continue
        flow, _, k = str(c)[len(prefix) + 1:].rpartition(".")
        if k.isdigit() and any(fnmatch.fnmatchcase(flow, p) for p in patterns):
            flows.setdefault(flow, []).append((int(k), str(c)))
    return {f: [c for _, c in sorted(cols)] for f, cols in flows.items()}


def _intervals(results: Results, rows: Any, fig: Figure, path: Path) -> None:
    spec = fig.spec
    flows = _matching(list(rows.columns), "interval", spec["flows"])
    if not flows:
        raise MeasureError("no per-interval throughput for these flows (set the experiment's interval)")
    scale = UNITS[spec.get("unit") or "Mb/s"]
    figure = _figure()
    ax = figure.add_subplot()
    n = max(len(c) for c in flows.values())
    width = _BAR_WIDTH / max(1, len(flows))
    for i, (flow, columns) in enumerate(flows.items()):
        means = rows[columns].astype(float).mean(axis=0).to_numpy() / scale
        ax.bar(np.arange(len(columns)) + (i - (len(flows) - 1) / 2) * width, means, width=width, label=flow)
    _overlay(ax, spec.get("document"), list(range(n)))
    every = results.interval_s
    ax.set_xticks(range(n))
    ax.set_xticklabels([f"{k * every:g}-{(k + 1) * every:g}" for k in range(n)], fontsize="small",
                       rotation=45 if n > 8 else 0)
    _save(figure, ax, path, fig.title, spec.get("x_label") or "interval (s)",
          spec.get("y_label") or f"throughput ({spec.get('unit') or 'Mb/s'})")


def _series(results: Results, rows: Any, fig: Figure, path: Path) -> None:
    import pandas as pd

    spec = fig.spec
    column = spec["y"]
    patterns = spec.get("flows") or ["*"]
    figure = _figure()
    ax = figure.add_subplot()
    drawn = 0
    for label, group in _groups(rows, spec.get("by")):
        run_dir = next((d for d in group["__run_dir"] if d), "")
        if not run_dir:
            continue
        series = pd.read_parquet(Path(run_dir) / "flow_series.parquet")
        if column not in series.columns:
            raise MeasureError(f"y: {column!r} is not a column of the flow series: {', '.join(series.columns)}")
        for flow, s in series.groupby("flow", sort=False, observed=True):
            if not any(fnmatch.fnmatchcase(str(flow), p) for p in patterns):
                continue
            t, v = _resample(s, column, spec.get("every"))
            name = ", ".join(x for x in (label, str(flow)) if x)
            ax.plot(t, v / _scale(fig), linewidth=0.9, label=name)
            drawn += 1
    if not drawn:
        raise MeasureError("no run directory with a flow series for these runs")
    if spec.get("document"):
        # The document's k-th value covers the k-th interval; drawn at its end, as the
        # resampled series' points are (the catalog requires every with a document).
        every_s = spec["every"] / 1e12
        _overlay(ax, spec["document"], [(k + 1) * every_s for k in range(max(map(len, spec["document"].values())))])
    _save(figure, ax, path, fig.title, spec.get("x_label") or "time (s)", spec.get("y_label") or _unit_label(fig))


def _resample(s: Any, column: str, every_ps: Optional[int]) -> Tuple[Any, Any]:
    t = s["time_s"].to_numpy()
    if not every_ps:
        return t, s[column].to_numpy(dtype=float)
    every = every_ps / 1e12
    grid = np.arange(0.0, t[-1] + 1e-9, every)
    counters = {"throughput_bps": "delivered_bytes", "send_rate_bps": "sent_bytes"}
    if column in counters:
        # A rate over the coarser interval, from the cumulative bytes (as a capture tool's
        # throughput graph with that bin): received, or transmitted.
        total = np.interp(grid, t, s[counters[column]].to_numpy(dtype=float))
        return grid[1:], np.diff(total) * 8 / every
    return grid, np.interp(grid, t, s[column].to_numpy(dtype=float))


def _scatter(results: Results, rows: Any, fig: Figure, path: Path) -> None:
    spec = fig.spec
    figure = _figure()
    ax = figure.add_subplot()
    x_expr = Expression(spec["x"], f"figure {fig.file}: x")
    y_expr = Expression(spec["y"], f"figure {fig.file}: y")
    markers = "os^Dv*x"
    for i, (label, group) in enumerate(_groups(rows, spec.get("by"))):
        xs = x_expr.evaluate(group).astype(float)
        ys = y_expr.evaluate(group).astype(float) / _scale(fig)
        ax.scatter(xs, ys, s=14, marker=markers[i % len(markers)], label=label or None)
    _save(figure, ax, path, fig.title, spec.get("x_label") or spec["x"], spec.get("y_label") or _unit_label(fig))
