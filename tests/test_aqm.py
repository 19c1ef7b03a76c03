"""CoDel and FQ-CoDel (issue 28): the scenario's tables and checks, and scenarios whose
outcome the physics fixes (docs/validation.md, "Active queue management")."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fatpipe import run
from fatpipe.scenario import ScenarioError, load

MS = 10**9  # picoseconds


def dumbbell(queue, flows, duration="20s", pairs=None):
    topology = {"shape": "dumbbell", "bottleneck_rate": "100Mbps", "rtt": "40ms", "queue": queue}
    if pairs:
        topology["pairs"] = pairs
    return {"name": "aqm", "duration": duration, "topology": topology, "flows": flows,
            "output": {"sample_interval": "10ms", "plots": False}}


def bottleneck_queue(scenario):
    core = load(scenario).core
    return next(link for link in core["links"] if link["name"] == "bottleneck")["queue"]


def test_codel_defaults_are_linuxs():
    q = bottleneck_queue(dumbbell({"discipline": "codel"}, [{"cc": "cubic"}]))
    # sch_codel.c: limit 1000 packets; codel_params_init: 5 ms, 100 ms, ECN off.
    assert q == {"discipline": "codel", "limit_packets": 1000, "target_ps": 5 * MS, "interval_ps": 100 * MS,
                 "mtu_bytes": 1500, "ecn": False, "ce_threshold_ps": None}


def test_fq_codel_defaults_are_linuxs():
    q = bottleneck_queue(dumbbell({"discipline": "fq_codel"}, [{"cc": "cubic"}]))
    # sch_fq_codel.c fq_codel_init: 10240 packets, 1024 flows, quantum one MTU, batch 64, ECN on.
    assert q == {"discipline": "fq_codel", "limit_packets": 10240, "flows": 1024, "quantum_bytes": 1500,
                 "drop_batch_size": 64, "target_ps": 5 * MS, "interval_ps": 100 * MS, "mtu_bytes": 1500,
                 "ecn": True, "ce_threshold_ps": None}
    q = bottleneck_queue(dumbbell({"discipline": "fq_codel", "limit_bdp": 1.0, "quantum": 3000}, [{"cc": "cubic"}]))
    assert (q["limit_packets"], q["quantum_bytes"]) == (334, 3000)


@pytest.mark.parametrize(
    "queue, message",
    [
        # 10 packets of 1500 bytes drain in 1.2 ms at 100 Mb/s: no sojourn reaches 5 ms.
        ({"discipline": "codel", "limit_packets": 10},
         "topology.queue.target: \"5ms\" is not allowed: a full queue (10 packets of 1500 bytes at 100Mbps) "
         "drains in 1.2ms"),
        ({"discipline": "fq_codel", "limit_packets": 100, "ce_threshold": "20ms"},
         "topology.queue.ce_threshold: \"20ms\" is not allowed: a full queue (100 packets of 1500 bytes at "
         "100Mbps) drains in 12ms"),
        ({"discipline": "codel", "target": "100ms"}, "topology.queue.target: \"100ms\" is not allowed: must be below "
         "interval (100ms)"),
        ({"discipline": "fq_codel", "flows": 0}, "topology.queue.flows"),
        ({"discipline": "codel", "limit_packets": 10, "limit_bdp": 1.0}, "limit_packets and limit_bdp are both set"),
    ],
)
def test_bad_input_gets_one_line_naming_the_field(queue, message):
    with pytest.raises(ScenarioError) as err:
        load(dumbbell(queue, [{"cc": "cubic"}]))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_transmit_ring_cannot_sit_behind_a_holding_discipline():
    s = dumbbell({"discipline": "droptail"}, [{"cc": "cubic"}])
    s["topology"]["access_queue"] = {"discipline": "fq_codel"}
    s["topology"]["tx_ring"] = 256
    with pytest.raises(ScenarioError, match=r"topology.tx_ring: 256 is not allowed: the host interface queue is "
                                            r"fq_codel"):
        load(s)


def steady(result, link="bottleneck", after_s=5.0):
    q = result.queue_series
    return q[(q["link"] == link) & (q["time_s"] > after_s)]


def test_codel_holds_a_bulk_flows_standing_queue_at_its_target():
    # One CUBIC flow, 100 Mb/s x 40 ms, a buffer of 2 BDP (667 packets). Drop-tail lets the
    # queue stand tens of milliseconds deep; CoDel drops as soon as every packet has waited
    # 5 ms for 100 ms, so the queue peaks just above 5 ms, and CUBIC's backoff to 0.7 of
    # (BDP + 5 ms) leaves the link idle only briefly.
    codel = run(dumbbell({"discipline": "codel", "limit_bdp": 2.0}, [{"name": "bulk", "cc": "cubic"}]))
    droptail = run(dumbbell({"discipline": "droptail", "limit_bdp": 2.0}, [{"name": "bulk", "cc": "cubic"}]))
    c, d = steady(codel), steady(droptail)
    assert c["sojourn_s"].max() < 2 * 0.005, c["sojourn_s"].max()
    assert c["queue_delay_s"].mean() < 0.005
    assert d["queue_delay_s"].mean() > 0.020, "drop-tail's standing queue"
    link = next(x for x in codel.summary["links"] if x["name"] == "bottleneck")
    assert link["utilization"] > 0.9
    aqm = link["aqm"]
    assert aqm["discipline"] == "codel" and aqm["dequeue_drops"] > 0 and aqm["overflow_drops"] == 0
    assert aqm["dequeue_drops"] == link["early_drops_packets"]
    # Every drop is counted against the flow (sent = delivered + lost, at the summary).
    assert codel.summary["flows"][0]["segments_retransmitted"] >= aqm["dequeue_drops"] - 1
    # The control state is in the series: the dropping state is entered and left.
    assert set(np.unique(c["aqm_dropping"])) == {0.0, 1.0}


def test_codel_marks_ecn_flows_instead_of_dropping():
    s = dumbbell({"discipline": "codel", "limit_bdp": 2.0, "ecn": True},
                 [{"name": "bulk", "cc": "cubic", "tcp": {"ecn": True}}])
    link = next(x for x in run(s).summary["links"] if x["name"] == "bottleneck")
    assert link["aqm"]["ecn_marks"] > 0 and link["aqm"]["dequeue_drops"] == 0
    assert link["ecn_marks"] == link["aqm"]["ecn_marks"]


@pytest.mark.parametrize("limit_bdp, winner", [(0.3, "bbr"), (6.0, "cubic")])
def test_fq_codel_shares_evenly_between_cubic_and_bbr_where_droptail_does_not(limit_bdp, winner):
    # A shallow drop-tail buffer lets BBR (which ignores loss) take nearly everything; a
    # deep one lets CUBIC fill it and starve BBR's model. FQ-CoDel gives each flow its own
    # queue and round robin: about half each, whatever the buffer.
    flows = [{"name": "cubic", "cc": "cubic", "pair": 0}, {"name": "bbr", "cc": "bbr", "pair": 1}]
    base = dumbbell({"discipline": "droptail", "limit_bdp": limit_bdp}, flows, duration="30s", pairs=2)
    fq = copy.deepcopy(base)
    fq["topology"]["queue"]["discipline"] = "fq_codel"
    shares = {}
    for name, scenario in (("droptail", base), ("fq_codel", fq)):
        goodput = {f["name"]: f["goodput_bps"] for f in run(scenario).summary["flows"]}
        shares[name] = goodput
    dt, fqc = shares["droptail"], shares["fq_codel"]
    loser = "cubic" if winner == "bbr" else "bbr"
    assert dt[loser] < 0.25 * dt[winner], dt
    assert 0.8 < fqc["cubic"] / fqc["bbr"] < 1.25, fqc
    assert fqc["cubic"] + fqc["bbr"] > 85e6, fqc


def test_pie_defaults_are_linuxs():
    q = bottleneck_queue(dumbbell({"discipline": "pie"}, [{"cc": "cubic"}]))
    # sch_pie.c / pie.h: limit 1000, target 15 ms, tupdate 15 ms, alpha 2/16, beta 20/16,
    # burst allowance 150 ms, ECN and bytemode off.
    assert q == {"discipline": "pie", "limit_packets": 1000, "target_ps": 15 * MS, "tupdate_ps": 15 * MS,
                 "alpha": 0.125, "beta": 1.25, "max_burst_ps": 150 * MS, "ecn": False, "bytemode": False,
                 "mtu_bytes": 1500}


def test_pie_holds_the_queue_delay_below_its_target():
    # The CoDel scenario above through PIE: the controller keeps the queue delay around its
    # 15 ms reference (PIE drops on arrival, so the delay settles below it) and the link full.
    pie = run(dumbbell({"discipline": "pie", "limit_bdp": 2.0}, [{"name": "bulk", "cc": "cubic"}]))
    p = steady(pie)
    assert 0.003 < p["queue_delay_s"].mean() < 0.015, p["queue_delay_s"].mean()
    link = next(x for x in pie.summary["links"] if x["name"] == "bottleneck")
    assert link["utilization"] > 0.97
    assert link["aqm"]["enqueue_drops"] == link["early_drops_packets"] > 0
    assert p["aqm_control"].max() > 0, "the drop probability rose"
