"""CUBIC (RFC 9438) as a Python congestion control, written against fatpipe's per-ACK API
(docs/python-cc.md): the RFC's formulas as the core's ``cc/cubic.rs`` computes them in its
"rfc" form without HyStart (the scenario's defaults), so ``cc = { python = "cubic:Cubic" }``
gives the summary of ``cc = "cubic"`` (tests/test_python_cc.py checks it). Python's floats
are IEEE 754 doubles and the operations below are done in the core's order, so the windows
agree bit for bit.

- Section 4.2: W_cubic(t) = C (t - K)^3 + W_max, K = cbrt((W_max - cwnd_epoch) / C); each
  ACK aims at W_cubic(t + RTT), bounded to [cwnd, 1.5 cwnd].
- Section 4.3: the Reno-friendly estimate W_est, alpha = 3 (1 - beta) / (1 + beta) until it
  reaches the window before the last cut, then 1.
- Sections 4.6-4.8: ssthresh = beta x cwnd; fast convergence; after a timeout, K = 0 and
  W_max = cwnd_epoch. An epoch starts at the first ACK of congestion avoidance, and again
  after idle (``tx_start``).
"""

import struct

from reno import cong_avoid_ai, slow_start

PS_PER_S = 1e12
MAX_TARGET_PER_CWND = 1.5  # RFC 9438 section 4.2's bound on the target


def cube_root(x):
    """cbrt by Newton's iteration from a power of two above it, as the core computes it
    (cc/cubic.rs ``cube_root``: the same on every platform, no libm)."""
    if x != x or x <= 0.0:
        return 0.0
    if x == float("inf"):
        return x
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    e = ((bits >> 52) & 0x7FF) - 1023 + 1
    e3 = (e + 2) // 3
    y = struct.unpack("<d", struct.pack("<Q", (e3 + 1023) << 52))[0]
    while True:
        nxt = (2.0 * y + x / (y * y)) / 3.0
        if nxt >= y:
            return y
        y = nxt


class Cubic:
    def __init__(self, c=0.4, beta=0.7, fast_convergence=True, tcp_friendliness=True):
        if not c > 0 or not 0 < beta < 1:
            raise ValueError(f"CUBIC needs c > 0 and 0 < beta < 1, not c = {c}, beta = {beta}")
        self.c, self.beta = c, beta
        self.fast_convergence, self.tcp_friendliness = fast_convergence, tcp_friendliness
        self.w_max = 0.0
        self.cwnd_prior = 0.0
        self.epoch = None  # (start_ps, k_s, plateau, w_est)

    def w_cubic(self, k_s, plateau, t_s):
        d = t_s - k_s
        return self.c * d * d * d + plateau

    def ssthresh(self, view):
        cwnd = float(view.cwnd)
        if self.fast_convergence and cwnd < self.w_max:
            self.w_max = cwnd * (1.0 + self.beta) / 2.0
        else:
            self.w_max = cwnd
        self.cwnd_prior = cwnd
        self.epoch = None
        return max(int(cwnd * self.beta), 2)

    def cong_avoid(self, view, ack):
        if not view.cwnd_limited:
            return
        acked = slow_start(view, ack.delivered_segments)
        if acked == 0:
            return
        cwnd = float(view.cwnd)
        if self.epoch is None:
            if self.w_max > cwnd:
                self.epoch = [view.now_ps, cube_root((self.w_max - cwnd) / self.c), self.w_max, cwnd]
            else:
                self.epoch = [view.now_ps, 0.0, cwnd, cwnd]
        e = self.epoch
        t_s = max(view.now_ps - e[0], 0) / PS_PER_S
        if self.tcp_friendliness:
            alpha = 1.0 if e[3] >= self.cwnd_prior else 3.0 * (1.0 - self.beta) / (1.0 + self.beta)
            e[3] += alpha * acked / cwnd
            if self.w_cubic(e[1], e[2], t_s) < e[3]:
                view.cwnd = max(view.cwnd, int(e[3]))  # the Reno-friendly region
                return
        rtt = view.srtt_ps if view.srtt_ps is not None else view.min_rtt_ps
        rtt_s = 0.0 if rtt is None else rtt / PS_PER_S
        target = min(max(self.w_cubic(e[1], e[2], t_s + rtt_s), cwnd), MAX_TARGET_PER_CWND * cwnd)
        if target > cwnd:
            per_segment = min(int(cwnd / (target - cwnd)), 0xFFFFFFFF)
            cong_avoid_ai(view, max(per_segment, 1), acked)

    def set_state(self, view, state):
        if state == "loss":  # section 4.8: after a timeout, K = 0 and W_max = cwnd_epoch
            self.w_max = 0.0
            self.epoch = None

    def cwnd_event(self, view, event):
        if event == "tx_start":  # no epoch counts idle time
            self.epoch = None
