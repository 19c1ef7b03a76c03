"""The contract between Python and the core, checked from both sides.

The JSON Schemas in ``fatpipe/schemas/`` are generated from the core's serde types (the
Rust test ``tests/contract.rs`` fails when the committed files and the types differ). Here:
what Python's normalizer hands the core, what the real core returns and what the test
double returns all validate against them; the results schema requires every key and allows
no other, so a key the core adds, renames or drops fails ``test_real_core_output``.
"""

import copy
import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_core  # noqa: E402

import fatpipe  # noqa: E402
from fatpipe.schemas import results_schema, scenario_schema  # noqa: E402
from fatpipe.scenario import load, read_scenario_file  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
PS_PER_S = 10**12


def validator(schema):
    return jsonschema.Draft202012Validator(schema)


def plain(output):
    """The core's output as JSON values: each column (a numpy-viewable Column) as a list."""
    return {
        key: value if key == "summary" else {name: np.asarray(col).tolist() for name, col in value.items()}
        for key, value in output.items()
    }


def errors(schema, document):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(schema).iter_errors(document)]


# Every feature the normalizer writes: UDP sources, HTTP, RED, impairments of each kind,
# parallel paths, captures, streams, custom topologies with explicit routes.
COVERAGE = {
    "duration": "2s",
    "topology": {
        "bottleneck_rate": "50Mbps", "rtt": "20ms", "queue": {"discipline": "red", "ecn": True},
        "impairments": [
            {"kind": "bernoulli", "link": "bottleneck", "probability": 1e-4},
            {"kind": "gilbert_elliott", "link": "bottleneck_rev", "p_good_to_bad": 0.001, "p_bad_to_good": 0.3},
            {"kind": "outage", "link": "access_fwd_sender", "start": "1s", "duration": "10ms"},
        ],
    },
    "flows": [
        {"name": "bulk", "cc": "cubic", "bytes": "2MB", "streams": 2, "tcp": {"ecn": True, "handshake": True}},
        {"name": "paced", "cc": {"algorithm": "bbr"}, "burst_size": "64KB", "burst_period": "10ms"},
        {"name": "web", "http": {"version": "1.0", "objects": ["20KB"], "requests": 3}},
        {"name": "cbr", "transport": "udp", "udp": {"mode": "cbr", "rate": "5Mbps"}},
        {"name": "burst", "transport": "udp", "udp": {"mode": "burst", "burst_size": "30KB", "count": 1}},
        {"name": "onoff", "transport": "udp", "direction": "reverse",
         "udp": {"mode": "onoff", "rate": "5Mbps", "on_time": "100ms", "off_time": "100ms"}},
    ],
    "output": {"capture": ["sender"]},
}

CUSTOM = {
    "duration": "1s",
    "topology": {
        "shape": "custom",
        "nodes": [{"name": "a", "kind": "host", "txqueuelen": 100}, {"name": "r", "kind": "router"},
                  {"name": "b", "kind": "host"}],
        "links": [{"from": "a", "to": "r", "rate": "100Mbps", "delay": "5ms"},
                  {"from": "r", "to": "b", "rate": "10Mbps", "delay": "5ms",
                   "queue": {"limit_bytes": "100KB", "cell_size": 2048, "limit_cells": 60}}],
        "routes": [{"path": ["a", "r", "b"]}],
        "impairments": [{"kind": "parallel_paths", "link": "r->b", "paths": [
            {"probability": 0.5, "rate": "10Mbps", "delay": "5ms"},
            {"probability": 0.5, "rate": "10Mbps", "delay": "7ms", "limit_packets": 50}]}],
    },
    "flows": [{"src": "a", "dst": "b", "cc": "reno", "tcp": {"receiver_drain_rate": "5Mbps"}}],
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_normalizes_to_the_contract(path):
    assert errors(scenario_schema(), load(path).core) == []


@pytest.mark.parametrize("doc", [COVERAGE, CUSTOM], ids=["dumbbell-every-feature", "custom"])
def test_every_feature_normalizes_to_the_contract(doc):
    loaded = load(doc)
    core = dict(loaded.core, captures=[dict(c, path="x.pcap") for c in loaded.captures])
    assert errors(scenario_schema(), core) == []


def test_the_scenario_schema_refuses_what_the_core_refuses():
    core = load(CUSTOM).core
    bad = copy.deepcopy(core)
    bad["flows"][0]["tcp"]["mss"] = 1448  # the user-format key, not the core's mss_bytes
    assert any("mss" in e for e in errors(scenario_schema(), bad))
    with pytest.raises(ValueError, match="unknown field `mss`"):
        fatpipe.run(bad)


@pytest.fixture(scope="module")
def real_output(tmp_path_factory):
    from fatpipe.runner import import_core

    core = import_core()
    loaded = load(COVERAGE)
    doc = dict(loaded.core, captures=[dict(c, path=str(tmp_path_factory.mktemp("pcap") / "sender.pcap"))
                                      for c in loaded.captures])
    sim = core.Simulation(doc)
    return sim.finish()


def test_real_core_output(real_output):
    output = plain(real_output)
    # The run exercised what the schema describes: both transports, HTTP requests, captures.
    kinds = {f["transport"] for f in output["summary"]["flows"]}
    assert kinds == {"tcp", "udp"} and len(output["requests"]["flow"]) == 3
    assert output["summary"]["captures"][0]["packets_written"] > 0
    assert errors(results_schema(), output) == []


def test_results_schema_catches_a_key_added_renamed_or_dropped(real_output):
    output = plain(real_output)
    added = copy.deepcopy(output)
    added["summary"]["links"][0]["new_counter"] = 1
    renamed = copy.deepcopy(output)
    renamed["summary"]["flows"][0]["bytes_acked"] = renamed["summary"]["flows"][0].pop("bytes_delivered")
    dropped = copy.deepcopy(output)
    del dropped["queue_series"]["departed_bytes"]
    for broken in (added, renamed, dropped):
        assert errors(results_schema(), broken) != []


def test_test_double_output():
    doc = load(Path(REPO / "examples" / "reno-100M-40ms.toml")).core
    doc["duration_ps"] = PS_PER_S
    doc["sample_interval_ps"] = PS_PER_S // 10
    assert errors(results_schema(), fake_core.fake_output(doc)) == []


def test_columns_are_viewed_not_copied(real_output):
    column = real_output["flow_series"]["delivered_bytes"]
    array = np.asarray(column)
    assert array.dtype == np.uint64 and len(array) == len(column) > 0
    assert array.base is not None and not array.flags.writeable  # a view of the core's memory
    assert np.asarray(column).__array_interface__["data"][0] == array.__array_interface__["data"][0]


def test_red_automatic_parameters_come_from_the_core(real_output):
    # ns-2 red.cc: C = 50 Mb/s / (8 x 500 B) = 12,500 packets/s; min_th = max(5, 5 ms x C / 2)
    # = 31.25, max_th = 3 min_th, w_q = 1 - exp(-1 / C).
    link = next(link for link in real_output["summary"]["links"] if link["name"] == "bottleneck")
    assert link["red_min_th_packets"] == pytest.approx(31.25)
    assert link["red_max_th_packets"] == pytest.approx(93.75)
    assert link["red_w_q"] == pytest.approx(1 - np.exp(-1 / 12_500))
    access = next(link for link in real_output["summary"]["links"] if link["name"] == "access_fwd_sender")
    assert access["red_min_th_packets"] is None


def test_examples_read_by_the_test_suite_exist():
    assert len(EXAMPLES) >= 10 and all(read_scenario_file(p) for p in EXAMPLES)


# ---- one owner per default (issue 24) -----------------------------------------------------
# The scenario's tables (fatpipe/scenario/*.py) own every default and its source, and give the
# core every value: the core's types carry none. A default that reappears in a serde type
# (#[serde(default = ...)]) shows in the generated schema as "default": this fails then.
# Absent optional values (an Option's None, an empty list of captures) are "nothing", not a
# default; what may be absent is listed here, each with why.
ABSENT_MEANS_NOTHING = {
    "Scenario.captures": "no packet capture",
    "Scenario.routes": "no explicit route",
    "Scenario.splits": "no parallel paths",
    "LinkSpec.impairments": "no losses",
}


def _schema_defaults(node, where, out):
    if isinstance(node, dict):
        for key, value in (node.get("properties") or {}).items():
            if isinstance(value, dict) and "default" in value:
                out[f"{where}.{key}"] = value["default"]
        for key, value in node.items():
            _schema_defaults(value, where if key != "$defs" else where, out)
    elif isinstance(node, list):
        for value in node:
            _schema_defaults(value, where, out)
    return out


def test_the_core_defines_no_defaults():
    schema = scenario_schema()
    found = _schema_defaults({k: v for k, v in schema.items() if k != "$defs"}, "Scenario", {})
    for name, definition in schema["$defs"].items():
        found.update(_schema_defaults(definition, name, {}))
    values = {k: v for k, v in found.items() if k not in ABSENT_MEANS_NOTHING}
    assert values == {}, (
        "the core's types define defaults (a #[serde(default)]); the scenario's tables own every "
        f"default and fill every value: {values}"
    )


def test_the_cores_tests_read_the_tables_defaults():
    """The core's tests build algorithms' configs from fatpipe/schemas/cc-defaults.json
    (crates/fatpipe-core/src/cc/mod.rs, scenario_defaults): it must be what the tables give.
    Regenerate with FATPIPE_UPDATE_SCHEMAS=1 pytest tests/test_contract.py."""
    import os

    from fatpipe.scenario.congestion import core_defaults

    path = Path(fatpipe.__file__).parent / "schemas" / "cc-defaults.json"
    generated = json.dumps(core_defaults(), indent=2) + "\n"
    if os.environ.get("FATPIPE_UPDATE_SCHEMAS"):
        path.write_text(generated, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == generated, f"{path} is out of date: FATPIPE_UPDATE_SCHEMAS=1 pytest {__file__}"
    # Every algorithm's defaults are a configuration the core accepts.
    for name, cc in core_defaults().items():
        assert errors(scenario_schema()["$defs"]["CcSpec"] | {"$defs": scenario_schema()["$defs"]}, cc) == [], name


def test_the_tables_and_the_core_name_the_same_algorithms():
    """CC_ALGORITHMS (the scenario's tables) and the core's CcSpec list the algorithms on
    each side of the contract: an algorithm added to one only fails here."""
    from fatpipe.scenario.congestion import CC_ALGORITHMS

    core = [o["properties"]["algorithm"]["const"] for o in scenario_schema()["$defs"]["CcSpec"]["oneOf"]]
    assert sorted(core) == sorted(CC_ALGORITHMS)
