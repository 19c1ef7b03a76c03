"""The commands that read finished runs: ``fatpipe compare`` (runs side by side),
``fatpipe report`` (one HTML page of a run or a sweep) and ``fatpipe plot`` (chosen plots
of a run)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, List, Sequence

from .common import EXIT_FAILURE, EXIT_OK, CliError, add_command, ascii_float, interval, prepare_outdir, unwritable

__all__ = ["add_compare", "add_report", "add_plot"]


def add_compare(commands: Any) -> None:
    p = add_command(
        commands,
        "compare",
        _cmd_compare,
        help="put runs side by side (e.g. simulated against emulated)",
        description="Compare run directories (fatpipe run / fatpipe emulate): per flow goodput, "
        "retransmissions and timeouts with their differences relative to the first run; cwnd, "
        "throughput and queue overlaid on one time axis (PNG); one HTML page. Writes "
        "OUTDIR/compare.html, compare.json and the plots.",
    )
    p.add_argument("runs", metavar="RUN", nargs="+", help="run directories, the first is the reference")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="output directory (default: runs/compare)")
    p.add_argument("--labels", type=_label_list, metavar="A,B,...", help="names of the runs in tables and legends (default: directory names)")
    p.add_argument("--bin", type=interval, metavar="DURATION",
                   help="the throughput plot's bin, such as 100ms (default: the widest the runs' own plots use)")


def add_report(commands: Any) -> None:
    p = add_command(
        commands,
        "report",
        _cmd_report,
        help="write one self-contained HTML page of a run or a sweep",
        description="Write OUTDIR/report.html: for a run directory (`fatpipe run`), the "
        "summary tables (flows, links, sharing, captures, requests, stream groups), every plot "
        "(embedded) and the scenario; for a sweep directory (`fatpipe sweep`), every run's "
        "parameters and results, failures, and each measure plotted against the first varied "
        "parameter, one line per value of the others.",
    )
    p.add_argument("outdir", metavar="OUTDIR", help="run directory")
    p.add_argument("-o", "--output", metavar="FILE.html", help="where to write (default OUTDIR/report.html)")
    p.add_argument("--bin", type=interval, metavar="DURATION",
                   help="the throughput plots' bin, such as 100ms (default: fits the run, as fatpipe plot)")


def add_plot(commands: Any) -> None:
    p = add_command(
        commands,
        "plot",
        _cmd_plot,
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
    p.add_argument("--bin", type=interval, metavar="DURATION",
                   help="throughput plots: the bin, such as 100ms (default: fits the run: at least the largest "
                   "RTT, at most 200 bins, a whole number of sample intervals)")
    p.add_argument("-o", "--output", metavar="DIR", help="directory for the images (default OUTDIR)")


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



def _label_list(text: str) -> List[str]:
    labels = [x.strip() for x in text.split(",")]
    if not all(labels) or len(set(labels)) != len(labels):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected distinct, non-empty comma-separated names")
    return labels


def _seconds(text: str) -> float:
    try:
        value = ascii_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected seconds, such as 1.5") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected seconds >= 0")
    return value



def _cmd_compare(args: argparse.Namespace) -> int:
    from ..compare import CompareError, compare
    from ..plots import PlotUnavailable

    if len(args.runs) < 2:
        raise CliError("compare: give at least two run directories")
    if args.labels is not None and len(args.labels) != len(args.runs):
        raise CliError(f"--labels: {len(args.labels)} names for {len(args.runs)} runs; give one per run")
    runs = [_read_run(r) for r in args.runs]
    outdir = Path(args.output) if args.output else Path("runs") / "compare"
    prepare_outdir(outdir)
    labels = args.labels or _run_labels(args.runs)
    try:
        comparison = compare(runs, labels, outdir, bin_s=None if args.bin is None else args.bin / 1e12)
    except (CompareError, PlotUnavailable) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise unwritable(outdir, err) from None
    print(comparison.table_text())
    print(f"comparison: {outdir / 'compare.html'}")
    return EXIT_OK


def _run_labels(paths: Sequence[str]) -> List[str]:
    """Directory names, made distinct with their parents' where two are equal."""
    names = [Path(p).resolve().name for p in paths]
    if len(set(names)) == len(names):
        return names
    return [str(Path(Path(p).resolve().parent.name) / Path(p).resolve().name) for p in paths]



def _read_run(outdir: str) -> Any:
    from ..result import Result

    try:
        return Result.read(outdir)
    except FileNotFoundError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(f"{outdir}: cannot read the run: {err}") from None


def _cmd_report(args: argparse.Namespace) -> int:
    from ..plots import PlotUnavailable
    from ..report import is_sweep_dir, write_report

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
    from ..plots import PLOTS, THROUGHPUT_PLOTS, PlotUnavailable, check_bin

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
    prepare_outdir(target)
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

