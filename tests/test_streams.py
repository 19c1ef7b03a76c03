"""Parallel streams (iperf -P, document 001's E1.6): a flow with streams = N becomes N TCP
flows between the same hosts, reported per stream and summed per group."""

import json

import pytest

from fatpipe.scenario import ScenarioError, load_scenario

#: Document 001's back-to-back path with 30 ms, 1 Gb/s; windows small enough that N
#: streams stay window-limited: 4 x 256 KiB / 30 ms = 280 Mb/s.
PATH = {"bottleneck_rate": "1Gbps", "rtt": "30ms"}
WINDOW = 256 * 1024


def doc(*flows, duration="10s"):
    return {"duration": duration, "topology": PATH, "flows": list(flows), "output": {"plots": False}}


def test_a_flow_with_streams_becomes_a_group_of_flows():
    core = load_scenario(doc({"name": "bulk", "streams": 3, "bytes": "10MB", "cc": "cubic", "tcp": {"rcv_buffer": "256KiB"}}, {"name": "other"}))
    flows = core["flows"]
    assert [f["name"] for f in flows] == ["bulk.1", "bulk.2", "bulk.3", "other"]
    assert [f["group"] for f in flows] == ["bulk", "bulk", "bulk", None]
    # 10 MB shared out: the first (10,000,000 mod 3 = 1) stream carries a byte more.
    assert [f["source"]["bytes"] for f in flows[:3]] == [3_333_334, 3_333_333, 3_333_333]
    for f in flows[1:3]:
        assert (f["src"], f["dst"], f["tcp"], f["cc"]) == (flows[0]["src"], flows[0]["dst"], flows[0]["tcp"], flows[0]["cc"])
    assert flows[0]["cc"]["algorithm"] == "cubic" and flows[0]["tcp"]["rcv_buffer_bytes"] == WINDOW
    # One stream is the flow itself.
    assert [f["name"] for f in load_scenario(doc({"name": "x", "streams": 1}))["flows"]] == ["x"]
    assert [f["name"] for f in load_scenario(doc({"streams": 2}))["flows"]] == ["flow0.1", "flow0.2"]


@pytest.mark.parametrize(
    "flows, message",
    [
        ([{"streams": 0}], "flows[0].streams: 0 is not allowed: must be at least 1"),
        ([{"streams": 2.5}], "flows[0].streams: 2.5 is not allowed: expected a whole number"),
        ([{"streams": 2, "burst_size": "64KB", "burst_period": "10ms"}], "flows[0].streams: 2 is not allowed: parallel streams are bulk transfers"),
        ([{"streams": 4, "bytes": "3B"}], "flows[0].bytes: 3 is not allowed: must give each of the 4 streams at least one byte"),
        ([{"name": "a", "streams": 2}, {"name": "a.2"}], 'flows[0].streams: 2 is not allowed: stream name "a.2" is already the name of flows[1]'),
    ],
)
def test_errors(flows, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc(*flows))
    assert str(err.value).startswith(message), str(err.value)


def test_window_limited_streams_sum_to_n_windows_per_rtt(tmp_path):
    pytest.importorskip("fatpipe._core")
    import fatpipe
    import pandas as pd

    n = 4
    result = fatpipe.run(doc({"name": "p", "streams": n, "tcp": {"rcv_buffer": "256KiB"}}))
    streams = result.flows
    assert list(streams["name"]) == [f"p.{k}" for k in range(1, n + 1)]
    window_bps = WINDOW * 8 / 0.030
    # Each stream moves one window per RTT (the path is far from full: 280 of 1000 Mb/s).
    for g in streams["goodput_bps"]:
        assert g == pytest.approx(window_bps, rel=0.03)
    (group,) = result.summary["groups"]
    assert (group["name"], group["streams"], group["completed"]) == ("p", n, False)
    assert group["goodput_bps"] == pytest.approx(n * window_bps, rel=0.03)
    # Per-stream rows sum to the group row.
    for key in ("bytes_delivered", "bytes_sent", "segments_sent", "goodput_bps", "run_goodput_bps"):
        assert group[key] == pytest.approx(sum(streams[key])), key
    assert result.groups.loc[0, "bytes_delivered"] == group["bytes_delivered"]
    result.write(tmp_path, plots=False)
    assert json.loads((tmp_path / "summary.json").read_text())["groups"][0]["name"] == "p"
    assert pd.read_parquet(tmp_path / "groups.parquet")["goodput_bps"].tolist() == [group["goodput_bps"]]


def test_a_single_flow_has_no_group(tmp_path):
    pytest.importorskip("fatpipe._core")
    import fatpipe

    result = fatpipe.run(doc({"name": "one"}, duration="1s"))
    assert result.summary["groups"] == [] and len(result.groups) == 0
    assert result.flows.loc[0, "group"] is None
    result.write(tmp_path, plots=False)
    assert not (tmp_path / "groups.parquet").exists()
    assert not (tmp_path / "requests.parquet").exists()
