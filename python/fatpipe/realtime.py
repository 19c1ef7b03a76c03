"""What the real-time commands share (``fatpipe emulate``, ``fatpipe probe``): SIGTERM
handled as Ctrl-C so that everything is stopped and removed before the process exits, and
waiting for a run on real time with a progress bar."""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Mapping

from .units import PS_PER_S

__all__ = ["Terminated", "sigterm_as_interrupt", "wait_for", "notes_lines", "POLL_S"]

#: How often the progress bar and Ctrl-C are looked at, seconds.
POLL_S = 0.1


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived during a real-time run (handled like Ctrl-C: everything is stopped
    and removed before the process exits)."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While a real-time run goes on, SIGTERM raises :class:`Terminated` in the main thread
    (by default it would end Python without running any cleanup)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def wait_for(run: Any, desc: str, progress: bool) -> None:
    """Waits for ``run`` (the core's ``Emulation`` or ``ProbeRun``: ``wait(timeout_s)``,
    ``progress_ps``, ``duration_ps``, ``stop()``), drawing a progress bar of its seconds on
    stderr if ``progress``; Ctrl-C stops it and is raised again."""
    bar = None
    duration_s = int(run.duration_ps) / PS_PER_S
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=duration_s,
            desc=desc,
            unit="s",
            file=sys.stderr,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]",
            leave=False,
        )
    try:
        while not run.wait(POLL_S):
            if bar is not None:
                bar.n = int(run.progress_ps) / PS_PER_S
                bar.refresh()
    except KeyboardInterrupt:
        run.stop()
        raise
    finally:
        if bar is not None:
            bar.close()


def notes_lines(summary: Mapping[str, Any], section: str) -> List[str]:
    """Where the kernel (or a host) departs from what the flows asked: the notes of every
    flow's ``section`` ("emulation", "probe"), one line per distinct note naming the flows
    it applies to."""
    by_note: Dict[str, List[str]] = {}
    for flow in summary["flows"]:
        for note in flow.get(section, {}).get("notes", []):
            by_note.setdefault(note, []).append(flow["name"])
    return [f"{', '.join(flows)}: {note}" for note, flows in by_note.items()]
