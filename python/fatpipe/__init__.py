"""fatpipe: a discrete-event simulator of TCP congestion control on long fat networks.

Python reads and validates scenarios and presents results; the simulation runs in the Rust
core, ``fatpipe._core``.

>>> import fatpipe
>>> scenario = fatpipe.load_scenario("examples/reno-100M-40ms.toml")   # validate only
>>> result = fatpipe.run("examples/reno-100M-40ms.toml")               # needs the core
>>> result.flows[["name", "goodput_bps"]]
>>> result.write("runs/reno")
>>> df = fatpipe.sweep("examples/reno-100M-40ms.toml",                 # many runs
...                    grid={"topology.rtt": ["20ms", "80ms"]}, outdir="runs/rtt")

``run``, ``sweep`` and ``Result`` are imported on first use: validating a scenario needs neither the
compiled core nor pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from .scenario import ScenarioError, load_scenario

if TYPE_CHECKING:  # pragma: no cover
    from .result import Result
    from .runner import run
    from .sweep_runner import sweep
    from .sweeps import SweepError, load_sweep

__all__ = [
    "run",
    "sweep",
    "load_scenario",
    "load_sweep",
    "ScenarioError",
    "SweepError",
    "Result",
    "__version__",
]

#: PEP 562 lazy attributes and the module each comes from: `run` and `Result` pull in numpy,
#: pyarrow and (when run) the compiled core, `sweep` pandas, which `fatpipe validate` and
#: load_scenario() do not need; even the sweep format and the version (importlib.metadata)
#: cost a start-up that `fatpipe run` can do without.
_LAZY = {"run": "runner", "sweep": "sweep_runner", "Result": "result", "load_sweep": "sweeps", "SweepError": "sweeps"}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .version import version

        globals()["__version__"] = version()  # looked up once
        return globals()["__version__"]
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'fatpipe' has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})
