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

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .result import Result

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


def _save(fig: Figure, ax, path: PathLike, title: str, xlabel: str, ylabel: str, legend: bool = True) -> str:
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    suffix = Path(path).suffix.lower()
    if suffix not in _METADATA:
        raise ValueError(f"{os.fspath(path)}: plots are written as .png or .svg")
    # SVG text as <text>, not paths: searchable, and smaller.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "fatpipe"}):
        fig.savefig(os.fspath(path), metadata=_METADATA[suffix])
    return title


#: At most this many lines per plot: beyond it a figure is unreadable and matplotlib slow.
MAX_LINES = 20


def _per_flow(result: "Result", column: str, tcp_only: bool, combine: str = "sum") -> Tuple[List[Tuple[str, np.ndarray, np.ndarray]], str]:
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


def _duration_s(result: "Result") -> float:
    return result.scenario["duration_ps"] / 1e12


def plot_cwnd(result: "Result", path: PathLike) -> str:
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


def plot_outstanding(result: "Result", path: PathLike) -> str:
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


def _bottleneck_mbps(result: "Result") -> Optional[float]:
    for link in result.scenario["links"]:
        if link["name"] == "bottleneck":
            return link["rate_bps"] / 1e6
    return None


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


def plot_throughput(result: "Result", path: PathLike) -> str:
    """Goodput (Mb/s) of every flow per sample interval against time (document 000 eq.
    4.1); the bottleneck's rate dotted, for scale."""
    fig = _figure()
    ax = fig.add_subplot()
    lines, note = _per_flow(result, "throughput_bps", tcp_only=False)
    for name, times, values in lines:
        ax.plot(times, values / 1e6, label=name, linewidth=1.0)
    mbps = np.concatenate([v for _, _, v in lines]) / 1e6 if lines else np.zeros(0)
    bottleneck = _bottleneck_mbps(result)
    if bottleneck is not None:
        ax.axhline(bottleneck, color="black", linestyle=":", linewidth=0.8,
                   label=f"bottleneck rate ({bottleneck:g} Mb/s)")
    scale = max(bottleneck or 0.0, float(np.quantile(mbps, 0.99)) if len(mbps) else 0.0)
    _clip_spikes(ax, mbps, scale)
    ax.set_xlim(0, _duration_s(result))
    interval_ms = result.scenario["sample_interval_ps"] / 1e9
    return _save(fig, ax, path, f"{result.scenario['name']}: throughput (delivered, per {interval_ms:g} ms){note}",
                 "time (s)", "throughput (Mb/s)")


def plot_throughput_stacked(result: "Result", path: PathLike) -> str:
    """Every flow's goodput per interval stacked: the total the flows get and each one's
    share of it, against the bottleneck's rate."""
    fig = _figure()
    ax = fig.add_subplot()
    lines, note = _per_flow(result, "throughput_bps", tcp_only=False)
    n = len(result.scenario["flows"])
    series = result.flow_series
    times = series["time_s"].to_numpy()[::n] if n else np.zeros(0)
    total = series["throughput_bps"].to_numpy().reshape(-1, n).sum(axis=1) / 1e6 if n else np.zeros(0)
    areas = [v / 1e6 for _, _, v in lines]
    labels = [name for name, _, _ in lines]
    if note:  # the flows not drawn one by one, so that the stack still reaches the total
        areas.append(total - np.sum(areas, axis=0))
        labels.append("the others")
    ax.stackplot(times, *areas, labels=labels, alpha=0.85)
    bottleneck = _bottleneck_mbps(result)
    if bottleneck is not None:
        ax.axhline(bottleneck, color="black", linestyle=":", linewidth=0.8,
                   label=f"bottleneck rate ({bottleneck:g} Mb/s)")
    scale = max(bottleneck or 0.0, float(np.quantile(total, 0.99)) if len(total) else 0.0)
    _clip_spikes(ax, total, scale)
    ax.set_xlim(0, _duration_s(result))
    return _save(fig, ax, path, f"{result.scenario['name']}: throughput, stacked{note}", "time (s)",
                 "throughput (Mb/s)")


def plot_queue(result: "Result", path: PathLike) -> str:
    """Queue length (packets) against time of every link whose queue ever held a packet
    (the bottleneck at least), with its capacity dotted where it is counted in packets and
    the queue came within a tenth of it."""
    fig = _figure()
    ax = fig.add_subplot()
    series = result.queue_series
    limits = {}
    for link in result.scenario["links"]:
        q = link["queue"]
        limits[link["name"]] = q.get("limit_packets")
    busy = [name for name, rows in series.groupby("link", sort=False) if rows["queue_packets"].max() > 0]
    names = busy or [n for n in limits if n == "bottleneck"]
    for name in names:
        rows = series[series["link"] == name]
        (line,) = ax.plot(rows["time_s"], rows["queue_packets"], label=name, linewidth=1.0)
        # The limit only where the queue came near it: a 1000-packet interface queue that
        # never held ten would flatten the bottleneck's curve.
        if limits.get(name) and rows["queue_packets"].max() >= 0.1 * limits[name]:
            ax.axhline(limits[name], color=line.get_color(), linestyle=":", linewidth=0.8,
                       label=f"{name} limit ({limits[name]} packets)")
    ax.set_xlim(0, _duration_s(result))
    ax.set_ylim(bottom=0)
    return _save(fig, ax, path, f"{result.scenario['name']}: queue length", "time (s)", "queue (packets)")


def plot_rtt(result: "Result", path: PathLike) -> str:
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
    result: "Result",
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
    df = read_pcap(capture)
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


def _sender_capture(result: "Result", node: int) -> Path:
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
    for key, rows in groups:
        stats = rows.groupby(x, sort=True)[y].agg(["mean", "min", "max"])
        xs = stats.index.to_numpy()
        (line,) = ax.plot(xs, stats["mean"].to_numpy(), marker="o", markersize=3, linewidth=1.0,
                          label=f"{by} = {key}" if by else y)
        if (stats["max"] > stats["min"]).any():
            ax.fill_between(xs, stats["min"].to_numpy(), stats["max"].to_numpy(), color=line.get_color(), alpha=0.15)
    return _save(fig, ax, path, title or f"{y} against {x}", xlabel or x, ylabel or y)


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
