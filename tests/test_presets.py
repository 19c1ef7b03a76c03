"""Presets (document 003's "TCP versions"), RFC 3390's initial window, `fatpipe algorithms`."""

import subprocess
import sys

import pytest

from fatpipe.scenario import PRESETS, ScenarioError, load_scenario, rfc3390_initial_window
from fatpipe.scenario.ecn_algorithms import ECN_NEEDS

BASE = {"duration": "1s", "topology": {"bottleneck_rate": "10Mbps", "rtt": "10ms"}}


def flow(**flow):
    return load_scenario(dict(BASE, flows=[flow]))["flows"][0]


RFC_FAMILY = ("rfc", "bsd-4.4", "ns2")


@pytest.mark.parametrize("profile", RFC_FAMILY)
@pytest.mark.parametrize("name", ["tahoe", "reno", "newreno", "sack"])
def test_reno_versions_name_their_recovery_on_the_rfc_stack(name, profile):
    # Document 003's TCP versions (ns-2's Agent/TCP, TCP/Reno, TCP/Newreno, TCP/Sack1): on
    # every RFC-stack profile the name says the recovery, and the stack is the profile's.
    f = flow(cc=name, tcp={"profile": profile})
    assert (f["tcp"]["stack"], f["tcp"]["recovery"], f["cc"]["algorithm"]) == ("rfc", name, "reno")


@pytest.mark.parametrize("profile", [None, "linux", "linux-2.4"])
def test_reno_on_linux_is_the_kernels_reno(profile):
    # Issue 22: a Linux user writing reno means Linux's reno (tcp_reno_cong_avoid with the
    # Linux stack's SACK recovery). Before, with no profile the flow moved to the RFC stack
    # with classic Reno recovery, and with profile = "linux" it was refused.
    tcp = {"profile": profile} if profile else {}
    for cc in ("reno", "sack", {"algorithm": "reno", "b": 0.3}):
        f = flow(cc=cc, tcp=tcp)
        assert (f["tcp"]["stack"], f["tcp"]["recovery"], f["cc"]["algorithm"]) == ("linux", "sack", "reno"), cc
    # newreno is Reno without SACK, on the Linux stack too.
    assert flow(cc="newreno", tcp=tcp)["tcp"][("recovery")] == "newreno"


def test_no_name_moves_a_flow_to_another_stack():
    # Tahoe and classic Reno recovery live on the RFC stack only: asked for on Linux (the
    # default profile included) they are refused, saying what to write; never moved.
    message = error(cc="tahoe")
    assert message == ('flows[0].cc: "tahoe" is not allowed with profile = "linux" (the default): Tahoe recovery '
                       'runs on the RFC stack: set [flows.tcp] profile = "rfc" (or "bsd-4.3-reno", "bsd-4.4", "ns2"); on Linux '
                       'write "reno" (with SACK) or "newreno" (without SACK)'), message
    for recovery, what in (("reno", "classic Reno"), ("tahoe", "Tahoe")):
        message = error(tcp={"profile": "linux-2.4", "recovery": recovery})
        assert message.startswith(
            f'flows[0].tcp.recovery: "{recovery}" is not allowed with profile = "linux-2.4": {what} recovery runs '
            'on the RFC stack: set profile = "rfc"'), message
    # With the profile named, classic Reno is asked for by name.
    f = flow(cc="sack", tcp={"profile": "rfc", "recovery": "reno"})
    assert (f["tcp"]["stack"], f["tcp"]["recovery"]) == ("rfc", "reno")


def test_a_reno_table_on_the_rfc_stack_must_name_its_recovery():
    # A table names the algorithm only; on the RFC stack four Reno recoveries exist, so which
    # one is asked (before, NewReno was taken silently).
    message = error(cc={"algorithm": "reno", "b": 0.3}, tcp={"profile": "ns2"})
    assert message.startswith('flows[0].tcp.recovery: missing; required with [flows.cc] algorithm = "reno" and '
                              'profile = "ns2"'), message
    f = flow(cc={"algorithm": "reno", "b": 0.3}, tcp={"profile": "rfc", "recovery": "newreno"})
    assert (f["tcp"]["recovery"], f["cc"]["b"]) == ("newreno", 0.3)
    # Another algorithm's table recovers with SACK there, as its name does.
    assert flow(cc={"algorithm": "cubic"}, tcp={"profile": "rfc"})["tcp"]["recovery"] == "sack"


def test_defaults_follow_the_profile_and_tcp_recovery_overrides_the_preset():
    # Linux (the default profile): CUBIC with SACK; the rfc profile: NewReno as before.
    assert (flow()["cc"]["algorithm"], flow()["tcp"]["recovery"]) == ("cubic", "sack")
    assert flow(tcp={"profile": "rfc"})["tcp"]["recovery"] == "newreno"
    assert flow(cc="sack", tcp={"recovery": "newreno"})["tcp"]["recovery"] == "newreno"


def error(**f):
    with pytest.raises(ScenarioError) as err:
        flow(**f)
    return str(err.value)


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


def test_the_presets_table_says_which_stack_refuses_each():
    """The table's two recovery columns say "not allowed" exactly where loading the preset on
    that stack is refused (DCTCP and Prague, for one, run on the Linux stack only)."""
    from fatpipe.scenario.congestion import format_presets

    table = {line.split(" | ")[0][3:-1]: line.split(" | ") for line in format_presets().splitlines() if line.startswith("| `")}
    for name, preset in PRESETS.items():
        tcp = {key: True for key, _ in ECN_NEEDS.get(preset.algorithm, ())}
        for profile, column in (("rfc", 2), ("linux", 3)):
            try:
                flow(cc=name, tcp=dict(tcp, profile=profile))
                refused = False
            except ScenarioError:
                refused = True
            assert table[name][column].startswith("not allowed") == refused, (name, profile, table[name][column])


def test_every_preset_runs_end_to_end():
    """Each preset's normalized parameters are accepted by the core and the flow moves data:
    this fails if a Python key and the core's field drift apart."""
    pytest.importorskip("fatpipe._core")
    import fatpipe

    for name, preset in PRESETS.items():
        flow = {"cc": name}
        if preset.linux_recovery is None:  # Tahoe: the RFC stack only
            flow["tcp"] = {"profile": "rfc"}
        if preset.algorithm == "nocc":
            # Only the receive window limits NOCC: document 000 set it to the BDP (25 KB here);
            # the default 8 MiB would overload the path, as NOCC is meant to show.
            flow["tcp"] = {"rcv_buffer": "25KB"}
        if preset.algorithm in ECN_NEEDS:  # DCTCP, Prague: the ECN settings they need
            flow["tcp"] = {key: True for key, _ in ECN_NEEDS[preset.algorithm]}
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
        if preset.algorithm == "lp":
            # TCP-LP alone sits near one segment on this path, as the kernel running tcp_lp.c's
            # rules does (docs/validation.md): it moves data, not half the link.
            assert last_second_bps > 0, (name, last_second_bps)
            continue
        assert last_second_bps > 0.5 * 10e6 * 1448 / 1538, (name, last_second_bps)
