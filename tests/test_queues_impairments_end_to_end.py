"""RED, buffer cells and impairments through `fatpipe.run` with the compiled core: each
test checks a number the configuration determines (a loss fraction, an exact drop count, a
queue bound), so a wrong unit or a lost key in the Python layer shows up as a wrong number.
"""

from pathlib import Path

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")


PS_PER_MS = 10**9
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ETHERNET_WIRE_BYTES = 1500 + 38  # a full-size packet with Ethernet framing (the default)


def window_limited(duration, impairments, rtt="20ms", sample_interval="100ms"):
    """One flow at 100 Mb/s limited by a 200 KB receive window: no congestion window
    (document 000's NOCC), so losses do not slow it down, and the window is below the
    path's BDP plus its one-BDP queue, so the queue never overflows."""
    return {
        "duration": duration,
        "topology": {"bottleneck_rate": "100Mbps", "rtt": rtt, "impairments": impairments},
        "flows": [{"name": "w", "cc": "nocc", "tcp": {"rcv_buffer": "200KB"}}],
        "output": {"sample_interval": sample_interval, "plots": False},
    }


def bottleneck(result):
    return next(link for link in result.summary["links"] if link["name"] == "bottleneck")


def offered_packets(result, link_name):
    """Packets that entered the link: transmitted, still queued at the end, or dropped.
    (The one in transmission at the end is already counted in packets_sent.)"""
    link = next(link for link in result.summary["links"] if link["name"] == link_name)
    qs = result.queue_series
    queued_at_end = int(qs[qs["link"] == link_name]["queue_packets"].iloc[-1])
    return link["packets_sent"] + queued_at_end + link["total_drops_packets"]


def test_bernoulli_loss_fraction_matches_the_probability():
    p = 0.01
    r = fatpipe.run(window_limited("30s", [{"link": "bottleneck", "kind": "bernoulli", "probability": p}]))
    b = bottleneck(r)
    assert b["drops_packets"] == 0 and b["early_drops_packets"] == 0 and b["outage_drops_packets"] == 0
    # The forward bottleneck carries only the flow's data segments (ACKs take bottleneck_rev).
    offered = offered_packets(r, "bottleneck")
    assert offered >= 50_000, offered
    fraction = b["impairment_drops_packets"] / offered
    # 30 s measured 122,392 packets and 1,214 losses (0.00992); the binomial standard
    # deviation at this size is 2.9% of p, so 10% is more than three of them.
    assert abs(fraction / p - 1) < 0.10, (fraction, offered)
    # No other link loses anything.
    assert all(link["impairment_drops_packets"] == 0 for link in r.summary["links"] if link["name"] != "bottleneck")


def test_gilbert_elliott_loss_rate_is_the_chains_stationary_mix():
    p_gb, p_bg = 0.002, 0.25
    r = fatpipe.run(window_limited("60s", [
        {"link": "bottleneck", "kind": "gilbert_elliott", "p_good_to_bad": p_gb, "p_bad_to_good": p_bg},
    ]))
    b = bottleneck(r)
    expected = p_gb / (p_gb + p_bg)  # loss_good 0, loss_bad 1 by default: 0.0079
    fraction = b["impairment_drops_packets"] / offered_packets(r, "bottleneck")
    # Measured: 2,367 losses in 303,701 packets, 0.00779 (-1.8%). Losses come in bursts of
    # 1/p_bg = 4 on average, so the count varies like that of about 600 bursts (4%); 25%
    # leaves a wide margin and still rules out a wrong chain (Bernoulli at p_gb would give
    # 0.002; loss_bad lost, 0).
    assert abs(fraction / expected - 1) < 0.25, (fraction, expected)
    assert b["outage_drops_packets"] == 0


def test_outage_drops_exactly_the_packets_entering_during_the_window():
    scenario = window_limited(
        "5s", [{"link": "bottleneck", "kind": "outage", "windows": [["2s", "2.5s"]]}],
        rtt="40ms", sample_interval="10ms",
    )
    # The RFC stack sends only full segments here; Linux's tail loss probe during the outage
    # resends the window's last, partial segment, and the byte count below would not divide.
    scenario["flows"][0]["tcp"]["profile"] = "rfc"
    r = fatpipe.run(scenario)
    b = bottleneck(r)
    # The access links have no delay (access_delay defaults to 0), so a packet that leaves
    # access_fwd_sender enters the bottleneck at that instant: the packets entering it in
    # [2 s, 2.5 s) are the wire bytes the access link sent then, over one packet's bytes
    # (every data segment is full-size and nothing else uses that link).
    qs = r.queue_series
    access = qs[qs["link"] == "access_fwd_sender"].set_index("time_s")["departed_bytes"]
    sent_in_window = int(access.loc[2.5] - access.loc[2.0])
    assert sent_in_window % ETHERNET_WIRE_BYTES == 0
    entering = sent_in_window // ETHERNET_WIRE_BYTES
    assert entering > 0
    assert b["outage_drops_packets"] == entering  # measured: 276
    assert b["total_drops_packets"] == b["outage_drops_packets"]
    # Before and after the window the bottleneck carries the flow.
    departed = qs[qs["link"] == "bottleneck"].set_index("time_s")["departed_bytes"]
    assert departed.loc[2.0] > 0 and departed.loc[5.0] > departed.loc[2.5]


def red_or_droptail(discipline):
    return {
        "duration": "60s",
        "topology": {"bottleneck_rate": "10Mbps", "rtt": "100ms", "queue": {"discipline": discipline}},
        "flows": [{"name": "a"}, {"name": "b", "start": "1s"}],
        "output": {"sample_interval": "10ms", "plots": False},
    }


def mean_bottleneck_queue(result, after_s):
    qs = result.queue_series
    rows = qs[(qs["link"] == "bottleneck") & (qs["time_s"] >= after_s)]
    return rows["queue_packets"].mean()


def test_red_keeps_the_queue_shorter_than_droptail_of_the_same_limit():
    droptail = fatpipe.run(red_or_droptail("droptail"))
    red = fatpipe.run(red_or_droptail("red"))
    # The same hard limit: one BDP, 125,000 bytes / 1500 -> 84 packets.
    assert red.scenario["links"][1]["queue"]["limit_packets"] == 84
    assert droptail.scenario["links"][1]["queue"]["limit_packets"] == 84
    # Past start-up (10 s): measured 58.8 packets for drop-tail, 5.2 for RED.
    dt_mean, red_mean = mean_bottleneck_queue(droptail, 10), mean_bottleneck_queue(red, 10)
    assert red_mean < dt_mean / 2, (red_mean, dt_mean)
    # Automatic gentle parameters at 10 Mb/s: min_th 6.25, max_th 18.75 packets; RED holds
    # the average near min_th, and drop-tail's queue sits far above max_th.
    max_th = bottleneck(red)["red_max_th_packets"]
    assert max_th == 18.75 and red_mean < max_th < dt_mean
    assert bottleneck(red)["early_drops_packets"] > 0
    assert bottleneck(droptail)["early_drops_packets"] == 0


def test_sixty_cells_of_two_kilobytes_hold_twenty_4148_byte_packets():
    """Document 002's "60 2 KB buffers": a 4096-byte segment + 52 header bytes takes 3."""
    doc = {
        "duration": "30s",
        "topology": {
            "bottleneck_rate": "44.736Mbps", "rtt": "68ms", "mtu": 4352,  # DS3; FDDI MTU
            "queue": {"cell_size": 2048, "limit_cells": 60},
        },
        "flows": [{"name": "ansnet", "cc": "reno", "tcp": {"profile": "rfc", "mss": 4096, "rcv_buffer": "512KB"}}],
        "output": {"sample_interval": "10ms", "plots": False},
    }
    r = fatpipe.run(doc)
    flow = r.summary["flows"][0]
    packet_bytes = flow["mss_bytes"] + flow["header_bytes"]
    assert packet_bytes == 4148
    qs = r.queue_series
    assert qs[qs["link"] == "bottleneck"]["queue_packets"].max() <= 20
    b = bottleneck(r)
    # The cells, not some other limit, bound the queue: it reached 20 and overflowed. With
    # cells alone there is no packet limit, and the 512 KB window would queue far more.
    assert b["max_queue_packets"] == 20
    assert b["max_queue_bytes"] == 20 * packet_bytes <= 60 * 2048
    assert b["drops_packets"] > 0


def test_outage_example_griddt_undoes_its_spurious_timeout():
    """examples/outage-griddt.toml: a 0.5 s total outage at 10 s on 1 Gb/s x 120 ms."""
    r = fatpipe.run(EXAMPLES / "outage-griddt.toml")
    fs = r.flow_series.set_index("time_s")["delivered_bytes"]

    def mbps(t0, t1):
        return (fs.loc[t1] - fs.loc[t0]) * 8 / (t1 - t0) / 1e6

    # Document 004, per 5 s: 768, 948, 295, 952, 951, 941 Mb/s. Here the outage drops what
    # enters the bottleneck, so the interface queue's packets reach the receiver while their
    # ACKs are lost: the timeout is spurious for the head segment, its retransmission is
    # D-SACKed with an older timestamp echo (RFC 7323 4.3), and Linux 2.4's loss undo
    # restores the window; the packets sent into the outage are then repaired in fast
    # recovery. Measured: 526, 941, 343, 503, 510, 521 (before the receiver's TS.Recent fix,
    # the echo was the retransmission's, no undo, and slow start gave 254, 927, 935, 941).
    assert mbps(5.0, 10.0) > 900
    assert mbps(10.0, 15.0) < 500
    assert mbps(15.0, 20.0) < 600
    links = {link["name"]: link for link in r.summary["links"]}
    assert links["bottleneck"]["outage_drops_packets"] > 0 and links["bottleneck_rev"]["outage_drops_packets"] > 0
    flow = r.summary["flows"][0]
    assert flow["timeouts"] >= 1 and flow["undos"] >= 1
