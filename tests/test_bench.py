"""`fatpipe bench --quick` runs every case of the speed goal (CI runs it; no figure of time
is judged: speed is not a test) and counts what it claims to count."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "fatpipe", "bench", "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "data pkts/s" in done.stdout and "goal" in done.stdout
    # Every goal the quick run prints says whether this run met it.
    goals = [line for line in done.stdout.splitlines() if "(goal: " in line]
    assert len(goals) == 4 and all(line.endswith((": met", ": missed")) for line in goals), done.stdout
    assert any(line.startswith("goals: ") and " of 4 met" in line for line in done.stdout.splitlines())
    return {r["case"]: r for r in json.loads(Path(out).read_text(encoding="utf-8"))}


def test_every_case_of_the_goal_runs(quick: dict) -> None:
    assert sorted(quick) == sorted(
        ["dumbbell 100Mbps", "dumbbell 1Gbps", "dumbbell 10Gbps", "host pacing 10Gbps", "host pacing+TSO 10Gbps",
         "host pacing+TSO+TSQ 10Gbps", "RED, 100 flows", "FQ-CoDel, 100 flows", "FQ-PIE, 100 flows", "DualPI2, 100 flows", "6 s of 10Gbps", "0.1 s scenario"]
    )
    for r in quick.values():
        assert r["data_packets"] > 0 and r["events"] > 0 and r["wall_s"] > 0 and r["peak_rss_bytes"] > 0


def test_one_event_per_bottleneck_crossing_on_the_dumbbell(quick: dict) -> None:
    # Closed form: a data segment crosses 3 links, and with delayed ACKs one ACK per 2
    # segments crosses 3 links back. The sender's access link hands the segment on to the
    # bottleneck without an event, and the receiver's access link is the last hop, handled
    # at once when the bottleneck's arrival is the next event anyway (one flow: always but
    # for the rare probe or timer in the way); the same for the ACK. So only the bottleneck
    # crossings are events: 1 + 1/2 = 1.5 per data segment; TCP timers re-arm lazily and the
    # probe samples every 100 ms, so they add next to nothing. One event per hop gave 4.5,
    # two (before issue 16) 6 (sim/hand_on.rs).
    for rate in ("100Mbps", "1Gbps", "10Gbps"):
        r = quick[f"dumbbell {rate}"]
        assert r["events"] / r["data_packets"] == pytest.approx(1.5, abs=0.02), rate
        assert r["retransmissions"] == 0, "the window is one BDP: nothing may be lost"


def test_data_packets_are_segments_not_acks(quick: dict) -> None:
    # The steady cases time 300,000 full segments' worth of bottleneck time (`--quick`): the
    # count must be the data segments sent then, not data plus ACKs (which would be 1.5x).
    for rate in ("100Mbps", "1Gbps"):
        assert quick[f"dumbbell {rate}"]["data_packets"] == pytest.approx(300_000, rel=0.01)


def test_every_goal_says_whether_it_was_met_and_the_missed_ones_are_named() -> None:
    from fatpipe.bench import GOAL_BYTES_PER_PACKET, GOAL_RED_PACKETS_PER_S, goal_lines
    from fatpipe.bench_cases import CaseResult

    def case(name: str, packets_per_s: float, **kw) -> CaseResult:
        return CaseResult(case=name, what="", data_packets=int(packets_per_s), events=1, wall_s=1.0,
                          startup_s=None, peak_rss_bytes=None, **kw)

    # The rates within 1.5x, memory per segment above its goal, RED below its goal, the
    # minute and the 0.1 s scenario inside theirs (walls of 1 s: the minute met, the 0.1 s
    # scenario missed).
    results = [case("dumbbell 100Mbps", 6e6), case("dumbbell 1Gbps", 5e6),
               case("dumbbell 10Gbps", 4.5e6, bytes_per_packet_in_flight=GOAL_BYTES_PER_PACKET + 30),
               case("RED, 100 flows", GOAL_RED_PACKETS_PER_S / 2), case("minute 10Gbps", 1.0),
               case("0.1 s scenario", 1.0)]
    lines = goal_lines(results, quick=False)
    verdict = {line.split(":")[0]: line.rsplit(": ", 1)[1] for line in lines if "(goal: " in line}
    assert verdict == {"dumbbell data packets/s": "met", "memory per segment in flight at 10 Gb/s": "missed",
                       "100 flows with RED": "missed", "a minute of 10 Gb/s x 100 ms": "met",
                       "0.1 s scenario, whole process": "missed"}, lines
    assert "goals: 2 of 5 met; missed: memory per segment, 100 flows with RED, 0.1 s scenario" in lines
    # Rates 2x apart miss the spread goal.
    spread = goal_lines([case("dumbbell 100Mbps", 8e6), case("dumbbell 10Gbps", 4e6)], quick=True)
    assert spread[0].endswith("(goal: within 1.5x across the rates): missed"), spread
    assert "goals: 0 of 1 met; missed: dumbbell rates within 1.5x" in spread
    assert any(line.startswith("--quick") for line in spread)


def test_bench_bpf_quick_compares_each_program_with_its_builtin(tmp_path) -> None:
    # Issue 27: `fatpipe bench --bpf` times fatpipe's BPF programs against the built-in
    # algorithms; the programs are compiled with clang.
    if shutil.which(os.environ.get("CLANG", "clang")) is None:
        pytest.skip("clang is not installed (BPF congestion controls are compiled with it)")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "fatpipe", "bench", "--bpf", "--quick"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[2:] if line.strip()]
    assert [r[0] for r in rows] == ["reno", "cubic", "vegas", "htcp"], proc.stdout
    # Every program gives its built-in algorithm's summary (the last column).
    assert all(r[-1] == "yes" for r in rows), proc.stdout
    # Interpreted and JIT-compiled both timed where the JIT exists (x86-64 Linux).
    if sys.platform.startswith("linux") and platform.machine() == "x86_64":
        assert all(float(r[-5]) > 0 and float(r[-6]) > 0 for r in rows), proc.stdout
