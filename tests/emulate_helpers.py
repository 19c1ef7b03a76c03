"""What the emulation tests share: the root check, running the CLI, and finding network
namespaces wherever the kernel can be holding them from user space."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Set, Tuple

import pytest

_NET = re.compile(r"net:\[(\d+)\]")


def require_root() -> None:
    """The emulation tests need root (namespaces, TUN); CI runs as root, so a missing
    privilege is a failure, not a skip."""
    if os.geteuid() != 0:
        pytest.fail("fatpipe emulate tests need root (CAP_SYS_ADMIN, CAP_NET_ADMIN); CI runs them as root")


def cli(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fatpipe", *map(str, args)], capture_output=True, text=True, **kwargs)


def namespaces_held_by(pid: int) -> Set[int]:
    """Network namespaces process `pid` holds: its threads' and its descriptors'."""
    held: Set[int] = set()
    base = Path(f"/proc/{pid}")
    links = list(base.glob("task/*/ns/net")) + list(base.glob("fd/*"))
    for link in links:
        try:
            m = _NET.fullmatch(os.readlink(link))
        except OSError:
            continue
        if m:
            held.add(int(m.group(1)))
    return held


def namespaces_alive() -> Set[int]:
    """Every network namespace some process, descriptor or bind mount refers to (what
    `lsns -t net` and `ip netns` can find): once a namespace is in none of these, nothing
    can enter it and the kernel frees it."""
    alive: Set[int] = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            alive |= namespaces_held_by(int(proc.name))
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        m = _NET.search(line)
        if m and " nsfs " in line:
            alive.add(int(m.group(1)))
    return alive


def own_namespace() -> int:
    return int(_NET.fullmatch(os.readlink("/proc/self/ns/net")).group(1))


def cubic_dumbbell(rate: str, duration: str, sample_interval: str) -> dict:
    """One kernel cubic flow over a dumbbell of `rate` x 20 ms with one BDP of drop-tail,
    the path the emulator's offload, coalescing and device-queue tests share."""
    return {
        "name": f"cubic-{rate.replace('bps', '')}-20ms",
        "duration": duration,
        "topology": {"shape": "dumbbell", "bottleneck_rate": rate, "rtt": "20ms", "queue": {"limit_bdp": 1.0}},
        "flows": [{"name": "cubic", "cc": "cubic"}],
        "output": {"plots": False, "sample_interval": sample_interval},
    }


def alternating_pair(run_one: Callable[[bool], dict]) -> Tuple[dict, dict]:
    """(with, without): the summaries of `run_one(True)` and `run_one(False)` run back to
    back, which first alternating from pair to pair (so that a load that changes falls on
    both alike), again until both kept up (realtime_tolerances.until_kept_up)."""
    from realtime_tolerances import until_kept_up

    turn = []

    def run():
        order = (True, False) if len(turn) % 2 == 0 else (False, True)
        turn.append(order)
        got = {side: run_one(side) for side in order}
        return got[True], got[False]

    return until_kept_up(run, lambda p: p[0]["emulation"]["kept_up"] and p[1]["emulation"]["kept_up"])
