"""Output directories that are complete or absent, never half written, mixed or taken.

A run's files are written into a staging directory beside the target
(``.<name>.partial-XXXX``) and renamed into place when every file is there: an interrupt
while writing leaves the target as it was (and the staging directory, which a reader never
takes for a run). A target that already holds files is refused unless the caller asks to
overwrite it, and then replaced whole, so one run's plots never sit beside another's data.

Two guards keep what users made (issue 23):

- One writer at a time: :func:`staging_dir` locks the target (``flock`` on
  ``.<name>.lock`` beside it, released by the kernel if the process dies) until
  :func:`discard`; a second ``fatpipe run -o`` of the same directory is refused at once,
  and :func:`publish` checks the target again before it replaces anything.
- ``overwrite`` replaces only a directory fatpipe wrote (:func:`foreign_entry`: a run
  directory's files, its plots, reports, captures and comparisons); anything else in it (a
  ``thesis.tex``, a folder of notes) and the directory is refused, untouched.

:func:`check_target` also refuses, before anything runs, targets that cannot be a run's own
directory (``.``, ``..``, the working directory or one of its parents, an empty name) and
names the file system would refuse at the end (too long, not UTF-8).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple, Union

__all__ = [
    "OutputExistsError",
    "OutputBusyError",
    "check_target",
    "foreign_entry",
    "staging_dir",
    "publish",
    "discard",
    "lock_directory",
    "unlock_directory",
]

PathLike = Union[str, "os.PathLike[str]"]

#: What the staging directory adds to the target's name: "." + name + ".partial-" and
#: mkdtemp's 8 random characters.
STAGING_EXTRA_BYTES = len("..partial-") + 8
#: Files fatpipe writes into a run directory (and `plot`, `report`, `compare` beside them).
OWN_SUFFIXES = frozenset({".json", ".parquet", ".png", ".svg", ".pcap", ".html", ".csv"})
#: A directory fatpipe wrote holds one of these (a run, emulation or probe; a comparison).
OWN_MARKERS = ("summary.json", "compare.json")


class OutputExistsError(FileExistsError):
    """The output directory holds files and overwriting was not asked for (or it holds
    files fatpipe did not write, which overwriting never replaces)."""


class OutputBusyError(OutputExistsError):
    """Another fatpipe process is writing the output directory now."""


def foreign_entry(directory: Path, depth: int = 0, own: Iterable[Path] = ()) -> Optional[str]:
    """The first entry of ``directory`` that fatpipe did not write, or None if fatpipe wrote
    it all: a run's files (OWN_SUFFIXES) beside a ``summary.json`` or ``compare.json``, and
    subdirectories of the same kind (``probe run --simulate`` writes ``simulated/`` and
    ``compare/``). ``own``: files the run being written has put there already (its packet
    captures, when ``capture_dir`` is the target), fatpipe's whatever else is there."""
    mine = {Path(p).resolve() for p in own}
    entries = [e for e in sorted(directory.iterdir()) if e.resolve() not in mine]
    if not entries:
        return None
    if not any(e.name in OWN_MARKERS and e.is_file() for e in entries):
        return f"{directory.name}/ (it has no summary.json: not a fatpipe run)" if depth else "(no summary.json)"
    for entry in entries:
        if entry.is_symlink():
            return entry.name
        if entry.is_dir():
            inner = foreign_entry(entry, depth + 1) if depth < 2 else entry.name
            if inner is not None:
                return f"{entry.name}/{inner}" if not inner.startswith(entry.name) else inner
        elif entry.suffix.lower() not in OWN_SUFFIXES:
            return entry.name
    return None


def _check_name(out: Path) -> None:
    """Refuses a target that is not a directory of its own, or whose path the file system
    or the result files cannot hold; raises ValueError with the reason."""
    text = os.fspath(out)
    if out.name in ("", ".", ".."):
        raise ValueError(f"{text!r} is not allowed: give a directory of its own (a run replaces its output directory whole)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{text.encode('utf-8', 'surrogateescape')!r} is not allowed: the path is not valid UTF-8 "
                         "(results name their files in JSON, which is UTF-8)") from None
    # Lengths first, on the path as written (made absolute without asking the file system,
    # which answers a name too long with an error of its own).
    absolute = Path(os.path.abspath(text))
    name_max, path_max = _limits(_existing_parent(absolute))
    for part in absolute.parts[1:]:
        size = len(os.fsencode(part))
        limit = name_max - (STAGING_EXTRA_BYTES if part == absolute.name else 0)
        if size > limit:
            raise ValueError(f"{text[:40]!r}...: a name of {size} bytes is not allowed: at most {limit} "
                             f"(the file system's {name_max}, less {STAGING_EXTRA_BYTES} for the staging directory)")
    # The longest file a run writes inside it: a capture or a plot named after a flow; the
    # directory itself leaves room for a name of 255 bytes.
    if len(os.fsencode(str(absolute))) + 1 + 255 > path_max:
        raise ValueError(f"{text[:40]!r}...: a path of {len(os.fsencode(str(absolute)))} bytes is not allowed: "
                         f"at most {path_max - 256} (the file system's {path_max}, with room for the files inside)")
    here = Path.cwd().resolve()
    resolved = out.resolve()
    if resolved == here or resolved in here.parents:
        raise ValueError(f"{text!r} is not allowed: it is the working directory or holds it; give a directory of its own")


def _existing_parent(path: Path) -> Path:
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate
        except OSError:  # a name too long on the way: its parents are asked next
            continue
    return Path("/")


def _limits(directory: Path) -> Tuple[int, int]:
    """NAME_MAX and PATH_MAX where ``directory`` is (255 and 4096 where not known)."""
    try:
        return os.pathconf(directory, "PC_NAME_MAX"), os.pathconf(directory, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 255, 4096


def check_target(outdir: PathLike, overwrite: bool, own: Iterable[Path] = ()) -> Path:
    """The target as a Path, if it may be written: absent, an empty directory, or (with
    ``overwrite``) a directory fatpipe wrote (``own``: files this run put there already, see
    :func:`foreign_entry`). Raises :class:`OutputExistsError`, ``FileExistsError`` (a file
    is in the way) or ``ValueError`` (a target that cannot be a run's directory: ``.``,
    ``..``, too long, not UTF-8)."""
    if isinstance(outdir, (str, bytes)) and not outdir:
        raise ValueError("'' is not allowed: give a directory name")
    out = Path(outdir)
    _check_name(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise OutputExistsError(
                f"{out}: the directory is not empty; choose another, or overwrite it (--overwrite, "
                "overwrite=True), which replaces it whole"
            )
        foreign = foreign_entry(out, own=own)
        if foreign is not None:
            raise OutputExistsError(
                f"{out}: overwriting replaces only a directory fatpipe wrote, and this one holds {foreign}, "
                "which fatpipe did not write; choose another directory, or move that away yourself"
            )
    return out


# ---- one writer at a time ----------------------------------------------------------------

#: Per staging directory: its target, the target's lock, whether the target may be
#: overwritten, and files of this run already there.
_RESERVED: Dict[Path, Tuple[Path, int, bool, Tuple[Path, ...]]] = {}
#: Staging directories kept (not discarded): results a publish refused to put in place.
_KEPT: set = set()


def lock_directory(target: Path) -> int:
    """Locks ``target`` for this process (``flock`` on ``.<name>.lock`` beside it) and returns
    the lock's descriptor; raises :class:`OutputBusyError` if another process holds it. The
    kernel releases the lock when the process ends, however it ends."""
    parent = target.parent if str(target.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / f".{target.name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            raise OutputBusyError(
                f"{target}: another fatpipe process{f' (pid {holder})' if holder else ''} is writing this directory now; "
                "wait for it, or choose another"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # The file may have been removed by its last holder between our open and our lock:
        # then the lock is on a file nobody else will find; start again.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)


def unlock_directory(target: Path, fd: int) -> None:
    """Releases :func:`lock_directory`'s lock and removes its file."""
    parent = target.parent if str(target.parent) else Path(".")
    try:
        os.unlink(parent / f".{target.name}.lock")
    except OSError:
        pass
    os.close(fd)


def staging_dir(outdir: PathLike, overwrite: bool = False, own: Iterable[Path] = ()) -> Path:
    """A new, empty staging directory beside ``outdir`` (same file system, so that
    :func:`publish` is a rename), creating ``outdir``'s parent if needed. ``outdir`` is
    locked until :func:`discard` (raises :class:`OutputBusyError` if another process writes
    it now); ``overwrite`` is what :func:`publish` may do to a directory found there."""
    out = Path(outdir)
    fd = lock_directory(out)
    try:
        parent = out.parent if str(out.parent) else Path(".")
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=parent))
        # mkdtemp makes it private (0700); the published directory gets the usual permissions.
        os.chmod(staging, 0o777 & ~_umask())
    except BaseException:
        unlock_directory(out, fd)
        raise
    _RESERVED[staging] = (out, fd, overwrite, tuple(own))
    return staging


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publish(staging: Path, outdir: PathLike) -> Path:
    """Renames the finished ``staging`` directory to ``outdir``, replacing what was there if
    :func:`staging_dir` was told it may (and fatpipe wrote it). The target is checked again
    first: a directory that appeared meanwhile is never replaced without leave."""
    out = Path(outdir)
    _, _, overwrite, own = _RESERVED.get(staging, (None, None, False, ()))
    if out.is_dir() and any(out.iterdir()):
        try:
            check_target(out, overwrite, own)
        except OutputExistsError as err:
            # Something else wrote there while this run went on: its results stay where
            # they are, and the message says where.
            _KEPT.add(staging)
            raise OutputExistsError(f"{err}; it appeared while this run went on, whose results are kept in {staging}") from None
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=staging.parent))
        os.rename(out, old / out.name)
        os.rename(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        if out.is_dir():
            out.rmdir()  # empty: rename(2) would replace it, but say so
        os.rename(staging, out)
    return out


def discard(staging: Path) -> None:
    """Removes ``staging`` if it is still there (not published) and releases the lock."""
    if staging in _KEPT:
        _KEPT.discard(staging)
    else:
        shutil.rmtree(staging, ignore_errors=True)
    reserved = _RESERVED.pop(staging, None)
    if reserved is not None:
        unlock_directory(reserved[0], reserved[1])
