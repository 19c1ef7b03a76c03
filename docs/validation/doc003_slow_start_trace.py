"""Document 003's losses, packet by packet: which segments the 200-packet queue drops and
when, against the senders' cwnd (the evidence behind docs/reproductions.md's explanation of
the slow-start loss rate and of HighSpeed against Reno).

    python docs/validation/doc003_slow_start_trace.py [cc ...]
    python docs/validation/doc003_slow_start_trace.py --pair highspeed reno RATE ...

Runs tcp-versions' single-flow base (profile ns2, 1 Gb/s, 25 ms, 200 packets) for 3 s per
version with captures at the sender and after the bottleneck; a segment the sender sent
that the bottleneck never carried was dropped at its queue. Prints, per round trip of slow
start, the segments sent, the segments dropped and cwnd.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import fatpipe
from fatpipe.pcap import read_pcap
from fatpipe.scenario import read_scenario_file
from fatpipe.units import parse_rate as rate_bps

BASE = Path(fatpipe.__file__).parent / "reproductions" / "tcp-versions" / "bases" / "single.toml"
RTT_S = 0.025


def _dropped(sent, carried):
    """The first transmissions the bottleneck never carried within the longest queueing
    delay (200 packets of 1040 bytes at 10 Mb/s: 166 ms) after they were sent; a later
    copy of a segment is its retransmission."""
    first = sent[sent["payload_bytes"] > 0].drop_duplicates("seq", keep="first").sort_values("time_s")
    out = carried[carried["payload_bytes"] > 0][["seq", "time_s"]].rename(columns={"time_s": "out_s"})
    matched = pd.merge_asof(first, out.sort_values("out_s"), left_on="time_s", right_on="out_s", by="seq",
                            direction="forward", tolerance=0.2)
    return first, matched[matched["out_s"].isna()]


def pair(first_cc: str, second_cc: str, rate: str, seconds: float = 60.0) -> None:
    """Two flows on tcp-versions' dumbbell: per 5 s, each flow's dropped first
    transmissions, loss events (a drop more than an RTT after the flow's previous one) and
    goodput."""
    doc = read_scenario_file(BASE.with_name("pair.toml"))
    doc["duration"] = f"{seconds}s"
    doc["topology"]["bottleneck_rate"] = rate
    doc["flows"][0]["cc"], doc["flows"][1]["cc"] = first_cc, second_cc
    # The captures' budget is estimated at the 10x faster access links' full rate; the files
    # hold what the bottleneck carries, 128 bytes a packet (about 1 GB at 1 Gb/s for 20 s).
    doc["output"] = {"plots": False, "sample_interval": "100ms", "capture": ["sender0", "sender1", "bottleneck"],
                     "capture_budget": "40GB"}
    with tempfile.TemporaryDirectory() as tmp:
        result = fatpipe.run(doc)
        result.write(Path(tmp) / "run")
        carried = read_pcap(Path(tmp) / "run" / "bottleneck.pcap")
        senders = [read_pcap(Path(tmp) / "run" / f"sender{i}.pcap") for i in (0, 1)]
    flows = result.summary["flows"]
    print(f"{first_cc} against {second_cc} at {rate}: goodput {flows[0]['goodput_bps'] / 1e6:.1f} and "
          f"{flows[1]['goodput_bps'] / 1e6:.1f} Mb/s (ratio {flows[0]['goodput_bps'] / flows[1]['goodput_bps']:.1f})")
    print("  from_s  " + "  ".join(f"{f['name']}:drops events cwnd" for f in flows))
    drops = []
    for i, sent in enumerate(senders):
        port = sent.loc[sent["payload_bytes"] > 0, "src_port"].iloc[0]
        _, d = _dropped(sent[sent["src_port"] == port], carried[carried["src_port"] == port])
        t = d["time_s"].to_numpy()
        events = t[np.concatenate(([True], np.diff(t) > 0.05))] if len(t) else t
        drops.append((t, events))
    series = result.flow_series
    for a in np.arange(0, seconds, 5.0):
        cells = []
        for i, (t, events) in enumerate(drops):
            w = series[(series["flow"] == flows[i]["name"]) & (series["time_s"] <= a + 5)]["cwnd_segments"]
            cells.append(f"{int(((t >= a) & (t < a + 5)).sum()):5d} {int(((events >= a) & (events < a + 5)).sum()):5d} "
                         f"{int(w.iloc[-1]) if len(w) else 0:5d}")
        print(f"  {a:6.1f}  " + "      ".join(cells))


def trace(cc: str) -> None:
    doc = read_scenario_file(BASE)
    doc["duration"] = "3s"
    doc["flows"][0]["cc"] = cc
    doc["output"] = {"plots": False, "sample_interval": "5ms", "capture": ["sender", "bottleneck"],
                     "capture_stop": "1.5s"}
    with tempfile.TemporaryDirectory() as tmp:
        result = fatpipe.run(doc)
        result.write(Path(tmp) / "run")
        sent = read_pcap(Path(tmp) / "run" / "sender.pcap")
        carried = read_pcap(Path(tmp) / "run" / "bottleneck.pcap")
    data = sent[sent["payload_bytes"] > 0]
    first = data.drop_duplicates("seq", keep="first").sort_values("time_s")
    out = carried[carried["payload_bytes"] > 0][["seq", "time_s"]].rename(columns={"time_s": "out_s"})
    # A first transmission got through if the bottleneck carried that segment within the
    # longest queueing delay (200 packets of 1040 bytes at 1 Gb/s: 1.7 ms) after it was sent;
    # a later copy is its retransmission.
    matched = pd.merge_asof(first, out.sort_values("out_s"), left_on="time_s", right_on="out_s", by="seq",
                            direction="forward", tolerance=0.003)
    dropped = matched[matched["out_s"].isna()]
    flow = result.summary["flows"][0]
    ss_end = flow["slow_start_end_ps"] / 1e12
    t0 = first["time_s"].min()
    print(f"{cc}: slow start {t0:.3f}-{ss_end:.3f} s; in it {flow['slow_start_segments_sent']} sent, "
          f"{flow['slow_start_segments_lost']} lost ({100 * flow['slow_start_loss_rate']:.1f} %); "
          f"cwnd at the first loss {flow['first_loss_cwnd_segments']}")
    series = result.flow_series
    edges = np.arange(t0, ss_end + RTT_S, RTT_S)
    print("  round  from_s   sent  dropped  cwnd_at_end")
    for k, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        n = int(((first["time_s"] >= a) & (first["time_s"] < b)).sum())
        d = int(((dropped["time_s"] >= a) & (dropped["time_s"] < b)).sum())
        w = series.loc[series["time_s"] <= b, "cwnd_segments"]
        if n:
            print(f"  {k:5d}  {a:6.3f}  {n:5d}  {d:7d}  {int(w.iloc[-1]) if len(w) else 0:11d}")
    if len(dropped):
        print(f"  first drop at {dropped['time_s'].min():.4f} s, last new segment dropped at "
              f"{dropped['time_s'].max():.4f} s; {len(dropped)} first transmissions dropped in all")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pair"]:
        first_cc, second_cc, *rates = sys.argv[2:]
        for r in rates:
            # 60 s as tcp-versions' E3.8; 20 s above 100 Mb/s keeps the captures to a GB.
            pair(first_cc, second_cc, r, 60.0 if rate_bps(r) <= 100e6 else 20.0)
    else:
        for name in sys.argv[1:] or ["reno", "highspeed"]:
            trace(name)
