"""Explicit routes in custom topologies (issue 4: "shortest path by default, explicit paths
allowed")."""

from __future__ import annotations

import pytest

import fatpipe
from fatpipe.scenario import ScenarioError


def diamond(routes):
    # h1 - r1 - r2 - h2 directly (3 hops), or h1 - r1 - r3 - r2 - h2 (4 hops, slower).
    return {
        "duration": "2s",
        "topology": {
            "shape": "custom",
            "nodes": [{"name": n, "kind": k} for n, k in
                      [("h1", "host"), ("r1", "router"), ("r2", "router"), ("r3", "router"), ("h2", "host")]],
            "links": [
                {"from": "h1", "to": "r1", "rate": "1Gbps", "delay": "1ms"},
                {"from": "r1", "to": "r2", "rate": "100Mbps", "delay": "10ms", "name": "direct"},
                {"from": "r1", "to": "r3", "rate": "100Mbps", "delay": "20ms", "name": "detour1"},
                {"from": "r3", "to": "r2", "rate": "100Mbps", "delay": "20ms", "name": "detour2"},
                {"from": "r2", "to": "h2", "rate": "1Gbps", "delay": "1ms"},
            ],
            "routes": routes,
        },
        "flows": [{"name": "f", "src": "h1", "dst": "h2", "cc": "reno", "tcp": {"profile": "rfc"}}],
        "output": {"plots": False},
    }


def sent(result, name):
    return next(link["packets_sent"] for link in result.summary["links"] if link["name"] == name)


def test_shortest_path_by_default_and_an_explicit_route_when_given():
    plain = fatpipe.run(diamond([]))
    assert sent(plain, "direct") > 1000 and sent(plain, "detour1") == 0
    routed = fatpipe.run(diamond([{"path": ["h1", "r1", "r3", "r2", "h2"]}]))
    # Data takes the detour; ACKs (no route given back) keep the direct way.
    assert sent(routed, "direct") == 0 and sent(routed, "detour1") == sent(routed, "detour2") > 1000
    assert sent(routed, "direct_rev") > 1000 and sent(routed, "detour1_rev") == 0
    # The detour adds 2 x 20 ms - 10 ms one way: the RTT grows by 30 ms.
    rtt = {r: res.summary["flows"][0]["min_rtt_ps"] / 1e9 for r, res in (("plain", plain), ("routed", routed))}
    assert rtt["routed"] - rtt["plain"] == pytest.approx(30.0, abs=0.5)


@pytest.mark.parametrize(
    "routes, message",
    [
        ([{"path": ["h1", "r3"]}], 'topology.routes[0].path: ["h1", "r3"] is not allowed: no link from "h1" to "r3"'),
        ([{"path": ["h1", "zz"]}], 'topology.routes[0].path: "zz" is not allowed: expected a node of [[topology.nodes]]'),
        ([{"path": ["h1"]}], "topology.routes[0].path: "),
    ],
)
def test_bad_routes(routes, message):
    with pytest.raises(ScenarioError) as err:
        fatpipe.load_scenario(diamond(routes))
    assert str(err.value).startswith(message), str(err.value)
