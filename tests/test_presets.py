"""Presets (document 003's "TCP versions"), RFC 3390's initial window, `fatpipe algorithms`."""

import subprocess
import sys

import pytest

from fatpipe.scenario import PRESETS, ScenarioError, load_scenario, rfc3390_initial_window

BASE = {"duration": "1s", "topology": {"bottleneck_rate": "10Mbps", "rtt": "10ms"}}


def flow(**flow):
    return load_scenario(dict(BASE, flows=[flow]))["flows"][0]


@pytest.mark.parametrize("name, recovery", [("tahoe", "tahoe"), ("reno", "reno"), ("newreno", "newreno"), ("sack", "sack")])
def test_reno_family_presets_pick_their_recovery(name, recovery):
    f = flow(cc=name)
    assert f["tcp"]["recovery"] == recovery
    assert f["cc"]["algorithm"] == PRESETS[name].algorithm


def test_defaults_follow_the_profile_and_tcp_recovery_overrides_the_preset():
    # Linux (the default profile): CUBIC with SACK; the rfc profile: NewReno as before.
    assert (flow()["cc"]["algorithm"], flow()["tcp"]["recovery"]) == ("cubic", "sack")
    assert flow(tcp={"profile": "rfc"})["tcp"]["recovery"] == "newreno"
    assert flow(cc="sack", tcp={"recovery": "newreno"})["tcp"]["recovery"] == "newreno"
    # A table names an algorithm: on Linux reno recovers with SACK (the kernel's reno); on
    # the RFC stack it takes the default preset's recovery, NewReno.
    assert flow(cc={"algorithm": "reno", "b": 0.3})["tcp"]["recovery"] == "sack"
    assert flow(cc={"algorithm": "reno", "b": 0.3}, tcp={"profile": "rfc"})["tcp"]["recovery"] == "newreno"


def test_unknown_preset_names_the_choices():
    with pytest.raises(ScenarioError) as err:
        flow(cc="vegas-turbo")
    message = str(err.value)
    assert message.startswith('flows[0].cc: "vegas-turbo" is not allowed: expected a preset, one of: "tahoe"')


@pytest.mark.parametrize("mss, segments", [(1448, 3), (1460, 3), (536, 4), (2190, 2), (8948, 2)])
def test_rfc3390_initial_window(mss, segments):
    # min(4 MSS, max(2 MSS, 4380 bytes)) / MSS
    assert rfc3390_initial_window(mss) == segments
    assert flow(tcp={"initial_window": "rfc3390"})["tcp"]["initial_window_segments"] == 3


def test_initial_window_rejects_other_words():
    with pytest.raises(ScenarioError) as err:
        flow(tcp={"initial_window": "rfc6928"})
    assert 'flows[0].tcp.initial_window: "rfc6928" is not allowed' in str(err.value)


def test_algorithms_command_lists_presets_algorithms_and_modifiers():
    proc = subprocess.run([sys.executable, "-m", "fatpipe", "algorithms"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for name in PRESETS:
        assert f"| `{name}` |" in proc.stdout
    for modifier in ("recovery", "fack", "dcr_div", "max_ssthresh", "pacing_gain", "initial_window"):
        assert f"| `{modifier}` |" in proc.stdout
    assert "### `reno`" in proc.stdout and "RFC 5681" in proc.stdout


def test_every_preset_runs_end_to_end():
    """Each preset's normalized parameters are accepted by the core and the flow moves data:
    this fails if a Python key and the core's field drift apart."""
    pytest.importorskip("fatpipe._core")
    import fatpipe

    for name, preset in PRESETS.items():
        flow = {"cc": name}
        if preset.algorithm == "nocc":
            # Only the receive window limits NOCC: document 000 set it to the BDP (25 KB here);
            # the default 8 MiB would overload the path, as NOCC is meant to show.
            flow["tcp"] = {"rcv_buffer": "25KB"}
        result = fatpipe.run(
            {
                "duration": "2s",
                "topology": {"bottleneck_rate": "10Mbps", "rtt": "20ms"},
                "flows": [flow],
                "output": {"sample_interval": "100ms", "plots": False},
            }
        )
        flow = result.summary["flows"][0]
        assert flow["algorithm"] == preset.algorithm, name
        # At least half the bottleneck's payload rate over the last second.
        delivered = result.series("delivered_bytes").iloc[:, 0]
        last_second_bps = (delivered.loc[2.0] - delivered.loc[1.0]) * 8
        assert last_second_bps > 0.5 * 10e6 * 1448 / 1538, (name, last_second_bps)
