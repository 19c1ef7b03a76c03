"""Every example runs from the command line as a user would run it, and shows what it says
it shows: each example states its expectation in prose and in ``# check`` lines next to it
(fatpipe.expectations), and this file runs every example at its full duration (each takes
seconds; the longest, 10G-100ms-window-limited, some 12 s of CPU) and every variant a check
names, and checks every line. The expectation lives in the example only, so an example can
no longer drift from what it claims (issue 22: four examples expected what another stack
gave)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fatpipe._core")
import fatpipe  # noqa: E402
from fatpipe.expectations import (  # noqa: E402
    ExpectationError, example_paths, failures, read_checks, scenario_for, variants,
)

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


def test_the_examples_folder_is_the_packages():
    # examples/ is a link to python/fatpipe/examples, what the package ships (`fatpipe examples`).
    assert (EXAMPLES[0].parents[1] / "examples").resolve() == (EXAMPLES[0].parents[1] / "python" / "fatpipe" / "examples")
    assert [p.name for p in EXAMPLES] == [p.name for p in example_paths()]
    assert all(p.read_bytes() == q.read_bytes() for p, q in zip(EXAMPLES, example_paths()))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_shows_what_it_expects(path, tmp_path):
    if "\nbpf = " in path.read_text() and shutil.which(os.environ.get("CLANG", "clang")) is None:
        pytest.skip("clang is not installed (the example's BPF congestion control is compiled with it)")
    proc = subprocess.run(
        [sys.executable, "-m", "fatpipe", "run", str(path), "-o", str(tmp_path), "--quiet", "--no-plots"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(f["bytes_delivered"] > 0 for f in summary["flows"])
    checks = variants(read_checks(path))["as written"]
    assert checks, f"{path.name}: no '# check:' line states what a run of it shows"
    assert failures(checks, fatpipe.Result.read(tmp_path)) == []


VARIANTS = [(path, label, group) for path in EXAMPLES for label, group in variants(read_checks(path)).items()
            if label != "as written"]


@pytest.mark.parametrize("path, label, checks", VARIANTS, ids=[f"{p.stem}: {label}" for p, label, _ in VARIANTS])
def test_example_variant_shows_what_it_expects(path, label, checks):
    assert failures(checks, fatpipe.run(scenario_for(checks[0]))) == []


def test_every_expect_paragraph_is_followed_by_its_checks():
    # "Expect" prose without a check line under it is the drift this file exists to stop.
    for path in EXAMPLES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.startswith("# Expect"):
                paragraph = []
                for following in lines[i + 1:]:
                    if not following.startswith("#") or following.strip() == "#":
                        break
                    paragraph.append(following)
                assert any(p.startswith("# check") for p in paragraph), f"{path.name}:{i + 1}: Expect without checks"


def test_a_check_that_does_not_hold_says_what_it_read(tmp_path):
    example = tmp_path / "window.toml"
    text = (Path(__file__).resolve().parents[1] / "examples" / "window-limited-64KB.toml").read_text()
    example.write_text(text.replace('duration = "20s"', 'duration = "2s"')
                       + "# check: {flows.window64KB.goodput_bps} > 1e9\n# check with topology.rtt = \"35ms\": "
                         "{flows.window64KB.goodput_bps} < 7.4e6\n")
    checks = read_checks(example)
    assert [c.variant for c in checks[-2:]] == ["as written", 'topology.rtt = "35ms"']
    (bad,) = failures([checks[-2]], fatpipe.run(scenario_for(checks[-2])))
    assert bad.startswith("window.toml:") and "{flows.window64KB.goodput_bps} > 1e9 is false: flows.window64KB.goodput_bps = 7." in bad
    # Half the RTT doubles the window-limited rate: the variant's run is the changed scenario.
    (bad,) = failures([checks[-1]], fatpipe.run(scenario_for(checks[-1])))
    assert "flows.window64KB.goodput_bps = 1.4" in bad, bad


@pytest.mark.parametrize("line, message", [
    ("# check {a} > 1", "expected '# check: EXPRESSION'"),
    ("# check: {a} >", "does not parse"),
    ("# check with topology.rtt: {a} > 1", "expected PATH = VALUE"),
    ("# check every soon: {a} > 1", "soon"),
])
def test_a_check_line_that_cannot_be_read_names_its_line(tmp_path, line, message):
    example = tmp_path / "bad.toml"
    example.write_text("# an example\n" + line + "\n")
    with pytest.raises(ExpectationError) as err:
        read_checks(example)
    assert str(err.value).startswith("bad.toml:2") and message in str(err.value), str(err.value)
