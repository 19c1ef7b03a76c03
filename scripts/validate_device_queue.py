"""Issue 27's open point: does the kernel sender enter CWR without a loss because its own
device queue refuses a packet? Runs the BPF CUBIC of docs/validation.md (`--bpf always`,
300 Mb/s x 100 ms, drop-tail of 0.25 BDP, 30 s) RUNS times and prints, per run, the CWR
episodes the sampler saw (tcpi_ca_state, every 50 ms), the reductions without a
retransmission (ssthresh lowered while tcpi_total_retrans stood still), and the sending
host's device counters: its qdisc's drops and requeues (rtnetlink, `tc -s qdisc`), the TUN
device's own tx drops (/proc/net/dev) and the TcpExt counters (TCPLossProbeRecovery is the
other way into CWR without a loss signal of the network's: a tail loss probe's episode).

    sudo python scripts/validate_device_queue.py [--runs 4] [--bpf always|never]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict

from fatpipe.emulate import emulate

CA_CWR = 2  # TCP_CA_CWR, include/net/tcp.h (tcp_ca_state)


def scenario(duration: str, cc: str = "cubic") -> Dict[str, Any]:
    return {
        "name": f"300M-100ms-025bdp-{cc}",
        "duration": duration,
        "seed": 1,
        "topology": {"shape": "dumbbell", "bottleneck_rate": "300Mbps", "rtt": "100ms",
                     "queue": {"limit_bdp": 0.25}},
        "flows": [{"name": cc, "cc": cc, "tcp": {"profile": "linux"}}],
        "output": {"sample_interval": "50ms", "plots": False},
    }


def episodes(fs) -> Dict[str, Any]:
    """CWR episodes (entries into tcpi_ca_state 2) and the times of reductions without a
    retransmission, from the flow series."""
    fs = fs[fs.cwnd_segments >= 0].reset_index(drop=True)
    cwr = [float(fs.time_s[i]) for i in range(1, len(fs))
           if fs.ca_state[i] == CA_CWR and fs.ca_state[i - 1] != CA_CWR]
    silent = [float(fs.time_s[i]) for i in range(1, len(fs))
              if 0 <= fs.ssthresh_segments[i] < fs.ssthresh_segments[i - 1]
              and fs.retransmitted_segments[i] == fs.retransmitted_segments[i - 1]]
    return {"cwr_entries_at_s": [round(t, 2) for t in cwr], "reductions_without_retransmission_at_s":
            [round(t, 2) for t in silent]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--bpf", default="always")
    args = ap.parse_args()
    for i in range(args.runs):
        load = os.getloadavg()[0]
        r = emulate(scenario(args.duration), bpf=args.bpf)
        e = r.summary["emulation"]
        f = r.summary["flows"][0]
        out = {"run": i + 1, "load": round((load + os.getloadavg()[0]) / 2, 1),
               "goodput_mbps": round(f["goodput_bps"] / 1e6, 2), "retransmitted": f["segments_retransmitted"],
               "kept_up": e["kept_up"], "p99_us": (e["release_lateness"]["p99_ps"] or 0) / 1e6,
               "max_ms": (e["release_lateness"]["max_ps"] or 0) / 1e9}
        out.update(episodes(r.flow_series))
        for h in e["hosts"]:
            ext = h.get("tcp_ext") or {}
            out[h["name"]] = {"qdisc": h.get("qdisc"), "tun_tx_dropped": h.get("tun_tx_dropped"),
                              "tcp_ext": {k: v for k, v in ext.items() if k.startswith("TCP")}}
        print(out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
