"""The compiled simulation core, ``fatpipe._core``, imported with a clear message when it
is missing. Kept apart from the runner so that validating a scenario (which asks the core to
check a custom network's routes) does not import pandas."""

from __future__ import annotations

from typing import Any

__all__ = ["import_core", "CoreUnavailableError"]


class CoreUnavailableError(ImportError):
    """The compiled core, ``fatpipe._core``, is not importable (not built yet)."""


def import_core() -> Any:
    """Imports ``fatpipe._core``, or explains how to build it."""
    try:
        from . import _core  # type: ignore[attr-defined]
    except ImportError as err:
        raise CoreUnavailableError(
            "the simulation core fatpipe._core is not built: run `maturin develop --release` "
            f"in the repository (or `pip install .`); import failed with: {err}"
        ) from err
    return _core
