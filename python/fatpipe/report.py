"""``fatpipe report``: one self-contained HTML page for a run directory.

The page holds the scenario, the summary tables (flows, links, sharing, captures) and every
plot, embedded as PNG data, so it can be mailed or archived as one file. A short script
marks on the page whether every image decoded (``data-images-loaded="n/n"`` on ``<body>``),
which the test suite checks in a headless browser.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .cli_tables import percent
from .plots import PLOT_NOTES, PLOTS, THROUGHPUT_PLOTS, PlotUnavailable
from .rundata import DROP_CAUSES, RunData
from .scenario.congestion import cc_name
from .units import format_rate

__all__ = ["write_report"]

PathLike = Union[str, "os.PathLike[str]"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1400px; color: #222; }
.scroll { overflow-x: auto; max-width: 100%; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; } img { max-width: 100%; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.8em; }
.note { color: #666; font-size: 0.9em; }
"""

_CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-images-loaded', ok + '/' + imgs.length);
  // The widest the page lays out: wider than the window means a horizontal scroll bar.
  document.body.setAttribute('data-page-width', document.documentElement.scrollWidth);
});
"""


def _fmt(value: Any, scale: float = 1.0, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        v = value / scale
        if isinstance(value, int) and scale == 1.0:
            return f"{value:,}"
        # Never an exponent ("1e+03"): three significant digits below 1000, whole above.
        return f"{v:,.{digits}g}" if abs(v) < 10**digits else f"{v:,.0f}"
    return html.escape(str(value))


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    # In a scrolling box: a wide table scrolls within the page's column, never past it.
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _flows_table(result: RunData, limit: Optional[int] = None) -> str:
    columns: List[Tuple[str, str, float]] = [
        ("goodput (Mb/s)", "goodput_bps", 1e6),
        ("transmitted (Mb/s)", "transmitted_throughput_bps", 1e6),
        ("delivered (MB)", "bytes_delivered", 1e6),
        ("retransmitted", "segments_retransmitted", 1.0),
        ("fast retransmits", "fast_retransmits", 1.0),
        ("timeouts", "timeouts", 1.0),
        ("slow start (s)", "slow_start_duration_s", 1.0),
        ("loss in slow start", "slow_start_loss_rate", 1.0),
        ("recovery (s)", "recovery_time_s", 1.0),
        ("recovery to 95% (s)", "recovery_time_95_s", 1.0),
        ("min RTT (ms)", "min_rtt_ps", 1e9),
        ("failed burst cycles", "failed_burst_cycles", 1.0),
    ]
    flows = result.summary["flows"]
    # The name a scenario writes ("newreno"), not the core's algorithm alone ("reno").
    names = {spec["name"]: cc_name(spec) for spec in result.scenario["flows"]}
    rows = []
    for f in flows[:limit]:
        row = [html.escape(f["name"]), html.escape(names.get(f["name"], str(f.get("algorithm", ""))))]
        for _, key, scale in columns:
            v = f.get(key)
            row.append(_fmt(float(v) if isinstance(v, int) and scale != 1.0 else v, scale))
        rows.append(row)
    return _table(["flow", "congestion control"] + [c[0] for c in columns], rows)


def _links_table(result: RunData) -> str:
    rows = []
    for link in result.summary["links"]:
        rows.append(
            [html.escape(link["name"]), html.escape(format_rate(int(link["rate_bps"]))), _fmt(float(link["delay_ps"]), 1e9),
             percent(link["utilization"])]
            + [_fmt(link.get(key, 0)) for key, _ in DROP_CAUSES]
            + [_fmt(link["max_queue_packets"])]
        )
    return _table(
        ["link", "rate", "delay (ms)", "utilization"] + [f"drops: {label}" for _, label in DROP_CAUSES]
        + ["max queue (packets)"],
        rows,
    )


def _fairness_table(result: RunData) -> str:
    f = result.summary.get("fairness") or {}
    labels = [
        ("Jain's index", "jain_index"),
        ("fastest / slowest", "max_min_ratio"),
        ("deviation (fastest - slowest) / fastest", "deviation"),
        ("utilization estimate (flows x slowest)", "utilization_estimate"),
        ("measured utilization", "utilization"),
    ]
    rows = [[html.escape(label), percent(f[key]) if "utilization" in key and f.get(key) is not None else _fmt(f.get(key))]
            for label, key in labels]
    link = f.get("link")
    note = f'<p class="note">Against link <code>{html.escape(str(link))}</code>; see docs/metrics.md.</p>' if link else ""
    return _table(["measure", "value"], rows) + note


def _groups_table(result: RunData) -> str:
    if not len(result.groups):
        return ""
    rows = [[html.escape(str(g["name"])), _fmt(int(g["streams"])), html.escape(str(g["algorithm"])),
             _fmt(g["goodput_bps"], 1e6), _fmt(int(g["segments_retransmitted"])), _fmt(int(g["timeouts"]))]
            for g in result.groups.to_dict("records")]
    return "<h2>Parallel streams</h2>" + _table(
        ["group", "streams", "algorithm", "goodput (Mb/s, sum)", "retransmitted", "timeouts"], rows)


def _requests_table(result: RunData) -> str:
    """Per flow and object size: requests, mean and worst response time, mean throughput."""
    if not len(result.requests):
        return ""
    stats = result.requests.groupby(["flow", "size_bytes"], sort=True).agg(
        requests=("request", "count"), mean_s=("response_time_s", "mean"), max_s=("response_time_s", "max"),
        throughput=("throughput_bps", "mean"))
    rows = [[html.escape(str(flow)), _fmt(int(size)), _fmt(int(r.requests)), _fmt(r.mean_s * 1e3), _fmt(r.max_s * 1e3),
             _fmt(r.throughput, 1e6)] for (flow, size), r in stats.iterrows()]
    return "<h2>HTTP requests</h2>" + _table(
        ["flow", "object (bytes)", "requests", "mean response (ms)", "worst response (ms)", "mean throughput (Mb/s)"], rows)


def _captures_list(result: RunData) -> str:
    caps = result.summary.get("captures") or []
    if not caps:
        return ""
    rows = [[html.escape(c["name"]), f'<a href="{html.escape(c["path"])}">{html.escape(c["path"])}</a>',
             _fmt(c["packets_written"]), _fmt(c["packets_not_written"])] for c in caps]
    return "<h2>Packet captures</h2>" + _table(["point", "file", "packets", "not written (limit)"], rows)


def _emulation_section(s: Dict[str, Any]) -> str:
    """An emulated run's timing and what its kernel granted and could not do
    (docs/emulation.md); nothing for a simulated run."""
    e = s.get("emulation")
    if not e:
        return ""
    late = e["release_lateness"]
    us = lambda ps: _fmt(None if ps is None else ps / 1e6)  # noqa: E731
    kept = "kept up with real time" if e["kept_up"] else "<strong>did not keep up with real time: results are marked</strong>"
    rows = []
    for f in s["flows"]:
        k = f.get("emulation", {})
        if "snd_buffer_asked_bytes" in k:
            rows.append([html.escape(f["name"]), html.escape(str(k.get("congestion_control"))), _fmt(k["snd_buffer_asked_bytes"]),
                         _fmt(k.get("snd_buffer_granted_bytes")), _fmt(k["rcv_buffer_asked_bytes"]), _fmt(k.get("rcv_buffer_granted_bytes")),
                         _fmt(k.get("max_receiver_window_bytes"))])
    notes = "".join(f"<li>{html.escape(f['name'])}: {html.escape(n)}</li>" for f in s["flows"] for n in f.get("emulation", {}).get("notes", []))
    return (
        f"<h2>Emulation</h2><p>Real Linux TCP in network namespaces over fatpipe's links; {kept}. Release lateness: "
        f"median {us(late['median_ps'])} us, 99th percentile {us(late['p99_ps'])} us (limit {us(late['limit_p99_ps'])} us), "
        f"maximum {us(late['max_ps'])} us over {_fmt(late['packets'])} packets.</p>"
        + (_table(["flow", "kernel algorithm", "snd_buffer asked", "granted", "rcv_buffer asked", "granted",
                   "largest window announced"], rows) if rows else "")
        + (f'<p class="note">Where the kernel departs from the scenario:</p><ul class="note">{notes}</ul>' if notes else "")
    )


def _probe_section(s: Dict[str, Any]) -> str:
    """A probe run's hosts, measured path, what it ignored, and what each host's kernel was
    asked and granted (docs/probe.md); nothing for other runs."""
    p = s.get("probe")
    if not p:
        return ""
    path = p["path"]
    ms = lambda ps: _fmt(None if ps is None else ps / 1e9)  # noqa: E731
    hosts = [[html.escape(side), html.escape(str(p[side]["hostname"])), html.escape(str(p[side]["address"])),
              html.escape(str(p[side]["kernel"])), html.escape(str(p[side]["software"]))] for side in ("controller", "daemon")]
    rows = []
    for f in s["flows"]:
        k = f.get("probe", {})
        if "snd_buffer_asked_bytes" in k:
            rows.append([html.escape(f["name"]), html.escape(k["sender"]), html.escape(str(k.get("congestion_control"))),
                         _fmt(k["snd_buffer_asked_bytes"]), _fmt(k.get("snd_buffer_granted_bytes")), _fmt(k["rcv_buffer_asked_bytes"]),
                         _fmt(k.get("rcv_buffer_granted_bytes")), _fmt(k.get("max_receiver_window_bytes"))])
    notes = "".join(f"<li>{html.escape(f['name'])}: {html.escape(n)}</li>" for f in s["flows"] for n in f.get("probe", {}).get("notes", []))
    ignored = "; ".join(html.escape(i) for i in p.get("ignored", []))
    return (
        "<h2>Probe</h2><p>Real hosts over a real network" + (", authenticated by the shared secret" if p.get("authenticated") else "")
        + f". Base RTT {ms(path['base_rtt_ps'])} ms (control connection), path MTU {_fmt(path.get('path_mtu_bytes'))} bytes; "
        f"the hosts' clocks agree within {ms(path['clock_offset_bound_ps'])} ms.</p>"
        + _table(["host", "name", "address", "kernel", "software"], hosts)
        + (_table(["flow", "sent by", "kernel algorithm", "snd_buffer asked", "granted", "rcv_buffer asked", "granted",
                   "largest window announced"], rows) if rows else "")
        + (f'<p class="note">Not used by a probe: {ignored}.</p>' if ignored else "")
        + (f'<p class="note">Where the hosts or Linux depart from the scenario:</p><ul class="note">{notes}</ul>' if notes else "")
    )


def _run_kind(s: Dict[str, Any]) -> str:
    if "emulation" in s:
        return "emulated with Linux " + html.escape(str(s["emulation"].get("kernel")))
    if "probe" in s:
        return f"probed between {html.escape(str(s['probe']['controller']['hostname']))} and {html.escape(str(s['probe']['daemon']['address']))}"
    return "simulated"


def _png(draw: Callable[[Path], str]) -> Tuple[str, str]:
    """Draws into a temporary PNG; returns (title, data URI)."""
    with tempfile.TemporaryDirectory(prefix="fatpipe-report-") as tmp:
        path = Path(tmp) / "plot.png"
        title = draw(path)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    return title, f"data:image/png;base64,{data}"


def _figures(result: RunData, bin_s: Optional[float] = None) -> Tuple[List[str], List[str]]:
    figures, notes = [], []
    for name, fn in PLOTS.items():
        if name == "time_sequence":
            continue
        options = {"bin_s": bin_s} if name in THROUGHPUT_PLOTS else {}
        title, uri = _png(lambda p, fn=fn, options=options: fn(result, p, **options))
        figures.append(_figure(title, uri, PLOT_NOTES.get(name)))
    for flow in [f["name"] for f in result.scenario["flows"] if f.get("tcp") is not None]:
        try:
            title, uri = _png(lambda p, flow=flow: PLOTS["time_sequence"](result, p, flow=flow))
        except PlotUnavailable as err:
            notes.append(html.escape(str(err)))
            continue
        figures.append(_figure(title, uri, PLOT_NOTES["time_sequence"]))
    return figures, notes


def _figure(title: str, uri: str, caption: Optional[str] = None) -> str:
    """An embedded image; its title is in the image, so the caption, if any, says how to read
    it instead of repeating the title."""
    note = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{uri}" alt="{html.escape(title)}">{note}</figure>'


def _numeric(values: List[Any]) -> Tuple[Optional[List[float]], str]:
    """Sweep parameter values as numbers for a plot axis, with the unit: plain numbers,
    durations (s), rates (Mb/s) or sizes (bytes); None when they are not quantities."""
    from .units import UnitError, parse_duration, parse_rate, parse_size

    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values], ""
    for parse, scale, unit in ((parse_duration, 1e12, "s"), (parse_rate, 1e6, "Mb/s"), (parse_size, 1.0, "bytes")):
        try:
            return [parse(v) / scale for v in values], unit
        except (UnitError, TypeError, ValueError):
            continue
    return None, ""


#: Words of sweep columns as a reader says them (the rest: underscores read as spaces).
_WORDS = {"rtt": "RTT", "cc": "congestion control", "jain_index": "Jain's fairness index", "mtu": "MTU",
          "discipline": "queue discipline", "txqueuelen": "txqueuelen", "mss": "MSS"}
#: A metric's scale and unit by its key (the rest are plain numbers).
_METRIC_UNITS = {"goodput_bps": (1e6, " (Mb/s)"), "total_goodput_bps": (1e6, " (Mb/s)"),
                 "utilization": (0.01, " (%)")}


def readable(column: str) -> str:
    """A sweep column as an axis says it: "topology.rtt" -> "RTT", "flows.reno.goodput_bps"
    -> "goodput of reno", "flows[0].cc" -> "congestion control of flows[0]"."""
    def word(key: str) -> str:
        key = key[: -len("_bps")] if key.endswith("_bps") else key
        return _WORDS.get(key, key.replace("_", " "))

    parts = column.split(".")
    if parts[0] in ("flows", "links") and len(parts) >= 3:
        return f"{word(parts[-1])} of {'.'.join(parts[1:-1])}"
    if parts[0] == "fairness":
        return word(parts[-1])
    owner = parts[0] if parts[0].startswith("flows[") and len(parts) > 1 else None
    return word(parts[-1]) + (f" of {owner}" if owner else "")


def is_sweep_dir(path: PathLike) -> bool:
    p = Path(path)
    return (p / "summary.parquet").is_file() and (p / "runs").is_dir() and not (p / "summary.json").is_file()


def _sweep_page(sweep_dir: Path) -> str:
    import pandas as pd

    from .plots import plot_sweep

    table = pd.read_parquet(sweep_dir / "summary.parquet")
    columns = list(table.columns)
    params = columns[columns.index("seed") + 1 : columns.index("status")]
    ok = table[table["status"] == "ok"]
    counts = table["status"].value_counts().to_dict()
    # The measures worth a plot: every flow's goodput, the bottleneck's utilization, Jain's index.
    metrics = [c for c in columns if c.startswith("flows.") and c.endswith(".goodput_bps")]
    metrics += [c for c in ("links.bottleneck.utilization", "fairness.jain_index", "total_goodput_bps") if c in columns]
    figures = []
    if params and len(ok):
        x = params[0]
        values, unit = _numeric(list(ok[x]))
        plot_table = ok.copy()
        xlabel = f"{readable(x)} ({unit})" if unit else readable(x)
        if values is not None:
            plot_table[xlabel] = values
        else:
            plot_table[xlabel] = [str(v) for v in ok[x]]
        by = None
        if len(params) > 1:
            by = ", ".join(readable(q) for q in params[1:])
            plot_table[by] = plot_table[params[1:]].astype(str).agg(", ".join, axis=1)
        for metric in metrics:
            scale, unit_text = _METRIC_UNITS.get(metric.rsplit(".", 1)[-1], (1.0, ""))
            ylabel = f"{readable(metric)}{unit_text}"
            plot_table[ylabel] = plot_table[metric] / scale
            title, uri = _png(lambda p, y=ylabel, t=f"{readable(metric)} against {readable(x)}":
                              plot_sweep(plot_table, p, x=xlabel, y=y, by=by, title=t))
            figures.append(_figure(title, uri))
    shown = ["run_id", "replication", "seed"] + params + ["status"] + metrics
    rows = [[percent(v) if c.endswith(".utilization") and isinstance(v, float) and not math.isnan(v)
             else _fmt(v / 1e6 if isinstance(v, float) and c.endswith("_bps") else v) for c, v in zip(shown, r)]
            for r in table[shown].itertuples(index=False)]
    headers = [c + (" (Mb/s)" if c.endswith("_bps") else "") for c in shown]
    failures = table[table["status"] != "ok"]
    failure_rows = [[html.escape(str(r["run_id"]))] + [html.escape(str(r[p])) for p in params] + [html.escape(str(r["status"])), html.escape(str(r["error"]))]
                    for r in failures.to_dict("records")]
    name = html.escape(sweep_dir.name)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fatpipe sweep report: {name}</title>
<style>{_STYLE}</style></head>
<body>
<h1>fatpipe sweep report: {name}</h1>
<p>{len(table)} runs: {", ".join(f"{v} {html.escape(str(k))}" for k, v in sorted(counts.items()))}; varied: {", ".join(html.escape(p) for p in params) or "nothing"}.
Each run's own report: <code>fatpipe report runs/&lt;run id&gt;</code>.</p>
<h2>Plots</h2>
{"".join(figures) or '<p class="note">No finished run to plot.</p>'}
<h2>Runs</h2>
{_table(headers, rows)}
{("<h2>Failed runs</h2>" + _table(["run_id"] + params + ["status", "error"], failure_rows)) if failure_rows else ""}
<script>{_CHECK_SCRIPT}</script>
</body></html>
"""


#: Flows a notebook's summary shows (the rest are in result.flows).
NOTEBOOK_FLOWS = 20


def notebook_html(result: RunData) -> str:
    """The rich summary Jupyter shows for a :class:`Result`: the run in a line, the flows and
    links tables, and the cwnd and throughput plots (embedded PNG)."""
    s = result.summary
    flows = len(s["flows"])
    more = (f'<p class="note">The first {NOTEBOOK_FLOWS} of {flows:,} flows; all of them: '
            "<code>result.flows</code>.</p>") if flows > NOTEBOOK_FLOWS else ""
    figures = "".join(_figure(*_png(lambda p, fn=PLOTS[name]: fn(result, p))) for name in ("cwnd", "throughput"))
    return f"""<div class="fatpipe-result"><style>.fatpipe-result {{ max-width: 1000px; }} {_STYLE.replace("body", ".fatpipe-result")}</style>
<p><b>fatpipe run {html.escape(str(s.get("name", "")))}</b>: {_fmt(s.get("duration_s"))} s simulated, seed {_fmt(s.get("seed"))},
{_fmt(s.get("events"))} events, total goodput {_fmt(s.get("total_goodput_bps"), 1e6)} Mb/s.</p>
{_flows_table(result, NOTEBOOK_FLOWS)}{more}
{_links_table(result)}
{figures}</div>"""


def write_report(run_dir: PathLike, path: Optional[PathLike] = None, bin_s: Optional[float] = None) -> Path:
    """Writes the HTML report of the run (or sweep) in ``run_dir`` to ``path`` (default
    ``run_dir/report.html``) and returns its path. ``bin_s``: the throughput plots' bin
    (default: :func:`fatpipe.plots.default_bin_s`)."""
    if is_sweep_dir(run_dir):
        target = Path(path) if path is not None else Path(run_dir) / "report.html"
        target.write_text(_sweep_page(Path(run_dir)), encoding="utf-8")
        return target
    result = RunData.read(run_dir)
    target = Path(path) if path is not None else Path(run_dir) / "report.html"
    s = result.summary
    name = html.escape(str(s.get("name", "run")))
    figures, notes = _figures(result, bin_s)
    note_html = "".join(f'<p class="note">{n}</p>' for n in dict.fromkeys(notes))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fatpipe report: {name}</title>
<style>{_STYLE}</style></head>
<body>
<h1>fatpipe report: {name}</h1>
<p>{_fmt(s.get("duration_s"))} s {_run_kind(s)}, seed {_fmt(s.get("seed"))}, {_fmt(s["events"]) + " events, " if "events" in s else ""}
total goodput {_fmt(s.get("total_goodput_bps"), 1e6)} Mb/s. fatpipe {html.escape(str(s.get("fatpipe_version", "")))}.</p>
{_emulation_section(s)}
{_probe_section(s)}
<h2>Flows</h2>
{_flows_table(result)}
<h2>Links</h2>
{_links_table(result)}
<h2>Sharing</h2>
{_fairness_table(result)}
{_groups_table(result)}
{_requests_table(result)}
{_captures_list(result)}
<h2>Plots</h2>
{"".join(figures)}
{note_html}
<h2>Scenario</h2>
<p class="note">The normalized scenario the core ran (base units: bit/s, picoseconds, bytes).</p>
<details><summary>scenario.json</summary><pre>{html.escape(json.dumps(result.scenario, indent=2))}</pre></details>
<script>{_CHECK_SCRIPT}</script>
</body></html>
"""
    target.write_text(page, encoding="utf-8")
    return target
