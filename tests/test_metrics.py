"""docs/metrics.md's measures (issue 5, acceptance 3): known inputs, closed forms, and the
reference run's own cwnd series."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import fatpipe
from fatpipe.metrics import (
    fairness,
    fairness_deviation,
    jain_index,
    recovery_events,
    regain,
    regain_time,
    throughput_ratio,
    utilization_estimate,
)


def test_jain_index_of_known_inputs():
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)  # one takes all: 1/n
    # (1+2+3)^2 / (3 * (1+4+9)) = 36/42
    assert jain_index([1, 2, 3]) == pytest.approx(36 / 42)
    assert math.isnan(jain_index([]))
    assert math.isnan(jain_index([0, 0]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        jain_index([1, -1])


def test_ratio_deviation_and_estimate():
    assert throughput_ratio(500, 250) == 2.0
    assert throughput_ratio(1, 0) == math.inf and math.isnan(throughput_ratio(0, 0))
    # Document 002: (fastest - slowest) / fastest.
    assert fairness_deviation([10, 8, 9]) == pytest.approx(0.2)
    # Document 002 section 5.6: flows x slowest, a lower bound.
    assert utilization_estimate([10e6, 12e6, 14e6, 20e6], 44.736e6) == pytest.approx(40e6 / 44.736e6)
    f = fairness([10e6, 10e6], 40e6)
    assert f["jain_index"] == pytest.approx(1) and f["deviation"] == 0 and f["utilization_estimate"] == 0.5


def test_window_limited_goodput_and_utilization_match_window_over_rtt():
    # 45 segments of 1448 bytes (65,160 bytes, within a 64 KiB window without scaling),
    # an ACK per segment, 70 ms RTT, 100 Mb/s: the flow sends one window per RTT.
    result = fatpipe.run(
        {
            "duration": "20s",
            "topology": {"shape": "dumbbell", "bottleneck_rate": "100Mbps", "rtt": "70ms"},
            "flows": [{"name": "w", "cc": "reno", "tcp": {"profile": "rfc", "rcv_buffer": "65535B", "window_scaling": False, "delayed_ack": False}}],
            "output": {"plots": False},
        }
    )
    flow = result.summary["flows"][0]
    segments = 65535 // 1448
    # The RTT seen by a window: propagation plus one window's serialization at 100 Mb/s on
    # the bottleneck is hidden behind the RTT except for the first packet's: a few percent.
    expected_bps = segments * 1448 * 8 / 0.070
    assert flow["goodput_bps"] == pytest.approx(expected_bps, rel=0.01)
    wire_bytes = 1448 + 52 + 38  # payload + IP/TCP/timestamps + Ethernet framing
    link = result.summary["fairness"]
    assert link["link"] == "bottleneck"
    assert link["utilization"] == pytest.approx(segments * wire_bytes * 8 / 0.070 / 100e6, rel=0.01)
    # Transmitted counts the last window, still in flight at the end, too: 65 kB of 18 MB.
    assert flow["transmitted_throughput_bps"] == pytest.approx(flow["goodput_bps"], rel=0.005)
    assert flow["transmitted_throughput_bps"] > flow["goodput_bps"]
    assert math.isnan(result.flows.loc[0, "slow_start_loss_rate"]) or flow["slow_start_loss_rate"] == 0


@pytest.fixture(scope="module")
def reference():
    return fatpipe.run(Path(__file__).resolve().parent.parent / "examples" / "reno-100M-40ms.toml")


def test_reference_slow_start_matches_its_cwnd_series(reference):
    flow = reference.summary["flows"][0]
    series = reference.flow_series
    end_s = flow["slow_start_duration_s"]
    assert flow["first_send_ps"] == 0 and 0.3 < end_s < 1.0
    before = series[series["time_s"] < end_s]
    after = series[series["time_s"] > end_s]
    # Before the end cwnd only grows and ssthresh is unset; the first sample after shows
    # the cut: ssthresh set and cwnd below the last slow-start sample.
    assert np.all(np.diff(before["cwnd_segments"]) >= 0)
    assert before["ssthresh_segments"].isna().all()
    assert not math.isnan(after["ssthresh_segments"].iloc[0])
    assert after["cwnd_segments"].iloc[0] < before["cwnd_segments"].iloc[-1]
    # Linux's slow start grows cwnd by every segment an ACK covers (tcp_slow_start with
    # acked_sacked; the linux profile's Reno counts segments), so even with delayed ACKs it
    # doubles per RTT: from IW 10 to the loss detection's cwnd takes about 1 + log2(W / 10)
    # RTTs, plus the RTT the loss takes to show.
    w = flow["first_loss_cwnd_segments"]
    predicted_s = 0.040 * (1 + math.log(w / 10, 2))
    assert end_s == pytest.approx(predicted_s, abs=0.080)
    # Loss rate in slow start: document 003's packets lost / packets sent in slow start. The
    # sender sends about 2 W in slow start (10 + 20 + ... + W), and of the last round what
    # the path cannot hold, W - P, is lost, where P is the BDP (500 kB in 1538-byte frames)
    # plus the queue (334 packets).
    assert flow["slow_start_loss_rate"] == pytest.approx(flow["slow_start_segments_lost"] / flow["slow_start_segments_sent"])
    pipe = 100e6 * 0.040 / 8 / 1538 + 334
    assert flow["slow_start_loss_rate"] == pytest.approx((w - pipe) / (2 * w), rel=0.15)


def test_reference_never_regains_the_slow_start_overshoot(reference):
    # The first loss comes at the slow-start overshoot (cwnd ~ 2 x BDP + queue), which a
    # one-BDP-buffer path cannot hold again: no recovery time, and the series agrees.
    # NewReno's fast recovery inflates cwnd by every duplicate ACK while it repairs the
    # overshoot's ~330 holes one per RTT, so only samples after it count: from the first
    # where cwnd is back at ssthresh.
    flow = reference.summary["flows"][0]
    series = reference.flow_series
    later = series[series["time_s"] > flow["first_loss_ps"] / 1e12]
    open_state = later[later["cwnd_segments"] <= later["ssthresh_segments"]]
    assert not open_state.empty
    after = later[later["time_s"] >= open_state["time_s"].iloc[0]]
    assert after["cwnd_segments"].max() < flow["first_loss_cwnd_segments"]
    assert math.isnan(reference.flows.loc[0, "recovery_time_s"])


def test_recovery_time_after_an_outage_matches_the_cwnd_series():
    # A Reno flow whose slow start ends at ssthresh 150 (no loss: the path holds 690
    # packets) grows in congestion avoidance to about 210 segments, loses 0.2 s of packets
    # at 5 s, times out, and climbs back in congestion avoidance.
    result = fatpipe.run(
        {
            "duration": "20s",
            "topology": {
                "shape": "dumbbell",
                "bottleneck_rate": "100Mbps",
                "rtt": "40ms",
                "impairments": [{"link": "bottleneck", "kind": "outage", "windows": [["5s", "5.2s"]]}],
            },
            "flows": [{"name": "r", "cc": "reno", "tcp": {"profile": "rfc", "initial_ssthresh": 150}}],
            "output": {"plots": False, "sample_interval": "10ms"},
        }
    )
    flow = result.summary["flows"][0]
    loss_s = flow["first_loss_ps"] / 1e12
    assert 5.0 < loss_s < 6.5 and flow["timeouts"] >= 1
    assert 180 <= flow["first_loss_cwnd_segments"] <= 250
    assert flow["slow_start_duration_s"] < 1.0 and flow["slow_start_segments_lost"] == 0
    series = result.flow_series
    later = series[series["time_s"] >= loss_s]
    for key, share in (("recovery_time_s", 1.0), ("recovery_time_95_s", 0.95)):
        t = flow[key]
        assert t > 0
        first = later[later["cwnd_segments"] >= share * flow["first_loss_cwnd_segments"]]["time_s"].iloc[0]
        # The series is sampled every 10 ms; the core's time is exact.
        assert loss_s + t == pytest.approx(first, abs=0.011)
    assert flow["recovery_time_95_s"] < flow["recovery_time_s"]
    # Congestion avoidance with delayed ACKs adds about half a segment per RTT: from
    # ssthresh = W/2 back to W takes about W/2 / 0.5 RTTs.
    w = flow["first_loss_cwnd_segments"]
    assert flow["recovery_time_s"] == pytest.approx(w * 0.040, rel=0.35)
    events = recovery_events(result, "r")
    assert len(events) >= 1
    assert events.loc[0, "recovery_s"] == pytest.approx(flow["recovery_time_s"], abs=0.25)


def test_recovery_events_unknown_flow(reference):
    with pytest.raises(KeyError, match="no flow 'x'; flows: "):
        recovery_events(reference, "x")


def test_regain_time_of_a_drawn_reno_sawtooth_is_w_over_2_rtts():
    # Reno halving at W = 100 and adding one segment per 50 ms RTT: W/2 RTTs = 2.5 s to climb
    # back, whatever the overshoot before (the first loss at cwnd 400, then a fast recovery
    # whose inflated window climbs for 10 RTTs to 900 and deflates to ssthresh 50).
    rtt, w = 0.05, 100
    t, cwnd, th = [0.0], [400.0], [math.nan]
    for k in range(10):
        t.append(0.01 + k * rtt), cwnd.append(500.0 + 40 * k), th.append(50.0)
    now = 0.6
    for _ in range(3):
        for k in range(w // 2, w + 1):
            t.append(now), cwnd.append(float(k)), th.append(50.0)
            now += rtt
    srtt = [rtt] * len(t)
    out = regain(t, cwnd, srtt, th, 0.0)
    assert out["cwnd_ceiling_segments"] == w  # not the inflated 860
    assert out["first_climb_cwnd_segments"] == w // 2
    assert out["regain_time_s"] == pytest.approx(0.6 + (w // 2 - 1) * rtt, abs=rtt)
    assert math.isnan(regain_time(t, cwnd, srtt, th, None))  # no loss, no recovery
    assert math.isnan(regain_time(t[:3], cwnd[:3], srtt[:3], th[:3], 0.0))  # no climb after the loss
    # A loss between two samples shows no fall (Westwood's slow start at 1 Gb/s, sampled
    # every 100 ms): the climb runs from the first sample after the loss.
    t2 = [0.0, 0.1, 0.2] + [0.3 + k * rtt for k in range(w // 2 + 1)] + [0.3 + (w // 2 + 1) * rtt]
    w2 = [2.0, 50.0, float(w // 2)] + [float(w // 2 + k) for k in range(w // 2 + 1)] + [float(w // 2)]
    th2 = [math.nan, math.nan] + [float(w // 2)] * (len(t2) - 2)
    out = regain(t2, w2, [rtt] * len(t2), th2, 0.15)
    assert out["first_climb_cwnd_segments"] == w // 2 and out["cwnd_ceiling_segments"] == w
    assert out["regain_time_s"] == pytest.approx(0.3 + (w // 2 - 1) * rtt - 0.15, abs=rtt)


def test_regain_time_of_a_simulated_ns2_reno_matches_its_closed_form():
    # profile ns2: no delayed ACKs, so congestion avoidance adds one segment per RTT. Slow
    # start ends at ssthresh 10 without a loss; the sawtooth then peaks at W = BDP + queue + 1
    # and halves to W/2. With RTT(w) = max(base, w x packet time) the climb from W/2 to W
    # takes the integral of RTT(w) dw: (BDP - W/2) base + (W^2 - BDP^2) / 2 x packet time,
    # plus the fast recovery's RTT at W.
    result = fatpipe.run(
        {
            "duration": "15s",
            "topology": {"bottleneck_rate": "10Mbps", "rtt": "25ms", "access_rate": "1Gbps",
                         "queue": {"discipline": "droptail", "limit_packets": 20}},
            "flows": [{"name": "reno", "cc": "reno", "tcp": {"profile": "ns2", "mss": 1000, "initial_ssthresh": 10}}],
            "output": {"plots": False, "sample_interval": "5ms"},
        }
    )
    flow = result.summary["flows"][0]
    packet_s = 1040 * 8 / 10e6  # 1000 bytes of payload + 40 of headers (ns-2 useHeaders_)
    bdp = 0.025 / packet_s
    w = flow["first_loss_cwnd_segments"]
    assert w == pytest.approx(bdp + 20, abs=2)
    expected = (bdp - w // 2) * 0.025 + (w * w - bdp * bdp) / 2 * packet_s + w * packet_s
    assert flow["regain_time_s"] == pytest.approx(expected, rel=0.05)
    assert result.flows.loc[0, "regain_time_s"] == flow["regain_time_s"]
    # The ceiling is the path's window: the BDP plus the queue, a segment more at the loss.
    assert flow["cwnd_ceiling_segments"] == pytest.approx(bdp + 20 + 1, abs=1.5)
    # Each climb starts from Reno's halved window.
    assert flow["first_climb_cwnd_segments"] == pytest.approx(w // 2, abs=1)
