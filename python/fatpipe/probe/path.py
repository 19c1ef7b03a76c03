"""``fatpipe probe run --simulate``: the simulator on a dumbbell built from what the probe
measured, beside the probe run.

The dumbbell's round-trip time is the probe's base RTT and its MTU the path MTU, both
measured over the control connection. Its bottleneck rate and queue come from a capacity
flow (one cubic bulk flow, run after the test, as iperf measures a path): the rate it
delivered over its second half, counted in IP bytes, and the largest queueing delay it saw
(smoothed RTT above the base RTT) times that rate -- the queue it built, which is the
path's whole queue if it lost packets and a lower bound otherwise. ``--path-rate`` and
``--path-queue`` give either instead. The bottleneck's framing is 0 bytes: the rate is the
IP rate the path carried, whatever its link layer.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from ..result import Result
from ..units import PS_PER_S
from .runner import ProbeError, ProbeScenario, probe

__all__ = ["MeasuredPath", "measure_path_capacity", "measured_path", "measured_dumbbell", "simulate_beside", "path_summary_line"]

#: The capacity flow: Linux's default algorithm, and buffers far above a 1 Gb/s x 100 ms
#: path's BDP (12.5 MB), so that its window does not limit it there.
CAPACITY_ALGORITHM = "cubic"
CAPACITY_BUFFER = "32MiB"
CAPACITY_SAMPLE_INTERVAL = "10ms"
#: The smallest queue the simulated bottleneck gets: two full-size packets.
MIN_QUEUE_PACKETS = 2


@dataclass
class MeasuredPath:
    """The path as a dumbbell needs it, and how each number was obtained."""

    rate_bps: int
    rtt_ps: int
    mtu_bytes: int
    queue_bytes: int
    sources: Dict[str, str] = field(default_factory=dict)
    #: The capacity flow's own figures, when one ran.
    capacity_flow: Optional[Dict[str, Any]] = None

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)


def measure_path_capacity(daemon: str, secret: Optional[bytes], seconds: float, forward: bool) -> Tuple[int, int, Dict[str, Any]]:
    """Runs the capacity flow (this host to the daemon's if ``forward``); returns (IP rate
    in bit/s over its second half, the queue in bytes it built on the path, its figures)."""
    duration_ps = int(round(seconds * PS_PER_S))
    scenario = {
        "name": "capacity",
        "duration": f"{duration_ps}ps",
        "flows": [{"name": "capacity", "cc": CAPACITY_ALGORITHM, "direction": "forward" if forward else "reverse",
                   "tcp": {"snd_buffer": CAPACITY_BUFFER, "rcv_buffer": CAPACITY_BUFFER}}],
        "output": {"sample_interval": CAPACITY_SAMPLE_INTERVAL, "plots": False},
    }
    result = probe(daemon, scenario, secret=secret)
    flow = result.summary["flows"][0]
    series = result.flow_series
    half = series[series["time_s"] >= seconds / 2]
    if len(half) < 2 or not flow.get("mss_bytes"):
        raise ProbeError("the capacity flow measured nothing: was it too short? (--capacity-time)")
    delivered = half["delivered_bytes"].to_numpy()
    times = half["time_s"].to_numpy()
    payload_bps = (delivered[-1] - delivered[0]) * 8 / (times[-1] - times[0])
    if payload_bps <= 0:
        raise ProbeError("the capacity flow delivered nothing over its second half")
    mss, header = flow["mss_bytes"], flow["header_bytes"]
    ip_bps = int(payload_bps * (mss + header) / mss)
    base_rtt_s = result.summary["probe"]["path"]["base_rtt_ps"] / PS_PER_S
    delay_s = max(0.0, float(half["srtt_s"].max()) - base_rtt_s)
    queue = int(delay_s * ip_bps / 8)
    figures = {
        "algorithm": flow.get("algorithm"),
        "direction": "forward" if forward else "reverse",
        "duration_s": seconds,
        "goodput_second_half_bps": payload_bps,
        "segments_retransmitted": flow.get("segments_retransmitted"),
        "max_srtt_s": float(half["srtt_s"].max()),
        "max_receiver_window_bytes": flow.get("probe", {}).get("max_receiver_window_bytes"),
    }
    return ip_bps, queue, figures


def measured_path(summary: Dict[str, Any], rate_bps: Optional[int], queue_bytes: Optional[int],
                  capacity: Optional[Tuple[int, int, Dict[str, Any]]]) -> MeasuredPath:
    """The dumbbell's numbers: the probe's base RTT and path MTU, the rate and queue given
    (``--path-rate``, ``--path-queue``) or else measured by the capacity flow."""
    path = summary["probe"]["path"]
    sources = {
        "rtt_ps": "base RTT: the smallest ping-pong over the control connection",
        "mtu_bytes": "path MTU of the control connection's route (IP_MTU)",
    }
    mtu = path.get("path_mtu_bytes") or 1500
    if not path.get("path_mtu_bytes"):
        sources["mtu_bytes"] = "unknown path MTU: Ethernet's 1500 bytes"
    mtu = max(68, min(65535, int(mtu)))
    figures = capacity[2] if capacity else None
    if rate_bps is not None:
        sources["rate_bps"] = "given (--path-rate)"
    elif capacity is not None:
        rate_bps = capacity[0]
        sources["rate_bps"] = "the capacity flow's delivery rate over its second half, in IP bytes"
    else:
        raise ValueError("no path rate: give --path-rate or let the capacity flow run")
    rtt = max(1, int(path["base_rtt_ps"]))
    floor = MIN_QUEUE_PACKETS * mtu
    if queue_bytes is not None:
        sources["queue_bytes"] = "given (--path-queue)"
    elif capacity is not None:
        queue_bytes = capacity[1]
        lost = (capacity[2].get("segments_retransmitted") or 0) > 0
        sources["queue_bytes"] = ("the capacity flow's largest queueing delay (smoothed RTT above the base RTT) x the rate"
                                  + ("" if lost else "; it lost nothing, so the path's queue may be larger"))
    else:
        raise ValueError("no path queue: give --path-queue or let the capacity flow run")
    if queue_bytes < floor:
        sources["queue_bytes"] += f"; raised to {MIN_QUEUE_PACKETS} full-size packets"
        queue_bytes = floor
    return MeasuredPath(int(rate_bps), rtt, mtu, int(queue_bytes), sources, figures)


def measured_dumbbell(ps: ProbeScenario, path: MeasuredPath) -> Dict[str, Any]:
    """The user's scenario with its topology replaced by the measured dumbbell, every flow
    on its one pair of hosts in the direction it ran, and no captures."""
    doc = copy.deepcopy(ps.user)
    doc["topology"] = {
        "shape": "dumbbell",
        "bottleneck_rate": f"{path.rate_bps}bps",
        "rtt": f"{path.rtt_ps}ps",
        "mtu": path.mtu_bytes,
        "framing_bytes": 0,
        "queue": {"limit_bytes": f"{path.queue_bytes}B"},
    }
    output = doc.get("output") or {}
    doc["output"] = {k: v for k, v in output.items() if not k.startswith("capture")}
    # The direction of each user flow: that of its first normalized flow (streams share it).
    sends = {}
    for f, here in zip(ps.loaded.core["flows"], ps.controller_sends):
        sends.setdefault(f.get("group") or f["name"], here)
    flows = []
    for i, f in enumerate(doc.get("flows") or []):
        f = {k: v for k, v in f.items() if k not in ("pair", "src", "dst")}
        f["direction"] = "forward" if sends.get(f.get("name", f"flow{i}"), True) else "reverse"
        flows.append(f)
    doc["flows"] = flows
    return doc


def simulate_beside(probed: Result, ps: ProbeScenario, path: MeasuredPath, outdir: Path, plots: bool) -> Tuple[Result, Any]:
    """Simulates the measured dumbbell; writes it into ``outdir/simulated`` and the
    comparison (the probe run the reference) into ``outdir/compare``."""
    from ..compare import compare
    from ..runner import run

    simulated = run(measured_dumbbell(ps, path))
    simulated.write_files(outdir / "simulated", plots=plots)
    comparison = compare([probed, simulated], ["probe", "simulated"], outdir / "compare")
    return simulated, comparison


def path_summary_line(path: MeasuredPath) -> str:
    from ..units import format_rate, format_size

    return (f"simulated path: dumbbell of {format_rate(path.rate_bps)} (IP), RTT {path.rtt_ps / 1e9:.3f} ms, "
            f"MTU {path.mtu_bytes} bytes, queue {format_size(path.queue_bytes)}")
