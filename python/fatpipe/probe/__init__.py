"""``fatpipe probe``: a scenario's flows between two real hosts, NetSpec's controller and
daemon pair (docs/probe.md).

One host runs the daemon (:func:`fatpipe.probe.serve`, ``fatpipe probe serve``); the other
runs :func:`probe` (``fatpipe probe run HOST SCENARIO.toml``), which measures the path over
the control connection, runs the scenario's flows between the two hosts with the same
traffic engine as ``fatpipe emulate``, and returns a :class:`~fatpipe.result.Result` with
the same tables and files as a simulated run, plus a ``probe`` section in the summary.

>>> import fatpipe.probe
>>> result = fatpipe.probe.probe("192.0.2.10", "examples/reno-100M-40ms.toml")
>>> result.summary["probe"]["path"]["base_rtt_ps"]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

if TYPE_CHECKING:  # pragma: no cover
    from .path import MeasuredPath, measure_path_capacity, measured_dumbbell, measured_path, simulate_beside
    from .runner import ProbeError, ProbeRefused, ProbeScenario, load_probe_scenario, probe, resolve_daemon

#: Where each public name lives. Imported on first use (PEP 562): the runner pulls in numpy
#: and the result tables, which `import fatpipe.probe` alone should not pay for.
_HOMES = {
    "MeasuredPath": "path", "measure_path_capacity": "path", "measured_dumbbell": "path",
    "measured_path": "path", "simulate_beside": "path",
    "ProbeError": "runner", "ProbeRefused": "runner", "ProbeScenario": "runner",
    "load_probe_scenario": "runner", "probe": "runner", "resolve_daemon": "runner",
}

__all__ = [
    "probe",
    "load_probe_scenario",
    "resolve_daemon",
    "ProbeScenario",
    "ProbeError",
    "ProbeRefused",
    "MeasuredPath",
    "measure_path_capacity",
    "measured_path",
    "measured_dumbbell",
    "simulate_beside",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        from importlib import import_module

        return getattr(import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_HOMES))
