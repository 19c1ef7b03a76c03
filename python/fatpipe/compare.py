"""``fatpipe compare``: runs side by side, such as a simulation and an emulation of one
scenario.

For every flow (matched by name): goodput, retransmitted segments, timeouts and packets
lost in the network, with each run's difference relative to the first run (the
reference); per link utilization and drops; cwnd, throughput and queue length overlaid on
one time axis (PNG, one panel per flow or link); and one self-contained HTML page. A count
a run did not measure (an emulated run has no fast-retransmit counter, for example) shows
as "n/a", never as 0.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .plots import (
    _binned, _bin_text, _clip_spikes, _draw_bottleneck_rate, _figure, _legend_outside, _save_panels, check_bin, default_bin_s,
)
from .report import _CHECK_SCRIPT, _STYLE, _fmt, _table
from .rundata import RunData

__all__ = ["compare", "Comparison", "CompareError", "FLOW_MEASURES", "relative_difference"]

PathLike = Union[str, "os.PathLike[str]"]

#: Per-flow measures compared: (summary key, label, divisor for display).
FLOW_MEASURES: Tuple[Tuple[str, str, float], ...] = (
    ("goodput_bps", "goodput (Mb/s)", 1e6),
    ("segments_retransmitted", "retransmitted segments", 1.0),
    ("timeouts", "timeouts", 1.0),
    ("data_packets_lost", "data packets lost in the network", 1.0),
)
#: At most this many panels per overlaid figure (flows or links); the rest are listed.
MAX_PANELS = 6


class CompareError(ValueError):
    """The runs cannot be compared (no flow in common); the message says why."""


def relative_difference(value: Optional[float], reference: Optional[float]) -> Optional[float]:
    """(value - reference) / reference; 0 when both are 0, None when either is missing or
    only the reference is 0."""
    if value is None or reference is None:
        return None
    if reference == 0:
        return 0.0 if value == 0 else None
    return (value - reference) / reference


def _kind(result: RunData) -> str:
    if "probe" in result.summary:
        return "probed"
    e = result.summary.get("emulation")
    if e is None:
        return "simulated"
    return "emulated" + ("" if e.get("kept_up", True) else " (did not keep up)")


@dataclass
class Comparison:
    """What :func:`compare` found and wrote."""

    labels: List[str]
    kinds: List[str]
    #: One row per (flow, measure): {"flow", "measure", "values": [...], "relative": [...]}
    #: (relative to the first run; its own entry is None).
    flow_rows: List[Dict[str, Any]]
    link_rows: List[Dict[str, Any]]
    files: List[Path] = field(default_factory=list)

    def table_text(self) -> str:
        """The per-flow table as plain text."""
        head = ["flow", "measure"] + [f"{lab}" for lab in self.labels] + [f"{lab} vs {self.labels[0]}" for lab in self.labels[1:]]
        rows = []
        for r in self.flow_rows:
            scale = dict((k, s) for k, _, s in FLOW_MEASURES)[r["key"]]
            values = ["n/a" if v is None else f"{v / scale:,.3f}" if scale != 1 else f"{v:,.0f}" for v in r["values"]]
            rel = ["n/a" if d is None else f"{100 * d:+.1f}%" for d in r["relative"][1:]]
            rows.append([r["flow"], r["measure"]] + values + rel)
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        lines = ["  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                 for row in [head] + rows]
        kinds = ", ".join(f"{lab}: {kind}" for lab, kind in zip(self.labels, self.kinds))
        return f"runs: {kinds}\n" + "\n".join(lines)

    def to_json(self) -> Dict[str, Any]:
        return {"labels": self.labels, "kinds": self.kinds, "flows": self.flow_rows, "links": self.link_rows,
                "files": [p.name for p in self.files]}


def compare(results: Sequence[RunData], labels: Sequence[str], outdir: PathLike,
            bin_s: Optional[float] = None) -> Comparison:
    """Compares ``results`` (the first is the reference), names them ``labels``, and writes
    compare.json, compare_cwnd.png, compare_throughput.png, compare_queue.png and
    compare.html into ``outdir``. ``bin_s``: the throughput plot's bin (default: the widest
    of the runs' own, :func:`fatpipe.plots.default_bin_s`), at least every run's sample
    interval (else :class:`fatpipe.plots.PlotUnavailable`)."""
    if len(results) < 2 or len(labels) != len(results):
        raise CompareError("compare: give at least two runs, and one label per run")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    flows = _common_flows(results, labels)
    flow_rows = []
    for name in flows:
        entries = [{f["name"]: f for f in r.summary["flows"]}.get(name) for r in results]
        for key, label, _ in FLOW_MEASURES:
            values = [_number(e.get(key)) if e is not None else None for e in entries]
            flow_rows.append({"flow": name, "key": key, "measure": label, "values": values,
                              "relative": [None] + [relative_difference(v, values[0]) for v in values[1:]]})
    link_rows = []
    for link in [lk["name"] for lk in results[0].summary["links"]]:
        entries = [{lk["name"]: lk for lk in r.summary["links"]}.get(link) for r in results]
        link_rows.append({
            "link": link,
            "utilization": [None if e is None else e.get("utilization") for e in entries],
            "drops": [None if e is None else e.get("total_drops_packets") for e in entries],
            "max_queue_packets": [None if e is None else e.get("max_queue_packets") for e in entries],
        })
    comparison = Comparison(list(labels), [_kind(r) for r in results], flow_rows, link_rows)
    if bin_s is None:
        bin_s = max(default_bin_s(r) for r in results)
    for r in results:
        check_bin(r, bin_s)
    comparison.files += [
        _overlay(results, labels, out / "compare_cwnd.png", flows, "cwnd_segments", 1.0, "cwnd (segments)", "congestion window"),
        _overlay_throughput(results, labels, out / "compare_throughput.png", flows, bin_s),
        _overlay_queues(results, labels, out / "compare_queue.png"),
    ]
    (out / "compare.json").write_text(json.dumps(comparison.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    comparison.files.append(out / "compare.json")
    page = _page(results, comparison)
    (out / "compare.html").write_text(page, encoding="utf-8")
    comparison.files.append(out / "compare.html")
    return comparison


def _number(v: Any) -> Optional[float]:
    if v is None or isinstance(v, bool):
        return None
    v = float(v)
    return None if math.isnan(v) else v


def _common_flows(results: Sequence[RunData], labels: Sequence[str]) -> List[str]:
    """Flow names of the reference run that another run has too, in the reference's order."""
    names = [[f["name"] for f in r.summary["flows"]] for r in results]
    common = [n for n in names[0] if any(n in other for other in names[1:])]
    if not common:
        raise CompareError(
            "compare: the runs share no flow name: " + "; ".join(f"{lab}: {', '.join(n)}" for lab, n in zip(labels, names))
        )
    return common


def _overlay(results: Sequence[RunData], labels: Sequence[str], path: Path, flows: List[str], column: str,
             scale: float, ylabel: str, what: str) -> Path:
    """A flow-series column: one panel per flow that has it (at most MAX_PANELS)."""
    def has(r: RunData, flow: str) -> bool:
        rows = r.flow_series[r.flow_series["flow"] == flow]
        return column in rows and bool(rows[column].notna().any())

    shown = [f for f in flows if any(has(r, f) for r in results)][:MAX_PANELS] or flows[:1]
    return _panels(results, labels, path, what, ylabel, shown, lambda r, flow: _rows(r.flow_series, "flow", flow, column, scale))


def _overlay_throughput(results: Sequence[RunData], labels: Sequence[str], path: Path, flows: List[str],
                        bin_s: float) -> Path:
    """Goodput per bin of every flow (one panel per flow), each bin over its span, clipped as
    the run plots are, with the reference run's bottleneck rate."""
    def binned(r: RunData, flow: str) -> Optional[Tuple[Any, Any]]:
        rows = r.flow_series[r.flow_series["flow"] == flow]
        if not len(rows):
            return None
        return _binned(rows["time_s"].to_numpy(), rows["delivered_bytes"].to_numpy(), bin_s,
                       r.scenario["duration_ps"] / 1e12)

    def decorate(ax: Any, values: List[Any]) -> None:
        bottleneck = _draw_bottleneck_rate(ax, results[0])
        import numpy as np

        drawn = np.concatenate(values) if values else np.zeros(0)
        _clip_spikes(ax, drawn, max(bottleneck or 0.0, float(np.quantile(drawn, 0.99)) if len(drawn) else 0.0))

    return _panels(results, labels, path, f"throughput (per {_bin_text(bin_s)})", "throughput (Mb/s)",
                   flows[:MAX_PANELS], binned, steps=True, decorate=decorate)


def _overlay_queues(results: Sequence[RunData], labels: Sequence[str], path: Path) -> Path:
    """Queue length: one panel per link where more than one packet waited in any run (the bottleneck
    first)."""
    busy: List[str] = []
    for r in results:
        for link in r.summary["links"]:
            # More than one packet waited (one behind the packet being sent is every fast
            # interface's normal state), as the run's queue plot.
            if (link.get("max_queue_packets", 0) > 1 or link["name"] == "bottleneck") and link["name"] not in busy:
                busy.append(link["name"])
    busy.sort(key=lambda n: n != "bottleneck")
    shown = busy[:MAX_PANELS] or [results[0].summary["links"][0]["name"]]
    return _panels(results, labels, path, "queue length", "queue (packets)", shown,
                   lambda r, link: _rows(r.queue_series, "link", link, "queue_packets", 1.0))


def _rows(series: Any, key: str, name: str, column: str, scale: float) -> Optional[Tuple[Any, Any]]:
    rows = series[series[key] == name]
    if column not in rows or not len(rows):
        return None
    return rows["time_s"], rows[column] / scale


def _panels(results: Sequence[RunData], labels: Sequence[str], path: Path, what: str, ylabel: str,
            names: List[str], xy: Callable[[RunData, str], Optional[Tuple[Any, Any]]], steps: bool = False,
            decorate: Optional[Callable[[Any, List[Any]], None]] = None) -> Path:
    """One panel per name, one line per run, on one time axis (``steps``: each value held
    over its span); ``decorate(ax, values)`` adds to a panel after its lines."""
    fig = _figure()
    fig.set_size_inches(9.0, 2.2 + 2.0 * len(names))
    axes = list(fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0])
    end = max(r.scenario["duration_ps"] for r in results) / 1e12
    for ax, name in zip(axes, names):
        values = []
        for i, (r, label) in enumerate(zip(results, labels)):
            line = xy(r, name)
            if line is not None:
                kind = _kind(r)
                # "emulated 2" needs no "(emulated)"; "run-a" does.
                named = label.split()[0] == kind.split()[0]
                # Earlier runs wider and lighter: runs that agree still show every line.
                ax.plot(*line, label=label if named else f"{label} ({kind})", alpha=0.85,
                        linewidth=1.0 + 2.0 * (len(results) - 1 - i) / max(1, len(results) - 1),
                        drawstyle="steps-post" if steps else "default")
                values.append(line[1])
        ax.set_xlim(0, end)
        if decorate is not None:
            decorate(ax, values)
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize="medium")
        ax.grid(True, alpha=0.3)
    _legend_outside(axes[0])
    _save_panels(fig, axes, path, f"{what}: {' vs '.join(labels)}")
    return path


def _page(results: Sequence[RunData], c: Comparison) -> str:
    labels = c.labels
    run_rows = []
    for r, label, kind in zip(results, labels, c.kinds):
        e = r.summary.get("emulation") or {}
        late = e.get("release_lateness") or {}
        timing = (f"lateness p99 {_fmt((late.get('p99_ps') or 0) / 1e6)} us, max {_fmt((late.get('max_ps') or 0) / 1e6)} us"
                  if late else "&ndash;")
        run_rows.append([html.escape(label), html.escape(kind), html.escape(str(r.summary.get("name"))),
                         _fmt(r.summary.get("duration_s")), html.escape(str(e.get("kernel", "&ndash;"))) if e else "&ndash;", timing])
    flow_rows = []
    for row in c.flow_rows:
        scale = dict((k, s) for k, _, s in FLOW_MEASURES)[row["key"]]
        values = ["n/a" if v is None else _fmt(v, scale) for v in row["values"]]
        rel = ["n/a" if d is None else f"{100 * d:+.1f}%" for d in row["relative"][1:]]
        flow_rows.append([html.escape(row["flow"]), html.escape(row["measure"])] + values + rel)
    link_rows = []
    for row in c.link_rows:
        link_rows.append([html.escape(row["link"])] + [_fmt(u) for u in row["utilization"]] + [_fmt(d) for d in row["drops"]]
                         + [_fmt(q) for q in row["max_queue_packets"]])
    figures = "".join(
        f'<figure><img src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode("ascii")}" alt="{html.escape(p.stem)}">'
        f"<figcaption>{html.escape(p.name)}</figcaption></figure>"
        for p in c.files if p.suffix == ".png"
    )
    title = html.escape(" vs ".join(labels))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fatpipe compare: {title}</title>
<style>{_STYLE}</style></head>
<body>
<h1>fatpipe compare: {title}</h1>
<h2>Runs</h2>
{_table(["run", "kind", "scenario", "duration (s)", "kernel", "emulator timing"], run_rows)}
<h2>Flows</h2>
<p class="note">Differences are relative to {html.escape(labels[0])}. n/a: the run did not measure it.</p>
{_table(["flow", "measure"] + labels + [f"{lab} vs {labels[0]}" for lab in labels[1:]], flow_rows)}
<h2>Links</h2>
{_table(["link"] + [f"utilization {lab}" for lab in labels] + [f"drops {lab}" for lab in labels] + [f"max queue {lab}" for lab in labels], link_rows)}
<h2>Overlaid</h2>
{figures}
<script>{_CHECK_SCRIPT}</script>
</body></html>
"""
