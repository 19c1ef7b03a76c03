"""``fatpipe run`` (a scenario simulated, its files written and its summary printed) and
``fatpipe bench`` (the simulator's speed)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..scenario import Loaded, ScenarioError
from ..cli_tables import summary_table
from .common import EXIT_OK, CliError, add_command, add_run_arguments, interval, load_scenario, staging, writing

__all__ = ["add_run", "add_bench"]


def add_run(commands: Any) -> None:
    p = add_command(
        commands,
        "run",
        _cmd_run,
        help="run a scenario and write its results",
        description="Run a scenario; write summary.json, scenario.json, time series (Parquet) "
        "and plots into the output directory, and print a summary.",
    )
    add_run_arguments(p, "runs/<scenario name>")
    _add_run_report_flags(p)


def _add_run_report_flags(p: argparse.ArgumentParser) -> None:
    """`fatpipe run`'s reporting flags, after iperf3 (-J, -i) and ns-3 conventions."""
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run's summary as one JSON document on standard output (as iperf3 -J), "
        "with the intervals when --interval is given; nothing else is printed there",
    )
    p.add_argument(
        "--interval",
        type=interval,
        metavar="DURATION",
        help='report every flow\'s transfer, goodput, retransmissions and cwnd every DURATION of '
        'simulated time while the run goes on, as iperf3 -i does (e.g. "1s")',
    )



def _cmd_run(args: argparse.Namespace) -> int:
    loaded = load_scenario(args.scenario)
    if args.interval is not None and loaded.memory_budget is not None:
        from ..scenario.budget import check_interval_budget

        why = check_interval_budget(loaded.core, args.interval, loaded.memory_budget)
        if why is not None:
            raise CliError(f"--interval: {why}")
    label = "<stdin>" if args.scenario == "-" else args.scenario
    # Imported only to run: validation needs neither pandas nor the compiled core. The core
    # is imported before the output directory is made, so a missing build leaves nothing.
    from ..outdir import discard, publish
    from ..runner import import_core, run

    import_core()
    outdir = Path(args.output) if args.output else Path("runs") / loaded.core["name"]
    scratch = staging(outdir, args.overwrite)
    try:
        plots = loaded.plots and not args.no_plots
        progress = not args.quiet and not args.json and sys.stderr.isatty()
        report = _interval_report(args, loaded)
        wall_start = time.perf_counter()
        try:
            result = run(loaded, seed=args.seed, progress=progress, capture_dir=scratch,
                         on_interval=report.sample if report else None, interval_ps=args.interval,
                         on_warning=lambda message: print(f"fatpipe: warning: {message}", file=sys.stderr))
        except ScenarioError as err:
            raise CliError(f"{label}: {err}") from None
        wall_s = time.perf_counter() - wall_start
        with writing(outdir):
            result.write_files(scratch, plots=plots)
            publish(scratch, outdir)
    finally:
        discard(scratch)  # gone already once published
    if args.json:
        document = dict(result.summary, wall_s=wall_s, outdir=str(outdir))
        if report is not None:
            document["intervals"] = report.intervals
        print(json.dumps(document, indent=2, allow_nan=False))
    elif not args.quiet:
        print(summary_table(result.summary, wall_s, result.scenario))
        print(f"results: {outdir}")
    return EXIT_OK


def _interval_report(args: argparse.Namespace, loaded: Loaded) -> Any:
    """The --interval report: printed as the run goes (unless --quiet), or kept for --json."""
    if args.interval is None:
        return None
    from ..interval_report import IntervalReport

    if args.quiet and not args.json:
        return None
    return IntervalReport(loaded.core, args.interval, keep=args.json)


def add_bench(commands: Any) -> None:
    p = add_command(
        commands,
        "bench",
        _cmd_bench,
        help="measure the simulator's speed",
        description="Time the scenarios of the speed goal (docs/benchmarks.md), each in a fresh "
        "process: one flow over the default dumbbell at 100 Mb/s, 1 Gb/s and 10 Gb/s with 100 ms "
        "RTT, 100 flows with RED at 10 Gb/s, a minute of 10 Gb/s and a 0.1 s scenario with "
        "fatpipe run. Prints data packets, events, wall time, start-up, peak memory and memory "
        "per segment in flight.",
    )
    from ..bench import add_arguments as bench_arguments

    bench_arguments(p)


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import main as bench_main

    return bench_main(args)
