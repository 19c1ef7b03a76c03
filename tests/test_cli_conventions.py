"""What users of iperf3, ns-3 and notebooks expect of the command and the results, and
output directories that are never half written or mixed (issue 13)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import fatpipe
from fatpipe.cli import main
from fatpipe.cli.tools import example_files
from fatpipe.scenario import read_scenario_file

REPO = Path(__file__).resolve().parent.parent
SHORT = """
name = "short"
duration = "3s"
[topology]
bottleneck_rate = "10Mbps"
rtt = "20ms"
[[flows]]
name = "a"
[[flows]]
name = "b"
cc = "cubic"
"""


def fatpipe_cmd(*args, stdin=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "fatpipe.cli", *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "short.toml"
    path.write_text(SHORT, encoding="utf-8")
    return path


# ---- output directories ---------------------------------------------------------------


def test_a_second_run_into_the_same_directory_is_refused_then_replaces_it_whole(scenario, tmp_path, capsys):
    out = tmp_path / "d"
    assert main(["run", str(scenario), "-o", str(out), "--quiet"]) == 0
    assert (out / "cwnd.png").is_file()
    second = tmp_path / "other.toml"
    second.write_text(SHORT.replace('"short"', '"other"'), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(second), "-o", str(out), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fatpipe: error: output directory {out}: the directory is not empty") and "--overwrite" in err
    assert json.loads((out / "summary.json").read_text())["name"] == "short"  # untouched
    assert main(["run", str(second), "-o", str(out), "--quiet", "--no-plots", "--overwrite"]) == 0
    # Replaced whole: the first run's plots are gone with it, nothing is mixed.
    assert json.loads((out / "summary.json").read_text())["name"] == "other"
    assert not (out / "cwnd.png").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left


def test_an_interrupted_write_leaves_no_run_directory(scenario, tmp_path, monkeypatch):
    # It used to leave summary.json without the series, or a 54-byte cwnd.png, which
    # Result.read and fatpipe report accepted as a complete run.
    from fatpipe import plots

    result = fatpipe.run(scenario)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "plot_throughput", interrupted)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        result.write(out)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with pytest.raises(FileNotFoundError):
        fatpipe.Result.read(out)
    monkeypatch.undo()
    result.write(out)
    assert fatpipe.Result.read(out).summary["name"] == "short"
    with pytest.raises(FileExistsError, match="not empty"):
        result.write(out)


# ---- iperf3 conventions ---------------------------------------------------------------


def test_run_json_prints_the_summary_as_one_document(scenario, tmp_path):
    done = fatpipe_cmd("run", scenario, "-o", tmp_path / "j", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # nothing else on stdout
    assert [f["name"] for f in document["flows"]] == ["a", "b"]
    assert document["outdir"] == str(tmp_path / "j") and document["wall_s"] > 0
    assert document == dict(json.loads((tmp_path / "j" / "summary.json").read_text()), wall_s=document["wall_s"],
                            outdir=document["outdir"])


def test_run_interval_reports_each_second_as_iperf3(scenario, tmp_path):
    done = fatpipe_cmd("run", scenario, "-o", tmp_path / "i", "--interval", "1s", "--no-plots")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["[flow]", "Interval", "(s)", "Transfer", "Bitrate", "Retr", "Cwnd"]
    rows = [line for line in lines if line.startswith("[")][1:]
    spans = [line.split("]")[1].split()[0] for line in rows]
    assert spans == ["0.00-1.00"] * 3 + ["1.00-2.00"] * 3 + ["2.00-3.00"] * 3  # a, b, SUM per second
    summary = json.loads((tmp_path / "i" / "summary.json").read_text())
    # The intervals' transfers add up to what each flow delivered.
    with_json = fatpipe_cmd("run", scenario, "-o", tmp_path / "ij", "--interval", "1s", "--json", "--no-plots")
    intervals = json.loads(with_json.stdout)["intervals"]
    assert len(intervals) == 3
    for i, flow in enumerate(summary["flows"]):
        assert sum(iv["flows"][i]["bytes"] for iv in intervals) == flow["bytes_delivered"]
    assert intervals[-1]["sum"]["bits_per_second"] > 8e6  # the 10 Mb/s link, full by then


def test_run_reads_the_scenario_from_standard_input(tmp_path):
    done = fatpipe_cmd("run", "-", "-o", tmp_path / "s", "--quiet", "--no-plots", stdin=SHORT)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "s" / "summary.json").read_text())["name"] == "short"
    bad = fatpipe_cmd("validate", "-", stdin="duration = 5\n")
    assert bad.returncode == 2 and bad.stderr.startswith("fatpipe: error: -: duration: 5 is not allowed")


# ---- examples shipped in the package ----------------------------------------------------


def test_examples_are_listed_printed_and_copied(tmp_path, capsys):
    assert main(["examples"]) == 0
    listing = capsys.readouterr().out
    assert "reno-100M-40ms" in listing and "sweeps/ansnet-windows-002" in listing
    assert main(["examples", "reno-100M-40ms"]) == 0
    assert capsys.readouterr().out == (REPO / "examples" / "reno-100M-40ms.toml").read_text()
    assert main(["examples", "reno-100M-40ms.toml", "-o", str(tmp_path)]) == 0
    assert (tmp_path / "reno-100M-40ms.toml").read_text() == (REPO / "examples" / "reno-100M-40ms.toml").read_text()
    assert main(["examples", "nope"]) == 2
    assert "expected an example, one of: " in capsys.readouterr().err
    assert set(example_files()) >= {p.stem for p in (REPO / "examples").glob("*.toml")}


# ---- the scenario format as JSON Schema ---------------------------------------------------


@pytest.fixture(scope="module")
def user_schema():
    done = fatpipe_cmd("schema")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.toml")), ids=lambda p: p.name)
def test_every_example_validates_against_fatpipe_schema(user_schema, path):
    assert [e.message for e in user_schema.iter_errors(read_scenario_file(path))] == []


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["topology"].update(bottlneck_rate=d["topology"].pop("bottleneck_rate")),
        lambda d: d["flows"][0].setdefault("tcp", {}).update(rcv_bufer="8MiB"),
        lambda d: d["topology"].update(rtt="40 msec"),
        lambda d: d["flows"][0].update(cc="renoo"),
        lambda d: d["topology"].update(queue={"discipline": "red", "limit_cels": 4}),
    ],
    ids=["top-level key", "nested key", "unit", "preset", "variant key"],
)
def test_fatpipe_schema_refuses_misspellings(user_schema, change):
    doc = read_scenario_file(REPO / "examples" / "reno-100M-40ms.toml")
    assert list(user_schema.iter_errors(doc)) == []
    change(doc)
    assert list(user_schema.iter_errors(doc)) != []


# ---- shell completion ----------------------------------------------------------------------


def complete(line):
    script = fatpipe_cmd("completion", "bash").stdout
    words = line.split(" ")
    program = (script + f"\nCOMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
               '_fatpipe; printf "%s\\n" "${COMPREPLY[@]}"\n')
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_commands_flags_and_examples():
    assert complete("fatpipe ru") == ["run"]
    assert "--interval" in complete("fatpipe run --in") and "--overwrite" in complete("fatpipe run --")
    assert complete("fatpipe examples reno-1") == ["reno-100M-40ms"]
    assert complete("fatpipe completion z") == ["zsh"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_completion_name_every_command(shell):
    script = fatpipe_cmd("completion", shell).stdout
    for command in ("run", "validate", "sweep", "report", "schema", "examples", "completion"):
        assert command in script
    assert "--interval" in script or "-l interval" in script
