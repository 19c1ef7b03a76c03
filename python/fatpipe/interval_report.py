"""A per-interval report while a run goes on, as iperf3 prints one (``fatpipe run
--interval 1s``): per flow the interval, bytes delivered, goodput, retransmissions and the
congestion window, and a SUM line when there are several flows.

The counters come from the core (``Simulation.flow_counters()``, one row per flow); the
runner calls :meth:`IntervalReport.sample` at every multiple of the interval. With more than
:data:`MAX_FLOW_LINES` flows only the SUM line is printed (and iperf3's per-stream lines
would be unreadable anyway). ``--json`` keeps the intervals for the JSON document instead of
printing them.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, TextIO

import numpy as np

from .units import PS_PER_S

__all__ = ["IntervalReport", "MAX_FLOW_LINES"]

#: Flows printed one per line; with more, only their sum.
MAX_FLOW_LINES = 20


def _bytes(n: float) -> str:
    """iperf3's transfer column: KBytes, MBytes, GBytes in powers of 1024."""
    for factor, unit in ((2**30, "GBytes"), (2**20, "MBytes"), (2**10, "KBytes")):
        if n >= factor:
            return f"{n / factor:.3g} {unit}"
    return f"{n:.0f} Bytes"


def _bits(bps: float) -> str:
    """iperf3's bitrate column: bits/sec in powers of 1000."""
    for factor, unit in ((1e9, "Gbits/sec"), (1e6, "Mbits/sec"), (1e3, "Kbits/sec")):
        if bps >= factor:
            return f"{bps / factor:.3g} {unit}"
    return f"{bps:.0f} bits/sec"


class IntervalReport:
    """Prints (or, with ``keep``, collects) one block per interval."""

    def __init__(self, scenario: Dict[str, Any], interval_ps: int, out: Optional[TextIO] = None,
                 keep: bool = False) -> None:
        self.interval_ps = interval_ps
        self.names = [f["name"] for f in scenario["flows"]]
        self.mss = np.array([f["tcp"]["mss_bytes"] if "tcp" in f else 0 for f in scenario["flows"]], dtype=np.int64)
        self.out = out if out is not None else sys.stdout
        self.keep = keep
        self.intervals: List[Dict[str, Any]] = []
        self._last_t = 0
        self._last: Optional[Dict[str, np.ndarray]] = None
        width = max([len("flow")] + [len(n) for n in self.names[:MAX_FLOW_LINES]])
        self._row = f"[{{:>{width}}}] {{:>15}} {{:>13}} {{:>16}} {{:>6}} {{:>13}}"
        self._header_printed = False

    def sample(self, t_ps: int, counters: Dict[str, Any]) -> None:
        """Called at ``t_ps`` with ``flow_counters()``: reports the interval ending now."""
        now = {key: np.asarray(col).astype(np.int64) for key, col in counters.items()}
        if self._last is None:  # the start: nothing to report yet
            self._last, self._last_t = now, t_ps
            return
        seconds = (t_ps - self._last_t) / PS_PER_S
        delivered = now["delivered_bytes"] - self._last["delivered_bytes"]
        retransmits = now["segments_retransmitted"] - self._last["segments_retransmitted"]
        lost = now["datagrams_lost"] - self._last["datagrams_lost"]
        cwnd = np.where(now["cwnd_segments"] >= 0, now["cwnd_segments"] * self.mss, -1)
        rows = [
            {"name": name, "bytes": int(d), "bits_per_second": 8 * int(d) / seconds, "retransmits": int(r),
             "datagrams_lost": int(x), "cwnd_bytes": None if c < 0 else int(c)}
            for name, d, r, x, c in zip(self.names, delivered, retransmits, lost, cwnd)
        ]
        total = {"bytes": int(delivered.sum()), "bits_per_second": 8 * int(delivered.sum()) / seconds,
                 "retransmits": int(retransmits.sum()), "datagrams_lost": int(lost.sum())}
        interval = {"start_s": self._last_t / PS_PER_S, "end_s": t_ps / PS_PER_S, "flows": rows, "sum": total}
        if self.keep:
            self.intervals.append(interval)
        else:
            self._print(interval)
        self._last, self._last_t = now, t_ps

    def _print(self, interval: Dict[str, Any]) -> None:
        if not self._header_printed:
            print(self._row.format("flow", "Interval (s)", "Transfer", "Bitrate", "Retr", "Cwnd"), file=self.out)
            self._header_printed = True
        span = f"{interval['start_s']:.2f}-{interval['end_s']:.2f}"
        rows = interval["flows"] if len(interval["flows"]) <= MAX_FLOW_LINES else []
        for row in rows:
            cwnd = "-" if row["cwnd_bytes"] is None else _bytes(row["cwnd_bytes"])
            retr = row["retransmits"] if row["cwnd_bytes"] is not None else f"{row['datagrams_lost']}L"
            print(self._row.format(row["name"], span, _bytes(row["bytes"]), _bits(row["bits_per_second"]), retr,
                                   cwnd).rstrip(), file=self.out)
        if len(interval["flows"]) > 1:
            s = interval["sum"]
            print(self._row.format("SUM", span, _bytes(s["bytes"]), _bits(s["bits_per_second"]), s["retransmits"],
                                   "").rstrip(), file=self.out)
        self.out.flush()
