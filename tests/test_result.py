"""Result: summary arithmetic, tables, series, files and plots (on synthetic core output)."""

import json
import math

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from fake_core import fake_output  # noqa: E402

from fatpipe import Result, load_scenario  # noqa: E402
from fatpipe.plots import plot_cwnd, plot_throughput  # noqa: E402

PS_PER_S = 10**12

SCENARIO = {
    "name": "two-flows",
    "duration": "2s",
    "topology": {"bottleneck_rate": "100Mbps", "rtt": "40ms"},
    "flows": [{"name": "a"}, {"name": "b", "tcp": {"timestamps": False}}],
    "output": {"sample_interval": "100ms"},
}


@pytest.fixture(scope="module")
def result():
    core = load_scenario(SCENARIO)
    return Result(fake_output(core), core)


def test_summary_adds_goodput_and_utilization(result):
    s = result.summary
    assert s["duration_s"] == 2.0
    a, b = s["flows"]
    # a: 2 MB delivered by its last byte at 1 s -> 16 Mb/s active, 8 Mb/s over the run.
    assert a["bytes_delivered"] == 2_000_000
    assert a["goodput_bps"] == pytest.approx(16e6)
    assert a["run_goodput_bps"] == pytest.approx(8e6)
    assert b["goodput_bps"] == pytest.approx(16e6)
    assert s["total_goodput_bps"] == pytest.approx((2e6 + 4e6) * 8 / 2)
    for link in s["links"]:
        assert link["utilization"] == pytest.approx(0.25)
    assert s["events"] == 12345
    json.dumps(s, allow_nan=False)  # JSON-ready


def test_goodput_zero_when_nothing_delivered():
    core = load_scenario(SCENARIO)
    out = fake_output(core)
    out["summary"]["flows"][0].update(end_ps=None, bytes_delivered=0)
    assert Result(out, core).summary["flows"][0]["goodput_bps"] == 0.0


def test_flow_and_link_tables(result):
    assert list(result.flows["name"]) == ["a", "b"]
    assert "goodput_bps" in result.flows.columns
    assert list(result.links["name"]) == [
        "access_fwd_sender", "bottleneck", "access_fwd_receiver",
        "access_rev_receiver", "bottleneck_rev", "access_rev_sender",
    ]
    assert "utilization" in result.links.columns


def test_flow_series(result):
    fs = result.flow_series
    assert list(fs.columns) == [
        "time_s", "flow", "cwnd_segments", "cwnd_bytes", "ssthresh_segments", "outstanding_bytes",
        "srtt_s", "delivered_bytes", "sent_bytes", "throughput_bps", "send_rate_bps",
    ]
    a = fs[fs["flow"] == "a"].reset_index(drop=True)
    b = fs[fs["flow"] == "b"].reset_index(drop=True)
    assert len(a) == 21  # 0, 0.1, ..., 2.0 s
    assert a["time_s"].iloc[-1] == 2.0
    # First row 0, then 1 MB/s = 8 Mb/s (a) and 16 Mb/s (b).
    assert a["throughput_bps"].iloc[0] == 0
    assert a["throughput_bps"].iloc[1:].tolist() == pytest.approx([8e6] * 20)
    assert b["throughput_bps"].iloc[1:].tolist() == pytest.approx([16e6] * 20)
    assert a["send_rate_bps"].iloc[1:].tolist() == pytest.approx([16e6] * 20)
    # cwnd in bytes uses each flow's MSS (b has no timestamps: 1460).
    assert (a["cwnd_bytes"] == a["cwnd_segments"] * 1448).all()
    assert (b["cwnd_bytes"] == b["cwnd_segments"] * 1460).all()
    # -1 from the core means unset / no sample: NaN here.
    assert math.isnan(a["ssthresh_segments"].iloc[0]) and a["ssthresh_segments"].iloc[-1] == 50
    assert math.isnan(a["srtt_s"].iloc[0]) and a["srtt_s"].iloc[1] == pytest.approx(0.040)


def test_queue_series(result):
    qs = result.queue_series
    assert list(qs.columns) == [
        "time_s", "link", "queue_packets", "queue_bytes", "drops_packets", "departed_bytes", "utilization",
        "queue_delay_s", "red_avg_packets", "early_drops_packets", "ecn_marks", "sojourn_s", "aqm_dropping",
        "aqm_control", "l4s_queue_packets", "l4s_sojourn_s", "prob_classic", "prob_l4s_coupled",
    ]
    bottleneck = qs[qs["link"] == "bottleneck"]
    # Drop-tail links have no RED average (the core's -1).
    assert qs["red_avg_packets"].isna().all()
    # 100 Mb/s: each queued byte waits 80 ns.
    assert bottleneck["queue_delay_s"].tolist() == pytest.approx((bottleneck["queue_bytes"] * 8e-8).tolist())
    assert bottleneck["utilization"].iloc[0] == 0
    # departed bytes grow at rate/16 bytes per second = half the line rate.
    assert bottleneck["utilization"].iloc[1:].tolist() == pytest.approx([0.5] * 20)


def test_uneven_last_interval():
    doc = dict(SCENARIO, duration="1.05s")
    core = load_scenario(doc)
    fs = Result(fake_output(core), core).flow_series
    a = fs[fs["flow"] == "a"]
    assert a["time_s"].iloc[-1] == pytest.approx(1.05)
    # The last interval is 50 ms long, and the rate is still 8 Mb/s.
    assert a["throughput_bps"].iloc[-1] == pytest.approx(8e6, rel=1e-3)


def test_series_is_wide(result):
    cwnd = result.series("cwnd_segments")
    assert list(cwnd.columns) == ["a", "b"]
    assert cwnd.index.name == "time_s"
    assert len(cwnd) == 21
    q = result.series("queue_packets")
    assert list(q.columns)[:2] == ["access_fwd_sender", "bottleneck"]
    assert (q["bottleneck"] == 1).all()
    with pytest.raises(KeyError, match="available"):
        result.series("nonsense")


def test_write_files_are_deterministic(result, tmp_path):
    first = result.write(tmp_path / "one")
    second = result.write(tmp_path / "two")
    names = sorted(p.name for p in first.iterdir())
    assert names == ["cwnd.png", "flow_series.parquet", "queue_series.parquet", "scenario.json",
                     "summary.json", "throughput.png"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    summary = json.loads((first / "summary.json").read_text())
    assert summary == json.loads(json.dumps(result.summary))
    text = (first / "summary.json").read_text()
    assert str(tmp_path) not in text
    assert json.loads((first / "scenario.json").read_text()) == result.scenario


def test_parquet_round_trip(result, tmp_path):
    out = result.write(tmp_path, plots=False)
    assert not (out / "cwnd.png").exists()
    fs = pd.read_parquet(out / "flow_series.parquet")
    assert list(fs.columns) == list(result.flow_series.columns)
    assert fs["throughput_bps"].tolist() == pytest.approx(result.flow_series["throughput_bps"].tolist())
    qs = pd.read_parquet(out / "queue_series.parquet")
    assert len(qs) == len(result.queue_series)


def test_plots_off_in_scenario(tmp_path):
    core = load_scenario(SCENARIO)
    r = Result(fake_output(core), core, plots=False)
    r.write(tmp_path)
    assert not (tmp_path / "throughput.png").exists()


def test_plot_titles(result, tmp_path):
    assert plot_cwnd(result, tmp_path / "c.png") == "two-flows: congestion window"
    assert plot_throughput(result, tmp_path / "t.png") == "two-flows: throughput (delivered, per 100 ms)"
    assert (tmp_path / "c.png").stat().st_size > 0


def test_repr(result):
    assert "two-flows" in repr(result)


def test_derived_columns_agree_with_the_real_core():
    """With the compiled core: the per-interval columns add up to the core's totals."""
    pytest.importorskip("fatpipe._core")
    import fatpipe

    r = fatpipe.run(dict(SCENARIO, duration="3s"))
    fs, qs = r.flow_series, r.queue_series
    for flow in r.summary["flows"]:
        rows = fs[fs["flow"] == flow["name"]]
        # Sum of throughput x interval = bytes delivered.
        delivered = (rows["throughput_bps"] * rows["time_s"].diff().fillna(0)).sum() / 8
        assert delivered == pytest.approx(flow["bytes_delivered"], rel=1e-9)
        assert rows["delivered_bytes"].iloc[-1] == flow["bytes_delivered"]
    for link in r.summary["links"]:
        rows = qs[qs["link"] == link["name"]]
        assert rows["departed_bytes"].iloc[-1] == link["bytes_sent"]
        # Mean per-interval utilization ~ busy time / duration (they differ only by the
        # frame in transmission at the end).
        mean = (rows["utilization"] * rows["time_s"].diff().fillna(0)).sum() / r.summary["duration_s"]
        assert mean == pytest.approx(link["utilization"], abs=1e-3)


# ---- drops by cause --------------------------------------------------------------------


def test_total_drops_adds_every_cause(result):
    # fake_core: link j has j overflows, 10 j early, 100 j random and 1000 j outage drops.
    for j, link in enumerate(result.summary["links"]):
        assert link["total_drops_packets"] == 1111 * j
    assert "total_drops_packets" in result.links.columns


def _link_rows(text):
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("link "))
    return lines[header].split("  "), {line.split()[0]: line.split() for line in lines[header + 1:]}


def test_summary_table_without_red_or_impairments_keeps_one_drops_column():
    from fatpipe.cli_tables import summary_table

    core = load_scenario(SCENARIO)
    out = fake_output(core)
    for link in out["summary"]["links"]:
        link.update(early_drops_packets=0, impairment_drops_packets=0, outage_drops_packets=0)
    r = Result(out, core)
    text = summary_table(r.summary, 1.0, r.scenario)
    header, rows = _link_rows(text)
    assert [h.strip() for h in header if h.strip()] == ["link", "rate", "utilization", "drops"]
    assert rows["bottleneck"][-1] == "1"  # link 1: one overflow


def test_summary_table_breaks_drops_down_by_cause():
    from fatpipe.cli_tables import summary_table

    doc = dict(SCENARIO)
    doc["topology"] = dict(
        SCENARIO["topology"],
        queue={"discipline": "red"},
        impairments=[
            {"link": "bottleneck", "kind": "bernoulli", "probability": 0.01},
            {"link": "bottleneck", "kind": "outage", "start": "1s", "duration": "0.5s"},
        ],
    )
    core = load_scenario(doc)
    r = Result(fake_output(core), core)
    text = summary_table(r.summary, 1.0, r.scenario)
    header, rows = _link_rows(text)
    assert [h.strip() for h in header if h.strip()] == [
        "link", "rate", "utilization", "drops", "overflow", "early (AQM)", "random loss", "outage",
    ]
    # bottleneck is link 1: total 1111 = 1 overflow + 10 early + 100 random + 1000 outage.
    assert rows["bottleneck"][-5:] == ["1111", "1", "10", "100", "1000"]
    # A cause that is configured shows even where nothing was dropped (link 0).
    assert rows["access_fwd_sender"][-5:] == ["0", "0", "0", "0", "0"]
