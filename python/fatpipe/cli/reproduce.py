"""``fatpipe reproduce``: the command line of the reproductions (``fatpipe.reproduce``).

::

    fatpipe reproduce --list
    fatpipe reproduce NAME [ID] [--quick] [-o OUTDIR] [--jobs N] [--executor processes|threads]
                      [--dask local|tcp://host:8786] [--docs FILE] [--quiet]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .common import EXIT_FAILURE, EXIT_OK, CliError, add_command, jobs, prepare_outdir, unwritable

__all__ = ["add_reproduce"]


def add_reproduce(commands: Any) -> None:
    p = add_command(
        commands,
        "reproduce",
        _cmd_reproduce,
        help="rerun a source document's experiments and compare with what it reports",
        description="Rerun the experiments of a source document (NAME; 'all' for every one) or one of them (ID), "
        "through the sweep machinery, and write per experiment the analogues of the document's figures, "
        "comparison.md and comparison.json (document's value, fatpipe's, tolerance, agreement; findings "
        "that hold). Finished runs in OUTDIR are reused (by the same build of fatpipe). --list shows the experiments.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="a reproduction (see --list), or 'all'")
    p.add_argument("experiment", nargs="?", metavar="ID", help="one experiment of it, such as E4.3")
    p.add_argument("--list", action="store_true", help="list the experiments, one line each")
    p.add_argument("--quick", action="store_true",
                   help="fewer points and shorter runs (a check that every experiment runs; not the document's "
                   "conditions)")
    p.add_argument("-o", "--output", metavar="OUTDIR",
                   help="output directory, one folder per document (default runs/reproduce, or runs/reproduce-quick)")
    p.add_argument("--jobs", type=jobs, metavar="N", help="runs at a time (default: the cores)")
    p.add_argument("--executor", choices=["processes", "threads"], help="local workers (default processes)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a Dask cluster: 'local' or tcp://host:8786")
    p.add_argument("--docs", metavar="FILE.md",
                   help="also write the comparison page (docs/reproductions.md), figures beside it; full mode only")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no summary lines")


def _list() -> str:
    from ..reproduce.catalog import documents

    lines = []
    for doc in documents().values():
        for exp in doc.experiments.values():
            lines.append(f"{doc.name:<14} {exp.id:<6} {exp.title} (document {doc.number})")
    return "\n".join(lines)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from ..reproduce import ALL, CatalogError, reproduce, select
    from ..sweeps import SweepError

    if args.list:
        if args.name or args.experiment:
            raise CliError("--list takes no NAME or ID: it lists every experiment")
        try:
            print(_list())
        except CatalogError as err:
            raise CliError(str(err)) from None
        return EXIT_OK
    if not args.name:
        raise CliError("NAME: missing; give a reproduction (fatpipe reproduce --list) or 'all'")
    if args.docs and args.quick:
        raise CliError("--docs is not allowed with --quick: the page shows a full run")
    if args.docs and (args.name != ALL or args.experiment):
        raise CliError(f"--docs needs every document: fatpipe reproduce {ALL} --docs {args.docs}")
    if args.jobs is not None and args.dask not in (None, "local"):
        raise CliError(f"--jobs {args.jobs} is not allowed with --dask {args.dask}: the cluster's workers set the "
                       "parallelism")
    try:
        select(args.name, args.experiment)
    except CatalogError as err:
        raise CliError(str(err)) from None
    from ..runner import import_core
    from ..sweep_runner import require_dask

    if args.dask in (None, "local"):
        import_core()
    if args.dask is not None:
        require_dask()
    root = Path(args.output) if args.output else Path("runs") / ("reproduce-quick" if args.quick else "reproduce")
    prepare_outdir(root)
    started = time.perf_counter()
    try:
        results = reproduce(
            args.name, args.experiment, outdir=root, quick=args.quick, jobs=args.jobs,
            executor=args.executor or "processes", dask=args.dask,
            progress=not args.quiet and sys.stderr.isatty(), report=None if args.quiet else print,
        )
    except (SweepError, CatalogError) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise unwritable(root, err) from None
    wall_s = time.perf_counter() - started
    if args.docs:
        from ..reproduce.report import docs_page

        command = f"fatpipe reproduce {ALL} -o {args.output or 'runs/reproduce'} --docs {args.docs}"
        docs_page([(doc, data, target) for doc, _, data, target in results], Path(args.docs), command, wall_s)
        if not args.quiet:
            print(f"docs: {args.docs}")
    if not args.quiet:
        print(f"wall time: {wall_s:.0f} s")
    failed = sum(o.failed for _, outcomes, _, _ in results for o in outcomes)
    return EXIT_FAILURE if failed else EXIT_OK
