"""What a run will hold, estimated before it starts, against budgets the user can raise.

A scenario can ask for more than any machine holds: ``output.sample_interval = "1ps"`` on a
2 s run is two trillion samples per flow (the kernel's OOM killer ended such a run at 24 GB,
with no message). :func:`check_budget` estimates from the normalized document

- the memory of the time series, the bulk of what a run keeps: samples x (flows x
  :data:`FLOW_ROW_BYTES` + links x :data:`QUEUE_ROW_BYTES`);
- the memory every queue could hold when full (:data:`PACKET_BYTES` per packet): a limit of
  10^12 packets is no limit at all;
- the size of the packet captures on disk: each point's packet rate (its links' rates in
  full-size frames) over the capture window, at most ``capture_max_packets``, each record
  the snap length plus the pcap record header;

and refuses in one line naming the field when the estimate passes ``output.memory_budget``
or ``output.capture_budget``, saying how to raise it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..units import PS_PER_S, format_duration, format_size
from .schema import ScenarioError

__all__ = ["check_budget", "FLOW_ROW_BYTES", "QUEUE_ROW_BYTES", "PACKET_BYTES"]

#: Memory per flow per sample: the core's row (7 eight-byte columns and a four-byte index,
#: 60 bytes) while it runs, then the result's table (10 eight-byte columns and the index,
#: 84 bytes, sharing three of the core's columns). Measured: the 100,000-flow benchmark
#: (50.1 million rows) peaks at 6.4 GB, 127 bytes per row (docs/benchmarks.md).
FLOW_ROW_BYTES = 128
#: Memory per link per sample: the core's 52 bytes (6 eight-byte columns and a four-byte
#: index) and the result's 68 (8 eight-byte columns and the index).
QUEUE_ROW_BYTES = 120
#: Memory of one queued packet in the core (its Packet value, packet.rs: at most 96 bytes).
PACKET_BYTES = 96
#: The smallest IP packet: a one-byte UDP datagram (28 header bytes + 1).
SMALLEST_PACKET_BYTES = 29
#: pcap's per-record header (timestamp, captured and original lengths).
PCAP_RECORD_HEADER_BYTES = 16


def _size(n: float) -> str:
    """A byte count as people read it, whole units or 3 significant digits."""
    for factor, unit in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if n >= factor:
            return f"{n / factor:.3g} {unit}"
    return f"{n:.0f} bytes"


def _queue_packets(queue: Dict[str, Any]) -> Optional[int]:
    """The most packets a queue can hold (None: no limit at all)."""
    bounds = []
    if queue.get("limit_packets") is not None:
        bounds.append(queue["limit_packets"])
    if queue.get("limit_bytes") is not None:
        bounds.append(queue["limit_bytes"] // SMALLEST_PACKET_BYTES)
    if queue.get("limit_cells") is not None:
        bounds.append(queue["limit_cells"])  # every packet takes at least one cell
    return min(bounds) if bounds else None


def check_budget(
    core: Dict[str, Any],
    captures: List[Dict[str, Any]],
    output: Dict[str, Any],
    queue_fields: Dict[int, str],
) -> None:
    """Raises :class:`ScenarioError` if the run would hold more than its budgets allow.

    ``output`` is the parsed ``[output]`` table (with ``sample_interval`` as given);
    ``queue_fields`` names, per link index, the user's field that set its queue."""
    memory_budget = output["memory_budget"]
    raise_it = f"raise output.memory_budget (now {format_size(memory_budget)})"
    samples = core["duration_ps"] // core["sample_interval_ps"] + 1
    flows, links = len(core["flows"]), len(core["links"])
    series = samples * (flows * FLOW_ROW_BYTES + links * QUEUE_ROW_BYTES)
    if series > memory_budget:
        interval = core["sample_interval_ps"]
        fits = max(1, memory_budget // (flows * FLOW_ROW_BYTES + links * QUEUE_ROW_BYTES))
        coarser = -(-core["duration_ps"] // fits)  # the finest interval that fits
        hint = f"sample at least every {format_duration(coarser)}" if coarser <= core["duration_ps"] else "run fewer flows"
        raise ScenarioError(
            f"output.sample_interval: {format_duration(interval)} is not allowed: {samples:,} samples of "
            f"{flows:,} flows and {links:,} links would take about {_size(series)} of memory, over the "
            f"memory budget ({format_size(memory_budget)}); {hint}, or {raise_it}",
            "output.sample_interval",
        )
    for index, link in enumerate(core["links"]):
        packets = _queue_packets(link["queue"])
        if packets is not None and packets * PACKET_BYTES > memory_budget - series:
            field = queue_fields.get(index, "topology")
            raise ScenarioError(
                f"{field}: a queue of up to {packets:,} packets (link {link['name']!r}) could hold about "
                f"{_size(packets * PACKET_BYTES)} of packets when full, over the memory budget left after "
                f"the time series ({_size(max(0, memory_budget - series))}); give a smaller limit, or {raise_it}",
                field,
            )
    _check_captures(core, captures, output)


def _check_captures(core: Dict[str, Any], captures: List[Dict[str, Any]], output: Dict[str, Any]) -> None:
    budget = output["capture_budget"]
    total, largest = 0.0, None
    for spec in captures:
        point = spec["point"]
        if point["kind"] == "link":
            seen = [core["links"][point["link"]]]
        else:  # a host sees what it sends and what is delivered to it
            seen = [link for link in core["links"] if point["node"] in (link["from"], link["to"])]
        stop = spec["stop_ps"] if spec["stop_ps"] is not None else core["duration_ps"]
        seconds = max(0, min(stop, core["duration_ps"]) - spec["start_ps"]) / PS_PER_S
        packets = sum(link["rate_bps"] / (8 * (link["mtu_bytes"] + link["framing_bytes"])) for link in seen) * seconds
        if spec["max_packets"] is not None:
            packets = min(packets, spec["max_packets"])
        size = packets * (PCAP_RECORD_HEADER_BYTES + spec["snaplen_bytes"])
        total += size
        if largest is None or size > largest[1]:
            largest = (spec["name"], size, packets)
    if largest is not None and total > budget:
        name, size, packets = largest
        raise ScenarioError(
            f"output.capture: {name!r} is not allowed: the captures would write about {_size(total)} "
            f"({name!r}: {packets:,.0f} packets at full rate, {_size(size)}), over the capture budget "
            f"({format_size(budget)}); limit them with capture_max_packets or capture_start and "
            f"capture_stop, or raise output.capture_budget",
            "output.capture",
        )
