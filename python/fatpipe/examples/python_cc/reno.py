"""Reno (RFC 5681) as a Python congestion control, written against fatpipe's per-ACK API
(docs/python-cc.md): the same arithmetic as the core's `cc/reno.rs` in its "rfc" form, so a
flow with ``cc = { python = "reno:Reno" }`` gives the summary of ``cc = "reno"``
(tests/test_python_cc.py checks it).

- Slow start: cwnd grows by the segments counted (Linux ``tcp_slow_start``) up to ssthresh.
- Congestion avoidance: one segment per cwnd / a counted segments (Linux
  ``tcp_cong_avoid_ai``), so ``a`` segments per RTT.
- A congestion signal: ssthresh = max((1 - b) x cwnd, 2) (RFC 5681 eq. 4; Linux
  ``tcp_reno_ssthresh``).
- Counting: one per ACK (RFC 5681 3.1, the scenario's default ``byte_counting = false``), or
  with ``byte_counting = true`` the segments the ACK delivered (RFC 3465, as Linux counts).

No Limited Slow Start (RFC 3742, ``tcp.max_ssthresh``): the view does not carry it.
"""

import math


class Reno:
    def __init__(self, a=1.0, b=0.5, byte_counting=False):
        if not a > 0 or not 0 < b < 1:
            raise ValueError(f"Reno needs a > 0 and 0 < b < 1, not a = {a}, b = {b}")
        self.a, self.b, self.byte_counting = a, b, byte_counting

    def ssthresh(self, view):
        return max(int(view.cwnd * (1.0 - self.b)), 2)

    def cong_avoid(self, view, ack):
        if not view.cwnd_limited:  # only a window that limits sending may grow
            return
        acked = slow_start(view, ack.delivered_segments if self.byte_counting else 1)
        if acked == 0:
            return
        # One segment per cwnd / a counted segments; Rust's f64::round rounds halves away
        # from zero, Python's round() to even: floor(x + 0.5) is the former for x >= 0.
        cong_avoid_ai(view, math.floor(view.cwnd / self.a + 0.5), acked)


def slow_start(view, acked):
    """In slow start, grow by the counted segments up to ssthresh (Linux ``tcp_slow_start``);
    returns the part left for congestion avoidance."""
    if not view.in_slow_start:
        return acked
    grown = min(view.cwnd + acked, view.ssthresh)
    left = acked - (grown - view.cwnd)
    view.cwnd = grown
    return left


def cong_avoid_ai(view, w, acked):
    """Additive increase of one segment per ``w`` counted segments (Linux ``tcp_cong_avoid_ai``)."""
    w = max(w, 1)
    if view.cwnd_cnt >= w:
        view.cwnd_cnt = 0
        view.cwnd += 1
    view.cwnd_cnt += acked
    if view.cwnd_cnt >= w:
        delta = view.cwnd_cnt // w
        view.cwnd_cnt -= delta * w
        view.cwnd += delta
