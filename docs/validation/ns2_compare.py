#!/usr/bin/env python3
"""fatpipe's ns2 profile beside ns-2 itself, on document 003's paths.

Document 003 ran its experiments in ns-2; fatpipe reproduces them with `profile = "ns2"`
(python/fatpipe/scenario/profiles.py), whose members are read off ns-2.35's
tcl/lib/ns-default.tcl and tcp/*.cc. This script runs the same path in both for each agent
and rate and prints, per run: data packets acknowledged, packets retransmitted, timeouts,
and cwnd / ssthresh at a few instants; with `--plots DIR` it also draws each pair's cwnd.

The single-flow path (python/fatpipe/reproductions/tcp-versions/bases/single.toml, and
ns2/doc003_single.tcl for ns-2): one FTP source, a bottleneck of the given rate with
12.5 ms each way and a 200-packet DropTail queue, access links at 10 Gb/s, 1000-byte
packets (1040 on the wire), a window that never limits. With `--pairs A:B,...` the
two-flow dumbbell of document 003's fairness experiments instead (bases/pair.toml,
ns2/doc003_pair.tcl): two sources 10 ms from the bottleneck, access links at 10x its rate,
DropTail or RED (`--queues`), and per flow the packets acknowledged, the first flow's share,
retransmissions and timeouts.

ns-2: pass the `ns` binary of ns-2.35 (`--ns2`). Debian ships its source (`apt-get source
ns2`, or the orig tarball); document 003's Westwood is not part of ns-2.35 but UCLA's
contributed module (tcp-westwood.cc, tcp-westwood-nr.cc), built in when `--westwood` is
given. How it was built here is in ns2/README.md. Nothing is downloaded.

usage:
  python3 docs/validation/ns2_compare.py --ns2 /path/to/ns [--duration 30] \
      [--rates 100Mb,1Gb] [--agents tahoe,reno,newreno,sack,vegas] [--plots DIR]
  python3 docs/validation/ns2_compare.py --ns2 /path/to/ns --pairs reno:sack,newreno:vegas \
      [--queues droptail,red] [--rates 10Mb,100Mb]
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Dict, List

import fatpipe

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BASES = ROOT / "python/fatpipe/reproductions/tcp-versions/bases"
TCL = HERE / "ns2/doc003_single.tcl"
PAIR_TCL = HERE / "ns2/doc003_pair.tcl"

#: fatpipe algorithm (with the recovery its preset gives) -> ns-2 agent (Agent/TCP/<name>).
AGENTS: Dict[str, str] = {
    "tahoe": "Tahoe",  # Agent/TCP (ns2/flow.tcl)
    "reno": "Reno",
    "newreno": "Newreno",
    "sack": "Sack1",
    "vegas": "Vegas",
    "westwood": "WestwoodNR",  # UCLA's module, NewReno-based
}
#: ns-2 link rates as fatpipe writes them, and the access rate of the pair path (10x).
RATES = {"10Mb": "10Mbps", "100Mb": "100Mbps", "250Mb": "250Mbps", "500Mb": "500Mbps", "1Gb": "1Gbps"}
ACCESS = {"10Mb": "100Mb", "100Mb": "1Gb", "250Mb": "2500Mb", "500Mb": "5Gb", "1Gb": "10Gb"}
#: fatpipe's queue disciplines -> ns-2's.
QUEUES = {"droptail": "DropTail", "red": "RED"}
#: Instants at which cwnd and ssthresh are shown, seconds.
INSTANTS = (0.5, 1.0, 2.0, 5.0, 10.0)


def run_ns2(ns2: Path, agent: str, rate: str, duration_s: float, work: Path) -> List[List[float]]:
    samples = work / f"ns2-{agent}-{rate}.txt"
    proc = subprocess.run([str(ns2), str(TCL), agent, rate, str(duration_s), str(samples)],
                          capture_output=True, text=True, cwd=work)
    if proc.returncode != 0:
        sys.exit(f"ns-2 failed for {agent} at {rate}: {proc.stderr.strip().splitlines()[-1:]}")
    return [[float(x) for x in line.split()] for line in samples.read_text().splitlines() if line.strip()]


def run_fatpipe(ccs: List[str], rate: str, duration_s: float, queue: str = "droptail"):
    base = "single.toml" if len(ccs) == 1 else "pair.toml"
    scenario = copy.deepcopy(tomllib.loads((BASES / base).read_text()))
    scenario["duration"] = f"{duration_s}s"
    scenario["topology"]["bottleneck_rate"] = RATES[rate]
    scenario["topology"]["queue"]["discipline"] = queue
    for flow, cc in zip(scenario["flows"], ccs):
        flow["cc"] = cc
    scenario["output"]["sample_interval"] = "10ms"
    return fatpipe.run(scenario)


def compare_pairs(ns2: Path, pairs: List[List[str]], rates: List[str], queues: List[str], duration_s: float) -> None:
    print(f"{'pair':16s} {'rate':6s} {'queue':8s} | {'first flow (ns-2 / fatpipe)':>27s} | "
          f"{'second flow':>21s} | {'first share':>13s} | {'retransmitted':>23s} | timeouts")
    with tempfile.TemporaryDirectory() as tmp:
        for rate in rates:
            for queue in queues:
                for a, b in pairs:
                    samples = Path(tmp) / "pair.txt"
                    agents = [AGENTS[a], AGENTS[b]]
                    proc = subprocess.run([str(ns2), str(PAIR_TCL), *agents, rate, ACCESS[rate], QUEUES[queue],
                                           str(duration_s), str(samples)], capture_output=True, text=True, cwd=tmp)
                    if proc.returncode != 0:
                        sys.exit(f"ns-2 failed for {a}:{b} at {rate}: {proc.stderr.strip().splitlines()[-1:]}")
                    last = [float(x) for x in samples.read_text().splitlines()[-1].split()]
                    ns = [(int(last[2 + 4 * i]) + 1, int(last[3 + 4 * i]), int(last[4 + 4 * i])) for i in range(2)]
                    flows = run_fatpipe([a, b], rate, duration_s, queue).summary["flows"]
                    fp = [(f["bytes_delivered"] // 1000, f["segments_retransmitted"], f["timeouts"]) for f in flows]
                    share = [x[0][0] / (x[0][0] + x[1][0]) for x in (ns, fp)]
                    print(f"{a + ':' + b:16s} {rate:6s} {queue:8s} | {ns[0][0]:>12,d} / {fp[0][0]:>12,d} | "
                          f"{ns[1][0]:>9,d} / {fp[1][0]:>9,d} | {share[0]:5.3f} / {share[1]:5.3f} | "
                          f"{ns[0][1]:>5d}+{ns[1][1]:<5d} / {fp[0][1]:>5d}+{fp[1][1]:<5d} | "
                          f"{ns[0][2]}+{ns[1][2]} / {fp[0][2]}+{fp[1][2]}")


def at(rows: List[List[float]], t: float) -> List[float]:
    return min(rows, key=lambda r: abs(r[0] - t))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns2", type=Path, required=True, help="the ns-2.35 `ns` binary")
    ap.add_argument("--duration", type=float, default=30.0, help="simulated seconds (default 30)")
    ap.add_argument("--rates", default="100Mb,1Gb", help=f"ns-2 rates, of {', '.join(RATES)}")
    ap.add_argument("--agents", default="tahoe,reno,newreno,sack,vegas", help=f"of {', '.join(AGENTS)}")
    ap.add_argument("--plots", type=Path, help="draw each pair's cwnd here (PNG)")
    ap.add_argument("--pairs", help="two-flow runs instead, e.g. reno:sack,newreno:vegas")
    ap.add_argument("--queues", default="droptail,red", help="with --pairs: of droptail, red")
    args = ap.parse_args()
    rates = args.rates.split(",")
    agents = args.agents.split(",")
    pairs = [p.split(":") for p in args.pairs.split(",")] if args.pairs else []
    queues = args.queues.split(",")
    for given, known, what in ((rates, RATES, "rates"), (agents, AGENTS, "agents"), (queues, QUEUES, "queues"),
                               ([a for p in pairs for a in p], AGENTS, "pairs")):
        bad = [x for x in given if x not in known]
        if bad:
            sys.exit(f"--{what}: {bad[0]!r} is not allowed: one of {', '.join(known)}")
    if any(len(p) != 2 for p in pairs):
        sys.exit("--pairs: each pair is two agents joined by ':', e.g. reno:sack")
    if pairs:
        return compare_pairs(args.ns2, pairs, rates, queues, args.duration)
    print(f"{'agent':9s} {'rate':6s} | {'delivered (ns-2 / fatpipe)':>28s} {'diff':>7s} | "
          f"{'retransmitted':>13s} | {'timeouts':>8s} | cwnd/ssthresh at " + ", ".join(f"{t:g}" for t in INSTANTS) + " s")
    with tempfile.TemporaryDirectory() as tmp:
        for rate in rates:
            for cc in agents:
                rows = run_ns2(args.ns2, AGENTS[cc], rate, args.duration, Path(tmp))
                result = run_fatpipe([cc], rate, args.duration)
                flow = result.summary["flows"][0]
                series = result.flow_series
                ns_delivered = int(rows[-1][3]) + 1
                fp_delivered = flow["bytes_delivered"] // 1000
                diff = (fp_delivered - ns_delivered) / ns_delivered
                shown = []
                for t in INSTANTS:
                    r = at(rows, t)
                    row = series.iloc[(series["time_s"] - t).abs().argmin()]
                    shown.append(f"{r[1]:.0f}/{r[2]:.0f} {row['cwnd_segments']:.0f}/{row['ssthresh_segments']:.0f}")
                print(f"{cc:9s} {rate:6s} | {ns_delivered:>13,d} / {fp_delivered:>12,d} {diff:+7.1%} | "
                      f"{int(rows[-1][4]):>5d} / {flow['segments_retransmitted']:<5d} | "
                      f"{int(rows[-1][5]):>3d} / {flow['timeouts']:<3d} | " + "; ".join(shown))
                if args.plots:
                    plot(args.plots, cc, rate, rows, series)


def plot(directory: Path, cc: str, rate: str, rows: List[List[float]], series) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot([r[0] for r in rows], [r[1] for r in rows], label="ns-2.35", lw=1.2)
    ax.plot(series["time_s"], series["cwnd_segments"], label="fatpipe (ns2 profile)", lw=1.0, ls="--")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (packets)")
    ax.set_title(f"{cc}, {rate}, document 003's single-flow path")
    ax.legend()
    fig.tight_layout()
    fig.savefig(directory / f"ns2-{cc}-{rate}-cwnd.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
