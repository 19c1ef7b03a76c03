"""The command line never shows a traceback for a user's mistake: one line, status 2.

Runs `python -m fatpipe` in a subprocess, as a user would (no core needed: every error
here is found before a simulation starts).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fatpipe

REPO = Path(__file__).resolve().parent.parent
# The subprocess imports the same fatpipe as this test process (installed or source tree).
PACKAGE_PARENT = Path(fatpipe.__file__).resolve().parent.parent

GOOD = """\
duration = "10s"
[topology]
bottleneck_rate = "100Mbps"
rtt = "40ms"
[[flows]]
name = "reno"
"""


def fatpipe(*args, cwd=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_PARENT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run(
        [sys.executable, "-m", "fatpipe", *map(str, args)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
    )


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fatpipe: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert proc.stdout == ""
    return lines[0]


def write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize(
    "replace, add, fragments",
    [
        ('rtt = "40ms"', "", ["topology.rtt: missing; required"]),
        ('"100Mbps"', '"-5Mbps"', ["topology.bottleneck_rate", '"-5Mbps"', "must be positive"]),
        ('"100Mbps"', '"0Mbps"', ["topology.bottleneck_rate", '"0Mbps"', "must be positive"]),
        ('"100Mbps"', '"100 furlongs"', ["topology.bottleneck_rate", '"100 furlongs"', "expected a rate"]),
        ('"40ms"', "40", ["topology.rtt", "40 is not allowed", "needs a unit"]),
        ('name = "reno"', 'name = "reno"\n[flows.tcp]\nmsss = 1000', ["flows[0].tcp.msss: unknown key; allowed keys: mss,"]),
        ('name = "reno"', 'name = "reno"\n[flows.tcp]\nmss = 9000',
         ["flows[0].tcp.mss: 9000 bytes is larger than the link MTU 1500 minus 52 bytes of IP/TCP headers (max 1448)"]),
        ('name = "reno"', 'name = "reno"\n[flows.tcp]\ninitial_window = true', ["flows[0].tcp.initial_window", "true"]),
        ('name = "reno"', 'name = "reno"\ncc = "turbo"', ["flows[0].cc", '"turbo"', 'expected a preset']),
        ('rtt = "40ms"', 'rtt = "40ms"\n[topology.queue]\ndiscipline = "red"\nmax_th = 30',
         ["topology.queue.max_th: 30 is not allowed: give min_th too"]),
        ('rtt = "40ms"', 'rtt = "40ms"\n[topology.queue]\ncell_size = 2048',
         ["topology.queue.limit_cells: missing; required with cell_size"]),
        ('rtt = "40ms"', 'rtt = "40ms"\n[[topology.impairments]]\nlink = "bottlenek"\nkind = "bernoulli"\nprobability = 0.01',
         ['topology.impairments[0].link: "bottlenek" is not allowed', 'did you mean "bottleneck"?']),
        ('rtt = "40ms"', 'rtt = "40ms"\n[[topology.impairments]]\nlink = "bottleneck"\nkind = "outage"\nwindows = [["9s", "11s"]]',
         ["topology.impairments[0].windows[0]: [9s, 11s) is not allowed: an outage must end by the end of the run (duration 10s)"]),
    ],
)
def test_invalid_scenarios(tmp_path, command, replace, add, fragments):
    path = write(tmp_path, GOOD.replace(replace, add))
    args = [command, path] + (["-o", tmp_path / "out"] if command == "run" else [])
    line = assert_one_line_error(fatpipe(*args), *fragments)
    assert str(path) in line  # the file is named too
    assert not (tmp_path / "out").exists() or command == "run"


def test_missing_file(tmp_path):
    assert_one_line_error(fatpipe("validate", tmp_path / "nope.toml"), "nope.toml", "no such file")
    assert_one_line_error(fatpipe("run", tmp_path / "nope.toml", "-o", tmp_path / "out"), "no such file")


def test_directory_instead_of_file(tmp_path):
    assert_one_line_error(fatpipe("validate", tmp_path), "is a directory")


def test_toml_syntax_error_gives_line(tmp_path):
    path = write(tmp_path, 'duration = "10s"\n[topology\nrtt = "40ms"\n')
    assert_one_line_error(fatpipe("validate", path), "invalid TOML", "line 2")


def test_toml_duplicate_key(tmp_path):
    # `cc = "reno"` and a [flows.cc] table in the same flow: a TOML error, reported as such.
    path = write(tmp_path, GOOD + 'cc = "reno"\n[flows.cc]\nalgorithm = "reno"\n')
    assert_one_line_error(fatpipe("validate", path), "invalid TOML")


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    assert_one_line_error(fatpipe("validate", path), "not UTF-8")


def test_unwritable_output_dir(tmp_path):
    scenario = write(tmp_path, GOOD)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    assert_one_line_error(fatpipe("run", scenario, "-o", blocker), "output directory", "not a directory")
    assert_one_line_error(fatpipe("run", scenario, "-o", blocker / "sub"), "output directory", "cannot create")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_output_dir(tmp_path):
    scenario = write(tmp_path, GOOD)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert_one_line_error(fatpipe("run", scenario, "-o", ro), "output directory", "not writable")
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run", "{s}", "--seed", "-1"], "argument --seed"),
        (["run", "{s}", "--seed", "abc"], "argument --seed"),
        (["run", "{s}", "--seed", str(2**64)], "argument --seed"),
        (["run", "{s}", "--frobnicate"], "unrecognized arguments"),
        (["run"], "required"),
        (["launch", "{s}"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_arguments(tmp_path, args, fragment):
    scenario = write(tmp_path, GOOD)
    args = [a.replace("{s}", str(scenario)) for a in args]
    assert_one_line_error(fatpipe(*args), fragment)


def test_validate_ok_and_json(tmp_path):
    scenario = write(tmp_path, GOOD)
    proc = fatpipe("validate", scenario)
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout and proc.stderr == ""
    proc = fatpipe("validate", "--json", scenario)
    assert proc.returncode == 0, proc.stderr
    import json

    core = json.loads(proc.stdout)
    assert core["links"][1]["queue"]["limit_packets"] == 334


def test_examples_validate_from_the_command_line():
    for example in sorted((REPO / "examples").glob("*.toml")):
        proc = fatpipe("validate", example)
        assert proc.returncode == 0, (example, proc.stderr)


def test_help_exits_zero():
    proc = fatpipe("--help")
    assert proc.returncode == 0
    assert "run" in proc.stdout and "validate" in proc.stdout and "bench" in proc.stdout


def test_main_returns_status_in_process(tmp_path, capsys):
    from fatpipe.cli import main

    assert main(["validate", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fatpipe: error: ")
    assert main(["run", "--seed", "x", "y.toml"]) == 2
