"""Issue 26, acceptance 3: what pacing does, checked against the kernel. The scenario of
examples/host-fq-10G-into-1G-100ms.toml ten times slower, as the emulator sustains it: a
1 Gb/s host into a 100 Mb/s x 100 ms bottleneck with a buffer of 0.05 BDP, cubic, once
without pacing and once with fq maxrate 95 Mb/s, which `fatpipe emulate` gives the kernel
as the sender's SO_MAX_PACING_RATE (docs/emulation.md, "The host's pacing").

Checked:
- the cap reached the kernel: the sender's pacing rate (tcpi_pacing_rate) never exceeds
  maxrate's payload share, 95 Mb/s x 1448 / 1514 (the frame fq counts: 1448 payload, 52
  bytes of IP and TCP headers with timestamps, 14 of Ethernet);
- the direction docs/validation.md measured ("What pacing does"; two batches of three
  kernel runs each, 20 s: 27.1-33.0 Mb/s without pacing, 85.6-88.0 with maxrate; fatpipe
  38.75 and 88.18):
  with maxrate the kernel's goodput is well above its goodput without, and fatpipe's too.
  The margin asked, 1.5 x, is far inside what the runs show (2.6 x at least) and far
  outside their spread;
- each run reports both hosts' device queues (the TUN devices' qdiscs), and the one-line
  warning `fatpipe emulate` prints when a device queue refuses packets names each host.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import fatpipe
from emulate_helpers import require_root
from fatpipe.emulate import emulate
from fatpipe.emulate.runner import device_queue_line
from realtime_tolerances import until_kept_up

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "host-fq-10G-into-1G-100ms.toml"
MAXRATE_BPS = 95e6
PAYLOAD_CAP_BPS = MAXRATE_BPS * 1448 / (1448 + 52 + 14)


def scenario(host_changes: dict) -> dict:
    """The example at a tenth of its rates, 20 s (cubic needs them to climb back)."""
    with open(EXAMPLE, "rb") as f:
        s = tomllib.load(f)
    s["duration"] = "20s"
    s["topology"].update({"access_rate": "1Gbps", "bottleneck_rate": "100Mbps"})
    s["output"] = {"plots": False, "sample_interval": "100ms"}
    s["flows"][0]["host"].update(host_changes)
    return s


UNPACED = scenario({})
CAPPED = scenario({"fq": True, "fq_maxrate": "95Mbps"})


@pytest.fixture(scope="module")
def kernel():
    """(without pacing, with maxrate): emulated back to back until both kept up."""
    require_root()

    def run():
        return emulate(UNPACED), emulate(CAPPED)

    return until_kept_up(run, lambda p: all(r.summary["emulation"]["kept_up"] for r in p))


def test_maxrate_reaches_the_kernel_as_the_sockets_pacing_cap(kernel):
    _, capped = kernel
    fs = capped.flow_series
    rates = fs.pacing_rate_bps[fs.pacing_rate_bps > 0]
    assert len(rates) > 100, "the sampler saw the sender's pacing rate"
    # tcpi_pacing_rate is sk_pacing_rate, at most sk_max_pacing_rate (bytes/s, truncated).
    assert rates.max() <= PAYLOAD_CAP_BPS + 8, (rates.max(), PAYLOAD_CAP_BPS)
    # The cap binds: cubic's window would have the rate far above it otherwise.
    assert rates.max() >= PAYLOAD_CAP_BPS - 8


def test_pacing_under_the_bottleneck_beats_line_rate_bursts_in_the_kernel_and_in_fatpipe(kernel):
    unpaced, capped = (r.summary["flows"][0]["goodput_bps"] for r in kernel)
    assert capped > 1.5 * unpaced, (unpaced, capped)
    sim_unpaced, sim_capped = (fatpipe.run(s).summary["flows"][0]["goodput_bps"] for s in (UNPACED, CAPPED))
    assert sim_capped > 1.5 * sim_unpaced, (sim_unpaced, sim_capped)


def test_each_run_reports_its_hosts_device_queues(kernel):
    # The qdisc on each TUN device, read through rtnetlink; nothing refused here (the
    # maxrate run's device queues are what docs/validation.md reports).
    for r in kernel:
        hosts = r.summary["emulation"]["hosts"]
        assert len(hosts) == 2
        for h in hosts:
            assert h["qdisc"]["kind"] == "pfifo_fast", h
            assert h["qdisc"]["packets"] > 1000, h
        assert device_queue_line(r.summary) is None


def test_a_refusing_device_queue_gets_one_warning_line_naming_its_host():
    def host(name, drops=0, requeues=0, tun=0):
        return {"name": name, "tun_tx_dropped": tun,
                "qdisc": {"kind": "pfifo_fast", "packets": 10, "drops": drops, "requeues": requeues,
                          "overlimits": 0, "backlog_packets": 0}}

    quiet = {"emulation": {"hosts": [host("sender"), host("receiver")]}}
    assert device_queue_line(quiet) is None
    loud = {"emulation": {"hosts": [host("sender", drops=3, requeues=1), host("receiver", tun=2)]}}
    line = device_queue_line(loud)
    assert "\n" not in line
    assert "sender: pfifo_fast dropped 3 (each a CWR), requeued 1; the TUN device dropped 0" in line
    assert "receiver: pfifo_fast dropped 0 (each a CWR), requeued 0; the TUN device dropped 2" in line
