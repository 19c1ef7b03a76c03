"""``fatpipe bench``: how fast the simulator runs, and whether its cost per packet stays flat
as the bandwidth-delay product grows.

Three cases: one Reno flow over a 100 Mb/s, 1 Gb/s and 10 Gb/s bottleneck with 100 ms
RTT, access links 10x faster, a drop-tail queue of one BDP, delayed ACKs on. The receive
buffer is one BDP, so the window settles at the BDP and nothing is lost: the run is pure
steady-state forwarding of about 860, 8,600 and 86,000 packets in flight. Each case
simulates about 2 million data segments (1 million with ``--quick``) after a warm-up long
enough for slow start to reach the window.

Only the steady state is timed. The core reports event and packet counts at the end of a
run, so each case runs twice with the same seed: once to the end of the warm-up, once to
the end of the measurement; being deterministic, the second run repeats the first up to
the warm-up, and the differences of the two summaries are the counts of the timed part.

A good result is a max/min ratio of packets per wall-second close to 1: the cost per
packet does not depend on how many packets are in flight.

``--sweep`` measures something else: runs per minute of a 32-point sweep (document 001's
E1.2 shape: 4 congestion controls x 8 windows over 1 Gb/s and 30 ms, 30 s each; 10 s with
``--quick``) on one worker process, then on all the machine's cores with processes and with
threads, and on a Dask LocalCluster when Dask is installed. Each setting starts from an
empty output directory, so the times include starting the workers and writing each run's
files (without plots), as a user's sweep does.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from .runner import import_core
from .scenario import load
from .units import PS_PER_S, format_rate

__all__ = ["main", "CASES_BPS", "bench_scenario", "bench_sweep", "sweep_main"]

#: Bottleneck rates of the three cases.
CASES_BPS = (100 * 10**6, 10**9, 10 * 10**9)
RTT_PS = 100 * 10**9  # 100 ms
MSS_BYTES = 1448  # Ethernet MTU 1500 - 40 (IPv4 + TCP) - 12 (timestamps)
WIRE_BYTES_PER_SEGMENT = 1500 + 38  # MTU + Ethernet framing
SEGMENTS_FULL = 2_000_000
SEGMENTS_QUICK = 1_000_000
SAMPLE_INTERVAL_PS = RTT_PS  # coarse: the bench does not read the series
SETTLE_RTTS = 10  # after slow start reaches the window, let the queue settle


@dataclass
class CaseResult:
    rate_bps: int
    window_packets: int
    data_segments: int
    packets: int
    events: int
    wall_s: float
    peak_rss_bytes: Optional[int]
    retransmissions: int

    @property
    def packets_per_s(self) -> float:
        return self.packets / self.wall_s if self.wall_s > 0 else math.inf

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s > 0 else math.inf


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
    """The benchmark scenario in the user format (validated like any other)."""
    bdp = bdp_bytes(rate_bps)
    return {
        "name": f"bench-{format_rate(rate_bps)}",
        "duration": f"{duration_ps}ps",
        "seed": 1,
        "topology": {
            "bottleneck_rate": rate_bps,
            "rtt": f"{RTT_PS}ps",
            "access_rate": 10 * rate_bps,
            "queue": {"limit_bdp": 1.0},
        },
        "flows": [
            {
                "name": "reno",
                "cc": "reno",
                "tcp": {
                    # The window is the receive buffer: exactly one BDP.
                    "rcv_buffer": bdp,
                    # Twice that, so the application is never the limit.
                    "snd_buffer": 2 * bdp,
                },
            }
        ],
        "output": {"sample_interval": f"{SAMPLE_INTERVAL_PS}ps", "plots": False},
    }


def _peak_rss_bytes() -> Optional[int]:
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak if sys.platform == "darwin" else peak * 1024


def run_case(core: Any, rate_bps: int, segments: int) -> CaseResult:
    warm_ps = warmup_ps(rate_bps)
    end_ps = warm_ps + measure_ps(rate_bps, segments)

    # 1. Counts up to the end of the warm-up.
    warm = core.Simulation(_core_json(bench_scenario(rate_bps, warm_ps)))
    before = warm.finish()["summary"]
    del warm

    # 2. The same run, continued: only the part after the warm-up is timed.
    sim = core.Simulation(_core_json(bench_scenario(rate_bps, end_ps)))
    sim.run_until(warm_ps)
    start = time.perf_counter()
    sim.run_until(end_ps)
    wall_s = time.perf_counter() - start
    after = sim.finish()["summary"]
    del sim

    def flow_delta(key: str) -> int:
        return int(after["flows"][0][key]) - int(before["flows"][0][key])

    data_segments = flow_delta("segments_sent")
    return CaseResult(
        rate_bps=rate_bps,
        window_packets=math.ceil(bdp_bytes(rate_bps) / MSS_BYTES),
        data_segments=data_segments,
        packets=data_segments + flow_delta("acks_sent"),
        events=int(after["events"]) - int(before["events"]),
        wall_s=wall_s,
        peak_rss_bytes=_peak_rss_bytes(),
        retransmissions=int(after["flows"][0]["segments_retransmitted"]),
    )


def _core_json(user_scenario: Dict[str, Any]) -> str:
    import json

    return json.dumps(load(user_scenario).core)


def format_table(results: Sequence[CaseResult]) -> str:
    headers = [
        "rate",
        "RTT",
        "window (pkts)",
        "data segments",
        "packets",
        "wall s",
        "packets/s",
        "events/s",
        "peak RSS",
    ]
    rows = []
    for r in results:
        rss = f"{r.peak_rss_bytes / 2**20:.0f} MiB" if r.peak_rss_bytes is not None else "n/a"
        rows.append(
            [
                format_rate(r.rate_bps),
                f"{RTT_PS / 10**9:g} ms",
                f"{r.window_packets:,}",
                f"{r.data_segments:,}",
                f"{r.packets:,}",
                f"{r.wall_s:.2f}",
                f"{r.packets_per_s:,.0f}",
                f"{r.events_per_s:,.0f}",
                rss,
            ]
        )
    cells = [headers] + rows
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


# ---- --sweep ---------------------------------------------------------------------------

SWEEP_CCS = ("newreno", "highspeed", "scalable", "cubic")
SWEEP_WINDOWS = ("256KiB", "512KiB", "1MiB", "2MiB", "4MiB", "8MiB", "12MiB", "16MiB")


def bench_sweep(quick: bool = False) -> Any:
    """The 32-point benchmark sweep: congestion control x window over 1 Gb/s, 30 ms RTT
    (document 001's E1.2 without its jumbo frames), a queue of one BDP."""
    from .sweeps import Sweep

    base = {
        "name": "bench-sweep",
        "duration": "10s" if quick else "30s",
        "topology": {"bottleneck_rate": "1Gbps", "rtt": "30ms", "queue": {"limit_bdp": 1.0}},
        "flows": [{"name": "flow", "tcp": {"snd_buffer": "32MiB"}}],
        "output": {"sample_interval": "100ms", "plots": False},
    }
    grid = {"flows[0].cc": list(SWEEP_CCS), "flows[0].tcp.rcv_buffer": list(SWEEP_WINDOWS)}
    return Sweep.build(base, grid=grid)


def sweep_main(args: argparse.Namespace) -> int:
    """``fatpipe bench --sweep``: prints runs per minute for each way of running."""
    import json
    import tempfile
    from pathlib import Path

    from .sweep_runner import default_jobs, run_sweep

    import_core()
    quick = getattr(args, "quick", False)
    spec = bench_sweep(quick)
    points = spec.points()
    cores = default_jobs()
    settings = [
        ("1 process (--jobs 1)", dict(jobs=1)),
        (f"{cores} processes (--jobs {cores})", dict(jobs=cores)),
        (f"{cores} threads (--executor threads)", dict(jobs=cores, executor="threads")),
    ]
    try:
        import distributed  # noqa: F401

        settings.append((f"Dask LocalCluster, {cores} workers (--dask local)", dict(jobs=cores, dask="local")))
    except ImportError:
        print("Dask is not installed: no --dask local row (pip install 'dask[distributed]')")
    print(
        f"fatpipe bench --sweep: {len(points)} runs ({spec.describe()}), "
        f"{points[0].core['duration_ps'] / PS_PER_S:g} s simulated each, {cores} cores",
        flush=True,
    )
    rows = []
    first_rate = None
    for label, kwargs in settings:
        print(f"  {label} ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            outcome = run_sweep(spec, tmp, points=points, **kwargs)
            wall_s = time.perf_counter() - start
            per_run = [
                json.loads(p.read_text())["wall_s"] for p in Path(tmp).glob("runs/*/done.json")
            ]
        if outcome.failures:
            print(f"note: {len(outcome.failures)} runs failed with {label}: {outcome.failures[0]['error']}")
        rate = len(points) / wall_s * 60
        first_rate = first_rate or rate
        rows.append(
            [
                label,
                f"{len(points)}",
                f"{wall_s:.1f}",
                f"{sum(per_run) / max(1, len(per_run)):.2f}",
                f"{rate:.0f}",
                f"{rate / first_rate:.2f}x",
            ]
        )
    headers = ["how", "runs", "wall s", "s per run in worker", "runs/min", "speed-up"]
    cells = [headers] + rows
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]))
    return 0


def main(args: Optional[argparse.Namespace] = None) -> int:
    """Runs the benchmark and prints the table; ``args.quick`` halves the work."""
    if args is None:
        args = _parse(sys.argv[1:])
    if getattr(args, "sweep", False):
        return sweep_main(args)
    if getattr(args, "many_flows", False):
        from .bench_many import main as many_flows_main

        return many_flows_main()
    segments = SEGMENTS_QUICK if getattr(args, "quick", False) else SEGMENTS_FULL
    core = import_core()
    print(
        f"fatpipe bench: one Reno flow, window = BDP, RTT {RTT_PS / 10**9:g} ms, "
        f"~{segments:,} data segments per case after warm-up",
        flush=True,
    )
    results: List[CaseResult] = []
    for rate in CASES_BPS:
        print(f"  {format_rate(rate)} ...", file=sys.stderr, flush=True)
        results.append(run_case(core, rate, segments))
    print(format_table(results))
    rates = [r.packets_per_s for r in results]
    print(f"packets/s max/min across cases: {max(rates) / min(rates):.2f}")
    lossy = [format_rate(r.rate_bps) for r in results if r.retransmissions]
    if lossy:
        print(
            f"note: retransmissions at {', '.join(lossy)}: not the loss-free steady state intended"
        )
    print("peak RSS is the process's peak so far (cases run from smallest to largest)")
    return 0


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m fatpipe.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="about 1 million segments per case")
    parser.add_argument("--sweep", action="store_true", help="runs per minute of a 32-point sweep")
    return parser.parse_args(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
