"""Documents cross the Python/Rust boundary as Python objects, never as JSON text (issue 24,
section 2): the core reads the normalized scenario from a dict and returns the summary as
dicts and lists (pythonize over the serde types), and a flow without a route comes back as
data (``RouteError``'s attributes), not as a message to take apart."""

import json

import pytest

pytest.importorskip("fatpipe._core")

from fatpipe import load_scenario  # noqa: E402
from fatpipe.runner import import_core  # noqa: E402

CHAIN = {
    "name": "boundary",
    "duration": "0.2s",
    "topology": {
        "shape": "custom",
        "nodes": [{"name": "a", "kind": "host"}, {"name": "m", "kind": "router"}, {"name": "b", "kind": "host"}],
        "links": [
            {"from": "a", "to": "m", "rate": "100Mbps", "delay": "5ms"},
            {"from": "m", "to": "b", "rate": "10Mbps", "delay": "5ms"},
        ],
    },
    "flows": [{"name": "f", "src": "a", "dst": "b", "cc": "cubic"}],
    "output": {"plots": False},
}


def _no_json(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("JSON text crossed the Python/Rust boundary")

    monkeypatch.setattr(json, "dumps", refuse)
    monkeypatch.setattr(json, "loads", refuse)


def test_scenario_in_and_summary_out_as_python_objects(monkeypatch):
    core = import_core()
    doc = load_scenario(CHAIN)
    # Before issue 24 the caller sent json.dumps(doc) and the binding called json.loads on
    # the summary's text: with both refused, only a boundary of objects gets through.
    _no_json(monkeypatch)
    core.check(doc)
    routes = core.flow_routes(doc)
    sim = core.Simulation(doc)
    assert sim.flow_routes() == routes
    sim.run_until(sim.duration_ps)
    summary = sim.finish()["summary"]
    assert type(summary) is dict and type(summary["flows"]) is list and type(summary["flows"][0]) is dict
    flow = summary["flows"][0]
    assert (flow["name"], flow["transport"]) == ("f", "tcp")
    assert flow["bytes_delivered"] > 0 and isinstance(flow["bytes_delivered"], int)
    assert summary["duration_ps"] == doc["duration_ps"] and summary["seed"] == doc["seed"]
    # Absent values are None (not a string "null"), integers stay integers.
    assert flow["requests_completed"] is None


@pytest.mark.parametrize("call", ["Simulation", "check", "flow_routes"])
def test_json_text_is_not_a_scenario(call):
    core = import_core()
    text = json.dumps(load_scenario(CHAIN))
    with pytest.raises(ValueError, match="^scenario: unexpected type: 'str' object is not an instance of 'Mapping'"):
        getattr(core, call)(text)


def test_a_flows_refused_field_comes_back_as_data():
    core = import_core()
    linux_cubic = dict(CHAIN["flows"][0], cc={"algorithm": "cubic", "variant": "linux"})
    doc = load_scenario(dict(CHAIN, flows=[linux_cubic]))
    doc["flows"][0]["cc"]["c"] = 0.0001  # past the loader, which would refuse it the same way
    with pytest.raises(core.FlowFieldError) as err:
        core.check(doc)
    assert isinstance(err.value, ValueError)
    assert (err.value.flow, err.value.field) == (0, ".cc.c")
    assert err.value.problem.startswith('0.0001 is not allowed with variant = "linux"')
    assert str(err.value) == f"flows[0].cc.c: {err.value.problem}"


def test_a_flow_without_a_route_comes_back_as_data():
    core = import_core()
    doc = load_scenario(CHAIN)
    # Drop the way back from b to m: the data gets through, the ACKs find no route.
    back = [i for i, link in enumerate(doc["links"]) if doc["nodes"][link["from"]]["name"] == "b"]
    assert len(back) == 1
    del doc["links"][back[0]]
    for call in (core.check, core.flow_routes):
        with pytest.raises(core.RouteError) as err:
            call(doc)
        assert isinstance(err.value, ValueError)
        assert (err.value.flow, err.value.loops) == (0, False)
        assert err.value.problem == 'no route for the ACKs from "b" to "a"'
        assert str(err.value) == 'flows[0]: no route for the ACKs from "b" to "a"'
