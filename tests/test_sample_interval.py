"""The default interval of the time series (issue 16): 10 ms for runs of up to 100 s, coarser
for longer runs (at most 10,000 intervals, a 1-2-5 step), while an interval the scenario sets
is kept exactly; the interval used is in the summary and on the command line."""

import contextlib
import io
from pathlib import Path

import pytest

from fatpipe.scenario import load_scenario, read_scenario_file
from fatpipe.scenario.output import default_sample_interval_ps

MS = 10**9
S = 10**12
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def doc(duration, **output):
    return {"duration": duration, "topology": {"bottleneck_rate": "1Mbps", "rtt": "40ms"},
            "flows": [{"name": "bulk"}], "output": dict(output, plots=False)}


@pytest.mark.parametrize("duration_ps, interval_ps", [
    (5 * MS, 5 * MS),           # shorter than 10 ms: the duration (it was refused before)
    (10 * MS, 10 * MS),
    (1 * S, 10 * MS),
    (100 * S, 10 * MS),         # 10,000 intervals: still 10 ms
    (100 * S + 1, 20 * MS),     # one picosecond more: the next step
    (200 * S, 20 * MS),
    (1500 * S, 200 * MS),       # issue 16's 1500 s: 7,500 intervals instead of 150,000
    (3600 * S, 500 * MS),
    (10**6 * S, 100 * S),
])
def test_default_interval_scales_with_the_run(duration_ps, interval_ps):
    assert default_sample_interval_ps(duration_ps) == interval_ps
    assert duration_ps // interval_ps <= 10_000


def test_a_long_scenario_gets_the_coarser_default_and_an_explicit_interval_is_kept():
    assert load_scenario(doc("1500s"))["sample_interval_ps"] == 200 * MS
    assert load_scenario(doc("1500s", sample_interval="10ms"))["sample_interval_ps"] == 10 * MS
    assert load_scenario(doc("1500s", sample_interval="7ms"))["sample_interval_ps"] == 7 * MS
    assert load_scenario(doc("60s"))["sample_interval_ps"] == 10 * MS


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_short_runs_are_unchanged(path):
    """Every example keeps the interval it had: its own, or 10 ms (reference summaries and
    pinned series do not move)."""
    given = read_scenario_file(path).get("output", {}).get("sample_interval")
    expected = load_scenario(doc("1s", sample_interval=given))["sample_interval_ps"] if given else 10 * MS
    assert load_scenario(path)["sample_interval_ps"] == expected


def test_the_interval_used_is_in_the_summary_and_on_the_command_line(tmp_path):
    pytest.importorskip("fatpipe._core")
    import fatpipe
    from fatpipe.cli import main

    result = fatpipe.run(doc("200s"))
    assert result.summary["sample_interval_s"] == 0.02
    assert len(result.flow_series) == 200 * S // (20 * MS) + 1
    scenario = tmp_path / "long.toml"
    scenario.write_text('duration = "200s"\n[topology]\nbottleneck_rate = "1Mbps"\nrtt = "40ms"\n'
                        '[[flows]]\nname = "bulk"\n', encoding="utf-8")
    for command in (["validate", str(scenario)], ["run", str(scenario), "-o", str(tmp_path / "out"), "--no-plots"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(command) == 0
        assert "time series every 20ms" in out.getvalue().splitlines()[0], command
