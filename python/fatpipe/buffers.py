"""A flow limited by its own buffers, said before the run (issue 22: CUBIC over 1 Gb/s x
80 ms with the default 8 MiB send buffer moved 819 Mb/s, capped at 8 MiB per RTT, and
nothing said so).

TCP keeps at most its send buffer of data unacknowledged, and the receiver's window is at
most its receive buffer (65,535 bytes without window scaling): either caps a flow at
buffer / RTT. A flow fills its path only if both hold the path's bandwidth-delay product,
the payload that is in flight when the bottleneck is busy for a whole round trip:

    BDP = bottleneck rate x RTT / 8 x MSS / (MSS + IP/TCP headers + the link's framing)

with the bottleneck the slowest link of the flow's data route (a link split into parallel
paths carries at most min(rate_i / p_i)), and the RTT the propagation delay of the data
route plus the ACKs' route back (both as the core routes them). A flow that needs less --
``bytes`` fewer than the BDP, a paced application's offered load x RTT, an HTTP flow's
largest object -- is measured against that instead. Parallel streams share the path: each
needs its share of the BDP.

Each warning is one line (``fatpipe run`` prints it on stderr before the run, ``fatpipe.run``
issues it as a :class:`BufferWarning`) and an entry of ``summary.json``'s ``warnings`` (and
``Result.warnings``): ``{"flow", "key", "bytes", "needed_bytes", "message"}``.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .units import PS_PER_S, format_duration, format_size

__all__ = ["BufferWarning", "buffer_warnings", "path_bdp", "lines_to_say"]

#: The largest window a receiver can announce without window scaling (RFC 7323).
UNSCALED_WINDOW_BYTES = 65535


class BufferWarning(UserWarning):
    """A flow's send or receive buffer is below its path's bandwidth-delay product."""


#: Warnings said one by one before the rest are counted in one line (all are kept).
SAID_AT_MOST = 5


def lines_to_say(found: List[Dict[str, Any]]) -> List[str]:
    """What to print (or warn) of ``found``: the first :data:`SAID_AT_MOST` messages, then
    one line counting the rest (a run of 10,000 flows should not print 10,000 lines)."""
    lines = [w["message"] for w in found[:SAID_AT_MOST]]
    if len(found) > SAID_AT_MOST:
        lines.append(f"... and {len(found) - SAID_AT_MOST} more buffer warnings like these "
                     "(summary.json warnings, Result.warnings)")
    return lines


def _links_effective(scenario: Mapping[str, Any]) -> Dict[int, Tuple[float, float]]:
    """Per link index: (rate a flow can get through it, its mean delay in ps). A member of a
    split (parallel paths) stands for the whole group: a packet takes member i with
    probability p_i, so the group carries at most min(rate_i / p_i), with the mean delay."""
    links = scenario["links"]
    out = {i: (float(link["rate_bps"]), float(link["delay_ps"])) for i, link in enumerate(links)}
    for split in scenario.get("splits") or []:
        members, probabilities = split["links"], split["probabilities"]
        rate = min(links[m]["rate_bps"] / p for m, p in zip(members, probabilities))
        delay = sum(links[m]["delay_ps"] * p for m, p in zip(members, probabilities)) / sum(probabilities)
        for m in members:
            out[m] = (rate, delay)
    return out


def path_bdp(scenario: Mapping[str, Any], flow: Mapping[str, Any], route: Tuple[List[int], List[int]],
             effective: Optional[Dict[int, Tuple[float, float]]] = None) -> Tuple[float, int, int]:
    """(bottleneck rate in bit/s, RTT in ps, payload BDP in bytes) of ``flow``'s route."""
    effective = effective if effective is not None else _links_effective(scenario)
    data, acks = route
    slowest = min(data, key=lambda i: effective[i][0])
    rate_bps = effective[slowest][0]
    rtt_ps = round(sum(effective[i][1] for i in data) + sum(effective[i][1] for i in acks))
    tcp = flow["tcp"]
    mss = tcp["mss_bytes"]
    wire = mss + 40 + (12 if tcp["timestamps"] else 0) + scenario["links"][slowest]["framing_bytes"]
    bdp_bytes = math.ceil(rate_bps * rtt_ps / PS_PER_S / 8 * mss / wire)
    return rate_bps, rtt_ps, bdp_bytes


def _needed(flow: Mapping[str, Any], bdp_bytes: int, rtt_ps: int) -> int:
    """What the flow's application can keep in flight at most: the BDP unless it asks less."""
    source = flow["source"]
    kind = source["kind"]
    if kind == "bulk" and source.get("bytes") is not None:
        return min(bdp_bytes, int(source["bytes"]))
    if kind == "burst":
        offered = source["burst_bytes"] * PS_PER_S / source["period_ps"]  # bytes per second
        return min(bdp_bytes, math.ceil(offered * rtt_ps / PS_PER_S))
    if kind == "http":
        return min(bdp_bytes, max(source["objects_bytes"]))
    return bdp_bytes


def _size(nbytes: int) -> str:
    """A size as a reader takes it in: "8MiB" where a binary unit is exact, else three
    significant digits ("9.41MB", "256KB")."""
    if any(nbytes >= f and nbytes % f == 0 for f in (2**20, 2**30)):
        return format_size(nbytes)
    for factor, unit in ((10**9, "GB"), (10**6, "MB"), (10**3, "KB")):
        if nbytes >= factor:
            return f"{nbytes / factor:.3g}{unit}"
    return f"{nbytes} bytes"


def _rate(bps: float) -> str:
    for factor, unit in ((10**9, "Gb/s"), (10**6, "Mb/s"), (10**3, "kb/s")):
        if bps >= factor:
            return f"{bps / factor:.3g} {unit}"
    return f"{bps:.3g} b/s"


def _suggest(nbytes: int) -> str:
    """A size a user can paste, at least ``nbytes``: two significant digits, rounded up."""
    for factor, unit in ((10**9, "GB"), (10**6, "MB"), (10**3, "KB")):
        if nbytes >= factor:
            value = nbytes / factor
            step = 10 ** (math.floor(math.log10(value)) - 1)
            return f"{math.ceil(value / step) * step:.{max(0, 1 - math.floor(math.log10(value)))}f}{unit}"
    return f"{nbytes}B"


def buffer_warnings(scenario: Mapping[str, Any], routes: Optional[List[Tuple[List[int], List[int]]]] = None
                    ) -> List[Dict[str, Any]]:
    """The warnings of a normalized scenario (see the module's text). ``routes`` are the
    core's ``flow_routes``; without them the core is asked (no warnings if it cannot say:
    a scenario without links, such as a probe's)."""
    if not scenario.get("links"):
        return []
    if routes is None:
        try:
            from .core import import_core

            routes = [tuple(r) for r in import_core().flow_routes(scenario)]
        except (ImportError, AttributeError, ValueError):
            return []
    effective = _links_effective(scenario)
    groups: Dict[str, List[int]] = {}
    for i, flow in enumerate(scenario["flows"]):
        if flow.get("tcp") is not None:
            groups.setdefault(flow.get("group") or flow["name"], []).append(i)
    # Many flows share a path and settings: each distinct case is worked out once (a run of
    # 100,000 flows asks in about a second); routes are the same for the same two hosts.
    cases: Dict[Tuple[Any, ...], List[Tuple[str, int, int, str]]] = {}
    out = []
    for group, members in groups.items():
        flow = scenario["flows"][members[0]]
        tcp, source = flow["tcp"], flow["source"]
        case = (flow["src"], flow["dst"], len(members), tcp["mss_bytes"], tcp["timestamps"], tcp["snd_buffer_bytes"],
                tcp["rcv_buffer_bytes"], tcp["window_scaling"], source["kind"], source.get("bytes"),
                source.get("burst_bytes"), source.get("period_ps"), max(source.get("objects_bytes") or [0]))
        limits = cases.get(case)
        if limits is None:
            rate_bps, rtt_ps, bdp = path_bdp(scenario, flow, routes[members[0]], effective)
            n = len(members)
            needed = math.ceil(_needed(flow, bdp, rtt_ps) / n)
            window = tcp["rcv_buffer_bytes"] if tcp["window_scaling"] else min(tcp["rcv_buffer_bytes"], UNSCALED_WINDOW_BYTES)
            limits = cases[case] = _limits(tcp, window, needed, bdp, rate_bps, rtt_ps, n)
        if limits:
            who = f'flow "{group}"' if len(members) == 1 else f'each of the {len(members)} streams of "{group}"'
            out += [{"flow": group, "key": f"tcp.{key}", "bytes": have, "needed_bytes": need, "message": f"{who}: {text}"}
                    for key, have, need, text in limits]
    return out


def _limits(tcp: Mapping[str, Any], window: int, needed: int, bdp: int, rate_bps: float, rtt_ps: int,
            n: int) -> List[Tuple[str, int, int, str]]:
    """(key, bytes it allows, bytes needed, the message after the flow's name) for each
    buffer below what the flow needs."""
    path = f"{_rate(rate_bps)} bottleneck x {format_duration(rtt_ps)} RTT"
    share = "" if n == 1 else f" shared by {n} streams"
    out = []
    for key, have in (("snd_buffer", tcp["snd_buffer_bytes"]), ("rcv_buffer", window)):
        if have >= needed:
            continue
        cap_bps = have * 8 * PS_PER_S / rtt_ps
        if key == "rcv_buffer" and not tcp["window_scaling"] and tcp["rcv_buffer_bytes"] > have:
            fix = "set [flows.tcp] window_scaling = true (without it the window is at most 65,535 bytes)"
        else:
            fix = f'set [flows.tcp] {key} = "{_suggest(needed)}" or more'
        out.append((key, have, needed, f"{key} ({_size(have)}) is below the bandwidth-delay product of its path "
                                       f"({_size(bdp)}: {path}{share}), so it cannot exceed {_rate(cap_bps)}; {fix}"))
    return out
