"""The hosts of the reproduced documents: the bsd-4.4 profile (coarse timers), the network
driver's transmit ring, and the sending host's rate cap -- their normalization, their
errors, and one run each through the core."""

import copy

import pytest

import fatpipe
from fatpipe import ScenarioError, load_scenario
from fatpipe.scenario.network import E1000_DESCRIPTOR_BYTES, ETHERNET_HEADER_BYTES

PS_PER_MS = 10**9
PS_PER_S = 10**12

MINIMAL = {"duration": "10s", "topology": {"bottleneck_rate": "100Mbps", "rtt": "40ms"}, "flows": [{}]}


def doc(tcp=None, **topology):
    d = copy.deepcopy(MINIMAL)
    d["topology"].update(topology)
    if tcp is not None:
        d["flows"][0]["tcp"] = tcp
    return d


def error(d):
    with pytest.raises(ScenarioError) as info:
        load_scenario(d)
    assert "\n" not in str(info.value)
    return str(info.value)


# ---- bsd-4.3-reno and bsd-4.4 -----------------------------------------------------------------


@pytest.mark.parametrize("profile, eighth", [("bsd-4.3-reno", True), ("bsd-4.4", False)])
def test_bsd_profile_is_reno_on_the_rfc_stack_with_bsds_timers(profile, eighth):
    flow = load_scenario(doc(tcp={"profile": profile}))["flows"][0]
    tcp = flow["tcp"]
    # BSD's growth in bytes; 4.3BSD-Reno's eighth of a segment per ACK (tcp_input.c 7.23 to
    # 8.6), gone in 4.4BSD-Lite2 (8.7 on).
    assert flow["cc"] == {"algorithm": "reno", "a": 1.0, "b": 0.5, "byte_counting": False, "variant": "bsd",
                          "eighth": eighth}
    # tcp_timer.c TCPT_REXMT halves min(snd_wnd, snd_cwnd) at every expiry.
    assert tcp["ssthresh_every_timeout"] and tcp["bsd_window"]
    assert (tcp["stack"], tcp["recovery"], tcp["rto_estimator"]) == ("rfc", "reno", "bsd")
    # 4.4BSD: PR_SLOWHZ 2, PR_FASTHZ 5, TCPTV_MIN 2 ticks, TCPTV_REXMTMAX 128 ticks, a first
    # timeout of 12 ticks, one-segment initial window, no SACK, D-SACK or limited transmit.
    assert (tcp["slow_timer_ps"], tcp["fast_timer_ps"]) == (500 * PS_PER_MS, 200 * PS_PER_MS)
    assert (tcp["min_rto_ps"], tcp["max_rto_ps"], tcp["initial_rto_ps"]) == (PS_PER_S, 64 * PS_PER_S, 6 * PS_PER_S)
    assert tcp["initial_window_segments"] == 1
    assert not (tcp["dsack"] or tcp["fack"] or tcp["limited_transmit"])


def test_other_profiles_keep_exact_timers_and_their_rto_bounds():
    for profile in ("linux", "linux-2.4", "rfc"):
        flow = load_scenario(doc(tcp={"profile": profile}))["flows"][0]
        tcp = flow["tcp"]
        assert not tcp["bsd_window"] and flow["cc"].get("variant", "rfc") != "bsd", profile
        assert (tcp["slow_timer_ps"], tcp["fast_timer_ps"]) == (None, None), profile
        assert (tcp["min_rto_ps"], tcp["max_rto_ps"], tcp["initial_rto_ps"]) == (
            200 * PS_PER_MS, 120 * PS_PER_S, PS_PER_S), profile


def test_a_flow_overrides_a_bsd_member():
    tcp = load_scenario(doc(tcp={"profile": "bsd-4.4", "fast_timer": "100ms", "min_rto": "500ms"}))["flows"][0]["tcp"]
    assert (tcp["fast_timer_ps"], tcp["min_rto_ps"]) == (100 * PS_PER_MS, 500 * PS_PER_MS)


@pytest.mark.parametrize("tcp, message", [
    ({"profile": "linux", "rto_estimator": "bsd"},
     'flows[0].tcp.rto_estimator: "bsd" is not allowed with profile = "linux": BSD\'s timers run on the RFC stack; '
     'set profile = "bsd-4.3-reno" or "bsd-4.4" (or "rfc")'),
    ({"profile": "rfc", "slow_timer": "500ms"},
     'flows[0].tcp.slow_timer: not allowed with rto_estimator = "rfc6298": the slow timer is BSD\'s retransmission '
     'clock; set rto_estimator = "bsd"'),
    ({"profile": "rfc", "rto_estimator": "bsd"},
     'flows[0].tcp.slow_timer: missing; required with rto_estimator = "bsd" (4.4BSD: "500ms")'),
    ({"profile": "bsd-4.4", "min_rto": "80s"},
     "flows[0].tcp.min_rto: 80s is not allowed: must be at most max_rto (64s)"),
    ({"profile": "bsd-4.4", "fast_timer": "0s"},
     'flows[0].tcp.fast_timer: "0s" is not allowed: must be positive, such as "200ms"'),
])
def test_bsd_timer_errors(tcp, message):
    assert error(doc(tcp=tcp)) == message


@pytest.mark.parametrize("cc, message", [
    ({"algorithm": "reno", "variant": "bsd", "a": 2},
     'flows[0].cc.a: 2.0 is not allowed with variant = "bsd": BSD adds one segment per window of ACKs (a = 1)'),
    ({"algorithm": "reno", "variant": "bsd", "byte_counting": True},
     'flows[0].cc.byte_counting: true is not allowed with variant = "bsd": BSD opens the window per ACK'),
    ({"algorithm": "reno", "eighth": True},
     'flows[0].cc.eighth: not used with variant = "rfc"; only with variant = "bsd"'),
])
def test_bsd_growth_errors(cc, message):
    d = doc(tcp={"profile": "rfc", "recovery": "reno"})
    d["flows"][0]["cc"] = cc
    assert error(d) == message


def test_a_flow_on_bsd_4_3_reno_may_turn_the_eighth_off():
    d = doc(tcp={"profile": "bsd-4.3-reno", "recovery": "reno"})
    d["flows"][0]["cc"] = {"algorithm": "reno", "eighth": False}
    assert load_scenario(d)["flows"][0]["cc"]["eighth"] is False


def test_bsd_timeouts_come_on_slow_ticks_through_the_core():
    # Everything is lost from 2 s to 12 s: the retransmissions in between are the timer's,
    # each on a 500 ms tick of the run's clock.
    d = doc(tcp={"profile": "bsd-4.4"})
    d["duration"] = "15s"
    d["topology"]["impairments"] = [{"link": "bottleneck", "kind": "outage", "start": "2s", "duration": "10s"}]
    d["output"] = {"capture": ["sender"], "plots": False}
    result = fatpipe.run(d)
    flow = result.summary["flows"][0]
    assert flow["timeouts"] >= 2
    from fatpipe.pcap import read_capture

    packets = read_capture(result, "sender")
    # A data segment the sender sends inside the outage (after the first RTT of it) is a
    # retransmission by the timer: a whole number of 500 ms ticks (pcap time in ns).
    sent_ns = (packets["time_s"] * 1e9).round().astype("int64")
    inside = packets[(packets["payload_bytes"] > 0) & (sent_ns > 2_100_000_000) & (sent_ns < 12_000_000_000)]
    times = sent_ns[inside.index].tolist()
    assert len(times) >= 2, "the timer retransmitted during the outage"
    assert all(t % 500_000_000 == 0 for t in times), times


# ---- transmit ring ------------------------------------------------------------------------------


def test_the_ring_goes_on_every_link_leaving_a_host():
    links = {link["name"]: link for link in load_scenario(doc(tx_ring=256, txqueuelen=100))["links"]}
    ring = {"descriptors": 256, "descriptor_bytes": E1000_DESCRIPTOR_BYTES}
    assert links["access_fwd_sender"]["tx_ring"] == ring
    assert links["access_rev_receiver"]["tx_ring"] == ring
    for name in ("bottleneck", "bottleneck_rev", "access_fwd_receiver", "access_rev_sender"):
        assert "tx_ring" not in links[name], name
    assert "tx_ring" not in load_scenario(doc())["links"][0], "no ring unless asked"


def test_the_core_and_python_agree_on_the_ethernet_header_in_a_descriptor():
    # tx_ring.rs ETHERNET_HEADER_BYTES: a 9000-byte packet is a 9014-byte frame, 3 descriptors.
    assert ETHERNET_HEADER_BYTES == 14
    message = error(doc(tx_ring=2, mtu=9000))
    assert message == ("topology.tx_ring: 2 is not allowed: a full-size frame (MTU 9000 + 14 bytes) takes 3 "
                       "descriptors of 4096 bytes, so at least 3 are needed")


def test_two_to_one_senders_get_the_ring():
    d = {"duration": "1s", "topology": {"shape": "two_to_one", "bottleneck_rate": "1Gbps", "rtt": "30ms",
                                        "tx_ring": 512, "tx_descriptor_bytes": "2KiB"},
         "flows": [{"pair": 0}]}
    links = {link["name"]: link for link in load_scenario(d)["links"]}
    assert links["access_fwd_sender1"]["tx_ring"] == {"descriptors": 512, "descriptor_bytes": 2048}


# ---- send-rate cap ------------------------------------------------------------------------------


def test_a_capped_sender_stays_under_its_cap():
    d = doc(tcp={"max_send_rate": "20Mbps", "profile": "rfc"})
    d["output"] = {"plots": False}
    flow = fatpipe.run(d).summary["flows"][0]
    # 20 Mb/s of 1500-byte IP packets carry 20 x 1448 / 1500 Mb/s of payload.
    assert 0.9 * 20e6 * 1448 / 1500 < flow["goodput_bps"] <= 20e6 * 1448 / 1500
    assert flow["segments_retransmitted"] == 0


def test_fatpipe_algorithms_lists_bsd_4_3_reno_with_every_member_and_its_source():
    from fatpipe.scenario.profiles import PROFILES, format_profiles

    text = format_profiles()
    profile = PROFILES["bsd-4.3-reno"]
    sources = next(line for line in text.splitlines() if line.startswith("- `bsd-4.3-reno`: cc reno:"))
    for key, member in profile.tcp.items():
        assert f"{key} " in sources and member.source in sources, key
    for key, member in profile.cc["reno"].items():
        assert f"reno {key} " in sources and member.source in sources, key
    assert "tcp_input.c 7.25" in sources and "line 932" in sources
