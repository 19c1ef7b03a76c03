"""``cc = { python = "module:Class", ...parameters }``: a congestion control written in
Python (docs/python-cc.md), called by the core on every ACK (``mode = "ack"``, the hooks of
Linux's ``tcp_congestion_ops``) or once per report (``mode = "report"``, as CCP).

The class is imported (or, in a scenario given as a dict, may be the class itself) and
checked for its hooks when the scenario is loaded, so a module that does not import or a
class without hooks is one line naming the flow. Every key besides ``python``, ``mode`` and
``report`` is a keyword argument of the class's constructor (or put them in ``parameters``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from .bpf import _BASE
from .kinds import Choice, Duration
from .schema import Field, Kind, ScenarioError, Table, _fail, _join

#: The hooks a per-ACK class may define (Linux ``struct tcp_congestion_ops``), and what
#: each mode requires.
HOOKS = ("init", "ssthresh", "cong_avoid", "set_state", "cwnd_event", "pkts_acked", "undo_cwnd", "cong_control")
RESERVED_KEYS = ("algorithm", "python", "mode", "report", "parameters")

#: Classes given as objects (``cc = {"python": MyClass}`` in a dict scenario), by the
#: "module:Class" name the normalized scenario records; the runner hands them to the core.
_GIVEN: Dict[str, type] = {}


def class_name(cls: Any) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def import_class(spec: str, path: str, directory: Optional[str] = None) -> Any:
    """The class "module:Class" names (its module looked for in ``directory``, else beside
    the scenario file being loaded, then on the Python path); one line naming ``path`` if it
    cannot be had."""
    if spec in _GIVEN:
        return _GIVEN[spec]
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise _fail(path, spec, 'expected "module:Class" (the module importable from the Python path)')
    # A module beside the scenario file imports as it would from there (as cc = { bpf = ... }
    # finds its file): the scenario's directory leads the path while the module is imported.
    base = directory if directory is not None else _BASE.get()
    added = base is not None and str(base) not in sys.path
    if added:
        sys.path.insert(0, str(base))
    try:
        obj: Any = importlib.import_module(module)
    except Exception as err:  # the user's module: any error in it is the user's to see
        raise ScenarioError(f"{path}: {spec!r}: module {module} does not import: {type(err).__name__}: {err}", path) from None
    finally:
        if added:
            sys.path.remove(str(base))
    for part in name.split("."):
        if not hasattr(obj, part):
            raise ScenarioError(f"{path}: {spec!r}: module {module} has no {name}", path)
        obj = getattr(obj, part)
    return obj


def check_hooks(cls: Any, spec: str, mode: str, path: str) -> None:
    """One line if the class lacks what ``mode`` calls (the binding checks the same)."""
    has = lambda hook: callable(getattr(cls, hook, None))  # noqa: E731
    if mode == "ack" and not (has("ssthresh") and (has("cong_avoid") or has("cong_control"))):
        lacks = "cong_avoid and cong_control" if has("ssthresh") else "ssthresh"
        raise ScenarioError(
            f'{path}: {spec} lacks {lacks}: a per-ACK controller (mode = "ack") needs ssthresh, and cong_avoid or cong_control',
            path,
        )
    if mode == "report" and not has("on_report"):
        raise ScenarioError(f'{path}: {spec} has no on_report: a per-report controller (mode = "report") needs on_report(report)', path)


class ClassSpec(Kind):
    """"module:Class", or the class itself (in a scenario given as a dict): (the name, the
    directory its module was found in when that is beside the scenario file, else None)."""

    type_doc = '"module:Class"'

    def parse(self, value: Any, path: str) -> Tuple[str, Optional[str]]:
        if isinstance(value, type):
            spec = class_name(value)
            _GIVEN[spec] = value
            return spec, None
        if not isinstance(value, str):
            raise _fail(path, value, 'expected "module:Class" or the class itself')
        cls = import_class(value, path)
        # Where the module was found, when beside the scenario file: a run in another
        # process (a sweep's worker) imports it from there too.
        base = _BASE.get()
        origin = getattr(sys.modules.get(getattr(cls, "__module__", "")), "__file__", None)
        beside = base is not None and origin is not None and Path(origin).resolve().parent == Path(base).resolve()
        return value, str(base) if beside else None


class ReportEvery(Kind):
    """"rtt", a number of ACKs, or a duration: when a report interval ends."""

    type_doc = '"rtt", a number of ACKs, or a duration'

    def parse(self, value: Any, path: str) -> Dict[str, Any]:
        if value == "rtt":
            return {"every": "rtt"}
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise _fail(path, value, 'expected "rtt", a number of ACKs >= 1, or a duration such as "10ms"')
            return {"every": "acks", "acks": value}
        try:
            return {"every": "time", "time_ps": Duration().parse(value, path)}
        except ScenarioError:
            raise _fail(path, value, 'expected "rtt", a number of ACKs >= 1, or a duration such as "10ms"') from None


class Parameters(Kind):
    type_doc = "table"

    def parse(self, value: Any, path: str) -> Dict[str, Any]:
        if not isinstance(value, Mapping):
            raise _fail(path, value, "expected a table of the constructor's keyword arguments")
        return dict(value)


PYTHON_TABLE = Table(
    fields=(
        Field("python", ClassSpec(), 'the class, "module:Class", imported from the scenario file\'s directory, then '
              "from the Python path (in a scenario given as a dict, the class itself)"),
        Field("mode", Choice(("ack", "report")), 'when the class is called: "ack", every hook of Linux\'s '
              'tcp_congestion_ops on every ACK; "report", on_report(report) once per report interval, whose '
              "cwnd and pacing rate the core applies", "ack",
              "issue 29: the per-ACK hooks are the ones the core's algorithms have"),
        Field("report", ReportEvery(), 'mode = "report": a report ends at the first ACK one smoothed RTT ("rtt"), '
              "N ACKs (a number) or a duration after it began", "rtt",
              "CCP's usual report once per RTT (Narayan et al., SIGCOMM 2018)"),
        Field("parameters", Parameters(), "keyword arguments of the class's constructor; any other key of the "
              "table is one too", {}, "none: the constructor's own defaults"),
    ),
    doc='A congestion control written in Python, cc = { python = "module:Class", ...parameters } (algorithm = '
    '"python" may be left out): the core calls the class on every ACK or once per report (docs/python-cc.md).',
)


def python_value(value: Mapping[str, Any], tag: str) -> Dict[str, Any]:
    """``cc = { python = ..., key = value }``: the keys that are not the table's become
    ``parameters`` (the constructor's keyword arguments)."""
    out: Dict[str, Any] = {tag: "python"}
    extra: Dict[str, Any] = {}
    for key, v in value.items():
        if key in ("python", "mode", "report", "parameters"):
            out[key] = v
        elif key != tag:
            extra[key] = v
    if extra:
        given = out.get("parameters") or {}
        out["parameters"] = {**given, **extra} if isinstance(given, Mapping) else given
    return out


def normalize_python(values: Dict[str, Any], path: str) -> Dict[str, Any]:
    (spec, module_dir), mode = values["python"], values["mode"]
    check_hooks(import_class(spec, _join(path, "python"), module_dir), spec, mode, _join(path, "python"))
    report = values["report"]
    every: Any = "rtt" if report["every"] == "rtt" else (
        {"acks": report["acks"]} if report["every"] == "acks" else {"time_ps": report["time_ps"]})
    return {
        "algorithm": "python",
        "class": spec,
        "module_dir": module_dir,
        "parameters": dict(values["parameters"] or {}),
        "mode": mode,
        "report_every": every,
    }


def controllers(core_doc: Mapping[str, Any]) -> Dict[int, Any]:
    """The classes of the normalized scenario's Python flows, by flow index, for the core
    (``_core.Simulation(doc, controllers=...)``): those given as objects, others imported."""
    out: Dict[int, Any] = {}
    for i, flow in enumerate(core_doc.get("flows", [])):
        cc = flow.get("cc") or {}
        if cc.get("algorithm") == "python":
            out[i] = import_class(cc["class"], f"flows[{i}].cc.python", cc.get("module_dir"))
    return out
