"""``fatpipe bench --bpf``: what a BPF congestion control costs per ACK in the simulator,
interpreted by the core's eBPF interpreter and compiled by its JIT (``jit = true``), against
the built-in algorithm it implements.

Each case runs one flow over 1 Gb/s x 40 ms (a drop-tail queue of one BDP) for 60 simulated
seconds, natively and through fatpipe's BPF program for the same algorithm with the same
parameters, interpreted and JIT-compiled (the runs give the same summary:
tests/test_bpf_cc.py; the last column checks it), best of three each. The difference in wall
time over the ACKs the sender processed is the per-ACK cost of running the program: writing
the socket view, running the hooks (pkts_acked, cong_avoid, in_ack_event), and the kfuncs.
Where the JIT does not exist (not x86-64 Linux) its columns say so.

``--quick`` (CI) simulates 2 s once per case: it shows the command works and the summaries
agree; its figures are not comparable with the full ones.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

__all__ = ["CASES", "main"]

#: (label, the built-in algorithm as a scenario writes it)
CASES: List[Tuple[str, Any]] = [
    ("reno", "sack"),
    ("cubic", "cubic"),
    ("vegas (tcp_vegas.c)", {"algorithm": "vegas", "variant": "linux"}),
    ("htcp", "htcp"),
]
REPEATS = 3


DURATION_S, QUICK_DURATION_S = 60, 2


def scenario(cc: Any, duration_s: int = DURATION_S) -> Dict[str, Any]:
    return {
        "name": "bench-bpf",
        "duration": f"{duration_s}s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "1Gbps", "rtt": "40ms",
                     "queue": {"discipline": "droptail", "limit_bdp": 1.0}},
        "flows": [{"name": "f", "cc": cc}],
        "output": {"plots": False, "sample_interval": "1s"},
    }


def _best(s: Dict[str, Any], repeats: int) -> Tuple[float, Dict[str, Any]]:
    import fatpipe

    best, summary = float("inf"), {}
    for _ in range(repeats):
        start = time.perf_counter()
        r = fatpipe.run(s)
        best = min(best, time.perf_counter() - start)
        summary = r.summary["flows"][0]
    return best, summary


def _comparable(summary: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in summary.items() if k != "algorithm"}


def main(quick: bool = False) -> int:
    import platform

    import fatpipe._core as core
    from fatpipe.scenario import load

    # The JIT is x86-64 Linux only (crates/fatpipe-bpf/src/jit); elsewhere a flow asking for
    # it is refused, so the columns are left empty rather than the run failing.
    has_jit = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")

    duration_s, repeats = (QUICK_DURATION_S, 1) if quick else (DURATION_S, REPEATS)
    print(f"fatpipe bench --bpf{' --quick' if quick else ''}: one flow, 1 Gb/s x 40 ms, 1 BDP drop-tail, "
          f"{duration_s} s simulated; best of {repeats}; BPF interpreted and JIT-compiled")
    print(f"{'algorithm':<22} {'ACKs':>10} {'native s':>9} {'interp s':>9} {'JIT s':>7} {'native ns/ACK':>14} "
          f"{'interp extra ns/ACK':>20} {'JIT extra ns/ACK':>17} {'same summary':>13}")
    with tempfile.TemporaryDirectory(prefix="fatpipe-bench-bpf-") as tmp:
        for label, cc in CASES:
            native = scenario(cc, duration_s)
            normalized = load(native).core["flows"][0]["cc"]
            hz = normalized.get("kernel_hz", 250)
            try:
                _, obj = core.bpf_program_object(normalized, hz)
            except ValueError as e:
                print(f"fatpipe bench --bpf: {label}: {e}", file=sys.stderr)
                return 1
            path = Path(tmp) / f"{len(label)}.o"
            path.write_bytes(obj)
            wall_native, a = _best(native, repeats)
            bpf = {"bpf": str(path), "kernel_hz": hz}
            wall_bpf, b = _best(scenario(bpf, duration_s), repeats)
            acks = a["acks_sent"]
            summaries = [b]
            if has_jit:
                wall_jit, c = _best(scenario({**bpf, "jit": True}, duration_s), repeats)
                summaries.append(c)
                jit_s, jit_extra = f"{wall_jit:.2f}", f"{1e9 * (wall_jit - wall_native) / acks:.0f}"
            else:
                jit_s, jit_extra = "-", "no JIT here"
            same = all(_comparable(a) == _comparable(x) for x in summaries)
            print(f"{label:<22} {acks:>10,} {wall_native:>9.2f} {wall_bpf:>9.2f} {jit_s:>7} {1e9 * wall_native / acks:>14.0f} "
                  f"{1e9 * (wall_bpf - wall_native) / acks:>20.0f} {jit_extra:>17} {'yes' if same else 'no':>13}", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
