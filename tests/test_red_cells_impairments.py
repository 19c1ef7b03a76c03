"""RED, buffer cells and impairments: normalization for the core and every user error
(no core needed)."""

import copy

import pytest

import fatpipe

from fatpipe import ScenarioError, load_scenario
from fatpipe.scenario import (
    DUMBBELL_LINKS,
    Network,
    attach_impairments,
)

PS_PER_MS = 10**9
PS_PER_S = 10**12

MINIMAL = {
    "duration": "60s",
    "topology": {"bottleneck_rate": "100Mbps", "rtt": "40ms"},
    "flows": [{}],
}
LINK_NAMES = [name for name, *_ in DUMBBELL_LINKS]


def scenario(**topology):
    doc = copy.deepcopy(MINIMAL)
    doc["topology"].update(topology)
    return doc


def links(doc):
    return {link["name"]: link for link in load_scenario(doc)["links"]}


def error(doc):
    with pytest.raises(ScenarioError) as info:
        load_scenario(doc)
    message = str(info.value)
    assert "\n" not in message, message
    return message


def impairments(*entries, **topology):
    return scenario(impairments=list(entries), **topology)


# ---- RED -----------------------------------------------------------------------------

RED_DEFAULTS = {
    "discipline": "red",
    "min_th_packets": None,  # automatic: the core computes ns-2's values from the link rate
    "max_th_packets": None,
    "max_p": 0.1,
    "w_q": None,
    "gentle": True,
    "byte_mode": False,
    "mean_packet_bytes": 500,
    "wait": True,
    "target_delay_ps": 5 * PS_PER_MS,
    "ecn": False,  # RFC 3168 marking off, as ns-2 and Linux by default
    "cell_bytes": None,  # packets, not cells
    "limit_cells": None,
}


def test_red_automatic_parameters_go_to_the_core_as_nulls():
    got = links(scenario(queue={"discipline": "red"}))
    # The hard limit defaults as drop-tail's there: one BDP, 500,000 bytes / 1500 -> 334.
    assert got["bottleneck"]["queue"] == {**RED_DEFAULTS, "limit_packets": 334}
    assert got["bottleneck_rev"]["queue"] == got["bottleneck"]["queue"]
    assert got["access_fwd_sender"]["queue"]["discipline"] == "droptail"


def test_red_on_the_access_queue_takes_the_access_default_limit():
    got = links(scenario(access_queue={"discipline": "red"}))
    assert got["access_fwd_sender"]["queue"] == {**RED_DEFAULTS, "limit_packets": 1000}
    assert got["bottleneck"]["queue"]["discipline"] == "droptail"


def test_red_explicit_values():
    queue = {
        "discipline": "red", "limit_packets": 200, "min_th": 20, "max_th": 60.5, "max_p": 0.05,
        "w_q": 0.002, "gentle": False, "byte_mode": True, "mean_packet_size": "1000B",
        "wait": False, "target_delay": "10ms", "ecn": True,
    }
    assert links(scenario(queue=queue))["bottleneck"]["queue"] == {
        "discipline": "red", "limit_packets": 200, "min_th_packets": 20.0, "max_th_packets": 60.5,
        "max_p": 0.05, "w_q": 0.002, "gentle": False, "byte_mode": True,
        "mean_packet_bytes": 1000, "wait": False, "target_delay_ps": 10 * PS_PER_MS, "ecn": True,
        "cell_bytes": None, "limit_cells": None,
    }


def test_red_limit_bdp():
    queue = links(scenario(queue={"discipline": "red", "limit_bdp": 0.5}))["bottleneck"]["queue"]
    assert queue["limit_packets"] == 167  # 250,000 bytes / 1500 = 166.7


def test_red_min_th_alone_leaves_max_th_to_the_core():
    queue = links(scenario(queue={"discipline": "red", "min_th": 12}))["bottleneck"]["queue"]
    # Derived values are computed once, by the core (3 x min_th, as ns-2's red.cc).
    assert (queue["min_th_packets"], queue["max_th_packets"]) == (12.0, None)
    # min_th = 0 with max_th given starts early drops at an empty queue: allowed.
    queue = links(scenario(queue={"discipline": "red", "min_th": 0, "max_th": 10}))["bottleneck"]["queue"]
    assert (queue["min_th_packets"], queue["max_th_packets"]) == (0.0, 10.0)


def red_in_effect(rate, **queue):
    """The core's RED thresholds and weight for a bottleneck of ``rate`` (a 1 ms run)."""
    doc = scenario(queue={"discipline": "red", **queue})
    doc["duration"] = "1ms"
    doc["output"] = {"sample_interval": "1ms", "plots": False}
    doc["topology"]["bottleneck_rate"] = rate
    link = next(link for link in fatpipe.run(doc).summary["links"] if link["name"] == "bottleneck")
    return link["red_min_th_packets"], link["red_max_th_packets"], link["red_w_q"]


def test_red_automatic_parameters_follow_ns2():
    # ns-2 red.cc: 100 Mb/s in 500-byte packets is C = 25,000 packets/s; min_th = max(5,
    # 5 ms x C / 2) = 62.5, max_th = 3 min_th, w_q = 1 - exp(-1 / C).
    min_th, max_th, w_q = red_in_effect("100Mbps")
    assert (min_th, max_th) == (62.5, 187.5)
    assert w_q == pytest.approx(1 / 25_000, rel=1e-4)
    # A slow link keeps the floor of 5 packets.
    assert red_in_effect("1.5Mbps")[:2] == (5.0, 15.0)
    assert red_in_effect("100Mbps", min_th=12)[:2] == (12.0, 36.0)


@pytest.mark.parametrize(
    "queue, message",
    [
        ({"max_p": 0}, "topology.queue.max_p: 0 is not allowed: expected a number x with 0 < x <= 1"),
        ({"max_p": 1.5}, "topology.queue.max_p: 1.5 is not allowed: expected a number x with 0 < x <= 1"),
        ({"w_q": 0.0}, "topology.queue.w_q: 0.0 is not allowed: expected a number x with 0 < x <= 1"),
        ({"w_q": 2}, "topology.queue.w_q: 2 is not allowed: expected a number x with 0 < x <= 1"),
        ({"min_th": -1}, "topology.queue.min_th: -1 is not allowed: expected a number x with 0 <= x"),
        ({"max_th": 0}, "topology.queue.max_th: 0 is not allowed: expected a number x with 0 < x"),
        ({"max_th": 30},
         "topology.queue.max_th: 30 is not allowed: give min_th too, or neither (both automatic: "
         "min_th = max(5, target_delay x C / 2), max_th = 3 x min_th)"),
        ({"min_th": 10, "max_th": 10}, "topology.queue.max_th: 10 is not allowed: must be greater than min_th (10)"),
        ({"min_th": 20, "max_th": 15.5}, "topology.queue.max_th: 15.5 is not allowed: must be greater than min_th (20)"),
        ({"min_th": 0},
         "topology.queue.min_th: 0 is not allowed: with max_th unset (3 x min_th) min_th must be "
         "positive; give max_th to start early drops at an empty queue"),
        ({"min_th": 334},
         "topology.queue.min_th: 334 is not allowed: must be below the hard limit (334 packets): the "
         "average queue never reaches it, so RED would never drop early"),
        ({"limit_packets": 50, "min_th": 60, "max_th": 100},
         "topology.queue.min_th: 60 is not allowed: must be below the hard limit (50 packets): the "
         "average queue never reaches it, so RED would never drop early"),
        ({"limit_packets": 100, "limit_bdp": 1.0},
         "topology.queue: limit_packets and limit_bdp are both set; set at most one of limit_packets, limit_bdp"),
        ({"limit_packets": 0}, "topology.queue.limit_packets: 0 is not allowed: must be at least 1"),
        ({"mean_packet_size": 0}, "topology.queue.mean_packet_size: 0 is not allowed: must be positive, such as 500"),
        ({"target_delay": "0ms"}, 'topology.queue.target_delay: "0ms" is not allowed: must be positive, such as "5ms"'),
        ({"gentle": "yes"}, 'topology.queue.gentle: "yes" is not allowed: expected true or false'),
        ({"wait": 1}, "topology.queue.wait: 1 is not allowed: expected true or false"),
    ],
)
def test_red_errors(queue, message):
    assert error(scenario(queue={"discipline": "red", **queue})) == message


def test_red_has_no_byte_limit():
    message = error(scenario(queue={"discipline": "red", "limit_bytes": 100}))
    assert message.startswith(
        "topology.queue.limit_bytes: unknown key; allowed keys: discipline, limit_packets, limit_bdp, cell_size, "
        "limit_cells, min_th, max_th, "
    )


def test_red_in_cells_counts_cells_alone():
    # Document 002's r200: RED on the 200 cells of 2 KB of the DS3's transmit side; the
    # thresholds count cells, and cells alone are the limit (no default packet limit).
    queue = {"discipline": "red", "cell_size": "2048B", "limit_cells": 200, "min_th": 100, "max_th": 200}
    got = links(scenario(**DOC002, queue=queue))["bottleneck"]["queue"]
    assert (got["cell_bytes"], got["limit_cells"], got["limit_packets"]) == (2048, 200, None)
    assert (got["min_th_packets"], got["max_th_packets"]) == (100.0, 200.0)
    with_packets = links(scenario(**DOC002, queue={**queue, "limit_packets": 50}))["bottleneck"]["queue"]
    assert (with_packets["limit_packets"], with_packets["limit_cells"]) == (50, 200)


@pytest.mark.parametrize(
    "queue, message",
    [
        ({"cell_size": 2048, "limit_cells": 200, "min_th": 200, "max_th": 300},
         "topology.queue.min_th: 200 is not allowed: must be below the hard limit (200 cells): the "
         "average queue never reaches it, so RED would never drop early"),
        ({"cell_size": 2048},
         "topology.queue.limit_cells: missing; required with cell_size (the queue holds limit_cells "
         "cells of cell_size bytes)"),
        ({"cell_size": 2048, "limit_cells": 2},
         "topology.queue.limit_cells: 2 is not allowed: a full-size packet (MTU 4352 bytes) takes 3 cells "
         "of 2048 bytes, so at least 3 are needed"),
    ],
)
def test_red_cell_errors(queue, message):
    assert error(scenario(**DOC002, queue={"discipline": "red", **queue})) == message


def test_red_automatic_thresholds_in_cells():
    # In cells the automatic thresholds are the packet ones times the cells of a
    # mean_packet_size packet: 500-byte packets take one 512-byte cell, 1000-byte ones two.
    packets = red_in_effect("100Mbps")
    assert red_in_effect("100Mbps", cell_size=512, limit_cells=10_000) == packets
    doubled = red_in_effect("100Mbps", cell_size=512, limit_cells=10_000, mean_packet_size=1000)
    assert doubled[:2] == (2 * 31.25, 2 * 93.75)


def test_red_error_names_the_access_queue():
    assert error(scenario(access_queue={"discipline": "red", "max_p": 0})).startswith(
        "topology.access_queue.max_p: 0 is not allowed"
    )


# ---- drop-tail buffer cells ----------------------------------------------------------

DOC002 = {"bottleneck_rate": "44.736Mbps", "rtt": "68ms", "mtu": 4352}


def test_cells_alone_are_the_only_limit():
    got = links(scenario(**DOC002, queue={"cell_size": 2048, "limit_cells": 60}))
    assert got["bottleneck"]["queue"] == {
        "discipline": "droptail", "limit_packets": None, "limit_bytes": None,
        "cell_bytes": 2048, "limit_cells": 60,
    }
    # The access queues keep their own default.
    assert got["access_fwd_sender"]["queue"]["limit_packets"] == 1000


def test_cells_alone_on_the_access_queue_drop_its_default_limit():
    got = links(scenario(access_queue={"cell_size": "2KiB", "limit_cells": 500}))
    assert got["access_fwd_sender"]["queue"] == {
        "discipline": "droptail", "limit_packets": None, "limit_bytes": None,
        "cell_bytes": 2048, "limit_cells": 500,
    }


@pytest.mark.parametrize(
    "limit, expected",
    [
        ({"limit_packets": 15}, (15, None)),
        ({"limit_bytes": "100KB"}, (None, 100_000)),
        ({"limit_bdp": 1.0}, (88, None)),  # 44.736e6 x 0.068 / 8 / 4352 = 87.4 -> 88
    ],
)
def test_cells_combine_with_an_explicit_limit(limit, expected):
    queue = links(scenario(**DOC002, queue={"cell_size": 2048, "limit_cells": 60, **limit}))["bottleneck"]["queue"]
    assert (queue["limit_packets"], queue["limit_bytes"]) == expected
    assert (queue["cell_bytes"], queue["limit_cells"]) == (2048, 60)


@pytest.mark.parametrize(
    "queue, message",
    [
        ({"cell_size": 2048},
         "topology.queue.limit_cells: missing; required with cell_size (the queue holds limit_cells "
         "cells of cell_size bytes)"),
        ({"limit_cells": 60},
         "topology.queue.cell_size: missing; required with limit_cells (the queue holds limit_cells "
         "cells of cell_size bytes)"),
        ({"cell_size": 2048, "limit_cells": 2},
         "topology.queue.limit_cells: 2 is not allowed: a full-size packet (MTU 4352 bytes) takes 3 "
         "cells of 2048 bytes, so at least 3 are needed"),
        ({"cell_size": 0, "limit_cells": 60}, "topology.queue.cell_size: 0 is not allowed: must be positive"),
        ({"cell_size": 2048, "limit_cells": 0}, "topology.queue.limit_cells: 0 is not allowed: must be at least 1"),
        ({"cell_size": "2Kb", "limit_cells": 60}, 'topology.queue.cell_size: "2Kb" is not allowed: sizes are in bytes'),
    ],
)
def test_cell_errors(queue, message):
    assert error(scenario(**DOC002, queue=queue)).startswith(message)


# ---- impairments ---------------------------------------------------------------------


def test_no_impairments_by_default():
    assert all(link["impairments"] == [] for link in load_scenario(MINIMAL)["links"])


def test_bernoulli():
    got = links(impairments({"link": "bottleneck", "kind": "bernoulli", "probability": 0.01}))
    assert got["bottleneck"]["impairments"] == [{"kind": "bernoulli", "probability": 0.01}]
    assert all(got[name]["impairments"] == [] for name in LINK_NAMES if name != "bottleneck")


def test_gilbert_elliott_defaults_and_explicit_values():
    got = links(impairments(
        {"link": "bottleneck_rev", "kind": "gilbert_elliott", "p_good_to_bad": 0.001, "p_bad_to_good": 0.25},
        {"link": "access_fwd_sender", "kind": "gilbert_elliott", "p_good_to_bad": 0.01,
         "p_bad_to_good": 0.5, "loss_good": 0.001, "loss_bad": 0.5},
    ))
    assert got["bottleneck_rev"]["impairments"] == [{
        "kind": "gilbert_elliott", "p_good_to_bad": 0.001, "p_bad_to_good": 0.25,
        "loss_good": 0.0, "loss_bad": 1.0,  # Gilbert 1960's simple model
    }]
    assert got["access_fwd_sender"]["impairments"] == [{
        "kind": "gilbert_elliott", "p_good_to_bad": 0.01, "p_bad_to_good": 0.5,
        "loss_good": 0.001, "loss_bad": 0.5,
    }]


def test_outage_windows_and_single_window_form():
    got = links(impairments(
        {"link": "bottleneck", "kind": "outage", "windows": [["10s", "10.5s"], ["20s", "23s"]]},
        {"link": "bottleneck_rev", "kind": "outage", "start": "10s", "duration": "500ms"},
    ))
    assert got["bottleneck"]["impairments"] == [{
        "kind": "outage",
        "windows_ps": [[10 * PS_PER_S, 10_500 * PS_PER_MS], [20 * PS_PER_S, 23 * PS_PER_S]],
    }]
    assert got["bottleneck_rev"]["impairments"] == [{"kind": "outage", "windows_ps": [[10 * PS_PER_S, 10_500 * PS_PER_MS]]}]


def test_outage_windows_may_touch_and_fill_the_run():
    got = links(impairments({"link": "bottleneck", "kind": "outage", "windows": [[0, "1s"], ["1s", "60s"]]}))
    assert got["bottleneck"]["impairments"][0]["windows_ps"] == [[0, PS_PER_S], [PS_PER_S, 60 * PS_PER_S]]


def test_several_impairments_on_one_link_keep_their_order():
    got = links(impairments(
        {"link": "bottleneck", "kind": "outage", "start": "1s", "duration": "1s"},
        {"link": "access_rev_sender", "kind": "bernoulli", "probability": 0.5},
        {"link": "bottleneck", "kind": "bernoulli", "probability": 1e-4},
    ))
    assert [imp["kind"] for imp in got["bottleneck"]["impairments"]] == ["outage", "bernoulli"]
    assert got["access_rev_sender"]["impairments"] == [{"kind": "bernoulli", "probability": 0.5}]


def test_attaching_impairments_does_not_depend_on_the_dumbbell():
    # Any shape's network: links are found by name.
    network = Network(
        nodes=[{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
        links=[{"name": "left"}, {"name": "right"}],
        endpoints={"forward": (0, 1)},
        path_mtu_bytes=1500,
    )
    entries = [{"kind": "bernoulli", "link": "right", "probability": 0.5}]
    attach_impairments(network, entries, "topology.impairments", 10 * PS_PER_S, shape="pair")
    assert network.links == [
        {"name": "left", "impairments": []},
        {"name": "right", "impairments": [{"kind": "bernoulli", "probability": 0.5}]},
    ]
    with pytest.raises(ScenarioError) as info:
        attach_impairments(network, [{"kind": "bernoulli", "link": "lefft", "probability": 0.5}],
                           "topology.impairments", 10 * PS_PER_S, shape="pair")
    assert str(info.value) == (
        'topology.impairments[0].link: "lefft" is not allowed: expected a link of the pair: "left", '
        '"right"; did you mean "left"?'
    )


def outage(**keys):
    return impairments({"link": "bottleneck", "kind": "outage", **keys})


@pytest.mark.parametrize(
    "doc, message",
    [
        (impairments({"link": "bottlenek", "kind": "bernoulli", "probability": 0.01}),
         'topology.impairments[0].link: "bottlenek" is not allowed: expected a link of the dumbbell: '
         '"access_fwd_sender", "bottleneck", "access_fwd_receiver", "access_rev_receiver", '
         '"bottleneck_rev", "access_rev_sender"; did you mean "bottleneck"?'),
        (impairments({"kind": "bernoulli", "probability": 0.01}), "topology.impairments[0].link: missing; required"),
        (impairments({"link": 3, "kind": "bernoulli", "probability": 0.01}),
         'topology.impairments[0].link: 3 is not allowed: expected the name of a link, such as "bottleneck"'),
        (impairments({"link": "bottleneck", "probability": 0.01}), "topology.impairments[0].kind: missing; required"),
        (impairments({"link": "bottleneck", "kind": "loss"}),
         'topology.impairments[0].kind: "loss" is not allowed: expected one of: "bernoulli", "gilbert_elliott", "outage"'),
        (impairments({"link": "bottleneck", "kind": "bernoulli"}), "topology.impairments[0].probability: missing; required"),
        (impairments({"link": "bottleneck", "kind": "bernoulli", "probability": 1.5}),
         "topology.impairments[0].probability: 1.5 is not allowed: expected a number x with 0 <= x <= 1"),
        (impairments({"link": "bottleneck", "kind": "bernoulli", "probability": "1%"}),
         'topology.impairments[0].probability: "1%" is not allowed: expected a number such as 0.01'),
        (impairments({"link": "bottleneck", "kind": "bernoulli", "probability": 0.1, "loss_bad": 1}),
         "topology.impairments[0].loss_bad: unknown key; allowed keys: kind, link, probability"),
        (impairments({"link": "bottleneck", "kind": "gilbert_elliott", "p_good_to_bad": 0.1, "p_bad_to_good": 0}),
         "topology.impairments[0].p_bad_to_good: 0 is not allowed: expected a number x with 0 < x <= 1"),
        (impairments({"link": "bottleneck", "kind": "gilbert_elliott", "p_bad_to_good": 0.1}),
         "topology.impairments[0].p_good_to_bad: missing; required"),
        (impairments({"link": "bottleneck", "kind": "gilbert_elliott", "p_good_to_bad": 0.1,
                      "p_bad_to_good": 0.5, "loss_bad": -0.1}),
         "topology.impairments[0].loss_bad: -0.1 is not allowed: expected a number x with 0 <= x <= 1"),
        (scenario(impairments={"link": "bottleneck", "kind": "bernoulli", "probability": 0.1}),
         "topology.impairments: a table is not allowed: expected an array of tables: write "
         "[[topology.impairments]] (double brackets), once per entry"),
        (scenario(impairments=[5]), "topology.impairments[0]: 5 is not allowed: expected a table"),
        (outage(),
         'topology.impairments[0].start: missing; required (give windows = [["10s", "10.5s"], ...], '
         "or one outage as start and duration)"),
        (outage(start="10s"),
         'topology.impairments[0].duration: missing; required with start (give windows = [["10s", '
         '"10.5s"], ...], or one outage as start and duration)'),
        (outage(duration="1s"),
         'topology.impairments[0].start: missing; required with duration (give windows = [["10s", '
         '"10.5s"], ...], or one outage as start and duration)'),
        (outage(windows=[["1s", "2s"]], start="10s"),
         "topology.impairments[0].start: not allowed together with windows: give either windows or "
         "start and duration"),
        (outage(start="10s", duration="0s"), 'topology.impairments[0].duration: "0s" is not allowed: must be positive'),
        (outage(start="59s", duration="2s"),
         "topology.impairments[0].duration: 2s is not allowed: the outage from 59s would end at 61s, "
         "after the end of the run (duration 60s)"),
        (outage(windows=[]),
         'topology.impairments[0].windows: [] is not allowed: at least one [start, end] window, such as [["10s", "10.5s"]]'),
        (outage(windows="10s"),
         'topology.impairments[0].windows: "10s" is not allowed: expected an array of [start, end] '
         'windows, such as [["10s", "10.5s"]]'),
        (outage(windows=[["10s"]]),
         'topology.impairments[0].windows[0]: ["10s"] is not allowed: expected [start, end], two '
         'durations such as ["10s", "10.5s"]'),
        (outage(windows=[["10", "11s"]]),
         'topology.impairments[0].windows[0][0]: "10" is not allowed: a duration needs a unit'),
        (outage(windows=[["10s", "10s"]]),
         "topology.impairments[0].windows[0]: [10s, 10s) is not allowed: the end must be after the start"),
        (outage(windows=[["1s", "3s"], ["2s", "4s"]]),
         "topology.impairments[0].windows[1]: [2s, 4s) is not allowed: windows must be in time order "
         "and not overlap (topology.impairments[0].windows[0] ends at 3s)"),
        (outage(windows=[["5s", "6s"], ["1s", "2s"]]),
         "topology.impairments[0].windows[1]: [1s, 2s) is not allowed: windows must be in time order "
         "and not overlap (topology.impairments[0].windows[0] ends at 6s)"),
        (outage(windows=[["10s", "11s"], ["59s", "61s"]]),
         "topology.impairments[0].windows[1]: [59s, 61s) is not allowed: an outage must end by the end "
         "of the run (duration 60s)"),
    ],
)
def test_impairment_errors(doc, message):
    assert error(doc).startswith(message)


def test_impairment_error_names_the_entry():
    doc = impairments(
        {"link": "bottleneck", "kind": "bernoulli", "probability": 0.01},
        {"link": "bottleneck", "kind": "outage", "windows": [["70s", "71s"]]},
    )
    assert error(doc).startswith("topology.impairments[1].windows[0]: [70s, 71s) is not allowed")
