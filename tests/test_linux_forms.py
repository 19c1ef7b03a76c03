"""The algorithms' Linux forms as parameters: variant-dependent defaults, parameters only one
form uses, the combinations refused, and a run of each through the core."""

import pytest

from fatpipe.scenario import ScenarioError, load_scenario

BASE = {"duration": "1s", "topology": {"bottleneck_rate": "10Mbps", "rtt": "10ms"}}


def cc(profile="rfc", **params):
    """The normalized [flows.cc] of a flow; the rfc profile by default, whose forms are the
    algorithms' own defaults (the linux profile picks the Linux forms)."""
    flow = {"cc": params, "tcp": {"profile": profile}}
    return load_scenario(dict(BASE, flows=[flow]))["flows"][0]["cc"]


def refused(**params):
    with pytest.raises(ScenarioError) as err:
        cc(**params)
    return str(err.value)


def test_todays_forms_stay_the_algorithms_defaults():
    assert cc(algorithm="cubic")["variant"] == "rfc"
    assert cc(algorithm="cubic")["hystart"] == "off"
    assert cc(algorithm="highspeed")["variant"] == "rfc"
    assert cc(algorithm="bbr")["variant"] == "draft"
    assert cc(algorithm="vegas")["variant"] == "paper"
    assert cc(algorithm="westwood_plus")["variant"] == "paper"


def test_the_linux_profile_picks_the_linux_forms_unless_the_flow_says_otherwise():
    assert (cc("linux", algorithm="cubic")["variant"], cc("linux", algorithm="cubic")["hystart"]) == ("linux", "linux")
    for algorithm in ("highspeed", "bbr", "vegas", "westwood_plus"):
        assert cc("linux", algorithm=algorithm)["variant"] == "linux", algorithm
    assert cc("linux", algorithm="cubic", hystart="off")["hystart"] == "off"
    assert cc("linux", algorithm="vegas", variant="paper")["variant"] == "paper"
    assert cc("linux-2.4", algorithm="cubic")["variant"] == "rfc"


def test_vegas_thresholds_follow_the_variant():
    # Brakmo and Peterson (ns-2) 1, 3, 1; Linux tcp_vegas.c 2, 4, 1.
    paper, linux = cc(algorithm="vegas"), cc(algorithm="vegas", variant="linux")
    assert [paper[k] for k in ("alpha", "beta", "gamma")] == [1.0, 3.0, 1.0]
    assert [linux[k] for k in ("alpha", "beta", "gamma")] == [2.0, 4.0, 1.0]
    assert cc(algorithm="vegas", variant="linux", alpha=3)["alpha"] == 3.0


def test_westwood_plus_linux_counts_segments_and_has_a_clock():
    linux = cc(algorithm="westwood_plus", variant="linux")
    assert (linux["byte_counting"], linux["kernel_hz"]) == (True, 250)
    assert cc(algorithm="westwood_plus")["byte_counting"] is False
    message = refused(algorithm="westwood_plus", variant="linux", byte_counting=False)
    assert message.startswith('flows[0].cc.byte_counting: false is not allowed with variant = "linux"'), message
    message = refused(algorithm="westwood_plus", kernel_hz=100)
    assert message == 'flows[0].cc.kernel_hz: not used with variant = "paper"; only with variant = "linux"'


def test_cubic_hystart_parameters_go_with_linux_hystart():
    linux = cc(algorithm="cubic", variant="linux", hystart="linux", hystart_low_window=8, hystart_ack_delta="1ms")
    assert (linux["hystart_low_window"], linux["hystart_ack_delta_ps"], linux["hystart_detect"]) == (8, 10**9, "both")
    assert cc(algorithm="cubic", hystart="rfc9406")["hystart"] == "rfc9406"
    message = refused(algorithm="cubic", hystart="rfc9406", hystart_detect="delay")
    assert message == 'flows[0].cc.hystart_detect: not used with hystart = "rfc9406"; only with hystart = "linux"'
    assert refused(algorithm="cubic", kernel_hz=1000).startswith("flows[0].cc.kernel_hz: not used with variant = \"rfc\"")
    assert refused(algorithm="cubic", variant="linux", c=0.001).startswith('flows[0].cc.c: 0.001 is not allowed with variant = "linux"')


def test_cubics_fixed_point_rules_are_the_cores_and_name_the_users_flow():
    """CUBIC's Linux fixed-point limits live in the core alone (cc/cubic.rs validate); the
    loader reports the core's refusal against the flow the user wrote, past a flow whose
    streams the normalizer expanded into several."""
    bad = {"cc": {"algorithm": "cubic", "variant": "linux", "beta": 0.99999}}
    with pytest.raises(ScenarioError) as err:
        load_scenario(dict(BASE, flows=[{"streams": 3}, bad]))
    assert str(err.value) == 'flows[1].cc.beta: 0.99999 is not allowed with variant = "linux": must round to 1..1023 / 1024'
    assert err.value.field == "flows[1].cc.beta"


def test_linux_highspeed_keeps_rfc_3649s_table():
    assert cc(algorithm="highspeed", variant="linux")["high_p"] == 1e-7
    message = refused(algorithm="highspeed", variant="linux", high_p=1e-6)
    assert message.startswith('flows[0].cc.high_p: 1e-06 is not allowed with variant = "linux"'), message


@pytest.mark.parametrize(
    "params",
    [
        {"algorithm": "cubic", "variant": "linux", "hystart": "linux"},
        {"algorithm": "cubic", "hystart": "rfc9406"},
        {"algorithm": "highspeed", "variant": "linux"},
        {"algorithm": "bbr", "variant": "linux"},
        {"algorithm": "vegas", "variant": "linux"},
        {"algorithm": "westwood_plus", "variant": "linux"},
    ],
)
def test_each_linux_form_runs_through_the_core(params):
    fatpipe = pytest.importorskip("fatpipe")
    pytest.importorskip("fatpipe._core")
    result = fatpipe.run(dict(BASE, duration="3s", flows=[{"cc": params}]))
    assert result.summary["flows"][0]["bytes_delivered"] > 1_000_000
