"""The rates `fatpipe emulate` sustains on this machine: one cubic flow over a dumbbell of
rate R x 20 ms RTT with a 1-BDP drop-tail queue, for 10 s each, at 100 Mb/s, 500 Mb/s,
1 Gb/s and 2 Gb/s. Prints goodput against the payload capacity, the release lateness and
whether the run kept up, the relay thread's CPU use, the packets per read and per write
on the TUN devices (super-packets with offloads), and the load average when the run ended
(docs/benchmarks.md records it). `--tun-offload both` runs each rate with offloads and
without, alternating which goes first, so a changing load falls on both alike;
`--coalescing both` does the same with the receiving devices' interrupt coalescing (the
flow's `[flows.host]` gro = true with its default rx_usecs and rx_frames, tso = true as the
devices do anyway) against none (no host table: each release written at once). With
coalescing the lateness printed is against the interrupts (what kept_up judges), and the
delay coalescing added is printed beside it.

    sudo python3 scripts/bench_emulator.py [--rates 100Mbps,1Gbps] [--duration 10s] [--rtt 20ms]
                                           [--no-realtime-priority] [--spin-margin US]
                                           [--tun-offload on|off|both] [--coalescing on|off|both] [--rx-usecs 50us]
                                           [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys

from fatpipe.emulate import emulate
from fatpipe.units import parse_duration, parse_rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="100Mbps,500Mbps,1Gbps,2Gbps")
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--rtt", default="20ms")
    parser.add_argument("--no-realtime-priority", action="store_true", help="as fatpipe emulate's option")
    parser.add_argument("--spin-margin", type=float, metavar="US", help="as fatpipe emulate's option")
    parser.add_argument("--tun-offload", choices=("on", "off", "both"), default="on",
                        help="super-packets through the TUN devices (on, the default), not (off), or each rate both ways")
    parser.add_argument("--coalescing", choices=("on", "off", "both"), default="off",
                        help="the receiving devices' interrupt coalescing ([flows.host] gro = true), none, or both ways")
    parser.add_argument("--rx-usecs", help="[flows.host] rx_usecs with --coalescing (default: host.py's)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per rate and path")
    args = parser.parse_args()
    duration_s = parse_duration(args.duration) / 1e12
    ways = {"on": [True], "off": [False], "both": [True, False]}
    paths = [(o, c) for o in ways[args.tun_offload] for c in ways[args.coalescing]]
    print("| bottleneck | TUN offload | coalescing | goodput (Mb/s) | of capacity | lateness median / p99 / max (us) "
          "| kept up | coalescing delay median / max (us) | relay CPU (% of a core) | packets per read / per write "
          "| writes per second | load average (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    turn = 0
    for rate in args.rates.split(","):
        rate_bps = parse_rate(rate)
        for _ in range(args.repeat):
            order = paths if turn % 2 == 0 else paths[::-1]
            turn += 1
            for offload, coalescing in order:
                flow = {"name": "cubic", "cc": "cubic"}
                if coalescing:
                    flow["host"] = {"gro": True, "tso": True}
                    if args.rx_usecs:
                        flow["host"]["rx_usecs"] = args.rx_usecs
                result = emulate({
                    "name": f"bench-{rate}",
                    "duration": args.duration,
                    "topology": {"shape": "dumbbell", "bottleneck_rate": rate, "rtt": args.rtt,
                                 "queue": {"limit_bdp": 1.0}},
                    "flows": [flow],
                    "output": {"plots": False, "sample_interval": "100ms"},
                }, realtime_priority=not args.no_realtime_priority, spin_margin_us=args.spin_margin,
                    tun_offload=offload)
                flow = result.summary["flows"][0]
                e = result.summary["emulation"]
                late = e["interrupt_lateness"]
                delay = e["coalescing_delay"]
                tun = e["relay"]["tun"]
                capacity = rate_bps * 1448 / (1448 + 52 + 38)
                per_read = tun["packets_read"] / max(tun["reads"], 1)
                per_write = tun["packets_written"] / max(tun["writes"], 1)
                print(f"| {rate} | {'on' if tun['offload'] else 'off'} | {'on' if coalescing else 'off'} | "
                      f"{flow['goodput_bps'] / 1e6:.1f} | {100 * flow['goodput_bps'] / capacity:.1f} % | "
                      f"{late['median_ps'] / 1e6:.0f} / {late['p99_ps'] / 1e6:.0f} / {late['max_ps'] / 1e6:.0f} | "
                      f"{'yes' if e['kept_up'] else 'no'} | "
                      f"{delay['median_ps'] / 1e6:.0f} / {delay['max_ps'] / 1e6:.0f} | "
                      f"{100 * e['relay']['cpu_s'] / duration_s:.0f} | "
                      f"{per_read:.1f} / {per_write:.1f} | {tun['writes'] / duration_s:.0f} | "
                      f"{os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
