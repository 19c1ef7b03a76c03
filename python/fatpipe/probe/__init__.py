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

from .path import MeasuredPath, measure_path_capacity, measured_dumbbell, measured_path, simulate_beside
from .runner import ProbeError, ProbeRefused, ProbeScenario, load_probe_scenario, probe, resolve_daemon

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
