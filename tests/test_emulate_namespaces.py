"""Issue 11, acceptance 1: the namespaces an emulation creates are gone after a run and
after an interrupted run (Ctrl-C, SIGTERM, and even SIGKILL, since they are anonymous and
die with the descriptors that hold them); and the errors a user meets without root or with
an algorithm the kernel lacks are one clear line. Nothing here depends on how punctually the
run went: no result of these runs is judged by its timing, only that they ran and left
nothing behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulate_helpers import cli, namespaces_alive, namespaces_held_by, own_namespace, require_root
from fatpipe.emulate import emulate


def scenario(duration: str = "1s", cc: str = "cubic") -> dict:
    return {
        "name": "netns",
        "duration": duration,
        "topology": {"shape": "dumbbell", "bottleneck_rate": "20Mbps", "rtt": "20ms"},
        "flows": [{"name": "f", "cc": cc}],
        "output": {"plots": False, "sample_interval": "100ms"},
    }


def write_toml(path: Path, duration: str, cc: str = "cubic") -> Path:
    path.write_text(
        f'name = "netns"\nduration = "{duration}"\n[topology]\nshape = "dumbbell"\nbottleneck_rate = "20Mbps"\n'
        f'rtt = "20ms"\n[[flows]]\nname = "f"\ncc = "{cc}"\n[output]\nplots = false\n'
    )
    return path


def test_namespaces_are_removed_after_a_run():
    require_root()
    seen = {}

    def during(emulation):
        seen.update({host: inode for host, _, inode in emulation.namespaces()})
        seen["alive_during"] = set(seen.values()) <= namespaces_alive()

    result = emulate(scenario(), on_start=during)
    assert seen.pop("alive_during") is True, "the check finds live namespaces"
    assert set(seen) == {"sender", "receiver"}, "one namespace per host"
    assert len(set(seen.values())) == 2 and own_namespace() not in seen.values()
    assert set(seen.values()).isdisjoint(namespaces_alive())
    assert result.summary["flows"][0]["bytes_delivered"] > 0


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -signal.SIGKILL)],
                         ids=["ctrl-c", "sigterm", "sigkill"])
def test_namespaces_are_removed_after_an_interrupted_run(tmp_path, sig, status):
    require_root()
    toml = write_toml(tmp_path / "long.toml", "60s")
    out = tmp_path / "out"
    # As from a terminal: a suite started in the background (`cmd &` without job control)
    # inherits SIGINT ignored, and Python then installs no KeyboardInterrupt for it.
    proc = subprocess.Popen([sys.executable, "-m", "fatpipe", "emulate", str(toml), "-o", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        held = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(held) < 2:
            held = namespaces_held_by(proc.pid) - {own_namespace()}
            time.sleep(0.05)
        assert len(held) == 2, f"the emulation's namespaces did not appear: {held}"
        time.sleep(1.0)  # well into the run: connections open, traffic flowing
        assert held <= namespaces_alive()
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status
    assert held.isdisjoint(namespaces_alive()), "a namespace survived the interruption"
    if sig != signal.SIGKILL:
        assert stderr.count("\n") == 1 and stderr.startswith("fatpipe: error: "), stderr
    assert not (out / "summary.json").exists(), "an interrupted run writes no results"


def test_an_algorithm_the_kernel_lacks_is_one_line_listing_the_available_ones(tmp_path):
    require_root()
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    missing = next(a for a in ("highspeed", "scalable", "htcp", "vegas", "bic") if a not in available)
    # --bpf never: the kernel's modules only (by default fatpipe's BPF program runs it).
    proc = cli("emulate", write_toml(tmp_path / "s.toml", "1s", cc=missing), "-o", tmp_path / "out", "--bpf", "never")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f'congestion control "{missing}"' in proc.stderr and "not available" in proc.stderr
    assert "available: " + " ".join(available) in proc.stderr
    assert "tcp_available_congestion_control" in proc.stderr
    # An algorithm Linux has no implementation of at all says so.
    proc = cli("emulate", write_toml(tmp_path / "f.toml", "1s", cc="fast"), "-o", tmp_path / "out", "--bpf", "never")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert 'congestion control "fast" has no Linux implementation' in proc.stderr
    assert not (tmp_path / "out").exists(), "a refused run leaves no output directory"


def test_a_directory_holding_files_is_refused_unless_overwrite(tmp_path):
    require_root()
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("a user's file")
    toml = write_toml(tmp_path / "s.toml", "1s")
    proc = cli("emulate", toml, "-o", out, "--quiet")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--overwrite" in proc.stderr
    assert (out / "mine.txt").read_text() == "a user's file"
    # --overwrite replaces only a directory fatpipe wrote (issue 23: it deleted anything).
    proc = cli("emulate", toml, "-o", out, "--quiet", "--overwrite")
    assert proc.returncode == 2 and "overwriting replaces only a directory fatpipe wrote" in proc.stderr, proc.stderr
    assert (out / "mine.txt").read_text() == "a user's file"
    simulated = tmp_path / "simulated"
    assert subprocess.run([sys.executable, "-m", "fatpipe", "run", str(toml), "-o", str(simulated), "--quiet"]).returncode == 0
    proc = cli("emulate", toml, "-o", simulated, "--quiet", "--overwrite")
    assert proc.returncode == 0, proc.stderr
    assert "emulation" in json.loads((simulated / "summary.json").read_text())["flows"][0]


def test_without_root_one_line_says_how_to_run_it(tmp_path):
    require_root()
    setpriv = subprocess.run(["which", "setpriv"], capture_output=True, text=True).stdout.strip()
    if not setpriv:
        pytest.fail("setpriv (util-linux) is needed to drop privileges for this test")
    toml = write_toml(tmp_path / "s.toml", "1s")
    # Root without CAP_SYS_ADMIN and CAP_NET_ADMIN: as an unprivileged user would be.
    proc = subprocess.run([setpriv, "--bounding-set=-sys_admin,-net_admin", sys.executable, "-m", "fatpipe", "emulate",
                           str(toml), "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)" in proc.stderr and "sudo fatpipe emulate" in proc.stderr
    assert not (tmp_path / "out").exists(), "nothing is created"
