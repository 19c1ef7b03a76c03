"""A stand-in for `fatpipe._core` with exactly the API of docs/core-interface.md; its output
is checked against the same contract as the real core's (tests/test_contract.py).

It does not simulate: it produces a clean, predictable run (every flow delivers at a
constant rate, every link is busy a fixed fraction) so the Python layer's arithmetic --
goodput, utilization, per-interval rates, names, files -- can be checked exactly, with or
without the real core.
"""

PS_PER_S = 10**12


def _document(scenario):
    """The real core takes the normalized scenario as a dict (Python objects, never JSON
    text): so does the fake, which then catches a caller that sends text."""
    if not isinstance(scenario, dict):
        raise ValueError(f"scenario: unexpected type: '{type(scenario).__name__}' object is not an instance of 'Mapping'")
    return scenario


class Simulation:
    #: Every instance records its run_until calls here, for the tests.
    calls = []

    def __init__(self, scenario):
        self.doc = _document(scenario)
        if self.doc["duration_ps"] <= 0:
            raise ValueError("duration_ps: 0 is not allowed: must be positive")
        self.now_ps = 0
        self.duration_ps = self.doc["duration_ps"]
        Simulation.calls = []

    def run_until(self, t_ps):
        Simulation.calls.append(t_ps)
        self.now_ps = min(t_ps, self.duration_ps)

    def flow_counters(self):
        return fake_counters(self.doc, self.now_ps)

    def flow_routes(self):
        # Every flow over every link each way: the fake has no routing (buffer warnings
        # then see the slowest link and every delay).
        every = list(range(len(self.doc["links"])))
        return [(every, every) for _ in self.doc["flows"]]

    def finish(self):
        self.run_until(self.duration_ps)
        return fake_output(self.doc)


class RouteError(ValueError):
    """As the core's: a flow whose packets find no way (the fake routes everything)."""


class FlowFieldError(ValueError):
    """As the core's: a flow's field the core refuses (the fake refuses none)."""


def check(scenario):
    _document(scenario)


def fake_counters(doc, t):
    """Every flow's counters at time ``t``, as the columns of ``flow_counters()``."""
    n = len(doc["flows"])
    delivered = [delivery_rate_bytes_per_s(i) * t // PS_PER_S for i in range(n)]
    return {"delivered_bytes": delivered, "sent_bytes": [2 * d for d in delivered],
            "segments_retransmitted": [t // (10 * 10**9) for _ in range(n)], "datagrams_lost": [0] * n,
            "cwnd_segments": [20] * n, "srtt_ps": [40 * 10**9] * n}


def version():
    return "0.0.0-fake"


def delivery_rate_bytes_per_s(flow_index):
    """Flow i delivers (i + 1) MB/s."""
    return (flow_index + 1) * 1_000_000


def fake_output(doc):
    interval = doc["sample_interval_ps"]
    duration = doc["duration_ps"]
    times = list(range(0, duration + 1, interval))
    if times[-1] != duration:
        times.append(duration)
    fs = {k: [] for k in ("time_ps", "flow", "cwnd_segments", "ssthresh_segments", "outstanding_bytes",
                          "srtt_ps", "delivered_bytes", "sent_bytes")}
    qs = {k: [] for k in ("time_ps", "link", "queue_packets", "queue_bytes", "drops_packets", "departed_bytes",
                          "red_avg_packets", "early_drops_packets", "ecn_marks", "sojourn_ps", "aqm_dropping",
                          "aqm_control", "l4s_queue_packets", "l4s_sojourn_ps", "prob_classic", "prob_l4s_coupled")}
    for t in times:
        for i in range(len(doc["flows"])):
            delivered = delivery_rate_bytes_per_s(i) * t // PS_PER_S
            fs["time_ps"].append(t)
            fs["flow"].append(i)
            fs["cwnd_segments"].append(10 + t // interval)
            fs["ssthresh_segments"].append(-1 if t < duration // 2 else 50)
            fs["outstanding_bytes"].append(14480)
            fs["srtt_ps"].append(-1 if t == 0 else 40 * 10**9)
            fs["delivered_bytes"].append(delivered)
            fs["sent_bytes"].append(2 * delivered)
        for j, link in enumerate(doc["links"]):
            # Every link is busy half the time: departed wire bytes at half the rate.
            qs["time_ps"].append(t)
            qs["link"].append(j)
            qs["queue_packets"].append(j)
            qs["queue_bytes"].append(1500 * j)
            qs["drops_packets"].append(t // interval)
            qs["departed_bytes"].append(link["rate_bps"] // 16 * t // PS_PER_S)
            qs["red_avg_packets"].append(0.5 * j if link["queue"]["discipline"] == "red" else -1.0)
            qs["early_drops_packets"].append(0)
            qs["ecn_marks"].append(0)
            qs["sojourn_ps"].append(-1)
            qs["aqm_dropping"].append(-1)
            qs["aqm_control"].append(-1.0)
            for column in ("l4s_queue_packets", "l4s_sojourn_ps"):
                qs[column].append(-1)
            for column in ("prob_classic", "prob_l4s_coupled"):
                qs[column].append(-1.0)
    flows = []
    for i, flow in enumerate(doc["flows"]):
        delivered = delivery_rate_bytes_per_s(i) * duration // PS_PER_S
        flows.append({
            "transport": "tcp", "name": flow["name"], "group": flow.get("group"),
            "algorithm": flow["cc"]["algorithm"], "mss_bytes": flow["tcp"]["mss_bytes"], "header_bytes": 52,
            "start_ps": flow["source"]["start_ps"],
            # Flow 0 delivers its last byte at half time; the others at the end.
            "end_ps": duration // 2 if i == 0 else duration,
            "completed": False, "bytes_delivered": delivered, "bytes_sent": 2 * delivered,
            "segments_sent": 100, "segments_retransmitted": 3, "fast_retransmits": 1,
            "timeouts": 1, "dupacks_received": 9, "acks_sent": 50, "out_of_order_segments": 0,
            "duplicate_segments": 0, "bytes_read": delivered, "window_updates_sent": 0,
            "zero_window_acks_sent": 0, "out_of_window_segments": 0, "zero_window_probes": 0,
            "dsacks_sent": 0, "dsacks_received": 0, "undos": 0, "spurious_timeouts": 0,
            "loss_probes": 0, "loss_probe_recoveries": 0, "reordering_events": 0,
            "reordering_segments": 3,
            "bytes_written": 2 * delivered, "bursts": 0, "failed_burst_cycles": 0,
            "cwnd_segments": 20, "ssthresh_segments": None,
            "data_packets_lost": 2, "data_bytes_lost": 2896, "retransmissions_lost": 0, "ack_packets_lost": 0,
            "setup_packets_lost": 0, "first_send_ps": 0, "slow_start_end_ps": None,
            "slow_start_segments_sent": 100, "slow_start_segments_lost": 0, "first_loss_ps": None,
            "first_loss_cwnd_segments": None, "recovered_95_ps": None, "recovered_ps": None,
            "local_congestion_events": 0, "cwr_entries": 0, "ecn_echoes": 0, "ce_segments_received": 0,
            "srtt_ps": 40 * 10**9, "min_rtt_ps": None,
            "connections": 1, "syn_retransmits": 0, "synack_retransmits": 0,
            "requests_completed": None, "request_retransmissions": None,
        })
    links = [{
        "name": link["name"], "from": link["from"], "to": link["to"], "rate_bps": link["rate_bps"],
        "delay_ps": link["delay_ps"], "packets_sent": 10, "bytes_sent": 15380,
        "busy_ps": duration // 4, "drops_packets": j, "drops_bytes": 1500 * j,
        # Link j: j overflows, 10 j early drops, 100 j random losses, 1000 j outage losses.
        "early_drops_packets": 10 * j, "impairment_drops_packets": 100 * j,
        "outage_drops_packets": 1000 * j, "ecn_marks": 0,
        "max_queue_packets": j, "max_queue_bytes": 1500 * j,
        "red_min_th_packets": None, "red_max_th_packets": None, "red_w_q": None,
    } for j, link in enumerate(doc["links"])]
    return {
        "summary": {"name": doc["name"], "seed": doc["seed"], "duration_ps": duration,
                    "events": 12345, "flows": flows, "links": links, "captures": []},
        "flow_series": fs,
        "queue_series": qs,
        # No HTTP flows: an empty request table.
        "requests": {k: [] for k in ("flow", "request", "object", "connection", "size_bytes", "start_ps",
                                     "request_sent_ps", "first_byte_ps", "last_byte_ps", "response_time_ps")},
    }
