"""Issue 26, "The emulator at 1 Gb/s": super-packets through the TUN devices.

Kernel cubic over 150 Mb/s x 20 ms (a 1-BDP drop-tail queue, 6 s), a path the old
one-packet-per-call path sustains (docs/benchmarks.md: kept up to 400 Mb/s), once with TSO
and GRO offloads on the TUN devices and once without, alternating; a pair in which either
run did not keep up with real time is rerun (realtime_tolerances.until_kept_up). Checked:

- with offloads the relay read super-packets (how many, their mean size and segments) and
  fewer reads than packets; without, one packet per read and per write;
- every segment cut from a super-packet went through the links as a packet: the bottleneck
  counted each, and its drops are the relay's losses;
- goodput with offloads matches the old path's (both fill the bottleneck, as test_emulate
  asks of the old path), when both kept up; otherwise only what lateness cannot change;
- `fatpipe emulate --no-tun-offload` keeps the old path.
"""

from __future__ import annotations

import json

import pytest

from emulate_helpers import alternating_pair, cli, cubic_dumbbell, require_root
from fatpipe.emulate import emulate

RATE_BPS = 150e6
# Payload capacity: 150 Mb/s x 1448 / (1448 + 52 header + 38 framing bytes).
CAPACITY_BPS = RATE_BPS * 1448 / (1448 + 52 + 38)
SCENARIO = cubic_dumbbell("150Mbps", "6s", "100ms")


@pytest.fixture(scope="module")
def pair():
    """(with offloads, without): summaries of a pair run back to back, until both kept up."""
    require_root()
    return alternating_pair(lambda offload: emulate(SCENARIO, tun_offload=offload).summary)


def test_the_relay_reads_super_packets_and_cuts_them_into_the_links_packets(pair):
    new, old = pair
    tun = new["emulation"]["relay"]["tun"]
    assert tun["offload_asked"] and tun["offload"], tun.get("offload_refused")
    flow = new["flows"][0]
    data_segments = flow["emulation"]["wire_data_segments"]
    # 6 s at 150 Mb/s is about 75,000 segments; cubic's window reaches hundreds of
    # segments, and Linux's TSO autosizing (tcp_tso_autosize: ~1 ms of the pacing rate,
    # at least 2 segments) hands a device with TSO several segments at a time.
    assert tun["super_packets_read"] > 1000
    segments_per_super_packet = tun["super_packet_segments_read"] / tun["super_packets_read"]
    mean_bytes = tun["super_packet_bytes_read"] / tun["super_packets_read"]
    assert segments_per_super_packet > 2, segments_per_super_packet
    # Each segment carries its own 52 header bytes on the wire, the super-packet one set.
    assert 2 * 1448 < mean_bytes <= 65_535, mean_bytes
    assert tun["super_packet_segments_read"] > 0.5 * data_segments, "most data came as super-packets"
    assert tun["reads"] < 0.75 * tun["packets_read"]
    # Every segment crossed the links as a packet: the bottleneck sent or dropped each.
    bottleneck = next(link for link in new["links"] if link["name"] == "bottleneck")
    assert flow["data_packets_lost"] == bottleneck["total_drops_packets"]
    assert bottleneck["packets_sent"] >= data_segments - flow["data_packets_lost"] - 2000  # in flight at the end
    assert tun["packets_written"] <= tun["packets_read"]
    assert tun["super_packet_segments_written"] >= 2 * tun["super_packets_written"]
    assert new["emulation"]["relay"]["delivery_errors"] == 0

    plain = old["emulation"]["relay"]["tun"]
    assert not plain["offload_asked"] and not plain["offload"]
    assert plain["reads"] == plain["packets_read"] and plain["writes"] == plain["packets_written"]
    assert plain["super_packets_read"] == plain["super_packets_written"] == 0


def test_goodput_matches_the_old_path(pair):
    new, old = pair
    goodput = {"offload": new["flows"][0]["goodput_bps"], "plain": old["flows"][0]["goodput_bps"]}
    # Never above the payload capacity, however late the relay (links run on scheduled times).
    for g in goodput.values():
        assert 0 < g <= CAPACITY_BPS, goodput
    if not (new["emulation"]["kept_up"] and old["emulation"]["kept_up"]):
        # No pair kept up: what timing decides (goodput) says nothing here.
        return
    # One cubic flow with a 1-BDP buffer keeps the bottleneck busy on either path (the
    # old path's 98.8-99.2 % of capacity at 100-400 Mb/s, docs/benchmarks.md; test_emulate
    # asks 95 %), so the two agree to within the 5 % that bound leaves.
    for g in goodput.values():
        assert g >= 0.95 * CAPACITY_BPS, {k: v / 1e6 for k, v in goodput.items()}
    assert abs(goodput["offload"] - goodput["plain"]) <= 0.05 * CAPACITY_BPS


def test_the_command_line_switch_keeps_the_old_path(tmp_path):
    """`fatpipe emulate --no-tun-offload`: the devices without offloads, one packet per call."""
    require_root()
    toml = tmp_path / "short.toml"
    toml.write_text(
        'name = "short"\nduration = "1s"\n[topology]\nshape = "dumbbell"\nbottleneck_rate = "20Mbps"\nrtt = "20ms"\n'
        '[[flows]]\nname = "cubic"\ncc = "cubic"\n[output]\nplots = false\n'
    )
    for switch, offload in (("--no-tun-offload", False), (None, True)):
        out = tmp_path / f"run-{offload}"
        proc = cli("emulate", toml, "-o", out, *([switch] if switch else []))
        assert proc.returncode == 0, proc.stderr
        assert "refused the TUN devices' offloads" not in proc.stderr
        tun = json.loads((out / "summary.json").read_text())["emulation"]["relay"]["tun"]
        assert (tun["offload_asked"], tun["offload"]) == (offload, offload)
        assert (tun["reads"] < tun["packets_read"]) == offload, tun
