"""Issue 27's open point: can the sender's own device queue put the kernel into CWR? Linux
does so when the qdisc refuses a packet (`__tcp_transmit_skb`: NET_XMIT_DROP or NET_XMIT_CN
-> `tcp_enter_cwr`). On this kernel the TUN device never stops its queue, so its qdisc never
holds a packet to refuse; a full TUN ring drops the packet, which TCP meets as a loss
(docs/emulation.md, "The host's interface"; docs/validation.md, the BPF CUBIC at 300 Mb/s).

Forced here: the sender's txqueuelen (the TUN ring and the qdisc's limit) cut to 2 packets
at the start of a short kernel cubic run. Checked: the run reports the device's drops
(`tun_tx_dropped`) and its qdisc's counters, typed, with no qdisc drop, requeue or backlog;
the kernel recovered from losses (ca_state 3) and never entered CWR (ca_state 2); the CLI's
warning line names the sender; the run did not keep up (a host dropped packets). A kernel
whose TUN device pushes back (a stopped queue: requeues, then qdisc drops and CWR) fails
this test, as it should: the docs' account would then be wrong.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from emulate_helpers import cubic_dumbbell, require_root
from fatpipe.emulate import emulate
from fatpipe.emulate.runner import device_queue_line

CA_CWR = 2  # TCP_CA_CWR, include/net/tcp.h
CA_RECOVERY = 3
SCENARIO = dict(cubic_dumbbell("100Mbps", "3s", "10ms"), name="cubic-100M-20ms-txqueuelen-2")


@pytest.fixture(scope="module")
def run():
    require_root()
    for tool in ("nsenter", "ip"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: the test sets the sender's txqueuelen with it")

    def shrink(emulation):
        for host, path, _ in emulation.namespaces():
            if host == "sender":
                subprocess.run(["nsenter", f"--net={path}", "ip", "link", "set", "fp0", "txqueuelen", "2"],
                               check=True)

    return emulate(SCENARIO, on_start=shrink)


def test_a_full_tun_ring_is_a_loss_not_a_cwr(run):
    hosts = {h["name"]: h for h in run.summary["emulation"]["hosts"]}
    sender = hosts["sender"]
    assert sender["tun_tx_dropped"] > 0, sender
    assert sender["qdisc"]["kind"] == "pfifo_fast"
    assert (sender["qdisc"]["drops"], sender["qdisc"]["requeues"], sender["qdisc"]["backlog_packets"]) == (0, 0, 0)
    states = set(run.flow_series.ca_state[run.flow_series.cwnd_segments >= 0])
    assert CA_RECOVERY in states and CA_CWR not in states, states
    assert run.summary["flows"][0]["segments_retransmitted"] > 0


def test_the_run_says_so(run):
    line = device_queue_line(run.summary)
    assert line is not None and "sender: pfifo_fast dropped 0" in line, line
    assert "the TUN device dropped 0" not in line.split("sender:")[1].split(";")[1]
    assert not run.summary["emulation"]["kept_up"]
