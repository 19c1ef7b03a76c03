"""Applications: HTTP workloads, UDP traffic patterns, and the bulk or paced TCP source,
with their normalizers to the core's ``source`` JSON."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..units import U64_MAX, format_duration, format_size
from .kinds import Choice, Duration, Integer, Rate, Size, SizeList
from .schema import REQUIRED, UNSET, Derived, Field, ScenarioError, Table, _fail, _join

#: IPv4 (20) + UDP (8) header bytes (RFC 791, RFC 768): a datagram's IP packet is its payload
#: plus these.
IPV4_UDP_HEADER_BYTES = 28
#: The largest UDP payload an IPv4 datagram can carry (65535 - 28).
UDP_MAX_PAYLOAD_BYTES = 65535 - IPV4_UDP_HEADER_BYTES


#: Document 000's request (section 3.4): the GET line, User-Agent, its Rate and Period
#: fields, Host and Accept, each line ended by CRLF, and the empty line.
DOCUMENT_000_REQUEST = (
    "GET /size100K.txt HTTP/1.1\r\nUser-Agent: ApacheBench/1.1\r\nRate = 64000\r\n"
    "Period = 10000\r\nHost: 140.173.170.11\r\nAccept: */*\r\n\r\n"
)

_HTTP = Table(
    fields=(
        Field(
            "version",
            Choice(("1.0", "1.1")),
            '"1.0": a new connection (handshake, slow start from the initial window) per '
            'request, opened when the previous response is complete; "1.1": one persistent '
            "connection, the next request sent when the previous response's last byte "
            "arrives (no pipelining), the window carried over",
            "1.1",
            "RFC 9112 section 9.3 (HTTP/1.1 connections persist by default); document 000 "
            "compares both (E0.13, E0.14)",
        ),
        Field(
            "objects",
            SizeList(),
            "sizes of the objects the client fetches, in turn; request i fetches object i "
            "modulo their number",
        ),
        Field(
            "requests",
            Integer(minimum=1, maximum=U64_MAX, example=100),
            "requests the client makes, one after another",
            Derived("one per object"),
            "fatpipe default; document 000 made 100 requests per file size (E0.13)",
        ),
        Field(
            "request_size",
            Size(minimum=1, example="124B"),
            "bytes of one request (GET line and headers), sent as one segment (at most the "
            "MSS); on a new connection it carries the ACK of the SYN-ACK",
            f"{len(DOCUMENT_000_REQUEST)}B",
            "document 000 section 3.4: its modified Zeus client's GET with Rate and Period "
            "fields, lines ended by CRLF",
        ),
        Field(
            "burst_size",
            Size(minimum=1, example="64KB"),
            "server pacing (document 000's Apache explicit_rate_size): the server writes each "
            "response in bursts of this many bytes, the first when the request arrives, then "
            "one every burst_period (a burst not yet written when the next is due carries "
            "over; the summary counts these failed burst cycles)",
            UNSET,
            "unset: the server writes each response at once",
        ),
        Field(
            "burst_period",
            Duration(example="10ms"),
            "time between two bursts of a response (with burst_size)",
            UNSET,
            "required with burst_size; document 000 used 10 ms and 5 ms",
        ),
    ),
    doc="An HTTP workload (document 000's web server and client): the flow's sender host is "
    "the server, its receiver host the client, which fetches the objects one request at a "
    "time. result.requests (requests.parquet) has one row per completed request.",
)


# ---- UDP sources -------------------------------------------------------------------

def _udp_payload_field() -> Field:
    return Field(
        "payload_size",
        Size(minimum=1, maximum=UDP_MAX_PAYLOAD_BYTES, example=1472),
        "UDP payload bytes per datagram; with the 28 bytes of IP and UDP headers it must fit "
        "the MTU (datagrams are not fragmented)",
        Derived("mtu - 28, 1472 for Ethernet"),
        "the largest datagram that is not fragmented (iperf's default for IPv4 is 1470)",
    )


def _udp_rate_field(meaning: str, default: Any = REQUIRED, source: str = "") -> Field:
    return Field(
        "rate",
        Rate(),
        f"{meaning}: UDP payload bits per second, as iperf -u -b counts them (the wire "
        "carries 28 header bytes and the link framing more per datagram); the sending host "
        "never exceeds its line rate",
        default,
        source,
    )


_UDP_CBR = Table(
    fields=(_udp_rate_field("constant sending rate"), _udp_payload_field()),
    doc="Constant bit rate (iperf -u -b rate): one datagram every payload_size x 8 / rate.",
)

_UDP_BURST = Table(
    fields=(
        Field(
            "burst_size",
            Size(minimum=1, example="32KB"),
            "bytes of one burst (NetSpec's blocksize); cut into datagrams of payload_size, the "
            "last one shorter",
            REQUIRED,
        ),
        Field(
            "repeats",
            Integer(minimum=1, example=50),
            "bursts sent back to back in each period (NetSpec's repeats): a period sends "
            "burst_size x repeats bytes",
            1,
            "NetSpec: one block per period",
        ),
        Field(
            "burst_period",
            Duration(positive=True, example="3s"),
            "time between the starts of two periods; required unless count = 1",
            UNSET,
            "document 000's periodic congestion used 3 s",
        ),
        Field(
            "count",
            Integer(minimum=1, maximum=U64_MAX, example=1),
            "number of periods; 1 sends a single burst (document 000's minimal congestion event)",
            UNSET,
            "unset: until stop or the end of the run",
        ),
        _udp_rate_field(
            "rate of the datagrams within a period",
            UNSET,
            "unset: the sending host's line rate (a blocking socket write returns as the "
            "interface drains, so the burst leaves back to back)",
        ),
        _udp_payload_field(),
    ),
    doc="Bursts (NetSpec's UDP burst mode, document 000): every burst_period, repeats bursts "
    "of burst_size bytes back to back, for count periods.",
)

_UDP_ONOFF = Table(
    fields=(
        _udp_rate_field("sending rate while on"),
        Field("on_time", Duration(positive=True, example="100ms"), "time sending at rate in each period"),
        Field("off_time", Duration(positive=True, example="900ms"), "silent time in each period"),
        _udp_payload_field(),
    ),
    doc="On-off: constant bit rate for on_time, silent for off_time, repeated (period = "
    "on_time + off_time; mean rate = rate x on_time / period).",
)

#: UDP traffic patterns: [flows.udp] mode = ... -> its table.
UDP_MODES: Dict[str, Table] = {"cbr": _UDP_CBR, "burst": _UDP_BURST, "onoff": _UDP_ONOFF}
#: The core's source kind of each mode.
_UDP_SOURCE_KINDS = {"cbr": "udp_cbr", "burst": "udp_burst", "onoff": "udp_onoff"}


def _normalize_http(flow: Dict[str, Any], path: str, start_ps: int, stop_ps: Optional[int], mss: int) -> Dict[str, Any]:
    """An HTTP client and server ([flows.http])."""
    http = flow["http"]
    http_path = _join(path, "http")
    for key, shown, why in (
        ("bytes", format_size, "the objects' sizes say what is sent"),
        ("burst_size", format_size, "pace the server's responses with [flows.http] burst_size"),
        ("burst_period", format_duration, "pace the server's responses with [flows.http] burst_period"),
    ):
        if flow[key] is not None:
            sub = _join(path, key)
            raise ScenarioError(f"{sub}: {shown(flow[key])} is not allowed: not with [flows.http]: {why}", sub)
    if flow["burst_carry_over"]:
        raise _fail(
            _join(path, "burst_carry_over"), True,
            "not with [flows.http]: a paced server always writes the rest of a burst",
        )
    if flow["streams"] > 1:
        raise _fail(_join(path, "streams"), flow["streams"], "not with [flows.http]: one client, one connection at a time")
    if http["request_size"] > mss:
        raise ScenarioError(
            f"{http_path}.request_size: {format_size(http['request_size'])} is not allowed: a request is one "
            f"segment, at most the MSS ({mss} bytes)",
            f"{http_path}.request_size",
        )
    if (http["burst_size"] is None) != (http["burst_period"] is None):
        present, missing = ("burst_size", "burst_period") if http["burst_size"] is not None else ("burst_period", "burst_size")
        raise ScenarioError(f"{http_path}.{missing}: missing; required with {present}", f"{http_path}.{missing}")
    pacing = None
    if http["burst_size"] is not None:
        pacing = {"burst_bytes": http["burst_size"], "period_ps": http["burst_period"]}
    return {
        "kind": "http",
        "start_ps": start_ps,
        "stop_ps": stop_ps,
        "persistent": http["version"] == "1.1",
        "objects_bytes": http["objects"],
        "requests": http["requests"] if http["requests"] is not None else len(http["objects"]),
        "request_bytes": http["request_size"],
        "server_pacing": pacing,
    }


def _normalize_source(flow: Dict[str, Any], path: str, start_ps: int, stop_ps: Optional[int]) -> Dict[str, Any]:
    """The flow's application: bulk, or paced bursts when burst_size is given."""
    transfers, gap = flow["transfers"], flow["transfer_gap"]
    if gap is not None and transfers is None:
        raise ScenarioError(
            f"{path}.transfer_gap: set without transfers; it is the time between transfers (set transfers = 2 or more)",
            f"{path}.transfer_gap",
        )
    if flow["burst_size"] is None:
        if flow["burst_period"] is not None:
            raise ScenarioError(f"{path}.burst_period: set without burst_size; give both or neither", f"{path}.burst_period")
        if transfers is not None and flow["bytes"] is None and stop_ps is None:
            raise _fail(
                f"{path}.transfers", transfers,
                "each transfer must end: set bytes (each transfer writes that many, iperf -n) or stop "
                "(each writes for stop - start, iperf -t)",
            )
        return {
            "kind": "bulk", "start_ps": start_ps, "stop_ps": stop_ps, "bytes": flow["bytes"],
            "transfers": transfers, "transfer_gap_ps": gap or 0,
        }
    if transfers is not None:
        raise _fail(
            f"{path}.transfers", transfers,
            "repeated transfers are bulk transfers; not with burst_size (a paced application writes until stop)",
        )
    if flow["burst_period"] is None:
        raise ScenarioError(f"{path}.burst_period: missing; required with burst_size", f"{path}.burst_period")
    if flow["bytes"] is not None:
        raise ScenarioError(
            f"{path}.bytes: not allowed with burst_size: a paced application writes bursts until stop",
            f"{path}.bytes",
        )
    return {
        "kind": "burst",
        "start_ps": start_ps,
        "stop_ps": stop_ps,
        "burst_bytes": flow["burst_size"],
        "period_ps": flow["burst_period"],
        "carry_over": flow["burst_carry_over"],
    }
