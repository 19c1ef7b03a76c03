"""Issue 23, acceptance 2: a seeded fuzz test of what users and peers send -- scenario files,
command-line arguments and probe messages -- bounded in time. Whatever comes in, fatpipe
answers with exit status 0 or 2 and at most one line on stderr, never a traceback or a
panic, and stays under its memory budget.

The inputs are mutations of valid ones (a scenario, a command line, a probe test), drawn
from a seeded generator (random.Random(seed)): the same seed gives the same cases, and a
failure names its case. Each part runs its cases in one child process (the CLI's `main`, or
a daemon), whose peak memory the kernel reports when it ends.
"""

from __future__ import annotations

import json
import os
import random
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, List

import pytest

try:
    import fatpipe._core  # noqa: F401

    HAVE_CORE = True
except ImportError:
    HAVE_CORE = False

needs_core = pytest.mark.skipif(not HAVE_CORE, reason="compiled core not built")

HERE = Path(__file__).resolve().parent
#: Each case's memory budget, and what the child processes must stay under.
BUDGET = "512MiB"
BUDGET_BYTES = 512 * 2**20
#: The longest a part may take: each takes well under a minute on a loaded 2-core machine.
CHILD_SECONDS = 150

BASE = {
    "name": "fuzz",
    "duration": "200ms",
    "seed": 3,
    "topology": {"shape": "dumbbell", "bottleneck_rate": "20Mbps", "rtt": "20ms",
                 "queue": {"discipline": "droptail", "limit_bdp": 1.0}},
    "flows": [{"name": "a", "cc": "cubic", "start": "0s", "tcp": {"initial_window": 10, "rcv_buffer": "1MiB"}},
              {"name": "u", "transport": "udp", "udp": {"mode": "cbr", "rate": "1Mbps"}}],
    "output": {"sample_interval": "20ms", "plots": False, "memory_budget": BUDGET},
}

#: Values a hostile or careless user writes.
NASTY = [
    0, -1, 1, 2**64, -(2**63), 10**30, 1.5, float("inf"), float("nan"), True, None, "", " ", "0", "-5ms",
    "1e999999999s", "1" * 5000 + "s", "１s", "١٢Mbps", "1ps", "0bps", "1e-40s", "10 Gbit/s", "64KiB", "1.5B",
    "x" * 300, "a/b", "..", ".", "\x00", "é" * 100, [], [1, 2], {}, {"a": {"b": {"c": 1}}}, [[[[[[[[]]]]]]]],
    "reno", "cubic", "bbr", "udp", "red", "custom", 68, 65536, 1e308,
]


def mutate(rng: random.Random, doc: Any, depth: int = 0) -> Any:
    """A copy of ``doc`` with a few values replaced, keys added or removed."""
    if isinstance(doc, dict):
        out = {k: (mutate(rng, v, depth + 1) if rng.random() < 0.3 else v) for k, v in doc.items()}
        roll = rng.random()
        if roll < 0.15 and out:
            out.pop(rng.choice(list(out)))
        elif roll < 0.25:
            out[rng.choice(["stop", "bytes", "mtu", "streams", "pair", "zzz", "shape", "limit_packets", "kind",
                            "capture", "sample_interval", "seed", "transport", "variant", "handshake"])] = rng.choice(NASTY)
        elif roll < 0.5 and out:
            out[rng.choice(list(out))] = rng.choice(NASTY)
        return out
    if isinstance(doc, list):
        out = [mutate(rng, v, depth + 1) if rng.random() < 0.5 else v for v in doc]
        if rng.random() < 0.2:
            out = out * rng.choice([0, 2, 50])
        return out
    return rng.choice(NASTY) if rng.random() < 0.7 else doc


def scenario_text(rng: random.Random) -> tuple:
    """One scenario file: (its bytes, its suffix): a mutated BASE as JSON, or something
    worse (deep nesting, bytes that are no text, thousands of tables)."""
    doc = mutate(rng, json.loads(json.dumps(BASE)))
    if isinstance(doc, dict):
        doc.setdefault("output", {})
        if isinstance(doc["output"], dict):
            doc["output"]["memory_budget"] = BUDGET  # the budget the process is held to
    roll = rng.random()
    if roll < 0.04:
        return ("a = " + "[" * 5000 + "]" * 5000 + "\n").encode(), ".toml"
    if roll < 0.07:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))), ".toml"
    if roll < 0.09:
        return b'name = "x"\nduration = "1s"\n' + b"[[flows]]\n" * 3000, ".toml"
    if roll < 0.12:
        deep = "[" * 3000 + "1" + "]" * 3000
        return ('{"name": "deep", "duration": "1s", "flows": [{"name": "a", "x": ' + deep + "}]}").encode(), ".json"
    return json.dumps(doc, allow_nan=True).encode(), ".json"


def cli_cases(rng: random.Random, workdir: Path, n: int) -> List[List[str]]:
    """Command lines: commands with mutated arguments (never emulate, probe serve, bench or
    reproduce: they run for long or need root)."""
    run_dir = str(workdir / "run")
    values = ["", ".", "..", "-", "x" * 300, "/".join(["y" * 200] * 25), "１２", "-1", "0", "1e999", "nan",
              "out\udcff", run_dir, str(workdir / "missing"), "/dev/null", "/dev/zero", "1ps", "1s", "3"]
    scenario = str(workdir / "ok.json")
    commands = [
        ["validate", scenario], ["validate", scenario, "--json"], ["run", scenario, "--quiet"],
        ["run", scenario, "--quiet", "--interval", "50ms"], ["run", scenario, "--json"],
        ["report", run_dir], ["plot", run_dir, "--what", "cwnd"], ["compare", run_dir, run_dir],
        ["sweep", str(workdir / "sweep.toml"), "--dry-run"], ["schema"], ["algorithms"], ["run", scenario, "--seed"],
    ]
    options = ["-o", "--seed", "--interval", "--what", "--format", "--flow", "--start", "--stop", "--jobs",
               "--labels", "--overwrite", "--json", "--quiet", "--dry-run", "--no-plots", "--data-port", "--zzz"]
    cases = []
    for _ in range(n):
        argv = list(rng.choice(commands))
        for _ in range(rng.randrange(0, 4)):
            roll = rng.random()
            if roll < 0.6:
                argv += [rng.choice(options), rng.choice(values)]
            elif roll < 0.8 and len(argv) > 1:
                argv[rng.randrange(1, len(argv))] = rng.choice(values)
            else:
                argv.append(rng.choice(values))
        if "run" in argv[:1] and "-o" not in argv:
            argv += ["-o", str(workdir / f"out{len(cases)}")]
        cases.append(argv)
    return cases


# ---- the child: runs many cases through fatpipe.cli.main ----------------------------------


def child(cases_file: str, results_file: str) -> None:
    """Runs each command line of ``cases_file`` through fatpipe.cli.main in this process,
    stdout to /dev/null and stderr captured; writes (status, stderr, exception) per case."""
    import io
    import traceback

    from fatpipe import cli

    cases = json.loads(Path(cases_file).read_text(encoding="utf-8", errors="surrogateescape"))
    results = []
    devnull = open(os.devnull, "w")
    for argv in cases:
        argv = [a.encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape") for a in argv]
        err = io.StringIO()
        sys.stdout, sys.stderr = devnull, err
        try:
            status, crash = cli.main(argv), None
        except BaseException:  # noqa: B036 - a panic is a BaseException: that is a finding
            status, crash = None, traceback.format_exc()
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        results.append({"status": status, "stderr": err.getvalue(), "crash": crash})
    Path(results_file).write_text(json.dumps(results), encoding="utf-8")


def run_child(cases: List[List[str]], tmp_path: Path) -> tuple:
    """(results, peak RSS bytes) of the cases run in a fresh child process."""
    cases_file, results_file = tmp_path / "cases.json", tmp_path / "results.json"
    cases_file.write_text(json.dumps(cases, ensure_ascii=True), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, __file__, "child", str(cases_file), str(results_file)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + CHILD_SECONDS
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"the cases took more than {CHILD_SECONDS} s (one of them never ends)")
        time.sleep(0.1)
    stderr = proc.stderr.read().decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, stderr[-3000:]
    return json.loads(results_file.read_text()), usage.ru_maxrss * 1024


def check(cases: List[List[str]], results: List[dict]) -> None:
    for argv, r in zip(cases, results):
        label = f"fatpipe {' '.join(a[:60] for a in argv)}"
        assert r["crash"] is None, f"{label}: {r['crash'][-2000:]}"
        assert r["status"] in (0, 2), f"{label}: exit {r['status']}: {r['stderr'][:500]}"
        assert r["stderr"].count("\n") <= 1 and "Traceback" not in r["stderr"], f"{label}: {r['stderr'][:1000]}"
        assert "panicked" not in r["stderr"], f"{label}: {r['stderr'][:500]}"


@needs_core
def test_fuzzed_scenario_files_are_refused_in_one_line_or_run(tmp_path):
    rng = random.Random(23)
    cases = []
    for i in range(160):
        data, suffix = scenario_text(rng)
        path = tmp_path / f"s{i}{suffix}"
        path.write_bytes(data)
        # Most are validated; every tenth that is a plain document is run too.
        cases.append(["validate", str(path)])
        if i % 10 == 0:
            cases.append(["run", str(path), "--quiet", "-o", str(tmp_path / f"run{i}")])
    started = time.monotonic()
    results, peak = run_child(cases, tmp_path)
    check(cases, results)
    assert any(r["status"] == 0 for r in results) and any(r["status"] == 2 for r in results)
    assert peak < BUDGET_BYTES, f"peak {peak >> 20} MiB"
    assert time.monotonic() - started < 120


@needs_core
def test_fuzzed_command_lines_are_refused_in_one_line_or_done(tmp_path):
    rng = random.Random(2301)
    ok = dict(BASE, flows=BASE["flows"][:1])
    (tmp_path / "ok.json").write_text(json.dumps(ok))
    (tmp_path / "sweep.toml").write_text('base = "ok.json"\n[grid]\n"flows[0].cc" = ["reno", "cubic"]\n')
    subprocess.run([sys.executable, "-m", "fatpipe", "run", "ok.json", "-o", "run", "--quiet"], cwd=tmp_path, check=True)
    cases = cli_cases(rng, tmp_path, 120)
    results, peak = run_child(cases, tmp_path)
    check(cases, results)
    assert peak < BUDGET_BYTES, f"peak {peak >> 20} MiB"


# ---- probe messages -----------------------------------------------------------------------


def flow_spec(kind: str) -> dict:
    from fatpipe.scenario import load

    flow = {"name": "f", "cc": "cubic"} if kind == "tcp" else {"name": "f", "transport": "udp",
                                                                "udp": {"mode": kind, "rate": "1Mbps"}}
    if kind == "onoff":
        flow["udp"].update(on_time="10ms", off_time="10ms")
    if kind == "burst":
        flow["udp"] = {"mode": "burst", "burst_size": "10KB", "burst_period": "10ms"}
    return load({"name": "x", "duration": "1s", "topology": {"bottleneck_rate": "1Gbps", "rtt": "1ms"},
                 "flows": [flow]}).core["flows"][0]


def probe_message(rng: random.Random, specs: List[dict]) -> bytes:
    """A line a client might send after its handshake: a mutated setup, start or ping, or
    junk."""
    roll = rng.random()
    if roll < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) + b"\n"
    if roll < 0.2:
        return json.dumps({"version": rng.choice([1, 2, "1", None]), "type": rng.choice(["ping", "start", "fly", "error"]),
                           "seq": rng.choice(NASTY[:16])}).encode() + b"\n"
    spec = mutate(rng, json.loads(json.dumps(rng.choice(specs))))
    tcp = {"congestion": rng.choice(["cubic", "reno", "nosuch", None]), "snd_buffer_bytes": None, "rcv_buffer_bytes": None,
           "force_buffers": False, "max_segment_bytes": rng.choice([None, 0, 88, 1448, 10**6]),
           "max_pacing_rate_bps": None, "nodelay": True}
    flow = {"spec": spec, "sends": rng.random() < 0.5, "tcp": tcp if "tcp" in json.dumps(spec) else None,
            "quick_ack": False, "port": None, "peer_udp_port": rng.choice([9, 0, 65535])}
    test = {"duration_ps": rng.choice([10**9, 2 * 10**11, 0, 2**64 - 1, -1]),
            "sample_interval_ps": rng.choice([10**10, 10**9, 1, 0]), "flows": [flow] * rng.choice([1, 1, 2, 0, 300])}
    return json.dumps({"version": 1, "type": "setup", "test": mutate(rng, test) if rng.random() < 0.3 else test},
                      allow_nan=True).encode() + b"\n"


@needs_core
def test_fuzzed_probe_messages_get_an_answer_and_the_daemon_serves_on(tmp_path):
    from probe_helpers import Client, daemon

    rng = random.Random(2323)
    specs = [flow_spec(k) for k in ("tcp", "cbr", "onoff", "burst")]
    started = time.monotonic()
    with daemon("--max-clients", "4") as d:
        host, port = d.address.rsplit(":", 1)
        for case in range(150):
            c = Client(d.address, timeout=10)
            assert c.handshake()["type"] == "welcome"
            line = probe_message(rng, specs)
            c.send_raw(line)
            try:
                answer = c.recv()
            except (ConnectionError, OSError, ValueError) as err:
                pytest.fail(f"case {case}: no answer to {line[:300]!r}: {err}")
            assert answer.get("type") in ("error", "ready", "pong"), (case, answer)
            if answer["type"] == "ready" and rng.random() < 0.5:
                c.send({"type": "start", "in_ps": 0})
                assert c.recv()["type"] in ("started", "error")
                time.sleep(0.05)
            c.close()
        # Silent and half-open connections mixed in, then a valid client is still served.
        silent = [socket.create_connection((host, int(port))) for _ in range(30)]
        c = Client(d.address, timeout=10)
        assert c.handshake()["type"] == "welcome"
        c.ping()
        c.close()
        for s in silent:
            s.close()
        rss = int(next(line.split()[1] for line in open(f"/proc/{d.proc.pid}/status") if line.startswith("VmHWM:")))
        log = d.stop()
    assert "panicked" not in log and "the daemon failed on this request" not in log, log[-3000:]
    assert rss * 1024 < BUDGET_BYTES, f"the daemon peaked at {rss >> 10} MiB"
    assert time.monotonic() - started < 120


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "child":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    child(sys.argv[2], sys.argv[3])
