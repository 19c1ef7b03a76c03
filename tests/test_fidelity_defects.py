"""The fidelity defects an outside re-run of the documents' experiments found (issue 10),
each as the scenario that showed it, with the threshold the issue states:

1. Vegas never left a window of two segments (0.92 Mb/s on 100 Mb/s): every combination of
   initial window 1 or 2 and delayed ACKs on or off must reach 90 % utilization within 10 s.
2. RED locked flows out for tens of seconds (1.2 Mb/s against drop-tail's 9.56): the same
   path must give at least 90 % of drop-tail's goodput, and two flows with different access
   delays must both keep moving.
3. (packet by packet in crates/fatpipe-core/tests/loss_recovery.rs)
4. The seed changed nothing: with the random send delay and start jitter on, replications
   with different seeds differ and the same seed is byte-identical; off, nothing changes.
"""

import copy
import json

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")

from fatpipe.scenario import ScenarioError  # noqa: E402

# A full-size 1500-byte packet with timestamps carries 1448 payload bytes and takes 1538
# bytes on the wire with Ethernet framing (the defaults): the goodput ceiling of a link.
PAYLOAD_PER_WIRE = 1448 / 1538


def vegas(initial_window, delayed_ack, profile):
    return {
        "duration": "10s",
        "topology": {"bottleneck_rate": "100Mbps", "rtt": "25ms", "queue": {"limit_packets": 200}},
        "flows": [{
            "name": "vegas", "cc": "vegas",
            "tcp": {"delayed_ack": delayed_ack, "initial_window": initial_window, "profile": profile},
        }],
        "output": {"sample_interval": "100ms", "plots": False},
    }


@pytest.mark.parametrize("initial_window", [1, 2])
@pytest.mark.parametrize("delayed_ack", [False, True])
@pytest.mark.parametrize("profile", ["rfc", "linux"])
def test_vegas_fills_100mbps_within_10s_whatever_the_start(initial_window, delayed_ack, profile):
    # The defect was in the paper's Vegas (the rfc profile's); the linux profile runs
    # tcp_vegas.c's form, whose Reno-like slow start overshoots once before Vegas holds.
    r = fatpipe.run(vegas(initial_window, delayed_ack, profile))
    throughput = r.series("throughput_bps")["vegas"]
    ceiling = 100e6 * PAYLOAD_PER_WIRE
    # Utilization over the last second of the 10 s: before the fix 0.92 Mb/s (cwnd 2).
    last_second = throughput[throughput.index > 9.0].mean()
    assert last_second >= 0.9 * ceiling, (last_second, r.flows.iloc[0].cwnd_segments)
    if profile == "rfc":
        flow = r.flows.iloc[0]
        assert flow.segments_retransmitted == 0, "the paper's Vegas fills the path without a loss"


def test_vegas_without_timestamps_grows_one_segment_per_rtt_as_ns2_times_every_packet():
    # Document 003's path (1 Gb/s x 25 ms, 200-packet queue, ns-2's 1000-byte packets) on the
    # ns2 profile, which has no timestamps. ns-2's Vegas times every packet itself
    # (tcp-vegas.cc v_sendtime_), so in congestion avoidance, with the queue below alpha, it
    # adds a segment per RTT: 15 s / 25 ms = 600 segments from 5 s to 20 s (the queue adds at
    # most 3 packets of delay). With only the one timed segment per round trip, as the RFC
    # stack gave it before, its cwnd crept from 456 to 468 segments in 150 s.
    scenario = {
        "duration": "90s",
        "topology": {"bottleneck_rate": "1Gbps", "rtt": "25ms", "access_rate": "10Gbps", "framing_bytes": 0,
                     "queue": {"limit_packets": 200}},
        "flows": [{"name": "vegas", "cc": "vegas",
                   "tcp": {"profile": "ns2", "mss": 1000, "rcv_buffer": "100MB", "snd_buffer": "100MB"}}],
        "output": {"sample_interval": "100ms", "plots": False},
    }
    r = fatpipe.run(scenario)
    cwnd = r.series("cwnd_segments")["vegas"]
    growth = cwnd[cwnd.index <= 20.0].iloc[-1] - cwnd[cwnd.index <= 5.0].iloc[-1]
    # Samples every 100 ms (4 RTTs): an increment near either end may fall on either side.
    assert 0.9 * 600 <= growth <= 600 + 4, growth
    assert r.flows.iloc[0].segments_retransmitted == 0
    # Then it holds alpha to beta (1 to 3) packets in the queue above the path's window,
    # 1 Gb/s x 25 ms / 1040 bytes = 3005 packets, and stays there ("steady ... achieving
    # full utilization", document 003 section 4.1). A base RTT taken from the 40-byte SYN
    # stopped it at 2670: the data packets' longer serialization read as queueing.
    bdp = 1e9 * 0.025 / (1040 * 8)
    held = cwnd[(cwnd.index >= 80.0) & (cwnd.index <= 90.0)]
    assert bdp + 1 <= held.min() and held.max() <= bdp + 3 + 1, (held.min(), held.max())


def red_path(discipline, flows=None, duration="30s", rate="10Mbps", rtt="25ms", pairs=None, profile="linux"):
    """Document 003's set-up scaled down: 1000-byte packets, a 200-packet queue."""
    tcp = {
        "mss": 960, "timestamps": False, "delayed_ack": False, "initial_window": 1,
        "rcv_buffer": "64MB", "snd_buffer": "64MB", "profile": profile,
    }
    topology = {
        "bottleneck_rate": rate, "rtt": rtt, "mtu": 1000, "framing_bytes": 0,
        "queue": {"discipline": discipline, "limit_packets": 200},
    }
    if pairs:
        topology.update(pairs=len(pairs), access_delays=pairs)
    return {
        "duration": duration,
        "topology": topology,
        "flows": flows or [{"name": "sack", "cc": "sack", "tcp": tcp}],
        "output": {"sample_interval": "100ms", "plots": False},
    }


@pytest.mark.parametrize("profile", ["linux", "rfc"])
def test_red_single_flow_gets_at_least_90_percent_of_droptail(profile):
    red = fatpipe.run(red_path("red", profile=profile))
    droptail = fatpipe.run(red_path("droptail", profile=profile))
    g_red = red.flows.iloc[0].goodput_bps
    g_dt = droptail.flows.iloc[0].goodput_bps
    # Before the fix: 1.2 Mb/s against 9.56 Mb/s, the queue empty from 1 s to 26 s.
    assert g_red >= 0.9 * g_dt, (g_red, g_dt)
    if profile == "linux":
        # RACK repairs the retransmissions RED drops while its average is still high after
        # slow start; RFC 6675 (the rfc profile) can only time them out (two timeouts here).
        assert red.flows.iloc[0].timeouts == 0
    # No lock-out: after the first slow start's recovery every second carries data.
    throughput = red.series("throughput_bps")["sack"]
    per_second = throughput[throughput.index > 5.0].groupby(lambda t: int(t)).mean()
    assert per_second.min() > 0.5 * 10e6, per_second.min()


def test_red_two_flows_with_different_access_delays_both_keep_moving():
    tcp = {
        "mss": 960, "timestamps": False, "delayed_ack": False, "initial_window": 1,
        "rcv_buffer": "64MB", "snd_buffer": "64MB",
    }
    flows = [
        {"name": "near", "cc": "newreno", "pair": 0, "tcp": dict(tcp)},
        {"name": "far", "cc": "newreno", "pair": 1, "tcp": dict(tcp)},
    ]
    scenario = red_path("red", flows=flows, duration="100s", rate="5Mbps", rtt="50ms", pairs=["10ms", "20ms"])
    r = fatpipe.run(scenario)
    # Before the fix neither flow delivered anything from 0.6 s to 100 s (their goodput,
    # counted over the time they were active, still read 2.5 and 0.65 Mb/s). Now each
    # delivers a share of the link in every 10-second window.
    throughput = r.series("throughput_bps")
    for name in ("near", "far"):
        per_10s = throughput[name].groupby(lambda t: min(int(t // 10), 9)).mean()
        assert per_10s.min() > 0.05 * 5e6, (name, per_10s.round(-3).tolist())
    assert throughput[throughput.index > 1.0].sum(axis=1).mean() > 0.85 * 5e6


def two_to_one(seed, dither):
    tcp = {"rcv_buffer": "2MB", "snd_buffer": "2MB"}
    if dither:
        tcp["random_send_delay"] = "100us"
    flows = [
        {"name": "first", "pair": 0, "cc": "sack", "tcp": dict(tcp)},
        {"name": "second", "pair": 1, "cc": "sack", "tcp": dict(tcp)},
    ]
    if dither:
        for f in flows:
            f["start_jitter"] = "50ms"
    return {
        "duration": "3s",
        "seed": seed,
        "topology": {"shape": "two_to_one", "bottleneck_rate": "200Mbps", "rtt": "30ms"},
        "flows": flows,
        "output": {"sample_interval": "100ms", "plots": False},
    }


def fingerprint(result):
    summary = copy.deepcopy(result.summary)
    for key in ("wall_time_s", "fatpipe_version", "seed"):
        summary.pop(key, None)
    return json.dumps(summary, sort_keys=True, default=str)


def test_without_dither_the_seed_changes_nothing():
    # Today's deterministic runs stay as they were: no random element, no draw.
    assert fingerprint(fatpipe.run(two_to_one(1, False))) == fingerprint(fatpipe.run(two_to_one(8, False)))


def test_with_dither_seeds_differ_and_the_same_seed_repeats_byte_for_byte():
    a = fatpipe.run(two_to_one(1, True))
    again = fatpipe.run(two_to_one(1, True))
    b = fatpipe.run(two_to_one(7, True))
    assert fingerprint(a) == fingerprint(again)
    assert fingerprint(a) != fingerprint(b)
    assert a.flow_series.equals(again.flow_series)
    # The start jitter moved each flow's start within [0, 50 ms], differently per flow.
    starts = [f["start_ps"] for f in a.summary["flows"]]
    assert all(0 <= s <= 50 * 10**9 for s in starts), starts
    assert starts[0] != starts[1]


def test_random_send_delay_holds_each_send_pass_up_to_its_maximum():
    # A window-limited flow (64 KB on a 100 Mb/s x 20 ms path) sends one window per RTT.
    # A random wait of up to 10 ms before each send pass lengthens every round trip by
    # about 5 ms on average, so goodput falls by about 20 ms / 25 ms.
    def run(delay):
        tcp = {"rcv_buffer": "64KB", "snd_buffer": "64KB", "delayed_ack": False}
        if delay:
            tcp["random_send_delay"] = delay
        return fatpipe.run({
            "duration": "20s",
            "topology": {"bottleneck_rate": "100Mbps", "rtt": "20ms"},
            "flows": [{"name": "w", "cc": "reno", "tcp": tcp}],
            "output": {"plots": False},
        }).flows.iloc[0].goodput_bps

    plain, dithered = run(None), run("10ms")
    # The window goes out in several passes per RTT (ACK-clocked), each waiting, so the
    # slowdown is at least the one pass per RTT of the estimate; check the direction and a
    # loose bound on both sides.
    assert dithered < 0.9 * plain, (dithered, plain)
    assert dithered > 0.2 * plain, (dithered, plain)


@pytest.mark.parametrize("flow, message", [
    ({"start": "1s", "start_jitter": "2s"},
     "flows[0].start_jitter: 2s is not allowed: start + start_jitter (3s) must be before the end of the run (2s)"),
    ({"start": "0s", "stop": "1s", "start_jitter": "1s"},
     "flows[0].start_jitter: 1s is not allowed: start + start_jitter (1s) must be before stop (1s)"),
])
def test_start_jitter_must_leave_the_flow_time_to_run(flow, message):
    scenario = {"duration": "2s", "topology": {"bottleneck_rate": "10Mbps", "rtt": "20ms"}, "flows": [flow]}
    with pytest.raises(ScenarioError) as err:
        fatpipe.load_scenario(scenario)
    assert str(err.value) == message


def test_random_send_delay_refuses_a_negative_time():
    with pytest.raises(ScenarioError) as err:
        fatpipe.load_scenario({
            "duration": "1s",
            "topology": {"bottleneck_rate": "10Mbps", "rtt": "20ms"},
            "flows": [{"tcp": {"random_send_delay": "-1ms"}}],
        })
    assert str(err.value).startswith("flows[0].tcp.random_send_delay:")
