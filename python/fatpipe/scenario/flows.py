"""``[[flows]]``: the flow table and its normalization (transport, endpoints, parallel
streams, unique names)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

from ..units import U64_MAX, format_duration, format_size
from .ecn_algorithms import check_ecn_needs
from .congestion import CC_ALGORITHMS, PRESETS, CongestionControlChoice, stack_recovery
from .kinds import Boolean, Choice, Duration, Integer, Name, Size
from .host import _HOST, normalize_host
from .network import Network
from .profiles import default_cc_by_profile, flow_profile, metrics_cache, resolve_cc, resolve_tcp_members
from .schema import UNSET, Derived, Field, ScenarioError, Table, Tagged, _fail, _join, _num
from .sources import (
    _HTTP, _UDP_SOURCE_KINDS, IPV4_UDP_HEADER_BYTES, UDP_MODES, _normalize_http,
    _normalize_source,
)
from .tcp import (
    InitialWindow, IPV4_TCP_HEADER_BYTES, MAX_WINDOW_BYTES, rfc3390_initial_window, _TCP, TIMESTAMPS_OPTION_BYTES,
    UNLESS_PROFILE_SETS,
)

#: [[flows]] keys that belong to TCP flows only.
TCP_ONLY_FLOW_KEYS = (
    "cc", "tcp", "host", "bytes", "burst_size", "burst_period", "burst_carry_over", "http", "streams", "transfers",
    "transfer_gap",
)


@dataclass(frozen=True)
class FlowTable(Table):
    """``[[flows]]``: keys of one transport may not appear in a flow of the other. Checked
    on what the user wrote, before defaults fill in ``cc`` and ``tcp``."""

    def parse(self, value: Any, path: str, extra_keys: Sequence[str] = ()) -> Dict[str, Any]:
        parsed = super().parse(value, path, extra_keys)
        if parsed["transport"] == "udp":
            for key in TCP_ONLY_FLOW_KEYS:
                if key in value:
                    raise ScenarioError(
                        f'{_join(path, key)}: not allowed with transport = "udp": {key} is for '
                        "TCP flows; a UDP flow takes its pattern from [flows.udp]",
                        _join(path, key),
                    )
            if parsed["udp"] is None:
                sub = _join(path, "udp")
                raise ScenarioError(
                    f'{sub}: missing; required with transport = "udp" (a [flows.udp] table '
                    f"with mode = {', '.join(json.dumps(m) for m in UDP_MODES)})",
                    sub,
                )
        elif parsed["udp"] is not None:
            sub = _join(path, "udp")
            raise ScenarioError(f'{sub}: not allowed: [flows.udp] needs transport = "udp"', sub)
        return parsed


_FLOW = FlowTable(
    fields=(
        Field(
            "name",
            Name(),
            "label in results and plots; unique among the flows",
            Derived('"flow0", "flow1", ... by position'),
            "fatpipe default",
        ),
        Field(
            "cc",
            CongestionControlChoice(
                tag="algorithm",
                variants={name: alg.table for name, alg in CC_ALGORITHMS.items()},
                default_tag="reno",
                shorthand=True,
                tag_doc="congestion control algorithm",
                type_doc="string or table",
            ),
            'congestion control: a preset name (cc = "cubic"; see the presets below and '
            "`fatpipe algorithms`) or a [flows.cc] table with algorithm = ... and the "
            "algorithm's parameters",
            default_cc_by_profile(),
            "the profile's (`fatpipe algorithms` gives each with its source)",
        ),
        Field(
            "direction",
            Choice(("forward", "reverse")),
            '"forward": the pair\'s sender host sends to its receiver host; "reverse": the '
            "receiver host sends to the sender host (reverse traffic, as in document 002); not "
            'with shape = "custom"',
            Derived('"forward"'),
            "fatpipe default: data from sender to receiver",
        ),
        Field(
            "pair",
            Integer(minimum=0, maximum=1000, example=1),
            "which host pair of the shape the flow runs between (dumbbell: 0 .. pairs - 1; "
            "two_to_one: 0 or 1, the sender; parking_lot: 0 end to end, i crossing hop i); "
            'not with shape = "custom"',
            Derived("0"),
            "fatpipe default: the first pair",
        ),
        Field(
            "src",
            Name(),
            'with shape = "custom" (and only then; required): the name of the sending host',
            UNSET,
            "unset: other shapes use pair and direction",
        ),
        Field(
            "dst",
            Name(),
            'with shape = "custom" (and only then; required): the name of the receiving host',
            UNSET,
            "unset: other shapes use pair and direction",
        ),
        Field(
            "start",
            Duration(positive=False, example="1s"),
            "when the application starts writing (before the end of the run)",
            "0s",
            "fatpipe default: flows start with the run",
        ),
        Field(
            "start_jitter",
            Duration(positive=False, example="100ms"),
            "the application starts a uniform random time on [0, start_jitter] after start, "
            "drawn from the scenario seed and the flow's name, so that replications with "
            "different seeds do not start in lockstep (start + start_jitter must be before "
            "stop and the end of the run); the summary's start_ps is the drawn start",
            "0s",
            "off: the flow starts exactly at start",
        ),
        Field(
            "stop",
            Duration(positive=True, example="30s"),
            "when the application stops writing; what it wrote is still delivered",
            UNSET,
            "unset: writes until the end of the run",
        ),
        Field(
            "bytes",
            Size(minimum=1, example="100MB"),
            "the application writes this many bytes, then stops",
            UNSET,
            "unset: no limit",
        ),
        Field(
            "transfers",
            Integer(minimum=1, maximum=10_000, example=2),
            "run the transfer this many times, one after another, each on a new connection "
            "between the same hosts (a user rerunning iperf): a transfer ends when its application "
            "has written bytes (iperf -n), or written for stop - start (iperf -t), and every byte "
            "is acknowledged; its connection then closes, leaving the sender's metrics in its "
            "host's per-destination cache (tcp.no_metrics_save), and the next transfer starts "
            "transfer_gap later from that cache. The summary gives each transfer (flows[].transfers). "
            "Bulk transfers only",
            UNSET,
            "unset: one connection, held open to the end of the run (it never closes, so it saves "
            "no metrics)",
        ),
        Field(
            "transfer_gap",
            Duration(positive=False, example="10s"),
            "with transfers: the time from one transfer's close to the next one's start",
            UNSET,
            "0s with transfers: the next starts as the previous closes",
        ),
        Field(
            "burst_size",
            Size(minimum=1, example="64KB"),
            "paced application (NetSpec burst mode, document 000): every burst_period it writes "
            "a burst of this many bytes; offered load = burst_size x 8 / burst_period. The "
            "summary counts failed burst cycles (a period ending before its burst was written)",
            UNSET,
            "unset: bulk transfer (the application writes as fast as the socket takes data)",
        ),
        Field(
            "burst_period",
            Duration(example="10ms"),
            "time between the starts of two bursts (with burst_size)",
            UNSET,
            "required with burst_size; document 000 used 10 ms and 5 ms",
        ),
        Field(
            "burst_carry_over",
            Boolean(),
            "keep writing a burst's unwritten rest after the next period starts (NetSpec's "
            "queued-burst mode); false drops it",
            False,
            "NetSpec burst mode",
        ),
        Field(
            "streams",
            Integer(minimum=1, maximum=1000, example=4),
            "parallel streams (iperf -P): the flow becomes this many TCP connections between "
            'the same hosts, named "<name>.1" ... "<name>.<streams>", each with the same cc and '
            "tcp settings and an equal share of bytes; results keep a row per stream and "
            "result.groups sums them under the flow's name",
            1,
            "iperf's default; document 001 used 2 to 16 (E1.6)",
        ),
        Field(
            "http",
            _HTTP,
            "an HTTP workload instead of a bulk transfer ([flows.http])",
            UNSET,
            "unset: a bulk (or paced) transfer",
        ),
        Field("tcp", _TCP, "TCP options ([flows.tcp])", {}, "each key's own default"),
        Field("host", _HOST, "the hosts' own elements: Linux pacing, TSO ([flows.host])", UNSET, "unset: none of them"),
        Field(
            "transport",
            Choice(("tcp", "udp")),
            '"tcp": a TCP connection (cc, tcp and the application keys above); "udp": '
            "datagrams as [flows.udp] says, with no congestion control and no reaction to loss",
            "tcp",
            "fatpipe default",
        ),
        Field(
            "udp",
            Tagged(
                tag="mode",
                variants=UDP_MODES,
                tag_doc="UDP traffic pattern",
            ),
            'with transport = "udp" (and only then; required): the traffic pattern, a '
            "[flows.udp] table with mode = ... and its keys; the flow's start and stop apply",
            UNSET,
            "unset: a TCP flow",
        ),
    ),
    doc="A flow. TCP by default: a bulk transfer, the application writing as fast as the send "
    "buffer takes data (iperf, NetSpec full blast), or paced with burst_size. With transport "
    '= "udp": datagrams as [flows.udp] says (NetSpec UDP cross traffic, iperf -u).',
)

#: The flow's ``cc`` field, to parse a profile's default congestion control.
_FLOW_CC = next(f for f in _FLOW.fields if f.key == "cc")


def _check_start_stop(flow: Dict[str, Any], path: str, duration_ps: int) -> None:
    start_ps, stop_ps, jitter_ps = flow["start"], flow["stop"], flow["start_jitter"]
    if start_ps >= duration_ps:
        raise ScenarioError(
            f"{path}.start: {format_duration(start_ps)} is not allowed: must be before the end of "
            f"the run (duration {format_duration(duration_ps)})",
            f"{path}.start",
        )
    if stop_ps is not None and stop_ps <= start_ps:
        raise ScenarioError(
            f"{path}.stop: {format_duration(stop_ps)} is not allowed: must be after start "
            f"({format_duration(start_ps)})",
            f"{path}.stop",
        )
    # The latest the flow may start must still leave it time to run.
    latest_ps = start_ps + jitter_ps
    end_ps, end_name = (duration_ps, "the end of the run") if stop_ps is None else (stop_ps, "stop")
    if jitter_ps and latest_ps >= end_ps:
        raise ScenarioError(
            f"{path}.start_jitter: {format_duration(jitter_ps)} is not allowed: start + "
            f"start_jitter ({format_duration(latest_ps)}) must be before {end_name} "
            f"({format_duration(end_ps)})",
            f"{path}.start_jitter",
        )


def _normalize_udp_flow(
    flow: Dict[str, Any], path: str, index: int, network: Network, duration_ps: int
) -> Dict[str, Any]:
    """A UDP flow: source kind udp_<mode>, no tcp or cc (docs/core-interface.md)."""
    _check_start_stop(flow, path, duration_ps)
    udp, udp_path = flow["udp"], _join(path, "udp")
    mode = udp["mode"]
    max_payload = network.path_mtu_bytes - IPV4_UDP_HEADER_BYTES
    payload = udp["payload_size"] if udp["payload_size"] is not None else max_payload
    if max_payload < 1 or payload > max_payload:
        raise ScenarioError(
            f"{udp_path}.payload_size: {payload} bytes is larger than the link MTU "
            f"{network.path_mtu_bytes} minus {IPV4_UDP_HEADER_BYTES} bytes of IP/UDP headers "
            f"(max {max_payload})",
            f"{udp_path}.payload_size",
        )
    source: Dict[str, Any] = {
        "kind": _UDP_SOURCE_KINDS[mode],
        "start_ps": flow["start"],
        "stop_ps": flow["stop"],
    }
    if mode == "cbr":
        source.update(rate_bps=udp["rate"])
    elif mode == "onoff":
        source.update(rate_bps=udp["rate"], on_ps=udp["on_time"], off_ps=udp["off_time"])
    else:
        if udp["burst_period"] is None and udp["count"] != 1:
            sub = _join(udp_path, "burst_period")
            raise ScenarioError(f"{sub}: missing; required unless count = 1", sub)
        if udp["burst_size"] * udp["repeats"] > U64_MAX:
            raise _fail(
                _join(udp_path, "repeats"), udp["repeats"],
                f"burst_size x repeats must be at most {U64_MAX} bytes",
            )
        source.update(
            burst_bytes=udp["burst_size"],
            repeats=udp["repeats"],
            period_ps=udp["burst_period"],
            count=udp["count"],
            rate_bps=udp["rate"],
        )
    source["payload_bytes"] = payload
    src, dst = _flow_endpoints(flow, path, network)
    return {
        "name": flow["name"] if flow["name"] is not None else f"flow{index}",
        "src": src,
        "dst": dst,
        "source": source,
        "start_jitter_ps": flow["start_jitter"],
    }


def _normalize_flow(
    flow: Dict[str, Any], path: str, index: int, network: Network, duration_ps: int
) -> Dict[str, Any]:
    if flow["transport"] == "udp":
        return _normalize_udp_flow(flow, path, index, network, duration_ps)
    tcp = flow["tcp"]
    tcp_path = _join(path, "tcp")
    _check_start_stop(flow, path, duration_ps)
    start_ps, stop_ps = flow["start"], flow["stop"]
    src, dst = _flow_endpoints(flow, path, network)
    cc = flow["cc"]
    profile = flow_profile(tcp)
    if cc is None:
        # No congestion control named: the profile's.
        cc = _FLOW_CC.kind.parse(profile.default_cc.value, _join(path, "cc"))
    preset = PRESETS[cc["preset"]]
    recovery = stack_recovery(profile.stack, profile.name, cc, tcp["recovery"], path, tcp_path,
                              profile_given=tcp["profile"] is not None)
    tcp = resolve_tcp_members(profile, tcp, tcp_path, parse=lambda key, value: _TCP_KINDS[key].parse(value, _join(tcp_path, key)))
    for key, value in UNLESS_PROFILE_SETS.items():
        if tcp[key] is None:
            tcp[key] = value
    header_bytes = IPV4_TCP_HEADER_BYTES + (TIMESTAMPS_OPTION_BYTES if tcp["timestamps"] else 0)
    max_mss = network.path_mtu_bytes - header_bytes
    mss = tcp["mss"] if tcp["mss"] is not None else max_mss
    if max_mss < 1 or mss > max_mss:
        raise ScenarioError(
            f"{tcp_path}.mss: {mss} bytes is larger than the link MTU {network.path_mtu_bytes} "
            f"minus {header_bytes} bytes of IP/TCP headers (max {max_mss})",
            f"{tcp_path}.mss",
        )
    for key in ("rcv_buffer", "snd_buffer"):
        if tcp[key] < mss:
            raise ScenarioError(
                f"{tcp_path}.{key}: {format_size(tcp[key])} is not allowed: must hold at least one "
                f"segment (the MSS, {mss} bytes)",
                f"{tcp_path}.{key}",
            )
    if tcp["min_rto"] > tcp["max_rto"]:
        raise ScenarioError(
            f"{tcp_path}.min_rto: {format_duration(tcp['min_rto'])} is not allowed: must be at most "
            f"max_rto ({format_duration(tcp['max_rto'])})",
            f"{tcp_path}.min_rto",
        )
    cc = resolve_cc(profile, cc)
    algorithm = CC_ALGORITHMS[cc["algorithm"]]
    check_ecn_needs(cc["algorithm"], tcp, profile.stack, path, tcp_path)
    if cc.get("cwr_halves") and profile.stack == "rfc":
        raise ScenarioError(
            f'{path}.cc.cwr_halves: true is not allowed with profile = "{profile.name}": the RFC stack cuts '
            'cwnd to ssthresh on entering CWR, before the algorithm could halve it; set profile = "linux-2.4"',
            f"{path}.cc.cwr_halves",
        )
    if cc["algorithm"] == "lp" and not tcp["timestamps"]:
        raise ScenarioError(
            f'{tcp_path}.timestamps: false is not allowed with cc = "lp": TCP-LP measures one-way delay '
            "from the timestamp option (RFC 7323)",
            f"{tcp_path}.timestamps",
        )
    if cc["algorithm"] == "fast" and cc["beta"] < cc["alpha"]:
        raise ScenarioError(
            f"{path}.cc.beta: {_num(cc['beta'])} is not allowed: must be at least alpha ({_num(cc['alpha'])})",
            f"{path}.cc.beta",
        )
    if cc["algorithm"] == "htcp" and cc["beta_min"] > cc["beta_max"]:
        raise ScenarioError(
            f"{path}.cc.beta_min: {_num(cc['beta_min'])} is not allowed: must be at most beta_max ({_num(cc['beta_max'])})",
            f"{path}.cc.beta_min",
        )
    max_ssthresh = tcp["max_ssthresh"] if tcp["max_ssthresh"] is not None else preset.tcp.get("max_ssthresh")
    initial_window = tcp["initial_window"]
    if initial_window == InitialWindow.RFC3390:
        initial_window = rfc3390_initial_window(mss)
    elif initial_window * mss > MAX_WINDOW_BYTES:
        raise _fail(
            f"{tcp_path}.initial_window", initial_window,
            f"{initial_window:,} segments of {mss} bytes exceed the largest window a receiver can advertise "
            f"(RFC 7323: 65535 x 2^14 bytes, {MAX_WINDOW_BYTES // mss:,} segments); RFC 6928 suggests 10",
        )
    if flow["http"] is not None:
        for key in ("transfers", "transfer_gap"):
            if flow[key] is not None:
                raise _fail(
                    _join(path, key), flow[key],
                    "transfers are bulk transfers, not with [flows.http]: HTTP opens its connections itself "
                    "(http.version)",
                )
        source = _normalize_http(flow, path, start_ps, stop_ps, mss)
    else:
        source = _normalize_source(flow, path, start_ps, stop_ps)
    handshake = tcp["handshake"] if tcp["handshake"] is not None else flow["http"] is not None
    if not handshake and source["kind"] == "http" and not source["persistent"]:
        raise _fail(
            f"{tcp_path}.handshake", False,
            'HTTP/1.0 opens a connection per request with a handshake (only version = "1.1" may start established)',
        )
    host = normalize_host(flow["host"], tcp["pacing_gain"], _join(path, "host"))
    normalized = {
        "name": flow["name"] if flow["name"] is not None else f"flow{index}",
        "src": src,
        "dst": dst,
        "group": None,
        "source": source,
        "start_jitter_ps": flow["start_jitter"],
        "tcp": {
            "mss_bytes": mss,
            "initial_window_segments": initial_window,
            "rcv_buffer_bytes": tcp["rcv_buffer"],
            "snd_buffer_bytes": tcp["snd_buffer"],
            "window_scaling": tcp["window_scaling"],
            "timestamps": tcp["timestamps"],
            "delayed_ack": tcp["delayed_ack"],
            "delayed_ack_timeout_ps": tcp["delayed_ack_timeout"],
            "ack_every_segments": tcp["ack_every"],
            "dupack_threshold": tcp["dupack_threshold"],
            "newreno_impatient": tcp["newreno_impatient"],
            "ecn": tcp["ecn"],
            "accecn": tcp["accecn"],
            "recovery": recovery,
            "fack": tcp["fack"],
            "dcr_div": tcp["dcr_div"],
            "max_ssthresh_segments": max_ssthresh or 0,
            "initial_ssthresh_segments": tcp["initial_ssthresh"],
            "receiver_drain_rate_bps": tcp["receiver_drain_rate"],
            "pacing_gain": tcp["pacing_gain"],
            "min_rto_ps": tcp["min_rto"],
            "max_rto_ps": tcp["max_rto"],
            "initial_rto_ps": tcp["initial_rto"],
            "handshake": handshake,
            "slow_start_after_idle": tcp["slow_start_after_idle"],
            "random_send_delay_ps": tcp["random_send_delay"],
            "stack": profile.stack,
            "limited_transmit": tcp["limited_transmit"],
            "ssthresh_every_timeout": tcp["ssthresh_every_timeout"],
            "bsd_window": tcp["bsd_window"],
            "reno_recover_guard": tcp["reno_recover_guard"],
            "sack_variant": tcp["sack_variant"],
            "rto_estimator": tcp["rto_estimator"],
            "dsack": tcp["dsack"],
            "rack": tcp["rack"],
            "tlp": tcp["tlp"],
            "frto": tcp["frto"],
            "undo": tcp["undo"],
            "window_reduction": tcp["window_reduction"],
            "adaptive_reordering": tcp["adaptive_reordering"],
            "max_reordering_segments": tcp["max_reordering"],
            "slow_timer_ps": tcp["slow_timer"],
            "fast_timer_ps": tcp["fast_timer"],
            "max_send_rate_bps": tcp["max_send_rate"],
            "metrics": metrics_cache(profile, tcp),
        },
        "cc": algorithm.normalize(
            {k: v for k, v in cc.items() if k not in ("algorithm", "preset", "given", "table")}, _join(path, "cc")
        ),
    }
    if host is not None:
        normalized["tcp"]["host"] = host
    return normalized


#: The kind of each [flows.tcp] key (a profile's values are read as the flow's would be).
_TCP_KINDS = {f.key: f.kind for f in _TCP.fields}


def _flow_endpoints(flow: Dict[str, Any], path: str, network: Network) -> Tuple[int, int]:
    """(src, dst) node indices of a flow: by pair and direction, or by host names (custom)."""
    shape = network.shape
    if network.hosts is not None:
        for key in ("pair", "direction"):
            if flow[key] is not None:
                raise _fail(
                    _join(path, key), flow[key],
                    f'with shape = "{shape}" a flow names its hosts with src and dst instead',
                )
        known = ", ".join(json.dumps(h) for h in network.hosts)
        for key in ("src", "dst"):
            if flow[key] is None:
                sub = _join(path, key)
                raise ScenarioError(
                    f'{sub}: missing; required with shape = "{shape}" (a host: {known})', sub
                )
            if flow[key] not in network.hosts:
                raise _fail(_join(path, key), flow[key], f"expected a host of topology.nodes: {known}")
        if flow["src"] == flow["dst"]:
            raise _fail(_join(path, "dst"), flow["dst"], "must differ from src")
        # Whether packets find a way (both ways for TCP) is the core's routing's to say:
        # document.py asks it once the whole network is known.
        return network.hosts[flow["src"]], network.hosts[flow["dst"]]
    for key in ("src", "dst"):
        if flow[key] is not None:
            raise _fail(
                _join(path, key), flow[key],
                f'src and dst name hosts only with shape = "custom"; with shape = "{shape}" a '
                "flow chooses pair and direction",
            )
    pairs = network.pairs if network.pairs is not None else [network.endpoints]
    pair = flow["pair"] if flow["pair"] is not None else 0
    if pair >= len(pairs):
        allowed = f'shape = "{shape}" has {len(pairs)} pair(s), 0 to {len(pairs) - 1}'
        if network.pair_doc:
            allowed += f" ({network.pair_doc})"
        raise _fail(_join(path, "pair"), pair, allowed)
    direction = flow["direction"] if flow["direction"] is not None else "forward"
    if direction not in pairs[pair]:
        raise _fail(_join(path, "direction"), direction, f'shape = "{shape}" has no such direction')
    return pairs[pair][direction]


def _expand_streams(parsed: List[Dict[str, Any]], flows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Each flow with streams = N > 1 becomes N flows "<name>.1" ... "<name>.N" in group
    "<name>", with bytes shared out (the first bytes % N streams carry one byte more)."""
    expanded: List[Dict[str, Any]] = []
    owner: Dict[str, int] = {f["name"]: i for i, f in enumerate(flows)}
    for i, (user, flow) in enumerate(zip(parsed, flows)):
        n = user["streams"]
        if n == 1:
            expanded.append(flow)
            continue
        source = flow["source"]
        if source["kind"] != "bulk":
            raise _fail(
                f"flows[{i}].streams", n,
                "parallel streams are bulk transfers; not with burst_size (pace each flow separately)",
            )
        if source["transfers"] is not None:
            raise _fail(
                f"flows[{i}].transfers", source["transfers"],
                "repeated transfers are one connection each, not with streams > 1 (give each stream a "
                "flow of its own)",
            )
        total = source["bytes"]
        if total is not None and total < n:
            raise _fail(f"flows[{i}].bytes", total, f"must give each of the {n} streams at least one byte")
        for k in range(n):
            name = f"{flow['name']}.{k + 1}"
            if name in owner:
                raise _fail(
                    f"flows[{i}].streams", n,
                    f"stream name {json.dumps(name)} is already the name of flows[{owner[name]}]",
                )
            stream = json.loads(json.dumps(flow))
            stream["name"] = name
            stream["group"] = flow["name"]
            if total is not None:
                stream["source"]["bytes"] = total // n + (1 if k < total % n else 0)
            expanded.append(stream)
    return expanded


def _check_unique_names(parsed: List[Dict[str, Any]], flows: List[Dict[str, Any]]) -> None:
    seen: Dict[str, int] = {}
    for i, flow in enumerate(flows):
        name = flow["name"]
        if name in seen:
            j = seen[name]
            if parsed[i]["name"] is None:
                raise ScenarioError(
                    f'flows[{i}].name: the default name "{name}" is already the name of flows[{j}]; '
                    "give this flow a name",
                    f"flows[{i}].name",
                )
            raise _fail(
                f"flows[{i}].name",
                name,
                f"flow names must be unique, and flows[{j}] is named {json.dumps(name)} too",
            )
        seen[name] = i


# ======================================================================================
# Reference documentation, generated from the schema
# ======================================================================================
