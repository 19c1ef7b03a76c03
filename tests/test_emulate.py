"""Issue 11, acceptance 1 and 3: `fatpipe emulate` with real Linux TCP over fatpipe's own
links. Each real-time run lasts at most 8 s. A run that did not keep up with real time is
rerun (realtime_tolerances.until_kept_up); when none of the attempts kept up, each test
asserts only what holds however late the relay was, as it says at that point.

- one cubic flow over 100 Mb/s x 40 ms with a 1-BDP drop-tail queue fills the bottleneck
  (goodput within 5 % of its payload capacity), with TCP_INFO series, and the kernel
  confirms by getsockopt that it ran cubic;
- NetSpec burst mode: the offered load, and failed burst cycles as their definition bounds
  them (source/burst.rs);
- an outage drops exactly the packets that enter the link during it, read from captures;
- `fatpipe report` renders the emulated run as it renders a simulated one;
- `fatpipe compare` of the simulated and emulated runs;
- the emulator takes the scenario as a dict and returns its document as Python objects
  (no JSON text), and that document is what `emulation-results.schema.json` allows.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import dpkt
import jsonschema
import numpy as np
import pytest

import fatpipe
from emulate_helpers import cli, require_root
from fatpipe.emulate import emulate
from fatpipe.plots import PLOTS
from fatpipe.result import Result
from fatpipe.runner import import_core
from fatpipe.schemas import emulation_schema
from realtime_tolerances import MISSED_PERIOD_FRACTION, carried_bounds, until_kept_up

CUBIC = """\
name = "cubic-100M-40ms"
duration = "8s"
[topology]
shape = "dumbbell"
bottleneck_rate = "100Mbps"
rtt = "40ms"
[topology.queue]
discipline = "droptail"
limit_bdp = 1.0
[[flows]]
name = "cubic"
cc = "cubic"
[output]
sample_interval = "50ms"
capture = ["sender"]
capture_max_packets = 2000
"""


def kept_up(summary: dict) -> bool:
    return summary["emulation"]["kept_up"]


@pytest.fixture(scope="module")
def cubic_runs(tmp_path_factory):
    """The cubic scenario emulated (through the CLI, until a run keeps up with real time)
    and simulated."""
    require_root()
    base = tmp_path_factory.mktemp("cubic")
    toml = base / "cubic.toml"
    toml.write_text(CUBIC)

    def run():
        proc = cli("emulate", toml, "-o", base / "emulated", "--overwrite")
        assert proc.returncode == 0, proc.stderr
        return proc

    proc = until_kept_up(run, lambda _: kept_up(json.loads((base / "emulated" / "summary.json").read_text())))
    sim = cli("run", toml, "-o", base / "simulated", "--quiet")
    assert sim.returncode == 0, sim.stderr
    return base / "simulated", base / "emulated", proc


def test_cubic_fills_the_bottleneck_with_tcp_info_series(cubic_runs):
    _, emulated, proc = cubic_runs
    result = Result.read(emulated)
    flow = result.summary["flows"][0]
    # Payload capacity: 100 Mb/s x 1448 / (1448 + 52 header + 38 framing bytes) = 94.15 Mb/s.
    capacity = 100e6 * 1448 / (1448 + 52 + 38)
    # Never above it, however late the relay: the links' state is computed at scheduled times.
    assert 0 < flow["goodput_bps"] <= capacity, flow["goodput_bps"] / 1e6
    assert flow["emulation"]["congestion_control"] == "cubic", "getsockopt(TCP_CONGESTION)"
    assert flow["algorithm"] == "cubic"
    bottleneck = next(link for link in result.summary["links"] if link["name"] == "bottleneck")
    # TCP_INFO every 50 ms: 0, 0.05, ..., 8 s (the sampler's schedule, late or not).
    series = result.flow_series
    assert len(series) == 161
    for column in ("rttvar_s", "rto_s", "retransmitted_segments", "timeouts", "lost_segments", "delivery_rate_bps",
                   "pacing_rate_bps", "bytes_acked", "written_bytes", "read_bytes"):
        assert column in series.columns, column
    late = series[series["time_s"] >= 2.0]
    # A late release only delays a packet: no RTT sample below the path's 40 ms.
    assert (late["srtt_s"] >= 0.040).all()
    # Linux's RTO: srtt + max(4 rttvar, 200 ms), in 4 ms jiffies, never below its 200 ms floor.
    assert (late["rto_s"] >= 0.2 + late["srtt_s"] - 0.004).all()
    assert series["timeouts"].iloc[-1] == flow["timeouts"]
    assert (np.diff(series["bytes_acked"].to_numpy()) >= 0).all()
    # In-order bytes delivered (TCP_INFO bytes_received) end at the summary's count.
    assert series["delivered_bytes"].iloc[-1] == flow["bytes_delivered"]
    # Bytes read are counted just before the receiver's last TCP_INFO: never more than arrived.
    assert flow["bytes_sent"] >= flow["bytes_delivered"] >= flow["bytes_read"] > 0
    assert flow["segments_retransmitted"] == series["retransmitted_segments"].iloc[-1]
    # Every loss in the emulated network was counted by the relay, where it happened.
    assert flow["data_packets_lost"] == bottleneck["total_drops_packets"]
    # Fields a real stack cannot give are absent, never zero.
    for key in ("fast_retransmits", "dupacks_received", "slow_start_end_ps", "recovered_ps", "local_congestion_events"):
        assert key not in flow
    timing = result.summary["emulation"]["release_lateness"]
    assert timing["median_ps"] <= timing["p99_ps"] <= timing["max_ps"]
    assert "release lateness: median" in proc.stdout
    if not result.summary["emulation"]["kept_up"]:
        # No run kept up: what timing decides (goodput, queueing delay) says nothing here.
        assert "did not keep up" in proc.stderr
        return
    assert flow["goodput_bps"] >= 0.95 * capacity, flow["goodput_bps"] / 1e6
    assert bottleneck["utilization"] > 0.95
    # The path's RTT is 40 ms plus queueing (at most one BDP: 40 ms more).
    assert late["srtt_s"].between(0.040, 0.085).all()
    assert (late["cwnd_segments"] > 100).all()
    assert late["delivery_rate_bps"].median() > 0.8 * capacity
    assert timing["packets"] > 50_000


def test_report_renders_an_emulated_run_as_a_simulated_one(cubic_runs, tmp_path):
    simulated, emulated, _ = cubic_runs
    pages = {}
    for name, run in (("sim", simulated), ("emu", emulated)):
        proc = cli("report", run, "-o", tmp_path / f"{name}.html")
        assert proc.returncode == 0, proc.stderr
        pages[name] = (tmp_path / f"{name}.html").read_text()
    for section in ("Flows", "Links", "Sharing", "Plots", "Scenario", "Packet captures"):
        assert f"<h2>{section}</h2>" in pages["emu"]
    assert pages["emu"].count("<img ") == pages["sim"].count("<img ") == len(PLOTS)
    assert "<h2>Emulation</h2>" in pages["emu"] and "<h2>Emulation</h2>" not in pages["sim"]
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (scripts/test.sh installs it)")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", (tmp_path / "emu.html").as_uri()], capture_output=True, text=True, timeout=180)
    assert f'data-images-loaded="{len(PLOTS)}/{len(PLOTS)}"' in dom.stdout
    # The plots read the same files: fatpipe plot works unchanged.
    proc = cli("plot", emulated, "--what", "cwnd,rtt,queue,time_sequence", "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_compare_simulated_against_emulated(cubic_runs, tmp_path):
    simulated, emulated, _ = cubic_runs
    proc = cli("compare", simulated, emulated, "-o", tmp_path, "--labels", "sim,emu")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["kinds"][0] == "simulated" and data["kinds"][1].startswith("emulated")
    sim, emu = (json.loads((run / "summary.json").read_text())["flows"][0] for run in (simulated, emulated))
    goodput = next(r for r in data["flows"] if r["key"] == "goodput_bps")
    assert goodput["values"] == [sim["goodput_bps"], emu["goodput_bps"]]
    assert goodput["relative"][1] == pytest.approx((emu["goodput_bps"] - sim["goodput_bps"]) / sim["goodput_bps"])
    for png in ("compare_cwnd.png", "compare_throughput.png", "compare_queue.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "emu vs sim" in proc.stdout


def burst_scenario(burst: str, snd_buffer: str) -> dict:
    return {
        "name": "burst",
        "duration": "3s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "100Mbps", "rtt": "40ms", "queue": {"limit_bdp": 1.0}},
        "flows": [{"name": "paced", "cc": "cubic", "burst_size": burst, "burst_period": "10ms", "tcp": {"snd_buffer": snd_buffer}}],
        "output": {"plots": False, "sample_interval": "50ms"},
    }


def test_burst_mode_offered_load_and_failed_cycles():
    require_root()
    # Below the path's capacity (64 KB per 10 ms = 51.2 Mb/s, buffers far larger): every
    # burst is written in its period; the flow carries the offered load.
    run = until_kept_up(lambda: emulate(burst_scenario("64KB", "8MiB")), lambda r: r.summary["emulation"]["kept_up"])
    below = run.summary["flows"][0]
    assert below["offered_load_bps"] == 51.2e6
    assert below["bursts"] == 301, "bursts at 0, 10 ms, ..., 3 s, as the simulation schedules them"
    # A cycle fails only by leaving its burst unwritten: never more than what was written allows.
    assert below["bytes_written"] >= (301 - below["failed_burst_cycles"]) * 64_000
    low, high = carried_bounds(51.2e6, below["bursts"], below["failed_burst_cycles"])
    assert low <= below["goodput_bps"] <= high
    if run.summary["emulation"]["kept_up"]:
        # None fails, but a real application on a machine shared with other work can be kept
        # from writing for a whole period now and then (the count is per period, so counting
        # every cycle as failed would still fail this).
        assert below["failed_burst_cycles"] <= MISSED_PERIOD_FRACTION * below["bursts"]
    # Above it (250 KB per 10 ms = 200 Mb/s through 100 Mb/s): a cycle succeeds only by
    # writing its whole burst, so at most written / burst cycles succeed. Lateness only fails
    # more cycles and carries less: this holds whether the run kept up or not.
    above = emulate(burst_scenario("250KB", "256KiB")).summary["flows"][0]
    sim = fatpipe.run(burst_scenario("250KB", "256KiB")).summary["flows"][0]
    for flow in (above, sim):
        assert flow["bursts"] == 301 and flow["offered_load_bps"] == 200e6
        assert flow["failed_burst_cycles"] >= flow["bursts"] - flow["bytes_written"] // 250_000
        assert flow["failed_burst_cycles"] > flow["bursts"] / 2
    assert above["goodput_bps"] < 0.95 * 100e6


def test_an_outage_drops_exactly_the_packets_entering_the_link_during_it(tmp_path):
    require_root()
    s = {
        "name": "outage",
        "duration": "2.5s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "100Mbps", "rtt": "40ms",
                     "impairments": [{"link": "bottleneck", "kind": "outage", "windows": [["1s", "1.5s"]]}]},
        "flows": [{"name": "cbr", "transport": "udp", "stop": "2s", "udp": {"mode": "cbr", "rate": "20Mbps"}}],
        "output": {"plots": False, "sample_interval": "100ms", "capture": ["sender", "receiver"]},
    }
    # A host's TUN device that drops a datagram (the relay fell behind) makes kept_up false.
    result = until_kept_up(lambda: emulate(s), lambda r: r.summary["emulation"]["kept_up"])
    result.write(tmp_path)

    def numbered(pcap: str):
        """datagram number (the payload's first 8 bytes) -> capture time (ns)."""
        out = {}
        with open(tmp_path / pcap, "rb") as fh:
            for ts, buf in dpkt.pcap.Reader(fh):
                ip = dpkt.ethernet.Ethernet(buf).data
                if isinstance(ip.data, dpkt.udp.UDP) and len(ip.data.data) >= 8:
                    # Nanosecond pcap: dpkt gives an exact Decimal.
                    out[int.from_bytes(ip.data.data[:8], "big")] = int(ts * 10**9)
        return out

    sent = numbered("sender.pcap")
    got = numbered("receiver.pcap")
    flow = result.summary["flows"][0]
    assert len(sent) == flow["datagrams_sent"] == 20e6 * 2 // (1472 * 8) + 1
    # A datagram reaches the bottleneck when the access link (1 Gb/s) has serialized it:
    # (1472 + 28 + 38) x 8 / 1e9 s = 12,304 ns after the sender's capture saw it start.
    enters = {n: t + 12_304 for n, t in sent.items()}
    in_outage = {n for n, t in enters.items() if 1_000_000_000 <= t < 1_500_000_000}
    lost = set(sent) - set(got)
    bottleneck = next(link for link in result.summary["links"] if link["name"] == "bottleneck")
    # The outage decides by the relay's own clock, late or not: exactly these entered during it.
    assert in_outage <= lost
    assert bottleneck["outage_drops_packets"] == len(in_outage)
    assert bottleneck["drops_packets"] == 0
    if result.summary["emulation"]["kept_up"]:
        # And nothing else was lost (a run that did not keep up may have lost datagrams in a
        # host's TUN device, outside the scenario).
        assert lost == in_outage
        assert len(in_outage) == flow["datagrams_lost"] and flow["datagrams_in_flight_at_end"] == 0
    # 20 Mb/s of 1472-byte datagrams for 0.5 s: about 849.
    assert abs(len(in_outage) - 849) <= 3


def test_the_emulators_document_is_typed_and_schema_checked(monkeypatch):
    """One TCP and one UDP flow for 1 s through the core's Emulation directly: the scenario
    goes in as a dict and the document comes back as dicts and lists (json.dumps and
    json.loads refused throughout), and validates against the emulation results schema
    (generated from fatpipe-emu's summary.rs), which allows no key the types do not have."""
    require_root()
    doc = fatpipe.load_scenario({
        "name": "typed-emulation",
        "duration": "1s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "20Mbps", "rtt": "20ms", "pairs": 2},
        "flows": [
            {"name": "tcp", "cc": "reno", "pair": 0},
            {"name": "udp", "transport": "udp", "pair": 1, "udp": {"mode": "cbr", "rate": "2Mbps"}},
        ],
        "output": {"plots": False, "sample_interval": "100ms"},
    })
    core = import_core()

    def refuse(*args, **kwargs):
        raise AssertionError("JSON text crossed the Python/Rust boundary")

    monkeypatch.setattr(json, "dumps", refuse)
    monkeypatch.setattr(json, "loads", refuse)
    emulation = core.Emulation(doc, realtime_priority=False)
    try:
        emulation.start()
        while not emulation.wait(0.5):
            pass
        output = emulation.finish()
    finally:
        emulation.close()
    monkeypatch.undo()
    summary = output["summary"]
    assert [(f["name"], f["transport"]) for f in summary["flows"]] == [("tcp", "tcp"), ("udp", "udp")]
    tcp, udp = summary["flows"]
    assert tcp["emulation"]["congestion_control_asked"] == "reno" and tcp["bytes_delivered"] > 0
    assert udp["datagrams_received"] > 0 and "datagrams_dropped_in_hosts" in udp["emulation"]
    errors = [e.message for e in jsonschema.Draft202012Validator(emulation_schema()).iter_errors(output)]
    assert errors == []
    # The schema is strict: a key the types do not have is refused.
    tcp["made_up_key"] = 1
    assert any("made_up_key" in e.message
               for e in jsonschema.Draft202012Validator(emulation_schema()).iter_errors(output))
