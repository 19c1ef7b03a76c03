"""``fatpipe bench --python``: what a congestion control written in Python costs
(docs/python-cc.md), and how many steps per second fatpipe.gym's environment takes.

Each case runs one flow over a dumbbell (40 ms, one BDP of drop-tail queue) at 100 Mb/s and
1 Gb/s, three ways, best of three each:
- native: the built-in reno as the Linux stack runs it (byte counting);
- per-ACK Python: the example's Reno (examples/python_cc/reno.py) with the same parameters,
  its hooks called on every ACK (the runs give the same summary: the last column checks it);
- per-report Python: ``ReportReno`` below, Reno's AIMD once per RTT from the core's report
  (a different algorithm, whose ACKs are its own: compare its wall time per ACK).
The per-ACK run's extra wall time over the native run's ACKs is the cost per ACK of calling
Python on every ACK.

The environment's rate: ``fatpipe.gym``'s default environment (a dumbbell drawn per episode,
Aurora's observation and reward) stepped with random actions, on one process, in steps per
simulated-and-learned second of wall time.

``--quick`` (CI) simulates 2 s once per case: the command works; its figures are not
comparable with the full ones.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from .bench_bpf import _best  # best wall time of repeated runs, and the last summary

__all__ = ["ReportReno", "main"]

RATES = (("100 Mb/s", "100Mbps", 20), ("1 Gb/s", "1Gbps", 10))
REPEATS, QUICK_DURATION_S = 3, 2
EXAMPLES = Path(__file__).resolve().parent / "examples" / "python_cc"


class ReportReno:
    """Reno per report (one per smoothed RTT), as CCP would run it: the window doubles each
    report until the first loss (slow start), then grows by one segment per report and
    halves after a report that saw a loss."""

    def __init__(self) -> None:
        self.slow_start = True

    def on_report(self, report: Mapping[str, Any]) -> Dict[str, Any]:
        cwnd = report["cwnd"]
        if report["lost_bytes"]:
            self.slow_start = False
            return {"cwnd": max(cwnd // 2, 2)}
        # Never more than twice what is in flight: a window the receiver limits stops growing.
        grown = cwnd * 2 if self.slow_start else cwnd + 1
        return {"cwnd": min(grown, 2 * report["in_flight_segments"] + 2)}


def scenario(rate: str, cc: Any, duration_s: int) -> Dict[str, Any]:
    return {
        "name": "bench-python",
        "duration": f"{duration_s}s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": rate, "rtt": "40ms",
                     "queue": {"discipline": "droptail", "limit_bdp": 1.0}},
        "flows": [{"name": "f", "cc": cc}],
        "output": {"plots": False, "sample_interval": "1s"},
    }


def env_steps_per_s(steps: int) -> Optional[float]:
    """fatpipe.gym's default environment, random actions, one process (None: no gymnasium)."""
    try:
        import gymnasium

        import fatpipe.gym
    except ImportError:
        return None
    env = gymnasium.make(fatpipe.gym.ENV_ID)
    env.reset(seed=1)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def main(quick: bool = False) -> int:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    repeats = 1 if quick else REPEATS
    print(f"fatpipe bench --python{' --quick' if quick else ''}: one flow, 40 ms, 1 BDP drop-tail; best of {repeats}")
    print(f"{'rate':<9} {'sim s':>5} {'ACKs':>10} {'native s':>9} {'per-ACK s':>10} {'per-report s':>13} "
          f"{'native ns/ACK':>14} {'per-ACK ns/ACK':>15} {'per-report ns/ACK':>18} {'report goodput':>14} {'same summary':>13}")
    print("(per-report: its own ACKs; report goodput: its goodput over native's; same summary: per-ACK vs native)")
    _best(scenario("100Mbps", {"python": "reno:Reno"}, 1), 1)  # imports and first-run costs, untimed
    for label, rate, duration_s in RATES:
        duration_s = QUICK_DURATION_S if quick else duration_s
        wall_native, a = _best(scenario(rate, "reno", duration_s), repeats)
        wall_ack, b = _best(scenario(rate, {"python": "reno:Reno", "byte_counting": True}, duration_s), repeats)
        report = {"python": "fatpipe.bench_python:ReportReno", "mode": "report"}
        wall_report, c = _best(scenario(rate, report, duration_s), repeats)
        acks = a["acks_sent"]
        same = {k: v for k, v in a.items() if k != "algorithm"} == {k: v for k, v in b.items() if k != "algorithm"}
        print(f"{label:<9} {duration_s:>5} {acks:>10,} {wall_native:>9.2f} {wall_ack:>10.2f} {wall_report:>13.2f} "
              f"{1e9 * wall_native / acks:>14.0f} {1e9 * wall_ack / acks:>15.0f} {1e9 * wall_report / c['acks_sent']:>18.0f} "
              f"{c['goodput_bps'] / a['goodput_bps']:>14.2f} {'yes' if same else 'no':>13}", flush=True)
    steps = env_steps_per_s(500 if quick else 5000)
    if steps is None:
        print("fatpipe.gym: gymnasium is not installed (pip install fatpipe[gym]); no environment rate")
    else:
        print(f"fatpipe.gym default environment: {steps:,.0f} steps per second (random actions, one process)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
