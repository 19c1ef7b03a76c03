"""Task functions for the sweep tests, importable by worker processes (which start afresh
and find this folder on the sys.path the parent hands them)."""

import os

from fatpipe import sweep_runner


def _die(task):
    os._exit(3)


def die_on_crash_point(task):
    """Runs the point, except that the worker running the one named "crash" dies in the
    middle of the simulation (as one killed by the kernel, or aborted by the core, would)."""
    if task.core["name"] == "crash":
        sweep_runner._simulate = _die  # this worker process is about to end anyway
    return sweep_runner.run_task(task)
