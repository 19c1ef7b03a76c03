"""What the real-time tests (emulate, probe) allow a loaded machine, in one place.

A burst source's writer thread sleeps until each period starts; when the machine is busy
(CI runs the whole suite on 2 cores, with the emulator's own threads) it can wake after the
next period has begun, and that cycle counts as failed. CI missed 4 of 201 periods in
tests/test_probe_namespaces.py (20 Mb/s offered on a 50 Mbit/s path). 10 % still tells a
source that keeps up from one that cannot (the overloaded cases fail more than half), and
from one that counts every cycle as failed.

An emulation says whether it kept up with real time (`emulation.kept_up`: its relay released
packets on time and no host's TUN device dropped one; docs/emulation.md, "Timing honesty").
A run that did not is rerun, up to KEPT_UP_ATTEMPTS runs in all; if none kept up, the test
asserts only what holds however late the relay was (counts, schedules, bounds that lateness
can only move one way) and says so. A test failed once in a fresh clone on an srtt sample
outside 40-85 ms from a run that had reported kept_up = false.

A probe has no such flag (real hosts, no relay to time). Its checks that timing decides
leave the room a loaded machine needs, and where a burst source shows it was late (failed
cycles) they ask only for what the written bursts carry (`carried_bounds`).
"""

from __future__ import annotations

from typing import Callable, TypeVar

MISSED_PERIOD_FRACTION = 0.10
KEPT_UP_ATTEMPTS = 3

T = TypeVar("T")


def carried_bounds(offered_bps: float, bursts: int, failed: int, tolerance: float = 0.05) -> tuple:
    """The goodput a burst source may show when `failed` of its `bursts` periods were missed
    (each failed cycle left at most its whole burst unwritten): from the offered load less
    those, to the offered load, each with `tolerance` more room."""
    return (1 - tolerance) * offered_bps * (1 - failed / bursts), (1 + tolerance) * offered_bps


def until_kept_up(run: Callable[[], T], kept_up: Callable[[T], bool]) -> T:
    """Calls `run` until `kept_up` says its result kept up with real time, at most
    KEPT_UP_ATTEMPTS times; returns the first that did, or the last."""
    for _ in range(KEPT_UP_ATTEMPTS - 1):
        result = run()
        if kept_up(result):
            return result
    return run()
