"""Issue 29, section 1: a congestion control written in Python (cc = { python = "module:Class" }),
called by the core on every ACK or once per report. The examples' Reno and CUBIC give the
built-in algorithms' summaries on scenarios they were not written against; a report-mode
window gives the rate its closed form says; a stepped run (fatpipe.gym's) equals the same
controller run in-line; bad classes, values and modules are one line each."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fatpipe
from emulate_helpers import cli
from fatpipe.core import import_core
from fatpipe.scenario import ScenarioError, load

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "python_cc"


def scenario(cc, rate="100Mbps", rtt="40ms", duration="4s", profile="linux", recovery=None, queue="droptail", flows=1):
    tcp = {"profile": profile, **({"recovery": recovery} if recovery else {})}
    q = {"discipline": queue, "limit_bdp": 1.0} if queue == "droptail" else {"discipline": "red"}
    return {
        "name": "pycc",
        "duration": duration,
        "topology": {"shape": "dumbbell", "bottleneck_rate": rate, "rtt": rtt, "queue": q},
        "flows": [{"name": f"f{i}", "cc": cc, "tcp": tcp, "start": f"{i * 0.5}s"} for i in range(flows)],
        "output": {"plots": False},
    }


def flows(doc) -> list:
    out = fatpipe.run(doc).summary["flows"]
    for f in out:
        f.pop("algorithm")  # "python" for the class, the built-in's name otherwise
    return out


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


@pytest.fixture
def classes(tmp_path, monkeypatch):
    """A module of small classes, importable as pycc_classes."""
    (tmp_path / "pycc_classes.py").write_text(textwrap.dedent('''
        class Boom:
            def ssthresh(self, view): return 2
            def cong_avoid(self, view, ack):
                if view.now_ps > 500_000_000_000:
                    1 / 0
                view.cwnd += 1
        class NanWindow:
            def ssthresh(self, view): return 2
            def cong_avoid(self, view, ack): view.cwnd = float("nan")
        class NegativeSsthresh:
            def ssthresh(self, view): return -3
            def cong_avoid(self, view, ack): view.cwnd += 1
        class NoCongAvoid:
            def ssthresh(self, view): return 2
        class Fixed:
            def __init__(self, cwnd=20):
                self.cwnd = cwnd
            def on_report(self, report):
                return {"cwnd": self.cwnd}
    '''))
    (tmp_path / "pycc_broken.py").write_text("raise ImportError('no such thing here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


# ---- acceptance 1: the Python Reno and CUBIC give the built-in summaries ---------------------

# Each pair: the built-in algorithm as the scenario's tables set it on that stack, and the
# example class with the same parameters. The examples were written against the default
# 100 Mb/s, 40 ms dumbbell; these are other rates, RTTs, stacks, queues and flow counts.
PAIRS = {
    # The Linux stack's reno counts bytes (the tables' byte_counting = true on linux).
    "linux reno 1G 30ms": ("reno", {"python": "reno:Reno", "byte_counting": True}, dict(rate="1Gbps", rtt="30ms")),
    "linux reno, 3 flows, RED": ("reno", {"python": "reno:Reno", "byte_counting": True},
                                 dict(rate="50Mbps", rtt="80ms", queue="red", flows=3)),
    # The RFC stack's reno counts ACKs; the preset "reno" there also names Reno's recovery.
    "rfc reno 10M 100ms": ("reno", {"python": "reno:Reno"}, dict(rate="10Mbps", rtt="100ms", profile="rfc", recovery="reno")),
    "rfc newreno 1G 30ms": ("newreno", {"python": "reno:Reno"}, dict(rate="1Gbps", rtt="30ms", profile="rfc", recovery="newreno")),
    # CUBIC's RFC 9438 form (the RFC stack's default; on Linux the default is tcp_cubic.c's
    # fixed-point form with HyStart, which the example does not implement).
    "rfc cubic 1G 30ms": ("cubic", {"python": "cubic:Cubic"}, dict(rate="1Gbps", rtt="30ms", profile="rfc")),
    "linux cubic rfc form, 2 flows": ({"algorithm": "cubic", "variant": "rfc", "hystart": "off"}, {"python": "cubic:Cubic"},
                                      dict(rate="200Mbps", rtt="60ms", flows=2)),
}


@pytest.mark.parametrize("case", PAIRS)
def test_python_example_gives_the_built_in_summary(case, examples_path):
    builtin, python, kw = PAIRS[case]
    assert flows(scenario(python, **kw)) == flows(scenario(builtin, **kw))


def test_a_scenario_file_finds_its_class_beside_it(tmp_path):
    # examples/python_cc/cubic-python.toml names "cubic:Cubic", found in the file's directory;
    # the normalized scenario says where, so another process (a sweep's worker) finds it too.
    loaded = load(EXAMPLES / "cubic-python.toml")
    cc = loaded.core["flows"][0]["cc"]
    assert cc["class"] == "cubic:Cubic" and Path(cc["module_dir"]).resolve() == EXAMPLES.resolve()
    loaded.core["duration_ps"] = 10**12
    (tmp_path / "doc.json").write_text(json.dumps(loaded.core))
    proc = subprocess.run([sys.executable, "-c", "import json, sys, fatpipe; "
                           "print(fatpipe.run(json.load(open(sys.argv[1]))).summary['flows'][0]['algorithm'])",
                           str(tmp_path / "doc.json")], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "python", proc.stderr


def test_the_class_itself_in_a_dict_scenario(examples_path):
    import reno

    kw = dict(rate="20Mbps", rtt="20ms", duration="2s")
    assert flows(scenario({"python": reno.Reno, "byte_counting": True}, **kw)) == flows(scenario("reno", **kw))


# ---- report mode -------------------------------------------------------------------------

def test_report_mode_window_gives_its_closed_form_rate(classes):
    # A fixed window of W segments on a path with no queue to speak of delivers W x MSS per
    # round trip: 20 x 1448 B x 8 / 40 ms = 5.792 Mb/s (the first report comes after one RTT
    # of the initial window; over 4 s that start costs well under 1 %).
    goodput = fatpipe.run(scenario({"python": "pycc_classes:Fixed", "mode": "report"})).summary["flows"][0]["goodput_bps"]
    assert goodput == pytest.approx(20 * 1448 * 8 / 0.040, rel=0.01)


def test_a_stepped_run_equals_the_same_controller_in_line(classes):
    # fatpipe.gym's stepping: the simulation pauses at each report for the caller's action.
    # Answering every report with the window Fixed returns gives Fixed's run exactly.
    doc = load(scenario({"python": "pycc_classes:Fixed", "mode": "report", "report": 8})).core
    sim = import_core().Simulation(doc)
    sim.run_until(sim.duration_ps)
    inline = sim.finish()["summary"]
    stepper = import_core().Stepper(doc, 0)
    reports = 0
    while stepper.step({"cwnd": 20} if reports else None) is not None:
        reports += 1
    stepped = stepper.finish()["summary"]
    assert reports > 100 and stepped["flows"] == inline["flows"]


# ---- acceptance 4: bad input, one line each ------------------------------------------------

def test_an_exception_stops_the_run_with_the_users_exception_and_the_time(classes):
    with pytest.raises(RuntimeError) as err:
        fatpipe.run(scenario({"python": "pycc_classes:Boom"}))
    assert type(err.value).__name__ == "ControllerError"
    assert str(err.value).startswith('flow "f0": pycc_classes:Boom.cong_avoid at 0.5')
    assert "s simulated time: raised ZeroDivisionError: division by zero" in str(err.value)
    assert isinstance(err.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("name, says", [
    ("NanWindow", "pycc_classes:NanWindow.cong_avoid at 0.04"),
    ("NegativeSsthresh", "pycc_classes:NegativeSsthresh.ssthresh at"),
])
def test_a_value_that_is_not_a_window_is_one_line(classes, name, says):
    with pytest.raises(RuntimeError) as err:
        fatpipe.run(scenario({"python": f"pycc_classes:{name}"}))
    line = str(err.value)
    assert says in line and "is not allowed: a number of segments from 1 to 4294967295" in line
    assert "\n" not in line and err.value.__cause__ is None


@pytest.mark.parametrize("cc, says", [
    ({"python": "pycc_classes:NoCongAvoid"}, "flows[0].cc.python: pycc_classes:NoCongAvoid lacks cong_avoid and cong_control"),
    ({"python": "pycc_classes:Fixed"}, "pycc_classes:Fixed lacks ssthresh"),
    ({"python": "pycc_classes:Boom", "mode": "report"}, "pycc_classes:Boom has no on_report"),
    ({"python": "pycc_broken:X"}, "'pycc_broken:X': module pycc_broken does not import: ImportError: no such thing here"),
    ({"python": "pycc_classes:Missing"}, "module pycc_classes has no Missing"),
    ({"python": "pycc_classes"}, 'expected "module:Class"'),
])
def test_bad_classes_are_one_line_at_load(classes, cc, says):
    with pytest.raises(ScenarioError) as err:
        load(scenario(cc))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_cli_shows_the_users_traceback_then_one_line(classes, tmp_path):
    path = tmp_path / "boom.toml"
    path.write_text(textwrap.dedent('''
        duration = "2s"
        [topology]
        shape = "dumbbell"
        bottleneck_rate = "100Mbps"
        rtt = "40ms"
        [[flows]]
        cc = { python = "pycc_classes:Boom" }
    '''))
    proc = cli("run", path, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode != 0
    assert "1 / 0" in proc.stderr and "ZeroDivisionError" in proc.stderr  # the user's traceback
    last = proc.stderr.strip().splitlines()[-1]
    assert "pycc_classes:Boom.cong_avoid at 0.5" in last and "simulated time" in last
    assert "panicked" not in proc.stderr and ".rs:" not in proc.stderr


def test_a_core_without_the_class_says_so(classes):
    # The core alone (no binding) cannot call Python: the normalized scenario names the
    # class, and building it without one attached is refused by name.
    doc = load(scenario({"python": "pycc_classes:Fixed", "mode": "report"})).core
    doc["flows"][0]["cc"]["class"] = "pycc_classes:Nowhere"
    with pytest.raises(ValueError, match=r"flows\[0\]\.cc\.python: .*has no Nowhere"):
        import_core().Simulation(doc)


def test_bench_python_quick_runs_and_the_per_ack_run_matches_native():
    proc = cli("bench", "--python", "--quick")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("100 Mb/s", "1 Gb/s"))]
    assert len(rows) == 2 and all(row.split()[-1] == "yes" for row in rows), proc.stdout
