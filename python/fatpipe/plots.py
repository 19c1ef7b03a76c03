"""Plots of a run (and of a sweep): PNG or SVG, chosen by the file name's suffix.

Every function draws one figure into ``path`` and returns its title. Figures are drawn with
matplotlib's Agg canvas directly (no pyplot), so plotting works without a display, keeps no
global state between runs, and frees each figure when done. SVG keeps text as text, so
titles and labels are searchable in the file.

Run plots (``PLOTS``, used by ``fatpipe plot --what`` and ``fatpipe report``):
``cwnd``, ``outstanding``, ``throughput``, ``throughput_stacked``, ``queue``, ``rtt``, and
``time_sequence`` (xplot/tcptrace style, from a packet capture at the sender).
Sweep plot: :func:`plot_sweep`, a metric against a parameter, one line per variant.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .scenario.queues import HOLDING_DISCIPLINES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .rundata import RunData

__all__ = [
    "PLOTS",
    "PlotUnavailable",
    "plot_cwnd",
    "plot_outstanding",
    "plot_throughput",
    "plot_throughput_stacked",
    "plot_queue",
    "plot_rtt",
    "plot_time_sequence",
    "plot_sweep",
]

PathLike = Union[str, "os.PathLike[str]"]

# A fixed size and resolution: the images of two identical runs are identical files.
_FIGSIZE_IN = (9.0, 4.5)
_DPI = 120
# Matplotlib stamps its version and a date into image metadata; leave them out so files
# depend on the run only.
_METADATA = {".png": {"Software": None}, ".svg": {"Creator": None, "Date": None}}


class PlotUnavailable(ValueError):
    """The run lacks what the plot needs (e.g. a packet capture); the message says what."""


def _figure() -> Figure:
    fig = Figure(figsize=_FIGSIZE_IN, dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


#: Legend labels longer than this go below the axes instead of beside them (beside, they
#: would squeeze the axes to a sliver).
LEGEND_BESIDE_CHARS = 40


def _legend_outside(ax) -> None:
    """The legend off the data: beside the axes, or below them when its labels are long
    (constrained layout makes room either way)."""
    handles, labels = ax.get_legend_handles_labels()
    twin = getattr(ax, "_fatpipe_twin", None)  # a second y axis on the right (_aqm_overlay)
    if twin is not None:
        more_handles, more_labels = twin.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    if not handles:
        return
    if max(len(label) for label in labels) <= LEGEND_BESIDE_CHARS:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.09 if twin is not None else 1.01, 1.0),
                  borderaxespad=0.0, fontsize="small")
    else:
        # The figure's, "outside" (matplotlib 3.7): constrained layout keeps the axis labels clear.
        ax.figure.legend(handles, labels, loc="outside lower center", fontsize="small", ncol=2 if len(labels) > 4 else 1)


#: A title longer than this many characters is wrapped (a figure is 9 inches wide).
TITLE_CHARS = 90


def _wrapped(title: str) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(title, TITLE_CHARS)) if len(title) > TITLE_CHARS else title


_MARKERS = "osD^vP*Xh<>"


def series_style(i: int, n: int) -> Dict:
    """Line i of n: its own marker, and the earlier series drawn larger and wider, so that
    series with equal values still show one behind the other."""
    step = i / max(1, n - 1)
    return {"marker": _MARKERS[i % len(_MARKERS)], "markersize": 8.0 - 4.5 * step, "linewidth": 2.6 - 1.8 * step}


def same_as_notes(labels: Sequence[str], values: Sequence[np.ndarray], names: Optional[Sequence[str]] = None) -> List[str]:
    """Each label, with " (same as X)" when an earlier series X (its ``names`` entry, or its
    label) has exactly its values, so a reader knows why only one of them shows."""
    names = labels if names is None else names
    out = []
    for j, (label, v) in enumerate(zip(labels, values)):
        twin = next((names[i] for i in range(j) if len(values[i]) == len(v) and len(v)
                     and np.array_equal(np.asarray(values[i], float), np.asarray(v, float), equal_nan=True)), None)
        out.append(f"{label} (same as {twin})" if twin is not None else label)
    return out


def _save(fig: Figure, ax, path: PathLike, title: str, xlabel: str, ylabel: str, legend: bool = True) -> str:
    # Over the whole figure, not the axes: a legend beside the axes must not push it off.
    fig.suptitle(_wrapped(title))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if legend:
        _legend_outside(ax)
    _write(fig, path)
    return title


def _write(fig: Figure, path: PathLike) -> None:
    suffix = Path(path).suffix.lower()
    if suffix not in _METADATA:
        raise ValueError(f"{os.fspath(path)}: plots are written as .png or .svg")
    # SVG text as <text>, not paths: searchable, and smaller.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "fatpipe"}):
        fig.savefig(os.fspath(path), metadata=_METADATA[suffix])


#: At most this many lines per plot: beyond it a figure is unreadable and matplotlib slow.
MAX_LINES = 20


def _per_flow(result: "RunData", column: str, tcp_only: bool, combine: str = "sum") -> Tuple[List[Tuple[str, np.ndarray, np.ndarray]], str]:
    """The lines of a per-flow plot of ``column``: (label, times, values) each, and a note
    for the title. Up to :data:`MAX_LINES` flows, one line each. With more, parallel streams
    are drawn as their group (the streams' values combined: ``sum``, or ``mean`` for
    times such as the RTT), and if that is still too many, the first :data:`MAX_LINES` with
    the note saying how many are shown. Reads the sample-major layout directly (a view per
    flow, no filtering of the whole table per flow)."""
    flows = result.scenario["flows"]
    # The numpy columns, not the DataFrame: `fatpipe run`'s plots then need no pandas.
    series = result.table("flow_series")
    n = len(flows)
    values = np.asarray(series[column], dtype=np.float64)
    times = series["time_s"]
    if n == 0 or len(values) % n:
        return [], ""
    wide = values.reshape(-1, n)
    t = times[::n]
    chosen = [i for i, f in enumerate(flows) if not tcp_only or f.get("tcp") is not None]
    if len(chosen) <= MAX_LINES:
        return [(flows[i]["name"], t, wide[:, i]) for i in chosen], ""
    members: Dict[str, List[int]] = {}
    for i in chosen:
        members.setdefault(flows[i].get("group") or flows[i]["name"], []).append(i)
    reduce = np.nansum if combine == "sum" else np.nanmean
    lines = [(name if len(ix) == 1 else f"{name} ({len(ix)} streams, {combine})", t,
              reduce(wide[:, ix], axis=1) if len(ix) > 1 else wide[:, ix[0]])
             for name, ix in list(members.items())[:MAX_LINES]]
    what = "groups" if len(members) < len(chosen) else "flows"
    note = f" ({MAX_LINES} of {len(members)} {what} shown)" if len(members) > MAX_LINES else ""
    return lines, note


def _duration_s(result: "RunData") -> float:
    return result.scenario["duration_ps"] / 1e12


def plot_cwnd(result: "RunData", path: PathLike) -> str:
    """Congestion window (segments) of every flow against time, ssthresh dashed in the
    flow's colour where it is set (the sawtooth reads best against the threshold it falls
    to)."""
    fig = _figure()
    ax = fig.add_subplot()
    lines, note = _per_flow(result, "cwnd_segments", tcp_only=True)
    thresholds = dict((name, v) for name, _, v in _per_flow(result, "ssthresh_segments", tcp_only=True)[0])
    for name, times, values in lines:
        (line,) = ax.plot(times, values, label=f"{name} cwnd", linewidth=1.0)
        ssthresh = thresholds.get(name)
        if ssthresh is not None and np.isfinite(ssthresh).any():
            ax.plot(times, ssthresh, linestyle="--", linewidth=0.8, color=line.get_color(), label=f"{name} ssthresh")
    ax.set_xlim(0, _duration_s(result))
    ax.set_ylim(bottom=0)
    return _save(fig, ax, path, f"{result.scenario['name']}: congestion window{note}", "time (s)", "cwnd (segments)")


def plot_outstanding(result: "RunData", path: PathLike) -> str:
    """Bytes outstanding (sent, not yet acknowledged: document 000's "packets in flight")
    of every flow against time, in MB, with each flow's receive window dotted."""
    fig = _figure()
    ax = fig.add_subplot()
    windows = {f["name"]: f["tcp"]["rcv_buffer_bytes"] for f in result.scenario["flows"] if f.get("tcp") is not None}
    lines, note = _per_flow(result, "outstanding_bytes", tcp_only=True)
    for name, times, values in lines:
        (line,) = ax.plot(times, values / 1e6, label=name, linewidth=1.0)
        if name in windows:  # one flow's own receive buffer (not a group's sum)
            ax.axhline(windows[name] / 1e6, color=line.get_color(), linestyle=":", linewidth=0.8,
                       label=f"{name} receive buffer")
    ax.set_xlim(0, _duration_s(result))
    ax.set_ylim(bottom=0)
    return _save(fig, ax, path, f"{result.scenario['name']}: bytes outstanding{note}", "time (s)", "outstanding (MB)")


def bottleneck_link(result: "RunData") -> Optional[Dict]:
    """The link the flows share: the one named "bottleneck" (every named shape but the
    parking lot has one), else the busiest (the summary's fairness link); None for a run
    without links (a probe's)."""
    links = {link["name"]: link for link in result.scenario["links"]}
    if "bottleneck" in links:
        return links["bottleneck"]
    name = (result.summary.get("fairness") or {}).get("link")
    return links.get(name)


def _bottleneck_mbps(result: "RunData") -> Optional[float]:
    link = bottleneck_link(result)
    return None if link is None else link["rate_bps"] / 1e6


def _draw_bottleneck_rate(ax, result: "RunData") -> Optional[float]:
    """The bottleneck's line rate, dotted, for scale; returns it in Mb/s."""
    link = bottleneck_link(result)
    if link is None:
        return None
    mbps = link["rate_bps"] / 1e6
    ax.axhline(mbps, color="black", linestyle=":", linewidth=0.9, label=f"{link['name']} rate ({mbps:g} Mb/s)")
    return mbps


#: Throughput bins: at most this many across a run (fewer, wider bins for longer runs: a
#: 10 ms bin over a minute is 6,000 points per flow, a solid block of colour).
MAX_THROUGHPUT_BINS = 200


def _nice_at_least(value: float) -> float:
    """The smallest 1, 2 or 5 x 10^k not below ``value``."""
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        nice = step * 10.0**exponent
        if nice >= value * (1 - 1e-9):
            return nice
    return 10.0 ** (exponent + 1)  # pragma: no cover


def default_bin_s(result: "RunData") -> float:
    """The throughput bin that fits the run: at least the largest flow's round trip
    (delivered throughput over less than an RTT shows the window's bursts and hole refills,
    not a rate) and wide enough that the run has at most :data:`MAX_THROUGHPUT_BINS`; the
    first 1, 2 or 5 x 10^k seconds above that which is a whole number of sample intervals."""
    interval_s = result.scenario["sample_interval_ps"] / 1e12
    rtts = [f.get("min_rtt_ps") or 0 for f in result.summary["flows"]]
    bin_s = _nice_at_least(max(interval_s, _duration_s(result) / MAX_THROUGHPUT_BINS, max(rtts, default=0) / 1e12))
    for _ in range(12):  # the next nice value that is a whole number of sample intervals
        if abs(bin_s / interval_s - round(bin_s / interval_s)) < 1e-6:
            return bin_s
        bin_s = _nice_at_least(bin_s * 1.0001)
    return math.ceil(bin_s / interval_s) * interval_s


def check_bin(result: "RunData", bin_s: float) -> None:
    """Raises PlotUnavailable unless ``bin_s`` is at least the run's sample interval."""
    interval_s = result.scenario["sample_interval_ps"] / 1e12
    if not bin_s >= interval_s * (1 - 1e-9):
        raise PlotUnavailable(
            f"--bin: {bin_s * 1e3:g} ms is not allowed: at least the run's sample interval ({interval_s * 1e3:g} ms)")


def _binned(times: np.ndarray, cumulative: np.ndarray, bin_s: float, end_s: float) -> Tuple[np.ndarray, np.ndarray]:
    """(bin starts, Mb/s in each bin) from a cumulative byte count sampled at ``times``."""
    edges = np.arange(0.0, end_s + bin_s * 1e-6, bin_s)
    if len(edges) < 2 or not len(times):
        return np.zeros(0), np.zeros(0)
    at = np.interp(edges, np.concatenate(([0.0], times)), np.concatenate(([0.0], cumulative)))
    return edges[:-1], np.diff(at) * 8 / bin_s / 1e6


def _binned_lines(result: "RunData", bin_s: float) -> Tuple[List[Tuple[str, np.ndarray, np.ndarray]], str]:
    lines, note = _per_flow(result, "delivered_bytes", tcp_only=False)
    end = _duration_s(result)
    return [(name, *_binned(t, v, bin_s, end)) for name, t, v in lines], note


def _bin_text(bin_s: float) -> str:
    return f"{bin_s * 1e3:g} ms" if bin_s < 1 else f"{bin_s:g} s"


def _clip_spikes(ax, values: np.ndarray, scale: float) -> None:
    # When a retransmission fills a hole, the receiver hands the application everything it
    # had buffered behind it at once: one interval can show many times the link rate. Such
    # spikes would flatten the rest of the plot, so the axis stops a little above the link
    # rate (or the bulk of the samples) and says how high the clipped peaks went.
    peak = float(np.max(values)) if len(values) else 0.0
    if scale > 0 and peak > 1.5 * scale:
        ax.set_ylim(0, 1.5 * scale)
        ax.text(0.01, 0.98, f"axis clipped; peak {peak:,.0f} Mb/s (buffered data released at once)",
                transform=ax.transAxes, va="top", ha="left", fontsize="small", color="dimgray")
    else:
        ax.set_ylim(bottom=0)


def plot_throughput(result: "RunData", path: PathLike, bin_s: Optional[float] = None) -> str:
    """Goodput (Mb/s) of every flow per bin of ``bin_s`` seconds against time (document 000
    eq. 4.1; default :func:`default_bin_s`), each bin drawn over its span; the bottleneck's
    rate dotted, for scale."""
    bin_s = default_bin_s(result) if bin_s is None else bin_s
    check_bin(result, bin_s)
    fig = _figure()
    ax = fig.add_subplot()
    lines, note = _binned_lines(result, bin_s)
    for name, starts, mbps in lines:
        ax.step(starts, mbps, where="post", label=name, linewidth=1.1)
    values = np.concatenate([v for _, _, v in lines]) if lines else np.zeros(0)
    bottleneck = _draw_bottleneck_rate(ax, result)
    scale = max(bottleneck or 0.0, float(np.quantile(values, 0.99)) if len(values) else 0.0)
    _clip_spikes(ax, values, scale)
    ax.set_xlim(0, _duration_s(result))
    return _save(fig, ax, path, f"{result.scenario['name']}: throughput (delivered, per {_bin_text(bin_s)}){note}",
                 "time (s)", "throughput (Mb/s)")


def plot_throughput_stacked(result: "RunData", path: PathLike, bin_s: Optional[float] = None) -> str:
    """Every flow's goodput per bin stacked: the total the flows get and each one's share of
    it, against the bottleneck's rate."""
    bin_s = default_bin_s(result) if bin_s is None else bin_s
    check_bin(result, bin_s)
    fig = _figure()
    ax = fig.add_subplot()
    lines, note = _binned_lines(result, bin_s)
    series = result.table("flow_series")
    n = len(result.scenario["flows"])
    total_bytes = np.asarray(series["delivered_bytes"], dtype=np.float64).reshape(-1, n).sum(axis=1) if n else np.zeros(0)
    starts, total = _binned(np.asarray(series["time_s"])[::n] if n else np.zeros(0), total_bytes, bin_s,
                            _duration_s(result))
    areas = [v for _, _, v in lines]
    labels = [name for name, _, _ in lines]
    if note:  # the flows not drawn one by one, so that the stack still reaches the total
        areas.append(total - np.sum(areas, axis=0))
        labels.append("the others")
    if len(starts):
        # Steps: each bin's stack held over its span (the last bin's edge closes it).
        edges = np.append(starts, starts[-1] + bin_s)
        ax.stackplot(edges, *[np.append(a, a[-1]) for a in areas], labels=labels, alpha=0.85, step="post")
    bottleneck = _draw_bottleneck_rate(ax, result)
    scale = max(bottleneck or 0.0, float(np.quantile(total, 0.99)) if len(total) else 0.0)
    _clip_spikes(ax, total, scale)
    ax.set_xlim(0, _duration_s(result))
    return _save(fig, ax, path, f"{result.scenario['name']}: throughput, stacked (per {_bin_text(bin_s)}){note}",
                 "time (s)", "throughput (Mb/s)")


def _queue_panel(ax, result: "RunData", name: str, rows, link: Dict, summary: Dict, main: bool) -> None:
    """One link's queue (packets); its limit where counted in packets (on another link's
    panel only if the queue reached half of it: a 1,000-packet interface queue that held a
    hundred would flatten the rest); for RED its thresholds and average (in RED's unit,
    cells where it counts cells)."""
    (line,) = ax.step(rows["time_s"], rows["queue_packets"], where="post", label=f"{name} queue", linewidth=1.0,
                      color="tab:blue" if main else None)
    # FQ-PIE keeps PIE's settings, its limit and target among them, in "pie".
    queue = {**link["queue"], **link["queue"].get("pie", {})}
    limit = queue.get("limit_packets")
    # CoDel's and FQ-CoDel's limits are deep by design (1000, 10240): drawn only if neared.
    held = link["queue"].get("discipline") in HOLDING_DISCIPLINES
    if limit and ((main and not held) or rows["queue_packets"].max() >= 0.5 * limit):
        ax.axhline(limit, color=line.get_color(), linestyle=":", linewidth=0.9, label=f"{name} limit ({limit} packets)")
    if link["queue"].get("discipline") == "red":
        unit = "cells" if link["queue"].get("cell_bytes") else "packets"
        avg = rows["red_avg_packets"] if "red_avg_packets" in rows else None
        if avg is not None and avg.notna().any():
            ax.plot(rows["time_s"], avg, color="black", linewidth=1.0, label=f"RED average ({unit})")
        for key, text, style in (("red_min_th_packets", "min_th", "--"), ("red_max_th_packets", "max_th", "-.")):
            value = summary.get(key)
            if value is not None:
                ax.axhline(value, color="dimgray", linestyle=style, linewidth=0.9, label=f"RED {text} ({value:g} {unit})")
    if main and link["queue"].get("discipline") == "dualpi2" and "l4s_queue_packets" in rows:
        ax.step(rows["time_s"], rows["l4s_queue_packets"], where="post", label=f"{name} L4S queue", linewidth=1.0,
                color="tab:green")
    if main and held and "sojourn_s" in rows:
        _aqm_overlay(ax, rows, queue)


def _aqm_overlay(ax, rows, queue: Dict) -> None:
    """CoDel's, FQ-CoDel's, PIE's and FQ-PIE's view on the queue panel: on a second axis the
    sojourn time of the latest packet to leave at each sample, with the target; the samples
    where the control law was dropping (FQ-CoDel: some queue was; PIE: its burst allowance
    lasted; FQ-PIE: some queue's drop probability was above 0), and every interval with drops or marks by the control law as ticks along the
    top."""
    ax2 = ax.twinx()
    sojourn_ms = rows["sojourn_s"] * 1e3
    dual = queue["discipline"] == "dualpi2"
    ax2.plot(rows["time_s"], sojourn_ms, color="tab:orange", linewidth=0.8,
             label="classic sojourn (ms, right)" if dual else "sojourn (ms, right)")
    target_ms = queue.get("target_ps", 0) / 1e9  # a shaper (tbf) has no target
    if target_ms:
        ax2.axhline(target_ms, color="tab:orange", linestyle="--", linewidth=0.9, label=f"target ({target_ms:g} ms)")
    if dual:  # the L4S queue's sojourn and its step threshold (in time)
        ax2.plot(rows["time_s"], rows["l4s_sojourn_s"] * 1e3, color="tab:purple", linewidth=0.8,
                 label="L4S sojourn (ms, right)")
        if queue.get("step_thresh_ps") is not None:
            step_ms = queue["step_thresh_ps"] / 1e9
            ax2.axhline(step_ms, color="tab:purple", linestyle="--", linewidth=0.9, label=f"L4S step ({step_ms:g} ms)")
    top = max(3 * target_ms, float(np.nanquantile(sojourn_ms, 0.99)) if sojourn_ms.notna().any() else 0.0)
    ax2.set_ylim(0, 1.1 * top)
    ax2.set_ylabel("sojourn (ms)")
    dropping = rows["aqm_dropping"] > 0
    # A shaper's state (packets wait for tokens) is its queue line itself: no band.
    if dropping.any() and queue["discipline"] != "tbf":
        label = {"pie": "burst allowance", "fq_pie": "a queue's probability > 0",
                 "dualpi2": "overload (k p' > 1)"}.get(queue["discipline"], "dropping state")
        ax2.fill_between(rows["time_s"], 0, 1.1 * top, where=dropping, step="post", color="tab:red", alpha=0.12,
                         linewidth=0, label=label)
    signals = np.diff(np.asarray(rows["early_drops_packets"] + rows["ecn_marks"], dtype=np.float64), prepend=0.0)
    hits = np.asarray(rows["time_s"])[signals > 0]
    if len(hits):
        ax2.plot(hits, np.full(len(hits), 1.05 * top), "|", color="tab:red", markersize=6, label="drops or marks")
    # One legend for both axes: the panel's legend (`_legend_outside`) reads the twin too.
    ax._fatpipe_twin = ax2  # type: ignore[attr-defined]


def _dualpi2_panel(ax, rows, queue: Dict) -> None:
    """DualPI2's controller: the base probability p', the classic queue's p_C = p'^2 and the
    L4S queue's coupled p_CL = min(k p', 1) at each sample."""
    k = queue["coupling_factor"]
    for column, label, color in (("aqm_control", "p' (base)", "black"), ("prob_classic", "p_C = p'^2 (classic)", "tab:orange"),
                                 ("prob_l4s_coupled", f"p_CL = min({k:g} p', 1) (L4S)", "tab:purple")):
        ax.plot(rows["time_s"], rows[column], label=label, color=color, linewidth=0.9)
    ax.set_ylim(0, max(0.05, 1.1 * float(np.nanmax(rows["prob_l4s_coupled"])) if rows["prob_l4s_coupled"].notna().any()
                       else 0.05))
    ax.set_ylabel("probability")
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    ax.set_title("DualPI2's coupled probabilities", fontsize="medium")


def plot_queue(result: "RunData", path: PathLike) -> str:
    """Queue length (packets) against time. The bottleneck (:func:`bottleneck_link`) on a
    panel and a scale of its own, with its limit, and for RED its min_th, max_th and average
    queue; below it, every other link whose queue ever held a packet (host interface queues,
    other hops), with their limits where the queue reached half of them. Legends beside the
    panels, off the data."""
    series = result.queue_series
    links = {link["name"]: link for link in result.scenario["links"]}
    summaries = {link["name"]: link for link in result.summary["links"]}
    main = bottleneck_link(result)
    # Other links count when more than one packet waited (a packet behind the one being sent
    # is every fast interface's normal state).
    busy = [name for name, rows in series.groupby("link", sort=False, observed=True) if rows["queue_packets"].max() > 1]
    others = [n for n in busy if main is None or n != main["name"]][:MAX_LINES]
    panels = ([main["name"]] if main is not None else []) + ([others] if others else [])
    if main is not None and links[main["name"]]["queue"].get("discipline") == "dualpi2":
        panels.insert(1, ("dualpi2", main["name"]))  # its probabilities, below its queue
    fig = _figure()
    if len(panels) > 1:
        fig.set_size_inches(_FIGSIZE_IN[0], _FIGSIZE_IN[1] * 1.6)
    axes = list(fig.subplots(max(1, len(panels)), 1, sharex=True, squeeze=False)[:, 0])
    for ax, panel in zip(axes, panels):
        if isinstance(panel, tuple):
            _dualpi2_panel(ax, series[series["link"] == panel[1]], links[panel[1]]["queue"])
            continue
        names = [panel] if isinstance(panel, str) else panel
        for name in names:
            rows = series[series["link"] == name]
            _queue_panel(ax, result, name, rows, links[name], summaries.get(name, {}), isinstance(panel, str))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("queue (packets)")
        ax.grid(True, alpha=0.3)
        _legend_outside(ax)
        if len(panels) > 1:
            ax.set_title(panel if isinstance(panel, str) else "the other queues that held packets", fontsize="medium")
    axes[0].set_xlim(0, _duration_s(result))
    if len(panels) > 1:
        return _save_panels(fig, axes, path, f"{result.scenario['name']}: queue length")
    where = f" at {main['name']}" if main is not None else ""
    return _save(fig, axes[0], path, f"{result.scenario['name']}: queue length{where}", "time (s)", "queue (packets)",
                 legend=False)


def _save_panels(fig: Figure, axes, path: PathLike, title: str) -> str:
    """A figure of several panels: its title above them, the time axis on the last."""
    fig.suptitle(_wrapped(title))
    axes[-1].set_xlabel("time (s)")
    _write(fig, path)
    return title


def plot_rtt(result: "RunData", path: PathLike) -> str:
    """Smoothed RTT (ms) of every flow against time: propagation plus queueing delay."""
    fig = _figure()
    ax = fig.add_subplot()
    lines, note = _per_flow(result, "srtt_s", tcp_only=True, combine="mean")
    for name, times, values in lines:
        ax.plot(times, values * 1e3, label=name, linewidth=1.0)
    ax.set_xlim(0, _duration_s(result))
    ax.set_ylim(bottom=0)
    return _save(fig, ax, path, f"{result.scenario['name']}: smoothed RTT{note}", "time (s)", "RTT (ms)")


def _window_shift(tcp: Dict) -> int:
    """The receiver's RFC 7323 window scale shift (as TcpConfig::window_shift)."""
    if not tcp.get("window_scaling", True):
        return 0
    buf = min(tcp["rcv_buffer_bytes"], 2**32 - 1)
    shift = 0
    while shift < 14 and (buf >> shift) > 65535:
        shift += 1
    return shift


def plot_time_sequence(
    result: "RunData",
    path: PathLike,
    flow: Optional[str] = None,
    capture: Optional[PathLike] = None,
    start_s: Optional[float] = None,
    stop_s: Optional[float] = None,
) -> str:
    """The time-sequence graph of one flow, as xplot draws tcptrace's output: each data
    segment a vertical bar from its first to its last byte at the time it was sent
    (retransmissions red), the ACK line (cumulative ACK, green), the receive window's right
    edge (ACK + window, yellow) and SACK blocks (purple), in MB from the flow's first byte.

    Needs a packet capture at the flow's sender host (``output.capture = ["sender"]``), or
    ``capture`` naming a pcap file. ``flow`` defaults to the first flow; ``start_s`` and
    ``stop_s`` zoom.
    """
    from .pcap import flow_packets, flow_port, node_ip, read_pcap, retransmitted, unwrap

    flows = result.scenario["flows"]
    names = [f["name"] for f in flows]
    if flow is None:
        flow = names[0]
    if flow not in names:
        raise PlotUnavailable(f"time_sequence: no flow {flow!r}; flows: {', '.join(names)}")
    index = names.index(flow)
    spec = flows[index]
    sender_node = spec["src"]
    if capture is None:
        capture = _sender_capture(result, sender_node)
    # In simulated time: the capture's clock may run ahead (a synthetic handshake before 0).
    offsets = {c["path"]: c.get("clock_offset_ps", 0) for c in result.summary.get("captures", [])}
    df = read_pcap(capture, clock_offset_s=offsets.get(Path(capture).name, 0) / 1e12)
    data, acks = flow_packets(df, node_ip(sender_node), flow_port(index))
    if data.empty:
        raise PlotUnavailable(f"time_sequence: the capture {os.fspath(capture)} holds no data segment of flow {flow!r}")
    base = int(data["seq"].iloc[0])
    seq = unwrap(data["seq"].to_numpy(), base)
    t = data["time_s"].to_numpy()
    end = seq + data["payload_bytes"].to_numpy()
    retrans = retransmitted(seq, data["payload_bytes"].to_numpy())
    fig = _figure()
    ax = fig.add_subplot()
    mb = 1e6
    ax.vlines(t[~retrans], seq[~retrans] / mb, end[~retrans] / mb, colors="black", linewidth=0.8, label="data segments")
    if retrans.any():
        ax.vlines(t[retrans], seq[retrans] / mb, end[retrans] / mb, colors="red", linewidth=1.6,
                  label=f"retransmissions ({int(retrans.sum())})")
        ax.plot(t[retrans], end[retrans] / mb, "r", marker="$R$", linestyle="none", markersize=6)
    if not acks.empty:
        ta = acks["time_s"].to_numpy()
        ack = unwrap(acks["ack"].to_numpy(), base)
        ax.step(ta, ack / mb, where="post", color="green", linewidth=0.9, label="ACK")
        shift = _window_shift(spec["tcp"])
        window = acks["window"].to_numpy().astype(np.int64) << shift
        ax.step(ta, (ack + window) / mb, where="post", color="goldenrod", linewidth=0.8, label="receive window")
        # SACK blocks lie above their ACK (within 2 GB), so each edge is the unwrapped ACK
        # plus its 32-bit distance from the raw ACK.
        sack_t, sack_lo, sack_hi = [], [], []
        for time_s, raw_ack, rel_ack, blocks in zip(ta, acks["ack"].to_numpy(), ack, acks["sack"]):
            for left, right in blocks:
                sack_t.append(time_s)
                sack_lo.append(rel_ack + (left - raw_ack) % (1 << 32))
                sack_hi.append(rel_ack + (right - raw_ack) % (1 << 32))
        if sack_t:
            ax.vlines(sack_t, np.asarray(sack_lo) / mb, np.asarray(sack_hi) / mb, colors="purple",
                      linewidth=1.2, label="SACK blocks")
    if start_s is not None or stop_s is not None:
        ax.set_xlim(start_s if start_s is not None else t[0], stop_s if stop_s is not None else t[-1])
        visible = (t >= ax.get_xlim()[0]) & (t <= ax.get_xlim()[1])
        if visible.any():
            ax.set_ylim(seq[visible].min() / mb, end[visible].max() / mb)
    return _save(fig, ax, path, f"{result.scenario['name']}: time-sequence graph of {flow}", "time (s)",
                 "sequence number (MB from the first byte)")


def _sender_capture(result: "RunData", node: int) -> Path:
    if "probe" in result.summary:
        raise PlotUnavailable("time_sequence: a probe run has no packet capture (a probe captures no packets)")
    names = {n_i: n["name"] for n_i, n in enumerate(result.scenario["nodes"])}
    host = names.get(node, "")
    path = result.capture_files.get(host)
    if path is None or not Path(path).exists():
        raise PlotUnavailable(
            f"time_sequence: needs a packet capture at the sender host {host!r}: add "
            f'output.capture = ["{host}"] to the scenario'
        )
    return Path(path)


def plot_sweep(
    table: "pd.DataFrame",
    path: PathLike,
    x: str,
    y: str,
    by: Optional[str] = None,
    title: Optional[str] = None,
    xlabel: Optional[str] = None,
    ylabel: Optional[str] = None,
) -> str:
    """A metric ``y`` against a parameter ``x`` from a sweep's summary table, one line per
    value of ``by`` (an algorithm, a queue build...), replications averaged with their
    min-max range shaded."""
    for column in [x, y] + ([by] if by else []):
        if column not in table.columns:
            raise PlotUnavailable(f"sweep plot: no column {column!r}; columns: {', '.join(map(str, table.columns))}")
    fig = _figure()
    ax = fig.add_subplot()
    groups: Sequence[Tuple[object, "pd.DataFrame"]] = list(table.groupby(by, sort=True)) if by else [(None, table)]
    stats_of = [(key, rows.groupby(x, sort=True)[y].agg(["mean", "min", "max"])) for key, rows in groups]
    stats_of = [(key, st) for key, st in stats_of if st["mean"].notna().any()]  # only what is drawn
    labels = same_as_notes([f"{by} = {key}" if by else y for key, _ in stats_of],
                           [st["mean"].to_numpy() for _, st in stats_of], [str(key) for key, _ in stats_of])
    for i, ((key, stats), label) in enumerate(zip(stats_of, labels)):
        xs = stats.index.to_numpy()
        (line,) = ax.plot(xs, stats["mean"].to_numpy(), label=label, alpha=0.9, **series_style(i, len(stats_of)))
        if (stats["max"] > stats["min"]).any():
            ax.fill_between(xs, stats["min"].to_numpy(), stats["max"].to_numpy(), color=line.get_color(), alpha=0.15)
    return _save(fig, ax, path, title or f"{y} against {x}", xlabel or x, ylabel or y)


#: How to read each run plot, in a sentence (the report's captions: the title is in the image).
PLOT_NOTES: Dict[str, str] = {
    "cwnd": "Solid: each flow's congestion window in segments; dashed, in the same colour: its slow-start "
            "threshold, where the window falls back to after a loss.",
    "outstanding": "Data sent and not yet acknowledged; dotted: each flow's receive buffer, the most its window "
                   "allows.",
    "throughput": "Data delivered in order to each receiving application per bin, each bin drawn over its span; "
                  "dotted: the bottleneck's line rate (a flow gets at most its payload share, MSS / wire bytes).",
    "throughput_stacked": "The flows' goodput stacked per bin: the top of the stack is what the flows got together, "
                          "against the bottleneck's rate (dotted).",
    "queue": "Packets waiting at the bottleneck on a scale of its own (for RED: its thresholds and the average it "
             "drops by); below, any other queue that held packets.",
    "rtt": "Each sender's smoothed round-trip time: the path's propagation delay plus the queueing its packets met.",
    "time_sequence": "Each data segment a vertical bar at its send time (retransmissions red), the cumulative ACK "
                     "(green), the receive window's edge (yellow) and SACK blocks (purple), from the sender's "
                     "capture.",
}

#: The run plots that draw throughput in bins (their ``bin_s``: ``fatpipe plot --bin``).
THROUGHPUT_PLOTS = ("throughput", "throughput_stacked")

#: The run plots by name: (function, file stem). ``fatpipe plot --what`` and the report use
#: these names.
PLOTS: Dict[str, Callable[..., str]] = {
    "cwnd": plot_cwnd,
    "outstanding": plot_outstanding,
    "throughput": plot_throughput,
    "throughput_stacked": plot_throughput_stacked,
    "queue": plot_queue,
    "rtt": plot_rtt,
    "time_sequence": plot_time_sequence,
}
