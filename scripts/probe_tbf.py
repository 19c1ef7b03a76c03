"""Measures `fatpipe probe` through a tbf-limited veth path (root): two network namespaces
joined by a veth pair with tbf on each end (tests/probe_helpers.py makes them, and they die
with this process), a daemon in one, `fatpipe probe run` in the other; prints each run's
goodput against the path's payload capacity.

    python3 scripts/probe_tbf.py [--rate-mbit 50] [--runs 3] [--duration 3s] [--cc cubic,reno,bbr]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from probe_helpers import NS_ADDRESSES, VethPair, daemon, run_cli  # noqa: E402

#: tbf counts the Ethernet header (14 bytes) with each IP packet; TCP with timestamps
#: carries 1448 payload bytes in 1500.
ETHERNET_HEADER = 14


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate-mbit", type=int, default=50)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", default="3s")
    p.add_argument("--cc", default="cubic,reno,bbr")
    args = p.parse_args()
    capacity = args.rate_mbit * 1e6 * 1448 / (1500 + ETHERNET_HEADER)
    pair = VethPair(f"{args.rate_mbit}mbit", "64kb", "20ms")
    try:
        with daemon(netns=pair.pids[1], bind=f"{NS_ADDRESSES[1]}:0") as d, tempfile.TemporaryDirectory() as tmp:
            print(f"tbf {args.rate_mbit} Mbit/s: payload capacity {capacity / 1e6:.2f} Mb/s")
            for cc in args.cc.split(","):
                for run in range(args.runs):
                    toml = Path(tmp) / f"{cc}.toml"
                    toml.write_text(f'name = "{cc}"\nduration = "{args.duration}"\n[[flows]]\nname = "f"\ncc = "{cc}"\n'
                                    '[output]\nsample_interval = "100ms"\nplots = false\n')
                    out = Path(tmp) / f"{cc}-{run}"
                    proc = run_cli("probe", "run", d.address, toml, "-o", out, "--quiet", netns=pair.pids[0])
                    if proc.returncode != 0:
                        print(proc.stderr, file=sys.stderr)
                        return 1
                    flow = json.loads((out / "summary.json").read_text())["flows"][0]
                    print(f"{cc:6} run {run + 1}: goodput {flow['goodput_bps'] / 1e6:6.2f} Mb/s = "
                          f"{100 * flow['goodput_bps'] / capacity:6.2f} % of capacity, "
                          f"{flow['segments_retransmitted']} retransmitted, srtt {flow['srtt_ps'] / 1e9:.1f} ms")
    finally:
        pair.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
