"""Scenario validation and normalization (no core needed)."""

import copy
import json
import math
from pathlib import Path

import pytest

from fatpipe import ScenarioError, load_scenario
from fatpipe.scenario import (
    DUMBBELL_LINKS,
    REFERENCE_BEGIN,
    REFERENCE_END,
    REQUIRED,
    SCENARIO,
    Table,
    TableArray,
    Tagged,
    format_reference,
    load,
)

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))

PS_PER_MS = 10**9
PS_PER_S = 10**12

MINIMAL = {
    "duration": "60s",
    "topology": {"bottleneck_rate": "100Mbps", "rtt": "40ms"},
    "flows": [{}],
}


def scenario(**changes):
    """MINIMAL with changes; `topology`, `flow` and `tcp` merge into the nested tables."""
    doc = copy.deepcopy(MINIMAL)
    doc["topology"].update(changes.pop("topology", {}))
    doc["flows"][0].update(changes.pop("flow", {}))
    if "tcp" in changes:
        doc["flows"][0]["tcp"] = changes.pop("tcp")
    doc.update(changes)
    return doc


def error(doc):
    with pytest.raises(ScenarioError) as info:
        load_scenario(doc)
    message = str(info.value)
    assert "\n" not in message, message
    return message


# ---- normalization -------------------------------------------------------------------


def test_minimal_scenario_normalizes_with_documented_defaults():
    core = load_scenario(MINIMAL)
    assert core["name"] == "scenario"
    assert core["seed"] == 1
    assert core["duration_ps"] == 60 * PS_PER_S
    assert core["sample_interval_ps"] == 10 * PS_PER_MS
    assert [n["name"] for n in core["nodes"]] == ["sender", "r1", "r2", "receiver"]
    assert [n["kind"] for n in core["nodes"]] == ["host", "router", "router", "host"]
    assert [link["name"] for link in core["links"]] == [name for name, *_ in DUMBBELL_LINKS]
    flow = core["flows"][0]
    assert flow["name"] == "flow0"
    assert (flow["src"], flow["dst"]) == (0, 3)
    # One connection held to the end of the run (no transfers).
    assert flow["source"] == {"kind": "bulk", "start_ps": 0, "stop_ps": None, "bytes": None, "transfers": None,
                              "transfer_gap_ps": 0}
    assert flow["tcp"] == {
        "mss_bytes": 1448,  # 1500 - 40 - 12 (timestamps on by default)
        "initial_window_segments": 10,
        "rcv_buffer_bytes": 8 * 2**20,
        "snd_buffer_bytes": 8 * 2**20,
        "window_scaling": True,
        "timestamps": True,
        "delayed_ack": True,
        "delayed_ack_timeout_ps": 40 * PS_PER_MS,
        "ack_every_segments": 2,
        "dupack_threshold": 3,
        "newreno_impatient": False,
        "ecn": False,  # Linux tcp_ecn = 2: connections do not ask for ECN
        "accecn": False,  # no Accurate ECN (RFC 9768), as Linux before 6.18
        "recovery": "sack",  # the default profile, linux: net.ipv4.tcp_sack = 1
        "fack": False,
        "dcr_div": None,
        "max_ssthresh_segments": 0,  # Limited Slow Start off
        "initial_ssthresh_segments": None,  # "arbitrarily high" (RFC 5681)
        "receiver_drain_rate_bps": None,  # the application reads at once
        "pacing_gain": None,
        "min_rto_ps": 200 * PS_PER_MS,
        "max_rto_ps": 120 * PS_PER_S,
        "initial_rto_ps": 1 * PS_PER_S,
        "handshake": False,  # a bulk flow starts established
        "slow_start_after_idle": True,  # Linux
        "random_send_delay_ps": 0,  # off, as ns-2's Agent/TCP overhead_ 0
        # The default profile, linux: Linux 6.x as shipped (docs/scenario.md's profiles).
        "stack": "linux",
        "limited_transmit": False,  # by construction in the Linux stack
        "ssthresh_every_timeout": False,  # Linux lowers ssthresh once per loss episode
        "bsd_window": False,  # BSD's window bookkeeping: the RFC stack's BSD profiles only
        "reno_recover_guard": False,  # Linux recovers as NewReno without SACK
        "sack_variant": "rfc6675",  # unused by the Linux stack
        "rto_estimator": "linux",
        "dsack": True,
        "rack": True,
        "tlp": True,
        "frto": True,
        "undo": True,
        "window_reduction": "prr",
        "adaptive_reordering": True,
        "max_reordering_segments": 300,
        "slow_timer_ps": None,  # BSD's coarse timers off: exact timers
        "fast_timer_ps": None,
        "max_send_rate_bps": None,  # the host keeps up with its interface
        # Linux 6.x's per-destination metrics cache: on, without ssthresh (5.6 and later).
        "metrics": {"kernel": "linux", "no_metrics_save": False, "no_ssthresh_metrics_save": True},
    }
    # Linux's default congestion control in Linux's form, with HyStart.
    assert flow["cc"]["algorithm"] == "cubic"
    assert (flow["cc"]["variant"], flow["cc"]["hystart"]) == ("linux", "linux")


def test_the_rfc_profile_normalizes_as_before_profiles():
    # NewReno on the RFC stack, every Linux member at the core's off values: the runs of
    # scenarios written before profiles existed, with profile = "rfc", are byte-identical.
    flow = load_scenario(scenario(tcp={"profile": "rfc"}))["flows"][0]
    assert flow["cc"] == {"algorithm": "reno", "a": 1.0, "b": 0.5, "byte_counting": False, "variant": "rfc", "eighth": False}
    assert isinstance(flow["cc"]["a"], float) and isinstance(flow["cc"]["b"], float)
    tcp = flow["tcp"]
    assert (tcp["stack"], tcp["recovery"], tcp["rto_estimator"], tcp["dsack"]) == ("rfc", "newreno", "rfc6298", False)
    assert not any(tcp[k] for k in ("rack", "tlp", "frto", "undo", "adaptive_reordering", "limited_transmit"))


def test_classic_recoveries_run_on_the_rfc_stack_when_asked_for():
    # (test_presets.py has the whole naming rule.)
    assert load_scenario(scenario(flow={"cc": "tahoe"}, tcp={"profile": "rfc"}))["flows"][0]["tcp"]["stack"] == "rfc"
    assert load_scenario(scenario(flow={"cc": "reno"}))["flows"][0]["tcp"]["stack"] == "linux"
    message = error(scenario(flow={"cc": "tahoe"}))
    assert message.startswith('flows[0].cc: "tahoe" is not allowed with profile = "linux" (the default)'), message


@pytest.mark.parametrize("key, value, profile", [
    ("rack", True, "rfc"), ("window_reduction", "prr", "rfc"), ("limited_transmit", True, "linux"),
])
def test_members_of_the_other_stack_are_refused(key, value, profile):
    message = error(scenario(tcp={"profile": profile, key: value}))
    assert message.startswith(f'flows[0].tcp.{key}: not allowed with profile = "{profile}"'), message


def test_linux_24_profile_members():
    tcp = load_scenario(scenario(tcp={"profile": "linux-2.4"}))["flows"][0]["tcp"]
    assert (tcp["stack"], tcp["rack"], tcp["fack"], tcp["window_reduction"], tcp["frto"]) == (
        "linux", False, True, "rate_halving", False)
    assert tcp["initial_window_segments"] == 2  # Linux 2.4 tcp_v4_init_sock: snd_cwnd = 2 on a fresh connection
    message = error(scenario(tcp={"profile": "linux", "fack": True}))
    assert message.startswith("flows[0].tcp.fack: true is not allowed with rack = true"), message


def test_normalized_scenario_is_json_with_exactly_the_core_keys():
    core = load_scenario(MINIMAL)
    assert json.loads(json.dumps(core)) == core
    assert set(core) == {"name", "seed", "duration_ps", "sample_interval_ps", "nodes", "links", "flows", "splits", "routes"}
    assert set(core["links"][0]) == {
        "name", "from", "to", "rate_bps", "delay_ps", "framing_bytes", "mtu_bytes", "queue", "impairments",
    }
    assert set(core["links"][0]["queue"]) == {"discipline", "limit_packets", "limit_bytes", "cell_bytes", "limit_cells"}
    assert all(link["impairments"] == [] for link in core["links"])
    assert set(core["flows"][0]) == {"name", "src", "dst", "source", "tcp", "cc", "group", "start_jitter_ps"}


def test_dumbbell_links():
    core = load_scenario(scenario(topology={"access_delay": "2ms"}))
    links = {link["name"]: link for link in core["links"]}
    # Access links default to 10x the bottleneck rate.
    for name in ("access_fwd_sender", "access_fwd_receiver", "access_rev_receiver", "access_rev_sender"):
        assert links[name]["rate_bps"] == 1_000_000_000
        assert links[name]["delay_ps"] == 2 * PS_PER_MS
        assert links[name]["queue"] == {"discipline": "droptail", "limit_packets": 1000, "limit_bytes": None, "cell_bytes": None, "limit_cells": None}
    assert links["bottleneck"]["rate_bps"] == links["bottleneck_rev"]["rate_bps"] == 100_000_000
    # rtt/2 - 2 x access_delay = 20 - 4 = 16 ms each way.
    assert links["bottleneck"]["delay_ps"] == links["bottleneck_rev"]["delay_ps"] == 16 * PS_PER_MS
    assert sum(link["delay_ps"] for link in core["links"]) == 40 * PS_PER_MS
    assert [(link["from"], link["to"]) for link in core["links"]] == [(0, 1), (1, 2), (2, 3), (3, 2), (2, 1), (1, 0)]
    for link in core["links"]:
        assert link["mtu_bytes"] == 1500
        assert link["framing_bytes"] == 38


def test_odd_rtt_in_picoseconds_still_sums_to_rtt():
    core = load_scenario(scenario(topology={"rtt": "40000000001ps"}))
    assert sum(link["delay_ps"] for link in core["links"]) == 40_000_000_001


def test_default_bottleneck_queue_is_one_bdp_in_mtu_packets():
    core = load_scenario(MINIMAL)
    bdp_bytes = 100e6 * 0.040 / 8  # 500,000 bytes
    expected = math.ceil(bdp_bytes / 1500)  # 333.3 -> 334
    assert expected == 334
    for name in ("bottleneck", "bottleneck_rev"):
        queue = next(link for link in core["links"] if link["name"] == name)["queue"]
        assert queue == {"discipline": "droptail", "limit_packets": expected, "limit_bytes": None, "cell_bytes": None, "limit_cells": None}


@pytest.mark.parametrize(
    "rate, rtt, mtu, bdp, packets",
    [
        ("1Gbps", "100ms", 1500, 1.0, 8334),  # 12.5 MB / 1500 = 8333.3
        ("44.736Mbps", "68ms", 4352, 1.0, math.ceil(44.736e6 * 0.068 / 8 / 4352)),
        ("1Gbps", "30ms", 9000, 0.5, math.ceil(1e9 * 0.030 / 8 / 9000 * 0.5)),
        ("9600bps", "1ms", 1500, 1.0, 1),  # at least one packet
        ("100Mbps", "40ms", 1500, 0.1, 34),  # 33.3 -> 34, exactly (no float error)
    ],
)
def test_limit_bdp(rate, rtt, mtu, bdp, packets):
    core = load_scenario(scenario(topology={"bottleneck_rate": rate, "rtt": rtt, "mtu": mtu, "queue": {"limit_bdp": bdp}}))
    assert core["links"][1]["queue"]["limit_packets"] == packets


def test_queue_limits_in_packets_and_bytes():
    core = load_scenario(scenario(topology={"queue": {"discipline": "droptail", "limit_packets": 200}}))
    assert core["links"][1]["queue"] == {"discipline": "droptail", "limit_packets": 200, "limit_bytes": None, "cell_bytes": None, "limit_cells": None}
    core = load_scenario(scenario(topology={"queue": {"limit_bytes": "500KB"}, "access_queue": {"limit_packets": 100}}))
    assert core["links"][1]["queue"] == {"discipline": "droptail", "limit_packets": None, "limit_bytes": 500_000, "cell_bytes": None, "limit_cells": None}
    assert core["links"][0]["queue"]["limit_packets"] == 100


def test_access_rate_and_framing():
    core = load_scenario(scenario(topology={"access_rate": "1Gbps", "framing_bytes": 0, "mtu": 9000}))
    assert core["links"][0]["rate_bps"] == 10**9
    assert all(link["framing_bytes"] == 0 and link["mtu_bytes"] == 9000 for link in core["links"])
    assert core["flows"][0]["tcp"]["mss_bytes"] == 8948  # 9000 - 52


def test_mss_default_without_timestamps():
    core = load_scenario(scenario(tcp={"timestamps": False}))
    assert core["flows"][0]["tcp"]["mss_bytes"] == 1460


def test_reverse_flow_and_flow_options():
    doc = scenario(
        flow={"name": "bulk", "direction": "reverse", "start": "1s", "stop": "30s", "bytes": "100MB"},
    )
    flow = load_scenario(doc)["flows"][0]
    assert (flow["src"], flow["dst"]) == (3, 0)
    assert flow["name"] == "bulk"
    assert flow["source"] == {"kind": "bulk", "start_ps": PS_PER_S, "stop_ps": 30 * PS_PER_S, "bytes": 100_000_000,
                              "transfers": None, "transfer_gap_ps": 0}


def test_tcp_options():
    tcp = {
        "mss": "1000B", "initial_window": 2, "rcv_buffer": "64KiB", "snd_buffer": 5209300,
        "window_scaling": False, "timestamps": False, "delayed_ack": False,
        "delayed_ack_timeout": "200ms", "ack_every": 1, "dupack_threshold": 5,
        "min_rto": "1s", "max_rto": "60s", "initial_rto": "3s", "newreno_impatient": True,
        "recovery": "sack", "fack": True, "dcr_div": 2, "max_ssthresh": 100, "pacing_gain": 1.25,
        "handshake": True, "slow_start_after_idle": False, "ecn": True, "random_send_delay": "250us",
        "profile": "rfc", "limited_transmit": True, "rto_estimator": "linux", "dsack": True,
        "fast_timer": "100ms", "max_send_rate": "130Mbps",
    }
    got = load_scenario(scenario(tcp=tcp))["flows"][0]["tcp"]
    assert got == {
        "mss_bytes": 1000, "initial_window_segments": 2, "rcv_buffer_bytes": 65536,
        "snd_buffer_bytes": 5209300, "window_scaling": False, "timestamps": False,
        "delayed_ack": False, "delayed_ack_timeout_ps": 200 * PS_PER_MS, "ack_every_segments": 1,
        "dupack_threshold": 5, "newreno_impatient": True, "min_rto_ps": PS_PER_S, "max_rto_ps": 60 * PS_PER_S,
        "initial_rto_ps": 3 * PS_PER_S, "recovery": "sack", "fack": True, "dcr_div": 2,
        "max_ssthresh_segments": 100, "initial_ssthresh_segments": None, "receiver_drain_rate_bps": None, "pacing_gain": 1.25, "handshake": True,
        "slow_start_after_idle": False, "ecn": True, "accecn": False, "random_send_delay_ps": 250 * 10**6,
        "stack": "rfc", "limited_transmit": True, "ssthresh_every_timeout": False, "bsd_window": False, "reno_recover_guard": False, "sack_variant": "rfc6675", "rto_estimator": "linux", "dsack": True,
        "rack": False, "tlp": False, "frto": False, "undo": False, "window_reduction": "prr",
        "adaptive_reordering": False, "max_reordering_segments": 300,
        "slow_timer_ps": None, "fast_timer_ps": 100 * PS_PER_MS, "max_send_rate_bps": 130_000_000,
        "metrics": None,  # the RFC stack keeps nothing between connections
    }


def test_recovery_must_be_known():
    message = error(scenario(tcp={"recovery": "vegas"}))
    assert message.startswith("flows[0].tcp.recovery: ")
    assert '"tahoe", "reno", "newreno", "sack"' in message


def test_cc_shorthand_and_table():
    assert load_scenario(scenario(flow={"cc": "reno"}))["flows"][0]["cc"]["algorithm"] == "reno"
    cc = load_scenario(scenario(flow={"cc": {"algorithm": "reno", "a": 2, "b": 0.125, "byte_counting": True}}))["flows"][0]["cc"]
    assert cc == {"algorithm": "reno", "a": 2.0, "b": 0.125, "byte_counting": True, "variant": "rfc", "eighth": False}
    # The algorithm defaults to reno inside a table too.
    assert load_scenario(scenario(flow={"cc": {"b": 0.3}}))["flows"][0]["cc"]["b"] == 0.3


def test_names_seed_output():
    core = load_scenario(dict(MINIMAL, name="x", seed=42, output={"sample_interval": "1ms", "plots": False}))
    assert (core["name"], core["seed"], core["sample_interval_ps"]) == ("x", 42, PS_PER_MS)
    loaded = load(dict(MINIMAL, output={"plots": False}))
    assert loaded.plots is False
    assert "plots" not in json.dumps(loaded.core)  # Python-side option: not sent to the core


def test_several_flows_get_default_names():
    doc = copy.deepcopy(MINIMAL)
    doc["flows"] = [{}, {"name": "b"}, {}]
    assert [f["name"] for f in load_scenario(doc)["flows"]] == ["flow0", "b", "flow2"]


def test_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "my-run.toml"
    path.write_text(
        'duration = "1s"\n[topology]\nbottleneck_rate = "10Mbps"\nrtt = "10ms"\n[[flows]]\n',
        encoding="utf-8",
    )
    assert load_scenario(path)["name"] == "my-run"
    assert load_scenario(str(path))["name"] == "my-run"


def test_input_dict_is_not_modified():
    doc = scenario(topology={"queue": {"limit_bdp": 2.0}})
    before = copy.deepcopy(doc)
    load_scenario(doc)
    assert doc == before


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_validate(path):
    core = load_scenario(path)
    assert core["name"] == path.stem


def test_examples_exist():
    assert {p.name for p in EXAMPLES} >= {"reno-100M-40ms.toml", "window-limited-64KB.toml", "lfn-1G-100ms.toml"}


def test_document_002_and_004_examples():
    core = load_scenario(REPO / "examples" / "ansnet-ds3-red.toml")
    bottleneck = core["links"][1]
    assert bottleneck["rate_bps"] == 44_736_000
    assert bottleneck["queue"]["discipline"] == "red"
    # 200 cells of 2 KB hold 66 packets of 4096 + 52 bytes at 3 cells each.
    assert bottleneck["queue"]["limit_packets"] == 200 // 3
    assert core["flows"][0]["tcp"]["mss_bytes"] + 52 == 4148 and -(-4148 // 2048) == 3
    assert (bottleneck["queue"]["min_th_packets"], bottleneck["queue"]["max_th_packets"]) == (33.0, 66.0)
    core = load_scenario(REPO / "examples" / "outage-griddt.toml")
    links = {link["name"]: link for link in core["links"]}
    outage = [{"kind": "outage", "windows_ps": [[10 * PS_PER_S, 10_500 * PS_PER_MS]]}]
    assert links["bottleneck"]["impairments"] == outage == links["bottleneck_rev"]["impairments"]
    assert core["flows"][0]["cc"]["algorithm"] == "griddt" and core["flows"][0]["cc"]["cwnd_decr"] == 8


def test_acceptance_example_values():
    core = load_scenario(REPO / "examples" / "reno-100M-40ms.toml")
    assert core["duration_ps"] == 60 * PS_PER_S
    bottleneck = core["links"][1]
    assert (bottleneck["rate_bps"], bottleneck["delay_ps"]) == (100_000_000, 20 * PS_PER_MS)
    assert bottleneck["queue"]["limit_packets"] == 334


def test_window_limited_example_values():
    core = load_scenario(REPO / "examples" / "window-limited-64KB.toml")
    tcp = core["flows"][0]["tcp"]
    assert tcp["rcv_buffer_bytes"] == 64_000 and tcp["window_scaling"] is False
    # The closed-form check: 64 KB / 70 ms = 7.3 Mb/s.
    assert round(tcp["rcv_buffer_bytes"] * 8 / 0.070 / 1e6, 1) == 7.3


# ---- errors --------------------------------------------------------------------------


def test_unknown_key_lists_allowed_keys():
    message = error(scenario(tcp={"msss": 1000}))
    assert message.startswith("flows[0].tcp.msss: unknown key; allowed keys: mss, initial_window, ")
    assert 'did you mean "mss"?' in message


@pytest.mark.parametrize(
    "doc, start",
    [
        (dict(MINIMAL, colour="red"), "colour: unknown key; allowed keys: name, duration, seed, topology, flows, output"),
        (scenario(topology={"rrt": "40ms"}), "topology.rrt: unknown key; allowed keys: shape, bottleneck_rate, rtt"),
        (scenario(topology={"queue": {"limit": 5}}), "topology.queue.limit: unknown key; allowed keys: discipline, limit_packets"),
        (scenario(flow={"cc": {"c": 1}}), "flows[0].cc.c: unknown key; allowed keys: algorithm, a, b, byte_counting"),
        (dict(MINIMAL, output={"plot": True}), "output.plot: unknown key; allowed keys: sample_interval, plots"),
        (scenario(flow={"speed": 1}), "flows[0].speed: unknown key; allowed keys: name, cc, direction"),
    ],
)
def test_unknown_keys_everywhere(doc, start):
    assert error(doc).startswith(start)


@pytest.mark.parametrize(
    "doc, message",
    [
        ({k: v for k, v in MINIMAL.items() if k != "duration"}, "duration: missing; required"),
        ({k: v for k, v in MINIMAL.items() if k != "topology"}, "topology: missing; required"),
        ({k: v for k, v in MINIMAL.items() if k != "flows"}, "flows: missing; required"),
        (dict(MINIMAL, topology={"rtt": "40ms"}), "topology.bottleneck_rate: missing; required"),
        (dict(MINIMAL, topology={"bottleneck_rate": "1Gbps"}), "topology.rtt: missing; required"),
    ],
)
def test_missing_required(doc, message):
    assert error(doc) == message


def test_unknown_key_is_reported_before_missing_one():
    # "rrt" is a typo of the missing "rtt": say so, rather than "rtt: missing".
    assert error(dict(MINIMAL, topology={"bottleneck_rate": "1Gbps", "rrt": "40ms"})).startswith("topology.rrt: unknown key")


@pytest.mark.parametrize(
    "doc, message",
    [
        (scenario(topology={"bottleneck_rate": "-5Mbps"}),
         'topology.bottleneck_rate: "-5Mbps" is not allowed: a rate must be positive, such as "100Mbps"'),
        (scenario(topology={"bottleneck_rate": 0}),
         'topology.bottleneck_rate: 0 is not allowed: a rate must be positive, such as "100Mbps"'),
        (scenario(topology={"bottleneck_rate": "0bps"}),
         'topology.bottleneck_rate: "0bps" is not allowed: a rate must be positive, such as "100Mbps"'),
        (scenario(topology={"access_rate": "-1Gbps"}),
         'topology.access_rate: "-1Gbps" is not allowed: a rate must be positive, such as "100Mbps"'),
    ],
)
def test_zero_and_negative_rates(doc, message):
    assert error(doc) == message


@pytest.mark.parametrize(
    "doc, start",
    [
        (scenario(topology={"bottleneck_rate": "100 MB/s"}), 'topology.bottleneck_rate: "100 MB/s" is not allowed: rates are in bits per second'),
        (scenario(topology={"bottleneck_rate": "fast"}), 'topology.bottleneck_rate: "fast" is not allowed: expected a rate such as "100Mbps"'),
        (scenario(topology={"rtt": 40}), "topology.rtt: 40 is not allowed: a duration needs a unit"),
        (scenario(topology={"rtt": "40 parsecs"}), 'topology.rtt: "40 parsecs" is not allowed: expected a duration'),
        (scenario(topology={"rtt": "0ms"}), 'topology.rtt: "0ms" is not allowed: must be positive'),
        (scenario(topology={"rtt": "-40ms"}), 'topology.rtt: "-40ms" is not allowed: a duration must not be negative'),
        (dict(MINIMAL, duration="0s"), 'duration: "0s" is not allowed: must be positive'),
        (scenario(tcp={"rcv_buffer": "64Kb"}), 'flows[0].tcp.rcv_buffer: "64Kb" is not allowed: sizes are in bytes'),
        (scenario(flow={"bytes": 0}), "flows[0].bytes: 0 is not allowed: must be positive"),
    ],
)
def test_bad_units(doc, start):
    assert error(doc).startswith(start)


def test_mss_larger_than_mtu_allows():
    assert error(scenario(tcp={"mss": 9000})) == (
        "flows[0].tcp.mss: 9000 bytes is larger than the link MTU 1500 minus 52 bytes of IP/TCP headers (max 1448)"
    )
    assert error(scenario(tcp={"mss": 1449})).endswith("(max 1448)")
    assert error(scenario(tcp={"mss": 1461, "timestamps": False})) == (
        "flows[0].tcp.mss: 1461 bytes is larger than the link MTU 1500 minus 40 bytes of IP/TCP headers (max 1460)"
    )
    assert load_scenario(scenario(tcp={"mss": 1460, "timestamps": False}))["flows"][0]["tcp"]["mss_bytes"] == 1460


@pytest.mark.parametrize(
    "doc, start",
    [
        (scenario(tcp={"initial_window": True}), "flows[0].tcp.initial_window: true is not allowed: expected a whole number"),
        (scenario(tcp={"initial_window": 10.0}), "flows[0].tcp.initial_window: 10.0 is not allowed: expected a whole number"),
        (scenario(tcp={"initial_window": "10"}), 'flows[0].tcp.initial_window: "10" is not allowed: expected a number of segments such as 10, or "rfc3390"'),
        (scenario(tcp={"initial_window": 0}), "flows[0].tcp.initial_window: 0 is not allowed: must be at least 1"),
        (scenario(tcp={"ack_every": 0}), "flows[0].tcp.ack_every: 0 is not allowed: must be at least 1"),
        (scenario(tcp={"dupack_threshold": 0}), "flows[0].tcp.dupack_threshold: 0 is not allowed: must be at least 1"),
        (scenario(tcp={"delayed_ack": 1}), "flows[0].tcp.delayed_ack: 1 is not allowed: expected true or false"),
        (scenario(tcp={"timestamps": "yes"}), 'flows[0].tcp.timestamps: "yes" is not allowed: expected true or false'),
        (scenario(tcp={"mss": True}), "flows[0].tcp.mss: true is not allowed"),
        (scenario(topology={"bottleneck_rate": True}), "topology.bottleneck_rate: true is not allowed"),
        (dict(MINIMAL, seed=True), "seed: true is not allowed: expected a whole number"),
        (dict(MINIMAL, seed=-1), "seed: -1 is not allowed: must be at least 0"),
        (dict(MINIMAL, seed=2**64), "seed: 18446744073709551616 is not allowed: must be at most"),
        (dict(MINIMAL, name=""), 'name: "" is not allowed: expected a non-empty string'),
        (dict(MINIMAL, name="a/b"), 'name: "a/b" is not allowed: a name may not contain'),
        (dict(MINIMAL, name=5), "name: 5 is not allowed"),
        (scenario(flow={"cc": {"a": 0}}), "flows[0].cc.a: 0 is not allowed: expected a number x with 0 < x"),
        (scenario(flow={"cc": {"b": 1}}), "flows[0].cc.b: 1 is not allowed: expected a number x with 0 < x < 1"),
        (scenario(flow={"cc": {"b": 0.0}}), "flows[0].cc.b: 0.0 is not allowed: expected a number x with 0 < x < 1"),
        (scenario(flow={"cc": {"b": "half"}}), 'flows[0].cc.b: "half" is not allowed: expected a number'),
        (scenario(flow={"cc": {"byte_counting": "no"}}), 'flows[0].cc.byte_counting: "no" is not allowed: expected true or false'),
        (scenario(flow={"cc": "turbo"}), 'flows[0].cc: "turbo" is not allowed: expected a preset, one of: "tahoe", "reno"'),
        (scenario(flow={"cc": {"algorithm": "turbo"}}), 'flows[0].cc.algorithm: "turbo" is not allowed: expected one of: "reno"'),
        (scenario(flow={"cc": 5}), "flows[0].cc: 5 is not allowed: expected a table or a name"),
        (scenario(flow={"direction": "up"}), 'flows[0].direction: "up" is not allowed: expected one of: "forward", "reverse"'),
        (scenario(topology={"shape": "ring"}), 'topology.shape: "ring" is not allowed: expected one of: "dumbbell", "two_to_one", "parking_lot", "custom"'),
        (scenario(topology={"queue": {"discipline": "cake"}}), 'topology.queue.discipline: "cake" is not allowed: expected one of: "droptail", "red", "codel", "fq_codel", "pie", "fq_pie", "tbf", "dualpi2"'),
        (scenario(topology={"queue": 300}), "topology.queue: 300 is not allowed: expected a table"),
        (scenario(topology={"queue": {"limit_packets": 0}}), "topology.queue.limit_packets: 0 is not allowed: must be at least 1"),
        (scenario(topology={"queue": {"limit_bdp": 0}}), "topology.queue.limit_bdp: 0 is not allowed"),
        (scenario(topology={"queue": {"limit_bdp": float("nan")}}), "topology.queue.limit_bdp: nan is not allowed"),
        (scenario(topology={"mtu": 40}), "topology.mtu: 40 is not allowed: must be at least 68 bytes"),
        (scenario(topology={"mtu": 70000}), "topology.mtu: 70000 is not allowed: must be at most 65535 bytes"),
        (dict(MINIMAL, topology="dumbbell"), 'topology: "dumbbell" is not allowed: expected a table'),
        (dict(MINIMAL, flows=[]), "flows: [] is not allowed: at least one [[flows]]"),
        (dict(MINIMAL, flows={"name": "x"}), "flows: a table is not allowed: expected an array of tables: write [[flows]]"),
        (dict(MINIMAL, flows=[5]), "flows[0]: 5 is not allowed: expected a table"),
        (dict(MINIMAL, output={"sample_interval": "0s"}), 'output.sample_interval: "0s" is not allowed: must be positive'),
        (dict(MINIMAL, output={"plots": "yes"}), 'output.plots: "yes" is not allowed: expected true or false'),
    ],
)
def test_types_and_ranges(doc, start):
    message = error(doc)
    assert message.startswith(start), message


@pytest.mark.parametrize(
    "doc, message",
    [
        (scenario(topology={"queue": {"limit_packets": 100, "limit_bdp": 2.0}}),
         "topology.queue: limit_packets and limit_bdp are both set; set at most one of limit_packets, limit_bytes, limit_bdp"),
        (scenario(topology={"queue": {"limit_bytes": "1KB"}}),
         "topology.queue.limit_bytes: 1000 bytes is not allowed: must be at least the MTU (1500 bytes) so that one full-size packet fits"),
        (scenario(topology={"access_delay": "15ms"}),
         "topology.access_delay: 15ms is not allowed: the four access links (60ms in all) would take more than the rtt (40ms); "
         "the bottleneck's one-way delay is rtt/2 - 2 x access_delay"),
        (scenario(tcp={"rcv_buffer": 1000}),
         "flows[0].tcp.rcv_buffer: 1000 bytes is not allowed: must hold at least one segment (the MSS, 1448 bytes)"),
        (scenario(tcp={"snd_buffer": "1KB"}),
         "flows[0].tcp.snd_buffer: 1000 bytes is not allowed: must hold at least one segment (the MSS, 1448 bytes)"),
        (scenario(tcp={"min_rto": "200s"}),
         "flows[0].tcp.min_rto: 200s is not allowed: must be at most max_rto (120s)"),
        (scenario(flow={"start": "60s"}),
         "flows[0].start: 60s is not allowed: must be before the end of the run (duration 60s)"),
        (scenario(flow={"start": "10s", "stop": "5s"}),
         "flows[0].stop: 5s is not allowed: must be after start (10s)"),
        (scenario(flow={"start": "10s", "stop": "10s"}),
         "flows[0].stop: 10s is not allowed: must be after start (10s)"),
        (dict(MINIMAL, output={"sample_interval": "2min"}),
         "output.sample_interval: 120s is not allowed: must be at most the duration (60s)"),
    ],
)
def test_cross_field_checks(doc, message):
    assert error(doc) == message


def test_access_delay_may_take_the_whole_rtt():
    core = load_scenario(scenario(topology={"access_delay": "10ms"}))
    assert core["links"][1]["delay_ps"] == 0


def test_duplicate_flow_names():
    doc = copy.deepcopy(MINIMAL)
    doc["flows"] = [{"name": "a"}, {"name": "a"}]
    assert error(doc) == 'flows[1].name: "a" is not allowed: flow names must be unique, and flows[0] is named "a" too'
    doc["flows"] = [{"name": "flow1"}, {}]
    assert error(doc).startswith('flows[1].name: the default name "flow1" is already the name of flows[0]')


def test_error_carries_field_path():
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario(tcp={"mss": 9000}))
    assert info.value.field == "flows[0].tcp.mss"
    assert isinstance(info.value, ValueError)


def test_not_a_path_or_dict():
    with pytest.raises(TypeError, match="a file path or a dict"):
        load_scenario([1, 2])  # type: ignore[arg-type]


# ---- files ---------------------------------------------------------------------------


def test_toml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('duration = "60s"\n[topology\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith("invalid TOML: ")
    assert "line 2" in str(info.value)


def test_json_scenario_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(MINIMAL), encoding="utf-8")
    assert load_scenario(path)["name"] == "s"


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_scenario(tmp_path / "nope.toml")


# ---- the schema and its documentation ------------------------------------------------


def _all_fields(table, prefix=""):
    for f in table.fields:
        path = f"{prefix}.{f.key}" if prefix else f.key
        yield path, f
        kind = f.kind
        if isinstance(kind, TableArray):
            kind = kind.table  # a Table or, for [[topology.impairments]], a Tagged
        if isinstance(kind, Tagged):
            for variant in kind.variants.values():
                yield from _all_fields(variant, path)
        elif isinstance(kind, Table):
            yield from _all_fields(kind, path)


def test_every_field_is_documented_and_every_default_has_a_source():
    for path, f in _all_fields(SCENARIO):
        assert f.doc, path
        assert f.kind.type_doc, path
        if f.default is not REQUIRED:
            # Drop-tail limits that are not the default (UNSET) need no source.
            if f.key.startswith("limit_") and not f.source:
                continue
            assert f.source, f"{path}: default without a source"


def test_reference_mentions_every_key():
    reference = format_reference()
    for path, f in _all_fields(SCENARIO):
        assert f"`{f.key}`" in reference, path


def test_docs_scenario_md_contains_the_generated_reference():
    text = (REPO / "docs" / "scenario.md").read_text(encoding="utf-8")
    block = text[text.index(REFERENCE_BEGIN) + len(REFERENCE_BEGIN): text.index(REFERENCE_END)]
    assert block.strip() == format_reference().strip(), (
        "docs/scenario.md is out of date: run `fatpipe reference --update docs/scenario.md`"
    )
