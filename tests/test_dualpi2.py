"""DualPI2 (RFC 9332, Linux sch_dualpi2; issue 28): its table's defaults and refusals, what it
reports, and the scenarios whose outcome the physics fixes (docs/validation.md, "DualPI2").
The packet-level tests of the coupling, the step, PI2's update, the classification, the
overload rule and the scheduler are the core's (net/queue/dualpi2.rs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fatpipe import run
from fatpipe.scenario import ScenarioError, load

MS = 10**9  # picoseconds

PRAGUE = {"name": "prague", "cc": "prague", "tcp": {"ecn": True, "accecn": True}}
CUBIC = {"name": "cubic", "cc": "cubic", "tcp": {"ecn": True}}


def scenario(queue, flows=(PRAGUE, CUBIC), duration="10s", rtt="20ms"):
    return {"name": "dualpi2", "duration": duration,
            "topology": {"bottleneck_rate": "100Mbps", "rtt": rtt, "queue": queue},
            "flows": [dict(f) for f in flows], "output": {"sample_interval": "10ms", "plots": False}}


def bottleneck_queue(doc):
    return next(link for link in load(doc).core["links"] if link["name"] == "bottleneck")["queue"]


def bottleneck(result):
    return next(link for link in result.summary["links"] if link["name"] == "bottleneck")


def test_defaults_are_linuxs():
    q = bottleneck_queue(scenario({"discipline": "dualpi2"}))
    # sch_dualpi2.c dualpi2_reset_default: limit 10000 packets, memory limit limit x 2 x MTU
    # (get_memory_limit), target 15 ms, tupdate 16 ms, alpha ~0.16 Hz, beta ~3.2 Hz, step 1 ms
    # in time, wc 10 %, l4s_ect, k 2, drop on overload, drop at dequeue.
    assert q == {"discipline": "dualpi2", "limit_packets": 10000, "memory_limit_bytes": 10000 * 2 * 1500,
                 "target_ps": 15 * MS, "tupdate_ps": 16 * MS, "alpha": 0.16, "beta": 3.2,
                 "step_thresh_ps": 1 * MS, "step_thresh_packets": None, "coupling_factor": 2.0, "any_ect": False,
                 "c_protection_percent": 10, "drop_overload": True, "drop_early": False, "mtu_bytes": 1500}
    q = bottleneck_queue(scenario({"discipline": "dualpi2", "step_thresh_packets": 5, "ecn_mask": "any_ect"}))
    assert (q["step_thresh_ps"], q["step_thresh_packets"], q["any_ect"]) == (None, 5, True)


@pytest.mark.parametrize("queue, start", [
    ({"classic_protection": 101}, "topology.queue.classic_protection: 101 is not allowed"),
    ({"coupling_factor": 0}, "topology.queue.coupling_factor: 0 is not allowed"),
    ({"alpha": -0.1}, "topology.queue.alpha: -0.1 is not allowed"),
    ({"tupdate": "0ms"}, "topology.queue.tupdate:"),
    ({"ecn_mask": "cla_ect"}, "topology.queue.ecn_mask: \"cla_ect\" is not allowed"),
    ({"step_thresh": "1ms", "step_thresh_packets": 3}, "topology.queue.step_thresh_packets: 3 is not allowed: set at most one"),
    ({"limit_packets": 10, "step_thresh_packets": 10}, "topology.queue.step_thresh_packets: 10 is not allowed: must be below"),
    ({"limit_packets": 10, "step_thresh": "5ms"}, "topology.queue.step_thresh: \"5ms\" is not allowed: a full queue"),
    ({"memory_limit": 1000}, "topology.queue.memory_limit: 1000 is not allowed: must be at least one MTU"),
])
def test_parameters_out_of_range_get_one_line_naming_the_field(queue, start):
    with pytest.raises(ScenarioError) as info:
        load(scenario({"discipline": "dualpi2", **queue}))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(start), message


def test_an_l4s_flow_without_ecn_is_refused_in_one_line():
    with pytest.raises(ScenarioError) as info:
        load(scenario({"discipline": "dualpi2"}, flows=[{"name": "p", "cc": "prague"}]))
    assert str(info.value).startswith("flows[0].tcp.ecn: false is not allowed with cc \"prague\"")
    assert "\n" not in str(info.value)


def ratio(result):
    goodput = result.flows.set_index("name")["goodput_bps"]
    return goodput["prague"] / goodput["cubic"]


def test_prague_and_cubic_share_dualpi2_roughly_evenly_where_a_classic_ecn_fifo_is_uneven():
    # RFC 9332 section 2.1: the L4S queue is marked with p_L = k p' and the classic queue with
    # p_C = p'^2, k = 2 chosen so that a scalable and a Reno-like flow share about evenly. A
    # single classic-ECN FIFO (RED marking) gives Prague several times CUBIC's rate (RFC 9330's
    # known case). 20 s, as examples/prague-cubic-dualpi2.toml.
    dual = run(scenario({"discipline": "dualpi2"}, duration="20s"))
    fifo = run(scenario({"discipline": "red", "limit_packets": 500, "min_th": 50, "max_th": 150, "max_p": 0.1,
                         "ecn": True}, duration="20s"))
    assert 0.67 < ratio(dual) < 2.0, ratio(dual)
    assert ratio(fifo) > 3 * ratio(dual), (ratio(fifo), ratio(dual))
    for r in (dual, fifo):
        assert bottleneck(r)["utilization"] > 0.95
    # The marks each queue took are the coupling's: the L4S queue's marked fraction is k x
    # the mean p', the classic queue's the mean p'^2 (sampled every 10 ms, so not exact).
    lanes = bottleneck(dual)["aqm"]["dualpi2"]
    q = dual.queue_series
    p = q[q["link"] == "bottleneck"]["aqm_control"]
    p_l = lanes["l4s"]["prob_marks"] / lanes["l4s"]["dequeued_packets"]
    p_c = lanes["classic"]["prob_marks"] / lanes["classic"]["dequeued_packets"]
    assert 1.7 < p_l / p.mean() < 2.3, (p_l, p.mean())
    assert 0.75 < p_c / (p**2).mean() < 1.25, (p_c, (p**2).mean())
    # Each queue's delay where its AQM holds it: L4S under the 1 ms step, classic near 15 ms.
    assert lanes["l4s"]["sojourn_mean_ps"] < 1 * MS
    assert 5 * MS < lanes["classic"]["sojourn_mean_ps"] < 20 * MS
    assert lanes["classic"]["step_marks"] == 0 and lanes["l4s"]["prob_drops"] == 0


def test_dctcp_in_the_l4s_queue_keeps_it_under_a_millisecond_at_full_utilization():
    # DCTCP holds the queue at its marking threshold and fills the link when K > C x RTT / 7
    # (Alizadeh et al. 2010, section 3.4): the 1 ms step against 5 ms / 7 here; at 20 ms
    # (K < 2.9 ms) the link is no longer full. Linux's any_ect puts DCTCP's ECT(0) in the
    # L4S queue.
    flows = [{"name": "d1", "cc": "dctcp", "tcp": {"ecn": True}},
             {"name": "d2", "cc": "dctcp", "tcp": {"ecn": True}, "start": "10ms"}]
    queue = {"discipline": "dualpi2", "ecn_mask": "any_ect"}
    short = run(scenario(queue, flows, rtt="5ms"))
    link = bottleneck(short)
    assert link["utilization"] > 0.99 and link["total_drops_packets"] == 0
    lanes = link["aqm"]["dualpi2"]
    assert lanes["l4s"]["sojourn_mean_ps"] < 1 * MS and lanes["classic"]["dequeued_packets"] == 0
    assert lanes["l4s"]["step_marks"] > 10 * lanes["l4s"]["prob_marks"], "the step does the marking"
    long = run(scenario(queue, flows, rtt="20ms"))
    assert bottleneck(long)["utilization"] < 0.97


def test_the_series_and_summary_report_each_queue_and_the_probabilities():
    r = run(scenario({"discipline": "dualpi2"}, duration="5s"))
    q = r.queue_series
    b = q[q["link"] == "bottleneck"]
    # p_C = p'^2 and p_CL = min(2 p', 1) in every sample (RFC 9332 section 2.1).
    assert np.allclose(b["prob_classic"], b["aqm_control"] ** 2)
    assert np.allclose(b["prob_l4s_coupled"], np.minimum(2 * b["aqm_control"], 1.0))
    assert b["aqm_control"].max() > 0
    assert (b["l4s_queue_packets"] <= b["queue_packets"]).all()
    assert b["l4s_sojourn_s"].max() < b["sojourn_s"].max()
    # Other disciplines have none of DualPI2's columns, and no dualpi2 entry in the summary
    # (their summaries are unchanged byte for byte).
    other = q[q["link"] == "access_fwd_sender"]
    assert other[["l4s_queue_packets", "l4s_sojourn_s", "prob_classic", "prob_l4s_coupled"]].isna().all().all()
    codel = run(scenario({"discipline": "codel"}, duration="1s"))
    assert "dualpi2" not in json.dumps(bottleneck(codel)["aqm"])
    link = bottleneck(r)
    lanes = link["aqm"]["dualpi2"]
    # The link's counters are the two queues' together.
    assert link["aqm"]["ecn_marks"] == lanes["l4s"]["prob_marks"] + lanes["classic"]["prob_marks"]
    assert link["aqm"]["dequeued_packets"] == lanes["l4s"]["dequeued_packets"] + lanes["classic"]["dequeued_packets"]
    assert link["ecn_marks"] == link["aqm"]["ecn_marks"] + link["aqm"]["ce_threshold_marks"]
    assert 0 <= lanes["prob_base"] <= lanes["prob_base_max"] <= 1
