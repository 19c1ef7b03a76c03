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
from .sweeps import SweepError, load_sweep

try:
    from importlib.metadata import PackageNotFoundError, version as _dist_version

    try:
        __version__ = _dist_version("fatpipe")
    except PackageNotFoundError:  # running from a source tree that was never installed
        __version__ = "0+unknown"
except ImportError:  # pragma: no cover - importlib.metadata is in the stdlib from 3.8
    __version__ = "0+unknown"

if TYPE_CHECKING:  # pragma: no cover
    from .result import Result
    from .runner import run
    from .sweep_runner import sweep

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


def __getattr__(name: str) -> Any:
    # PEP 562 lazy attributes: `run` and `Result` pull in pandas, pyarrow and (when run) the
    # compiled core, which `fatpipe validate` and load_scenario() do not need.
    if name == "run":
        from .runner import run

        return run
    if name == "sweep":
        from .sweep_runner import sweep

        return sweep
    if name == "Result":
        from .result import Result

        return Result
    raise AttributeError(f"module 'fatpipe' has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | {"run", "sweep", "Result"})
