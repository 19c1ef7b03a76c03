"""``fatpipe bench --sweep``: runs per minute of a 32-point sweep (document 001's E1.2
shape: 4 congestion controls x 8 windows over 1 Gb/s and 30 ms, 30 s each; 10 s with
``--quick``) on one worker process, then on all the machine's cores with processes and with
threads, and on a Dask LocalCluster when Dask is installed. Each setting starts from an
empty output directory, so the times include starting the workers and writing each run's
files (without plots), as a user's sweep does.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .core import import_core
from .units import PS_PER_S

__all__ = ["bench_sweep", "sweep_main", "SWEEP_CCS", "SWEEP_WINDOWS"]

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
