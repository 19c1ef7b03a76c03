"""profile = "ns2": ns-2's one-way Agent/TCP and TCPSink (tcl/lib/ns-default.tcl, tcp.cc),
the simulator of document 003."""

from __future__ import annotations

import pytest

import fatpipe
from fatpipe.scenario import load_scenario
PS_PER_MS = 10**9
PS_PER_S = 10**12


def _doc(**tcp):
    return {
        "duration": "3s",
        "topology": {"bottleneck_rate": "10Mbps", "rtt": "25ms", "access_rate": "1Gbps", "framing_bytes": 0,
                     "queue": {"discipline": "droptail", "limit_packets": 200}},
        "flows": [{"name": "f", "cc": "reno", "tcp": {"profile": "ns2", "mss": 1000, **tcp}}],
        "output": {"plots": False},
    }


def test_ns2_members_are_ns_default_tcl():
    tcp = load_scenario(_doc())["flows"][0]["tcp"]
    assert (tcp["stack"], tcp["recovery"]) == ("rfc", "reno")
    # TCPSink ACKs every packet; no timestamps (so 40 header bytes: 1040 on the wire).
    assert tcp["delayed_ack"] is False and tcp["timestamps"] is False
    # windowInit_ 2 after the SYN (syn_, delay_growth_); singledup_ 1: limited transmit.
    assert tcp["initial_window_segments"] == 2 and tcp["handshake"] is True and tcp["limited_transmit"] is True
    # tcpTick_ 0.01 with BSD's estimator; minrto_ 0.2, maxrto_ 60, rtxcur_init_ 3.0.
    assert (tcp["rto_estimator"], tcp["slow_timer_ps"]) == ("bsd", 10 * PS_PER_MS)
    assert (tcp["min_rto_ps"], tcp["max_rto_ps"], tcp["initial_rto_ps"]) == (200 * PS_PER_MS, 60 * PS_PER_S, 3 * PS_PER_S)
    assert not (tcp["dsack"] or tcp["fack"])
    # newreno_changes1_ 1: the Impatient NewReno; TcpAgent::timeout halves on every expiry;
    # bug_fix_: Reno's fast retransmits are guarded by recover_.
    assert tcp["newreno_impatient"] is True and tcp["ssthresh_every_timeout"] is True
    assert tcp["reno_recover_guard"] is True
    # Agent/TCP/Sack1's recovery (tcp-sack1.cc) for the sack preset.
    assert tcp["sack_variant"] == "sack1"


@pytest.mark.parametrize("preset, recovery", [("tahoe", "tahoe"), ("reno", "reno"), ("newreno", "newreno"),
                                              ("sack", "sack")])
def test_ns2_agents_map_to_the_rfc_recoveries(preset, recovery):
    doc = _doc()
    doc["flows"][0]["cc"] = preset
    assert load_scenario(doc)["flows"][0]["tcp"]["recovery"] == recovery


def test_a_flow_overrides_an_ns2_member_and_other_profiles_keep_theirs():
    tcp = load_scenario(_doc(delayed_ack=True, timestamps=True))["flows"][0]["tcp"]
    assert tcp["delayed_ack"] and tcp["timestamps"]
    # Another estimator drops the profile's tick (it clocks BSD's estimator only).
    tcp = load_scenario(_doc(rto_estimator="rfc6298"))["flows"][0]["tcp"]
    assert (tcp["rto_estimator"], tcp["slow_timer_ps"]) == ("rfc6298", None)
    for profile in ("linux", "linux-2.4", "rfc", "bsd-4.3-reno", "bsd-4.4"):
        doc = _doc(profile=profile)
        doc["flows"][0]["cc"] = "newreno"
        tcp = load_scenario(doc)["flows"][0]["tcp"]
        assert tcp["delayed_ack"] is True and tcp["timestamps"] is True, profile
        assert tcp["handshake"] is False, profile
        assert not (tcp["newreno_impatient"] or tcp["reno_recover_guard"]), profile
        # BSD's tcp_timers halves at every expiry too (tcp_timer.c 7.18 TCPT_REXMT).
        assert tcp["ssthresh_every_timeout"] is profile.startswith("bsd"), profile
        assert tcp["sack_variant"] == "rfc6675", profile


@pytest.mark.parametrize("key, value", [("newreno_impatient", True), ("ssthresh_every_timeout", True),
                                        ("bsd_window", True), ("reno_recover_guard", True), ("sack_variant", "sack1")])
def test_the_rfc_stacks_recovery_members_are_refused_on_the_linux_stack(key, value):
    doc = _doc(profile="linux", **{key: value})
    doc["flows"][0]["cc"] = "newreno"
    with pytest.raises(fatpipe.ScenarioError) as err:
        load_scenario(doc)
    assert str(err.value).startswith(f"flows[0].tcp.{key}: not allowed with profile = \"linux\"")


def test_ns2_packets_are_1040_bytes_and_every_packet_is_acked():
    # ns-2's window_ counts packets: window_ 50 is a 50,000-byte receive window, which a
    # 200-packet queue holds: no loss, and one ACK per data packet.
    result = fatpipe.run(_doc(rcv_buffer=50 * 1000))
    flow = result.summary["flows"][0]
    link = next(x for x in result.summary["links"] if x["name"] == "bottleneck")
    assert flow["data_packets_lost"] == 0
    # (less the window still in flight at the end; delayed ACKs would halve it)
    assert flow["segments_sent"] - 50 <= flow["acks_sent"] <= flow["segments_sent"]
    # 1000 payload bytes + 40 of IP/TCP headers (ns-2 useHeaders_, tcpip_base_hdr_size_).
    assert flow["bytes_sent"] == 1000 * flow["segments_sent"]
    # The bottleneck is busy 1040 x 8 / 10 Mb/s per packet (ns-2 links add no framing).
    assert link["busy_ps"] / 1e12 == pytest.approx(flow["segments_sent"] * 1040 * 8 / 10e6, rel=0.01)
