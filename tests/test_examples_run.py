"""Every example runs from the command line as a user would run it, and the issue-4
examples show what their comments claim."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fatpipe._core")
import fatpipe  # noqa: E402
from fatpipe.scenario import read_scenario_file  # noqa: E402

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path, tmp_path):
    if "\nbpf = " in path.read_text() and shutil.which(os.environ.get("CLANG", "clang")) is None:
        pytest.skip("clang is not installed (the example's BPF congestion control is compiled with it)")
    proc = subprocess.run(
        [sys.executable, "-m", "fatpipe", "run", str(path), "-o", str(tmp_path), "--quiet", "--no-plots"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(f["bytes_delivered"] > 0 for f in summary["flows"])


def _goodputs(result):
    return {f["name"]: f["goodput_bps"] for f in result.summary["flows"]}


def test_parking_lot_long_flow_gets_less_than_every_cross_flow():
    path = next(p for p in EXAMPLES if p.stem == "parking-lot-3hops")
    g = _goodputs(fatpipe.run(path))
    assert all(g["long"] < g[f"cross{i}"] for i in (1, 2, 3)), g


def test_reverse_traffic_costs_the_forward_flow():
    path = next(p for p in EXAMPLES if p.stem == "reverse-traffic-ack-compression")
    both = _goodputs(fatpipe.run(path))
    alone_doc = read_scenario_file(path)
    alone_doc["flows"] = [f for f in alone_doc["flows"] if f["name"] == "forward"]
    alone = _goodputs(fatpipe.run(alone_doc))
    assert both["forward"] < 0.95 * alone["forward"], (both, alone)
    assert both["reverse"] > 0


def test_http_example_pays_one_rtt_per_http10_connection():
    path = next(p for p in EXAMPLES if p.stem == "http-paced-67ms")
    q = fatpipe.run(path).requests
    http10 = q[q["flow"] == "http10"].set_index("request")["response_time_s"]
    http11 = q[q["flow"] == "http11"].set_index("request")["response_time_s"]
    assert len(http10) == len(http11) == 60
    assert (http10.iloc[1:] - http11.iloc[1:] >= 0.067).all()
    # The 422 KB file: 7 paced bursts, the last 60 ms after the first, one RTT on top.
    big = q[(q["size_bytes"] == 422_000) & (q["flow"] == "http11")]["response_time_s"]
    assert big.between(0.127, 0.129).all(), list(big)
