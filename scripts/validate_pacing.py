"""What pacing does, the kernel beside fatpipe (issue 26, acceptance 3): the scenario of
examples/host-fq-10G-into-1G-100ms.toml at rates the emulator sustains (SCALED), a 1 Gb/s
host into a 100 Mb/s x 100 ms bottleneck with a buffer of 0.05 BDP, cubic without pacing, with fq
(pacing) and with fq maxrate just under the bottleneck. Each configuration is simulated once
and emulated RUNS times (`fatpipe emulate` maps fq and its maxrate to the socket's own pacing,
docs/emulation.md); prints the table docs/validation.md holds.

    sudo python scripts/validate_pacing.py [--runs 3] [--duration 20s]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any, Dict, List

import fatpipe
from fatpipe.emulate import emulate

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "host-fq-10G-into-1G-100ms.toml"
#: The example's path ten times slower, the hosts' NICs ten times the bottleneck as there.
SCALED = {"access_rate": "1Gbps", "bottleneck_rate": "100Mbps"}
MAXRATE = "95Mbps"
#: (label, the host table's changes)
CONFIGS = [
    ("no pacing", {}),
    ("fq (pacing)", {"fq": True}),
    (f"fq maxrate {MAXRATE}", {"fq": True, "fq_maxrate": MAXRATE}),
]


def scenario(changes: Dict[str, Any], duration: str) -> Dict[str, Any]:
    """The example at SCALED rates, its host table with `changes`."""
    with open(EXAMPLE, "rb") as f:
        s = tomllib.load(f)
    s["name"] = "host-fq-1G-into-100M-100ms"
    s["duration"] = duration
    s["topology"].update(SCALED)
    s["output"] = {"plots": False, "sample_interval": "100ms"}
    s["flows"][0]["host"].update(changes)
    return s


def facts(summary: Dict[str, Any]) -> Dict[str, Any]:
    f = summary["flows"][0]
    e = summary.get("emulation")
    out = {"goodput": f["goodput_bps"] / 1e6, "retx": f["segments_retransmitted"]}
    if e:
        # Every host's device: the data sender's, and the receiver's (its ACKs).
        q = {k: sum((h.get("qdisc") or {}).get(k, 0) for h in e["hosts"]) for k in ("drops", "requeues")}
        out.update(kept_up=e["kept_up"], p99_us=(e["release_lateness"]["p99_ps"] or 0) / 1e6,
                   max_ms=(e["release_lateness"]["max_ps"] or 0) / 1e9,
                   qdisc_drops=q.get("drops", 0), requeues=q.get("requeues", 0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", default="20s")
    args = ap.parse_args()
    rows: List[str] = []
    for label, changes in CONFIGS:
        s = scenario(changes, args.duration)
        sim = facts(fatpipe.run(s).summary)
        kernel = []
        for i in range(args.runs):
            before = os.getloadavg()[0]
            k = facts(emulate(s).summary)
            k["load"] = (before + os.getloadavg()[0]) / 2
            kernel.append(k)
            print(f"{label} run {i + 1}: {k}", file=sys.stderr)
        g = [k["goodput"] for k in kernel]
        r = [k["retx"] for k in kernel]
        rows.append(
            f"| {label} | {sim['goodput']:.2f} | {statistics.median(g):.2f} ({min(g):.2f}-{max(g):.2f}) | "
            f"{sim['retx']} | {statistics.median(r):.0f} ({min(r)}-{max(r)}) | "
            + ", ".join("yes" if k["kept_up"] else "no" for k in kernel) + " | "
            + ", ".join(f"{k['p99_us']:.0f} / {k['max_ms']:.1f}" for k in kernel) + " | "
            + ", ".join(f"{k['load']:.1f}" for k in kernel) + " | "
            + ", ".join(f"{k['qdisc_drops']}/{k['requeues']}" for k in kernel) + " |"
        )
    print("| configuration | simulated goodput (Mb/s) | kernel (Mb/s), median (range) | simulated retransmitted "
          "| kernel retransmitted | kept up | lateness p99 (us) / max (ms) | load average "
          "| device queue drops / requeues |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
