"""Window reduction without loss (Linux CWR) through `fatpipe.run`: local congestion at a
full sender interface queue (txqueuelen, document 001 E1.2/E1.5) and ECN (RFC 3168) marks
from RED. Each test checks counters the configuration determines: no drop and no
retransmission where the model says none can happen, reductions where it says they must."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")

from fatpipe.scenario import ScenarioError, load_scenario, read_scenario_file  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "txqueuelen-1G-30ms.toml"


def back_to_back(txqueuelen):
    """Document 001's back-to-back with 30 ms delay, as the example writes it."""
    doc = read_scenario_file(EXAMPLE)
    doc["topology"]["txqueuelen"] = txqueuelen
    doc["output"] = {"sample_interval": "100ms", "plots": False}
    return doc


def total_drops(result):
    return sum(link["total_drops_packets"] for link in result.summary["links"])


def test_txqueuelen_100_backs_off_without_loss_and_10000_does_not():
    short = fatpipe.run(back_to_back(100))
    f = short.flows.iloc[0]
    assert f["cwr_entries"] > 0 and f["local_congestion_events"] > 0
    assert total_drops(short) == 0
    assert f["segments_retransmitted"] == 0 and f["data_packets_lost"] == 0
    nic = short.links.set_index("name").loc["access_fwd_sender"]
    assert nic["max_queue_packets"] <= 100

    long = fatpipe.run(back_to_back(10000))
    g = long.flows.iloc[0]
    assert g["cwr_entries"] == 0 and g["local_congestion_events"] == 0
    assert total_drops(long) == 0
    # Document 001: a longer interface queue gives Standard TCP more throughput.
    assert f["goodput_bps"] < g["goodput_bps"]


def test_result_tables_carry_the_new_counters():
    r = fatpipe.run(back_to_back(100))
    for column in ("local_congestion_events", "cwr_entries", "ecn_echoes", "ce_segments_received"):
        assert column in r.flows.columns, column
    assert "ecn_marks" in r.links.columns
    assert r.summary["flows"][0]["cwr_entries"] == int(r.flows.iloc[0]["cwr_entries"])


# ---- txqueuelen in the scenario schema ---------------------------------------------------


def dumbbell(**topology):
    return {"duration": "1s", "topology": {"bottleneck_rate": "100Mbps", "rtt": "40ms", **topology}, "flows": [{}]}


def queues(doc):
    core = load_scenario(doc)
    return {link["name"]: link["queue"] for link in core["links"]}


def droptail(limit):
    return {"discipline": "droptail", "limit_packets": limit, "limit_bytes": None, "cell_bytes": None, "limit_cells": None}


def test_txqueuelen_sets_every_hosts_interface_queue_and_nothing_else():
    q = queues(dumbbell(txqueuelen=50, access_queue={"limit_packets": 70}))
    # Links leaving a host: the sender's and the receiver's interfaces.
    assert q["access_fwd_sender"] == droptail(50)
    assert q["access_rev_receiver"] == droptail(50)
    # Routers' queues toward the hosts keep access_queue; the bottleneck keeps queue.
    assert q["access_fwd_receiver"] == droptail(70)
    assert q["access_rev_sender"] == droptail(70)
    assert q["bottleneck"]["limit_packets"] == 334


def test_unset_txqueuelen_keeps_the_access_queue_defaults():
    q = queues(dumbbell())
    assert q["access_fwd_sender"] == droptail(1000)  # Linux's default txqueuelen
    doc = {"duration": "1s", "topology": {"shape": "two_to_one", "bottleneck_rate": "1Gbps", "rtt": "30ms"}, "flows": [{}]}
    q = queues(doc)
    assert q["access_fwd_sender0"] == droptail(100)  # document 001
    doc["topology"]["txqueuelen"] = 250
    q = queues(doc)
    # Every host's interface: both senders' and the receiver's (bottleneck_rev).
    for name in ("access_fwd_sender0", "access_fwd_sender1", "bottleneck_rev"):
        assert q[name] == droptail(250), name
    assert q["bottleneck"]["limit_packets"] == 2500  # one BDP of 1500-byte packets


def test_parking_lot_txqueuelen():
    doc = {"duration": "1s", "topology": {"shape": "parking_lot", "hops": 2, "bottleneck_rate": "100Mbps", "hop_delay": "10ms",
                        "txqueuelen": 20}, "flows": [{}]}
    q = queues(doc)
    for i in range(3):
        assert q[f"access_fwd_sender{i}"] == droptail(20)
        assert q[f"access_rev_receiver{i}"] == droptail(20)
        assert q[f"access_fwd_receiver{i}"] == droptail(1000)


def custom(txqueuelen_on="a"):
    nodes = [{"name": "a", "kind": "host"}, {"name": "m", "kind": "router"}, {"name": "b", "kind": "host"}]
    next(n for n in nodes if n["name"] == txqueuelen_on)["txqueuelen"] = 30
    return {
        "duration": "1s",
        "topology": {
            "shape": "custom",
            "nodes": nodes,
            "links": [
                {"from": "a", "to": "m", "rate": "1Gbps", "delay": "1ms", "queue": {"limit_packets": 500}},
                {"from": "m", "to": "b", "rate": "100Mbps", "delay": "10ms"},
            ],
        },
        "flows": [{"src": "a", "dst": "b"}],
    }


def test_custom_host_txqueuelen_replaces_the_queue_of_the_links_leaving_it():
    q = queues(custom())
    assert q["a->m"] == droptail(30)
    assert q["m->a"] == droptail(500), "the link's own queue still holds the other way"
    assert q["m->b"] == droptail(1000) and q["b->m"] == droptail(1000)


def test_a_router_has_no_txqueuelen():
    with pytest.raises(ScenarioError) as info:
        load_scenario(custom(txqueuelen_on="m"))
    assert str(info.value) == (
        "topology.nodes[1].txqueuelen: 30 is not allowed: only a host has an interface queue; "
        "a router's queues are its links' queue tables"
    )


def test_bad_txqueuelen_exits_2_with_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('duration = "1s"\n[topology]\nbottleneck_rate = "1Gbps"\nrtt = "30ms"\ntxqueuelen = 0\n[[flows]]\n')
    proc = subprocess.run([sys.executable, "-m", "fatpipe", "validate", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "topology.txqueuelen: 0" in lines[0], proc.stderr


# ---- ECN ----------------------------------------------------------------------------


def red_path(tcp_ecn, red_ecn=True, gentle=False, duration="20s"):
    """100 Mb/s x 40 ms, RED on the bottleneck with thresholds far below its hard limit."""
    return {
        "duration": duration,
        "topology": {
            "bottleneck_rate": "100Mbps",
            "rtt": "40ms",
            "queue": {"discipline": "red", "limit_packets": 1000, "min_th": 30, "max_th": 300,
                      "w_q": 0.002, "gentle": gentle, "ecn": red_ecn},
        },
        "flows": [{"name": "f", "cc": "sack", "tcp": {"ecn": tcp_ecn}}],
        "output": {"sample_interval": "100ms", "plots": False},
    }


def bottleneck(result):
    return result.links.set_index("name").loc["bottleneck"]


def test_ecn_capable_flow_is_marked_not_dropped_and_reduces_without_retransmitting():
    whole = fatpipe.run(red_path(tcp_ecn=True))
    first_second = fatpipe.run(red_path(tcp_ecn=True, duration="1s"))
    b, f = bottleneck(whole), whole.flows.iloc[0]
    # Slow start (Linux's, counting every segment an ACK covers) overshoots before RED's
    # slowly moving average (w_q = 0.002) reaches min_th, and without gentle RED drops every
    # arrival while the average is above max_th: those drops, in the first second, are the
    # only ones. From then on RED marks and the flow reduces without a drop.
    assert total_drops(first_second) > 0
    assert total_drops(whole) == total_drops(first_second)
    assert b["ecn_marks"] > bottleneck(first_second)["ecn_marks"] > 0
    assert f["ecn_echoes"] > first_second.flows.iloc[0]["ecn_echoes"] > 0
    assert f["cwr_entries"] > first_second.flows.iloc[0]["cwr_entries"] > 0
    # Every retransmission repairs a drop: the reductions on ECN-Echo retransmit nothing.
    assert f["segments_retransmitted"] == f["data_packets_lost"] == total_drops(whole)
    assert f["timeouts"] == 0


def test_flow_without_ecn_through_the_same_red_is_dropped_early():
    r = fatpipe.run(red_path(tcp_ecn=False))
    b, f = bottleneck(r), r.flows.iloc[0]
    assert b["ecn_marks"] == 0 and b["early_drops_packets"] > 0
    assert f["segments_retransmitted"] > 0
    assert f["ecn_echoes"] == 0 and f["cwr_entries"] == 0


def test_ecn_bits_in_the_capture(tmp_path):
    dpkt = pytest.importorskip("dpkt")
    doc = red_path(tcp_ecn=True)
    doc["duration"] = "5s"
    doc["output"]["capture"] = ["bottleneck", "bottleneck_rev"]
    r = fatpipe.run(doc, capture_dir=tmp_path)
    counts = {"ect": 0, "ce": 0, "cwr": 0, "ece": 0}
    for name in ("bottleneck", "bottleneck_rev"):
        with open(tmp_path / f"{name}.pcap", "rb") as fh:
            for _, buf in dpkt.pcap.Reader(fh):
                ip = dpkt.ethernet.Ethernet(buf).data
                counts["ect"] += (ip.tos & 3) == 2
                counts["ce"] += (ip.tos & 3) == 3
                counts["cwr"] += bool(ip.data.flags & dpkt.tcp.TH_CWR)
                counts["ece"] += bool(ip.data.flags & dpkt.tcp.TH_ECE)
    b, f = bottleneck(r), r.flows.iloc[0]
    # Captures see packets as they start transmission: RED has marked them by then, and
    # what is still queued at the end (or, for ACKs, still on the way) is not seen, or not
    # yet received.
    assert 0 < counts["ce"] <= b["ecn_marks"]
    assert counts["ect"] > counts["ce"]
    assert 0 < counts["cwr"] <= f["cwr_entries"]
    assert counts["ece"] >= f["ecn_echoes"] > 0


def test_red_ecn_default_is_off_and_tcp_ecn_alone_changes_nothing():
    plain = fatpipe.run(red_path(tcp_ecn=False, red_ecn=False))
    capable = fatpipe.run(red_path(tcp_ecn=True, red_ecn=False))
    # No queue marks: the ECN-capable flow meets the same drops, packet for packet.
    assert bottleneck(capable)["ecn_marks"] == 0
    assert bottleneck(capable)["early_drops_packets"] == bottleneck(plain)["early_drops_packets"]
    assert capable.summary["flows"][0]["bytes_delivered"] == plain.summary["flows"][0]["bytes_delivered"]
    doc = copy.deepcopy(red_path(tcp_ecn=True))
    del doc["topology"]["queue"]["ecn"]
    assert load_scenario(doc)["links"][1]["queue"]["ecn"] is False


def test_cli_summary_shows_window_cuts_without_loss_only_when_there_are_any():
    from fatpipe.cli_tables import summary_table

    cut = fatpipe.run(back_to_back(100))
    table = summary_table(cut.summary, 1.0).splitlines()
    header = next(line for line in table if line.startswith("flow"))
    row = next(line for line in table if line.startswith("standard"))
    assert header.endswith("cwnd cuts w/o loss")
    assert row.split()[-1] == str(cut.summary["flows"][0]["cwr_entries"])
    plain = fatpipe.run(back_to_back(10000))
    assert "w/o loss" not in summary_table(plain.summary, 1.0)


# ---- every way a sender transmits meets the interface budget -------------------------------


def nic_limited(flows, txqueuelen=5, duration="10s"):
    """100 Mb/s x 20 ms where the hosts' NICs are as fast as the path: queues form only in
    the senders' interface queues of ``txqueuelen`` packets (the bottleneck's holds a BDP
    and never fills)."""
    return {
        "duration": duration,
        "topology": {"bottleneck_rate": "100Mbps", "rtt": "20ms", "access_rate": "100Mbps",
                     "txqueuelen": txqueuelen, "pairs": 2},
        "flows": flows,
        "output": {"sample_interval": "100ms", "plots": False},
    }


def link(result, name):
    return result.links.set_index("name").loc[name]


def test_http_server_and_paced_writes_wait_for_the_interface_instead_of_losing():
    # A NOCC HTTP server writes whole objects at once (up to 290 segments into a
    # 5-packet interface queue); a paced TCP flow writes 64 KB every 10 ms.
    http = {"name": "http", "pair": 0, "cc": "nocc",
            "http": {"version": "1.0", "objects": ["422KB"], "requests": 10}}
    paced = {"name": "paced", "pair": 1, "cc": "newreno", "burst_size": "64KB", "burst_period": "10ms"}
    r = fatpipe.run(nic_limited([http, paced]))
    flows = r.flows.set_index("name")
    for name, nic in (("http", "access_fwd_sender0"), ("paced", "access_fwd_sender1")):
        assert flows.loc[name, "local_congestion_events"] > 0, name
        assert flows.loc[name, "segments_retransmitted"] == 0, name
        assert link(r, nic)["total_drops_packets"] == 0, nic
        assert link(r, nic)["max_queue_packets"] <= 5, nic
    assert total_drops(r) == 0
    assert flows.loc["http", "requests_completed"] == 10


def test_udp_shares_the_interface_queue_and_is_dropped_where_tcp_waits():
    # A bulk TCP flow keeps its host's 20-packet interface queue full; a 30 Mb/s CBR UDP
    # flow from the same host finds it full now and then and loses those datagrams there,
    # while TCP loses nothing.
    doc = nic_limited(
        [{"name": "tcp", "pair": 0, "cc": "newreno"},
         {"name": "udp", "pair": 0, "transport": "udp", "udp": {"mode": "cbr", "rate": "30Mbps"}}],
        txqueuelen=20,
    )
    r = fatpipe.run(doc)
    flows = r.flows.set_index("name")
    nic = link(r, "access_fwd_sender0")
    assert flows.loc["tcp", "local_congestion_events"] > 0
    assert flows.loc["tcp", "data_packets_lost"] == 0 and flows.loc["tcp", "segments_retransmitted"] == 0
    assert flows.loc["udp", "datagrams_lost"] > 0
    assert nic["drops_packets"] == flows.loc["udp", "datagrams_lost"] == total_drops(r)
    assert nic["max_queue_packets"] <= 20
