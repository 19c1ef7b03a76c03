"""What a topology shape builds (:class:`Network`: the core's nodes and links), the
helpers every shape shares, and hop counts along it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..units import U64_MAX
from .queues import HOLDING_DISCIPLINES
from .kinds import Integer, Size
from .schema import UNSET, Derived, Field, Table, _fail


@dataclass
class Network:
    """What a topology shape produces: core nodes and links, and where flows run."""

    nodes: List[Dict[str, Any]]
    links: List[Dict[str, Any]]
    #: direction name -> (src node index, dst node index), of pair 0
    endpoints: Dict[str, Tuple[int, int]]
    #: the smallest MTU on any path a flow can take (MSS is checked against it)
    path_mtu_bytes: int
    #: per host pair (a flow's ``pair``): direction -> (src, dst); None: one pair, ``endpoints``
    pairs: Optional[List[Dict[str, Tuple[int, int]]]] = None
    #: what the pairs are, for messages ("0 = sender0 -> receiver0, ...")
    pair_doc: str = ""
    #: shapes whose flows name their hosts (src, dst) instead of pair and direction:
    #: host name -> node index
    hosts: Optional[Dict[str, int]] = None
    #: the shape's name, for messages (set by :func:`load`)
    shape: str = "topology"
    #: groups of parallel links a packet chooses among (``parallel_paths``): the core's
    #: ``splits``
    splits: List[Dict[str, Any]] = field(default_factory=list)
    #: explicit routes (custom topologies): the core's ``routes``
    routes: List[Dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Shape:
    """A named topology: its parameters and the function that builds the network.

    Keys every shape has (:data:`SHAPE_COMMON_KEYS`, such as ``impairments``) are handled
    by :func:`load` after ``build``; ``build`` gets the shape's own keys only. Make the
    table with :func:`shape_table`, which adds them.
    """

    table: Table
    build: Callable[[Dict[str, Any], str], Network]


_COMMON_LINK_FIELDS = (
    Field(
        "mtu",
        Size(minimum=68, maximum=65535, example=1500),
        "largest IP packet, bytes, on every link",
        1500,
        "Ethernet (RFC 894); 68 is the IPv4 minimum (RFC 791), 65535 the maximum",
    ),
    Field(
        "framing_bytes",
        Size(maximum=65535, example=38),
        "link-layer bytes added to every packet on the wire (they take transmission time but "
        "carry no IP data); 0 models ns-2-style links",
        38,
        "Ethernet: 14 header + 4 FCS + 8 preamble and start delimiter + 12 inter-frame gap "
        "(IEEE 802.3)",
    ),
)

#: Keys of [topology] that every shape has, handled independently of the shape.
SHAPE_COMMON_KEYS = ("impairments",)


def _link(
    name: str, src: int, dst: int, rate_bps: int, delay_ps: int, queue: Dict[str, Any],
    topo: Dict[str, Any],
) -> Dict[str, Any]:
    """One simplex link of the core (impairments are attached later by name)."""
    return {
        "name": name,
        "from": src,
        "to": dst,
        "rate_bps": rate_bps,
        "delay_ps": delay_ps,
        "framing_bytes": topo["framing_bytes"],
        "mtu_bytes": topo["mtu"],
        "queue": dict(queue),
    }


def _pairs_of(senders: Sequence[int], receivers: Sequence[int]) -> List[Dict[str, Tuple[int, int]]]:
    return [{"forward": (s, r), "reverse": (r, s)} for s, r in zip(senders, receivers)]


def _pair_doc(nodes: List[Dict[str, Any]], pairs: List[Dict[str, Tuple[int, int]]]) -> str:
    return ", ".join(
        f"{i} = {nodes[p['forward'][0]]['name']} -> {nodes[p['forward'][1]]['name']}"
        for i, p in enumerate(pairs)
    )


def _txqueuelen_field(unset: str) -> Field:
    return Field(
        "txqueuelen",
        Integer(minimum=1, maximum=U64_MAX, example=100),
        "length of every host's interface queue, packets (Linux ifconfig txqueuelen): the "
        "drop-tail queue of each link leaving a host. When it is full a TCP sender's segment "
        "is not lost: the sender keeps it, sends it when the queue has room, and reduces its "
        "window (local congestion, Linux tcp_enter_cwr; counted per flow). Other packets "
        "that find it full (ACKs, UDP datagrams) are dropped. Overrides access_queue on the "
        "hosts' side",
        Derived(unset),
        "Linux's default txqueuelen for Ethernet is 1000 packets; document 001's hosts ran "
        "with 100",
    )


#: Intel e1000's most bytes per transmit descriptor (E1000_MAX_DATA_PER_TXD = 1 << 12,
#: e1000_main.c), the NIC of document 001's hosts.
E1000_DESCRIPTOR_BYTES = 4096
#: Bytes of the Ethernet header in the frame a descriptor holds (the core's
#: tx_ring.rs ETHERNET_HEADER_BYTES; checked against it by a test).
ETHERNET_HEADER_BYTES = 14

_TX_RING_FIELDS = (
    Field(
        "tx_ring",
        Integer(minimum=1, maximum=U64_MAX, example=256),
        "descriptors of every host's transmit ring (the network driver's ring between the "
        "interface queue and the line, ethtool -G tx): the interface holds the packets the "
        "ring's free descriptors take, then txqueuelen more, before a TCP sender meets local "
        "congestion; a packet takes ceil((IP bytes + 14) / tx_descriptor_bytes) descriptors "
        "until it has been sent",
        UNSET,
        "unset: no ring, the interface queue feeds the line. Intel e1000, document 001's NIC: "
        "256 (E1000_DEFAULT_TXD)",
    ),
    Field(
        "tx_descriptor_bytes",
        Size(minimum=64, maximum=65535, example=4096),
        "with tx_ring: the most frame bytes one transmit descriptor holds",
        E1000_DESCRIPTOR_BYTES,
        "Intel e1000 E1000_MAX_DATA_PER_TXD (1 << 12): a 9014-byte jumbo frame takes 3, a "
        "1514-byte frame 1",
    ),
)


def _host_interfaces(network: Network, topo: Dict[str, Any], path: str = "topology") -> Network:
    """Gives every link leaving a host a drop-tail queue of ``txqueuelen`` packets (if set):
    the host's interface queue, where the core models local congestion; and the driver's
    transmit ring (``tx_ring``) in front of the line."""
    txqueuelen, ring = topo["txqueuelen"], topo["tx_ring"]
    if ring is not None:
        per_packet = -(-(topo["mtu"] + ETHERNET_HEADER_BYTES) // topo["tx_descriptor_bytes"])
        if ring < per_packet:
            raise _fail(
                f"{path}.tx_ring", ring,
                f"a full-size frame (MTU {topo['mtu']} + {ETHERNET_HEADER_BYTES} bytes) takes {per_packet} "
                f"descriptors of {topo['tx_descriptor_bytes']} bytes, so at least {per_packet} are needed",
            )
    for link in network.links:
        if network.nodes[link["from"]]["kind"] == "host":
            if txqueuelen is not None:
                link["queue"] = _txqueuelen_queue(txqueuelen, f"{path}.txqueuelen")
            if ring is not None and link["queue"]["discipline"] in HOLDING_DISCIPLINES:
                raise _fail(
                    f"{path}.tx_ring", ring,
                    f"the host interface queue is {link['queue']['discipline']}, which holds its packets; "
                    "a transmit ring runs only behind drop-tail or RED (set txqueuelen, or leave tx_ring unset)",
                )
            if ring is not None:
                link["tx_ring"] = {"descriptors": ring, "descriptor_bytes": topo["tx_descriptor_bytes"]}
    return network


def _txqueuelen_queue(txqueuelen: int, field: str) -> Dict[str, Any]:
    # pfifo_fast, Linux's default interface queue discipline, counts packets only.
    return {"discipline": "droptail", "limit_packets": txqueuelen, "limit_bytes": None,
            "cell_bytes": None, "limit_cells": None, "_field": field}


_TXQUEUELEN_UNSET = (
    "unset: the hosts' interface queues are access_queue, 1000 packets by default"
)
