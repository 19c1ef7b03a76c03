"""Standard plots of a run: congestion window and throughput over time, one line per flow.

Figures are drawn with matplotlib's Agg canvas directly (no pyplot), so plotting works
without a display, keeps no global state between runs, and frees each figure when done.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Union

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:  # pragma: no cover
    from .result import Result

__all__ = ["plot_cwnd", "plot_throughput"]

PathLike = Union[str, "os.PathLike[str]"]

# A fixed size and resolution: the PNGs of two identical runs are identical files.
_FIGSIZE_IN = (9.0, 4.5)
_DPI = 120
# Matplotlib stamps its version into PNG metadata; leave it out so files depend on the run.
_PNG_METADATA = {"Software": None}


def _figure() -> Figure:
    fig = Figure(figsize=_FIGSIZE_IN, dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plot_cwnd(result: "Result", path: PathLike) -> str:
    """Congestion window (segments) of every flow against time; returns the title.

    ssthresh is drawn dashed in the flow's colour where it is set, since the sawtooth reads
    best against the threshold it falls to.
    """
    fig = _figure()
    ax = fig.add_subplot()
    series = result.flow_series
    # UDP flows have no window: only TCP flows are drawn.
    for name in [f["name"] for f in result.scenario["flows"] if "tcp" in f]:
        rows = series[series["flow"] == name]
        (line,) = ax.plot(
            rows["time_s"], rows["cwnd_segments"], label=f"{name} cwnd", linewidth=1.0
        )
        if rows["ssthresh_segments"].notna().any():
            ax.plot(
                rows["time_s"],
                rows["ssthresh_segments"],
                linestyle="--",
                linewidth=0.8,
                color=line.get_color(),
                label=f"{name} ssthresh",
            )
    title = f"{result.scenario['name']}: congestion window"
    ax.set_title(title)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (segments)")
    ax.set_xlim(0, result.scenario["duration_ps"] / 1e12)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # none when every flow is UDP
        ax.legend(loc="best", fontsize="small")
    fig.savefig(os.fspath(path), metadata=_PNG_METADATA)
    return title


def plot_throughput(result: "Result", path: PathLike) -> str:
    """Goodput (Mb/s) of every flow per sample interval against time; returns the title.

    The bottleneck's rate is drawn as a dotted line when the topology has a link named
    "bottleneck", for scale.
    """
    fig = _figure()
    ax = fig.add_subplot()
    series = result.flow_series
    mbps = series["throughput_bps"] / 1e6
    for name in [f["name"] for f in result.scenario["flows"]]:
        rows = series["flow"] == name
        ax.plot(series.loc[rows, "time_s"], mbps[rows], label=name, linewidth=1.0)
    bottleneck_mbps = None
    for link in result.scenario["links"]:
        if link["name"] == "bottleneck":
            bottleneck_mbps = link["rate_bps"] / 1e6
            ax.axhline(
                bottleneck_mbps,
                color="black",
                linestyle=":",
                linewidth=0.8,
                label=f"bottleneck rate ({bottleneck_mbps:g} Mb/s)",
            )
    # When a retransmission fills a hole, the receiver hands the application everything it
    # had buffered behind it at once: one interval can show many times the link rate. Such
    # spikes would flatten the rest of the plot, so the axis stops a little above the link
    # rate (or the bulk of the samples) and says how high the clipped peaks went.
    peak = float(mbps.max()) if len(mbps) else 0.0
    scale = max(bottleneck_mbps or 0.0, float(mbps.quantile(0.99)) if len(mbps) else 0.0)
    if scale > 0 and peak > 1.5 * scale:
        ax.set_ylim(0, 1.5 * scale)
        ax.text(
            0.01,
            0.98,
            f"axis clipped; peak {peak:,.0f} Mb/s (buffered data released at once)",
            transform=ax.transAxes,
            va="top",
            ha="left",
            fontsize="small",
            color="dimgray",
        )
    else:
        ax.set_ylim(bottom=0)
    interval_ms = result.scenario["sample_interval_ps"] / 1e9
    title = f"{result.scenario['name']}: throughput (delivered, per {interval_ms:g} ms)"
    ax.set_title(title)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (Mb/s)")
    ax.set_xlim(0, result.scenario["duration_ps"] / 1e12)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.savefig(os.fspath(path), metadata=_PNG_METADATA)
    return title
