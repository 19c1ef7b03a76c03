"""run() and `fatpipe run` with a stand-in core (the plumbing, not the simulation)."""

import sys

import pytest

pytest.importorskip("pandas")

import fake_core  # noqa: E402

import fatpipe  # noqa: E402
from fatpipe import ScenarioError  # noqa: E402
from fatpipe.cli import main  # noqa: E402

SCENARIO = {
    "name": "plumbing",
    "duration": "1s",
    "topology": {"bottleneck_rate": "10Mbps", "rtt": "20ms"},
    "flows": [{"name": "x"}],
    "output": {"sample_interval": "50ms", "plots": False},
}


@pytest.fixture
def core(monkeypatch):
    monkeypatch.setitem(sys.modules, "fatpipe._core", fake_core)
    monkeypatch.setattr(fatpipe, "_core", fake_core, raising=False)
    return fake_core


def test_run_advances_in_about_200_chunks(core):
    result = fatpipe.run(SCENARIO)
    calls = core.Simulation.calls
    assert 195 <= len(calls) <= 202
    assert calls == sorted(calls)
    assert calls[-1] == 10**12
    assert result.summary["name"] == "plumbing"
    assert result.plots is False


def test_seed_override(core):
    assert fatpipe.run(SCENARIO, seed=7).summary["seed"] == 7
    assert fatpipe.run(SCENARIO).summary["seed"] == 1
    with pytest.raises(ScenarioError, match="seed"):
        fatpipe.run(SCENARIO, seed=-3)


def test_run_accepts_a_normalized_scenario(core):
    normalized = fatpipe.load_scenario(SCENARIO)
    normalized["flows"][0]["name"] = "edited"
    assert fatpipe.run(normalized).summary["flows"][0]["name"] == "edited"


def test_run_validates_first(core):
    with pytest.raises(ScenarioError, match="topology.rtt: missing; required"):
        fatpipe.run({**SCENARIO, "topology": {"bottleneck_rate": "10Mbps"}})


def test_core_rejection_becomes_scenario_error(core):
    normalized = fatpipe.load_scenario(SCENARIO)
    normalized["duration_ps"] = 0
    with pytest.raises(ScenarioError, match="the core rejected"):
        fatpipe.run(normalized)


def test_progress_bar_goes_to_stderr(core, capsys):
    fatpipe.run(SCENARIO, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "simulated s" in captured.err


def test_cli_run_writes_and_summarizes(core, tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'name = "cli"\nduration = "1s"\n[topology]\nbottleneck_rate = "10Mbps"\nrtt = "20ms"\n'
        '[[flows]]\nname = "x"\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["run", str(scenario), "-o", str(out), "--seed", "3"]) == 0
    captured = capsys.readouterr()
    assert "goodput Mb/s" in captured.out and "utilization" in captured.out
    assert "bottleneck" in captured.out and f"results: {out}" in captured.out
    assert (out / "summary.json").exists() and (out / "cwnd.png").exists()
    assert '"seed": 3' in (out / "summary.json").read_text()

    quiet = tmp_path / "quiet"
    assert main(["run", str(scenario), "-o", str(quiet), "--quiet", "--no-plots"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert not (quiet / "cwnd.png").exists()


def test_cli_run_default_output_dir(core, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    scenario = tmp_path / "named.toml"
    scenario.write_text(
        'duration = "1s"\n[topology]\nbottleneck_rate = "10Mbps"\nrtt = "20ms"\n[[flows]]\n',
        encoding="utf-8",
    )
    assert main(["run", str(scenario), "--quiet"]) == 0
    assert (tmp_path / "runs" / "named" / "summary.json").exists()


def test_cli_without_core(monkeypatch, tmp_path, capsys):
    # A None entry in sys.modules makes the import fail, as when the core is not built.
    monkeypatch.setitem(sys.modules, "fatpipe._core", None)
    monkeypatch.delattr(fatpipe, "_core", raising=False)
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'duration = "1s"\n[topology]\nbottleneck_rate = "10Mbps"\nrtt = "20ms"\n[[flows]]\n',
        encoding="utf-8",
    )
    assert main(["run", str(scenario), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not built" in err
    assert not (tmp_path / "out").exists()
