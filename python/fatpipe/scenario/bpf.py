"""``cc = { bpf = "algo.bpf.o" }``: a congestion control written as a BPF struct_ops program
(``struct tcp_congestion_ops``, as the Linux kernel takes it), which ``fatpipe run`` runs in
the core's eBPF interpreter and ``fatpipe emulate`` registers with the kernel: one source for
both (docs/emulation.md, "Writing a BPF congestion control").

A ``.c`` file is compiled on the fly with clang (``-O2 -g -target bpf``, fatpipe's headers on
the include path) into a cache keyed by the source's and the headers' SHA-256, so the same
source is compiled once. ``parameters`` set the program's ``const volatile`` globals by name
(``x`` fills ``x``, a fraction ``x`` fills ``x_q20``, a duration ``x`` fills ``x_us``); the
core checks them against the object."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Dict, Iterator, Optional, Tuple

from .kinds import Boolean, Duration, Integer
from .schema import Field, Kind, ScenarioError, Table, _fail, _join
from ..units import UnitError

#: fatpipe's BPF headers and programs (the repository's bpf/ links here).
BPF_DIR = Path(__file__).resolve().parent.parent / "bpf"

#: The directory relative paths start from: the scenario file's while one is loaded
#: (document.load), else the working directory.
_BASE: ContextVar[Optional[Path]] = ContextVar("bpf_base", default=None)


@contextmanager
def paths_relative_to(base: Optional[Path]) -> Iterator[None]:
    token = _BASE.set(base)
    try:
        yield
    finally:
        _BASE.reset(token)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fatpipe" / "bpf"


def compile_source(source: Path, path: str) -> Path:
    """The object for C source ``source``: compiled by clang into the cache unless there."""
    digest = hashlib.sha256(source.read_bytes())
    for header in sorted(BPF_DIR.glob("*.h")):
        digest.update(header.read_bytes())
    out = _cache_dir() / f"{source.stem}-{digest.hexdigest()[:16]}.o"
    if out.exists():
        return out
    clang = os.environ.get("CLANG", "clang")
    if shutil.which(clang) is None:
        raise ScenarioError(f"{path}: {source} needs {clang} to compile it, which is not installed (Debian: apt-get install clang)", path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run(
        [clang, "-O2", "-g", "-target", "bpf", "-I", str(BPF_DIR), "-I", str(source.parent), "-c", str(source), "-o", str(tmp)],
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "")
        raise ScenarioError(f"{path}: {clang} could not compile {source}: {first}", path)
    os.replace(tmp, out)
    return out


class ObjectPath(Kind):
    """A BPF object (``.o``) or its C source (``.c``, compiled on the fly): (the absolute path
    of the object, the path as the scenario wrote it)."""

    type_doc = "path of a .o or .c file"

    def parse(self, value: Any, path: str) -> Tuple[str, str]:
        if not isinstance(value, str) or not value:
            raise _fail(path, value, 'expected the path of a BPF object or its C source, such as "algo.bpf.o"')
        p = Path(value).expanduser()
        base = _BASE.get()
        if not p.is_absolute() and base is not None:
            p = base / p
        if not p.is_file():
            raise ScenarioError(f"{path}: {value!r}: no such file", path)
        if p.suffix == ".c":
            return str(compile_source(p.resolve(), path)), value
        if p.suffix != ".o":
            raise _fail(path, value, "expected a .o (compiled with clang -O2 -g -target bpf) or a .c file")
        return str(p.resolve()), value


class Parameters(Kind):
    """The program's parameters: numbers and booleans as they are, durations ("50ms") to the
    core's picoseconds under ``<key>_ps`` (a program's ``<key>_us``)."""

    type_doc = "table of numbers, booleans and durations"

    def parse(self, value: Any, path: str) -> Dict[str, Any]:
        if not isinstance(value, dict):
            raise _fail(path, value, "expected a table of the program's parameters")
        out: Dict[str, Any] = {}
        for key, v in value.items():
            sub = _join(path, str(key))
            if isinstance(v, bool) or isinstance(v, (int, float)):
                out[key] = v
            elif isinstance(v, str):
                try:
                    out[f"{key}_ps"] = Duration().convert(v)
                except UnitError:
                    raise _fail(sub, v, "expected a number, a boolean or a duration such as \"50ms\"") from None
            else:
                raise _fail(sub, v, "expected a number, a boolean or a duration such as \"50ms\"")
        return out


#: Linux's timer frequency, jiffies per second, for a program's clock here and for the Linux
#: forms that count time in jiffies (congestion.py).
KERNEL_HZ = 250
KERNEL_HZ_SOURCE = "Linux CONFIG_HZ: kernel/Kconfig.hz defaults to HZ_250"

BPF_TABLE = Table(
    fields=(
        Field("bpf", ObjectPath(), "the program: a BPF object (clang -O2 -g -target bpf) or its C source, "
              "compiled on the fly; a relative path starts from the scenario file's directory (from the "
              "working directory for a scenario given as a dict)"),
        Field("parameters", Parameters(), "values of the program's const volatile globals, by name "
              "(x fills x, a fraction x fills x_q20 in units of 2^-20, a duration x fills x_us)", {},
              "none: the program's own defaults"),
        Field("kernel_hz", Integer(minimum=1, maximum=100_000, example=KERNEL_HZ),
              "jiffies per second of the clock the program reads (bpf_jiffies64, lsndtime) in the "
              "simulator; the kernel's own in fatpipe emulate", KERNEL_HZ, KERNEL_HZ_SOURCE),
        Field("jit", Boolean(), "run the program as x86-64 machine code compiled by fatpipe's BPF JIT "
              "instead of interpreting it in fatpipe run: the same results, less time per ACK (x86-64 "
              "Linux only; elsewhere true is refused); fatpipe emulate leaves the program to the kernel, "
              "which has its own JIT", False,
              "the interpreter, which runs on every platform (the JIT, x86-64 Linux only, gives the "
              "same summaries when asked for: tests/test_bpf_cc.py)"),
    ),
    doc="A congestion control written as a BPF struct_ops program (struct tcp_congestion_ops), "
    'cc = { bpf = "algo.bpf.c" } (algorithm = "bpf" may be left out): run by the core\'s eBPF interpreter '
    "(or, with jit = true, its x86-64 JIT) in fatpipe run and registered with the kernel by fatpipe emulate (docs/emulation.md).",
)


def normalize_bpf(values: Dict[str, Any], path: str) -> Dict[str, Any]:
    obj, source = values["bpf"]
    return {
        "algorithm": "bpf",
        "object": obj,
        "source": source,
        "parameters": dict(values["parameters"] or {}),
        "kernel_hz": int(values["kernel_hz"]),
        "jit": bool(values["jit"]),
    }
