"""Linux 2.4's window growth, the same for every algorithm (issue 25 section 2, document 001).

Document 001's hosts ran a standard 2.4.20 kernel (Standard TCP) and 2.4.19 with the HighSpeed
and Scalable patches. Linux 2.4 called tcp_cong_avoid once per ACK of new data, so slow start
grew one segment per ACK whatever the ACK covered, and the patches kept that slow start (the
document: HighSpeed "uses the same slow start"). Kelly's Scalable patch adds one segment per
TCP_SCALABLE_AI_CNT = 50 ACKs "to account for delayed ack". A reduction without loss
(__tcp_enter_cwr, after the host's interface queue refused a segment) set ssthresh with 2.4's
tcp_recalc_ssthresh, half the window, for every algorithm (document 001 Figure 12: the
window after the back-off is equal for all three). Each test runs packets through the core on
the linux-2.4 profile and checks a closed form."""

from __future__ import annotations

import math

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")

ALGORITHMS = ("sack", "highspeed", "scalable-doc001")
RTT_S = 0.03


def back_to_back(cc, txqueuelen, duration, initial_ssthresh=None):
    """Document 001's back-to-back with 30 ms of delay (jumbo frames, iperf -w 16M on 2.4),
    without the ten-run dither, so that runs differ only by the algorithm."""
    tcp = {"profile": "linux-2.4", "rcv_buffer": "12MiB", "snd_buffer": "16MiB"}
    if initial_ssthresh is not None:
        tcp["initial_ssthresh"] = initial_ssthresh
    doc = {
        "duration": duration,
        "topology": {"bottleneck_rate": "1Gbps", "rtt": "30ms", "access_rate": "1Gbps", "mtu": 9000,
                     "txqueuelen": txqueuelen, "tx_ring": 256},
        "flows": [{"name": "flow", "cc": cc, "tcp": tcp}],
        "output": {"sample_interval": "10ms", "plots": False},
    }
    return fatpipe.run(doc)


def cwnd_series(result):
    return result.flow_series.set_index("time_s")["cwnd_segments"]


def test_highspeed_and_scalable_slow_start_as_standard_tcp_one_segment_per_ack():
    # A long interface queue: nothing but slow start for 0.4 s (BDP is 416 jumbo segments).
    series = {cc: cwnd_series(back_to_back(cc, 10_000, "0.4s")) for cc in ALGORITHMS}
    for cc in ALGORITHMS[1:]:
        assert list(series[cc]) == list(series["sack"]), f"{cc} slow-starts unlike Standard TCP"
    # One segment per ACK with an ACK per two segments: x1.5 per round trip (byte counting
    # would double it: 256 segments at 0.24 s where Standard has 28).
    std = series["sack"]
    for t in (0.18, 0.24, 0.3):
        ratio = std.loc[round(t + RTT_S, 2)] / std.loc[t]
        assert 1.4 <= ratio <= 1.6, f"x{ratio:.2f} per RTT at {t} s"


def test_scalable_grows_one_segment_per_50_acks_one_percent_per_round_trip():
    # Congestion avoidance from 100 segments, below the path's 416: no loss, no back-off.
    result = back_to_back("scalable-doc001", 10_000, "1.5s", initial_ssthresh=100)
    flow = result.flows.iloc[0]
    assert flow["segments_retransmitted"] == 0 and flow["cwr_entries"] == 0
    cwnd = cwnd_series(result)
    # Delayed ACKs: cwnd / 2 ACKs per RTT, one segment per 50 of them: cwnd / 100, 1 % per RTT
    # (a = 1/50 per segment would give 2 %). The RTT is 30 ms plus a jumbo frame's 72 us.
    rounds = (1.4 - 0.5) / (RTT_S + 72e-6)
    per_rtt = math.log(cwnd.loc[1.4] / cwnd.loc[0.5]) / rounds
    assert 0.008 <= per_rtt <= 0.012, f"{per_rtt:.4f} per RTT"


def test_the_window_after_a_local_back_off_is_equal_for_the_three_algorithms():
    # txqueuelen 100: the interface queue refuses a segment at the end of slow start and
    # tcp_enter_cwr halves ssthresh for each (HighSpeed's b(w) at ~600 segments would keep
    # 0.66 of it, Scalable's 7/8).
    after = {}
    for cc in ALGORITHMS:
        result = back_to_back(cc, 100, "0.7s")
        flow = result.flows.iloc[0]
        assert flow["cwr_entries"] >= 1 and flow["segments_retransmitted"] == 0, cc
        series = result.flow_series
        cut = series[series["ssthresh_segments"].notna()].iloc[0]
        before = series[series["time_s"] < cut["time_s"]]["cwnd_segments"].iloc[-1]
        after[cc] = cut["ssthresh_segments"]
        assert after[cc] == pytest.approx(before / 2, abs=40), f"{cc}: ssthresh {after[cc]} after cwnd {before}"
    assert after["highspeed"] == after["sack"] and after["scalable-doc001"] == after["sack"], after


def test_a_fresh_connection_starts_at_two_segments_and_grows_one_per_ack():
    """Linux 2.4's tcp_v4_init_sock sets snd_cwnd = 2, and tcp_init_metrics replaces it only
    when the route cache holds an RTT for the destination (2.4.27 tcp_input.c): a fresh
    connection sends 2 segments of 1448 bytes in its first round trip, not RFC 3390's 3. The
    one delayed ACK that covers them adds one segment (one per ACK in 2.4's slow start)."""
    r = fatpipe.run({"duration": "0.35s", "output": {"sample_interval": "10ms"},
                     "topology": {"bottleneck_rate": "100Mbps", "rtt": "100ms"},
                     "flows": [{"tcp": {"profile": "linux-2.4"}}]})
    mss = r.scenario["flows"][0]["tcp"]["mss_bytes"]
    s = r.flow_series
    first_rtt = s[s["time_s"] < 0.095]
    assert set(first_rtt["cwnd_bytes"]) == {2 * mss}
    assert first_rtt["sent_bytes"].max() == 2 * mss
    second_rtt = s[(s["time_s"] > 0.115) & (s["time_s"] < 0.195)]
    assert set(second_rtt["cwnd_bytes"]) == {3 * mss}
