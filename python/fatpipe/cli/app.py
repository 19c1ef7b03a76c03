"""The ``fatpipe`` command: its parser, built from every command module's ``add_*``
function in the order ``fatpipe --help`` lists them, and :func:`main`, which runs a command
and turns every user mistake into one line and an exit status (see ``fatpipe.cli``)."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Any, NoReturn, Optional, Sequence

from ..scenario import ScenarioError
from .common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError, Parser, error

__all__ = ["main", "entry", "build_parser"]


class _VersionAction(argparse.Action):
    """--version: the version is looked up only when asked for (it costs start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from ..version import version

        print(f"fatpipe {version()}")  # on stdout, as argparse's own version action
        parser.exit()



def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser."""
    from .emulate import add_emulate
    from .probe import add_probe
    from .reproduce import add_reproduce
    from .run import add_bench, add_run
    from .sweep import add_sweep
    from .tools import add_algorithms, add_completion, add_examples, add_reference, add_schema, add_validate
    from .views import add_compare, add_plot, add_report

    parser = Parser(
        prog="fatpipe",
        description="Simulate TCP congestion control on long fat networks.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (add_run, add_emulate, add_probe, add_compare, add_validate, add_reference, add_algorithms,
                add_sweep, add_bench, add_report, add_plot, add_schema, add_examples):
        add(commands)
    add_completion(commands, parser)
    add_reproduce(commands)
    return parser


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
        error("standard output is closed: fatpipe prints there; redirect it (> FILE, > /dev/null) instead")
        return EXIT_USAGE
    sys.stdout = _GuardedStdout(sys.stdout)
    try:
        return _main(argv)
    except _StdoutError as err:
        # `fatpipe reference > /dev/full`: where the user sent the output cannot take it.
        _drop_stdout()
        error(f"cannot write to standard output: {err.strerror or err}")
        return EXIT_USAGE
    finally:
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = sys.stdout.stream


def _main(argv: Optional[Sequence[str]]) -> int:
    global _finished
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help and --version (0), usage errors (2)
        sys.stdout.flush()
        return exit_.code if isinstance(exit_.code, int) else EXIT_OK
    if getattr(args, "output", None) == "":  # never taken for "the default" silently
        error("-o/--output: '' is not allowed: give a name (or leave -o out for the default)")
        return EXIT_USAGE
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # a full device or a closed pipe fails here, not at exit
        _finished = args.command
        return status
    except CliError as err:
        error(str(err))
        return EXIT_USAGE
    except ScenarioError as err:
        error(str(err))
        return EXIT_USAGE
    except ImportError as err:
        # The compiled core (or an optional dependency) is missing: not the user's mistake
        # in the command line, but not a bug to show a traceback for either.
        error(str(err))
        return EXIT_FAILURE
    except RuntimeError as err:
        if type(err).__name__ != "ControllerError":
            raise
        # A Python congestion control failed (scenario/python_cc.py): the user's traceback,
        # then one line saying which flow, hook and simulated time.
        if err.__cause__ is not None:
            traceback.print_exception(type(err.__cause__), err.__cause__, err.__cause__.__traceback__, file=sys.stderr)
        error(str(err))
        return EXIT_FAILURE
    except KeyboardInterrupt as err:
        error(str(err) or "interrupted")  # a sweep says what it kept
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `fatpipe validate --json x.toml | head`: the reader left; not an error.
        _drop_stdout()
        return EXIT_OK
    except RecursionError:
        error("the input is nested too deeply to follow")
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
