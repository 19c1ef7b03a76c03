"""Running a sweep: every valid point in parallel, resumable, failures recorded.

Layout of the output directory::

    OUTDIR/summary.parquet   one row per run (summary.csv: the same as CSV)
    OUTDIR/failures.json     the runs that failed or were invalid, with their errors
    OUTDIR/runs/<run_id>/    what `fatpipe run` writes for that run, plus done.json

``done.json`` is written last, atomically: a run is finished when its directory holds it and
it records the SHA-256 of the normalized scenario the point now has (a changed sweep or base
scenario runs the point again), the build of fatpipe that ran it (`build_fingerprint`: a
rebuilt or upgraded simulator runs it again), and every file it lists is still there with
the size and SHA-256 recorded when the run finished, its results those of its summary.json
(a truncated or edited file, or an edited done.json, runs the point again, and the sweep
says so). Finished runs are read back, not run again; failed ones are retried.

One sweep at a time writes a directory (a lock beside it, `outdir.lock_directory`). Worker
processes end with the sweep, however it ends (`_worker_start`); Ctrl-C stops the runs at
once and writes the summary of those that finished (the others are "interrupted").

Runs go to a pool of worker processes (default) or threads on this machine, or to a Dask
cluster; each worker runs :func:`run_task`, which never raises for a failing run: it
returns the error, so one bad run does not stop the others.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import math
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from .outdir import OutputBusyError, lock_directory, unlock_directory
from .sweeps import Point, Sweep, SweepError

__all__ = [
    "sweep",
    "run_sweep",
    "SweepOutcome",
    "RunTask",
    "run_task",
    "flatten_summary",
    "EXECUTORS",
    "default_jobs",
    "require_dask",
    "SweepInterrupted",
]

PathLike = Union[str, "os.PathLike[str]"]

EXECUTORS = ("processes", "threads")
#: Written last in a finished run's directory.
DONE_FILE = "done.json"
#: Present while a worker runs the point: tells which runs a dead worker process had.
RUNNING_FILE = "running.json"
#: Left in a failed run's directory (the next sweep retries it).
FAILED_FILE = "failed.json"
#: A task whose worker pool broke this many times without it being found to be the cause
#: is given up (the pool keeps dying before runs start: the environment is at fault).
MAX_POOL_BREAKS = 3
#: A thread running a point gives up between two chunks of its run once this is set (Ctrl-C
#: of a sweep on threads; worker processes are killed instead).
_CANCEL = threading.Event()
INTERRUPTED = "the sweep was interrupted before this run finished; run the sweep again to finish it"
WORKER_DIED = (
    "the worker process died while running this point (killed, out of memory, or the core "
    "aborted); it was retried alone and died again"
)


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run (picklable; no reference to the sweep)."""

    run_id: str
    run_dir: str
    core: Dict[str, Any]
    scenario_sha256: str
    plots: bool
    #: The simulator that runs it (`build_fingerprint`), recorded in done.json.
    build: str = ""


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


# ---- one run (in a worker) -------------------------------------------------------------


def flatten_summary(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """A run's ``summary.json`` as one flat row: the run's scalar fields (events,
    duration_s, total_goodput_bps, fatpipe_version, ...), then ``flows.<name>.<key>`` for
    every field of every flow (goodput_bps, segments_retransmitted, timeouts, ...) and
    ``links.<name>.<key>`` for every link (utilization, drops by cause, ...; a holding
    discipline's entry as ``links.<name>.aqm.<key>``, DualPI2's queues as
    ``links.<name>.aqm.dualpi2.l4s.<key>``), and for a flow with transfers
    ``flows.<name>.transfers.<n>.<key>`` per transfer. The name and seed are left out (the
    sweep's own columns say them)."""
    row: Dict[str, Any] = {}
    for key, value in summary.items():
        if key not in ("name", "seed", "flows", "links") and not isinstance(value, (dict, list)):
            row[key] = value
    for group in ("flows", "links"):
        for entry in summary.get(group, []):
            _flatten_into(row, f"{group}.{entry['name']}", {k: v for k, v in entry.items() if k != "name"})
            # A flow with transfers: flows.<name>.transfers.<n>.<key>, n from 1.
            for n, transfer in enumerate(entry.get("transfers") or [], start=1):
                for key, value in transfer.items():
                    row[f"{group}.{entry['name']}.transfers.{n}.{key}"] = value
    return row


def _flatten_into(row: Dict[str, Any], prefix: str, table: Mapping[str, Any]) -> None:
    """``prefix.key`` for each scalar of ``table``, nested tables continuing the path; lists
    are left to their callers."""
    for key, value in table.items():
        if isinstance(value, Mapping):
            _flatten_into(row, f"{prefix}.{key}", value)
        elif not isinstance(value, list):
            row[f"{prefix}.{key}"] = value


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep; the summary of the runs that finished was written."""


def _simulate(task: RunTask) -> Dict[str, Any]:
    """Runs the point, writes its files; returns the flattened summary."""
    from .runner import run

    result = run(task.core, on_warning=lambda message: None, cancel=_CANCEL)  # warnings kept in its summary.json; not said per run
    result.write_files(task.run_dir, plots=task.plots)  # run_task publishes with done.json
    return flatten_summary(result.summary)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or "(no message)"
    return f"{type(err).__name__}: {text}"


def _write_json_atomic(path: Path, data: Any) -> None:
    # Not sorted: the results keep the order of summary.json (flows and links in scenario
    # order), so a row read back from done.json has the columns of a fresh one.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run_task(task: RunTask) -> Dict[str, Any]:
    """Runs one point in its own directory (emptied first) and records the outcome there.

    Returns ``{"status": "ok", "results": row}`` or ``{"status": "failed", "error": one
    line}``; never raises for a failing run -- a Rust panic in the core arrives as
    ``pyo3_runtime.PanicException``, a BaseException, and is caught too -- only for
    KeyboardInterrupt and SystemExit.
    """
    run_dir = Path(task.run_dir)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    (run_dir / RUNNING_FILE).write_text(json.dumps({"pid": os.getpid()}) + "\n", encoding="utf-8")
    start = time.perf_counter()
    try:
        results = _simulate(task)
        wall_s = time.perf_counter() - start
        files = {p.name: _file_record(p) for p in sorted(run_dir.iterdir()) if p.name != RUNNING_FILE}
        _write_json_atomic(
            run_dir / DONE_FILE,
            {
                "run_id": task.run_id,
                "scenario_sha256": task.scenario_sha256,
                "build": task.build,
                "plots": task.plots,
                "files": files,
                "results": results,
                "wall_s": wall_s,
            },
        )
        return {"status": "ok", "results": results}
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: B036 - PanicException derives from BaseException
        error = _one_line(err)
        try:
            _write_json_atomic(run_dir / FAILED_FILE, {"run_id": task.run_id, "error": error})
        except OSError:
            pass  # the error is still returned
        return {"status": "failed", "error": error}
    finally:
        try:
            (run_dir / RUNNING_FILE).unlink()
        except OSError:
            pass


@functools.lru_cache(maxsize=1)
def build_fingerprint() -> str:
    """What identifies the simulator that produces a run's results: the SHA-256 of the
    compiled core and of the package's Python sources (the summary's derived metrics are
    computed there). A run made by another build is not reused, so an upgraded or rebuilt
    fatpipe never mixes its results with an older one's. Computed once per process (a few
    megabytes read)."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    core = importlib.util.find_spec("fatpipe._core")
    paths = sorted(package.rglob("*.py"))
    if core is not None and core.origin:
        paths.append(Path(core.origin))
    for path in paths:
        digest.update(str(path.relative_to(package) if path.is_relative_to(package) else path.name).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _file_record(path: Path) -> Dict[str, Any]:
    """A finished run's file as done.json records it: its size and SHA-256."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def verify_finished(
    run_dir: Path, scenario_sha256: str, plots: bool, build: Optional[str] = None
) -> "tuple[Optional[Dict[str, Any]], Optional[str]]":
    """(results, None) for a finished run of exactly this scenario by this build of fatpipe
    (`build_fingerprint`, unless given) whose files are as they were when it finished;
    (None, None) for a run to do (none yet, another scenario, another build, plots wanted
    now and not drawn then); (None, why) for a finished run that does not verify: a file
    missing, of another size or content than done.json records, or done.json's results not
    those of its summary.json."""
    try:
        record = json.loads((run_dir / DONE_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as err:
        return None, f"{DONE_FILE} cannot be read ({_one_line(err)})"
    if not isinstance(record, dict) or record.get("scenario_sha256") != scenario_sha256:
        return None, None
    if record.get("build") != (build if build is not None else build_fingerprint()):
        return None, None
    if plots and not record.get("plots"):
        return None, None
    files = record.get("files")
    if not isinstance(files, dict) or "summary.json" not in files:
        return None, f"{DONE_FILE} records no sizes and hashes of the run's files"
    for name, expected in files.items():
        path = run_dir / str(name)
        if not path.is_file():
            return None, f"{name} is missing"
        if not isinstance(expected, dict) or path.stat().st_size != expected.get("bytes"):
            return None, f"{name} has {path.stat().st_size} bytes, {DONE_FILE} recorded {expected.get('bytes') if isinstance(expected, dict) else '?'}"
        if _file_record(path)["sha256"] != expected.get("sha256"):
            return None, f"{name} changed since the run finished (its SHA-256 differs)"
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return None, f"summary.json cannot be read ({_one_line(err)})"
    results = record.get("results")
    # Compared as dicts (summary.json's keys are sorted); done.json's keep a fresh row's order.
    if not isinstance(summary, dict) or not isinstance(results, dict) or results != flatten_summary(summary):
        return None, f"{DONE_FILE}'s results are not those of summary.json (edited?)"
    return results, None


# ---- executing many ----------------------------------------------------------------------

OnResult = Callable[[RunTask, Dict[str, Any]], None]
TaskFn = Callable[[RunTask], Dict[str, Any]]


def processes_unavailable() -> Optional[str]:
    """Why worker processes cannot start here, or None. A forkserver or spawned worker
    re-imports the main module from its file; a script read from standard input
    (``python - < script.py``) has none, so every worker would die at start (and a sweep
    used to report only that "worker processes kept dying"). The core releases the GIL, so
    threads are the fallback that runs in parallel as well."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is not None and not os.path.isfile(path):
        return (f"worker processes re-import the main script from its file, and this one, {path!r}, "
                "is not a file (a script read from standard input?); save it to a file to use processes")
    return None


def _main_guard_missing() -> Optional[str]:
    """Why worker processes would rerun this sweep, or None. A spawned or forkserver worker
    re-imports the main script (as ``__mp_main__``; multiprocessing skips only a package's
    ``__main__``, as ``python -m fatpipe``), running its top level again: a sweep called
    there outside ``if __name__ == "__main__":`` starts again in every worker, which dies
    starting processes of its own, and the sweep used to end with "worker processes kept
    dying". Found from the line of the main script's top level that led here."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    if main is None or path is None or not os.path.isfile(path):
        return None
    if spec_name is not None and (spec_name == "__main__" or spec_name.endswith(".__main__")):
        return None
    frame = sys._getframe()
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.If) and _is_main_guard(node.test) and node.lineno <= line <= (node.end_lineno or line):
            return None
    return (f"{path}, line {line}, runs the sweep outside `if __name__ == \"__main__\":`, and every worker "
            "process re-runs the script's top level; put the sweep under that guard to use processes")


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def _mp_context() -> Any:
    # forkserver: workers start from a clean process (fork after threads -- tqdm's monitor,
    # pyarrow's pools -- can deadlock), and cheaper than spawn. spawn where there is none.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _failure(error: str) -> Dict[str, Any]:
    return {"status": "failed", "error": error}


def _run_local(
    tasks: Sequence[RunTask],
    jobs: int,
    executor: str,
    on_result: OnResult,
    task_fn: TaskFn = run_task,
) -> None:
    """Runs ``tasks`` on ``jobs`` threads or processes, calling ``on_result`` as each ends.

    If a worker process dies (the pool breaks), every unfinished run is resubmitted; the
    ones that were running (their ``running.json`` is still there) are first retried one at
    a time alone, so the run that kills its worker is recorded as failed and the others,
    killed with it, are not.
    """
    breaks: Dict[str, int] = {}
    queue = list(tasks)
    while queue:
        broken = _run_pool(queue, jobs, executor, on_result, task_fn)
        queue = []
        suspects = [t for t in broken if (Path(t.run_dir) / RUNNING_FILE).exists()]
        for task in suspects:
            alone = _run_pool([task], 1, executor, on_result, task_fn)
            if alone:
                on_result(task, _failure(WORKER_DIED))
        suspect_ids = {t.run_id for t in suspects}
        for task in broken:
            if task.run_id in suspect_ids:
                continue
            breaks[task.run_id] = breaks.get(task.run_id, 0) + 1
            if breaks[task.run_id] >= MAX_POOL_BREAKS:
                on_result(task, _failure("worker processes kept dying before this point could run"))
            else:
                queue.append(task)


def _run_pool(
    tasks: Sequence[RunTask], jobs: int, executor: str, on_result: OnResult, task_fn: TaskFn
) -> List[RunTask]:
    """One pool for ``tasks``; returns those lost when the pool broke (none normally)."""
    if executor == "threads":
        pool: Any = ThreadPoolExecutor(max_workers=jobs)
    else:
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_mp_context(), initializer=_worker_start,
                                   initargs=(os.getpid(),))
    broken: List[RunTask] = []
    try:
        futures: Dict[Future, RunTask] = {}
        for t in tasks:
            try:
                futures[pool.submit(task_fn, t)] = t
            except BrokenProcessPool:  # a worker died while the rest were being submitted
                broken.append(t)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = futures[future]
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    broken.append(task)
                    continue
                except Exception as err:  # e.g. the task could not be sent to the worker
                    outcome = _failure(_one_line(err))
                on_result(task, outcome)
    except BaseException:
        # Ctrl-C (or any error here): nothing more starts, and the running points stop now
        # instead of finishing (a worker process is killed, a thread gives up between two
        # chunks of its run).
        _CANCEL.set()
        for process in (getattr(pool, "_processes", None) or {}).values():
            process.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return broken


def _worker_start(parent_pid: int) -> None:
    """In each worker process: leave Ctrl-C to the sweep (which stops the workers itself,
    and would otherwise see every worker take up its next point), and end when the sweep
    ends, however it ends: after a `kill -9` of the sweep a worker that went on would write
    into the directory while a resumed sweep writes there too."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with, args=(parent_pid,), name="fatpipe-sweep-parent", daemon=True).start()


def _end_with(pid: int) -> None:
    """Ends this process as soon as process ``pid`` has ended."""
    try:
        import select

        fd = os.pidfd_open(pid)  # Linux 5.3+: readable once the process has ended
        select.select([fd], [], [])
    except (AttributeError, OSError):
        while True:  # elsewhere: look every half second
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                pass
            time.sleep(0.5)
    os._exit(1)


def require_dask() -> None:
    """Raises ImportError, saying how to install it, if Dask's distributed is missing."""
    try:
        import distributed  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "--dask needs Dask's distributed scheduler: pip install 'dask[distributed]' "
            f"(or pip install 'fatpipe[dask]'); import failed with: {err}"
        ) from err


def _run_dask(tasks: Sequence[RunTask], address: str, jobs: Optional[int], on_result: OnResult, task_fn: TaskFn = run_task) -> None:
    """Runs ``tasks`` on a Dask cluster: ``address`` is a scheduler's (tcp://host:8786) or
    ``"local"`` for a LocalCluster of ``jobs`` single-threaded worker processes. The workers
    write into the run directories, so OUTDIR must be on a file system they share."""
    require_dask()
    import logging

    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address == "local":
        cluster = LocalCluster(
            n_workers=jobs or default_jobs(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as err:
            raise SweepError(f"cannot connect to the Dask scheduler at {address}: {_one_line(err)}") from None
    try:
        futures = {client.submit(task_fn, t, pure=False): t for t in tasks}
        for future in as_completed(list(futures)):
            task = futures[future]
            try:
                outcome = future.result()
            except Exception as err:  # KilledWorker, a worker without fatpipe, ...
                outcome = _failure(_one_line(err))
            if outcome.get("status") == "ok" and not (Path(task.run_dir) / DONE_FILE).is_file():
                outcome = _failure(
                    f"the worker finished but {task.run_dir} is not visible here: OUTDIR must be "
                    "on a file system shared with the Dask workers"
                )
            on_result(task, outcome)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ---- the sweep -----------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did: ``summary`` (one row per point, in the sweep's order),
    how many runs were ``ran`` now and ``reused`` from an earlier sweep, and ``failures``
    (the rows of failed and invalid runs, as written to failures.json)."""

    outdir: Path
    summary: Any  # pandas.DataFrame
    ran: int
    reused: int
    failures: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _check_jobs(jobs: Optional[int]) -> Optional[int]:
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise SweepError(f"jobs: {jobs!r} is not allowed: expected a whole number >= 1")
    return jobs


def run_sweep(
    sweep: Sweep,
    outdir: PathLike,
    jobs: Optional[int] = None,
    executor: str = "processes",
    dask: Optional[str] = None,
    plots: bool = False,
    progress: bool = False,
    points: Optional[List[Point]] = None,
) -> SweepOutcome:
    """Runs every valid point of ``sweep`` not already finished in ``outdir``; writes
    ``summary.parquet``, ``summary.csv`` and ``failures.json``.

    Args:
        jobs: parallel runs (default: the cores of this machine; with ``dask="local"`` the
            number of workers). Not allowed with a remote Dask scheduler.
        executor: ``"processes"`` or ``"threads"`` (the core releases the GIL while it
            simulates, so threads run in parallel too; processes also parallelize the Python
            around each run: building results, writing Parquet).
        dask: ``"local"`` or a scheduler address such as ``"tcp://host:8786"``.
        plots: draw each run's PNG plots (off by default: they cost more than small runs).
        progress: a progress bar (counts, failures, ETA) on stderr.
        points: ``sweep.points()`` if already computed.

    Raises :class:`SweepError` if no point is valid (nothing is run then), the arguments are
    wrong, or a Dask scheduler cannot be reached.
    """
    jobs = _check_jobs(jobs)
    if executor not in EXECUTORS:
        raise SweepError(f"executor: {executor!r} is not allowed: expected one of: {', '.join(EXECUTORS)}")
    if dask is not None and dask != "local" and jobs is not None:
        raise SweepError(
            "jobs: not allowed with a Dask scheduler address: the cluster's workers set the "
            "parallelism (jobs applies to local runs and dask=\"local\")"
        )
    if points is None:
        points = sweep.points()
    valid = [p for p in points if p.valid]
    if not valid:
        first = points[0]
        raise SweepError(f"every point is invalid; the first ({first.label()}): {first.error}")
    if len(valid) < len(points):
        # Said before the runs, not only in the summary's error column.
        first = next(p for p in points if not p.valid)
        print(f"fatpipe: sweep {sweep.name}: {len(points) - len(valid)} of {len(points)} points are invalid and "
              f"will not run (failures.json lists them); the first ({first.label()}): {first.error}", file=sys.stderr)

    out = Path(outdir).resolve()
    (out / "runs").mkdir(parents=True, exist_ok=True)
    try:
        lock = lock_directory(out)
    except OutputBusyError as err:
        raise SweepError(f"output directory {err}") from None
    try:
        return _run_locked(sweep, out, points, valid, jobs, executor, dask, plots, progress)
    finally:
        unlock_directory(out, lock)


def _run_locked(sweep: Sweep, out: Path, points: List[Point], valid: List[Point], jobs: Optional[int], executor: str,
                dask: Optional[str], plots: bool, progress: bool) -> SweepOutcome:
    outcomes: Dict[str, Dict[str, Any]] = {}
    tasks: List[RunTask] = []
    unverified: List[str] = []
    build = build_fingerprint()
    for point in valid:
        run_dir = out / "runs" / point.run_id
        sha = point.scenario_sha256 or ""
        results, why = verify_finished(run_dir, sha, plots, build)
        if results is not None:
            outcomes[point.run_id] = {"status": "ok", "results": results}
        else:
            if why is not None:
                unverified.append(f"{point.run_id} ({why})")
            tasks.append(RunTask(point.run_id, str(run_dir), point.core or {}, sha, plots, build))
    reused = len(outcomes)
    if unverified:
        shown = "; ".join(unverified[:3]) + (f"; and {len(unverified) - 3} more" if len(unverified) > 3 else "")
        print(f"fatpipe: sweep {sweep.name}: {len(unverified)} finished run{'s' if len(unverified) != 1 else ''} "
              f"do{'es' if len(unverified) == 1 else ''} not verify and run{'s' if len(unverified) == 1 else ''} "
              f"again: {shown}", file=sys.stderr)

    bar = _progress_bar(sweep.name, len(tasks)) if progress and tasks else None
    failed = [0]

    def on_result(task: RunTask, outcome: Dict[str, Any]) -> None:
        outcomes[task.run_id] = outcome
        if outcome.get("status") != "ok":
            failed[0] += 1
        if bar is not None:
            if failed[0]:
                bar.set_postfix(failed=failed[0], refresh=False)
            bar.update(1)

    _CANCEL.clear()
    interrupted = False
    try:
        if tasks:
            if dask == "local" and _main_guard_missing() is not None:
                raise SweepError(f"dask local: {_main_guard_missing()}")
            if dask is not None:
                _run_dask(tasks, dask, min(jobs or default_jobs(), len(tasks)), on_result)
            else:
                why_not = (processes_unavailable() or _main_guard_missing()) if executor == "processes" else None
                if why_not is not None:
                    print(f"fatpipe: sweep {sweep.name}: running on threads, not processes: {why_not}",
                          file=sys.stderr)
                    executor = "threads"
                _run_local(tasks, min(jobs or default_jobs(), len(tasks)), executor, on_result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if bar is not None:
            bar.close()

    if interrupted:
        for task in tasks:
            outcomes.setdefault(task.run_id, {"status": "interrupted", "error": INTERRUPTED})
    rows, failures = _rows(sweep, points, outcomes)
    summary = _summary_frame(rows)
    _write_outputs(out, summary, failures)
    if interrupted:
        done = sum(1 for t in tasks if outcomes[t.run_id]["status"] != "interrupted")
        raise SweepInterrupted(
            f"interrupted: {done} of {len(tasks)} runs finished ({reused} reused); {out / 'summary.parquet'} has "
            "them (the rest are \"interrupted\"); run the sweep again to finish it"
        )
    return SweepOutcome(outdir=out, summary=summary, ran=len(tasks), reused=reused, failures=failures)


def _progress_bar(name: str, total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=name, unit="run", file=sys.stderr)


def _rows(
    sweep: Sweep, points: Sequence[Point], outcomes: Mapping[str, Dict[str, Any]]
) -> "tuple[List[Dict[str, Any]], List[Dict[str, Any]]]":
    rows = []
    failures = []
    for point in points:
        if point.valid:
            outcome = outcomes[point.run_id]
            status = outcome["status"]
            error = outcome.get("error")
            results = outcome.get("results") or {}
        else:
            status, error, results = "invalid", point.error, {}
        row: Dict[str, Any] = {"run_id": point.run_id, "replication": point.replication, "seed": point.seed}
        row.update(point.params)
        row.update(status=status, error=error)
        row.update(results)
        rows.append(row)
        if status != "ok":
            failures.append(
                {
                    "run_id": point.run_id,
                    "replication": point.replication,
                    "seed": point.seed,
                    "params": point.params,
                    "status": status,
                    "error": error,
                }
            )
    return rows, failures


def _param_value(value: Any) -> Any:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _summary_frame(rows: List[Dict[str, Any]]) -> Any:
    import pandas as pd

    df = pd.DataFrame(rows)
    # Seeds are 63-bit: through float64 (the column of a sweep with invalid points, which
    # have none) they would lose digits.
    df["seed"] = pd.array([row["seed"] for row in rows], dtype="Int64")
    for column in df.columns:
        if df[column].dtype == object:
            kinds = {type(v) for v in df[column] if v is not None and not (isinstance(v, float) and math.isnan(v))}
            # Parquet needs one type per column: a parameter given as "10Mbps" and 10**7,
            # or as tables, becomes text (JSON for anything but strings).
            if len(kinds) > 1 or kinds & {dict, list}:
                df[column] = [None if v is None else _param_value(v) for v in df[column]]
    return df


def _write_outputs(out: Path, summary: Any, failures: List[Dict[str, Any]]) -> None:
    from .columns import write_frame_parquet

    write_frame_parquet(out / "summary.parquet", summary)
    summary.to_csv(out / "summary.csv", index=False)
    _write_json_atomic(out / "failures.json", failures)


def sweep(
    base: Union[PathLike, Mapping[str, Any]],
    grid: Optional[Mapping[str, Any]] = None,
    zip: Any = None,
    replications: int = 1,
    *,
    outdir: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    executor: str = "processes",
    dask: Optional[str] = None,
    plots: bool = False,
    progress: bool = False,
    name: Optional[str] = None,
) -> Any:
    """Runs a sweep and returns its summary DataFrame (one row per run).

    ``base`` is a scenario file or dict; ``grid`` maps paths to lists of values (cartesian
    product), ``zip`` maps paths to equally long lists varied together (or is a list of
    such groups); see ``docs/sweeps.md`` for paths. ``outdir`` defaults to
    ``runs/<name>``; a finished run there is reused. Failed and invalid runs have
    ``status`` "failed" or "invalid" and an ``error``; nothing is raised for them.

    >>> df = fatpipe.sweep("examples/reno-100M-40ms.toml",
    ...                    grid={"topology.rtt": ["20ms", "80ms"], "flows[0].cc": ["reno", "cubic"]},
    ...                    replications=2, outdir="runs/rtt-cc")
    """
    spec = Sweep.build(base, grid=grid, zip=zip, replications=replications, name=name)
    target = Path(outdir) if outdir is not None else Path("runs") / spec.name
    outcome = run_sweep(spec, target, jobs=jobs, executor=executor, dask=dask, plots=plots, progress=progress)
    return outcome.summary
