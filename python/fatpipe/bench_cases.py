"""The scenarios of ``fatpipe bench`` (issue 16's goal) and how each is measured.

Every case runs in a fresh Python process, so that its peak memory is its own and its
start-up is what a user pays:

- ``steady`` cases build the simulation in the child, run it untimed to the end of a warm-up
  (slow start over, queues settled), then time ``run_until`` over the measured part alone.
  The child reports the data segments sent (retransmissions included, ACKs not counted),
  the events, the wall time of the timed part, its start-up (from the parent launching it
  to the simulation built: interpreter, imports, scenario validation, construction), its
  peak RSS, and its memory per segment in flight: how much its resident memory grew from
  the simulation built to the end of the run, divided by the segments its senders had in
  flight at the end (the packets in the links' queues and on their wires, the ACKs coming
  back, and every per-segment record the senders keep). A run at 10 Gb/s x 100 ms holds
  about 86,000 segments in flight, so that growth is almost all per-segment state.
- ``run`` cases are whole ``fatpipe run ... --no-plots --quiet`` processes, timed from
  outside: start-up, simulation and writing the results.

Default dumbbell (``shape = "dumbbell"``: access links 10x the bottleneck, no delay on
them), RTT 100 ms, the default flow (profile ``linux``: CUBIC with HyStart, SACK, RACK-TLP,
PRR, delayed ACKs), a receive buffer of one bandwidth-delay product: the window settles at
the BDP and nothing is lost, so the measured part is steady-state forwarding of about 860,
8,600 and 86,000 segments in flight.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from .units import PS_PER_S, format_rate

__all__ = ["Case", "CaseResult", "cases", "run_case", "bench_scenario", "red_scenario", "child_main"]

RTT_PS = 100 * 10**9  # 100 ms
MSS_BYTES = 1448  # Ethernet MTU 1500 - 40 (IPv4 + TCP) - 12 (timestamps)
WIRE_BYTES_PER_SEGMENT = 1500 + 38  # MTU + Ethernet framing
SAMPLE_INTERVAL_PS = RTT_PS  # coarse: the bench does not read the series
SETTLE_RTTS = 10  # after slow start reaches the window, let the queue settle
#: Where the examples live (shipped in the package).
EXAMPLES = Path(__file__).resolve().parent / "examples"


@dataclass
class Case:
    name: str
    what: str
    kind: str  # "steady" or "run"
    #: steady: the user-format scenario, the warm-up and the end, picoseconds
    scenario: Optional[Dict[str, Any]] = None
    warmup_ps: int = 0
    #: run: the scenario file's text, and how many times to run it (the median is kept)
    toml: str = ""
    repeat: int = 1


@dataclass
class CaseResult:
    case: str
    what: str
    data_packets: int
    events: int
    wall_s: float
    startup_s: Optional[float]
    peak_rss_bytes: Optional[int]
    bytes_per_packet_in_flight: Optional[float] = None
    retransmissions: int = 0
    note: str = ""
    walls_s: List[float] = field(default_factory=list)

    @property
    def packets_per_s(self) -> float:
        return self.data_packets / self.wall_s if self.wall_s > 0 else math.inf

    @property
    def events_per_packet(self) -> float:
        return self.events / self.data_packets if self.data_packets else math.nan


def bdp_bytes(rate_bps: int, rtt_ps: int = RTT_PS) -> int:
    return rate_bps * rtt_ps // (8 * PS_PER_S)


def warmup_ps(rate_bps: int) -> int:
    """Slow start with delayed ACKs grows the window 1.5x per RTT (document 000, eq. 3.2):
    reaching W segments takes about 1 + log1.5(W) RTTs. Add a few RTTs for the queue to
    settle, rounded to whole RTTs (a multiple of the sample interval)."""
    window = bdp_bytes(rate_bps) / MSS_BYTES
    rtts = math.ceil(1 + math.log(window, 1.5)) + SETTLE_RTTS
    return rtts * RTT_PS


def measure_ps(rate_bps: int, segments: int) -> int:
    """Simulated time in which a saturated bottleneck carries ``segments`` full segments."""
    segments_per_s = rate_bps / (8 * WIRE_BYTES_PER_SEGMENT)
    intervals = math.ceil(segments / segments_per_s * PS_PER_S / SAMPLE_INTERVAL_PS)
    return intervals * SAMPLE_INTERVAL_PS


def bench_scenario(rate_bps: int, duration_ps: int) -> Dict[str, Any]:
    """One window-limited flow over the default dumbbell (user format, validated as any)."""
    bdp = bdp_bytes(rate_bps)
    return {
        "name": f"bench-{format_rate(rate_bps)}",
        "duration": f"{duration_ps}ps",
        "seed": 1,
        "topology": {"bottleneck_rate": rate_bps, "rtt": f"{RTT_PS}ps", "queue": {"limit_bdp": 1.0}},
        "flows": [
            {
                "name": "flow",
                # The window is the receive buffer, exactly one BDP; the send buffer twice
                # that, so the application is never the limit (as Linux sizes it).
                "tcp": {"rcv_buffer": bdp, "snd_buffer": 2 * bdp},
            }
        ],
        "output": {"sample_interval": f"{SAMPLE_INTERVAL_PS}ps", "plots": False},
    }


#: The many-flows case: flows, their RTTs' spread, warm-up and measured time.
RED_FLOWS = 100
RED_RATE_BPS = 10 * 10**9
RED_WARMUP_PS = 6 * PS_PER_S
RED_START_JITTER_PS = 3 * PS_PER_S


def red_scenario(
    duration_ps: int, start_jitter_ps: int = RED_START_JITTER_PS, discipline: str = "red"
) -> Dict[str, Any]:
    """100 flows with mixed RTTs (100 to 179 ms: pair i's sender access link adds 0.4 i ms
    each way) over a 10 Gb/s dumbbell whose bottleneck runs gentle RED with ns-2's automatic
    parameters on a one-BDP buffer; each flow the default one (CUBIC, Linux profile) with
    Linux's default buffers, so the flows fill the pipe and RED drops. The flows start at
    random times in the first 3 s: started together, their slow starts overflow the buffer
    at once and CUBIC then takes many seconds to fill the pipe again (half of it idle);
    staggered, the link runs 7-9 Gb/s from about 4 s on. ``discipline`` replaces RED (issue
    28: a flow through FQ-CoDel, or DualPI2, should cost no more per packet than through RED, and
    one through FQ-PIE about what FQ-CoDel costs)."""
    return {
        "name": "bench-red-100",
        "duration": f"{duration_ps}ps",
        "seed": 1,
        "topology": {
            "bottleneck_rate": RED_RATE_BPS,
            "rtt": f"{RTT_PS}ps",
            "pairs": RED_FLOWS,
            "access_delays": [f"{0.4 * i:g}ms" for i in range(RED_FLOWS)],
            "queue": {"discipline": discipline, "limit_bdp": 1.0},
        },
        "flows": [
            {"name": f"f{i:03d}", "pair": i, "start_jitter": f"{start_jitter_ps}ps"} for i in range(RED_FLOWS)
        ],
        "output": {"sample_interval": f"{SAMPLE_INTERVAL_PS}ps", "plots": False},
    }


def _with_duration(toml_text: str, duration: str) -> str:
    lines = toml_text.splitlines()
    for i, line in enumerate(lines):
        if line.split("=")[0].strip() == "duration":
            lines[i] = f'duration = "{duration}"'
            return "\n".join(lines) + "\n"
    raise ValueError("the example has no duration line")


def cases(quick: bool = False) -> List[Case]:
    """The goal's scenarios; ``quick`` shortens each (for CI: no figure is judged there)."""
    segments = 300_000 if quick else 2_000_000
    out = []
    for rate in (10**8, 10**9, 10**10):
        warm = warmup_ps(rate)
        out.append(
            Case(
                name=f"dumbbell {format_rate(rate)}",
                what=f"default dumbbell, {format_rate(rate)} x 100 ms, 1 flow, window = BDP",
                kind="steady",
                scenario=bench_scenario(rate, warm + measure_ps(rate, segments)),
                warmup_ps=warm,
            )
        )
    # Issue 26: the same 10 Gb/s flow with the host's elements on; per-packet cost must not
    # grow (pacing alone adds a timer per segment; TSO makes that one per train; TCP Small
    # Queues adds its bookkeeping per segment and a check per train).
    ten = 10**10
    hosts = (
        ("pacing", {"linux_pacing": True}),
        ("pacing+TSO", {"linux_pacing": True, "tso": True}),
        ("pacing+TSO+TSQ", {"linux_pacing": True, "tso": True, "tsq": True}),
    )
    for label, host in hosts:
        warm = warmup_ps(ten)
        scenario = bench_scenario(ten, warm + measure_ps(ten, segments))
        scenario["flows"][0]["host"] = host
        out.append(
            Case(
                name=f"host {label} {format_rate(ten)}",
                what=f"dumbbell {format_rate(ten)} as above, [flows.host] {label}",
                kind="steady",
                scenario=scenario,
                warmup_ps=warm,
            )
        )
    red_measure = (PS_PER_S // 4) if quick else 2 * PS_PER_S
    red_warm = PS_PER_S if quick else RED_WARMUP_PS
    out.append(
        Case(
            name="RED, 100 flows",
            what="10Gbps dumbbell, gentle RED, 100 flows, RTT 100-179 ms",
            kind="steady",
            # Quick: the flows start within the (shorter) warm-up.
            scenario=red_scenario(red_warm + red_measure, red_warm // 2 if quick else RED_START_JITTER_PS),
            warmup_ps=red_warm,
        )
    )
    for label, discipline, note in (
        ("FQ-CoDel", "fq_codel", ""),
        ("FQ-PIE", "fq_pie", ""),
        ("DualPI2", "dualpi2", "; Not-ECT: classic queue"),
    ):
        out.append(
            Case(
                name=f"{label}, 100 flows",
                what=f"the RED case's 100 flows through {label} (Linux defaults, one-BDP limit{note})",
                kind="steady",
                scenario=red_scenario(red_warm + red_measure, red_warm // 2 if quick else RED_START_JITTER_PS, discipline),
                warmup_ps=red_warm,
            )
        )
    example = (EXAMPLES / "10G-100ms-window-limited.toml").read_text(encoding="utf-8")
    out.append(
        Case(
            name="minute 10Gbps" if not quick else "6 s of 10Gbps",
            what="fatpipe run examples/10G-100ms-window-limited.toml --no-plots (whole process)",
            kind="run",
            toml=_with_duration(example, "6s") if quick else example,
        )
    )
    short = (EXAMPLES / "reno-100M-40ms.toml").read_text(encoding="utf-8")
    out.append(
        Case(
            name="0.1 s scenario",
            what="fatpipe run examples/reno-100M-40ms.toml, duration 0.1s, --no-plots",
            kind="run",
            toml=_with_duration(short, "0.1s"),
            repeat=1 if quick else 5,
        )
    )
    return out


def run_case(case: Case) -> CaseResult:
    if case.kind == "steady":
        return _run_steady(case)
    return _run_whole(case)


# ---- steady cases: a child process ------------------------------------------------------


def _run_steady(case: Case) -> CaseResult:
    request = {"scenario": case.scenario, "warmup_ps": case.warmup_ps, "launched": time.time()}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, fatpipe.bench_cases as b; b.child_main(sys.stdin.read())"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench case {case.name!r} failed: {proc.stderr.strip().splitlines()[-1:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return CaseResult(
        case=case.name,
        what=case.what,
        data_packets=got["data_packets"],
        events=got["events"],
        wall_s=got["wall_s"],
        startup_s=got["startup_s"],
        peak_rss_bytes=got["peak_rss_bytes"],
        bytes_per_packet_in_flight=got["bytes_per_packet_in_flight"],
        retransmissions=got["retransmissions"],
    )


def _rss_bytes() -> Optional[int]:
    """The process's resident memory now (Linux), else None."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _peak_rss_bytes() -> Optional[int]:
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux: KiB


def child_main(request_text: str) -> None:
    """In the child: build, warm up untimed, time the rest; print one JSON line."""
    from .core import import_core
    from .scenario import load

    request = json.loads(request_text)
    core = import_core()
    sim = core.Simulation(load(request["scenario"]).core)
    startup_s = time.time() - request["launched"]
    rss_built = _rss_bytes()
    sim.run_until(request["warmup_ps"])
    before, events0 = sim.flow_counters(), sim.events
    start = time.perf_counter()
    sim.run_until(sim.duration_ps)
    wall_s = time.perf_counter() - start
    after, events1 = sim.flow_counters(), sim.events
    rss_end = _rss_bytes()

    def total(counters: Any, key: str) -> int:
        import numpy as np

        return int(np.asarray(counters[key]).sum())

    in_flight = total(after, "outstanding_bytes") / MSS_BYTES
    grown = None if rss_built is None or rss_end is None else rss_end - rss_built
    print(
        json.dumps(
            {
                "data_packets": total(after, "segments_sent") - total(before, "segments_sent"),
                "events": events1 - events0,
                "wall_s": wall_s,
                "startup_s": startup_s,
                "peak_rss_bytes": _peak_rss_bytes(),
                "bytes_per_packet_in_flight": grown / in_flight if grown is not None and in_flight else None,
                "retransmissions": total(after, "segments_retransmitted") - total(before, "segments_retransmitted"),
            }
        )
    )


# ---- whole runs ---------------------------------------------------------------------------


def _run_whole(case: Case) -> CaseResult:
    walls, peaks = [], []
    summary: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fatpipe-bench-") as tmp:
        path = Path(tmp) / "scenario.toml"
        path.write_text(case.toml, encoding="utf-8")
        for i in range(case.repeat):
            out = Path(tmp) / f"out{i}"
            argv = [sys.executable, "-m", "fatpipe.cli", "run", str(path), "-o", str(out), "--no-plots", "--quiet"]
            start = time.perf_counter()
            child = subprocess.Popen(argv)
            _, status, usage = os.wait4(child.pid, 0)
            walls.append(time.perf_counter() - start)
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"bench case {case.name!r}: fatpipe run exited with {status}")
            peaks.append(usage.ru_maxrss * 1024)
            summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    flows = summary["flows"]
    return CaseResult(
        case=case.name,
        what=case.what,
        data_packets=sum(int(f["segments_sent"]) for f in flows),
        events=int(summary["events"]),
        wall_s=sorted(walls)[len(walls) // 2],
        startup_s=None,
        peak_rss_bytes=max(peaks),
        retransmissions=sum(int(f["segments_retransmitted"]) for f in flows),
        note="whole process" + (f", median of {len(walls)}" if len(walls) > 1 else ""),
        walls_s=walls,
    )
