"""`fatpipe emulate` on the command line (cli.py parses the arguments): privileges first,
then the run, its files, and what the user must know about it (lateness, a warning when
the emulator fell behind, where the kernel departs from the scenario)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..scenario import ScenarioError
from .runner import EmulationError, PrivilegeError, Terminated, check_privileges, emulate, lateness_line, notes_lines

__all__ = ["emulate_command"]


def emulate_command(args: argparse.Namespace) -> int:
    from ..cli import EXIT_FAILURE, EXIT_OK, EXIT_TERMINATED, CliError, _error, _load, _staging
    from ..cli_tables import summary_table
    from ..outdir import discard, publish
    from ..runner import import_core

    loaded = _load(args.scenario)
    label = "<stdin>" if args.scenario == "-" else args.scenario

    import_core()
    try:
        check_privileges()  # before anything is created
    except PrivilegeError as err:
        _error(str(err))
        return EXIT_FAILURE
    outdir = Path(args.output) if args.output else Path("runs") / f"{loaded.core['name']}-emulated"
    scratch = _staging(outdir, args.overwrite)
    wall_start = time.perf_counter()
    try:
        result = emulate(
            loaded,
            seed=args.seed,
            progress=not args.quiet and sys.stderr.isatty(),
            spin_margin_us=args.spin_margin,
            realtime_priority=not args.no_realtime_priority,
            capture_dir=scratch,
            bpf=args.bpf,
        )
        wall_s = time.perf_counter() - wall_start
        try:
            result.write_files(scratch, plots=loaded.plots and not args.no_plots)
            publish(scratch, outdir)
        except OSError as err:
            raise CliError(f"output directory {outdir}: cannot write: {err.strerror or err}") from None
    except ScenarioError as err:
        raise CliError(f"{label}: {err}") from None
    except PrivilegeError as err:
        _error(str(err))
        return EXIT_FAILURE
    except EmulationError as err:
        _error(f"{label}: emulation failed: {err}")
        return EXIT_FAILURE
    except Terminated:
        _error("terminated (namespaces removed)")
        return EXIT_TERMINATED
    finally:
        discard(scratch)  # gone already once published
    summary = result.summary
    if not summary["emulation"]["kept_up"]:
        print(
            "fatpipe: warning: the emulator did not keep up with real time ("
            + lateness_line(summary).replace("release lateness: ", "release lateness ")
            + "); results are marked: emulation.kept_up = false in summary.json",
            file=sys.stderr,
        )
    if not args.quiet:
        print(summary_table(summary, wall_s, result.scenario))
        print(lateness_line(summary))
        notes = notes_lines(summary)
        if notes:
            print("where the kernel departs from the scenario (summary.json flows[].emulation.notes):")
            print("\n".join(f"  {n}" for n in notes))
        print(f"results: {outdir}")
    return EXIT_OK
