"""``[output]``: what is recorded and written (time series, plots, packet captures)."""

from __future__ import annotations

from typing import Any, Dict, List

from ..units import U64_MAX, format_duration
from .kinds import Boolean, Duration, Integer, Size
from .network import Network
from .schema import Derived, Field, Kind, ScenarioError, Table, _fail


class CapturePoints(Kind):
    """An array of host or link names where packets are captured; checked against the
    topology once it is built."""

    type_doc = "array of host or link names"
    _EXAMPLE = '["sender", "bottleneck", "receiver"]'

    def parse(self, value: Any, path: str) -> List[str]:
        if not isinstance(value, (list, tuple)):
            raise _fail(path, value, f"expected an array of host or link names, such as {self._EXAMPLE}")
        names: List[str] = []
        for i, v in enumerate(value):
            if not isinstance(v, str) or not v:
                raise _fail(f"{path}[{i}]", v, "expected the name of a host or a link")
            if v in names:
                raise _fail(f"{path}[{i}]", v, "each capture point may be named once")
            names.append(v)
        return names


#: The default sample interval: the finest, and the most intervals a run's series have by
#: default (a run longer than SAMPLE_INTERVAL_FINEST_PS x DEFAULT_SAMPLE_INTERVALS samples
#: more coarsely). :func:`default_sample_interval_ps` applies them.
SAMPLE_INTERVAL_FINEST_PS = 10 * 10**9
DEFAULT_SAMPLE_INTERVALS = 10_000


def default_sample_interval_ps(duration_ps: int) -> int:
    """``output.sample_interval`` when the scenario does not set it: 10 ms, or for a run of
    more than 10,000 x 10 ms the finest of 1, 2 or 5 x 10^k ps that keeps it at 10,000
    intervals or fewer (a readable step: 1500 s -> 200 ms); the duration itself for a run
    shorter than 10 ms."""
    if duration_ps <= SAMPLE_INTERVAL_FINEST_PS:
        return duration_ps
    finest = max(SAMPLE_INTERVAL_FINEST_PS, -(-duration_ps // DEFAULT_SAMPLE_INTERVALS))
    decade = 10 ** (len(str(finest)) - 1)
    return next(m * decade for m in (1, 2, 5, 10) if m * decade >= finest)


#: Default bytes kept of each captured frame: Ethernet, IP and TCP headers with timestamps
#: and four SACK blocks take at most 14 + 20 + 60 = 94; 128 keeps them all whole.
CAPTURE_SNAPLEN_DEFAULT = 128

_OUTPUT = Table(
    fields=(
        Field(
            "sample_interval",
            Duration(positive=True, example="10ms"),
            "interval of the time series (cwnd, queue length, throughput); at most duration. "
            "The interval used is in summary.json (sample_interval_s) and scenario.json",
            Derived(
                "10ms for runs up to 100 s; longer runs: duration / 10,000 rounded up to 1, 2 or "
                "5 x 10^k (1500 s: 200ms), at most 10,000 intervals per series; runs under 10 ms: "
                "the duration"
            ),
            "fatpipe default: a few samples per RTT on paths of 20 ms and more; the cap keeps a "
            "long run's series (and the time to write them) from growing with its length: 1500 s of "
            "100 Mb/s at 10 ms took 2.5 s and 380 MB more (issue 16)",
        ),
        Field("plots", Boolean(), "write cwnd.png and throughput.png", True, "fatpipe default"),
        Field(
            "memory_budget",
            Size(minimum=1, example="16GiB"),
            "most memory the run may hold, estimated before it starts: its network (links, "
            "flows, routing tables), its time series (samples x flows and links), its queues "
            "when full and its --interval reports; a scenario over it is refused, naming the "
            "field to change (topology, flows, sample_interval, a queue limit)",
            "8GiB",
            "fatpipe default: room for the 100,000-flow benchmark (5 s at 10 ms: 6.4 GB, "
            "docs/benchmarks.md) on a 16 GiB machine",
        ),
        Field(
            "capture_budget",
            Size(minimum=1, example="20GB"),
            "most bytes the packet captures may write, estimated before the run from each "
            "point's link rates (full-size frames) over the capture window and "
            "capture_max_packets",
            "4GB",
            "fatpipe default: a capture Wireshark still opens on a laptop; 60 s of a 10 Gb/s "
            "link is about 7 GB",
        ),
        Field(
            "capture",
            CapturePoints(),
            "packet capture points: host names (what the host sends and receives, as tcpdump "
            "on its interface) or link names (what the link transmits); one pcap file per "
            "point, <name>.pcap, with real Ethernet/IPv4/TCP headers and simulated time stamps",
            [],
            "fatpipe default: no capture",
        ),
        Field(
            "capture_start",
            Duration(positive=False, example="10s"),
            "capture packets from this time on",
            "0s",
            "fatpipe default",
        ),
        Field(
            "capture_stop",
            Duration(positive=True, example="12s"),
            "capture packets before this time only",
            Derived("the end of the run"),
            "fatpipe default",
        ),
        Field(
            "capture_max_packets",
            Integer(minimum=1, maximum=U64_MAX, example=100000),
            "write at most this many packets per capture point (the rest are counted)",
            Derived("no limit"),
            "fatpipe default",
        ),
        Field(
            "capture_snaplen",
            Integer(minimum=64, maximum=262144, example=128),
            "bytes kept of each frame (tcpdump -s); the original length is recorded; payload "
            "bytes are zeros",
            CAPTURE_SNAPLEN_DEFAULT,
            "fatpipe default: every header whole, no payload",
        ),
    ),
    doc="What is recorded and written.",
)


def _capture_points(output: Dict[str, Any], network: Network, duration_ps: int) -> List[Dict[str, Any]]:
    """The core's capture specs without their file paths (the runner adds them)."""
    start, stop = output["capture_start"], output["capture_stop"]
    if output["capture"] and stop is not None and stop <= start:
        raise ScenarioError(
            f"output.capture_stop: {format_duration(stop)} is not allowed: must be after "
            f"capture_start ({format_duration(start)})",
            "output.capture_stop",
        )
    if output["capture"] and start >= duration_ps:
        raise ScenarioError(
            f"output.capture_start: {format_duration(start)} is not allowed: must be before "
            f"the end of the run ({format_duration(duration_ps)})",
            "output.capture_start",
        )
    hosts = {n["name"]: i for i, n in enumerate(network.nodes) if n["kind"] == "host"}
    links = {link["name"]: i for i, link in enumerate(network.links)}
    specs = []
    for i, name in enumerate(output["capture"]):
        if name in hosts:
            point = {"kind": "host", "node": hosts[name]}
        elif name in links:
            point = {"kind": "link", "link": links[name]}
        else:
            raise _fail(
                f"output.capture[{i}]",
                name,
                "expected a host or link of the topology: hosts "
                + ", ".join(sorted(hosts)) + "; links " + ", ".join(links),
            )
        specs.append(
            {
                "name": name,
                "point": point,
                "start_ps": start,
                "stop_ps": stop,
                "max_packets": output["capture_max_packets"],
                "snaplen_bytes": output["capture_snaplen"],
            }
        )
    return specs
