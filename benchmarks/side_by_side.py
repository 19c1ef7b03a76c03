#!/usr/bin/env python3
"""fatpipe beside htsim and ns-3 on the same scenario, in one go: one TCP flow with a window
of one bandwidth-delay product (no loss) over the default dumbbell (sender -- access at 10x
the bottleneck rate -- bottleneck, 50 ms each way -- access -- receiver), 1500-byte packets,
at each rate. Each simulator runs its own program, warms up through slow start untimed,
and then times a stretch of simulated time; the table gives data packets (ACKs not
counted), events per data packet, wall seconds and data packets per wall-second, and
fatpipe's speed as a multiple of each other's. Runs alternate between the simulators
(the machine may be shared) and the median of `--repeat` runs is shown.

What runs:
- fatpipe: the core alone (`cargo run --release --example run_scenario`, no Python), on
  the scenario `fatpipe bench` uses (Linux profile: CUBIC, SACK, RACK, delayed ACKs);
- htsim: `htsim/fatpipe_dumbbell.cpp` built against Broadcom csg-htsim's `sim/`
  (`--htsim DIR`: a checkout's `sim` directory; `make libhtsim.a` is run there if needed).
  htsim's TCP is NewReno without SACK or delayed ACKs (an ACK per packet). `--htsim-link`
  adds htsim's cheapest path, a single queue and pipe (the issue's htsim figure);
- ns-3: `ns3/fatpipe_dumbbell.cc` built against the libraries and headers the `ns3` wheel
  from PyPI ships (`--ns3 DIR`: the wheel's `ns3` directory, holding `include/` and
  `lib64/`; e.g. `pip install ns3` then `python3 -c 'import ns, os; ...'`, or the wheel
  unzipped). ns-3 with SACK, timestamps, delayed ACKs and TcpCubic. ns-3 is slow: it
  simulates `--ns3-share` of fatpipe's stretch.

usage:
  python3 benchmarks/side_by_side.py --htsim ~/csg-htsim/sim --ns3 /tmp/ns3wheel/ns3 [--repeat 3]

Either simulator may be left out; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RATES = {"100Mbps": 10**8, "1Gbps": 10**9, "10Gbps": 10**10}
NS3_LIBS = ["core", "network", "internet", "point-to-point", "applications", "traffic-control"]


def run(cmd: List[str], cwd: Optional[Path] = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"side_by_side: {' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def parse(line: str) -> Dict[str, float]:
    words = line.split()
    return {words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}


def build_fatpipe() -> Path:
    run(["cargo", "build", "--release", "-q", "-p", "fatpipe-core", "--example", "run_scenario"], cwd=ROOT)
    return ROOT / "target" / "release" / "examples" / "run_scenario"


def build_htsim(sim_dir: Path, out: Path) -> Path:
    if not (sim_dir / "libhtsim.a").is_file():
        run(["make", "libhtsim.a"], cwd=sim_dir)
    exe = out / "htsim_dumbbell"
    src = HERE / "htsim" / "fatpipe_dumbbell.cpp"
    run(["g++", "-O3", "-std=c++11", "-I", str(sim_dir), str(src), str(sim_dir / "libhtsim.a"), "-o", str(exe)])
    return exe


def build_ns3(prefix: Path, out: Path) -> Path:
    exe = out / "ns3_dumbbell"
    lib = prefix / "lib64"
    version = next(p.name.split("-")[0][len("libns") :] for p in lib.glob("libns*-core.so"))
    libs = [f"-lns{version}-{name}" for name in NS3_LIBS]
    src = HERE / "ns3" / "fatpipe_dumbbell.cc"
    run(["g++", "-O2", "-std=c++20", "-I", str(prefix / "include"), str(src), "-o", str(exe), "-L", str(lib), f"-Wl,-rpath,{lib}"] + libs)
    return exe


def fatpipe_scenario(rate_bps: int, measure_s: float, out: Path) -> tuple[Path, float]:
    from fatpipe.bench_cases import bench_scenario, warmup_ps
    from fatpipe.scenario import load

    warm = warmup_ps(rate_bps)
    doc = bench_scenario(rate_bps, warm + int(measure_s * 1e12))
    path = out / f"fatpipe-{rate_bps}.json"
    path.write_text(json.dumps(load(doc).core), encoding="utf-8")
    return path, warm / 1e12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--htsim", type=Path, help="csg-htsim's sim/ directory")
    ap.add_argument("--htsim-link", action="store_true", help="also htsim's single queue-and-pipe path")
    ap.add_argument("--ns3", type=Path, help="the ns3 wheel's ns3/ directory (include/, lib64/)")
    ap.add_argument("--rates", default="100Mbps,1Gbps,10Gbps")
    ap.add_argument("--segments", type=float, default=2e6, help="data segments in the timed stretch")
    ap.add_argument("--ns3-share", type=float, default=0.05, help="ns-3 times this share of the stretch")
    ap.add_argument("--ns3-rates", default="100Mbps,1Gbps", help="rates ns-3 runs (its per-ACK work grows with the window)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for name in args.rates.split(","):
        if name not in RATES:
            sys.exit(f"side_by_side: --rates: {name!r} is not one of {', '.join(RATES)}")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        sims: Dict[str, List[str]] = {"fatpipe": [str(build_fatpipe())]}
        if args.htsim:
            exe = build_htsim(args.htsim, out)
            sims["htsim"] = [str(exe)]
            if args.htsim_link:
                sims["htsim (1 link)"] = [str(exe)]
        if args.ns3:
            sims["ns-3"] = [str(build_ns3(args.ns3, out))]
        rows = []
        for name in args.rates.split(","):
            rate = RATES[name]
            measure_s = args.segments * (1500 + 38) * 8 / rate
            scenario, warm_s = fatpipe_scenario(rate, measure_s, out)
            here = {s: c for s, c in sims.items() if s != "ns-3" or name in args.ns3_rates.split(",")}
            results: Dict[str, List[Dict[str, float]]] = {s: [] for s in here}
            for i in range(args.repeat):
                for sim, cmd in here.items():
                    if sim == "ns-3" and i > 0:
                        continue  # minutes per run: once is enough
                    if sim == "fatpipe":
                        line = run(cmd + [str(scenario), f"{warm_s}"])
                        r = parse(line)
                        r["data_packets"] = r.pop("data_segments")
                    else:
                        share = args.ns3_share if sim == "ns-3" else 1.0
                        extra = ["link"] if sim == "htsim (1 link)" else (["dumbbell"] if sim == "htsim" else ["TcpCubic"])
                        line = run(cmd + [str(rate // 10**6), "100", f"{warm_s}", f"{measure_s * share}"] + extra)
                        r = parse(line)
                    results[sim].append(r)
            speed = {}
            for sim, runs in results.items():
                pps = statistics.median(r["data_packets"] / r["wall_s"] for r in runs)
                speed[sim] = pps
                first = runs[0]
                rows.append((name, sim, first["data_packets"], first["events"] / first["data_packets"], statistics.median(r["wall_s"] for r in runs), pps))
            for sim in here:
                if sim != "fatpipe":
                    rows.append((name, f"fatpipe / {sim}", math.nan, math.nan, math.nan, speed["fatpipe"] / speed[sim]))
    print(f"{'rate':8s} {'simulator':22s} {'data packets':>13s} {'events/pkt':>10s} {'wall s':>8s} {'data pkts/s (or ratio)':>22s}")
    for name, sim, pkts, epp, wall, pps in rows:
        if math.isnan(pkts):
            print(f"{name:8s} {sim:22s} {'':>13s} {'':>10s} {'':>8s} {pps:>21.2f}x")
        else:
            print(f"{name:8s} {sim:22s} {pkts:>13,.0f} {epp:>10.2f} {wall:>8.2f} {pps:>22,.0f}")


if __name__ == "__main__":
    main()
