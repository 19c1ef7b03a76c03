"""DCTCP, Accurate ECN and TCP Prague (issue 28) through `fatpipe.run`: what the physics of
each scenario fixes (DCTCP holding the queue near its marking threshold at full utilization
where CUBIC fills the buffer; an L4S flow taking most of a classic-ECN FIFO from a CUBIC
flow), and the one-line refusals of flows that cannot run them."""

from __future__ import annotations

import copy

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")

from fatpipe.scenario import ScenarioError, load_scenario  # noqa: E402

# The DCTCP paper's 1 Gb/s setting (Alizadeh et al. 2010 section 4: K = 20 packets at 1 Gb/s),
# two long flows, 1 ms RTT: C x RTT = 83 packets of 1500 bytes, so K = 20 > C x RTT / 7 = 12
# (section 3.4's guidance for full throughput).
K = 20
DCTCP = {
    "duration": "3s",
    "topology": {
        "bottleneck_rate": "1Gbps",
        "rtt": "1ms",
        "queue": {"discipline": "droptail", "limit_packets": 300, "mark_threshold": K},
    },
    "flows": [
        {"name": "a", "cc": "dctcp", "tcp": {"ecn": True}},
        {"name": "b", "cc": "dctcp", "start": "10ms", "tcp": {"ecn": True}},
    ],
    "output": {"sample_interval": "1ms", "plots": False},
}


def steady_queue(result, after_s=1.0):
    q = result.queue_series
    q = q[(q["link"] == "bottleneck") & (q["time_s"] > after_s)]
    return q["queue_packets"]


def bottleneck(result):
    return result.links.set_index("name").loc["bottleneck"]


def test_dctcp_holds_the_queue_near_k_at_full_utilization_where_cubic_fills_the_buffer():
    dctcp = fatpipe.run(copy.deepcopy(DCTCP))
    q = steady_queue(dctcp)
    link = bottleneck(dctcp)
    # The paper's analysis (section 3.3): the queue peaks at K + N = 22 packets and swings
    # by A = 1/2 sqrt(2 N (C x RTT + K)) = 10 packets; no loss, the link kept full.
    assert link["utilization"] > 0.99
    assert link["drops_packets"] == 0 and link["ecn_marks"] > 0
    assert K - 10 < q.mean() < K + 2, q.describe()
    assert q.max() <= K + 5
    assert (dctcp.flows["segments_retransmitted"] == 0).all()

    cubic = copy.deepcopy(DCTCP)
    for f in cubic["flows"]:
        f["cc"], f["tcp"]["ecn"] = "cubic", False
    cubic = fatpipe.run(cubic)
    # Loss-based: the queue stands near the 300-packet buffer and overflows.
    assert bottleneck(cubic)["drops_packets"] > 0
    assert steady_queue(cubic).mean() > 5 * q.mean()


def test_prague_takes_most_of_a_classic_ecn_fifo_from_cubic():
    # RFC 9330's classic ECN bottleneck / RFC 8257 section 5: a scalable (L4S) flow answers each mark of a
    # single classic-ECN queue far less than a classic flow, so the two share it unevenly.
    doc = {
        "duration": "10s",
        "topology": {
            "bottleneck_rate": "100Mbps",
            "rtt": "20ms",
            "queue": {"discipline": "red", "limit_packets": 500, "min_th": 50, "max_th": 150, "max_p": 0.1, "ecn": True},
        },
        "flows": [
            {"name": "prague", "cc": "prague", "tcp": {"ecn": True, "accecn": True}},
            {"name": "cubic", "cc": "cubic", "tcp": {"ecn": True}},
        ],
        "output": {"sample_interval": "10ms", "plots": False},
    }
    r = fatpipe.run(doc)
    goodput = r.flows.set_index("name")["goodput_bps"]
    assert goodput["prague"] > 4 * goodput["cubic"], goodput
    assert bottleneck(r)["utilization"] > 0.95
    assert r.flows.set_index("name").loc["prague", "ecn_echoes"] > 0


def refusal(flow_tcp, cc="dctcp", queue=None):
    doc = copy.deepcopy(DCTCP)
    doc["flows"] = [{"name": "a", "cc": cc, "tcp": flow_tcp}]
    if queue is not None:
        doc["topology"]["queue"] = queue
    with pytest.raises(ScenarioError) as info:
        load_scenario(doc)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_input_is_refused_in_one_line():
    assert refusal({}).startswith("flows[0].tcp.ecn: false is not allowed with cc \"dctcp\"")
    assert "accecn" in refusal({"ecn": True}, cc="prague")
    assert refusal({"accecn": True}).startswith("flows[0].tcp.accecn: true needs ecn = true")
    assert "Linux stack only" in refusal({"ecn": True, "profile": "rfc"})
    msg = refusal({"ecn": True}, queue={"discipline": "droptail", "limit_packets": 20, "mark_threshold": 20})
    assert "mark_threshold" in msg and "below the queue limit" in msg
