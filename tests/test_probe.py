"""Issue 17, acceptance 1 and 4 on loopback: `fatpipe probe run` against a `fatpipe probe
serve` daemon on this host. Each real-time run lasts 1 s.

- full blast, with TCP_INFO series from both ends and the path measured;
- NetSpec burst mode: the simulator's burst count, the offered load carried, and failed
  cycles when the receiving application (on the daemon's end) reads slower than the bursts;
- parallel streams, each confirmed by getsockopt, summed as a group;
- UDP bursts in both directions: exactly the datagrams the simulator's schedule sends;
- cubic, reno and bbr chosen per socket and read back with getsockopt;
- an algorithm the host lacks, or an HTTP workload: one line, nothing written;
- `fatpipe report` renders a probe run as it renders a simulated one.

Real time without an emulator: no run says whether it kept up. What timing decides is held
to the room realtime_tolerances.py gives a loaded machine (a burst source's missed periods,
and the goodput of what it wrote); the rest are counts and schedules.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import fatpipe
from fatpipe.plots import PLOTS
from fatpipe.result import Result
from probe_helpers import daemon, run_cli
from realtime_tolerances import MISSED_PERIOD_FRACTION, carried_bounds

#: linux/in.h (Python's socket module lacks it).
IP_MTU = 14
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


@pytest.fixture(scope="module")
def lo_daemon():
    with daemon() as d:
        yield d


#: For the scenarios the simulator runs too (a probe ignores it).
FAST_PATH = '[topology]\nbottleneck_rate = "1Gbps"\nrtt = "1ms"\n'


def toml(path: Path, body: str, duration: str = "1s", extra: str = "") -> Path:
    path.write_text(f'name = "{path.stem}"\nduration = "{duration}"\n{extra}{body}\n[output]\nsample_interval = "50ms"\nplots = false\n')
    return path


def probe_run(d, scenario: Path, out: Path, *args: str) -> Result:
    proc = run_cli("probe", "run", d.address, scenario, "-o", out, "--quiet", *args)
    assert proc.returncode == 0, proc.stderr
    return Result.read(out)


def flows_of(result: Result) -> dict:
    return {f["name"]: f for f in result.summary["flows"]}


def test_full_blast_on_loopback_with_tcp_info_from_both_ends(lo_daemon, tmp_path):
    # A topology and a capture the probe does not use: one line says so, and summary.json.
    extra = '[topology]\nbottleneck_rate = "10Mbps"\nrtt = "40ms"\n'
    body = '[[flows]]\nname = "blast"\ncc = "cubic"\n'
    scenario = toml(tmp_path / "blast.toml", body, extra=extra)
    scenario.write_text(scenario.read_text() + 'capture = ["sender"]\n')
    proc = run_cli("probe", "run", lo_daemon.address, scenario, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    note = [line for line in proc.stderr.splitlines() if "ignores" in line]
    assert len(note) == 1 and "[topology]" in note[0] and "output.capture" in note[0], proc.stderr
    assert "path: base RTT" in proc.stdout and "probed between" in proc.stdout
    result = Result.read(tmp_path / "out")
    flow = result.summary["flows"][0]
    assert flow["algorithm"] == "cubic" and flow["probe"]["congestion_control"] == "cubic"
    assert flow["probe"]["sender"] == "controller"
    # Far above the 10 Mb/s the ignored topology would have allowed.
    assert flow["goodput_bps"] > 200e6
    series = result.flow_series
    assert list(series["time_s"]) == pytest.approx([0.05 * k for k in range(21)])
    # The sender's columns from this host, the receiver's from the daemon's, one table.
    # (The last sample is taken at the end, as the applications stop: at several Gb/s the
    # summary, read after them, can be a little ahead.)
    for column, key in (("delivered_bytes", "bytes_delivered"), ("read_bytes", "bytes_read"), ("sent_bytes", "bytes_sent")):
        assert 0 <= flow[key] - series[column].iloc[-1] <= 0.01 * flow[key], column
    assert flow["bytes_sent"] >= flow["bytes_delivered"] >= flow["bytes_read"] > 0
    assert (series["cwnd_segments"].iloc[1:] > 0).all() and series["srtt_s"].iloc[1:].notna().all()
    for column in ("rttvar_s", "retransmitted_segments", "delivery_rate_bps", "bytes_acked", "written_bytes", "read_bytes"):
        assert column in series.columns, column
    probe = result.summary["probe"]
    assert probe["ignored"] and probe["protocol_version"] == 1 and probe["authenticated"] is False
    path = probe["path"]
    assert path["base_rtt_ps"] == min(path["rtt_samples_ps"]) > 0 and len(path["rtt_samples_ps"]) == 10
    host, port = lo_daemon.address.split(":")
    with socket.create_connection((host, int(port))) as s:
        assert path["path_mtu_bytes"] == s.getsockopt(socket.IPPROTO_IP, IP_MTU)
    scenario_json = json.loads((tmp_path / "out" / "scenario.json").read_text())
    assert [n["name"] for n in scenario_json["nodes"]] == ["controller", "daemon"] and scenario_json["links"] == []


def test_the_result_document_is_the_one_its_types_generate(lo_daemon, tmp_path):
    """ProbeRun.finish returns the typed document of fatpipe-probe's document.rs, and the
    schema generated from those types (probe-results.schema.json) allows no other key."""
    import jsonschema

    from fatpipe.probe.runner import load_probe_scenario, resolve_daemon
    from fatpipe.runner import import_core
    from fatpipe.schemas import probe_schema

    core = import_core()
    body = ('[[flows]]\nname = "up"\ncc = "cubic"\n'
            '[[flows]]\nname = "back"\ntransport = "udp"\ndirection = "reverse"\n'
            'udp = { mode = "burst", burst_size = "10KB", repeats = 3, burst_period = "50ms" }\n')
    ps = load_probe_scenario(toml(tmp_path / "typed.toml", body, duration="0.5s", extra=FAST_PATH))
    run = core.ProbeRun(resolve_daemon(lo_daemon.address, core.PROBE_DEFAULT_PORT), ps.loaded.core, ps.controller_sends)
    try:
        while not run.wait(0.2):
            pass
        output = run.finish()
    finally:
        run.close()
    validator = jsonschema.Draft202012Validator(probe_schema())
    assert [e.message for e in validator.iter_errors(output)] == []
    probe = output["summary"]["probe"]
    assert set(probe["tcp_ext"]) == {"controller", "daemon"} and len(probe["data_ports"]) == 2
    probe["daemon"]["made_up_key"] = 1
    assert any("made_up_key" in e.message for e in validator.iter_errors(output))


def test_burst_mode_offered_load_and_failed_cycles(lo_daemon, tmp_path):
    # 64 KB every 10 ms (51.2 Mb/s) on loopback: every burst is written in its period.
    below = toml(tmp_path / "below.toml", '[[flows]]\nname = "paced"\ncc = "cubic"\nburst_size = "64KB"\nburst_period = "10ms"\n',
                 extra=FAST_PATH)
    flow = flows_of(probe_run(lo_daemon, below, tmp_path / "below"))["paced"]
    sim = fatpipe.run(below).summary["flows"][0]
    assert flow["bursts"] == sim["bursts"] == 101, "bursts at 0, 10 ms, ..., 1 s, as the simulation schedules them"
    assert flow["offered_load_bps"] == 51.2e6
    # A real application on a shared machine may miss a period now and then; the flow carries
    # what was written.
    assert flow["failed_burst_cycles"] <= MISSED_PERIOD_FRACTION * flow["bursts"]
    assert flow["bytes_written"] >= (101 - flow["failed_burst_cycles"]) * 64_000
    low, high = carried_bounds(51.2e6, flow["bursts"], flow["failed_burst_cycles"])
    assert low <= flow["goodput_bps"] <= high, flow["goodput_bps"] / 1e6
    # The daemon's application reads at 8 Mb/s from a 64 KiB buffer: the sender's buffer
    # fills and a cycle succeeds only by writing its whole burst.
    slow = toml(tmp_path / "slow.toml", '[[flows]]\nname = "paced"\ncc = "cubic"\nburst_size = "64KB"\nburst_period = "10ms"\n'
                'tcp = { rcv_buffer = "64KiB", snd_buffer = "64KiB", receiver_drain_rate = "8Mbps" }\n')
    flow = flows_of(probe_run(lo_daemon, slow, tmp_path / "slow"))["paced"]
    assert flow["bursts"] == 101
    # A cycle fails when the next period starts with its burst unwritten, so the last burst
    # (at the end) is never judged; every other one succeeded only by a whole 64 KB.
    assert flow["failed_burst_cycles"] >= flow["bursts"] - 1 - flow["bytes_written"] // 64_000
    assert flow["failed_burst_cycles"] > flow["bursts"] / 2
    assert flow["bytes_read"] <= 8e6 / 8 * 1.0 + 64 * 1024, "the reader's rate, at most"


def test_parallel_streams_each_confirmed_and_summed(lo_daemon, tmp_path):
    body = '[[flows]]\nname = "p"\ncc = "bbr"\nstreams = 3\nbytes = "30MB"\n'
    result = probe_run(lo_daemon, toml(tmp_path / "streams.toml", body), tmp_path / "out")
    streams = result.summary["flows"]
    assert [f["name"] for f in streams] == ["p.1", "p.2", "p.3"]
    for f in streams:
        assert f["algorithm"] == "bbr" and f["group"] == "p" and f["completed"] and f["bytes_read"] == 10_000_000
    group = result.summary["groups"][0]
    assert group["streams"] == 3 and group["bytes_delivered"] == 30_000_000 and group["completed"]
    # Three connections on three data ports the daemon chose.
    assert len(set(result.summary["probe"]["data_ports"])) == 3


def test_udp_bursts_both_ways_send_the_simulators_schedule(lo_daemon, tmp_path):
    body = ('[[flows]]\nname = "out"\ntransport = "udp"\nudp = { mode = "burst", burst_size = "30KB", burst_period = "10ms" }\n'
            '[[flows]]\nname = "back"\ntransport = "udp"\ndirection = "reverse"\n'
            'udp = { mode = "burst", burst_size = "10KB", repeats = 3, burst_period = "50ms", payload_size = 1000 }\n')
    scenario = toml(tmp_path / "udp.toml", body, extra=FAST_PATH)
    result = probe_run(lo_daemon, scenario, tmp_path / "out")
    sim = flows_of(fatpipe.run(scenario))
    for name, sender in (("out", "controller"), ("back", "daemon")):
        f = flows_of(result)[name]
        assert f["probe"]["sender"] == sender
        assert f["datagrams_sent"] == sim[name]["datagrams_sent"] > 0, name
        assert f["datagrams_received"] == f["datagrams_sent"] and f["datagrams_lost"] == 0
        assert f["bytes_sent"] == sim[name]["bytes_sent"] == f["bytes_delivered"]
        assert f["datagrams_in_flight_at_end"] == 0
    series = result.flow_series
    back = series[series["flow"] == "back"]
    # The last sample is taken at the end, as the last burst (at the end) arrives.
    assert 0 <= flows_of(result)["back"]["datagrams_received"] - back["datagrams_received"].iloc[-1] <= 30
    assert (back["outstanding_bytes"] >= 0).all()


def test_cubic_reno_and_bbr_are_confirmed_by_getsockopt(lo_daemon, tmp_path):
    body = "".join(f'[[flows]]\nname = "{cc}"\ncc = "{cc}"\nbytes = "4MB"\n{direction}'
                   for cc, direction in (("cubic", ""), ("reno", 'direction = "reverse"\n'), ("bbr", "")))
    result = probe_run(lo_daemon, toml(tmp_path / "cc.toml", body), tmp_path / "out")
    for cc, f in flows_of(result).items():
        assert f["algorithm"] == cc and f["probe"]["congestion_control"] == cc
        assert f["probe"]["congestion_control_asked"] == cc
        assert f["completed"] and f["bytes_read"] == 4_000_000
    assert flows_of(result)["reno"]["probe"]["sender"] == "daemon"


def test_an_algorithm_the_host_lacks_or_a_workload_a_probe_cannot_run_is_one_line(lo_daemon, tmp_path):
    missing = next(a for a in ("highspeed", "scalable", "htcp", "vegas", "bic") if a not in AVAILABLE)
    scenario = toml(tmp_path / "missing.toml", f'[[flows]]\nname = "m"\ncc = "{missing}"\ndirection = "reverse"\n')
    proc = run_cli("probe", "run", lo_daemon.address, scenario, "-o", tmp_path / "out")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f'congestion control "{missing}"' in proc.stderr and "not available" in proc.stderr
    assert "on the daemon's host 127.0.0.1" in proc.stderr, "the reverse flow is sent from the daemon's host"
    assert "available: " + " ".join(AVAILABLE) in proc.stderr
    assert not (tmp_path / "out").exists()
    fast = toml(tmp_path / "fast.toml", '[[flows]]\nname = "f"\ncc = "fast"\n')
    proc = run_cli("probe", "run", lo_daemon.address, fast, "-o", tmp_path / "out")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no Linux implementation" in proc.stderr
    http = toml(tmp_path / "http.toml", '[[flows]]\nname = "w"\nhttp = { version = "1.1", objects = ["2KB"] }\n', extra=FAST_PATH)
    proc = run_cli("probe", "run", lo_daemon.address, http, "-o", tmp_path / "out")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "HTTP workloads cannot be probed" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_report_renders_a_probe_run_as_a_simulated_one(lo_daemon, tmp_path):
    scenario = toml(tmp_path / "rep.toml", '[[flows]]\nname = "a"\ncc = "cubic"\nbytes = "20MB"\n'
                    '[[flows]]\nname = "u"\ntransport = "udp"\nudp = { mode = "cbr", rate = "5Mbps" }\n',
                    extra='[topology]\nbottleneck_rate = "50Mbps"\nrtt = "10ms"\n')
    probe_run(lo_daemon, scenario, tmp_path / "probe")
    assert run_cli("run", scenario, "-o", tmp_path / "sim", "--quiet").returncode == 0
    pages = {}
    for name in ("probe", "sim"):
        proc = run_cli("report", tmp_path / name, "-o", tmp_path / f"{name}.html")
        assert proc.returncode == 0, proc.stderr
        pages[name] = (tmp_path / f"{name}.html").read_text()
    for section in ("Flows", "Links", "Sharing", "Plots", "Scenario"):
        assert f"<h2>{section}</h2>" in pages["probe"] and f"<h2>{section}</h2>" in pages["sim"]
    # Every plot but the time-sequence graph, which needs a capture neither run has.
    assert pages["probe"].count("<img ") == pages["sim"].count("<img ") == len(PLOTS) - 1
    assert "<h2>Probe</h2>" in pages["probe"] and "<h2>Probe</h2>" not in pages["sim"]
    assert "probed between" in pages["probe"]
    proc = run_cli("plot", tmp_path / "probe", "--what", "cwnd,throughput,rtt,outstanding,queue", "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr
