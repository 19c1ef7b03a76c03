"""Running a scenario on the Rust core.

:func:`run` validates the scenario, hands the normalized document to
``fatpipe._core.Simulation``, advances it in chunks (so a progress bar can follow and
Ctrl-C is honoured between chunks: the core releases the GIL while it runs, and Python
handles signals only when it gets control back) and wraps ``finish()`` in a
:class:`~fatpipe.result.Result`.
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from .buffers import BufferWarning, buffer_warnings, lines_to_say
from .ecn_paths import EcnPathWarning, ecn_warnings
from .core import CoreUnavailableError, import_core
from .result import Result
from .scenario import Loaded, ScenarioError, check_depth, load
from .scenario.python_cc import controllers
from .units import PS_PER_S, U64_MAX, plain_scalar

__all__ = ["run", "prepare", "import_core", "with_capture_paths", "CoreUnavailableError", "PROGRESS_CHUNKS"]

#: The run is advanced in about this many steps: enough for a smooth progress bar, few
#: enough that the per-call overhead is nothing next to the simulation.
PROGRESS_CHUNKS = 200

ScenarioSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _is_normalized(doc: Mapping[str, Any]) -> bool:
    # A normalized document has base-unit keys that the user format never has.
    return "duration_ps" in doc and "nodes" in doc


def prepare(scenario: Union[ScenarioSource, Loaded], seed: Optional[int] = None) -> Loaded:
    """The scenario validated and normalized (a private copy), with ``seed`` if given."""
    loaded = _prepare(scenario)
    if seed is not None:
        seed = plain_scalar(seed)  # np.uint64(7) is the seed 7
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= U64_MAX:
            raise ScenarioError(
                f"seed: {seed!r} is not allowed: expected a whole number from 0 to {U64_MAX}",
                "seed",
            )
        loaded.core["seed"] = seed
    return loaded


def _prepare(scenario: Union[ScenarioSource, Loaded]) -> Loaded:
    if isinstance(scenario, Loaded):
        # A copy of the top level only (run() sets the seed there); the result keeps it.
        return Loaded(core=dict(scenario.core), plots=scenario.plots, captures=[dict(c) for c in scenario.captures])
    if isinstance(scenario, Mapping) and _is_normalized(scenario):
        # Already normalized (e.g. load_scenario()'s output, perhaps edited): the core
        # checks it; Python's user-facing validation does not apply to base-unit keys.
        check_depth(scenario)
        return Loaded(core=copy.deepcopy(dict(scenario)), plots=True)
    return load(scenario)


def run(
    scenario: Union[ScenarioSource, Loaded],
    seed: Optional[int] = None,
    progress: bool = False,
    capture_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    on_interval: Optional[Callable[[int, Any], None]] = None,
    interval_ps: Optional[int] = None,
    on_warning: Optional[Callable[[str], None]] = None,
    cancel: Optional[Any] = None,
) -> Result:
    """Runs a scenario to its end and returns the :class:`~fatpipe.result.Result`.

    Args:
        scenario: a TOML file path, a dict in the scenario format, or a normalized scenario
            as returned by :func:`fatpipe.load_scenario`.
        seed: overrides the scenario's seed (an integer >= 0).
        progress: show a progress bar of simulated seconds on stderr.
        capture_dir: where the scenario's packet captures (``output.capture``) are written,
            as ``<point>.pcap``; by default a new temporary directory, from which
            :meth:`Result.write` copies them into its output directory.
        on_interval: called as ``on_interval(t_ps, counters)`` at 0 and every multiple of
            ``interval_ps`` up to the end (and at the end), with the core's
            ``flow_counters()`` (``fatpipe run --interval``, :mod:`fatpipe.interval_report`).
        on_warning: called with each warning's line before the run starts (a flow's buffer
            below its path's bandwidth-delay product: :mod:`fatpipe.buffers`, the first
            five, then one line counting the rest; an ECN congestion control on a path
            that never marks: :mod:`fatpipe.ecn_paths`); by default each is issued as a
            :class:`~fatpipe.buffers.BufferWarning` or
            :class:`~fatpipe.ecn_paths.EcnPathWarning`. The result keeps them all either way
            (``Result.warnings``, ``summary.json``'s ``warnings``).
        cancel: a ``threading.Event``; once set, the run raises KeyboardInterrupt after the
            chunk it is in (a sweep on threads stops its runs so).

    Raises:
        ScenarioError: the scenario is invalid (one line naming the field).
        CoreUnavailableError: ``fatpipe._core`` is not built.
    """
    loaded = prepare(scenario, seed)
    core_doc = loaded.core
    core = import_core()
    sim_doc, capture_files = with_capture_paths(loaded, capture_dir)
    try:
        classes = controllers(core_doc)  # flows with a Python congestion control (python_cc.py)
        sim = core.Simulation(sim_doc, controllers=classes) if classes else core.Simulation(sim_doc)
    except ValueError as err:
        # The Python validator should have caught this; the core's message names the
        # normalized field, which is still better than nothing.
        raise ScenarioError(f"the core rejected the normalized scenario: {err}") from None
    routes = sim.flow_routes()
    found = buffer_warnings(core_doc, routes=routes)
    ecn = ecn_warnings(core_doc, routes)
    said = [(line, BufferWarning) for line in lines_to_say(found)] + [(w["message"], EcnPathWarning) for w in ecn]
    for line, category in said:
        if on_warning is not None:
            on_warning(line)
        else:
            warnings.warn(line, category, stacklevel=2)
    found += ecn
    _advance(sim, core_doc, progress, on_interval, interval_ps, cancel)
    output = sim.finish()
    for entry in output["summary"].get("captures", []):
        if entry.get("error"):
            raise OSError(entry["error"])
    return Result(output, core_doc, plots=loaded.plots, capture_files=capture_files, copy_scenario=False,
                  warnings=found)


def with_capture_paths(
    loaded: Loaded, capture_dir: Optional[Union[str, "os.PathLike[str]"]]
) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The core's document with the scenario's captures given files ``<point>.pcap`` in
    ``capture_dir`` (by default a new temporary directory), and those files by point name.
    Without captures, the document as it is."""
    capture_files: Dict[str, str] = {}
    if not loaded.captures:
        return loaded.core, capture_files
    directory = Path(capture_dir) if capture_dir is not None else Path(tempfile.mkdtemp(prefix="fatpipe-capture-"))
    directory.mkdir(parents=True, exist_ok=True)
    doc = dict(loaded.core)
    doc["captures"] = []
    for spec in loaded.captures:
        path = directory / f"{spec['name']}.pcap"
        capture_files[spec["name"]] = str(path)
        doc["captures"].append(dict(spec, path=str(path)))
    return doc, capture_files


def _advance(
    sim: Any,
    core_doc: Mapping[str, Any],
    progress: bool,
    on_interval: Optional[Callable[[int, Any], None]] = None,
    interval_ps: Optional[int] = None,
    cancel: Optional[Any] = None,
) -> None:
    duration_ps = int(sim.duration_ps)
    chunk_ps = max(1, -(-duration_ps // PROGRESS_CHUNKS))  # ceiling division
    if on_interval is not None and not interval_ps:
        raise ValueError("on_interval needs interval_ps > 0")
    if on_interval is not None:
        on_interval(int(sim.now_ps), sim.flow_counters())
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=duration_ps / PS_PER_S,
            desc=str(core_doc.get("name", "run")),
            unit="s",
            unit_scale=False,
            file=sys.stderr,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.3g}/{total:.3g} simulated s [{elapsed}<{remaining}]",
            leave=False,
        )
    try:
        target_ps = int(sim.now_ps)
        while target_ps < duration_ps:
            next_chunk = target_ps + chunk_ps
            if on_interval is not None:  # stop at every interval boundary too
                next_chunk = min(next_chunk, (target_ps // interval_ps + 1) * interval_ps)
            target_ps = min(next_chunk, duration_ps)
            if cancel is not None and cancel.is_set():
                raise KeyboardInterrupt
            try:
                sim.run_until(target_ps)
            except ValueError as err:  # a BPF congestion control's fault (cc/bpf.rs): one line
                raise ScenarioError(str(err)) from None
            if on_interval is not None and (target_ps % interval_ps == 0 or target_ps == duration_ps):
                on_interval(target_ps, sim.flow_counters())
            if bar is not None:
                # Set rather than add: no floating-point drift past the total.
                bar.n = int(sim.now_ps) / PS_PER_S
                bar.refresh()
    finally:
        if bar is not None:
            bar.close()
