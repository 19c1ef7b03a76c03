"""What a run will hold, estimated before it starts, against budgets the user can raise.

A scenario can ask for more than any machine holds: ``output.sample_interval = "1ps"`` on a
2 s run is two trillion samples per flow (the kernel's OOM killer ended such a run at 24 GB,
with no message). :func:`check_budget` estimates from the normalized document

- the memory the network and the flows take before anything is sent: :data:`LINK_BYTES` per
  link, :data:`FLOW_BYTES` per flow, and the routing tables, one entry per node and per
  link for each host a flow ends at (:data:`ROUTE_ENTRY_BYTES`, :data:`HAND_ON_ENTRY_BYTES`;
  `crates/fatpipe-core/src/net/routing.rs`);
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

__all__ = ["check_budget", "check_counts", "check_interval_budget", "FLOW_ROW_BYTES", "QUEUE_ROW_BYTES",
           "PACKET_BYTES", "LINK_BYTES", "FLOW_BYTES"]

#: Memory per flow per sample: the core's row (7 eight-byte columns and a four-byte index,
#: 60 bytes) while it runs, then the result's table (10 eight-byte columns and the index,
#: 84 bytes, sharing three of the core's columns). Measured: the 100,000-flow benchmark
#: (50.1 million rows) peaks at 6.4 GB, 127 bytes per row (docs/benchmarks.md).
FLOW_ROW_BYTES = 128
#: Memory per link per sample: the core's 52 bytes (6 eight-byte columns and a four-byte
#: index) and the result's 68 (8 eight-byte columns and the index).
QUEUE_ROW_BYTES = 120
#: Memory per link before the run: the Python document and the core's Link (queue, FIFO,
#: statistics, its series' reservation). Measured: custom chains of 16,000 and 32,000 nodes
#: (31,998 and 63,998 links, one flow, one sample) peak at 181 and 307 MB, 3.9 KB per link.
LINK_BYTES = 4096
#: Memory per flow before the run: the document's flow, the core's sender and receiver and
#: their first window. Measured: 10,000 and 40,000 CUBIC streams on a 10 Gb/s dumbbell, one
#: sample, peak at 200 and 675 MB, 15.8 KB per flow.
FLOW_BYTES = 16384
#: Routing: per node and destination host, the link (`RoutingTable::hops`, 4 bytes) and the
#: simulation's copy with its split flag (`next_hop`, 4 bytes); per link and destination, the
#: hand-on table (`hand_on`, 4 bytes). Nodes x nodes before issue 23 (a 14,000-node chain
#: took 4.1 GB); destinations are only the hosts flows end at now.
ROUTE_ENTRY_BYTES = 8
HAND_ON_ENTRY_BYTES = 4
#: One line of one --interval report (a flow's, or the sum), kept for --json or printed: its
#: dict in Python and its JSON text. Measured: `fatpipe run --json --interval 1ms` of 10 s
#: (10,000 reports) of one flow and of ten streams peaked 44 and 199 MB above the same runs
#: without --interval: 2.2 and 1.8 KB per line.
INTERVAL_LINE_BYTES = 2048
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
    # FQ-PIE keeps PIE's settings, its limit among them, in "pie" (Linux's p_params).
    queue = {**queue, **queue.get("pie", {})}
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
    destinations = len({f[end] for f in core["flows"] for end in ("src", "dst")})
    network = links * LINK_BYTES + destinations * (len(core["nodes"]) * ROUTE_ENTRY_BYTES + links * HAND_ON_ENTRY_BYTES)
    if network + flows * FLOW_BYTES > memory_budget:
        field = "topology" if network >= flows * FLOW_BYTES else "flows"
        raise ScenarioError(
            f"{field}: {len(core['nodes']):,} nodes, {links:,} links and {flows:,} flows to {destinations:,} hosts would "
            f"take about {_size(network + flows * FLOW_BYTES)} of memory before the first packet, over the memory budget "
            f"({format_size(memory_budget)}); run a smaller network or fewer flows, or {raise_it}",
            field,
        )
    memory_budget -= network + flows * FLOW_BYTES
    series = samples * (flows * FLOW_ROW_BYTES + links * QUEUE_ROW_BYTES)
    if series > memory_budget:
        interval = core["sample_interval_ps"]
        fits = max(1, memory_budget // (flows * FLOW_ROW_BYTES + links * QUEUE_ROW_BYTES))
        coarser = -(-core["duration_ps"] // fits)  # the finest interval that fits
        hint = f"sample at least every {format_duration(coarser)}" if coarser <= core["duration_ps"] else "run fewer flows"
        raise ScenarioError(
            f"output.sample_interval: {format_duration(interval)} is not allowed: {samples:,} samples of "
            f"{flows:,} flows and {links:,} links would take about {_size(series)} of memory, over the "
            f"memory budget ({format_size(output['memory_budget'])}); {hint}, or {raise_it}",
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


def check_counts(doc: Dict[str, Any], memory_budget: int) -> None:
    """Refuses, before any of them is read, more [[flows]] (with their streams) or custom
    links than the memory budget could hold at :data:`FLOW_BYTES` and :data:`LINK_BYTES`
    each: a million flow tables were refused only after 114 s and 3.6 GB (issue 23). ``doc``
    is the scenario as the user wrote it; what is not a list or a count is left to the
    validation proper."""
    raise_it = f"raise output.memory_budget (now {format_size(memory_budget)})"
    flows = doc.get("flows")
    if isinstance(flows, list):
        streams = [f.get("streams", 1) if isinstance(f, dict) else 1 for f in flows]
        count = sum(n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 1000 else 1 for n in streams)
        if count * FLOW_BYTES > memory_budget:
            raise ScenarioError(
                f"flows: {count:,} flows (with their streams) would take about {_size(count * FLOW_BYTES)} of memory "
                f"before the first packet, over the memory budget ({format_size(memory_budget)}); run fewer flows, or "
                f"{raise_it}",
                "flows",
            )
    topology = doc.get("topology")
    links = topology.get("links") if isinstance(topology, dict) else None
    if isinstance(links, list) and 2 * len(links) * LINK_BYTES > memory_budget:
        raise ScenarioError(
            f"topology.links: {len(links):,} links (two simplex links each, when duplex) would take about "
            f"{_size(2 * len(links) * LINK_BYTES)} of memory, over the memory budget ({format_size(memory_budget)}); "
            f"give a smaller network, or {raise_it}",
            "topology.links",
        )


def check_interval_budget(core: Dict[str, Any], interval_ps: int, memory_budget: int) -> Optional[str]:
    """Why reports every ``interval_ps`` (``fatpipe run --interval``) cannot be allowed, or
    None: one line per flow and report (and a sum), at :data:`INTERVAL_LINE_BYTES` each, kept
    for --json or printed, over the memory budget (issue 23: ``--interval 1ps`` printed
    without end, and grew 30 MB/s with --json)."""
    reports = core["duration_ps"] // interval_ps + 1
    lines = reports * (len(core["flows"]) + 1)
    if lines * INTERVAL_LINE_BYTES <= memory_budget:
        return None
    coarsest_fit = max(1, memory_budget // (INTERVAL_LINE_BYTES * (len(core["flows"]) + 1)))
    finest = -(-core["duration_ps"] // coarsest_fit)
    return (
        f"{format_duration(interval_ps)} is not allowed: {reports:,} reports of {len(core['flows']):,} flows would "
        f"take about {_size(lines * INTERVAL_LINE_BYTES)}, over the memory budget ({format_size(memory_budget)}, "
        f"output.memory_budget); report every {format_duration(finest)} or less often"
    )


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
