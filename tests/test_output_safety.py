"""Issue 23, section 2: results are never lost or mixed without a word.

- two writers into one output directory: the second is refused in one line, at once;
- --overwrite replaces only a directory fatpipe wrote; `-o .`, `-o ..`, `-o ''` are
  refused before anything runs;
- a sweep's workers end with it (kill -9), Ctrl-C stops it promptly and writes the summary
  of what finished;
- resuming a sweep verifies what it reuses (sizes and hashes in done.json) and runs again
  what does not verify, saying so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

try:
    import fatpipe._core  # noqa: F401

    HAVE_CORE = True
except ImportError:
    HAVE_CORE = False

needs_core = pytest.mark.skipif(not HAVE_CORE, reason="compiled core not built")

#: A run of a few seconds of wall time on a loaded machine (long enough to be caught running).
SLOW = """name = "slow"
duration = "60s"
[topology]
bottleneck_rate = "1Gbps"
rtt = "100ms"
[[flows]]
name = "a"
cc = "cubic"
[output]
sample_interval = "100ms"
plots = false
"""
QUICK = 'name = "quick"\nduration = "200ms"\n[topology]\nbottleneck_rate = "10Mbps"\nrtt = "20ms"\n[[flows]]\nname = "a"\n[output]\nplots = false\n'


def fatpipe(*args, cwd=None, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fatpipe", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def cli(*args, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fatpipe", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def one_line(proc) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


# ---- two writers -------------------------------------------------------------------------


@needs_core
def test_a_second_run_into_the_same_directory_is_refused_at_once(tmp_path):
    # Before: both exited 0 and the later one replaced the other's results (5 of 5 tries).
    # The first writer here is this process, holding the directory as a run does from its
    # start to its end (outdir.staging_dir); the second is `fatpipe run`.
    from fatpipe.outdir import discard, publish, staging_dir

    (tmp_path / "quick.toml").write_text(QUICK)
    staging = staging_dir(tmp_path / "out")
    try:
        for command in ("run", "emulate"):
            second = cli(command, "quick.toml", "-o", "out", "--quiet", cwd=tmp_path)
            if command == "emulate" and "root" in second.stderr:
                continue  # emulate checks its privileges first
            assert second.returncode == 2
            assert f"another fatpipe process (pid {os.getpid()}) is writing this directory now" in one_line(second)
        (staging / "summary.json").write_text("{}")
        publish(staging, tmp_path / "out")
    finally:
        discard(staging)
    assert (tmp_path / "out" / "summary.json").read_text() == "{}"
    assert not (tmp_path / ".out.lock").exists()
    # The lock is the kernel's: a writer killed outright leaves nothing that blocks the next.
    (tmp_path / "slow.toml").write_text(SLOW)
    killed = fatpipe("run", "slow.toml", "-o", "again", "--quiet", cwd=tmp_path)
    assert wait_for(lambda: (tmp_path / ".again.lock").exists(), 60)
    killed.kill()
    killed.communicate()
    assert cli("run", "quick.toml", "-o", "again", "--quiet", cwd=tmp_path).returncode == 0


def test_publishing_checks_the_target_again_and_keeps_what_it_could_not_place(tmp_path):
    # A directory that appeared while a run went on (written by anything but fatpipe) is not
    # replaced, and the run's results stay where the message says.
    from fatpipe.outdir import OutputExistsError, discard, publish, staging_dir

    staging = staging_dir(tmp_path / "out")
    (staging / "summary.json").write_text("{}")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match=f"whose results are kept in {staging}"):
        try:
            publish(staging, tmp_path / "out")
        finally:
            discard(staging)
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert (staging / "summary.json").is_file()


@needs_core
def test_a_second_sweep_into_the_same_directory_is_refused(tmp_path):
    # Before: two sweeps whose run ids collide both exited 0; one's results survived.
    from fatpipe.outdir import lock_directory, unlock_directory

    (tmp_path / "q.toml").write_text(QUICK)
    (tmp_path / "s.toml").write_text('base = "q.toml"\n[grid]\n"flows[0].cc" = ["reno", "cubic"]\n')
    out = tmp_path / "out"
    lock = lock_directory(out)  # as a first sweep holds it while it runs
    try:
        second = cli("sweep", "s.toml", "-o", "out", "--quiet", cwd=tmp_path)
    finally:
        unlock_directory(out, lock)
    assert second.returncode == 2
    assert "is writing this directory now" in one_line(second)
    assert not list(out.glob("runs/*"))
    assert cli("sweep", "s.toml", "-o", "out", "--quiet", cwd=tmp_path).returncode == 0


# ---- what --overwrite may replace, and targets refused before running ----------------------


@needs_core
def test_overwrite_replaces_only_a_directory_fatpipe_wrote(tmp_path):
    # Before: --overwrite deleted whatever the directory held (a thesis.tex and a folder).
    (tmp_path / "q.toml").write_text(QUICK)
    mine = tmp_path / "thesis"
    (mine / "figures").mkdir(parents=True)
    (mine / "thesis.tex").write_text("\\documentclass{article}")
    (mine / "summary.json").write_text("{}")  # even beside a file fatpipe would write
    proc = cli("run", "q.toml", "-o", mine, "--overwrite", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2
    assert "overwriting replaces only a directory fatpipe wrote" in one_line(proc)
    assert (mine / "thesis.tex").read_text() == "\\documentclass{article}" and (mine / "figures").is_dir()
    # A run directory (with a report and plots drawn into it later) is replaced whole.
    run_dir = tmp_path / "run"
    assert cli("run", "q.toml", "-o", run_dir, "--quiet", cwd=tmp_path).returncode == 0
    assert cli("report", run_dir).returncode == 0
    from fatpipe.outdir import foreign_entry

    assert foreign_entry(run_dir) is None
    proc = cli("run", "q.toml", "-o", run_dir, "--overwrite", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (run_dir / "report.html").exists()


@pytest.mark.parametrize("target", [".", "..", "", "sub/.."])
def test_a_target_that_is_not_a_directory_of_its_own_is_refused_before_running(tmp_path, target):
    # Before: -o . and -o .. ran the whole simulation, then failed and left a ..old-XXXX;
    # -o '' was silently taken for the default.
    (tmp_path / "sub").mkdir()
    (tmp_path / "s.toml").write_text(SLOW.replace('"60s"', '"1000s"'))
    started = time.monotonic()
    proc = cli("run", "s.toml", "-o", target, "--overwrite", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2
    assert "is not allowed" in one_line(proc) and "output" in proc.stderr
    assert time.monotonic() - started < 20, "refused before running"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "sub"]
    assert not [p.name for p in tmp_path.parent.iterdir() if ".old-" in p.name or ".partial-" in p.name]


# ---- sweeps: workers, Ctrl-C, resume -----------------------------------------------------

FOUR_SLOW = 'base = "slow.toml"\n[grid]\n"flows[0].cc" = ["reno", "cubic", "bbr", "htcp"]\n'


def processes_marked(marker: str) -> list:
    """Live processes whose environment holds ``marker`` (a sweep and all it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                status = (entry / "status").read_text()
                if "State:\tZ" not in status:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_core
def test_the_workers_of_a_killed_sweep_end_with_it(tmp_path):
    # Before: kill -9 of a sweep left its forkserver, resource tracker and workers running for
    # over 30 s, writing runs into the directory.
    (tmp_path / "slow.toml").write_text(SLOW)
    (tmp_path / "s.toml").write_text(FOUR_SLOW)
    marker = f"FATPIPE_TEST_MARKER={uuid.uuid4().hex}"
    env = dict(os.environ, FATPIPE_TEST_MARKER=marker.split("=", 1)[1])
    # Its output to files: workers left behind would hold pipes open.
    with open(tmp_path / "stderr", "w") as stderr:
        sweep = subprocess.Popen([sys.executable, "-m", "fatpipe", "sweep", "s.toml", "-o", "out", "--quiet", "--jobs", "2"],
                                 cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        assert wait_for(lambda: list((tmp_path / "out" / "runs").glob("*/running.json")), 60)
        assert len(processes_marked(marker)) >= 3  # the sweep, a forkserver, workers
        sweep.kill()
        sweep.wait()
        assert wait_for(lambda: not processes_marked(marker), 10), processes_marked(marker)
    finally:
        for pid in processes_marked(marker):  # only on failure: leave nothing running
            os.kill(pid, signal.SIGKILL)


@needs_core
def test_ctrl_c_stops_a_sweep_at_once_and_writes_the_summary_of_what_finished(tmp_path):
    # Before: Ctrl-C took 15-16 s, finished 26 more runs and wrote no summary.
    (tmp_path / "slow.toml").write_text(SLOW)
    (tmp_path / "q.toml").write_text(QUICK)
    grid = ", ".join(f'"{rate}Mbps"' for rate in range(10, 16))
    (tmp_path / "s.toml").write_text(f'base = "slow.toml"\n[grid]\n"topology.bottleneck_rate" = [{grid}]\n')
    # One point already finished, by a first sweep of a single value.
    (tmp_path / "one.toml").write_text('base = "slow.toml"\n[grid]\n"topology.bottleneck_rate" = ["10Mbps"]\n')
    assert cli("sweep", "one.toml", "-o", "out", "--quiet", cwd=tmp_path, timeout=300).returncode == 0
    sweep = fatpipe("sweep", "s.toml", "-o", "out", "--quiet", "--jobs", "2", cwd=tmp_path, start_new_session=True)
    runs = tmp_path / "out" / "runs"
    try:
        assert wait_for(lambda: len(list(runs.glob("*/running.json"))) == 2, 60)
        finished = {p.parent.name for p in runs.glob("*/done.json")}
        os.killpg(sweep.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        started = time.monotonic()
        _, err = sweep.communicate(timeout=60)
    finally:
        try:
            os.killpg(sweep.pid, signal.SIGKILL)  # anything left (only on failure)
        except ProcessLookupError:
            pass
    assert time.monotonic() - started < 5, f"took {time.monotonic() - started:.1f} s"
    assert sweep.returncode == 130 and "Traceback" not in err, err
    assert err.startswith("fatpipe: error: interrupted: ") and "run the sweep again to finish it" in err
    import pandas as pd

    summary = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    assert len(summary) == 6
    ok = set(summary.loc[summary["status"] == "ok", "run_id"])
    assert ok == {p.parent.name for p in runs.glob("*/done.json")}
    assert ok - finished == set() or len(ok - finished) <= 2  # at most the runs that were ending
    assert (summary["status"] == "interrupted").sum() == 6 - len(ok) >= 3
    assert not processes_alive_in(runs)


def processes_alive_in(runs: Path) -> list:
    """Runs still marked running by a live worker."""
    alive = []
    for marker in runs.glob("*/running.json"):
        pid = json.loads(marker.read_text())["pid"]
        if Path(f"/proc/{pid}").exists():
            alive.append(pid)
    return alive


@needs_core
def test_resume_verifies_what_it_reuses_and_reruns_what_does_not_verify(tmp_path):
    # Before: an edited done.json (goodput 123) went into summary.parquet, and a run whose
    # flow_series.parquet was truncated was reused as "ok".
    (tmp_path / "q.toml").write_text(QUICK)
    (tmp_path / "s.toml").write_text('base = "q.toml"\n[grid]\n"flows[0].cc" = ["reno", "cubic", "bbr"]\n')
    assert cli("sweep", "s.toml", "-o", "out", "--quiet", cwd=tmp_path).returncode == 0
    import pandas as pd

    first = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    edited, truncated, kept = (tmp_path / "out" / "runs" / r for r in first["run_id"])
    record = json.loads((edited / "done.json").read_text())
    record["results"]["flows.a.goodput_bps"] = 123
    (edited / "done.json").write_text(json.dumps(record))
    series = truncated / "flow_series.parquet"
    series.write_bytes(series.read_bytes()[:100])
    kept_mtime = (kept / "done.json").stat().st_mtime_ns

    proc = cli("sweep", "s.toml", "-o", "out", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 finished runs do not verify and run again" in proc.stderr
    assert "results are not those of summary.json" in proc.stderr and "flow_series.parquet has 100 bytes" in proc.stderr
    again = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    assert again.equals(first) and 123 not in set(again["flows.a.goodput_bps"])
    assert (kept / "done.json").stat().st_mtime_ns == kept_mtime
    assert len((truncated / "flow_series.parquet").read_bytes()) > 100
