"""Topology shapes: dumbbell, two-to-one (document 001), parking lot and custom networks;
each a table of parameters and the function that builds its :class:`~.network.Network`."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

from ..units import U64_MAX, format_duration
from .impairments import _IMPAIRMENTS_FIELD
from .kinds import Boolean, Choice, Duration, DurationList, Integer, Name, Rate
from .network import (
    _COMMON_LINK_FIELDS, _TXQUEUELEN_UNSET, Network, Shape, _host_interfaces, _link, _pair_doc,
    _pairs_of, _txqueuelen_field, _txqueuelen_queue, _TX_RING_FIELDS,
)
from .queues import _ACCESS_QUEUE_DEFAULT, _BOTTLENECK_QUEUE_DEFAULT, _normalize_queue, _queue_kind
from .schema import (
    UNSET, Derived, Field, Kind, ScenarioError, Table, TableArray, _fail, _fail_number, _join,
)


def shape_table(*fields: Field, doc: str) -> Table:
    """A shape's table: its own fields, then the keys every shape has (impairments)."""
    return Table(fields=(*fields, _IMPAIRMENTS_FIELD), doc=doc)


def _two_queues(
    topo: Dict[str, Any], path: str, bottleneck_bps: int, access_bps: int, rtt_ps: int,
    access_default: Tuple[str, Any, str],
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(bottleneck queue, access queue) of a shape with [topology.queue] and
    [topology.access_queue]; limit_bdp multiplies each link's rate by ``rtt_ps``."""
    bottleneck = _normalize_queue(
        topo["queue"], _join(path, "queue"), rate_bps=bottleneck_bps, rtt_ps=rtt_ps,
        mtu_bytes=topo["mtu"], default_key=_BOTTLENECK_QUEUE_DEFAULT[0],
        default_value=_BOTTLENECK_QUEUE_DEFAULT[1],
    )
    access = _normalize_queue(
        topo["access_queue"], _join(path, "access_queue"), rate_bps=access_bps, rtt_ps=rtt_ps,
        mtu_bytes=topo["mtu"], default_key=access_default[0], default_value=access_default[1],
    )
    return bottleneck, access


_BOTTLENECK_QUEUE_FIELD = Field(
    "queue",
    _queue_kind(*_BOTTLENECK_QUEUE_DEFAULT),
    "queue of the bottleneck link(s), the same in each direction; limit_bdp uses the "
    "shape's rtt (see the shape's description)",
    {},
    "each key's own default",
)


def _access_queue_field(default: Tuple[str, Any, str]) -> Field:
    return Field(
        "access_queue",
        _queue_kind(*default),
        "queue of each access link: the routers' queues toward the hosts, and the hosts' "
        "interface queues unless txqueuelen is set",
        {},
        "each key's own default",
    )


_DUMBBELL = shape_table(
        Field("bottleneck_rate", Rate(), "rate of the bottleneck link r1 -> r2 (and r2 -> r1)"),
        Field(
            "rtt",
            Duration(positive=True),
            "round-trip propagation delay of pair 0's path sender -> receiver -> sender, "
            "without queueing or transmission time; it sets the bottleneck's one-way delay "
            "(rtt/2 - pair 0's sender access delay - access_delay) and is the rtt of limit_bdp",
        ),
        Field(
            "access_rate",
            Rate(),
            "rate of the access links (hosts to routers)",
            Derived("10 x bottleneck_rate"),
            "access links faster than the bottleneck, so the queue forms at the bottleneck, "
            "as in document 003's dumbbell",
        ),
        Field(
            "access_delay",
            Duration(positive=False, example="1ms"),
            "one-way propagation delay of each access link (of the senders' too unless "
            "access_delays is set); the bottleneck's one-way delay is rtt/2 - 2 x access_delay "
            "(rtt/2 - access_delays[0] - access_delay with access_delays)",
            "0ms",
            "all of the path's delay on the bottleneck",
        ),
        Field(
            "pairs",
            Integer(minimum=1, maximum=1000, example=2),
            "number of sender/receiver host pairs, each with its own access links; with 1 the "
            'hosts are "sender" and "receiver", with more "sender0", "receiver0", "sender1", ...; '
            "a flow chooses its pair with flows.pair",
            1,
            "one pair; document 003's two-flow dumbbell has 2",
        ),
        Field(
            "access_delays",
            DurationList(),
            "one-way delay of the sender-side access link of each pair (both directions), "
            "one per pair; pair i's RTT is rtt + 2 x (access_delays[i] - access_delays[0]), "
            "i.e. 2 x (bottleneck delay + access_delays[i] + access_delay)",
            Derived("access_delay for every pair"),
            "equal RTTs; document 003 E3.9 uses 10 ms against 20 to 60 ms",
        ),
        *_COMMON_LINK_FIELDS,
        Field(
            "queue",
            _queue_kind(*_BOTTLENECK_QUEUE_DEFAULT),
            "queue of the bottleneck in each direction (r1 -> r2, and the same for r2 -> r1)",
            {},
            "each key's own default",
        ),
        _access_queue_field(_ACCESS_QUEUE_DEFAULT),
        _txqueuelen_field(_TXQUEUELEN_UNSET),
        *_TX_RING_FIELDS,
    doc="sender -> access link -> router r1 -> bottleneck -> router r2 -> access link -> "
    "receiver, and the same links in reverse (for ACKs and reverse flows). Links: "
    '"bottleneck" (r1 -> r2), "bottleneck_rev" (r2 -> r1), "access_fwd_sender" (sender -> '
    'r1), "access_rev_sender" (r1 -> sender), "access_fwd_receiver" (r2 -> receiver), '
    '"access_rev_receiver" (receiver -> r2); with pairs > 1 the access links end in the '
    'pair number ("access_fwd_sender0", ...). Flows choose pair and direction.',
)

# Node indices and link names of the dumbbell with one pair, in the order the core receives
# them (with more pairs each access link is repeated per pair, numbered).
DUMBBELL_NODES = (("sender", "host"), ("r1", "router"), ("r2", "router"), ("receiver", "host"))
#: (name, from node, to node, role) -- role selects rate, delay and queue.
DUMBBELL_LINKS = (
    ("access_fwd_sender", 0, 1, "access"),
    ("bottleneck", 1, 2, "bottleneck_fwd"),
    ("access_fwd_receiver", 2, 3, "access"),
    ("access_rev_receiver", 3, 2, "access"),
    ("bottleneck_rev", 2, 1, "bottleneck_rev"),
    ("access_rev_sender", 1, 0, "access"),
)


def _build_dumbbell(topo: Dict[str, Any], path: str) -> Network:
    bottleneck_bps = topo["bottleneck_rate"]
    access_bps = topo["access_rate"] if topo["access_rate"] is not None else 10 * bottleneck_bps
    rtt_ps = topo["rtt"]
    access_delay_ps = topo["access_delay"]
    n = topo["pairs"]
    sender_delays = topo["access_delays"]
    if sender_delays is None:
        sender_delays = [access_delay_ps] * n
    elif len(sender_delays) != n:
        sub = _join(path, "access_delays")
        raise ScenarioError(
            f"{sub}: {len(sender_delays)} delay(s) is not allowed: give one per pair "
            f"(pairs = {n})",
            sub,
        )
    # The forward and reverse bottleneck delays add up to exactly rtt minus pair 0's four
    # access delays even when rtt is an odd number of picoseconds.
    fwd_delay_ps = rtt_ps // 2 - sender_delays[0] - access_delay_ps
    rev_delay_ps = rtt_ps - rtt_ps // 2 - sender_delays[0] - access_delay_ps
    if fwd_delay_ps < 0:
        if topo["access_delays"] is None:
            sub = _join(path, "access_delay")
            raise ScenarioError(
                f"{sub}: {format_duration(access_delay_ps)} is not allowed: the four access links "
                f"({format_duration(4 * access_delay_ps)} in all) would take more than the rtt "
                f"({format_duration(rtt_ps)}); the bottleneck's one-way delay is rtt/2 - 2 x access_delay",
                sub,
            )
        sub = _join(path, "access_delays") + "[0]"
        raise ScenarioError(
            f"{sub}: {format_duration(sender_delays[0])} is not allowed: with access_delay "
            f"{format_duration(access_delay_ps)}, pair 0's access links would take more than the "
            f"rtt ({format_duration(rtt_ps)}); the bottleneck's one-way delay is "
            "rtt/2 - access_delays[0] - access_delay",
            sub,
        )
    bottleneck_q, access_q = _two_queues(
        topo, path, bottleneck_bps, access_bps, rtt_ps, _ACCESS_QUEUE_DEFAULT
    )
    suffix = [""] if n == 1 else [str(i) for i in range(n)]
    senders = list(range(n))
    r1, r2 = n, n + 1
    receivers = [n + 2 + i for i in range(n)]
    nodes = (
        [{"name": f"sender{s}", "kind": "host"} for s in suffix]
        + [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}]
        + [{"name": f"receiver{s}", "kind": "host"} for s in suffix]
    )

    def access(name: str, src: int, dst: int, delay_ps: int) -> Dict[str, Any]:
        return _link(name, src, dst, access_bps, delay_ps, access_q, topo)

    links = (
        [access(f"access_fwd_sender{s}", senders[i], r1, sender_delays[i]) for i, s in enumerate(suffix)]
        + [_link("bottleneck", r1, r2, bottleneck_bps, fwd_delay_ps, bottleneck_q, topo)]
        + [access(f"access_fwd_receiver{s}", r2, receivers[i], access_delay_ps) for i, s in enumerate(suffix)]
        + [access(f"access_rev_receiver{s}", receivers[i], r2, access_delay_ps) for i, s in enumerate(suffix)]
        + [_link("bottleneck_rev", r2, r1, bottleneck_bps, rev_delay_ps, bottleneck_q, topo)]
        + [access(f"access_rev_sender{s}", r1, senders[i], sender_delays[i]) for i, s in enumerate(suffix)]
    )
    pairs = _pairs_of(senders, receivers)
    network = Network(
        nodes=nodes,
        links=links,
        endpoints=pairs[0],
        path_mtu_bytes=topo["mtu"],
        pairs=pairs,
        pair_doc=_pair_doc(nodes, pairs),
    )
    return _host_interfaces(network, topo, path)


# ---- two-to-one (document 001) ---------------------------------------------------------

#: Document 001's hosts: the sender's interface queue, txqueuelen 100 packets.
_TWO_TO_ONE_ACCESS_QUEUE_DEFAULT = (
    "limit_packets",
    100,
    "document 001: sender interface queue txqueuelen = 100 packets",
)

_TWO_TO_ONE = shape_table(
    Field(
        "bottleneck_rate",
        Rate(),
        "rate of the receiver's link router -> receiver (and receiver -> router), where the "
        "two senders' traffic meets",
    ),
    Field(
        "rtt",
        Duration(positive=True),
        "round-trip propagation delay of each sender's path sender -> receiver -> sender "
        "(both are equal), without queueing or transmission time; it is the rtt of limit_bdp",
    ),
    Field(
        "access_rate",
        Rate(),
        "rate of the senders' links to the router (both directions)",
        Derived("bottleneck_rate"),
        "document 001: every host has a 1 Gb/s NIC, so two senders offer twice what the "
        "receiver's link carries",
    ),
    Field(
        "access_delay",
        Duration(positive=False, example="1ms"),
        "one-way propagation delay of each sender's link; the bottleneck's one-way delay is "
        "rtt/2 - access_delay",
        "0ms",
        "all of the path's delay on the bottleneck",
    ),
    *_COMMON_LINK_FIELDS,
    _BOTTLENECK_QUEUE_FIELD,
    _access_queue_field(_TWO_TO_ONE_ACCESS_QUEUE_DEFAULT),
    _txqueuelen_field(
        "unset: the senders' interface queues are access_queue (100 packets by default, "
        "document 001) and the receiver's (its link bottleneck_rev) is queue"
    ),
    *_TX_RING_FIELDS,
    doc="Document 001's two-to-one: sender0 and sender1 -> router -> bottleneck -> receiver, "
    "and the same links in reverse. Links: \"access_fwd_sender0\", \"access_fwd_sender1\" "
    "(sender -> router), \"bottleneck\" (router -> receiver), \"bottleneck_rev\" (receiver -> "
    "router), \"access_rev_sender0\", \"access_rev_sender1\" (router -> sender). Flows choose "
    "the sender with pair = 0 or 1 (direction \"reverse\": the receiver sends to it).",
)


def _build_two_to_one(topo: Dict[str, Any], path: str) -> Network:
    bottleneck_bps = topo["bottleneck_rate"]
    access_bps = topo["access_rate"] if topo["access_rate"] is not None else bottleneck_bps
    rtt_ps, access_delay_ps = topo["rtt"], topo["access_delay"]
    fwd_delay_ps = rtt_ps // 2 - access_delay_ps
    rev_delay_ps = rtt_ps - rtt_ps // 2 - access_delay_ps
    if fwd_delay_ps < 0:
        sub = _join(path, "access_delay")
        raise ScenarioError(
            f"{sub}: {format_duration(access_delay_ps)} is not allowed: a sender's two access links "
            f"({format_duration(2 * access_delay_ps)}) would take more than the rtt "
            f"({format_duration(rtt_ps)}); the bottleneck's one-way delay is rtt/2 - access_delay",
            sub,
        )
    bottleneck_q, access_q = _two_queues(
        topo, path, bottleneck_bps, access_bps, rtt_ps, _TWO_TO_ONE_ACCESS_QUEUE_DEFAULT
    )
    nodes = [
        {"name": "sender0", "kind": "host"},
        {"name": "sender1", "kind": "host"},
        {"name": "router", "kind": "router"},
        {"name": "receiver", "kind": "host"},
    ]
    router, receiver = 2, 3
    links = (
        [_link(f"access_fwd_sender{i}", i, router, access_bps, access_delay_ps, access_q, topo) for i in (0, 1)]
        + [_link("bottleneck", router, receiver, bottleneck_bps, fwd_delay_ps, bottleneck_q, topo)]
        + [_link("bottleneck_rev", receiver, router, bottleneck_bps, rev_delay_ps, bottleneck_q, topo)]
        + [_link(f"access_rev_sender{i}", router, i, access_bps, access_delay_ps, access_q, topo) for i in (0, 1)]
    )
    pairs = _pairs_of([0, 1], [receiver, receiver])
    network = Network(
        nodes=nodes, links=links, endpoints=pairs[0], path_mtu_bytes=topo["mtu"],
        pairs=pairs, pair_doc=_pair_doc(nodes, pairs),
    )
    return _host_interfaces(network, topo, path)


# ---- parking lot -----------------------------------------------------------------------

_PARKING_LOT = shape_table(
    Field(
        "hops",
        Integer(minimum=1, maximum=1000, example=3),
        "number of bottleneck links in a row, router0 -> router1 -> ... -> router<hops>",
    ),
    Field("bottleneck_rate", Rate(), "rate of every hop (both directions)"),
    Field(
        "hop_delay",
        Duration(positive=True, example="10ms"),
        "one-way propagation delay of every hop",
    ),
    Field(
        "access_rate",
        Rate(),
        "rate of the access links (hosts to routers)",
        Derived("10 x bottleneck_rate"),
        "access links faster than the hops, so the queues form at the hops",
    ),
    Field(
        "access_delay",
        Duration(positive=False, example="1ms"),
        "one-way propagation delay of each access link",
        "0ms",
        "all of the delay on the hops",
    ),
    *_COMMON_LINK_FIELDS,
    _BOTTLENECK_QUEUE_FIELD,
    _access_queue_field(_ACCESS_QUEUE_DEFAULT),
    _txqueuelen_field(_TXQUEUELEN_UNSET),
    *_TX_RING_FIELDS,
    doc="Cross traffic: hops bottleneck links in a row; pair 0 (sender0 -> receiver0) crosses "
    "all of them, pair i (sender<i> -> receiver<i>, i = 1 .. hops) only hop i. RTTs: "
    "2 x (hops x hop_delay + 2 x access_delay) for pair 0, 2 x (hop_delay + 2 x access_delay) "
    "for the others; limit_bdp uses pair 0's (the longest). Links: \"hop1\" .. (router<i-1> "
    "-> router<i>), \"hop1_rev\" .., and per pair i \"access_fwd_sender<i>\", "
    "\"access_fwd_receiver<i>\", \"access_rev_receiver<i>\", \"access_rev_sender<i>\".",
)


def _build_parking_lot(topo: Dict[str, Any], path: str) -> Network:
    hops, hop_bps, hop_delay_ps = topo["hops"], topo["bottleneck_rate"], topo["hop_delay"]
    access_bps = topo["access_rate"] if topo["access_rate"] is not None else 10 * hop_bps
    access_delay_ps = topo["access_delay"]
    long_rtt_ps = 2 * (hops * hop_delay_ps + 2 * access_delay_ps)
    hop_q, access_q = _two_queues(
        topo, path, hop_bps, access_bps, long_rtt_ps, _ACCESS_QUEUE_DEFAULT
    )
    nodes = [{"name": f"router{i}", "kind": "router"} for i in range(hops + 1)]
    links = [
        _link(f"hop{i}", i - 1, i, hop_bps, hop_delay_ps, hop_q, topo) for i in range(1, hops + 1)
    ] + [
        _link(f"hop{i}_rev", i, i - 1, hop_bps, hop_delay_ps, hop_q, topo) for i in range(1, hops + 1)
    ]
    senders, receivers = [], []
    for i in range(hops + 1):
        # Pair 0 enters at router0 and leaves at router<hops>; pair i crosses hop i only.
        enter, leave = (0, hops) if i == 0 else (i - 1, i)
        s, r = len(nodes), len(nodes) + 1
        nodes += [{"name": f"sender{i}", "kind": "host"}, {"name": f"receiver{i}", "kind": "host"}]
        links += [
            _link(f"access_fwd_sender{i}", s, enter, access_bps, access_delay_ps, access_q, topo),
            _link(f"access_fwd_receiver{i}", leave, r, access_bps, access_delay_ps, access_q, topo),
            _link(f"access_rev_receiver{i}", r, leave, access_bps, access_delay_ps, access_q, topo),
            _link(f"access_rev_sender{i}", enter, s, access_bps, access_delay_ps, access_q, topo),
        ]
        senders.append(s)
        receivers.append(r)
    pairs = _pairs_of(senders, receivers)
    network = Network(
        nodes=nodes, links=links, endpoints=pairs[0], path_mtu_bytes=topo["mtu"],
        pairs=pairs, pair_doc=_pair_doc(nodes, pairs),
    )
    return _host_interfaces(network, topo, path)


# ---- custom ----------------------------------------------------------------------------

#: Custom links have no single rtt, so their default limit is in packets.
_CUSTOM_QUEUE_DEFAULT = (
    "limit_packets",
    1000,
    "Linux default txqueuelen of an Ethernet interface (1000 packets); a custom link has no "
    "single rtt, so limit_bdp is not available",
)

_CUSTOM_NODE = Table(
    fields=(
        Field("name", Name(), "name of the node, unique; links and flows refer to it"),
        Field(
            "kind",
            Choice(("host", "router")),
            '"host": flows start and end here; "router": only forwards',
        ),
        Field(
            "txqueuelen",
            Integer(minimum=1, maximum=U64_MAX, example=100),
            "hosts only: length of the host's interface queue, packets (Linux ifconfig "
            "txqueuelen): every link leaving the host gets a drop-tail queue of this many "
            "packets instead of its own queue (which still applies to the reverse direction "
            "of a duplex link). Whatever the queue, a TCP sender's segment that finds the "
            "interface queue of its host full is not lost: the sender sends it later and "
            "reduces its window (local congestion)",
            UNSET,
            "unset: each link leaving the host keeps its own queue (1000 packets by default, "
            "Linux's default txqueuelen for Ethernet)",
        ),
    ),
    doc="A node of a custom topology.",
)

_CUSTOM_LINK = Table(
    fields=(
        Field("from", Name(), "name of the node the link leaves"),
        Field("to", Name(), "name of the node the link enters"),
        Field("rate", Rate(), "rate of the link"),
        Field("delay", Duration(positive=False, example="5ms"), "one-way propagation delay"),
        Field(
            "queue",
            _queue_kind(*_CUSTOM_QUEUE_DEFAULT),
            "queue in front of the link (and of its reverse, if duplex); limit_bdp is refused "
            "(a link lies on many paths, so there is no single rtt)",
            {},
            "each key's own default",
        ),
        Field(
            "duplex",
            Boolean(),
            "also make the reverse link to -> from with the same rate, delay and queue",
            True,
            "fatpipe default: ACKs need a way back",
        ),
        Field(
            "name",
            Name(),
            "name of the link (impairments refer to it); the reverse link of a duplex link is "
            "named <name>_rev",
            Derived('"<from>-><to>" (and "<to>-><from>" for the reverse)'),
            "fatpipe default",
        ),
    ),
    doc="A link of a custom topology, simplex from -> to, or duplex (two simplex links).",
)

class NodePath(Kind):
    """An array of at least two node names: a route through the topology."""

    type_doc = "array of node names"

    def parse(self, value: Any, path: str) -> List[str]:
        if not isinstance(value, (list, tuple)) or len(value) < 2 or not all(isinstance(v, str) and v for v in value):
            raise _fail(path, value, 'expected an array of at least two node names, such as ["h1", "r1", "r3", "h2"]')
        return list(value)


_CUSTOM_ROUTE = Table(
    fields=(
        Field(
            "path",
            NodePath(),
            "the nodes in order, first to last; each consecutive pair joined by a link (the "
            "first given, if several)",
        ),
    ),
    doc="An explicit route: packets for the path's last node leave each node on the path by "
    "the path's next link, instead of the shortest path (nodes off the path, and other "
    "destinations, keep theirs). Give the way back as a route of its own if it should differ.",
)

_CUSTOM = shape_table(
    Field(
        "nodes",
        TableArray(_CUSTOM_NODE, min_items=2, header="topology.nodes"),
        "the nodes, at least two ([[topology.nodes]])",
    ),
    Field(
        "links",
        TableArray(_CUSTOM_LINK, min_items=1, header="topology.links"),
        "the links ([[topology.links]]); routes are shortest paths by hop count, ties to the "
        "link given first",
    ),
    Field(
        "routes",
        TableArray(_CUSTOM_ROUTE, min_items=0, header="topology.routes"),
        "explicit routes over the shortest paths ([[topology.routes]])",
        [],
        "none: every route is a shortest path",
    ),
    *_COMMON_LINK_FIELDS,
    doc="Any network: [[topology.nodes]] and [[topology.links]]. Flows name their hosts with "
    "src and dst (not pair or direction); both directions need a route (ACKs go back). "
    "There is no rtt: queue limits are in packets or bytes (default 1000 packets).",
)


def _build_custom(topo: Dict[str, Any], path: str) -> Network:
    nodes: List[Dict[str, Any]] = []
    index: Dict[str, int] = {}
    for i, node in enumerate(topo["nodes"]):
        if node["name"] in index:
            sub = f"{path}.nodes[{i}].name"
            raise _fail(sub, node["name"], f"node names must be unique, and {path}.nodes"
                        f"[{index[node['name']]}] is named {json.dumps(node['name'])} too")
        index[node["name"]] = i
        nodes.append({"name": node["name"], "kind": node["kind"]})
        if node["txqueuelen"] is not None and node["kind"] != "host":
            raise _fail(
                f"{path}.nodes[{i}].txqueuelen", node["txqueuelen"],
                "only a host has an interface queue; a router's queues are its links' queue tables",
            )
    known = ", ".join(json.dumps(n["name"]) for n in nodes)
    links: List[Dict[str, Any]] = []
    where: Dict[str, str] = {}
    for i, link in enumerate(topo["links"]):
        sub = f"{path}.links[{i}]"
        for key in ("from", "to"):
            if link[key] not in index:
                raise _fail(f"{sub}.{key}", link[key], f"expected a node of [[{path}.nodes]]: {known}")
        if link["from"] == link["to"]:
            raise _fail(f"{sub}.to", link["to"], "must differ from from (a link joins two nodes)")
        queue = link["queue"]
        if queue.get("limit_bdp") is not None:
            raise _fail_number(
                f"{sub}.queue.limit_bdp", queue["limit_bdp"],
                "a custom link lies on many paths, so there is no rtt to multiply; "
                "give limit_packets or limit_bytes",
            )
        q = _normalize_queue(
            queue, f"{sub}.queue", rate_bps=link["rate"], rtt_ps=0, mtu_bytes=topo["mtu"],
            default_key=_CUSTOM_QUEUE_DEFAULT[0], default_value=_CUSTOM_QUEUE_DEFAULT[1],
        )
        a, b = index[link["from"]], index[link["to"]]
        if link["name"] is not None:
            names = [link["name"], f"{link['name']}_rev"]
        else:
            names = [f"{link['from']}->{link['to']}", f"{link['to']}->{link['from']}"]
        ends = [(a, b), (b, a)] if link["duplex"] else [(a, b)]
        for name, (x, y) in zip(names, ends):
            if name in where:
                raise _fail(
                    f"{sub}.name" if link["name"] is not None else f"{sub}.to",
                    link["name"] if link["name"] is not None else link["to"],
                    f"link names must be unique, and {where[name]} already makes the link "
                    f"{json.dumps(name)}" + ("" if link["name"] is not None else "; give this link a name"),
                )
            where[name] = sub
            links.append(_link(name, x, y, link["rate"], link["delay"], q, topo))
    for n, node in enumerate(topo["nodes"]):
        if node["txqueuelen"] is not None:
            for link in links:
                if link["from"] == index[node["name"]]:
                    link["queue"] = _txqueuelen_queue(node["txqueuelen"], f"{path}.nodes[{n}].txqueuelen")
    hosts = {n["name"]: i for i, n in enumerate(nodes) if n["kind"] == "host"}
    if not hosts:
        sub = f"{path}.nodes"
        raise ScenarioError(
            f'{sub}: {len(nodes)} routers and no host is not allowed: at least one node of '
            'kind = "host" (flows run between hosts)',
            sub,
        )
    network = Network(nodes=nodes, links=links, endpoints={}, path_mtu_bytes=topo["mtu"], hosts=hosts)
    for i, route in enumerate(topo["routes"]):
        sub = f"{path}.routes[{i}].path"
        chosen = []
        for a, b in zip(route["path"], route["path"][1:]):
            for name in (a, b):
                if name not in index:
                    raise _fail(sub, name, f"expected a node of [[{path}.nodes]]: {known}")
            hop = next((j for j, link in enumerate(links) if link["from"] == index[a] and link["to"] == index[b]), None)
            if hop is None:
                raise _fail(sub, route["path"], f"no link from {json.dumps(a)} to {json.dumps(b)}")
            chosen.append(hop)
        network.routes.append({"links": chosen})
    return network


#: How messages name a shape ("expected a link of the parking lot: ...").
SHAPE_LABELS = {"two_to_one": "two-to-one", "parking_lot": "parking lot", "custom": "custom topology"}

#: Topology shapes by name.
SHAPES: Dict[str, Shape] = {
    "dumbbell": Shape(table=_DUMBBELL, build=_build_dumbbell),
    "two_to_one": Shape(table=_TWO_TO_ONE, build=_build_two_to_one),
    "parking_lot": Shape(table=_PARKING_LOT, build=_build_parking_lot),
    "custom": Shape(table=_CUSTOM, build=_build_custom),
}
