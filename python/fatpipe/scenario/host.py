"""``[flows.host]``: the sending and receiving hosts' own elements (issue 26), each after
the Linux source it names, each off unless turned on here. The core's side is
``crates/fatpipe-core/src/host/`` (one file per element)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from .kinds import Boolean, Duration, Integer, Rate, Size
from .schema import UNSET, Field, Table, _fail

#: GSO_MAX_SIZE with BIG TCP (Linux 5.19 IPv6, 6.3 IPv4): the largest gso_max_size a device takes.
GSO_MAX_SIZE_BYTES = 512 * 1024

_HOST = Table(
    fields=(
        Field(
            "linux_pacing",
            Boolean(),
            "TCP's internal pacing as Linux does it: the pacing rate is pacing_ss_ratio % of "
            "max(cwnd, segments out) x MSS / smoothed RTT while cwnd < ssthresh / 2 and "
            "pacing_ca_ratio % after (or the algorithm's own rate, bbr; at most "
            "[flows.tcp] max_send_rate); after a segment of len payload bytes the next leaves "
            "len / rate later, less up to half that gap if the sender came late; the first 10 "
            "segments are not paced. Linux paces so with the fq qdisc, with bbr, or with "
            "SO_MAX_PACING_RATE; not with pacing_gain",
            False,
            "off. Linux tcp_update_pacing_rate (tcp_input.c), tcp_update_skb_after_send and "
            "tcp_needs_internal_pacing (tcp_output.c); the default qdisc (fq_codel) does not pace",
        ),
        Field(
            "pacing_ss_ratio",
            Integer(minimum=1, maximum=1000, example=200),
            "pacing rate in slow start (cwnd < ssthresh / 2), percent of cwnd x MSS / smoothed RTT",
            200,
            "Linux net.ipv4.tcp_pacing_ss_ratio (0 to 1000; 0, no pacing, is linux_pacing = false here)",
        ),
        Field(
            "pacing_ca_ratio",
            Integer(minimum=1, maximum=1000, example=120),
            "pacing rate otherwise, percent of cwnd x MSS / smoothed RTT",
            120,
            "Linux net.ipv4.tcp_pacing_ca_ratio (0 to 1000)",
        ),
        Field(
            "tso",
            Boolean(),
            "TSO/GSO: a paced sender hands out super-segments of about 1 ms of its pacing "
            "rate (rate >> pacing_shift bytes, plus gso_max_size >> (min RTT in us >> "
            "tso_rtt_log) for near peers, at most gso_max_size less 321 bytes, at least "
            "min_tso_segs segments); a super-segment's segments leave back to back and pacing "
            "spaces the super-segments. An unpaced sender already sends back to back",
            False,
            "off. Linux tcp_tso_autosize and tcp_tso_segs (tcp_output.c); NICs do TSO by default",
        ),
        Field(
            "gso_max_size",
            Size(minimum=1, maximum=GSO_MAX_SIZE_BYTES, example="64KiB"),
            "the interface's largest super-segment (ip link's gso_max_size); the socket's is "
            "321 bytes less (MAX_TCP_HEADER + 1: 65,215 bytes, 45 segments of 1448)",
            "64KiB",
            "Linux GSO_LEGACY_MAX_SIZE (65,536) and sk_setup_caps; BIG TCP allows up to 512 KiB",
        ),
        Field(
            "min_tso_segs",
            Integer(minimum=1, maximum=255, example=2),
            "fewest segments in a super-segment",
            2,
            "Linux net.ipv4.tcp_min_tso_segs (1 to 255)",
        ),
        Field(
            "tso_rtt_log",
            Integer(minimum=0, maximum=255, example=9),
            "the near-peer allowance of TSO autosizing halves every 2^tso_rtt_log microseconds "
            "of minimum RTT (9: 512 us, nothing left past a few ms)",
            9,
            "Linux net.ipv4.tcp_tso_rtt_log (Linux 5.18; 0 to 255)",
        ),
        Field(
            "pacing_shift",
            Integer(minimum=0, maximum=31, example=10),
            "a super-segment holds about 2^-pacing_shift seconds of the pacing rate (10: ~1 ms)",
            10,
            "Linux sk_pacing_shift (sock_init_data; Wi-Fi drivers lower it to 8)",
        ),
        Field(
            "gro",
            Boolean(),
            "the receiving host's GRO with interrupt coalescing: frames wait for the NIC's "
            "interrupt (rx_usecs after the first, or rx_frames of them), and consecutive "
            "in-order segments with the same timestamp tick (1 ms) and ECN bits, each as long "
            "as the first, reach TCP as one super-segment below gro_max_size; TCP acknowledges "
            "it with one ACK (a stretch ACK). A segment that cannot join hands the held one "
            "to TCP at once",
            False,
            "off. Linux dev_gro_receive (net/core/gro.c), tcp_gro_receive (tcp_offload.c), "
            "__tcp_ack_snd_check (tcp_input.c); GRO is on by default on every Linux NIC",
        ),
        Field(
            "gro_max_size",
            Size(minimum=1, maximum=GSO_MAX_SIZE_BYTES, example="64KiB"),
            "the receiving interface's largest GRO super-segment (ip link's gro_max_size), IP bytes",
            "64KiB",
            "Linux GRO_LEGACY_MAX_SIZE (65,536); BIG TCP allows up to 512 KiB",
        ),
        Field(
            "rx_usecs",
            Duration(positive=False, example="16us"),
            "interrupt coalescing: how long the receiving NIC waits after the first frame "
            "before it interrupts (ethtool -C rx-usecs); 0: at once, so GRO merges only what "
            "arrives at the same instant",
            "16us",
            "mlx5e MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC (0x10), without its adaptive "
            "moderation (net_dim, on by default); drivers differ (ixgbe, i40e: dynamic)",
        ),
        Field(
            "rx_frames",
            Integer(minimum=1, maximum=65535, example=32),
            "or the NIC interrupts once this many frames have arrived (ethtool -C rx-frames)",
            32,
            "mlx5e MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_PKTS (0x20)",
        ),
        Field(
            "fq",
            Boolean(),
            "the fq qdisc on the sending host's interface: Linux then paces the flow as "
            "linux_pacing does (its departure times, which fq keeps), and fq_maxrate, if set, "
            "spaces the flow's packets (a TSO super-segment whole) by their frame length at "
            "that rate. Not run: the round robin between flows sharing an interface "
            "(quantum, initial_quantum), flow_limit and horizon (the core has fq's scheduler, "
            "host/fq_sched.rs, but its links serve first in, first out); not with pacing_gain",
            False,
            "off: Linux's default qdisc is fq_codel (net.core.default_qdisc); ESnet's host "
            "tuning recommends fq for data-transfer nodes. Linux sch_fq.c fq_dequeue",
        ),
        Field(
            "fq_maxrate",
            Rate(),
            "fq's per-flow maxrate (tc qdisc ... fq maxrate), bits per second of frames (IP "
            "packet and 14-byte Ethernet header); needs fq = true",
            UNSET,
            "unset: unlimited (sch_fq flow_max_rate ~0)",
        ),
        Field(
            "tsq",
            Boolean(),
            "TCP Small Queues: the sender keeps at most max(2 x its next skb's truesize, its "
            "pacing rate >> pacing_shift) bytes in its interface's queue and transmit ring "
            "(for a sender Linux does not pace, at most limit_output_bytes); above that it "
            "waits, and sends again when the interface has sent enough of them",
            False,
            "off. Linux tcp_small_queue_check, tcp_wfree (tcp_output.c); on in every Linux "
            "since 3.6",
        ),
        Field(
            "limit_output_bytes",
            Size(minimum=1, example="4MiB"),
            "TCP Small Queues' cap for a sender Linux does not pace",
            "4MiB",
            "Linux net.ipv4.tcp_limit_output_bytes: 4 MiB since the 2025 change (tcp_sk_init, "
            "\"Default TSQ limit of 4 MB\"); 1 MiB (16 x 65,536) in the kernels before it",
        ),
    ),
    doc="The hosts' own elements: Linux's pacing, TSO/GSO, GRO with interrupt coalescing, the fq qdisc's "
    "maxrate, TCP Small Queues. All off unless set here.",
)


def normalize_host(host: Optional[Dict[str, Any]], pacing_gain: Optional[float], path: str) -> Optional[Dict[str, Any]]:
    """The core's ``HostConfig`` for a flow's ``[flows.host]`` table (None without one, so the
    normalized document of a flow without it is what it was before the table existed)."""
    if host is None:
        return None
    for key in ("linux_pacing", "fq"):
        if host[key] and pacing_gain is not None:
            raise _fail(
                f"{path}.{key}", True,
                f"Linux's pacing sets the rate itself; leave [flows.tcp] pacing_gain unset, or {key} = false",
            )
    if host["fq_maxrate"] is not None and not host["fq"]:
        raise _fail(f"{path}.fq_maxrate", host["fq_maxrate"], "fq's maxrate needs fq = true")
    return {
        "linux_pacing": host["linux_pacing"],
        "pacing_ss_ratio_percent": host["pacing_ss_ratio"],
        "pacing_ca_ratio_percent": host["pacing_ca_ratio"],
        "tso": host["tso"],
        "gso_max_size_bytes": host["gso_max_size"],
        "min_tso_segs": host["min_tso_segs"],
        "tso_rtt_log": host["tso_rtt_log"],
        "pacing_shift": host["pacing_shift"],
        "gro": host["gro"],
        "gro_max_size_bytes": host["gro_max_size"],
        "rx_coalesce_ps": host["rx_usecs"],
        "rx_frames": host["rx_frames"],
        "fq": host["fq"],
        "fq_maxrate_bps": host["fq_maxrate"],
        "tsq": host["tsq"],
        "limit_output_bytes": host["limit_output_bytes"],
    }


#: What a current Linux host (6.x, a NIC with offloads, the default qdisc fq_codel, cubic)
#: runs of each element, and why: the comparison `fatpipe algorithms` prints beside what
#: the profiles turn on (none of them, until the kernel comparison at 1 Gb/s decides).
LINUX_HOST: Dict[str, Tuple[bool, str]] = {
    "linux_pacing": (False, "only with fq, bbr or SO_MAX_PACING_RATE (tcp_needs_internal_pacing)"),
    "tso": (True, "NICs offer TSO and the kernel uses it (NETIF_F_TSO; ethtool -k)"),
    "gro": (True, "on for every NIC (NETIF_F_GRO, netif_gro_receive)"),
    "fq": (False, "the default qdisc is fq_codel (net.core.default_qdisc)"),
    "tsq": (True, "always (tcp_small_queue_check, since 3.6)"),
}


def format_host_elements() -> str:
    """The host elements, what a current Linux runs and what the profiles turn on
    (Markdown), for `fatpipe algorithms`."""
    lines = [
        "| element | a current Linux host | profiles that turn it on |",
        "|---|---|---|",
    ]
    for key, (on, why) in LINUX_HOST.items():
        lines.append(f"| `{key}` | {'on' if on else 'off'}: {why} | none (`[flows.host] {key} = true`) |")
    return "\n".join(lines) + "\n"


def core_host_defaults() -> Dict[str, Any]:
    """An empty ``[flows.host]`` as the core reads it (every element off): the core's tests,
    which build configs without Python, read it from ``fatpipe/schemas/host-defaults.json``
    (``fatpipe_core::host::scenario_defaults``; tests/test_host_elements.py checks the file)."""
    return normalize_host(_HOST.parse({}, "host"), None, "host")
