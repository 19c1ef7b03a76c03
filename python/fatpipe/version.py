"""The package's version (``fatpipe.__version__``), in a module of its own: the result
tables, reports and the command line read it without importing the package's face."""

from __future__ import annotations

import functools

__all__ = ["version"]


@functools.lru_cache(maxsize=None)
def version() -> str:
    """The package's version. With the compiled core, the core's own: maturin gives the
    wheel the version of crates/fatpipe-py's Cargo.toml, which the core reports, and asking
    it is cheaper than importlib.metadata (about 25 ms of start-up). Without the core (a
    source tree never built), the installed distribution's, if any. Computed once."""
    try:
        from . import _core  # type: ignore[attr-defined]

        return str(_core.version())
    except ImportError:
        pass
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("fatpipe")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
