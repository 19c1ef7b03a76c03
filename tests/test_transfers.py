"""Transfers one after another on one flow (a user rerunning iperf) and Linux's
per-destination metrics cache across them (issue 25 section 3): the scenario keys and their
errors, each profile's cache, and what a run reports per transfer."""

import pytest

from fatpipe.scenario import ScenarioError, load_scenario
from fatpipe.sweep_runner import flatten_summary

#: 100 Mb/s, 50 ms, a 100-packet queue the first slow start overflows.
PATH = {"bottleneck_rate": "100Mbps", "rtt": "50ms", "queue": {"limit_packets": 100}}


def doc(*flows, duration="30s"):
    return {"duration": duration, "topology": PATH, "flows": list(flows), "output": {"plots": False}}


def repeated(**tcp):
    return {"name": "f", "cc": "reno", "stop": "6s", "transfers": 2, "transfer_gap": "1s",
            "tcp": {"profile": "linux-2.4", "snd_buffer": "4MB", **tcp}}


def test_the_normalized_source_and_each_profiles_cache():
    flow = load_scenario(doc(repeated()))["flows"][0]
    assert flow["source"]["transfers"] == 2 and flow["source"]["transfer_gap_ps"] == 10**12
    assert flow["tcp"]["metrics"] == {"kernel": "linux24", "no_metrics_save": False, "no_ssthresh_metrics_save": False}
    linux = load_scenario(doc({"cc": "reno"}))["flows"][0]
    # Linux 5.6 and later keep ssthresh out of the cache by default (this machine's 6.18 reads 1).
    assert linux["tcp"]["metrics"] == {"kernel": "linux", "no_metrics_save": False, "no_ssthresh_metrics_save": True}
    assert linux["source"]["transfers"] is None
    for profile in ("rfc", "bsd-4.4", "ns2"):
        assert load_scenario(doc({"tcp": {"profile": profile}}))["flows"][0]["tcp"]["metrics"] is None
    off = load_scenario(doc(repeated(no_metrics_save=True)))["flows"][0]
    assert off["tcp"]["metrics"]["no_metrics_save"] is True


@pytest.mark.parametrize(
    "flow, message",
    [
        ({"transfers": 0, "stop": "1s"}, "flows[0].transfers: 0 is not allowed: must be at least 1"),
        ({"transfers": 2}, "flows[0].transfers: 2 is not allowed: each transfer must end: set bytes"),
        ({"transfer_gap": "1s"}, "flows[0].transfer_gap: set without transfers"),
        ({"transfers": 2, "stop": "1s", "burst_size": "64KB", "burst_period": "10ms"},
         "flows[0].transfers: 2 is not allowed: repeated transfers are bulk transfers"),
        ({"transfers": 2, "stop": "1s", "streams": 2}, "flows[0].transfers: 2 is not allowed: repeated transfers are one connection each, not with streams > 1"),
        ({"transfers": 2, "http": {"objects": ["10KB"]}}, "flows[0].transfers: 2 is not allowed: transfers are bulk transfers, not with [flows.http]"),
        ({"transfers": 2, "transport": "udp", "udp": {"mode": "cbr", "rate": "1Mbps"}},
         'flows[0].transfers: not allowed with transport = "udp"'),
        ({"tcp": {"profile": "linux-2.4", "no_ssthresh_metrics_save": False}},
         'flows[0].tcp.no_ssthresh_metrics_save: not allowed with profile = "linux-2.4": its kernel has no such switch'),
        ({"tcp": {"profile": "bsd-4.4", "no_metrics_save": True}},
         'flows[0].tcp.no_metrics_save: not allowed with profile = "bsd-4.4": 4.4BSD keeps its own cache'),
        ({"tcp": {"profile": "rfc", "no_metrics_save": False}},
         'flows[0].tcp.no_metrics_save: not allowed with profile = "rfc": the RFC stack keeps nothing'),
    ],
)
def test_errors(flow, message):
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc(flow))
    assert str(err.value).startswith(message), str(err.value)


def test_each_transfer_is_reported_and_the_second_starts_from_the_cache():
    pytest.importorskip("fatpipe._core")
    import fatpipe

    warm = fatpipe.run(doc(repeated())).summary["flows"][0]
    cold = fatpipe.run(doc(repeated(no_metrics_save=True))).summary["flows"][0]
    for entry in (warm, cold):
        first, second = entry["transfers"]
        assert entry["connections"] == 2
        assert first["end_ps"] is not None and second["end_ps"] is not None
        assert second["start_ps"] == first["end_ps"] + 10**12, "transfer_gap after the close"
        assert first["bytes_delivered"] + second["bytes_delivered"] == entry["bytes_delivered"]
        for t in (first, second):
            assert t["goodput_bps"] == pytest.approx(8 * t["bytes_delivered"] * 1e12 / (t["end_ps"] - t["start_ps"]))
        assert first["initial_ssthresh_segments"] is None and not first["metrics_seeded"]
    # Linux 2.4: the first connection closed in congestion avoidance, state Open, so the
    # second starts at max(cwnd / 2, ssthresh) of the first's close (tcp_update_metrics).
    first, second = warm["transfers"]
    assert second["metrics_seeded"]
    assert second["initial_ssthresh_segments"] == max(first["final_cwnd_segments"] // 2, first["final_ssthresh_segments"])
    # Its slow start ends at that ssthresh, not in a queue overflow; without the cache the
    # second connection is the first one again.
    assert second["segments_retransmitted"] < first["segments_retransmitted"]
    first, second = cold["transfers"]
    assert not second["metrics_seeded"] and second["initial_ssthresh_segments"] is None
    assert (second["bytes_delivered"], second["segments_retransmitted"]) == (first["bytes_delivered"], first["segments_retransmitted"])
    row = flatten_summary(fatpipe.run(doc(repeated())).summary)
    assert row["flows.f.transfers.2.initial_ssthresh_segments"] == second_ssthresh(warm)


def second_ssthresh(entry):
    return entry["transfers"][1]["initial_ssthresh_segments"]


def test_a_flow_without_transfers_reports_none():
    pytest.importorskip("fatpipe._core")
    import fatpipe

    summary = fatpipe.run(doc({"cc": "reno", "bytes": "1MB"}, duration="5s")).summary
    assert "transfers" not in summary["flows"][0]
    assert not any(".transfers." in key for key in flatten_summary(summary))
