"""UDP flows (issue 4): the [flows.udp] schema, its errors, and runs end to end, among them
document 000's single minimal congestion event (E0.10, examples/udp-congestion-event.toml)."""

import math
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fatpipe.scenario import ScenarioError, load_scenario, read_scenario_file

PATH = {"bottleneck_rate": "100Mbps", "rtt": "40ms"}
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "udp-congestion-event.toml"
PS_PER_MS = 10**9


def udp_flow(**udp):
    return {"transport": "udp", "udp": udp}


def flow(topology=PATH, **keys):
    return load_scenario({"duration": "2s", "topology": topology, "flows": [keys]})["flows"][0]


# ---- schema ---------------------------------------------------------------------------


def test_each_mode_makes_its_core_source_without_tcp_keys():
    cbr = flow(start="1s", stop="1.5s", **udp_flow(mode="cbr", rate="50Mbps"))
    assert cbr == {
        "name": "flow0", "src": 0, "dst": 3,
        "source": {"kind": "udp_cbr", "start_ps": 10**12, "stop_ps": 15 * 10**11,
                   "rate_bps": 50_000_000, "payload_bytes": 1472},
        "start_jitter_ps": 0,
    }
    burst = flow(**udp_flow(mode="burst", burst_size="32KB", repeats=50, burst_period="3s"))["source"]
    assert burst == {
        "kind": "udp_burst", "start_ps": 0, "stop_ps": None, "burst_bytes": 32_000, "repeats": 50,
        "period_ps": 3 * 10**12, "count": None, "rate_bps": None, "payload_bytes": 1472,
    }
    onoff = flow(**udp_flow(mode="onoff", rate="1Gbps", on_time="100ms", off_time="900ms",
                            payload_size="1000B"))["source"]
    assert onoff == {
        "kind": "udp_onoff", "start_ps": 0, "stop_ps": None, "rate_bps": 10**9,
        "on_ps": 100 * PS_PER_MS, "off_ps": 900 * PS_PER_MS, "payload_bytes": 1000,
    }


def test_payload_defaults_to_the_mtu_less_28_bytes():
    jumbo = dict(PATH, mtu=9000)
    assert flow(jumbo, **udp_flow(mode="cbr", rate="1Mbps"))["source"]["payload_bytes"] == 8972


def test_a_single_burst_needs_no_period():
    source = flow(**udp_flow(mode="burst", burst_size="64KB", count=1))["source"]
    assert (source["count"], source["period_ps"]) == (1, None)


@pytest.mark.parametrize(
    "keys, message",
    [
        (dict(udp_flow(mode="cbr", rate="1Mbps"), cc="reno"),
         'flows[0].cc: not allowed with transport = "udp"'),
        (dict(udp_flow(mode="cbr", rate="1Mbps"), tcp={"mss": 1000}),
         'flows[0].tcp: not allowed with transport = "udp"'),
        (dict(udp_flow(mode="cbr", rate="1Mbps"), bytes="1MB"),
         'flows[0].bytes: not allowed with transport = "udp"'),
        # Even a value equal to the default: nothing the user wrote is ignored.
        (dict(udp_flow(mode="cbr", rate="1Mbps"), burst_carry_over=False),
         'flows[0].burst_carry_over: not allowed with transport = "udp"'),
        ({"transport": "udp"}, 'flows[0].udp: missing; required with transport = "udp"'),
        ({"udp": {"mode": "cbr", "rate": "1Mbps"}}, 'flows[0].udp: not allowed: [flows.udp] needs transport = "udp"'),
        (udp_flow(rate="1Mbps"), "flows[0].udp.mode: missing; required"),
        (udp_flow(mode="cbr"), "flows[0].udp.rate: missing; required"),
        (udp_flow(mode="poisson"), 'flows[0].udp.mode: "poisson" is not allowed: expected one of: "cbr", "burst", "onoff"'),
        (udp_flow(mode="cbr", rate="1Mbps", on_time="1s"), "flows[0].udp.on_time: unknown key"),
        (udp_flow(mode="burst", burst_size="64KB"), "flows[0].udp.burst_period: missing; required unless count = 1"),
        (udp_flow(mode="burst", burst_size="64KB", count=2), "flows[0].udp.burst_period: missing; required unless count = 1"),
        (udp_flow(mode="burst", burst_size="64KB", count=0), "flows[0].udp.count: 0 is not allowed: must be at least 1"),
        (udp_flow(mode="burst", burst_size="64KB", count=1, repeats=0), "flows[0].udp.repeats: 0 is not allowed"),
        (udp_flow(mode="onoff", rate="1Mbps", on_time="0s", off_time="1s"), "flows[0].udp.on_time"),
        (udp_flow(mode="cbr", rate="1Mbps", payload_size="1473B"),
         "flows[0].udp.payload_size: 1473 bytes is larger than the link MTU 1500 minus 28 bytes"),
        (udp_flow(mode="cbr", rate="0bps"), "flows[0].udp.rate"),
        (dict(udp_flow(mode="cbr", rate="1Mbps"), start="1s", stop="1s"), "flows[0].stop: 1s is not allowed: must be after start"),
    ],
)
def test_udp_errors_name_the_field(keys, message):
    with pytest.raises(ScenarioError) as err:
        flow(**keys)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(message), text


def test_a_udp_flow_needs_no_route_back():
    topology = {
        "shape": "custom",
        "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
        "links": [{"name": "ab", "from": "a", "to": "b", "rate": "1Gbps", "delay": "1ms"}],
    }
    got = flow(topology, src="a", dst="b", **udp_flow(mode="cbr", rate="1Mbps"))
    assert (got["src"], got["dst"]) == (0, 1)


# ---- runs -----------------------------------------------------------------------------


def run(doc):
    pytest.importorskip("fatpipe._core")
    import fatpipe

    return fatpipe.run(dict(doc, output={"plots": False, "sample_interval": "10ms"}))


def test_cbr_end_to_end_rate_and_tables():
    result = run({
        "duration": "5s", "topology": dict(PATH, pairs=2),
        "flows": [{"name": "tcp"}, dict(udp_flow(mode="cbr", rate="20Mbps"), name="cbr", pair=1)],
    })
    summary = {f["name"]: f for f in result.summary["flows"]}
    cbr = summary["cbr"]
    assert (cbr["transport"], summary["tcp"]["transport"]) == ("udp", "tcp")
    assert cbr["datagrams_sent"] == cbr["datagrams_received"] + cbr["datagrams_lost"] + cbr["datagrams_in_flight_at_end"]
    # Sent at the configured payload rate, within 1 %.
    assert abs(cbr["bytes_sent"] * 8 / 5 / 20e6 - 1) < 0.01, cbr
    series = result.flow_series[result.flow_series["flow"] == "cbr"]
    later = series[series["time_s"] >= 1]
    assert abs(later["send_rate_bps"].mean() / 20e6 - 1) < 0.01
    # No window for UDP: NaN, not 0; the TCP flow keeps its numbers.
    assert series[["cwnd_segments", "cwnd_bytes", "ssthresh_segments", "srtt_s"]].isna().all().all()
    tcp_rows = result.flow_series[result.flow_series["flow"] == "tcp"]
    assert tcp_rows["cwnd_segments"].notna().all()
    flows = result.flows.set_index("name")
    assert math.isnan(flows.loc["cbr", "fast_retransmits"]) and math.isnan(flows.loc["tcp", "datagrams_sent"])
    assert cbr["goodput_bps"] > 0


def test_udp_ignores_loss():
    lossy_path = dict(PATH, impairments=[{"kind": "bernoulli", "link": "bottleneck", "probability": 0.05}])
    flows = [udp_flow(mode="onoff", rate="30Mbps", on_time="200ms", off_time="300ms")]
    clean = run({"duration": "3s", "topology": PATH, "flows": flows}).summary["flows"][0]
    lossy = run({"duration": "3s", "topology": lossy_path, "flows": flows}).summary["flows"][0]
    assert lossy["datagrams_sent"] == clean["datagrams_sent"]
    assert clean["datagrams_lost"] == 0 and lossy["datagrams_lost"] > 0
    # 3 s = 6 on-periods of 200 ms at 30 Mb/s: 510 datagrams each (200 ms x 30 Mb/s / 11,776
    # bits = 509.5, the first at the period's start), and the 7th period's first datagram at
    # 3 s, the last instant of the run.
    assert clean["datagrams_sent"] == 6 * 510 + 1


def example(burst_size=None):
    doc = read_scenario_file(EXAMPLE)
    if burst_size is not None:
        doc["flows"][1]["udp"]["burst_size"] = burst_size
    return doc


def test_e0_10_one_udp_burst_is_one_loss_event_after_the_burst_and_none_before():
    result = run(example())
    tcp = result.summary["flows"][0]
    udp = result.summary["flows"][1]
    assert udp["bytes_sent"] == 3283 * 1472 and udp["datagrams_lost"] > 0
    assert tcp["fast_retransmits"] == 1 and tcp["timeouts"] == 0, tcp
    assert 0 < tcp["segments_retransmitted"] <= 10, tcp
    # ssthresh is unset until the flow's first loss: unset through the burst at 5.5 s, set
    # within the next second.
    series = result.flow_series[result.flow_series["flow"] == "tcp"].set_index("time_s")
    assert series.loc[:5.5, "ssthresh_segments"].isna().all()
    assert series.loc[6.5:, "ssthresh_segments"].notna().all()
    # A 3 % smaller burst fits the free queue: no loss at all.
    small = run(example(f"{3263 * 97 // 100 * 1472}B")).summary["flows"]
    assert small[0]["segments_retransmitted"] == 0 and small[1]["datagrams_lost"] == 0


def test_cli_summary_shows_lost_datagrams(tmp_path):
    pytest.importorskip("fatpipe._core")
    proc = subprocess.run(
        [sys.executable, "-m", "fatpipe", "run", str(EXAMPLE), "-o", str(tmp_path), "--no-plots"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()

    def cells(prefix):
        return re.split(r"\s{2,}", next(line for line in lines if line.startswith(prefix)).strip())

    header = cells("flow ")
    column = header.index("lost datagrams")
    assert cells("tcp ")[column] == "-"
    lost = json.loads((tmp_path / "summary.json").read_text())["flows"][1]["datagrams_lost"]
    assert lost > 0 and cells("udp-burst ")[column] == str(lost)
