"""Per-segment cost of the two loss-recovery stacks, `linux` and `rfc` (issue 12): one SACK
flow (Reno growth) at 100 Mb/s, 1 Gb/s and 10 Gb/s x 100 ms, a one-BDP drop-tail queue,
delayed ACKs, 1500-byte packets. Two cases: window-limited (the receive window is one BDP:
no loss, the per-ACK work of each stack's scoreboard alone), and loss-limited (the window is
4 BDP: the queue overflows every cycle, so recovery -- RACK, PRR, the retransmission queue
-- runs too). Each run is warmed up past slow start, then about 1 million data segments are
timed in CPU time (the process's, steadier than wall time on a shared machine); runs
alternate between the stacks and each figure is the median of REPEATS.

    python3 scripts/bench_profiles.py [REPEATS]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time

import numpy as np

from fatpipe.runner import import_core
from fatpipe.scenario import load

PROFILES = ("rfc", "linux")
RATES_BPS = (100 * 10**6, 10**9, 10 * 10**9)
RTT_PS = 100 * 10**9
PS_PER_S = 10**12
WIRE_BYTES_PER_SEGMENT = 1500 + 38  # MTU + Ethernet framing
SEGMENTS = 1_000_000
MSS_BYTES = 1448  # 1500 - 40 (IPv4 + TCP) - 12 (timestamps)


def scenario(profile: str, rate_bps: int, window_bdps: int, duration_ps: int) -> str:
    bdp_bytes = rate_bps * RTT_PS // (8 * PS_PER_S)
    user = {
        "duration": f"{duration_ps}ps",
        "topology": {
            "bottleneck_rate": rate_bps,
            "rtt": f"{RTT_PS}ps",
            "access_rate": 10 * rate_bps,
            "queue": {"limit_bdp": 1.0},
        },
        "flows": [{
            "name": "sack",
            "cc": "sack",
            "tcp": {"profile": profile, "rcv_buffer": window_bdps * bdp_bytes,
                    "snd_buffer": 2 * window_bdps * bdp_bytes},
        }],
        "output": {"sample_interval": f"{RTT_PS}ps", "plots": False},
    }
    return json.dumps(load(user).core)


def time_run(core, profile: str, rate_bps: int, window_bdps: int) -> tuple[float, int]:
    """CPU ns per data segment after the warm-up, and segments retransmitted in the whole run."""
    window_segments = window_bdps * rate_bps * RTT_PS / (8 * PS_PER_S * MSS_BYTES)
    # Slow start with delayed ACKs grows 1.5x per RTT; then ten RTTs to settle.
    warm_ps = (math.ceil(math.log(window_segments, 1.5)) + 10) * RTT_PS
    segments_per_s = rate_bps / (8 * WIRE_BYTES_PER_SEGMENT)
    end_ps = warm_ps + math.ceil(SEGMENTS / segments_per_s * 10) * PS_PER_S // 10
    sim = core.Simulation(scenario(profile, rate_bps, window_bdps, end_ps))
    sim.run_until(warm_ps)
    sent_before = _sent_bytes(sim)
    start = time.process_time()
    sim.run_until(end_ps)
    cpu_s = time.process_time() - start
    segments = (_sent_bytes(sim) - sent_before) // MSS_BYTES
    flow = sim.finish()["summary"]["flows"][0]
    return cpu_s / segments * 1e9, int(flow["segments_retransmitted"])


def _sent_bytes(sim) -> int:
    return int(np.asarray(sim.flow_counters()["sent_bytes"])[0])


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    core = import_core()
    print("| case | rate | rfc ns/segment | linux ns/segment | linux / rfc | retransmitted (rfc / linux) |")
    print("|---|---|---|---|---|---|")
    for case, window_bdps in (("window-limited", 1), ("loss-limited", 4)):
        for rate_bps in RATES_BPS:
            ns = {p: [] for p in PROFILES}
            retransmitted = {}
            for _ in range(repeats):
                for p in PROFILES:
                    ns_per_segment, retransmitted[p] = time_run(core, p, rate_bps, window_bdps)
                    ns[p].append(ns_per_segment)
            med = {p: statistics.median(v) for p, v in ns.items()}
            print(f"| {case} | {rate_bps / 1e9:g} Gb/s | {med['rfc']:.0f} | {med['linux']:.0f} | "
                  f"{med['linux'] / med['rfc']:.2f} | {retransmitted['rfc']} / {retransmitted['linux']} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
