"""``fatpipe bench --many-flows``: wall time and peak memory of ``fatpipe run`` with many
flows, each case a fresh process (as a user runs it: scenario, simulation, result tables,
Parquet, summary.json and plots).

Cases: a 10 Gb/s x 100 ms dumbbell with CUBIC flows as parallel streams, 10 ms samples:
10 x 1000 streams for 10 s (10,000 flows, 10 million series rows) and 100 x 1000 streams for
5 s (100,000 flows, 50 million rows: the run of issue 13 that aborted in finish()).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

__all__ = ["CASES", "scenario_text", "main"]

#: (groups, streams per group, duration)
CASES: List[Tuple[int, int, str]] = [(10, 1000, "10s"), (100, 1000, "5s")]


def scenario_text(groups: int, streams: int, duration: str) -> str:
    head = f"""name = "many-{groups}x{streams}"
duration = "{duration}"
[topology]
bottleneck_rate = "10Gbps"
rtt = "100ms"
"""
    flows = "".join(f'[[flows]]\nname = "f{i:03d}"\ncc = "cubic"\nstreams = {streams}\n' for i in range(groups))
    return head + flows


def _run(path: Path, outdir: Path) -> Tuple[float, int, int]:
    """(wall s, peak RSS bytes, exit status) of `fatpipe run` in a child process."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "fatpipe.cli", "run", str(path), "-o", str(outdir), "--quiet"])
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss * 1024, child.returncode


def main() -> int:
    print("fatpipe bench --many-flows: fatpipe run, 10 Gb/s x 100 ms dumbbell, CUBIC streams, 10 ms samples")
    print(f"{'case':<36} {'flows':>8} {'series rows':>12} {'wall s':>7} {'peak RSS':>9}  status")
    with tempfile.TemporaryDirectory(prefix="fatpipe-bench-many-") as tmp:
        for groups, streams, duration in CASES:
            path = Path(tmp) / f"many-{groups}x{streams}.toml"
            path.write_text(scenario_text(groups, streams, duration), encoding="utf-8")
            wall, peak, status = _run(path, Path(tmp) / path.stem)
            flows = groups * streams
            rows = flows * (int(duration[:-1]) * 100 + 1)
            label = f"{groups} x {streams} streams, {duration}"
            print(f"{label:<36} {flows:>8,} {rows:>12,} {wall:>7.1f} {peak / 2**30:>7.2f} GiB  "
                  f"{'ok' if status == 0 else f'exit {status}'}", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
