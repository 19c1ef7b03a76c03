"""The new topology shapes through `fatpipe.run` with the compiled core: who gets what
share, and RTTs that match the configured delays."""

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")

PS_PER_MS = 10**9
WIRE_BYTES = 1500 + 38  # full-size packet with Ethernet framing (the default)


def flows_by_name(result):
    return {f["name"]: f for f in result.summary["flows"]}


def delivered_bits_per_s(result, flow, t0, t1):
    fs = result.flow_series
    d = fs[fs["flow"] == flow].set_index("time_s")["delivered_bytes"]
    return (d.loc[t1] - d.loc[t0]) * 8 / (t1 - t0)


def test_dumbbell_longer_rtt_pair_gets_less_throughput():
    """Document 003 E3.9: the same algorithm on both pairs, access delay 0 vs 20 ms, so RTTs
    of 40 and 80 ms; the longer-RTT flow gets less."""
    result = fatpipe.run({
        "duration": "60s",
        "topology": {"bottleneck_rate": "20Mbps", "rtt": "40ms", "pairs": 2, "access_delays": ["0ms", "20ms"]},
        "flows": [{"name": "short", "pair": 0}, {"name": "long", "pair": 1}],
        "output": {"plots": False},
    })
    flows = flows_by_name(result)
    short = delivered_bits_per_s(result, "short", 10.0, 60.0)
    long = delivered_bits_per_s(result, "long", 10.0, 60.0)
    assert long < 0.8 * short, (long, short)
    # Minimum RTTs: the propagation delays (40 and 80 ms) plus transmission times (a full
    # packet takes 0.6 ms on 20 Mb/s), so within 1.5 ms above them; they differ by 2 x 20 ms.
    short_min, long_min = flows["short"]["min_rtt_ps"], flows["long"]["min_rtt_ps"]
    assert 40 * PS_PER_MS <= short_min < 41.5 * PS_PER_MS, short_min
    assert 80 * PS_PER_MS <= long_min < 81.5 * PS_PER_MS, long_min
    # (a sample may include a little of the other flow's queue: the margin covers it)
    assert abs((long_min - short_min) - 40 * PS_PER_MS) < 1.0 * PS_PER_MS
    # Smoothed RTTs share the bottleneck's queueing delay on top: long exceeds short by about
    # the extra propagation delay.
    srtt = result.flow_series.groupby("flow")["srtt_s"].median()
    assert srtt["short"] >= 0.040 and srtt["long"] >= 0.080
    assert 0.030 < srtt["long"] - srtt["short"] < 0.050, srtt


def test_two_to_one_flows_share_the_bottleneck_and_fill_it():
    result = fatpipe.run({
        "duration": "30s",
        "topology": {"shape": "two_to_one", "bottleneck_rate": "100Mbps", "rtt": "30ms"},
        "flows": [{"name": "a", "pair": 0}, {"name": "b", "pair": 1}],
        "output": {"plots": False},
    })
    payload_rate_bps = 100e6 * 1448 / WIRE_BYTES
    a = delivered_bits_per_s(result, "a", 10.0, 30.0)
    b = delivered_bits_per_s(result, "b", 10.0, 30.0)
    assert a > 0.1 * payload_rate_bps and b > 0.1 * payload_rate_bps, (a, b)
    assert a + b >= 0.9 * payload_rate_bps, (a, b, payload_rate_bps)
    links = {link["name"]: link for link in result.summary["links"]}
    # Both senders' data crossed the one bottleneck link.
    assert links["access_fwd_sender0"]["packets_sent"] > 0 and links["access_fwd_sender1"]["packets_sent"] > 0
    assert links["bottleneck"]["packets_sent"] >= (
        links["access_fwd_sender0"]["packets_sent"] + links["access_fwd_sender1"]["packets_sent"]
        - 2 * 2500  # at most a full bottleneck queue (1 BDP = 2500 packets) still waiting
    ) - links["bottleneck"]["drops_packets"]


def test_custom_chain_min_rtt_is_twice_the_link_delays():
    result = fatpipe.run({
        "duration": "5s",
        "topology": {
            "shape": "custom",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "m", "kind": "router"}, {"name": "b", "kind": "host"}],
            "links": [
                {"from": "a", "to": "m", "rate": "1Gbps", "delay": "3ms"},
                {"from": "m", "to": "b", "rate": "100Mbps", "delay": "7ms", "queue": {"limit_packets": 100}},
            ],
        },
        "flows": [{"name": "a2b", "src": "a", "dst": "b"}],
        "output": {"plots": False},
    })
    flow = flows_by_name(result)["a2b"]
    assert flow["bytes_delivered"] > 0
    # 2 x (3 + 7) ms, plus the transmission of a data packet (1538 B: 12.3 us at 1 Gb/s,
    # 123 us at 100 Mb/s) and of an ACK: well under 0.3 ms.
    assert 20 * PS_PER_MS <= flow["min_rtt_ps"] < 20.3 * PS_PER_MS, flow["min_rtt_ps"]
    links = {link["name"]: link for link in result.summary["links"]}
    assert set(links) == {"a->m", "m->a", "m->b", "b->m"}
    assert links["b->m"]["packets_sent"] > 0  # ACKs took the reverse links


def test_parking_lot_long_flow_gets_less_than_cross_traffic():
    result = fatpipe.run({
        "duration": "30s",
        "topology": {"shape": "parking_lot", "hops": 2, "bottleneck_rate": "20Mbps", "hop_delay": "10ms"},
        "flows": [{"name": f"p{i}", "pair": i} for i in range(3)],
        "output": {"plots": False},
    })
    rates = {f"p{i}": delivered_bits_per_s(result, f"p{i}", 10.0, 30.0) for i in range(3)}
    assert 0 < rates["p0"] < min(rates["p1"], rates["p2"]), rates
    flows = flows_by_name(result)
    # Two hops of 10 ms each way for the long flow, one for the cross flows (plus 0.6 ms to
    # send a packet on each 20 Mb/s hop, and whatever queue the first samples met).
    assert 40 * PS_PER_MS <= flows["p0"]["min_rtt_ps"] < 43 * PS_PER_MS
    assert 20 * PS_PER_MS <= flows["p1"]["min_rtt_ps"] < 21.5 * PS_PER_MS
