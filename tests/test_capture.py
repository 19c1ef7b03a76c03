"""Packet capture (issue 5): pcap files that dpkt, tcpdump and tshark read, whose contents
agree with fatpipe's own counters."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import dpkt
import pytest

import fatpipe
from fatpipe.scenario import ScenarioError

SENDER_PORT = 32768  # first flow's port (capture.rs)


def lossy_scenario(**output):
    """A 1 MB SACK transfer over 20 Mb/s x 40 ms with 2% random loss on the bottleneck:
    retransmissions, ACKs with SACK blocks, and a flow that completes well before the end,
    so nothing is in flight when the run stops."""
    return {
        "name": "capture-lossy",
        "duration": "8s",
        "seed": 3,
        "topology": {
            "shape": "dumbbell",
            "bottleneck_rate": "20Mbps",
            "rtt": "40ms",
            "impairments": [{"link": "bottleneck", "kind": "bernoulli", "probability": 0.02}],
        },
        "flows": [{"name": "f", "cc": "sack", "bytes": "1MB"}],
        "output": {"plots": False, **output},
    }


def read_tcp(path: Path):
    """(time, sport, seq, payload bytes, flags, sack option present) per TCP frame."""
    frames = []
    with open(path, "rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data
            payload = ip.len - 4 * ip.hl - 4 * tcp.off
            options = dict(dpkt.tcp.parse_opts(tcp.opts))
            frames.append((float(ts), tcp.sport, tcp.seq, payload, tcp.flags, dpkt.tcp.TCP_OPT_SACK in options))
    return frames


def retransmitted(frames):
    """Data frames whose first byte is below the highest byte seen before (32-bit serial
    arithmetic), as tcptrace counts retransmissions."""
    high = None
    out = []
    for i, (_, sport, seq, payload, _, _) in enumerate(frames):
        if sport != SENDER_PORT or payload == 0:
            continue
        if high is not None and (seq - high) % 2**32 > 2**31:
            out.append(i)
        end = (seq + payload) % 2**32
        if high is None or (end - high) % 2**32 < 2**31:
            high = end
    return out


@pytest.fixture(scope="module")
def lossy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("capture")
    result = fatpipe.run(lossy_scenario(capture=["sender", "bottleneck", "receiver"]), capture_dir=out)
    # The captures are already in out: writing the run there replaces it with them and the rest.
    result.write(out, plots=False, overwrite=True)
    return result, out


def test_sender_capture_matches_the_senders_counters(lossy_run):
    result, out = lossy_run
    flow = result.summary["flows"][0]
    assert flow["completed"] and flow["segments_retransmitted"] > 10
    frames = read_tcp(out / "sender.pcap")
    data = [f for f in frames if f[1] == SENDER_PORT and f[3] > 0]
    assert len(data) == flow["segments_sent"]
    assert sum(f[3] for f in data) == flow["bytes_sent"]
    assert len(retransmitted(frames)) == flow["segments_retransmitted"]
    # The receiver's ACKs; not the synthetic SYN-ACK of a flow without a handshake.
    acks = [f for f in frames if f[1] != SENDER_PORT and not f[4] & dpkt.tcp.TH_SYN]
    assert len(acks) == flow["acks_sent"] - flow["ack_packets_lost"]


def test_receiver_capture_matches_counters_less_network_losses(lossy_run):
    result, out = lossy_run
    flow = result.summary["flows"][0]
    frames = read_tcp(out / "receiver.pcap")
    data = [f for f in frames if f[1] == SENDER_PORT and f[3] > 0]
    assert flow["data_packets_lost"] > 0
    assert len(data) == flow["segments_sent"] - flow["data_packets_lost"]
    assert sum(f[3] for f in data) == flow["bytes_sent"] - flow["data_bytes_lost"]
    assert len(retransmitted(frames)) == flow["segments_retransmitted"] - flow["retransmissions_lost"]
    acks = [f for f in frames if f[1] != SENDER_PORT and not f[4] & dpkt.tcp.TH_SYN]
    assert len(acks) == flow["acks_sent"]
    assert any(f[5] for f in acks), "a lossy SACK flow's ACKs carry SACK blocks"


def test_capture_summary_and_files(lossy_run):
    result, out = lossy_run
    entries = {c["name"]: c for c in result.summary["captures"]}
    assert set(entries) == {"sender", "bottleneck", "receiver"}
    for name, entry in entries.items():
        assert entry["path"] == f"{name}.pcap"  # no absolute path in summary.json
        assert entry["packets_written"] == len(read_tcp(out / f"{name}.pcap"))
    # The bottleneck carries data only (ACKs return on bottleneck_rev), every packet that
    # was not lost on entering it, after the synthetic SYN and ACK.
    flow = result.summary["flows"][0]
    assert entries["bottleneck"]["packets_written"] == 2 + flow["segments_sent"] - flow["data_packets_lost"]


def test_timestamps_are_simulated_time_and_headers_check(lossy_run):
    result, out = lossy_run
    frames = read_tcp(out / "sender.pcap")
    times = [f[0] for f in frames]
    assert times == sorted(times)
    # The flow starts established at 0: its synthetic handshake happened in the round trip
    # before, so the captures' clock runs one whole second ahead (summary.json says so) and
    # the data keep their simulated times, plus that second.
    assert [c["clock_offset_ps"] for c in result.summary["captures"]] == [10**12] * 3
    data = [f[0] for f in frames if f[3] > 0]
    assert data[0] == 1.0 and data[-1] < 9.0
    # The handshake's times: the SYN leaves one round trip before the start, the SYN-ACK
    # arrives and the ACK leaves at the start. The round trip: 40 ms of propagation and each
    # 60-byte packet's serialization (+ 38 bytes of framing) on 200 Mb/s access links and
    # the 20 Mb/s bottleneck, both ways: 2 x (2 x 98 x 8 / 200e6 + 98 x 8 / 20e6) = 94.08 us.
    syn, synack, ack = frames[:3]
    assert syn[4] == dpkt.tcp.TH_SYN and synack[4] == dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK and ack[4] == dpkt.tcp.TH_ACK
    assert synack[0] == ack[0] == 1.0
    assert ack[0] - syn[0] == pytest.approx(0.040 + 94.08e-6, abs=1e-9)
    from fatpipe.pcap import read_capture

    assert read_capture(result, "sender")["time_s"].iloc[0] == pytest.approx(-(0.040 + 94.08e-6), abs=1e-9)
    # Real IP header checksums: the one's-complement sum over a valid header, checksum
    # included, is 0xffff, so the checksum of it is 0 (RFC 1071).
    with open(out / "receiver.pcap", "rb") as fh:
        headers = [buf[14:34] for _, buf in dpkt.pcap.Reader(fh)]
    assert headers and all(dpkt.in_cksum(h) == 0 for h in headers)


def test_tcp_checksum_of_full_frames_is_right(tmp_path):
    # With snaplen large enough for whole frames, the TCP checksum covers the payload too
    # (zeros), and tshark validates it as good.
    tshark = _tool("tshark")
    result = fatpipe.run(
        lossy_scenario(capture=["receiver"], capture_snaplen=2000, capture_max_packets=200),
        capture_dir=tmp_path,
    )
    assert result.summary["captures"][0]["packets_written"] == 200
    assert result.summary["captures"][0]["packets_not_written"] > 0
    status = _tshark_fields(tshark, tmp_path / "receiver.pcap", ["tcp.checksum.status", "ip.checksum.status"],
                            ["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"])
    assert len(status) == 200
    assert all(row == ["1", "1"] for row in status), status[:5]  # 1 = good


def _tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (scripts/test.sh installs it)")
    return path


def _tshark_fields(tshark, path, fields, extra=()):
    cmd = [tshark, "-r", str(path), "-T", "fields", *extra]
    for f in fields:
        cmd += ["-e", f]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in text.splitlines()]


def test_tshark_flags_retransmissions_where_fatpipe_retransmitted(lossy_run):
    tshark = _tool("tshark")
    result, out = lossy_run
    frames = read_tcp(out / "sender.pcap")
    ours = {i + 1 for i in retransmitted(frames)}  # tshark numbers frames from 1
    rows = _tshark_fields(
        tshark,
        out / "sender.pcap",
        ["frame.number", "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
         "tcp.analysis.out_of_order", "tcp.analysis.spurious_retransmission"],
        ["-Y", "tcp.analysis.retransmission || tcp.analysis.fast_retransmission || "
               "tcp.analysis.out_of_order || tcp.analysis.spurious_retransmission"],
    )
    flagged = {int(r[0]) for r in rows}
    # Without a handshake tshark cannot know the RTT and calls a retransmission sent within
    # 3 ms of the previous segment "out of order"; either way it is flagged, and exactly the
    # segments fatpipe retransmitted are.
    assert flagged == ours
    assert len(ours) == result.summary["flows"][0]["segments_retransmitted"]


def test_tshark_reads_the_paths_rtt_from_the_handshake(lossy_run):
    # Issue 22: the synthetic handshake was stamped all at 0, and tshark read an initial RTT
    # of zero on a 40 ms path. Now at the sender and the receiver it reads the round trip.
    tshark = _tool("tshark")
    _, out = lossy_run
    # At the sender SYN to ACK (the SYN and SYN-ACK each serialized as 98 bytes: 94.08 us);
    # at the receiver SYN-ACK to ACK (the ACK is 90 bytes: 47.04 + 43.2 us).
    for point, rtt in (("sender", 0.040 + 94.08e-6), ("receiver", 0.040 + 90.24e-6)):
        rows = _tshark_fields(tshark, out / f"{point}.pcap", ["tcp.analysis.initial_rtt"],
                              ["-Y", "tcp.analysis.initial_rtt"])
        assert rows and float(rows[0][0]) == pytest.approx(rtt, abs=1e-8), (point, rows[:2])


def test_tcpdump_reads_captures(lossy_run):
    tcpdump = _tool("tcpdump")
    _, out = lossy_run
    text = subprocess.run([tcpdump, "-nn", "-r", str(out / "receiver.pcap")], check=True,
                          capture_output=True, text=True).stdout
    lines = text.splitlines()
    # The synthetic handshake first (the flow starts established), then the data.
    assert lines and "10.0.0.1.32768 > " in lines[0] and "Flags [S]" in lines[0] and "wscale 8" in lines[0]
    assert "10.0.0.1.32768 > " in lines[3] and "Flags [P.]" in lines[3]
    assert any("sack" in line for line in lines)


def test_capture_window_limits_time(tmp_path):
    result = fatpipe.run(lossy_scenario(capture=["sender"], capture_start="1s", capture_stop="1.5s"),
                         capture_dir=tmp_path)
    times = [f[0] for f in read_tcp(tmp_path / "sender.pcap")]
    assert times and min(times) >= 1.0 and max(times) < 1.5
    assert result.summary["captures"][0]["packets_written"] == len(times)


@pytest.mark.parametrize(
    "output, message",
    [
        ({"capture": ["nowhere"]}, 'output.capture[0]: "nowhere" is not allowed: expected a host or link of the topology: hosts receiver, sender; links access_fwd_sender, bottleneck'),
        ({"capture": "sender"}, 'output.capture: "sender" is not allowed: expected an array'),
        ({"capture": ["sender", "sender"]}, 'output.capture[1]: "sender" is not allowed: each capture point may be named once'),
        ({"capture": ["sender"], "capture_start": "2s", "capture_stop": "1s"}, "output.capture_stop: 1s is not allowed: must be after capture_start (2s)"),
        ({"capture": ["sender"], "capture_snaplen": 10}, "output.capture_snaplen: 10 is not allowed: must be at least 64"),
    ],
)
def test_bad_capture_options(output, message):
    with pytest.raises(ScenarioError) as err:
        fatpipe.load_scenario(lossy_scenario(**output))
    assert str(err.value).startswith(message), str(err.value)


def test_cli_run_writes_captures_into_the_output_directory(tmp_path):
    import json
    import sys

    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(lossy_scenario(capture=["receiver"])))
    outdir = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "fatpipe", "run", str(scenario), "-o", str(outdir), "--quiet"], check=True)
    assert (outdir / "receiver.pcap").stat().st_size > 1000
    assert json.loads((outdir / "summary.json").read_text())["captures"][0]["path"] == "receiver.pcap"


def test_tcptrace_style_connection_counts_agree_with_the_counters(lossy_run):
    from fatpipe.pcap import connections

    result, out = lossy_run
    flow = result.summary["flows"][0]
    conns = connections(out / "sender.pcap")
    assert len(conns) == 1
    c = conns.iloc[0]
    assert c["src"] == "10.0.0.1:32768" and c["dst"].endswith(":5001")
    assert c["data_packets"] == flow["segments_sent"]
    assert c["data_bytes"] == flow["bytes_sent"]
    assert c["retransmitted_packets"] == flow["segments_retransmitted"]
    assert c["unique_bytes"] == flow["bytes_delivered"] == 1_000_000
    # Every receiver packet with the ACK flag, as tcptrace counts: the (synthetic) SYN-ACK too.
    assert c["ack_packets"] == flow["acks_sent"] - flow["ack_packets_lost"] + 1
    assert 0 < c["sack_packets"] < c["ack_packets"]


def test_udp_datagrams_are_captured_with_good_checksums(tmp_path):
    tshark = _tool("tshark")
    result = fatpipe.run(
        {
            "name": "udp-capture",
            "duration": "1s",
            "topology": {"shape": "dumbbell", "bottleneck_rate": "20Mbps", "rtt": "40ms"},
            "flows": [{"name": "u", "transport": "udp", "udp": {"mode": "cbr", "rate": "5Mbps"}}],
            "output": {"plots": False, "capture": ["receiver"], "capture_snaplen": 2000},
        },
        capture_dir=tmp_path,
    )
    flow = result.summary["flows"][0]
    rows = _tshark_fields(tshark, tmp_path / "receiver.pcap", ["udp.length", "udp.checksum.status", "ip.checksum.status"],
                          ["-o", "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"])
    assert len(rows) == flow["datagrams_received"] > 0
    assert all(r == [str(flow["payload_bytes"] + 8), "1", "1"] for r in rows), rows[:3]


def test_with_a_handshake_tshark_knows_the_rtt_and_window_scale(tmp_path):
    # A captured SYN gives tshark the window scale; every retransmission is flagged as one
    # (none "out of order") and windows are shown scaled. The RFC stack: the Linux stack
    # resends a segment RACK marks lost right after new data of the same ACK, which tshark's
    # heuristics call out of order (a retransmission less than 3 ms after a higher segment).
    tshark = _tool("tshark")
    scenario = lossy_scenario(capture=["sender"])
    scenario["flows"][0]["tcp"] = {"handshake": True, "profile": "rfc"}
    result = fatpipe.run(scenario, capture_dir=tmp_path)
    flow = result.summary["flows"][0]
    rows = _tshark_fields(tshark, tmp_path / "sender.pcap",
                          ["tcp.flags.syn", "tcp.options.mss_val", "tcp.window_size_scalefactor"])
    assert rows[0][:2] == ["1", "1460"] and rows[1][0] == "1"  # SYN, SYN-ACK; MSS = 1500 - 40
    assert rows[-1][2] == "256"
    flagged = _tshark_fields(tshark, tmp_path / "sender.pcap", ["frame.number"],
                             ["-Y", "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"])
    assert len(flagged) == flow["segments_retransmitted"] > 0
    ooo = _tshark_fields(tshark, tmp_path / "sender.pcap", ["frame.number"], ["-Y", "tcp.analysis.out_of_order"])
    assert ooo == []


def test_timestamps_run_both_ways(lossy_run):
    # RFC 7323 on a 1 ms clock: each end stamps its own time and echoes the other's latest.
    import struct

    result, out = lossy_run
    offset_s = result.summary["captures"][0]["clock_offset_ps"] / 1e12  # the file's clock is ahead
    stamps = []
    with open(out / "sender.pcap", "rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            tcp = dpkt.ethernet.Ethernet(buf).data.data
            val, ecr = struct.unpack("!II", dict(dpkt.tcp.parse_opts(tcp.opts))[dpkt.tcp.TCP_OPT_TIMESTAMP])
            stamps.append((float(ts) - offset_s, tcp.sport == SENDER_PORT, val, ecr))
    late = [s for s in stamps if s[0] > 0.5]
    assert late
    for t, from_sender, val, ecr in late:
        # TSval is the sender's clock in ms (ACKs left the receiver about 20 ms before the
        # sender's capture saw them); TSecr echoes a value no newer than now.
        assert val <= t * 1000 and val >= t * 1000 - 60
        assert 0 < ecr <= t * 1000


def test_a_flow_without_a_handshake_shows_a_synthetic_one_so_tools_know_the_window_scale(tmp_path):
    # With handshake = false (the default) the capture had no SYN: tshark showed window
    # scale -1 and tcptrace a 64 KB window. The core now writes the SYN, SYN-ACK and ACK
    # the connection would have exchanged, ending at the flow's start (docs/metrics.md:
    # synthetic), in the round trip before it.
    tshark = _tool("tshark")
    result = fatpipe.run(lossy_scenario(capture=["sender", "bottleneck"]), capture_dir=tmp_path)
    assert result.scenario["flows"][0]["tcp"]["handshake"] is False
    sender = read_tcp(tmp_path / "sender.pcap")
    syn, synack, ack = (f[4] for f in sender[:3])
    assert (syn, synack, ack) == (dpkt.tcp.TH_SYN, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, dpkt.tcp.TH_ACK)
    assert sender[0][0] < sender[1][0] == sender[2][0] == sender[3][0] == 1.0 and sender[3][3] > 0  # then the data
    # The bottleneck carries only what goes forward: the SYN and the ACK.
    forward = read_tcp(tmp_path / "bottleneck.pcap")
    assert [f[4] for f in forward[:2]] == [dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK] and forward[2][3] > 0
    scale = _tshark_fields(tshark, tmp_path / "sender.pcap", ["tcp.window_size_scalefactor"])
    # 8 MiB buffers: RFC 7323 shift 8; tshark applies it to every segment after the SYNs.
    assert {row[0] for row in scale[3:]} == {"256"}, scale[:6]
