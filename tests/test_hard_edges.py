"""The hard edges of issue 13, each refused or handled where it used to surprise a user:
resources no check guarded, values accepted where a user is surely wrong, docs that
disagreed with behaviour, numpy scalars, sweeps from standard input, utilization above 1."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fatpipe
from fatpipe import ScenarioError, load_scenario
from fatpipe.scenario import format_reference

REPO = Path(__file__).resolve().parent.parent


def dumbbell(**changes):
    doc = {
        "duration": "2s",
        "topology": {"bottleneck_rate": "100Mbps", "rtt": "40ms"},
        "flows": [{"name": "a"}],
        "output": {},
    }
    for path, value in changes.items():
        *parents, key = path.split(".")
        target = doc
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target.setdefault(p, {})
        target[key] = value
    return doc


def refused(doc):
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc)
    return str(err.value)


# ---- what a run will hold ------------------------------------------------------------


def test_a_picosecond_sample_interval_is_refused_before_the_run():
    # It used to run until the kernel's OOM killer ended it at 24 GB, with no message.
    message = refused(dumbbell(**{"output.sample_interval": "1ps"}))
    assert message.startswith("output.sample_interval: 1ps is not allowed: 2,000,000,000,001 samples of 1 flows")
    assert "over the memory budget (8GiB)" in message and "raise output.memory_budget" in message
    assert "\n" not in message


def test_the_memory_budget_can_be_raised():
    doc = dumbbell(**{"output.sample_interval": "1us"})  # 2 million samples: about 1.5 GB
    assert "memory budget (1GiB)" in refused(dict(doc, output={"sample_interval": "1us", "memory_budget": "1GiB"}))
    assert load_scenario(doc)["sample_interval_ps"] == 10**6  # within the default 8 GiB


def test_a_queue_that_could_not_fit_in_memory_is_refused_naming_its_field():
    message = refused(dumbbell(**{"topology.queue": {"limit_packets": 10**12}}))
    assert message.startswith("topology.queue: a queue of up to 1,000,000,000,000 packets (link 'bottleneck')")
    assert "96 TB" in message
    message = refused(dumbbell(**{"topology.txqueuelen": 10**11}))
    assert message.startswith("topology.txqueuelen: a queue of up to 100,000,000,000 packets")


def test_a_capture_larger_than_its_budget_is_refused_and_can_be_bounded():
    doc = dumbbell(**{"duration": "60s", "topology.bottleneck_rate": "10Gbps", "output.capture": ["bottleneck"]})
    message = refused(doc)
    assert message.startswith("output.capture: 'bottleneck' is not allowed: the captures would write about 7")
    assert "capture_max_packets" in message and "output.capture_budget" in message
    doc["output"]["capture_max_packets"] = 1_000_000
    assert load_scenario(doc)  # 1 million packets of 128 + 16 bytes: 144 MB


# ---- values where a user is surely wrong ---------------------------------------------


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("flows.0.tcp.rcv_buffer", "1TB", "flows[0].tcp.rcv_buffer: \"1TB\" is not allowed: must be at most 1GiB "
         "(1073741824 bytes): RFC 7323 section 2.3 caps a window at 65535 x 2^14 bytes"),
        ("flows.0.tcp.snd_buffer", "4GiB", "flows[0].tcp.snd_buffer: \"4GiB\" is not allowed: must be at most"),
        ("flows.0.tcp.initial_window", 1_000_000_000, "flows[0].tcp.initial_window: 1000000000 is not allowed: "
         "1,000,000,000 segments of 1448 bytes exceed the largest window a receiver can advertise"),
        ("flows.0.bytes", "1.5B", "flows[0].bytes: \"1.5B\" is not allowed: that is 1.5 bytes, and the core "
         "counts whole bytes"),
        ("topology.bottleneck_rate", "0.5bps", "topology.bottleneck_rate: \"0.5bps\" is not allowed: that is 0.5 "
         "bits per second"),
    ],
)
def test_values_a_user_cannot_mean_are_refused(path, value, message):
    assert refused(dumbbell(**{path: value})).startswith(message)


def test_the_largest_window_is_still_allowed():
    core = load_scenario(dumbbell(**{"flows.0.tcp.rcv_buffer": "1GiB", "flows.0.tcp.initial_window": 700_000}))
    assert core["flows"][0]["tcp"]["rcv_buffer_bytes"] == 2**30


def test_a_slow_link_is_never_more_than_fully_used():
    # At 9600 bit/s one 1538-byte frame lasts 1.28 s; the link's busy time counted the whole
    # frame when it started, so a 1 s run showed 128 % utilization.
    doc = dumbbell(**{"duration": "1s", "topology.bottleneck_rate": "9600bps", "topology.access_rate": "100Mbps",
                      "output.plots": False, "output.sample_interval": "100ms"})
    link = next(link for link in fatpipe.run(doc).summary["links"] if link["name"] == "bottleneck")
    assert link["packets_sent"] >= 1
    # Busy from the first frame on (after its 123 us on the 100 Mb/s access link) to the end.
    assert 0.9998 < link["utilization"] <= 1.0


# ---- docs and behaviour agree ------------------------------------------------------------


def test_an_impairment_kind_is_required_and_the_reference_says_so():
    message = refused(dumbbell(**{"topology.impairments": [{"link": "bottleneck", "probability": 0.01}]}))
    assert message == "topology.impairments[0].kind: missing; required"
    reference = format_reference()
    kind_rows = [line for line in reference.splitlines() if line.startswith("| `kind` |")]
    assert kind_rows and all("| **required** |" in row for row in kind_rows), kind_rows[:2]
    assert '| `discipline` | string: `"red"` here | `"droptail"` |' in reference


# ---- the Python API takes numpy scalars ------------------------------------------------


def test_numpy_scalars_are_accepted_in_scenarios_and_as_a_seed():
    doc = dumbbell(**{"duration": "200ms", "topology.bottleneck_rate": np.int64(10_000_000),
                      "flows.0.tcp.initial_window": np.int32(4), "flows.0.tcp.delayed_ack": np.bool_(False),
                      "flows.0.cc": {"algorithm": "reno", "b": np.float64(0.3)}, "output.plots": False})
    core = load_scenario(dumbbell(**{"topology.bottleneck_rate": np.int64(10_000_000)}))
    assert core["links"][1]["rate_bps"] == 10_000_000
    result = fatpipe.run(doc, seed=np.uint64(7))
    assert result.summary["seed"] == 7
    assert result.scenario["flows"][0]["tcp"]["initial_window_segments"] == 4
    assert result.scenario["flows"][0]["cc"]["b"] == 0.3


# ---- sweeps from a script on standard input -----------------------------------------------


def test_a_sweep_from_standard_input_says_why_it_runs_on_threads(tmp_path):
    # A forkserver worker re-imports __main__ from its file; "<stdin>" has none, and every
    # row used to say only "worker processes kept dying".
    script = (
        "import fatpipe\n"
        f"df = fatpipe.sweep({str(REPO / 'examples' / 'reno-100M-40ms.toml')!r}, grid={{'duration': ['200ms', '300ms']}},"
        f" outdir={str(tmp_path / 'sweep')!r}, jobs=2)\n"
        "print(sorted(df['status']))\n"
    )
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['ok', 'ok']"
    assert "running on threads, not processes: worker processes re-import the main script" in done.stderr
    assert "'<stdin>', is not a file" in done.stderr
