"""Real-time emulation: a scenario run with real Linux TCP over its modelled path.

:func:`emulate` turns every host of the scenario into a network namespace, passes the
hosts' packets through the scenario's own links (the Rust core's, driven by the wall clock
in ``fatpipe-emu``), runs each flow's applications on real sockets and returns a
:class:`~fatpipe.result.Result` with the same tables and files as a simulated run, plus an
``emulation`` section in the summary (docs/emulation.md).

>>> import fatpipe.emulate
>>> result = fatpipe.emulate.emulate("examples/reno-100M-40ms.toml")   # needs root
>>> result.summary["emulation"]["release_lateness"]
"""

from .runner import EmulationError, PrivilegeError, check_privileges, emulate, lateness_line, notes_lines

__all__ = ["emulate", "EmulationError", "PrivilegeError", "check_privileges", "lateness_line", "notes_lines"]
