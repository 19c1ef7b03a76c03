"""Output directories that are complete or absent, never half written or mixed.

A run's files are written into a staging directory beside the target
(``.<name>.partial-XXXX``) and renamed into place when every file is there: an interrupt
while writing leaves the target as it was (and the staging directory, which a reader never
takes for a run). A target that already holds files is refused unless the caller asks to
overwrite it, and then replaced whole, so one run's plots never sit beside another's data.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Union

__all__ = ["OutputExistsError", "check_target", "staging_dir", "publish", "discard"]

PathLike = Union[str, "os.PathLike[str]"]


class OutputExistsError(FileExistsError):
    """The output directory holds files and overwriting was not asked for."""


def check_target(outdir: PathLike, overwrite: bool) -> Path:
    """The target as a Path, if it may be written: absent, an empty directory, or (with
    ``overwrite``) any directory. Raises :class:`OutputExistsError` or ``FileExistsError``
    (a file is in the way)."""
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a directory")
    if out.is_dir() and not overwrite and any(out.iterdir()):
        raise OutputExistsError(
            f"{out}: the directory is not empty; choose another, or overwrite it (--overwrite, "
            "overwrite=True), which replaces it whole"
        )
    return out


def staging_dir(outdir: PathLike) -> Path:
    """A new, empty staging directory beside ``outdir`` (same file system, so that
    :func:`publish` is a rename), creating ``outdir``'s parent if needed."""
    out = Path(outdir)
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=parent))
    # mkdtemp makes it private (0700); the published directory gets the usual permissions.
    os.chmod(staging, 0o777 & ~_umask())
    return staging


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publish(staging: Path, outdir: PathLike) -> Path:
    """Renames the finished ``staging`` directory to ``outdir``, replacing what was there."""
    out = Path(outdir)
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=staging.parent))
        os.rename(out, old / out.name)
        os.rename(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, out)
    return out


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
