"""Hops without events (issue 16) must not move a single result: every example, and the
bench's 100-flow RED case over several seeds, run with the engine's shortcuts (a link
handing a packet on to the next at its arrival time, a last hop handled without the event
queue: `crates/fatpipe-core/src/sim/hand_on.rs`) and without them, give the same summary
and the same series, value for value. Only the count of events differs, by design.

The examples run their first 3 s, as in `test_reference_summaries.py`; a run is also split
into several `run_until` calls, since a shortcut never reaches past the end of the current
one. Without the rule that a packet is handed only to a link still holding a later one,
`two-to-one-1G-30ms.toml` diverges here (an arrival's event was scheduled earlier and
changed places with a same-instant event at the sender).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DURATION_PS = 3 * 10**12


def _output(core_doc: Dict[str, Any], shortcuts: bool, steps: int = 1) -> Dict[str, Any]:
    import numpy as np
    from fatpipe.core import import_core

    sim = import_core().Simulation(core_doc)
    sim.set_event_shortcuts(shortcuts)
    duration = core_doc["duration_ps"]
    for i in range(1, steps + 1):
        sim.run_until(duration * i // steps)
    events = sim.events
    out = sim.finish()
    summary = dict(out["summary"])
    summary.pop("events")
    series: List[Any] = [
        (table, name, np.asarray(column).tolist()) for table in ("flow_series", "queue_series") for name, column in out[table].items()
    ]
    return {"summary": json.dumps(summary, sort_keys=True), "series": series, "events": events}


def _core(path: Path) -> Dict[str, Any]:
    from fatpipe.scenario import load

    core = load(path).core
    core["duration_ps"] = min(core["duration_ps"], DURATION_PS)
    return core


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_an_example_gives_the_same_results_with_and_without_shortcuts(name: str) -> None:
    core = _core(EXAMPLES / name)
    with_shortcuts = _output(core, True, steps=3)
    without = _output(core, False)
    assert with_shortcuts["summary"] == without["summary"]
    assert with_shortcuts["series"] == without["series"]


@pytest.mark.parametrize("seed, discipline", [(1, "red"), (2, "red"), (1, "fq_codel")])
def test_many_flows_with_red_give_the_same_results_with_and_without_shortcuts(seed: int, discipline: str) -> None:
    from fatpipe.bench_cases import red_scenario
    from fatpipe.scenario import load

    # FQ-CoDel: its link is never handed to, and its last hops go through `last_hop`.
    core = load(red_scenario(2 * 10**12, start_jitter_ps=10**12, discipline=discipline)).core
    core["seed"] = seed
    with_shortcuts, without = _output(core, True), _output(core, False)
    assert with_shortcuts["summary"] == without["summary"]
    assert with_shortcuts["series"] == without["series"]


def test_the_shortcuts_remove_events_on_a_dumbbell() -> None:
    """The check above cannot fail by the shortcuts never being taken: on the default
    dumbbell, the access links hand their packets on and the last hops skip the queue."""
    core = _core(EXAMPLES / "reno-100M-40ms.toml")
    with_shortcuts, without = _output(core, True), _output(core, False)
    assert with_shortcuts["events"] < 0.5 * without["events"]
