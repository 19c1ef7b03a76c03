"""``fatpipe emulate`` on the command line: its arguments; privileges first, then the run,
its files, and what the user must know about it (lateness, a warning when the emulator fell
behind, where the kernel departs from the scenario)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..scenario import ScenarioError
from .common import (EXIT_FAILURE, EXIT_OK, EXIT_TERMINATED, CliError, add_command, add_run_arguments, ascii_float,
                     error, load_scenario, staging, writing)

__all__ = ["add_emulate"]


def add_emulate(commands: Any) -> None:
    p = add_command(
        commands,
        "emulate",
        _cmd_emulate,
        help="run a scenario in real time with real Linux TCP (root)",
        description="Run a scenario's flows on the Linux kernel's TCP: every host becomes a "
        "network namespace, the scenario's links, queues and impairments are fatpipe's own, "
        "driven in real time. Writes the same files as `fatpipe run` (summary.json with an "
        "emulation section, time series with TCP_INFO, plots, captures). Needs root "
        "(CAP_SYS_ADMIN, CAP_NET_ADMIN). See docs/emulation.md.",
    )
    add_run_arguments(p, "runs/<scenario name>-emulated")
    p.add_argument("--spin-margin", type=_microseconds, metavar="US",
                   help="the relay wakes this many microseconds before each event and spins to it (default 0: "
                   "sleep to it); tighter release timing for more CPU")
    p.add_argument("--no-realtime-priority", action="store_true",
                   help="leave the relay and the applications at normal priority instead of SCHED_FIFO")
    p.add_argument("--no-tun-offload", action="store_true",
                   help="one packet per read and write on the hosts' TUN devices, instead of TSO and GRO "
                   "super-packets (the hosts' kernels then segment before the device, as without a NIC's TSO)")
    p.add_argument("--bpf", choices=("auto", "always", "never"), default="auto",
                   help="run algorithms as fatpipe's BPF congestion controls (bpf/, compiled with clang): "
                   "auto (default) where the kernel's own module does not run the flow's algorithm as asked; "
                   "always (the kernel's reno and cubic too); never")


def _microseconds(text: str) -> float:
    try:
        value = ascii_float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected microseconds from 0 to 10000")
    return value



def _cmd_emulate(args: argparse.Namespace) -> int:
    # Imported to run only: the emulator's runner pulls in numpy and the result tables.
    from ..cli_tables import summary_table
    from ..emulate.runner import (EmulationError, PrivilegeError, Terminated, check_privileges, emulate,
                                  lateness_line, notes_lines, device_queue_line)
    from ..outdir import discard, publish
    from ..runner import import_core

    loaded = load_scenario(args.scenario)
    label = "<stdin>" if args.scenario == "-" else args.scenario

    import_core()
    try:
        check_privileges()  # before anything is created
    except PrivilegeError as err:
        error(str(err))
        return EXIT_FAILURE
    outdir = Path(args.output) if args.output else Path("runs") / f"{loaded.core['name']}-emulated"
    scratch = staging(outdir, args.overwrite)
    wall_start = time.perf_counter()
    try:
        result = emulate(
            loaded,
            seed=args.seed,
            progress=not args.quiet and sys.stderr.isatty(),
            spin_margin_us=args.spin_margin,
            realtime_priority=not args.no_realtime_priority,
            bpf=args.bpf,
            tun_offload=not args.no_tun_offload,
            capture_dir=scratch,
        )
        wall_s = time.perf_counter() - wall_start
        with writing(outdir):
            result.write_files(scratch, plots=loaded.plots and not args.no_plots)
            publish(scratch, outdir)
    except ScenarioError as err:
        raise CliError(f"{label}: {err}") from None
    except PrivilegeError as err:
        error(str(err))
        return EXIT_FAILURE
    except EmulationError as err:
        error(f"{label}: emulation failed: {err}")
        return EXIT_FAILURE
    except Terminated:
        error("terminated (namespaces removed)")
        return EXIT_TERMINATED
    finally:
        discard(scratch)  # gone already once published
    summary = result.summary
    refused = summary["emulation"]["relay"]["tun"].get("offload_refused")
    if refused:
        print(f"fatpipe: note: the kernel refused the TUN devices' offloads ({refused}): "
              "one packet per read and write, as with --no-tun-offload", file=sys.stderr)
    queues = device_queue_line(summary)
    if queues:
        print(f"fatpipe: warning: {queues}", file=sys.stderr)
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
