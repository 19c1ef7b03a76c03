"""Issue 28 acceptance 4: an ECN congestion control on a path whose queues never mark is run,
as asked, with one warning line saying what will happen (fatpipe.ecn_paths)."""

import warnings

import pytest

from fatpipe.ecn_paths import EcnPathWarning, can_mark, ecn_warnings
from fatpipe.scenario import load_scenario

DCTCP = {"cc": "dctcp", "tcp": {"ecn": True}}


def doc(queue, flows=(DCTCP,)):
    return {"duration": "1s", "topology": {"bottleneck_rate": "100Mbps", "rtt": "20ms", "queue": queue},
            "flows": list(flows), "output": {"plots": False}}


@pytest.mark.parametrize("queue, marks", [
    ({}, False),
    ({"mark_threshold": 20}, True),
    ({"discipline": "red"}, False),
    ({"discipline": "red", "ecn": True}, True),
    ({"discipline": "codel"}, False),  # Linux sch_codel: ecn off by default
    ({"discipline": "fq_codel"}, True),  # Linux sch_fq_codel: ecn on by default
    ({"discipline": "pie", "ecn": True}, True),
    ({"discipline": "fq_pie"}, False),
    ({"discipline": "dualpi2"}, True),
])
def test_which_queues_can_mark(queue, marks):
    scenario = load_scenario(doc(queue))
    bottleneck = next(link for link in scenario["links"] if "bottleneck" in link["name"])
    assert can_mark(bottleneck["queue"]) is marks


def test_dctcp_on_a_dropping_path_is_run_and_warned_of_once():
    pytest.importorskip("fatpipe._core")
    import fatpipe

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = fatpipe.run(doc({}, flows=(DCTCP, {"cc": "cubic"})))
    lines = [str(w.message) for w in said if issubclass(w.category, EcnPathWarning)]
    assert lines == ['flow "flow0": cc "dctcp" reacts to ECN marks, and no queue on its path marks (RED with '
                     "ecn = true, drop-tail's mark_threshold, CoDel, FQ-CoDel, PIE or FQ-PIE with ecn = true, "
                     "DualPI2): it will see only drops and halve its window on each, as Reno does"], lines
    assert [w for w in result.warnings if w["key"] == "cc"] == [{"flow": "flow0", "key": "cc", "message": lines[0]}]
    # It ran: DCTCP moved data, and no segment was ever marked.
    flow = result.summary["flows"][0]
    assert flow["bytes_delivered"] > 0 and flow["ecn_echoes"] == 0


def test_a_marking_queue_on_the_path_silences_it():
    scenario = load_scenario(doc({"mark_threshold": 20}))
    routes = [([i for i, _ in enumerate(scenario["links"])], [])]
    assert ecn_warnings(scenario, routes) == []
    # The same flow with every link non-marking is warned of.
    plain = load_scenario(doc({}))
    assert len(ecn_warnings(plain, [([i for i, _ in enumerate(plain["links"])], [])])) == 1
