"""`fatpipe compare` (issue 11) on simulated runs, which need no privileges: relative
differences computed from the runs' own summaries, "n/a" for what a run did not measure,
overlaid plots, one HTML page, and one-line errors."""

from __future__ import annotations

import json

import pytest

import fatpipe
from emulate_helpers import cli
from fatpipe.compare import FLOW_MEASURES, compare, relative_difference
from fatpipe.result import Result


def scenario(cc: str) -> dict:
    return {
        "name": f"cmp-{cc}",
        "duration": "3s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "20Mbps", "rtt": "40ms", "queue": {"limit_packets": 30}},
        "flows": [{"name": "a", "cc": cc}, {"name": "b", "cc": cc, "start": "1s"}],
        "output": {"plots": False, "sample_interval": "50ms"},
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("compare")
    dirs = []
    for cc in ("sack", "cubic"):
        fatpipe.run(scenario(cc)).write(base / cc)
        dirs.append(base / cc)
    return dirs


def test_relative_difference():
    assert relative_difference(110.0, 100.0) == pytest.approx(0.1)
    assert relative_difference(0.0, 0.0) == 0.0
    assert relative_difference(5.0, 0.0) is None
    assert relative_difference(None, 3.0) is None and relative_difference(3.0, None) is None


def test_differences_come_from_the_summaries(runs, tmp_path):
    results = [Result.read(d) for d in runs]
    c = compare(results, ["sack", "cubic"], tmp_path)
    assert [r["flow"] for r in c.flow_rows] == ["a"] * len(FLOW_MEASURES) + ["b"] * len(FLOW_MEASURES)
    for row in c.flow_rows:
        ref, other = ({f["name"]: f for f in r.summary["flows"]}[row["flow"]][row["key"]] for r in results)
        assert row["values"] == [ref, other]
        expected = None if ref == 0 and other != 0 else (0.0 if ref == 0 else (other - ref) / ref)
        assert row["relative"] == [None, pytest.approx(expected) if expected is not None else None]
    utilization = [lk["utilization"] for r in results for lk in r.summary["links"] if lk["name"] == "bottleneck"]
    assert next(lk for lk in c.link_rows if lk["link"] == "bottleneck")["utilization"] == utilization
    page = (tmp_path / "compare.html").read_text()
    assert page.count("<img ") == 3 and "data:image/png;base64," in page
    assert json.loads((tmp_path / "compare.json").read_text())["labels"] == ["sack", "cubic"]


def test_a_count_one_run_did_not_measure_is_na_not_zero(runs, tmp_path):
    # An emulated run has no per-flow timeout count on kernels before 6.7: drop the key.
    other = tmp_path / "no-timeouts"
    Result.read(runs[1]).write(other, plots=False)
    summary = json.loads((other / "summary.json").read_text())
    for f in summary["flows"]:
        del f["timeouts"]
    (other / "summary.json").write_text(json.dumps(summary))
    proc = cli("compare", runs[0], other, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((tmp_path / "out" / "compare.json").read_text())["flows"]
    timeouts = [r for r in rows if r["key"] == "timeouts"]
    assert all(r["values"][1] is None and r["relative"][1] is None for r in timeouts)
    assert any(line.split()[1:2] == ["timeouts"] and "n/a" in line for line in proc.stdout.splitlines())


def test_cli_errors_are_one_line(runs, tmp_path):
    one = cli("compare", runs[0], "-o", tmp_path)
    assert one.returncode == 2 and one.stderr.count("\n") == 1 and "at least two run directories" in one.stderr
    labels = cli("compare", runs[0], runs[1], "--labels", "x", "-o", tmp_path)
    assert labels.returncode == 2 and "--labels: 1 names for 2 runs" in labels.stderr
    missing = cli("compare", runs[0], tmp_path / "nope", "-o", tmp_path)
    assert missing.returncode == 2 and "not a fatpipe run directory" in missing.stderr
    # Runs without a flow in common cannot be compared.
    lone = tmp_path / "lone"
    fatpipe.run({**scenario("sack"), "flows": [{"name": "z", "cc": "sack"}]}).write(lone, plots=False)
    disjoint = cli("compare", runs[0], lone, "-o", tmp_path)
    assert disjoint.returncode == 2 and disjoint.stderr.count("\n") == 1 and "share no flow name" in disjoint.stderr
