"""The ``fatpipe`` command.

::

    fatpipe run SCENARIO.toml [-o OUTDIR] [--seed N] [--no-plots] [--quiet]
    fatpipe emulate SCENARIO.toml [-o OUTDIR] [--seed N] [--no-plots] [--quiet]
    fatpipe probe serve [--bind ADDR:PORT] [--secret-file FILE] [--data-ports LOW-HIGH]
    fatpipe probe run HOST[:PORT] SCENARIO.toml [-o OUTDIR] [--simulate] [--secret-file FILE]
    fatpipe compare RUN_A RUN_B [...] [-o OUTDIR] [--labels A,B,...]
    fatpipe validate SCENARIO.toml [--json]
    fatpipe reference [--update docs/scenario.md]
    fatpipe report OUTDIR [-o FILE.html]
    fatpipe plot OUTDIR [--what cwnd,throughput,...] [--format png|svg] [--flow NAME]
    fatpipe sweep SWEEP.toml [-o OUTDIR] [--jobs N] [--executor processes|threads]
                  [--dask local|tcp://host:8786] [--plots] [--dry-run] [--quiet]
    fatpipe bench [--quick] [--case NAME] [--json FILE] [--sweep] [--many-flows]
    fatpipe reproduce NAME [ID] [--quick] [--list] [-o OUTDIR] [--jobs N] [--dask ...] [--docs FILE]

Every user mistake -- an invalid scenario, a missing or unreadable file, a TOML syntax
error, an unwritable output directory, a bad argument -- prints one line
``fatpipe: error: <message>`` on stderr and exits with status 2; never a traceback.
Status 1 means the simulation could not run (the compiled core is missing; an emulation
without root or whose system calls failed; a probe whose daemon could not be reached or
whose test failed), or, for a sweep, that some of its runs failed or were invalid; 130
means interrupted (143: an emulation or a probe ended by SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, List, NoReturn, Optional, Sequence

from .scenario import Loaded, ScenarioError, format_reference, load, read_capped, read_scenario_bytes, update_reference
from .cli_tables import summary_table, text_table
from .units import U64_MAX, format_duration, whole_number

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors, like every other fatpipe error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"fatpipe: error: {message} (see '{self.prog} --help')\n")


def _seed(text: str) -> int:
    try:
        value = whole_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: expected a whole number >= 0"
        ) from None
    if not 0 <= value <= U64_MAX:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: expected a whole number from 0 to {U64_MAX}"
        )
    return value


def _jobs(text: str) -> int:
    try:
        value = whole_number(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected a whole number >= 1")
    return value


class _VersionAction(argparse.Action):
    """--version: the version is looked up only when asked for (it costs start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from . import __version__

        print(f"fatpipe {__version__}")  # on stdout, as argparse's own version action
        parser.exit()


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fatpipe",
        description="Simulate TCP congestion control on long fat networks.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = commands.add_parser(
        "run",
        help="run a scenario and write its results",
        description="Run a scenario; write summary.json, scenario.json, time series (Parquet) "
        "and plots into the output directory, and print a summary.",
    )
    _add_run_arguments(p, "runs/<scenario name>")
    _add_run_report_flags(p)
    p.set_defaults(func=_cmd_run)

    p = commands.add_parser(
        "emulate",
        help="run a scenario in real time with real Linux TCP (root)",
        description="Run a scenario's flows on the Linux kernel's TCP: every host becomes a "
        "network namespace, the scenario's links, queues and impairments are fatpipe's own, "
        "driven in real time. Writes the same files as `fatpipe run` (summary.json with an "
        "emulation section, time series with TCP_INFO, plots, captures). Needs root "
        "(CAP_SYS_ADMIN, CAP_NET_ADMIN). See docs/emulation.md.",
    )
    _add_run_arguments(p, "runs/<scenario name>-emulated")
    p.add_argument("--spin-margin", type=_microseconds, metavar="US",
                   help="the relay wakes this many microseconds before each event and spins to it (default 0: "
                   "sleep to it); tighter release timing for more CPU")
    p.add_argument("--no-realtime-priority", action="store_true",
                   help="leave the relay and the applications at normal priority instead of SCHED_FIFO")
    p.add_argument("--bpf", choices=("auto", "always", "never"), default="auto",
                   help="run algorithms as fatpipe's BPF congestion controls (bpf/, compiled with clang): "
                   "auto (default) where the kernel's own module does not run the flow's algorithm as asked; "
                   "always (the kernel's reno and cubic too); never")
    p.set_defaults(func=_cmd_emulate)

    from .probe.command import add_probe_command

    add_probe_command(commands)

    p = commands.add_parser(
        "compare",
        help="put runs side by side (e.g. simulated against emulated)",
        description="Compare run directories (fatpipe run / fatpipe emulate): per flow goodput, "
        "retransmissions and timeouts with their differences relative to the first run; cwnd, "
        "throughput and queue overlaid on one time axis (PNG); one HTML page. Writes "
        "OUTDIR/compare.html, compare.json and the plots.",
    )
    p.add_argument("runs", metavar="RUN", nargs="+", help="run directories, the first is the reference")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="output directory (default: runs/compare)")
    p.add_argument("--labels", type=_label_list, metavar="A,B,...", help="names of the runs in tables and legends (default: directory names)")
    p.add_argument("--bin", type=_interval, metavar="DURATION",
                   help="the throughput plot's bin, such as 100ms (default: the widest the runs' own plots use)")
    p.set_defaults(func=_cmd_compare)

    p = commands.add_parser(
        "validate",
        help="check a scenario without running it",
        description="Check a scenario file; print OK, or with --json the normalized scenario "
        "the core would receive (all defaults filled in, base units).",
    )
    p.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file, or - to read it from standard input")
    p.add_argument("--json", action="store_true", help="print the normalized scenario as JSON")
    p.set_defaults(func=_cmd_validate)

    p = commands.add_parser(
        "reference",
        help="print the reference of every scenario key",
        description="Print every scenario key with its type, default and the default's source "
        "(Markdown; the same text as docs/scenario.md).",
    )
    p.add_argument(
        "--update",
        metavar="FILE.md",
        help="instead of printing, rewrite the generated block of FILE.md (docs/scenario.md)",
    )
    p.set_defaults(func=_cmd_reference)

    p = commands.add_parser(
        "algorithms",
        help="list congestion control presets, algorithms and modifiers",
        description="List every preset (cc = \"name\"), every algorithm with its parameters, "
        "defaults and their sources, and the modifiers any algorithm can take (Markdown).",
    )
    p.set_defaults(func=_cmd_algorithms)

    p = commands.add_parser(
        "sweep",
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
        type=_jobs,
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
    p.set_defaults(func=_cmd_sweep)

    p = commands.add_parser(
        "bench",
        help="measure the simulator's speed",
        description="Time the scenarios of the speed goal (docs/benchmarks.md), each in a fresh "
        "process: one flow over the default dumbbell at 100 Mb/s, 1 Gb/s and 10 Gb/s with 100 ms "
        "RTT, 100 flows with RED at 10 Gb/s, a minute of 10 Gb/s and a 0.1 s scenario with "
        "fatpipe run. Prints data packets, events, wall time, start-up, peak memory and memory "
        "per segment in flight.",
    )
    from .bench import add_arguments as bench_arguments

    bench_arguments(p)
    p.set_defaults(func=_cmd_bench)

    p = commands.add_parser(
        "report",
        help="write one self-contained HTML page of a run or a sweep",
        description="Write OUTDIR/report.html: for a run directory (`fatpipe run`), the "
        "summary tables (flows, links, sharing, captures, requests, stream groups), every plot "
        "(embedded) and the scenario; for a sweep directory (`fatpipe sweep`), every run's "
        "parameters and results, failures, and each measure plotted against the first varied "
        "parameter, one line per value of the others.",
    )
    p.add_argument("outdir", metavar="OUTDIR", help="run directory")
    p.add_argument("-o", "--output", metavar="FILE.html", help="where to write (default OUTDIR/report.html)")
    p.add_argument("--bin", type=_interval, metavar="DURATION",
                   help="the throughput plots' bin, such as 100ms (default: fits the run, as fatpipe plot)")
    p.set_defaults(func=_cmd_report)

    p = commands.add_parser(
        "plot",
        help="draw chosen plots of a run",
        description="Draw plots of a run directory into it (or --output DIR): "
        + ", ".join(_plot_names())
        + ". time_sequence needs a packet capture at the flow's sender (output.capture). Draws every "
        "plot it can; one that it cannot (such as a flow without a capture) is named on stderr. Exit "
        "status 0 when all were drawn, 1 when some were skipped, 2 when none could be.",
    )
    p.add_argument("outdir", metavar="OUTDIR", help="run directory")
    p.add_argument("--what", type=_plot_list, default=["cwnd", "throughput"], metavar="NAMES",
                   help="comma-separated plot names (default cwnd,throughput)")
    p.add_argument("--format", choices=["png", "svg"], default="png", help="image format (default png)")
    p.add_argument("--flow", metavar="NAME", help="time_sequence: the flow (default: every flow)")
    p.add_argument("--start", type=_seconds, metavar="SECONDS", help="time_sequence: zoom from this time")
    p.add_argument("--stop", type=_seconds, metavar="SECONDS", help="time_sequence: zoom to this time")
    p.add_argument("--bin", type=_interval, metavar="DURATION",
                   help="throughput plots: the bin, such as 100ms (default: fits the run: at least the largest "
                   "RTT, at most 200 bins, a whole number of sample intervals)")
    p.add_argument("-o", "--output", metavar="DIR", help="directory for the images (default OUTDIR)")
    p.set_defaults(func=_cmd_plot)

    from .cli_tools import add_commands
    from .reproduce.cli import add_command as add_reproduce

    add_commands(commands)
    add_reproduce(commands, _jobs)
    return parser


def _add_run_arguments(p: argparse.ArgumentParser, default_output: str) -> None:
    """The arguments `fatpipe run` and `fatpipe emulate` share."""
    p.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file, or - to read it from standard input")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUTDIR",
        help=f"output directory, created if needed (default: {default_output}); written whole at the end",
    )
    p.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")
    p.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUTDIR if it holds files (without it a non-empty OUTDIR is refused)",
    )


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
        type=_interval,
        metavar="DURATION",
        help='report every flow\'s transfer, goodput, retransmissions and cwnd every DURATION of '
        'simulated time while the run goes on, as iperf3 -i does (e.g. "1s")',
    )


def _interval(text: str) -> int:
    from .units import UnitError, parse_duration

    try:
        ps = parse_duration(text)
    except UnitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if ps <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected a positive duration, such as 1s")
    return ps


def _plot_names() -> List[str]:
    # The registry lives with matplotlib; the names are listed here without importing it.
    return ["cwnd", "outstanding", "throughput", "throughput_stacked", "queue", "rtt", "time_sequence"]


def _plot_list(text: str) -> List[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in _plot_names()]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"{(unknown or [text])[0]!r} is not allowed: expected comma-separated plot names from "
            + ", ".join(_plot_names())
        )
    return names


def _ascii_float(text: str) -> float:
    """float() of ASCII text only (float() also reads fullwidth digits)."""
    if not text.isascii():
        raise ValueError(text)
    return float(text)


def _microseconds(text: str) -> float:
    try:
        value = _ascii_float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected microseconds from 0 to 10000")
    return value


def _label_list(text: str) -> List[str]:
    labels = [x.strip() for x in text.split(",")]
    if not all(labels) or len(set(labels)) != len(labels):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected distinct, non-empty comma-separated names")
    return labels


def _seconds(text: str) -> float:
    try:
        value = _ascii_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected seconds, such as 1.5") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected seconds >= 0")
    return value


# ---- commands ------------------------------------------------------------------------


def _load(path: str) -> Loaded:
    """Loads a scenario file, turning every reading or validation problem into a CliError
    that names the file."""
    try:
        if path == "-":
            if sys.stdin is None:
                raise CliError("-: standard input is closed; give a scenario file, or pipe one in")
            return load(read_scenario_bytes(read_capped(sys.stdin.buffer)))
        return load(path)
    except ScenarioError as err:
        raise CliError(f"{path}: {err}") from None
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory, not a scenario file") from None
    except OSError as err:
        raise CliError(f"{path}: cannot read: {err.strerror or err}") from None


def _staging(outdir: Path, overwrite: bool) -> Path:
    """The staging directory a run is written into, beside OUTDIR, after checking OUTDIR
    (empty, or ``overwrite``). Everything, captures included, goes there and is renamed
    into place at the end (outdir.publish): an interrupted run leaves OUTDIR as it was."""
    from .outdir import OutputBusyError, check_target, staging_dir

    try:
        check_target(outdir, overwrite)
    except (FileExistsError, ValueError) as err:  # OutputExistsError; ., .., too long, not UTF-8
        raise CliError(f"output directory {err}") from None
    try:
        return staging_dir(outdir, overwrite)
    except OutputBusyError as err:
        raise CliError(f"output directory {err}") from None
    except PermissionError as err:
        raise CliError(f"output directory {outdir}: not writable: {err.strerror or err}") from None
    except OSError as err:
        raise CliError(f"output directory {outdir}: cannot create: {err.strerror or err}") from None


def _prepare_outdir(outdir: Path) -> None:
    """Creates the output directory and proves it writable before a long run starts."""
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CliError(f"output directory {outdir}: exists and is not a directory") from None
    except OSError as err:
        raise CliError(f"output directory {outdir}: cannot create: {err.strerror or err}") from None
    # os.access() says yes to root even on read-only file systems; writing a file is proof.
    try:
        with tempfile.TemporaryFile(dir=outdir):
            pass
    except OSError as err:
        raise CliError(f"output directory {outdir}: not writable: {err.strerror or err}") from None


def _cmd_run(args: argparse.Namespace) -> int:
    loaded = _load(args.scenario)
    if args.interval is not None and loaded.memory_budget is not None:
        from .scenario.budget import check_interval_budget

        why = check_interval_budget(loaded.core, args.interval, loaded.memory_budget)
        if why is not None:
            raise CliError(f"--interval: {why}")
    label = "<stdin>" if args.scenario == "-" else args.scenario
    # Imported only to run: validation needs neither pandas nor the compiled core. The core
    # is imported before the output directory is made, so a missing build leaves nothing.
    from .outdir import discard, publish
    from .runner import import_core, run

    import_core()
    outdir = Path(args.output) if args.output else Path("runs") / loaded.core["name"]
    staging = _staging(outdir, args.overwrite)
    try:
        plots = loaded.plots and not args.no_plots
        progress = not args.quiet and not args.json and sys.stderr.isatty()
        report = _interval_report(args, loaded)
        wall_start = time.perf_counter()
        try:
            result = run(loaded, seed=args.seed, progress=progress, capture_dir=staging,
                         on_interval=report.sample if report else None, interval_ps=args.interval,
                         on_warning=lambda message: print(f"fatpipe: warning: {message}", file=sys.stderr))
        except ScenarioError as err:
            raise CliError(f"{label}: {err}") from None
        wall_s = time.perf_counter() - wall_start
        try:
            result.write_files(staging, plots=plots)
            publish(staging, outdir)
        except OSError as err:
            raise CliError(f"output directory {outdir}: cannot write: {err.strerror or err}") from None
    finally:
        discard(staging)  # gone already once published
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
    from .interval_report import IntervalReport

    if args.quiet and not args.json:
        return None
    return IntervalReport(loaded.core, args.interval, keep=args.json)


def _cmd_emulate(args: argparse.Namespace) -> int:
    from .emulate.command import emulate_command

    return emulate_command(args)


def _cmd_compare(args: argparse.Namespace) -> int:
    from .compare import CompareError, compare
    from .plots import PlotUnavailable

    if len(args.runs) < 2:
        raise CliError("compare: give at least two run directories")
    if args.labels is not None and len(args.labels) != len(args.runs):
        raise CliError(f"--labels: {len(args.labels)} names for {len(args.runs)} runs; give one per run")
    runs = [_read_run(r) for r in args.runs]
    outdir = Path(args.output) if args.output else Path("runs") / "compare"
    _prepare_outdir(outdir)
    labels = args.labels or _run_labels(args.runs)
    try:
        comparison = compare(runs, labels, outdir, bin_s=None if args.bin is None else args.bin / 1e12)
    except (CompareError, PlotUnavailable) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"output directory {outdir}: cannot write: {err.strerror or err}") from None
    print(comparison.table_text())
    print(f"comparison: {outdir / 'compare.html'}")
    return EXIT_OK


def _run_labels(paths: Sequence[str]) -> List[str]:
    """Directory names, made distinct with their parents' where two are equal."""
    names = [Path(p).resolve().name for p in paths]
    if len(set(names)) == len(names):
        return names
    return [str(Path(Path(p).resolve().parent.name) / Path(p).resolve().name) for p in paths]


def _cmd_validate(args: argparse.Namespace) -> int:
    loaded = _load(args.scenario)
    core = loaded.core
    if args.json:
        print(json.dumps(core, indent=2))
        return EXIT_OK
    flows = len(core["flows"])
    print(
        f"{args.scenario}: OK: scenario {core['name']!r}, {format_duration(core['duration_ps'])}, "
        f"{len(core['nodes'])} nodes, {len(core['links'])} links, {flows} flow{'s' if flows != 1 else ''}, "
        f"time series every {format_duration(core['sample_interval_ps'])}"
    )
    return EXIT_OK


def _cmd_reference(args: argparse.Namespace) -> int:
    if args.update is None:
        sys.stdout.write(format_reference())
        return EXIT_OK
    try:
        changed = update_reference(args.update)
    except ValueError:
        raise CliError(f"{args.update}: the generated-reference markers are missing") from None
    except OSError as err:
        raise CliError(f"{args.update}: {err.strerror or err}") from None
    print(f"{args.update}: {'updated' if changed else 'up to date'}")
    return EXIT_OK


def _cmd_algorithms(args: argparse.Namespace) -> int:
    from .scenario import format_algorithms

    sys.stdout.write(format_algorithms())
    return EXIT_OK


def _read_run(outdir: str) -> Any:
    from .result import Result

    try:
        return Result.read(outdir)
    except FileNotFoundError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(f"{outdir}: cannot read the run: {err}") from None


def _cmd_report(args: argparse.Namespace) -> int:
    from .plots import PlotUnavailable
    from .report import is_sweep_dir, write_report

    if not is_sweep_dir(args.outdir):
        _read_run(args.outdir)  # one clear line if it is not a run directory
    try:
        path = write_report(args.outdir, args.output, bin_s=None if args.bin is None else args.bin / 1e12)
    except PlotUnavailable as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"{args.output or args.outdir}: cannot write the report: {err.strerror or err}") from None
    print(f"report: {path}")
    return EXIT_OK


def _cmd_plot(args: argparse.Namespace) -> int:
    from .plots import PLOTS, THROUGHPUT_PLOTS, PlotUnavailable, check_bin

    result = _read_run(args.outdir)
    target = Path(args.output) if args.output else Path(args.outdir)
    flows = [f["name"] for f in result.scenario["flows"]]
    if args.flow is not None and args.flow not in flows:
        raise CliError(f"--flow: {args.flow!r} is not allowed: flows of this run: {', '.join(flows)}")
    bin_s = None if args.bin is None else args.bin / 1e12
    if bin_s is not None:
        try:
            check_bin(result, bin_s)
        except PlotUnavailable as err:
            raise CliError(str(err)) from None
    _prepare_outdir(target)
    # Draw everything that can be drawn; say what could not, one line each (exit 1), and
    # fail (exit 2) only when nothing could be (docs: README, `fatpipe plot --help`).
    written, skipped = [], []
    for name in args.what:
        jobs = ([(f"time_sequence_{flow}", {"flow": flow, "start_s": args.start, "stop_s": args.stop})
                 for flow in ([args.flow] if args.flow else flows)] if name == "time_sequence"
                else [(name, {"bin_s": bin_s} if name in THROUGHPUT_PLOTS else {})])
        for stem, options in jobs:
            path = target / f"{stem}.{args.format}"
            try:
                PLOTS[name](result, path, **options)
            except PlotUnavailable as err:
                why = str(err)
                skipped.append(f"{path.name}: {why[len(name) + 2:] if why.startswith(name + ': ') else why}")
                continue
            written.append(path)
    for path in written:
        print(path)
    if not written:
        raise CliError(f"nothing drawn: {skipped[0]}" + (f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""))
    for why in skipped:
        print(f"fatpipe: skipped {why}", file=sys.stderr)
    return EXIT_FAILURE if skipped else EXIT_OK


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweeps import SweepError, load_sweep

    try:
        spec = load_sweep(args.sweep)
    except SweepError as err:
        raise CliError(f"{args.sweep}: {err}") from None
    except ScenarioError as err:  # the sweep file itself is not valid TOML
        raise CliError(f"{args.sweep}: {err}") from None
    except FileNotFoundError:
        raise CliError(f"{args.sweep}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{args.sweep}: is a directory, not a sweep file") from None
    except OSError as err:
        raise CliError(f"{args.sweep}: cannot read: {err.strerror or err}") from None
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

    from .runner import import_core
    from .sweep_runner import require_dask, run_sweep

    if args.dask in (None, "local"):
        import_core()  # a missing build is reported once, not as a failure of every run
    if args.dask is not None:
        require_dask()
    outdir = Path(args.output) if args.output else Path("runs") / spec.name
    _prepare_outdir(outdir)
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
        raise CliError(f"output directory {outdir}: cannot write: {err.strerror or err}") from None
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


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import main as bench_main

    return bench_main(args)


def _error(message: str) -> None:
    print(f"fatpipe: error: {' '.join(str(message).splitlines())}", file=sys.stderr)


#: Commands after which the `fatpipe` process may end without the interpreter's teardown
#: (see :func:`entry`): they hold no temporary files, child processes or namespaces that
#: exit handlers would clean up.
FAST_EXIT_COMMANDS = frozenset({"run"})
_finished: Optional[str] = None  # the command main() last completed, for entry()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit status."""
    global _finished
    _finished = None
    if sys.stderr is None:  # closed: errors cannot be shown, and must not crash printing them
        sys.stderr = open(os.devnull, "w")
    if sys.stdout is None:
        _error("standard output is closed: fatpipe prints there; redirect it (> FILE, > /dev/null) instead")
        return EXIT_USAGE
    sys.stdout = _GuardedStdout(sys.stdout)
    try:
        return _main(argv)
    except _StdoutError as err:
        # `fatpipe reference > /dev/full`: where the user sent the output cannot take it.
        _drop_stdout()
        _error(f"cannot write to standard output: {err.strerror or err}")
        return EXIT_USAGE
    finally:
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = sys.stdout.stream


def _main(argv: Optional[Sequence[str]]) -> int:
    global _finished
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help and --version (0), usage errors (2)
        sys.stdout.flush()
        return exit_.code if isinstance(exit_.code, int) else EXIT_OK
    if getattr(args, "output", None) == "":  # never taken for "the default" silently
        _error("-o/--output: '' is not allowed: give a name (or leave -o out for the default)")
        return EXIT_USAGE
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # a full device or a closed pipe fails here, not at exit
        _finished = args.command
        return status
    except CliError as err:
        _error(str(err))
        return EXIT_USAGE
    except ScenarioError as err:
        _error(str(err))
        return EXIT_USAGE
    except ImportError as err:
        # The compiled core (or an optional dependency) is missing: not the user's mistake
        # in the command line, but not a bug to show a traceback for either.
        _error(str(err))
        return EXIT_FAILURE
    except KeyboardInterrupt as err:
        _error(str(err) or "interrupted")  # a sweep says what it kept
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `fatpipe validate --json x.toml | head`: the reader left; not an error.
        _drop_stdout()
        return EXIT_OK
    except RecursionError:
        _error("the input is nested too deeply to follow")
        return EXIT_USAGE


class _StdoutError(OSError):
    """Writing to standard output failed (a full device, an I/O error)."""


class _GuardedStdout:
    """Standard output whose write errors are told apart from any other OSError, so that
    `fatpipe ... > /dev/full` gets one line instead of a traceback (a closed pipe stays a
    BrokenPipeError: the reader left, which is not an error)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _StdoutError(err.errno, err.strerror) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _StdoutError(err.errno, err.strerror) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _drop_stdout() -> None:
    """Sends what is left of standard output nowhere: its file descriptor now points to
    /dev/null, so the interpreter's last flush at exit succeeds too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def entry() -> NoReturn:
    """The `fatpipe` command (and ``python -m fatpipe``): :func:`main`, then exit.

    After a command of :data:`FAST_EXIT_COMMANDS` has returned, its files are closed and
    written; the process then flushes its output and ends at once (``os._exit``) instead of
    tearing the interpreter down: freeing every module and stopping numpy's and pyarrow's
    thread pools takes 20-40 ms, a tenth of a short run's whole process (issue 16).
    Everything else exits normally, exit handlers and all."""
    status = main()
    if _finished in FAST_EXIT_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # flushed in main() already; a reader that left is not an error
            pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    entry()
