"""Reading fatpipe's packet captures back into tables.

A small reader for the classic pcap files the core writes (Ethernet, IPv4, TCP; see
``docs/metrics.md``), enough for the time-sequence graph and tcptrace-style counts without
a third-party dependency. Other tools read the same files: tcpdump, tshark, Wireshark.
"""

from __future__ import annotations

import os
import struct
from typing import Any, List, Tuple, Union

import numpy as np
import pandas as pd

__all__ = ["read_pcap", "connections", "flow_packets", "retransmitted", "flow_port", "node_ip"]

_MAGIC_NS = 0xA1B23C4D
_MAGIC_US = 0xA1B2C3D4

#: Columns of :func:`read_pcap`'s table.
COLUMNS = [
    "time_s", "src_ip", "dst_ip", "src_port", "dst_port", "seq", "ack", "flags",
    "window", "payload_bytes", "ip_bytes", "sack",
]


def node_ip(node: int) -> str:
    """The IPv4 address a capture gives node ``node`` (capture.rs: 10.0.0.1 upwards)."""
    n = node + 1
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def flow_port(flow_index: int) -> int:
    """The TCP port of the sender of the scenario's flow ``flow_index`` (capture.rs)."""
    return 32768 + flow_index % 28232


def read_pcap(path: Union[str, "os.PathLike[str]"], clock_offset_s: float = 0.0) -> pd.DataFrame:
    """One row per TCP packet: time_s, addresses, ports, 32-bit seq and ack, TCP flags,
    the raw window field, payload and IP bytes (from the IP header, so right even when the
    capture kept headers only), and the SACK blocks as a tuple of (left, right) pairs.
    ``clock_offset_s``: the capture's clock offset (summary.json ``captures[].clock_offset_ps``),
    taken off so that time_s is simulated time (a synthetic handshake then has negative
    times: it happened before the run's time 0)."""
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 24:
        raise ValueError(f"{os.fspath(path)}: not a pcap file (too short)")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (_MAGIC_NS, _MAGIC_US):
        raise ValueError(f"{os.fspath(path)}: not a little-endian pcap file")
    scale = 1e-9 if magic == _MAGIC_NS else 1e-6
    rows: List[Tuple[Any, ...]] = []
    offset = 24
    record = struct.Struct("<IIII")
    while offset + 16 <= len(data):
        sec, frac, incl, _orig = record.unpack_from(data, offset)
        frame = data[offset + 16 : offset + 16 + incl]
        offset += 16 + incl
        if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 0x0F) * 4
        ip_bytes = struct.unpack_from("!H", frame, 16)[0]
        src = ".".join(str(b) for b in frame[26:30])
        dst = ".".join(str(b) for b in frame[30:34])
        t = 14 + ihl
        sport, dport, seq, ack, off, flags, window = struct.unpack_from("!HHIIBBH", frame, t)
        header = (off >> 4) * 4
        sack = _sack_blocks(frame[t + 20 : t + header])
        rows.append(
            (sec + frac * scale - clock_offset_s, src, dst, sport, dport, seq, ack, flags, window,
             ip_bytes - ihl - header, ip_bytes, sack)
        )
    df = pd.DataFrame(rows, columns=COLUMNS)
    for column in ("seq", "ack"):
        df[column] = df[column].astype(np.int64)
    return df


def _sack_blocks(options: bytes) -> Tuple[Tuple[int, int], ...]:
    i = 0
    while i < len(options):
        kind = options[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(options):
            break
        length = options[i + 1]
        if kind == 5 and length >= 10:
            count = (length - 2) // 8
            values = struct.unpack_from(f"!{2 * count}I", options, i + 2)
            return tuple(zip(values[0::2], values[1::2]))
        i += max(length, 2)
    return ()


def unwrap(values: np.ndarray, base: int) -> np.ndarray:
    """32-bit sequence numbers relative to ``base`` as 64-bit offsets that do not wrap
    (each value is taken within 2 GB of ``base``'s neighbourhood, as TCP's serial
    arithmetic does; a simulated flow moves forward monotonically)."""
    rel = (values.astype(np.int64) - base) % (1 << 32)
    # Unwrap: where the relative value drops by more than 2^31, a wrap happened.
    jumps = np.diff(rel, prepend=rel[:1] if len(rel) else rel)
    wraps = np.cumsum(np.where(jumps < -(1 << 31), 1, 0) - np.where(jumps > (1 << 31), 1, 0))
    return rel + wraps * (1 << 32)


def flow_packets(df: pd.DataFrame, sender_ip: str, sender_port: int) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """One direction of a connection in a capture: the segments carrying data from
    ``sender_ip:sender_port``, and every packet coming back to it (ACKs)."""
    out = df[(df["src_ip"] == sender_ip) & (df["src_port"] == sender_port)]
    back = df[(df["dst_ip"] == sender_ip) & (df["dst_port"] == sender_port)]
    return out[out["payload_bytes"] > 0], back


def retransmitted(rel_seq: np.ndarray, payload_bytes: np.ndarray) -> np.ndarray:
    """Which data segments are retransmissions, as tcptrace counts them: those starting
    below the highest byte sent before them (``rel_seq`` unwrapped, in capture order)."""
    end = rel_seq + payload_bytes
    high = np.maximum.accumulate(np.concatenate([[0], end[:-1]]))
    return rel_seq < high


def read_capture(result: Any, name: str) -> pd.DataFrame:
    """:func:`read_pcap` of a run's capture ``name`` (a host or link), in simulated time: the
    capture's clock offset (summary.json) taken off."""
    entry = next((c for c in result.summary.get("captures", []) if c["name"] == name), {})
    return read_pcap(result.capture_files[name], clock_offset_s=entry.get("clock_offset_ps", 0) / 1e12)


def connections(path: Union[str, "os.PathLike[str]"]) -> pd.DataFrame:
    """tcptrace's per-connection counts of a capture, one row per direction that carried
    data: first and last packet time, data packets and bytes, retransmitted packets and
    bytes (a segment starting below the highest byte seen before it), pure ACKs the other
    way, ACKs with SACK blocks, and throughput (unique bytes / duration)."""
    df = read_pcap(path)
    rows = []
    for (src, sport, dst, dport), seg in df.groupby(["src_ip", "src_port", "dst_ip", "dst_port"], sort=True):
        data = seg[seg["payload_bytes"] > 0]
        if data.empty:
            continue
        back = df[(df["src_ip"] == dst) & (df["src_port"] == dport) & (df["dst_ip"] == src) & (df["dst_port"] == sport)]
        rel = unwrap(data["seq"].to_numpy(), int(data["seq"].iloc[0]))
        end = rel + data["payload_bytes"].to_numpy()
        retrans = retransmitted(rel, data["payload_bytes"].to_numpy())
        duration = float(seg["time_s"].iloc[-1] - seg["time_s"].iloc[0])
        unique = int(end.max())
        rows.append({
            "src": f"{src}:{sport}", "dst": f"{dst}:{dport}",
            "first_s": float(seg["time_s"].iloc[0]), "last_s": float(seg["time_s"].iloc[-1]),
            "data_packets": int(len(data)), "data_bytes": int(data["payload_bytes"].sum()),
            "retransmitted_packets": int(retrans.sum()),
            "retransmitted_bytes": int(data["payload_bytes"].to_numpy()[retrans].sum()),
            "ack_packets": int((back["payload_bytes"] == 0).sum()),
            "sack_packets": int(back["sack"].map(bool).sum()),
            "unique_bytes": unique,
            "throughput_bps": unique * 8 / duration if duration > 0 else float("nan"),
        })
    return pd.DataFrame(rows)
