"""A flow limited by its own buffers is told before the run (issue 22 item 4): CUBIC over
1 Gb/s x 80 ms with rcv_buffer = "32MiB" moved 819 Mb/s, capped by the default 8 MiB send
buffer, and nothing said so."""

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("fatpipe._core")
import fatpipe  # noqa: E402
from fatpipe.buffers import BufferWarning, buffer_warnings, path_bdp  # noqa: E402
from fatpipe.core import import_core  # noqa: E402
from fatpipe.scenario import load_scenario  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

ISSUE = """\
duration = "10s"
[topology]
bottleneck_rate = "1Gbps"
rtt = "80ms"
[[flows]]
name = "cubic"
cc = "cubic"
[flows.tcp]
rcv_buffer = "32MiB"
"""
# The path's BDP in payload: 1 Gb/s x 80 ms / 8, of which 1448 of every 1538 wire bytes
# (MSS, 52 bytes of IP/TCP headers with timestamps, 38 of Ethernet framing) are payload.
BDP_BYTES = math.ceil(1e9 * 0.080 / 8 * 1448 / 1538)


def doc(**tcp):
    return {"duration": "10s", "topology": {"bottleneck_rate": "1Gbps", "rtt": "80ms"},
            "flows": [{"name": "cubic", "cc": "cubic", "tcp": {"rcv_buffer": "32MiB", **tcp}}],
            "output": {"plots": False}}


def test_the_issues_flow_is_warned_on_the_command_line_before_the_run(tmp_path):
    scenario = tmp_path / "cubic.toml"
    scenario.write_text(ISSUE)
    done = subprocess.run([sys.executable, "-m", "fatpipe", "run", str(scenario), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        'fatpipe: warning: flow "cubic": snd_buffer (8MiB) is below the bandwidth-delay product of its path '
        '(9.41MB: 1 Gb/s bottleneck x 80ms RTT), so it cannot exceed 839 Mb/s; set [flows.tcp] snd_buffer = '
        '"9.5MB" or more')
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (w,) = summary["warnings"]
    assert (w["flow"], w["key"], w["bytes"], w["needed_bytes"]) == ("cubic", "tcp.snd_buffer", 8 * 2**20, BDP_BYTES)
    # What it says holds: the flow stays under 8 MiB per RTT.
    assert summary["flows"][0]["goodput_bps"] < 8 * 2**20 * 8 / 0.080


def test_with_buffers_for_the_bdp_there_is_no_warning_and_the_flow_goes_faster():
    with warnings.catch_warnings():
        warnings.simplefilter("error", BufferWarning)
        big = fatpipe.run(doc(snd_buffer="32MiB"))
    assert big.warnings == [] and big.summary["warnings"] == []
    with pytest.warns(BufferWarning, match=r'^flow "cubic": snd_buffer \(8MiB\)'):
        small = fatpipe.run(doc())
    assert [w["key"] for w in small.warnings] == ["tcp.snd_buffer"]
    assert big.flows.goodput_bps.iloc[0] > 8 * 2**20 * 8 / 0.080 > small.flows.goodput_bps.iloc[0]


def test_a_window_without_scaling_is_held_to_65535_bytes():
    scenario = load_scenario(doc(snd_buffer="32MiB", window_scaling=False))
    (w,) = buffer_warnings(scenario)
    assert (w["key"], w["bytes"]) == ("tcp.rcv_buffer", 65535)
    assert w["message"].endswith("set [flows.tcp] window_scaling = true (without it the window is at most 65,535 bytes)")


def test_parallel_streams_each_need_their_share():
    d = doc(snd_buffer="3MB", rcv_buffer="3MB")
    d["flows"][0]["streams"] = 4  # 4 x 3 MB hold the 9.4 MB BDP
    assert buffer_warnings(load_scenario(d)) == []
    d["flows"][0]["streams"] = 3  # 3 x 3 MB do not
    warned = buffer_warnings(load_scenario(d))
    assert [(w["flow"], w["key"], w["needed_bytes"]) for w in warned] == [
        ("cubic", "tcp.snd_buffer", math.ceil(BDP_BYTES / 3)), ("cubic", "tcp.rcv_buffer", math.ceil(BDP_BYTES / 3))]
    assert warned[0]["message"].startswith('each of the 3 streams of "cubic": snd_buffer (3MB)')


def test_a_flow_that_needs_less_than_the_bdp_is_held_to_what_it_needs():
    d = doc()
    d["flows"][0]["bytes"] = "5MB"  # fits the 8 MiB send buffer
    assert buffer_warnings(load_scenario(d)) == []
    d = doc()
    d["flows"][0].update(burst_size="64KB", burst_period="10ms")  # 51.2 Mb/s x 80 ms = 512 KB
    assert buffer_warnings(load_scenario(d)) == []


def test_the_bdp_follows_the_flows_route_and_parallel_paths():
    # The reordering example splits its 1 Gb/s bottleneck into 30, 50 and 20 Mb/s pipes
    # taken with probability 0.3, 0.35, 0.35: the group carries at most 20 / 0.35 = 57 Mb/s.
    scenario = load_scenario(EXAMPLES / "reordering-3-paths.toml")
    routes = import_core().flow_routes(scenario)
    rate, rtt_ps, _ = path_bdp(scenario, scenario["flows"][0], routes[0])
    assert rate == pytest.approx(20e6 / 0.35)
    # The mean of the pipes' one-way delays (50, 40, 42.5 ms) forward, 45 ms back: 90.375 ms.
    assert rtt_ps == pytest.approx((0.3 * 50 + 0.35 * 40 + 0.35 * 42.5 + 45) * 1e9)
    # A custom topology: the data take an explicit detour of 100 Mb/s links (42 ms one way),
    # the ACKs the direct 1 Gb/s way back (12 ms): 100 Mb/s x 54 ms.
    custom = {
        "duration": "1s",
        "topology": {"shape": "custom",
                     "nodes": [{"name": n, "kind": "host" if n.startswith("h") else "router"}
                               for n in ("h1", "r1", "r2", "r3", "h2")],
                     "links": [{"from": "h1", "to": "r1", "rate": "1Gbps", "delay": "1ms"},
                               {"from": "r1", "to": "r2", "rate": "1Gbps", "delay": "10ms", "name": "direct"},
                               {"from": "r1", "to": "r3", "rate": "100Mbps", "delay": "20ms"},
                               {"from": "r3", "to": "r2", "rate": "100Mbps", "delay": "20ms"},
                               {"from": "r2", "to": "h2", "rate": "1Gbps", "delay": "1ms"}],
                     "routes": [{"path": ["h1", "r1", "r3", "r2", "h2"]}]},
        "flows": [{"name": "f", "src": "h1", "dst": "h2", "tcp": {"snd_buffer": "64KB"}}],
    }
    (w,) = buffer_warnings(load_scenario(custom))
    # 100 Mb/s x 54 ms / 8 x 1448 / 1538 = 635,501 bytes.
    assert "(636KB: 100 Mb/s bottleneck x 54ms RTT)" in w["message"], w["message"]


def test_a_sweep_keeps_the_warnings_in_each_run_and_prints_none(tmp_path, capfd):
    df = fatpipe.sweep(doc(), grid={"topology.rtt": ["10ms", "80ms"]}, outdir=tmp_path / "s", jobs=1, executor="threads")
    assert list(df["status"]) == ["ok", "ok"]
    assert "warning" not in capfd.readouterr().err
    kept = [json.loads(p.read_text())["warnings"] for p in sorted((tmp_path / "s" / "runs").glob("*/summary.json"))]
    assert sorted(len(w) for w in kept) == [0, 1]


def test_many_warnings_are_said_in_six_lines_and_all_kept():
    d = doc()
    d["flows"] = [{"name": f"f{i}", "tcp": {"snd_buffer": "1MB", "rcv_buffer": "32MiB"}} for i in range(8)]
    with pytest.warns(BufferWarning) as said:
        result = fatpipe.run(dict(d, duration="1s"))
    assert len(said) == 6 and str(said[-1].message) == (
        "... and 3 more buffer warnings like these (summary.json warnings, Result.warnings)")
    assert [w["flow"] for w in result.warnings] == [f"f{i}" for i in range(8)]
