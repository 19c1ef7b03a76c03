"""Parallel paths that reorder (document 004, E4.5) and the receiver drain-rate cap
(document 000's 130 Mb/s hosts), through the scenario format (issue 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fatpipe
from fatpipe.scenario import ScenarioError, read_scenario_file

DOC004_PATHS = [
    # Document 004's pipes: 30% to 30 Mb/s, then half the rest to 50 Mb/s, the rest to 20 Mb/s.
    {"probability": 0.3, "rate": "30Mbps", "delay": "50ms"},
    {"probability": 0.35, "rate": "50Mbps", "delay": "40ms"},
    {"probability": 0.35, "rate": "20Mbps", "delay": "42.5ms"},
]


def split_scenario(paths, flows, duration="10s"):
    return {
        "name": "split",
        "duration": duration,
        "topology": {
            "shape": "dumbbell", "bottleneck_rate": "1Gbps", "rtt": "120ms",
            "impairments": [{"link": "bottleneck", "kind": "parallel_paths", "paths": paths}],
        },
        "flows": flows,
        "output": {"plots": False},
    }


def test_split_follows_the_probabilities_within_2_percent_over_1e5_packets():
    # 100,000+ datagrams at 100 Mb/s over three fast paths (no queueing), chosen per packet.
    fast = [dict(p, rate="1Gbps") for p in DOC004_PATHS]
    result = fatpipe.run(split_scenario(fast, [{"name": "u", "transport": "udp", "udp": {"mode": "cbr", "rate": "100Mbps"}}], "14s"))
    links = {link["name"]: link for link in result.summary["links"]}
    sent = [links[f"bottleneck.path{j}"]["packets_sent"] for j in range(3)]
    assert sum(sent) >= 100_000
    for count, p in zip(sent, DOC004_PATHS):
        assert count / sum(sent) == pytest.approx(p["probability"], rel=0.02)
    assert "bottleneck" not in links  # replaced by its paths
    assert result.summary["flows"][0]["datagrams_lost"] == 0


def test_the_receiver_sees_reordering_and_dcr_spares_the_window():
    def run(dcr):
        # Document 004's hosts: Linux 2.4, which could not learn this much reordering (its
        # limit is 127 segments), so that DCR's effect shows.
        tcp = {"profile": "linux-2.4", **({"dcr_div": 1} if dcr else {})}
        return fatpipe.run(split_scenario(DOC004_PATHS, [{"name": "t", "cc": "sack", "tcp": tcp}])).summary["flows"][0]

    plain, dcr = run(False), run(True)
    assert plain["out_of_order_segments"] > 100
    # Reordering, not loss: nothing is dropped, yet plain SACK TCP retransmits; DCR waits an
    # RTT before believing a hole is a loss.
    assert plain["data_packets_lost"] == 0 and plain["fast_retransmits"] > 0
    assert dcr["fast_retransmits"] < plain["fast_retransmits"]
    assert dcr["goodput_bps"] > plain["goodput_bps"]


@pytest.mark.parametrize(
    "paths, message",
    [
        ([dict(DOC004_PATHS[0], probability=0.5), DOC004_PATHS[1]], "topology.impairments[0].paths: probabilities sum to 0.85, not allowed: they must sum to 1"),
        ([DOC004_PATHS[0]], "topology.impairments[0].paths: "),
        ([dict(DOC004_PATHS[0], probability=0), DOC004_PATHS[1]], "topology.impairments[0].paths[0].probability: 0 is not allowed"),
        ([dict(DOC004_PATHS[0], rate="0bps"), DOC004_PATHS[1]], "topology.impairments[0].paths[0].rate: "),
    ],
)
def test_bad_parallel_paths(paths, message):
    with pytest.raises(ScenarioError) as err:
        fatpipe.load_scenario(split_scenario(paths, [{"name": "t"}]))
    assert str(err.value).startswith(message), str(err.value)


def drain_scenario(drain):
    tcp = {"rcv_buffer": "5209300B", "snd_buffer": "5209300B", "initial_window": 2}
    if drain:
        tcp["receiver_drain_rate"] = drain
    return {
        "name": "doc000-host",
        "duration": "30s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "622Mbps", "rtt": "67ms"},
        "flows": [{"name": "f", "cc": "sack", "tcp": tcp}],
        "output": {"plots": False},
    }


def test_document_000_host_cap_holds_goodput_at_130_mbps_without_loss():
    capped_run = fatpipe.run(drain_scenario("130Mbps"))
    capped = capped_run.summary["flows"][0]
    free = fatpipe.run(drain_scenario(None)).summary["flows"][0]
    # After start-up (IW 2 at 67 ms: slow start takes about a second) the reader sets the
    # pace: goodput over the last 20 s.
    delivered = capped_run.series("delivered_bytes")["f"]
    steady_bps = (delivered.loc[30.0] - delivered.loc[10.0]) * 8 / 20
    assert steady_bps == pytest.approx(130e6, rel=0.02)
    assert capped["goodput_bps"] == pytest.approx(130e6, rel=0.03)  # whole run, start-up included
    assert free["goodput_bps"] > 500e6
    for f in (capped, free):
        assert f["data_packets_lost"] == 0 and f["segments_retransmitted"] == 0
    # The application lags the network: delivered bytes wait in the buffer to be read.
    assert capped["bytes_read"] < capped["bytes_delivered"] and free["bytes_read"] == free["bytes_delivered"]


def test_drain_rate_must_be_positive():
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.tcp\.receiver_drain_rate: "):
        fatpipe.load_scenario(drain_scenario("0Mbps"))


# ---- E4.5 end to end: the example, 30 s, with and without DCR ---------------------------------

#: Document 004's iperf report, Mb/s per 5 s, and the 30 s averages.
DOC004_E45 = {
    False: ([9.51, 20.2, 27.2, 32.8, 39.0, 44.0], 29.0),
    True: ([9.29, 24.5, 32.4, 38.5, 41.5, 44.0], 32.0),
}
REORDERING_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reordering-3-paths.toml"


def _e45_run(dcr, reordering=True):
    doc = read_scenario_file(REORDERING_EXAMPLE)
    if dcr:
        doc["flows"][0]["tcp"]["dcr_div"] = 1
    if not reordering:
        # The same flow over one 100 Mb/s path with the same RTT: no reordering.
        doc["topology"]["impairments"] = []
        doc["topology"]["bottleneck_rate"] = "100Mbps"
    return fatpipe.run(doc)


def _per_5s_mbps(result):
    delivered = result.series("delivered_bytes").iloc[:, 0]
    return [(delivered.loc[5.0 * (i + 1)] - delivered.loc[5.0 * i]) * 8 / 5 / 1e6 for i in range(6)]


def test_e45_dcr_under_reordering_next_to_document_004():
    runs = {dcr: _e45_run(dcr) for dcr in (False, True)}
    for dcr, result in runs.items():
        ours = _per_5s_mbps(result)
        doc_intervals, doc_avg = DOC004_E45[dcr]
        print(f"\nE4.5 GridDT {'with' if dcr else 'without'} DCR, Mb/s per 5 s")
        print("  document 004: " + ", ".join(f"{x:.2f}" for x in doc_intervals) + f" (avg {doc_avg})")
        print("  fatpipe:      " + ", ".join(f"{x:.2f}" for x in ours) + f" (avg {sum(ours) / 6:.2f})")
    plain, dcr = (runs[k].flows.iloc[0] for k in (False, True))
    # The flows table carries the receiver's and the sender's new counters.
    for column in ("out_of_order_segments", "duplicate_segments", "bytes_read", "zero_window_probes"):
        assert column in runs[True].flows.columns
    # Robust facts only. The receiver sees reordering; nothing is lost in the network, so every
    # fast retransmit without DCR is spurious (a duplicate at the receiver). DCR waits an RTT
    # and makes (far) fewer of them, and its goodput is not lower. The numbers themselves differ
    # from the document's (the example's comments say by how much and why).
    assert plain["out_of_order_segments"] > 100 and dcr["out_of_order_segments"] > 100
    assert plain["data_packets_lost"] == 0 and plain["fast_retransmits"] > 10
    assert plain["duplicate_segments"] > 0
    assert dcr["fast_retransmits"] < plain["fast_retransmits"] / 10
    assert dcr["duplicate_segments"] <= plain["duplicate_segments"]
    assert dcr["goodput_bps"] >= plain["goodput_bps"]
    # DCR stays below the ceiling: the 20 Mb/s path carries 35 % of the packets, so all paths
    # together carry about 20 / 0.35 = 57.1 Mb/s on the wire, 53.8 Mb/s of payload.
    assert dcr["goodput_bps"] < 1.01 * 20e6 / 0.35 * 1448 / 1538


def test_e45_dcr_costs_nothing_without_reordering():
    plain, dcr = (_e45_run(d, reordering=False).summary["flows"][0] for d in (False, True))
    assert dcr["goodput_bps"] == pytest.approx(plain["goodput_bps"], rel=0.02)
