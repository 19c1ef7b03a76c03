"""End-to-end checks through the public API and the `fatpipe` command, as a user runs them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

fatpipe = pytest.importorskip("fatpipe")
pytest.importorskip("fatpipe._core")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "fatpipe", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=600,
    )


def delivered_between(result, flow, t0, t1):
    fs = result.flow_series
    f = fs[fs["flow"] == flow].set_index("time_s")["delivered_bytes"]
    return int(f.loc[t1] - f.loc[t0])


def test_reference_run_fills_the_pipe(tmp_path):
    """Acceptance 1: 100 Mb/s, 40 ms RTT, one BDP of drop-tail buffer, 60 s."""
    result = fatpipe.run(EXAMPLES / "reno-100M-40ms.toml")
    flow = result.flows.iloc[0]
    wire = 1500 + 38
    payload_rate_bps = 100e6 * flow["mss_bytes"] / wire
    last40 = delivered_between(result, flow["name"], 20.0, 60.0) * 8 / 40.0
    assert last40 >= 0.95 * payload_rate_bps, (last40, payload_rate_bps)
    # The whole-run figure includes the slow start overshoot: lower, but reported.
    whole = result.summary["flows"][0]["goodput_bps"]
    assert 0.5 * payload_rate_bps < whole < last40
    assert result.summary["flows"][0]["timeouts"] == 0
    # Past start-up the bottleneck is busy all the time (the buffer is one BDP, so the
    # queue never drains after a halving); over the whole run the repair of the slow-start
    # losses leaves it idle for a while.
    qs = result.queue_series
    departed = qs[qs["link"] == "bottleneck"].set_index("time_s")["departed_bytes"]
    steady_utilization = (departed.loc[60.0] - departed.loc[20.0]) * 8 / (40.0 * 100e6)
    assert steady_utilization > 0.99, steady_utilization
    whole_run = result.links.set_index("name").loc["bottleneck", "utilization"]
    assert 0.5 < whole_run < steady_utilization


def test_cli_run_writes_summary_series_and_plots(tmp_path):
    out = tmp_path / "run"
    proc = cli("run", EXAMPLES / "window-limited-64KB.toml", "-o", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    for name in ["summary.json", "scenario.json", "flow_series.parquet", "queue_series.parquet", "cwnd.png", "throughput.png"]:
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    flow = summary["flows"][0]
    # 64 KB window (no scaling) over 70 ms: 45 full segments a round trip.
    window_over_rtt = 65_535 * 8 / 0.070
    assert 0.9 * window_over_rtt < flow["goodput_bps"] <= window_over_rtt
    import pandas as pd

    fs = pd.read_parquet(out / "flow_series.parquet")
    assert {"time_s", "flow", "cwnd_segments", "throughput_bps"} <= set(fs.columns)
    assert fs["outstanding_bytes"].max() <= 65_535


def test_same_scenario_and_seed_give_byte_identical_summary(tmp_path):
    """Acceptance 5."""
    runs = []
    for i in range(2):
        out = tmp_path / f"r{i}"
        proc = cli("run", EXAMPLES / "window-limited-64KB.toml", "-o", out, "--seed", 7, "--quiet", "--no-plots")
        assert proc.returncode == 0, proc.stderr
        runs.append((out / "summary.json").read_bytes())
    assert runs[0] == runs[1]
    assert json.loads(runs[0])["seed"] == 7


def test_api_takes_a_dict_and_returns_dataframes():
    scenario = {
        "duration": "3s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "10Mbps", "rtt": "20ms"},
        "flows": [{"name": "a"}, {"name": "b", "start": "1s"}],
        "output": {"sample_interval": "100ms"},
    }
    result = fatpipe.run(scenario)
    assert list(result.flows["name"]) == ["a", "b"]
    cwnd = result.series("cwnd_segments")
    assert list(cwnd.columns) == ["a", "b"]
    assert len(cwnd) == 31  # samples at 0, 0.1, ..., 3.0 s
    # Flow b starts at 1 s: nothing delivered before.
    delivered = result.series("delivered_bytes")
    assert delivered.loc[0.9, "b"] == 0 and delivered.loc[3.0, "b"] > 0
    # Two flows share 10 Mb/s: together they cannot exceed the payload rate.
    total = sum(f["bytes_delivered"] for f in result.summary["flows"]) * 8 / 3.0
    assert total <= 10e6 * 1448 / 1538 * 1.001
