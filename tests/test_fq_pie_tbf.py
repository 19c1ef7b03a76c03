"""FQ-PIE and the TBF shaper (issue 28): their tables and checks, and scenarios whose outcome
the physics fixes (docs/validation.md, "FQ-PIE" and "TBF")."""

from __future__ import annotations

import copy

import pytest

from test_aqm import bottleneck_queue, dumbbell, steady

from fatpipe import run
from fatpipe.scenario import ScenarioError, load

MS = 10**9  # picoseconds


def bottleneck(result):
    return next(x for x in result.summary["links"] if x["name"] == "bottleneck")


def test_fq_pie_defaults_are_linuxs():
    q = bottleneck_queue(dumbbell({"discipline": "fq_pie"}, [{"cc": "cubic"}]))
    # sch_fq_pie.c fq_pie_init: limit 10240, 1024 flows, quantum one MTU, ecn_prob 10 %;
    # pie_params_init / pie_vars_init: 15 ms, 15 ms, alpha 2/16, beta 20/16, burst 150 ms,
    # ECN and bytemode off.
    assert q == {"discipline": "fq_pie", "flows": 1024, "quantum_bytes": 1500, "ecn_prob_percent": 10,
                 "pie": {"limit_packets": 10240, "target_ps": 15 * MS, "tupdate_ps": 15 * MS, "alpha": 0.125,
                         "beta": 1.25, "max_burst_ps": 150 * MS, "ecn": False, "bytemode": False,
                         "mtu_bytes": 1500}}
    q = bottleneck_queue(dumbbell({"discipline": "fq_pie", "limit_bdp": 2.0, "quantum": 3000, "ecn": True,
                                   "ecn_prob": 30}, [{"cc": "cubic"}]))
    assert (q["pie"]["limit_packets"], q["quantum_bytes"], q["pie"]["ecn"], q["ecn_prob_percent"]) == (667, 3000, True, 30)


def test_tbf_latency_gives_tcs_limit():
    # tc (q_tbf.c): limit = rate x latency + burst: 20 Mb/s x 50 ms = 125,000 bytes + 32,000.
    q = bottleneck_queue(dumbbell({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB", "latency": "50ms"},
                                  [{"cc": "cubic"}]))
    assert q == {"discipline": "tbf", "rate_bps": 20_000_000, "burst_bytes": 32_000, "limit_bytes": 157_000,
                 "peakrate_bps": None, "minburst_bytes": None}
    # With a peak rate, no more than peakrate x latency + minburst: 40 Mb/s x 1 ms + 1500.
    q = bottleneck_queue(dumbbell({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB", "latency": "1ms",
                                   "peakrate": "40Mbps", "minburst": 1500}, [{"cc": "cubic"}]))
    assert q["limit_bytes"] == min(2500 + 32_000, 5000 + 1500)


@pytest.mark.parametrize(
    "queue, message",
    [
        # 100 packets of 1500 bytes drain in 12 ms at 100 Mb/s: no sojourn reaches 15 ms.
        ({"discipline": "fq_pie", "limit_packets": 100},
         'topology.queue.target: "15ms" is not allowed: a full queue (100 packets of 1500 bytes at 100Mbps) '
         "drains in 12ms"),
        ({"discipline": "fq_pie", "flows": 0}, "topology.queue.flows: 0 is not allowed"),
        ({"discipline": "fq_pie", "flows": 65537}, "topology.queue.flows: 65537 is not allowed"),
        ({"discipline": "fq_pie", "ecn_prob": 101}, "topology.queue.ecn_prob: 101 is not allowed"),
        ({"discipline": "fq_pie", "quantum": 0}, "topology.queue.quantum"),
        ({"discipline": "tbf", "rate": 0, "burst": "32KB", "limit": "100KB"}, "topology.queue.rate: 0"),
        ({"discipline": "tbf", "burst": "32KB", "limit": "100KB"}, "topology.queue.rate: missing; required"),
        ({"discipline": "tbf", "rate": "20Mbps", "limit": "100KB"}, "topology.queue.burst: missing; required"),
        ({"discipline": "tbf", "rate": "20Mbps", "burst": 1000, "limit": "100KB"},
         "topology.queue.burst: \"1000 bytes\" is not allowed: must be at least the link's MTU (1500 bytes)"),
        ({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB"},
         "topology.queue.limit: missing; give limit or latency"),
        ({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB", "limit": "100KB", "latency": "50ms"},
         "topology.queue.limit: \"100KB\" is not allowed: latency is set too"),
        ({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB", "limit": "100KB", "peakrate": "20Mbps",
          "minburst": 1500}, "topology.queue.peakrate: \"20Mbps\" is not allowed: must be above rate (20Mbps)"),
        ({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB", "limit": "100KB", "peakrate": "40Mbps"},
         "topology.queue.minburst: missing; required with peakrate"),
        ({"discipline": "tbf", "rate": "20Mbps", "burst": "32KB", "limit": 1000},
         "topology.queue.limit: \"1000 bytes\" is not allowed: must be at least the link's MTU"),
    ],
)
def test_bad_input_gets_one_line_naming_the_field(queue, message):
    with pytest.raises(ScenarioError) as err:
        load(dumbbell(queue, [{"cc": "cubic"}]))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_fq_pie_holds_a_bulk_flows_queue_near_its_target():
    # One CUBIC flow, 100 Mb/s x 40 ms, FQ-PIE with Linux's defaults (10240 packets, so the
    # buffer never overflows): the flow's own queue's PIE keeps its delay about its 15 ms
    # reference, where drop-tail of that depth would let it stand far deeper.
    result = run(dumbbell({"discipline": "fq_pie"}, [{"name": "bulk", "cc": "cubic"}]))
    s = steady(result)
    assert 0.005 < s["queue_delay_s"].mean() < 0.025, s["queue_delay_s"].mean()
    link = bottleneck(result)
    assert link["utilization"] > 0.95
    aqm = link["aqm"]
    assert aqm["discipline"] == "fq_pie" and aqm["overflow_drops"] == 0
    assert aqm["enqueue_drops"] == link["early_drops_packets"] > 0
    assert s["aqm_control"].max() > 0, "the queue's drop probability rose"


@pytest.mark.parametrize("limit_bdp, winner", [(6.0, "cubic")])
def test_fq_pie_shares_evenly_between_cubic_and_bbr_where_droptail_does_not(limit_bdp, winner):
    # A deep drop-tail buffer lets CUBIC fill it and starve BBR's model; FQ-PIE gives each
    # flow its own queue, its own PIE and round robin: about half each.
    flows = [{"name": "cubic", "cc": "cubic", "pair": 0}, {"name": "bbr", "cc": "bbr", "pair": 1}]
    base = dumbbell({"discipline": "droptail", "limit_bdp": limit_bdp}, flows, duration="30s", pairs=2)
    fq = copy.deepcopy(base)
    fq["topology"]["queue"]["discipline"] = "fq_pie"
    shares = {name: {f["name"]: f["goodput_bps"] for f in run(s).summary["flows"]}
              for name, s in (("droptail", base), ("fq_pie", fq))}
    dt, fqp = shares["droptail"], shares["fq_pie"]
    loser = "cubic" if winner == "bbr" else "bbr"
    assert dt[loser] < 0.25 * dt[winner], dt
    assert 0.8 < fqp["cubic"] / fqp["bbr"] < 1.25, fqp
    assert fqp["cubic"] + fqp["bbr"] > 85e6, fqp


def tbf(rate="20Mbps", burst="32KB", **more):
    return {"discipline": "tbf", "rate": rate, "burst": burst, **more}


def test_a_udp_flow_through_a_tbf_leaves_at_its_rate():
    # 50 Mb/s of UDP into a 20 Mb/s shaper for 10 s: what arrives is the bucket plus
    # 20 Mb/s x the time (in IP bytes: 1500-byte datagrams carry 1472 of payload); the
    # rest waits until the FIFO's limit, then is dropped.
    s = dumbbell(tbf(limit="100KB"), [{"name": "udp", "transport": "udp", "udp": {"mode": "cbr", "rate": "50Mbps"}}],
                 duration="10s")
    result = run(s)
    flow = result.summary["flows"][0]
    link = bottleneck(result)
    ip_bytes = flow["datagrams_received"] * 1500
    expected = 32_000 + 20e6 / 8 * 10
    assert abs(ip_bytes - expected) < 100_000 + 1500, (ip_bytes, expected)  # plus what still waits
    assert link["max_queue_bytes"] <= 100_000
    assert link["aqm"]["overflow_drops"] == link["drops_packets"] > 0
    assert flow["datagrams_lost"] == link["drops_packets"]


def test_tcp_through_a_tbf_settles_at_its_rate():
    # CUBIC and BBR through a 20 Mb/s TBF on a 100 Mb/s link: together they get the TBF's
    # rate, never more, and the shaper delays (sojourn) rather than drops most of what
    # exceeds it.
    flows = [{"name": "cubic", "cc": "cubic", "pair": 0}, {"name": "bbr", "cc": "bbr", "pair": 1}]
    result = run(dumbbell(tbf(latency="50ms"), flows, duration="30s", pairs=2))
    total = sum(f["goodput_bps"] for f in result.summary["flows"])
    assert 18.5e6 < total < 20e6, total
    link = bottleneck(result)
    assert link["utilization"] < 0.21
    assert link["max_queue_bytes"] <= 157_000
    assert link["aqm"]["sojourn_max_ps"] > 40 * MS
