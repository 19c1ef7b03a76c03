"""Topology shapes besides the one-pair dumbbell: dumbbell pairs, two_to_one, parking_lot,
custom. Normalization and every error (no core needed)."""

import copy
from pathlib import Path

import pytest

from fatpipe import ScenarioError, load_scenario
from fatpipe.scenario import format_reference

PS_PER_MS = 10**9


def doc(topology, *flows):
    return {"duration": "10s", "topology": topology, "flows": list(flows) or [{}]}


def error(d):
    with pytest.raises(ScenarioError) as info:
        load_scenario(d)
    message = str(info.value)
    assert "\n" not in message, message
    return message


def links_by_name(core):
    return {link["name"]: link for link in core["links"]}


def names(core):
    return [n["name"] for n in core["nodes"]]


# ---- dumbbell with pairs -------------------------------------------------------------

DUMBBELL2 = {
    "bottleneck_rate": "100Mbps", "rtt": "60ms", "access_delay": "2ms",
    "pairs": 2, "access_delays": ["3ms", "13ms"],
}


def test_dumbbell_pairs_nodes_links_and_endpoints():
    core = load_scenario(doc(DUMBBELL2, {"pair": 0}, {"pair": 1}, {"pair": 1, "direction": "reverse"}))
    assert names(core) == ["sender0", "sender1", "r1", "r2", "receiver0", "receiver1"]
    assert [n["kind"] for n in core["nodes"]] == ["host", "host", "router", "router", "host", "host"]
    links = links_by_name(core)
    assert list(links) == [
        "access_fwd_sender0", "access_fwd_sender1", "bottleneck",
        "access_fwd_receiver0", "access_fwd_receiver1",
        "access_rev_receiver0", "access_rev_receiver1", "bottleneck_rev",
        "access_rev_sender0", "access_rev_sender1",
    ]
    assert (links["access_fwd_sender1"]["from"], links["access_fwd_sender1"]["to"]) == (1, 2)
    assert (links["access_rev_sender1"]["from"], links["access_rev_sender1"]["to"]) == (2, 1)
    assert (links["access_fwd_receiver1"]["from"], links["access_fwd_receiver1"]["to"]) == (3, 5)
    # Sender-side access links take the pair's delay, receiver-side ones access_delay.
    assert links["access_fwd_sender0"]["delay_ps"] == links["access_rev_sender0"]["delay_ps"] == 3 * PS_PER_MS
    assert links["access_fwd_sender1"]["delay_ps"] == links["access_rev_sender1"]["delay_ps"] == 13 * PS_PER_MS
    assert links["access_fwd_receiver1"]["delay_ps"] == 2 * PS_PER_MS
    # rtt is pair 0's: bottleneck one-way = 30 - 3 - 2 = 25 ms.
    assert links["bottleneck"]["delay_ps"] == links["bottleneck_rev"]["delay_ps"] == 25 * PS_PER_MS
    # Pair 1's RTT = rtt + 2 x (13 - 3) = 80 ms.
    pair1 = ("access_fwd_sender1", "bottleneck", "access_fwd_receiver1", "access_rev_receiver1",
             "bottleneck_rev", "access_rev_sender1")
    assert sum(links[n]["delay_ps"] for n in pair1) == 80 * PS_PER_MS
    assert [(f["src"], f["dst"]) for f in core["flows"]] == [(0, 4), (1, 5), (5, 1)]
    # limit_bdp uses rtt (pair 0's): 100 Mb/s x 60 ms / 1500 B = 500 packets.
    assert links["bottleneck"]["queue"]["limit_packets"] == 500


def test_dumbbell_pairs_default_to_equal_access_delays():
    core = load_scenario(doc({"bottleneck_rate": "100Mbps", "rtt": "40ms", "access_delay": "1ms", "pairs": 3}))
    links = links_by_name(core)
    assert all(links[f"access_fwd_sender{i}"]["delay_ps"] == PS_PER_MS for i in range(3))
    assert links["bottleneck"]["delay_ps"] == 18 * PS_PER_MS


def test_one_pair_with_access_delays_keeps_the_one_pair_names():
    core = load_scenario(doc({"bottleneck_rate": "100Mbps", "rtt": "40ms", "access_delays": ["5ms"]}))
    assert names(core) == ["sender", "r1", "r2", "receiver"]
    links = links_by_name(core)
    assert links["access_fwd_sender"]["delay_ps"] == 5 * PS_PER_MS
    assert links["bottleneck"]["delay_ps"] == 15 * PS_PER_MS


@pytest.mark.parametrize(
    "topology, flow, message",
    [
        (DUMBBELL2, {"pair": 2},
         'flows[0].pair: 2 is not allowed: shape = "dumbbell" has 2 pair(s), 0 to 1 '
         "(0 = sender0 -> receiver0, 1 = sender1 -> receiver1)"),
        ({"bottleneck_rate": "1Mbps", "rtt": "40ms"}, {"pair": 1},
         'flows[0].pair: 1 is not allowed: shape = "dumbbell" has 1 pair(s), 0 to 0 (0 = sender -> receiver)'),
        ({**DUMBBELL2, "access_delays": ["1ms"]}, {},
         "topology.access_delays: 1 delay(s) is not allowed: give one per pair (pairs = 2)"),
        ({**DUMBBELL2, "access_delays": ["29ms", "1ms"]}, {},
         "topology.access_delays[0]: 29ms is not allowed: with access_delay 2ms, pair 0's access "
         "links would take more than the rtt (60ms); the bottleneck's one-way delay is "
         "rtt/2 - access_delays[0] - access_delay"),
        ({**DUMBBELL2, "access_delays": ["1ms", "soon"]}, {}, "topology.access_delays[1]: "),
        ({**DUMBBELL2, "access_delays": "10ms"}, {},
         'topology.access_delays: "10ms" is not allowed: expected an array of durations, one per pair'),
        ({**DUMBBELL2, "access_delays": []}, {}, "topology.access_delays: [] is not allowed"),
        ({**DUMBBELL2, "pairs": 0}, {}, "topology.pairs: 0 is not allowed"),
        (DUMBBELL2, {"src": "sender0"},
         'flows[0].src: "sender0" is not allowed: src and dst name hosts only with shape = "custom"; '
         'with shape = "dumbbell" a flow chooses pair and direction'),
        (DUMBBELL2, {"dst": "receiver0"}, 'flows[0].dst: "receiver0" is not allowed: src and dst'),
        (DUMBBELL2, {"pair": -1}, "flows[0].pair: -1 is not allowed"),
        (DUMBBELL2, {"pair": "one"}, 'flows[0].pair: "one" is not allowed'),
    ],
)
def test_dumbbell_pair_errors(topology, flow, message):
    assert error(doc(topology, flow)).startswith(message)


# ---- two_to_one ------------------------------------------------------------------------

TWO_TO_ONE = {"shape": "two_to_one", "bottleneck_rate": "1Gbps", "rtt": "30ms"}


def test_two_to_one_nodes_links_and_endpoints():
    core = load_scenario(doc({**TWO_TO_ONE, "access_delay": "1ms"}, {"pair": 0}, {"pair": 1}, {"pair": 1, "direction": "reverse"}))
    assert names(core) == ["sender0", "sender1", "router", "receiver"]
    assert [n["kind"] for n in core["nodes"]] == ["host", "host", "router", "host"]
    links = links_by_name(core)
    assert [(n, link["from"], link["to"]) for n, link in links.items()] == [
        ("access_fwd_sender0", 0, 2), ("access_fwd_sender1", 1, 2), ("bottleneck", 2, 3),
        ("bottleneck_rev", 3, 2), ("access_rev_sender0", 2, 0), ("access_rev_sender1", 2, 1),
    ]
    # Document 001: every NIC at 1 Gb/s; the senders' txqueuelen 100.
    assert all(link["rate_bps"] == 10**9 for link in core["links"])
    assert links["access_fwd_sender0"]["queue"]["limit_packets"] == 100
    assert links["bottleneck"]["delay_ps"] == 14 * PS_PER_MS
    assert sum(links[n]["delay_ps"] for n in ("access_fwd_sender1", "bottleneck", "bottleneck_rev", "access_rev_sender1")) == 30 * PS_PER_MS
    # 1 Gb/s x 30 ms / 1500 B = 2500 packets.
    assert links["bottleneck"]["queue"]["limit_packets"] == 2500
    assert [(f["src"], f["dst"]) for f in core["flows"]] == [(0, 3), (1, 3), (3, 1)]


@pytest.mark.parametrize(
    "topology, flow, message",
    [
        (TWO_TO_ONE, {"pair": 2},
         'flows[0].pair: 2 is not allowed: shape = "two_to_one" has 2 pair(s), 0 to 1 '
         "(0 = sender0 -> receiver, 1 = sender1 -> receiver)"),
        ({**TWO_TO_ONE, "access_delay": "16ms"}, {},
         "topology.access_delay: 16ms is not allowed: a sender's two access links (32ms) would "
         "take more than the rtt (30ms)"),
        ({**TWO_TO_ONE, "pairs": 2}, {}, "topology.pairs: unknown key; allowed keys: shape, bottleneck_rate"),
        ({"shape": "two_to_one", "rtt": "30ms"}, {}, "topology.bottleneck_rate: missing; required"),
        (TWO_TO_ONE, {"src": "sender0", "dst": "receiver"}, 'flows[0].src: "sender0" is not allowed: src and dst'),
    ],
)
def test_two_to_one_errors(topology, flow, message):
    assert error(doc(topology, flow)).startswith(message)


# ---- parking lot -----------------------------------------------------------------------

PARKING = {"shape": "parking_lot", "hops": 3, "bottleneck_rate": "100Mbps", "hop_delay": "5ms", "access_delay": "1ms"}


def test_parking_lot_nodes_links_and_endpoints():
    flows = [{"pair": i, "name": f"p{i}"} for i in range(4)]
    core = load_scenario(doc(PARKING, *flows))
    assert names(core) == ["router0", "router1", "router2", "router3"] + [
        f"{role}{i}" for i in range(4) for role in ("sender", "receiver")
    ]
    links = links_by_name(core)
    assert [(n, link["from"], link["to"]) for n, link in list(links.items())[:6]] == [
        ("hop1", 0, 1), ("hop2", 1, 2), ("hop3", 2, 3), ("hop1_rev", 1, 0), ("hop2_rev", 2, 1), ("hop3_rev", 3, 2),
    ]
    index = {n: i for i, n in enumerate(names(core))}
    # The long flow enters at router0 and leaves at router3; cross pair i crosses hop i only.
    assert (links["access_fwd_sender0"]["to"], links["access_fwd_receiver0"]["from"]) == (0, 3)
    for i in (1, 2, 3):
        assert (links[f"access_fwd_sender{i}"]["to"], links[f"access_fwd_receiver{i}"]["from"]) == (i - 1, i)
        assert (links[f"access_rev_receiver{i}"]["from"], links[f"access_rev_sender{i}"]["to"]) == (
            index[f"receiver{i}"], index[f"sender{i}"])
    assert [(f["src"], f["dst"]) for f in core["flows"]] == [
        (index[f"sender{i}"], index[f"receiver{i}"]) for i in range(4)
    ]
    assert len(core["links"]) == 6 + 4 * 4
    assert links["hop2"]["delay_ps"] == 5 * PS_PER_MS and links["access_fwd_sender2"]["delay_ps"] == PS_PER_MS
    # limit_bdp uses the long flow's RTT, 2 x (3 x 5 + 2 x 1) = 34 ms: 100 Mb/s x 34 ms = 283.3 packets.
    assert links["hop1"]["queue"]["limit_packets"] == 284
    assert links["access_fwd_sender1"]["rate_bps"] == 10**9


@pytest.mark.parametrize(
    "topology, flow, message",
    [
        (PARKING, {"pair": 4},
         'flows[0].pair: 4 is not allowed: shape = "parking_lot" has 4 pair(s), 0 to 3 (0 = sender0 -> receiver0, '),
        ({**PARKING, "hops": 0}, {}, "topology.hops: 0 is not allowed"),
        ({**PARKING, "hop_delay": "0ms"}, {}, 'topology.hop_delay: "0ms" is not allowed'),
        ({k: v for k, v in PARKING.items() if k != "hops"}, {}, "topology.hops: missing; required"),
        ({**PARKING, "rtt": "40ms"}, {}, "topology.rtt: unknown key"),
        ({**PARKING, "impairments": [{"kind": "bernoulli", "link": "hop4", "probability": 0.1}]}, {},
         'topology.impairments[0].link: "hop4" is not allowed: expected a link of the parking lot: "hop1", "hop2", "hop3", "hop1_rev"'),
    ],
)
def test_parking_lot_errors(topology, flow, message):
    assert error(doc(topology, flow)).startswith(message)


# ---- custom ----------------------------------------------------------------------------

CHAIN = {
    "shape": "custom",
    "nodes": [{"name": "a", "kind": "host"}, {"name": "m", "kind": "router"}, {"name": "b", "kind": "host"}],
    "links": [
        {"from": "a", "to": "m", "rate": "1Gbps", "delay": "3ms"},
        {"from": "m", "to": "b", "rate": "100Mbps", "delay": "7ms", "name": "slow",
         "queue": {"limit_packets": 50}},
    ],
}


def custom(**changes):
    topo = copy.deepcopy(CHAIN)
    topo.update(changes)
    return topo


def test_custom_nodes_links_and_endpoints():
    core = load_scenario(doc(CHAIN, {"src": "a", "dst": "b"}, {"src": "b", "dst": "a", "name": "back"}))
    assert core["nodes"] == [{"name": "a", "kind": "host"}, {"name": "m", "kind": "router"}, {"name": "b", "kind": "host"}]
    links = links_by_name(core)
    assert [(n, link["from"], link["to"], link["delay_ps"]) for n, link in links.items()] == [
        ("a->m", 0, 1, 3 * PS_PER_MS), ("m->a", 1, 0, 3 * PS_PER_MS),
        ("slow", 1, 2, 7 * PS_PER_MS), ("slow_rev", 2, 1, 7 * PS_PER_MS),
    ]
    assert links["slow_rev"]["rate_bps"] == 10**8 and links["slow_rev"]["queue"]["limit_packets"] == 50
    # Without a queue table: drop-tail, 1000 packets (no rtt to take a BDP of).
    assert links["a->m"]["queue"]["limit_packets"] == 1000
    assert [(f["src"], f["dst"]) for f in core["flows"]] == [(0, 2), (2, 0)]


def test_custom_simplex_links_and_impairments_by_name():
    topo = custom(links=[
        {"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms", "duplex": False},
        {"from": "m", "to": "b", "rate": "1Gbps", "delay": "1ms", "duplex": False},
        {"from": "b", "to": "a", "rate": "1Gbps", "delay": "1ms", "duplex": False},
    ], impairments=[{"kind": "bernoulli", "link": "m->b", "probability": 0.01}])
    core = load_scenario(doc(topo, {"src": "a", "dst": "b"}))
    assert [link["name"] for link in core["links"]] == ["a->m", "m->b", "b->a"]
    assert links_by_name(core)["m->b"]["impairments"] == [{"kind": "bernoulli", "probability": 0.01}]


@pytest.mark.parametrize(
    "topology, flow, message",
    [
        (CHAIN, {}, 'flows[0].src: missing; required with shape = "custom" (a host: "a", "b")'),
        (CHAIN, {"src": "a"}, 'flows[0].dst: missing; required with shape = "custom" (a host: "a", "b")'),
        (CHAIN, {"src": "a", "dst": "m"}, 'flows[0].dst: "m" is not allowed: expected a host of topology.nodes: "a", "b"'),
        (CHAIN, {"src": "x", "dst": "b"}, 'flows[0].src: "x" is not allowed: expected a host of topology.nodes: "a", "b"'),
        (CHAIN, {"src": "a", "dst": "a"}, 'flows[0].dst: "a" is not allowed: must differ from src'),
        (CHAIN, {"src": "a", "dst": "b", "pair": 0},
         'flows[0].pair: 0 is not allowed: with shape = "custom" a flow names its hosts with src and dst instead'),
        (CHAIN, {"src": "a", "dst": "b", "direction": "reverse"},
         'flows[0].direction: "reverse" is not allowed: with shape = "custom" a flow names its hosts'),
        (custom(nodes=CHAIN["nodes"] + [{"name": "c", "kind": "host"}]), {"src": "a", "dst": "c"},
         'flows[0].dst: "c" is not allowed: no route for the data from "a" to "c" over topology.links'),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms"},
                       {"from": "m", "to": "b", "rate": "1Gbps", "delay": "1ms", "duplex": False}]),
         {"src": "a", "dst": "b"},
         'flows[0].dst: "b" is not allowed: no route for the ACKs from "b" to "a" over topology.links'),
        (custom(nodes=CHAIN["nodes"] + [{"name": "a", "kind": "router"}]), {"src": "a", "dst": "b"},
         'topology.nodes[3].name: "a" is not allowed: node names must be unique, and topology.nodes[0] is named "a" too'),
        (custom(nodes=[{"name": "a", "kind": "switch"}, {"name": "b", "kind": "host"}]), {},
         'topology.nodes[0].kind: "switch" is not allowed'),
        (custom(nodes=[{"name": "a", "kind": "host"}]), {}, "topology.nodes: "),
        (custom(nodes=[{"name": "a", "kind": "router"}, {"name": "b", "kind": "router"}],
                links=[{"from": "a", "to": "b", "rate": "1Gbps", "delay": "1ms"}]), {},
         'topology.nodes: 2 routers and no host is not allowed: at least one node of kind = "host"'),
        (custom(links=[{"from": "a", "to": "z", "rate": "1Gbps", "delay": "1ms"}]), {"src": "a", "dst": "b"},
         'topology.links[0].to: "z" is not allowed: expected a node of [[topology.nodes]]: "a", "m", "b"'),
        (custom(links=[{"from": "q", "to": "m", "rate": "1Gbps", "delay": "1ms"}]), {"src": "a", "dst": "b"},
         'topology.links[0].from: "q" is not allowed: expected a node of [[topology.nodes]]'),
        (custom(links=[{"from": "a", "to": "a", "rate": "1Gbps", "delay": "1ms"}]), {"src": "a", "dst": "b"},
         'topology.links[0].to: "a" is not allowed: must differ from from'),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms", "queue": {"limit_bdp": 1}}]),
         {"src": "a", "dst": "b"},
         "topology.links[0].queue.limit_bdp: 1 is not allowed: a custom link lies on many paths, so there is "
         "no rtt to multiply; give limit_packets or limit_bytes"),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms", "queue": {"discipline": "red", "limit_bdp": 2}}]),
         {"src": "a", "dst": "b"}, "topology.links[0].queue.limit_bdp: 2 is not allowed"),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms"},
                       {"from": "m", "to": "a", "rate": "1Gbps", "delay": "1ms"}]), {"src": "a", "dst": "b"},
         'topology.links[1].to: "a" is not allowed: link names must be unique, and topology.links[0] already '
         'makes the link "m->a"; give this link a name'),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms", "name": "x"},
                       {"from": "m", "to": "b", "rate": "1Gbps", "delay": "1ms", "name": "x"}]), {"src": "a", "dst": "b"},
         'topology.links[1].name: "x" is not allowed: link names must be unique, and topology.links[0] already makes the link "x"'),
        (custom(links=[{"from": "a", "to": "m", "rate": "0bps", "delay": "1ms"}]), {"src": "a", "dst": "b"},
         "topology.links[0].rate: "),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps"}]), {"src": "a", "dst": "b"},
         "topology.links[0].delay: missing; required"),
        (custom(links=[{"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms", "duplx": True}]), {"src": "a", "dst": "b"},
         'topology.links[0].duplx: unknown key; allowed keys: from, to, rate, delay, queue, duplex, name; did you mean "duplex"?'),
        (custom(links={"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms"}), {"src": "a", "dst": "b"},
         "topology.links: a table is not allowed: expected an array of tables: write [[topology.links]]"),
        (custom(impairments=[{"kind": "bernoulli", "link": "a-m", "probability": 0.1}]), {"src": "a", "dst": "b"},
         'topology.impairments[0].link: "a-m" is not allowed: expected a link of the custom topology: "a->m", "m->a", "slow", "slow_rev"'),
    ],
)
def test_custom_errors(topology, flow, message):
    assert error(doc(topology, flow)).startswith(message)


def test_reference_documents_every_shape_and_its_link_names():
    text = format_reference()
    for shape in ("dumbbell", "two_to_one", "parking_lot", "custom"):
        assert f'`shape = "{shape}"`' in text or f"shape = {shape!r}" in text or f'"{shape}"' in text
    for name in ("access_fwd_sender0", "bottleneck_rev", "hop1_rev", "access_rev_receiver<i>", "<name>_rev"):
        assert name in text, name


# ---- examples --------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_two_to_one_example_is_document_001_e1_3():
    core = load_scenario(EXAMPLES / "two-to-one-1G-30ms.toml")
    links = links_by_name(core)
    assert links["bottleneck"]["rate_bps"] == 10**9 and links["bottleneck"]["mtu_bytes"] == 9000
    assert links["access_fwd_sender0"]["queue"]["limit_packets"] == 100  # txqueuelen
    assert [f["cc"]["algorithm"] for f in core["flows"]] == ["highspeed", "reno"]
    assert all(f["tcp"]["mss_bytes"] == 8948 and f["tcp"]["rcv_buffer_bytes"] == 16 * 2**20 for f in core["flows"])
    assert [(f["src"], f["dst"]) for f in core["flows"]] == [(0, 3), (1, 3)]


def test_rtt_fairness_example_is_document_003_e3_9():
    core = load_scenario(EXAMPLES / "dumbbell-rtt-fairness.toml")
    links = links_by_name(core)
    assert links["bottleneck"]["queue"]["limit_packets"] == 200
    assert links["bottleneck"]["delay_ps"] == 12.5 * PS_PER_MS
    assert links["access_fwd_sender0"]["delay_ps"] == 10 * PS_PER_MS
    assert links["access_fwd_sender1"]["delay_ps"] == 40 * PS_PER_MS
    assert all(f["tcp"]["mss_bytes"] == 1000 for f in core["flows"])
    assert core["flows"][0]["cc"] == core["flows"][1]["cc"]
