"""``fatpipe sweep``: every point of a sweep file run in parallel, with its dry run and the
report after."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..cli_tables import text_table
from ..scenario import ScenarioError
from .common import EXIT_FAILURE, EXIT_OK, CliError, add_command, jobs, prepare_outdir, unreadable, unwritable

__all__ = ["add_sweep"]


def add_sweep(commands: Any) -> None:
    p = add_command(
        commands,
        "sweep",
        _cmd_sweep,
        help="run a scenario many times with parameters varied, in parallel",
        description="Run every point of a sweep file (a base scenario, parameters to vary "
        "as a grid and/or zipped lists, replications; see docs/sweeps.md) in parallel. "
        "Writes OUTDIR/summary.parquet (one row per run), summary.csv, failures.json and "
        "OUTDIR/runs/<run id>/ per run. Finished runs are reused when run again by the "
        "same build of fatpipe; failed "
        "ones are retried. Exit status 1 if some runs failed or were invalid.",
    )
    p.add_argument("sweep", metavar="SWEEP.toml", help="sweep file")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUTDIR",
        help="output directory, created if needed (default: runs/<sweep name>)",
    )
    p.add_argument(
        "--jobs",
        type=jobs,
        metavar="N",
        help="runs at a time (default: the machine's cores; with --dask local, the workers)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--executor",
        choices=("processes", "threads"),
        help="run on worker processes (default) or threads; the core releases the GIL, so "
        "threads run in parallel too",
    )
    where.add_argument(
        "--dask",
        metavar="ADDRESS",
        help='run on a Dask cluster: "local" (a LocalCluster on this machine) or a '
        "scheduler address such as tcp://host:8786 (OUTDIR must be shared with the workers)",
    )
    p.add_argument("--plots", action="store_true", help="write each run's PNG plots (off: faster)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="validate every point and print the number of runs and the first few; run nothing",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar and no report")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ..sweeps import SweepError, load_sweep

    try:
        spec = load_sweep(args.sweep)
    except SweepError as err:
        raise CliError(f"{args.sweep}: {err}") from None
    except ScenarioError as err:  # the sweep file itself is not valid TOML
        raise CliError(f"{args.sweep}: {err}") from None
    except OSError as err:
        raise unreadable(args.sweep, err, "a sweep file") from None
    if args.jobs is not None and args.dask not in (None, "local"):
        raise CliError(
            f"--jobs {args.jobs} is not allowed with --dask {args.dask}: the cluster's workers "
            "set the parallelism (--jobs applies to local runs and --dask local)"
        )
    points = spec.points()
    invalid = [p for p in points if not p.valid]
    if len(invalid) == len(points):
        raise CliError(f"{args.sweep}: every point is invalid; the first ({invalid[0].label()}): {invalid[0].error}")
    if args.dry_run:
        print(_dry_run_report(spec, points))
        return EXIT_FAILURE if invalid else EXIT_OK

    from ..runner import import_core
    from ..sweep_runner import require_dask, run_sweep

    if args.dask in (None, "local"):
        import_core()  # a missing build is reported once, not as a failure of every run
    if args.dask is not None:
        require_dask()
    outdir = Path(args.output) if args.output else Path("runs") / spec.name
    prepare_outdir(outdir)
    wall_start = time.perf_counter()
    try:
        outcome = run_sweep(
            spec,
            outdir,
            jobs=args.jobs,
            executor=args.executor or "processes",
            dask=args.dask,
            plots=args.plots,
            progress=not args.quiet and sys.stderr.isatty(),
            points=points,
        )
    except SweepError as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise unwritable(outdir, err) from None
    wall_s = time.perf_counter() - wall_start
    if not args.quiet:
        print(_sweep_report(spec.name, outcome, len(points), wall_s, outdir))
    return EXIT_FAILURE if outcome.failures else EXIT_OK


#: How many parameter sets --dry-run shows.
DRY_RUN_SHOWN = 5
#: How many failed runs the report after a sweep lists.
FAILURES_SHOWN = 20


def _dry_run_report(spec: Any, points: Sequence[Any]) -> str:
    invalid = [p for p in points if not p.valid]
    lines = [f"sweep {spec.name}: {spec.describe()}; {len(invalid)} invalid"]
    paths = [p.path for p in spec.parameters]
    shown = points[:DRY_RUN_SHOWN]
    lines.append(f"first {len(shown)}:")
    lines += [
        "  " + line
        for line in text_table(
            ["run id", "replication", "seed"] + paths,
            [[p.run_id, p.replication, "-" if p.seed is None else p.seed] + [_value(p.params[k]) for k in paths] for p in shown],
        )
    ]
    if invalid:
        lines.append(f"invalid ({len(invalid)}):")
        lines += [f"  {p.run_id}  {p.label()}: {p.error}" for p in invalid[:DRY_RUN_SHOWN]]
        if len(invalid) > DRY_RUN_SHOWN:
            lines.append(f"  ... and {len(invalid) - DRY_RUN_SHOWN} more")
    return "\n".join(lines)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _sweep_report(name: str, outcome: Any, total: int, wall_s: float, outdir: Path) -> str:
    failed = [f for f in outcome.failures if f["status"] == "failed"]
    invalid = [f for f in outcome.failures if f["status"] == "invalid"]
    ok = total - len(failed) - len(invalid)
    lines = [
        f"sweep {name}: {total} run{'s' if total != 1 else ''}: {ok} ok "
        f"({outcome.reused} reused from an earlier sweep), {len(failed)} failed, "
        f"{len(invalid)} invalid; {outcome.ran} ran in {wall_s:.1f} s"
    ]
    for f in outcome.failures[:FAILURES_SHOWN]:
        params = ", ".join(f"{k}={_value(v)}" for k, v in f["params"].items())
        lines.append(f"  {f['status']}: {f['run_id']} ({params}, replication {f['replication']}): {f['error']}")
    if len(outcome.failures) > FAILURES_SHOWN:
        lines.append(f"  ... and {len(outcome.failures) - FAILURES_SHOWN} more (failures.json has them all)")
    lines.append(f"summary: {outdir / 'summary.parquet'} (and summary.csv)")
    if outcome.failures:
        lines.append(f"failures: {outdir / 'failures.json'}")
    return "\n".join(lines)

