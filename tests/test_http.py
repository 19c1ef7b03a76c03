"""HTTP workloads ([flows.http]): schema, errors, and end to end on document 000's path
(issue 4, acceptance 6: every HTTP/1.0 object costs at least one RTT more than on a
persistent connection)."""

import math
import subprocess
import sys

import pytest

from fatpipe.scenario import ScenarioError, load_scenario

PS_PER_S = 10**12
RTT_S = 0.067
OBJECTS = ["2KB", "7KB", "10KB", "30KB", "100KB", "422KB"]
#: Document 000's path and hosts: OC-12, 67 ms, initial window 2, SACK, buffers of one BDP.
PATH = {"bottleneck_rate": "622Mbps", "rtt": "67ms", "queue": {"limit_bdp": 2}}
HOSTS = {"initial_window": 2, "rcv_buffer": "5209300B", "snd_buffer": "5209300B"}


def doc(http, cc="sack", tcp=None, **flow):
    return {
        "duration": "30s",
        "topology": PATH,
        "flows": [dict({"cc": cc, "tcp": dict(HOSTS, **(tcp or {})), "http": http}, **flow)],
        "output": {"plots": False},
    }


def source(http, **flow):
    return load_scenario(doc(http, **flow))["flows"][0]["source"]


def test_defaults_and_normalization():
    s = source({"objects": OBJECTS})
    assert s == {
        "kind": "http", "start_ps": 0, "stop_ps": None, "persistent": True,
        "objects_bytes": [2000, 7000, 10000, 30000, 100000, 422000],
        "requests": 6,  # one per object
        "request_bytes": 124,  # document 000's GET, CRLF line ends
        "server_pacing": None,
    }
    s = source({"version": "1.0", "objects": ["422KB"], "requests": 100, "burst_size": "64KB", "burst_period": "10ms"})
    assert (s["persistent"], s["requests"]) == (False, 100)
    assert s["server_pacing"] == {"burst_bytes": 64000, "period_ps": 10 * 10**9}
    flow = load_scenario(doc({"objects": ["2KB"]}))["flows"][0]
    assert flow["tcp"]["handshake"] is True  # HTTP opens its connections
    assert load_scenario(doc({"objects": ["2KB"]}, tcp={"handshake": False}))["flows"][0]["tcp"]["handshake"] is False


@pytest.mark.parametrize(
    "http, flow, message",
    [
        ({}, {}, "flows[0].http.objects: missing; required"),
        ({"objects": []}, {}, "flows[0].http.objects: [] is not allowed: expected a non-empty array"),
        ({"objects": ["2KB", "0KB"]}, {}, "flows[0].http.objects[1]: "),
        ({"objects": ["2KB"], "version": "2"}, {}, 'flows[0].http.version: "2" is not allowed: expected one of: "1.0", "1.1"'),
        ({"objects": ["2KB"], "requests": 0}, {}, "flows[0].http.requests: 0 is not allowed"),
        ({"objects": ["2KB"], "request_size": "2KB"}, {}, "flows[0].http.request_size: 2000 bytes is not allowed: a request is one segment, at most the MSS (1448 bytes)"),
        ({"objects": ["2KB"], "burst_size": "64KB"}, {}, "flows[0].http.burst_period: missing; required with burst_size"),
        ({"objects": ["2KB"], "burst_period": "10ms"}, {}, "flows[0].http.burst_size: missing; required with burst_period"),
        ({"objects": ["2KB"], "pipelining": True}, {}, "flows[0].http.pipelining: unknown key"),
        ({"objects": ["2KB"]}, {"bytes": "1MB"}, "flows[0].bytes: 1MB is not allowed: not with [flows.http]"),
        ({"objects": ["2KB"]}, {"burst_size": "64KB", "burst_period": "10ms"}, "flows[0].burst_size: 64KB is not allowed: not with [flows.http]: pace the server's responses with [flows.http] burst_size"),
        ({"objects": ["2KB"]}, {"burst_carry_over": True}, "flows[0].burst_carry_over: true is not allowed: not with [flows.http]"),
        ({"objects": ["2KB"]}, {"streams": 2}, "flows[0].streams: 2 is not allowed: not with [flows.http]"),
        ({"objects": ["2KB"], "version": "1.0"}, {"tcp": {"handshake": False}}, "flows[0].tcp.handshake: false is not allowed: HTTP/1.0 opens a connection per request"),
    ],
)
def test_errors_name_the_field(http, flow, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc(http, **flow))
    text = str(err.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_the_command_line_reports_an_http_mistake_on_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        'duration = "1s"\n[topology]\nbottleneck_rate = "10Mbps"\nrtt = "10ms"\n'
        '[[flows]]\n[flows.http]\nversion = 1.1\nobjects = ["2KB"]\n',
        encoding="utf-8",
    )
    proc = subprocess.run([sys.executable, "-m", "fatpipe", "validate", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert 'flows[0].http.version: 1.1 is not allowed: expected one of: "1.0", "1.1"' in proc.stderr


# ---- end to end ------------------------------------------------------------------------


def run(http, **flow):
    pytest.importorskip("fatpipe._core")
    import fatpipe

    return fatpipe.run(doc(http, **flow))


def test_http10_costs_at_least_one_rtt_more_per_object_than_persistent(tmp_path):
    http10 = run({"version": "1.0", "objects": OBJECTS})
    # A persistent connection opened beforehand, so that every object compares.
    warm = run({"version": "1.1", "objects": OBJECTS}, tcp={"handshake": False})
    a, b = http10.requests, warm.requests
    assert list(a["size_bytes"]) == [2000, 7000, 10000, 30000, 100000, 422000]
    assert list(a["connection"]) == [0, 1, 2, 3, 4, 5] and list(b["connection"]) == [0] * 6
    extra = a["response_time_s"] - b["response_time_s"]
    assert (extra >= RTT_S).all(), list(extra)
    # Each request is the previous one's successor: it starts at the previous last byte.
    assert (a["start_s"].iloc[1:].to_numpy() == a["last_byte_s"].iloc[:-1].to_numpy()).all()
    assert a["throughput_bps"].tolist() == pytest.approx((a["size_bytes"] * 8 / a["response_time_s"]).tolist())
    flow = http10.summary["flows"][0]
    assert (flow["connections"], flow["requests_completed"], flow["completed"]) == (6, 6, True)
    assert flow["bytes_delivered"] == 571_000
    http10.write(tmp_path, plots=False)
    import pandas as pd

    assert pd.read_parquet(tmp_path / "requests.parquet")["response_time_s"].tolist() == a["response_time_s"].tolist()


def test_nocc_with_pacing_takes_size_over_burst_size_periods():
    # Document 000's NOCC + paced Apache: each response is burst_size every burst_period.
    result = run(
        {"objects": ["100KB", "422KB"], "burst_size": "32KB", "burst_period": "10ms"},
        cc="nocc", tcp={"handshake": False},
    )
    r = result.requests
    for size, t in zip(r["size_bytes"], r["response_time_s"]):
        periods = math.ceil(size / 32_000) - 1
        # request + response one RTT, (bursts - 1) periods, the last burst on the wire.
        assert RTT_S + periods * 0.010 < t < RTT_S + periods * 0.010 + 0.001, (size, t)
    flow = result.summary["flows"][0]
    assert flow["bursts"] == math.ceil(100 / 32) + math.ceil(422 / 32)
    assert flow["failed_burst_cycles"] == 0


def test_stop_ends_the_requests_and_completes_the_one_under_way():
    result = run({"version": "1.0", "objects": ["100KB"], "requests": 100}, stop="1s")
    r = result.requests
    assert (r["start_s"] < 1.0).all() and r["last_byte_s"].max() > 1.0
    flow = result.summary["flows"][0]
    assert flow["requests_completed"] == len(r) < 100
    assert flow["completed"] is False


def test_the_run_summary_lists_requests_and_stream_groups():
    from fatpipe.cli_tables import summary_table

    result = run({"version": "1.0", "objects": ["2KB", "7KB"]})
    text = summary_table(result.summary, 1.0, result.scenario)
    assert "requests done" in text and " 2/2 " in text
    pytest.importorskip("fatpipe._core")
    import fatpipe

    streams = fatpipe.run({"duration": "1s", "topology": PATH, "flows": [{"name": "p", "streams": 2}], "output": {"plots": False}})
    text = summary_table(streams.summary, 1.0, streams.scenario)
    assert "summed goodput Mb/s" in text and "p.1" in text and "p.2" in text
