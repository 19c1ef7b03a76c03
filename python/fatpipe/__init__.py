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
        version = _version()
        globals()["__version__"] = version  # computed once
        return version
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'fatpipe' has no attribute {name!r}")


def _version() -> str:
    """The package's version. With the compiled core, the core's own: maturin gives the
    wheel the version of crates/fatpipe-py's Cargo.toml, which the core reports, and asking
    it is cheaper than importlib.metadata (about 25 ms of start-up). Without the core (a
    source tree never built), the installed distribution's, if any."""
    try:
        from . import _core  # type: ignore[attr-defined]

        return str(_core.version())
    except ImportError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fatpipe")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})
