"""What every ``fatpipe`` subcommand shares: exit statuses, the one-line user error
(:class:`CliError`), the parser class whose errors are one line too, registering a command
(:func:`add_command`), loading a scenario file, the output directory (staged or prepared),
and the argument types more than one command reads.

Every command module (``run.py``, ``emulate.py``, ``probe.py``, ...) imports this module and
nothing else of the command line; ``app.py`` imports the command modules to build the
parser. Nothing here imports a command, so the command line has no import circle."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Optional

from ..scenario import Loaded, ScenarioError, load, read_capped, read_scenario_bytes
from ..units import U64_MAX, whole_number

__all__ = [
    "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_INTERRUPTED", "EXIT_TERMINATED",
    "CliError", "Parser", "Command", "add_command", "error", "load_scenario", "unreadable", "unwritable", "writing", "staging",
    "prepare_outdir",
    "add_run_arguments", "seed", "jobs", "interval", "ascii_float",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

#: A command's function: the parsed arguments in, the exit status out.
Command = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, like every other fatpipe error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"fatpipe: error: {message} (see '{self.prog} --help')\n")


def add_command(
    commands: Any, name: str, func: Optional[Command], *, help: str, description: str
) -> argparse.ArgumentParser:
    """Adds subcommand ``name`` to ``commands`` (an ``add_subparsers()`` action), run by
    ``func`` (None: a command whose own subcommands run); returns its parser for the
    command's own arguments."""
    p = commands.add_parser(name, help=help, description=description)
    if func is not None:
        p.set_defaults(func=func)
    return p


def error(message: str) -> None:
    """Prints ``fatpipe: error: <message>`` as one line on stderr."""
    print(f"fatpipe: error: {' '.join(str(message).splitlines())}", file=sys.stderr)


# ---- files -------------------------------------------------------------------------------


def load_scenario(path: str) -> Loaded:
    """Loads a scenario file (``-``: standard input), turning every reading or validation
    problem into a CliError that names the file."""
    try:
        if path == "-":
            if sys.stdin is None:
                raise CliError("-: standard input is closed; give a scenario file, or pipe one in")
            return load(read_scenario_bytes(read_capped(sys.stdin.buffer)))
        return load(path)
    except ScenarioError as err:
        raise CliError(f"{path}: {err}") from None
    except OSError as err:
        raise unreadable(path, err, "a scenario file") from None


def unreadable(path: str, err: OSError, what: str) -> CliError:
    """The one line for an input file that could not be read: missing, a directory instead
    of ``what`` (such as "a scenario file"), or unreadable."""
    if isinstance(err, FileNotFoundError):
        return CliError(f"{path}: no such file")
    if isinstance(err, IsADirectoryError):
        return CliError(f"{path}: is a directory, not {what}")
    return CliError(f"{path}: cannot read: {err.strerror or err}")


def unwritable(outdir: Path, err: OSError) -> CliError:
    """The one line for an output directory that could not be written."""
    return CliError(f"output directory {outdir}: cannot write: {err.strerror or err}")


@contextlib.contextmanager
def writing(outdir: Path) -> Iterator[None]:
    """Writing a run's files for ``outdir``: an OSError is :func:`unwritable`'s one line."""
    try:
        yield
    except OSError as err:
        raise unwritable(outdir, err) from None


def staging(outdir: Path, overwrite: bool) -> Path:
    """The staging directory a run is written into, beside OUTDIR, after checking OUTDIR
    (empty, or ``overwrite``). Everything, captures included, goes there and is renamed
    into place at the end (outdir.publish): an interrupted run leaves OUTDIR as it was."""
    from ..outdir import OutputBusyError, check_target, staging_dir

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


def prepare_outdir(outdir: Path) -> None:
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


# ---- arguments ---------------------------------------------------------------------------


def add_run_arguments(p: argparse.ArgumentParser, default_output: str) -> None:
    """The arguments `fatpipe run` and `fatpipe emulate` share."""
    p.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file, or - to read it from standard input")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUTDIR",
        help=f"output directory, created if needed (default: {default_output}); written whole at the end",
    )
    p.add_argument("--seed", type=seed, metavar="N", help="override the scenario's seed")
    p.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUTDIR if it holds files (without it a non-empty OUTDIR is refused)",
    )


def seed(text: str) -> int:
    """--seed: a whole number that fits the core's u64."""
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


def jobs(text: str) -> int:
    """--jobs: a whole number >= 1."""
    try:
        value = whole_number(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected a whole number >= 1")
    return value


def interval(text: str) -> int:
    """A positive duration (``1s``, ``100ms``) in picoseconds."""
    from ..units import UnitError, parse_duration

    try:
        ps = parse_duration(text)
    except UnitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if ps <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed: expected a positive duration, such as 1s")
    return ps


def ascii_float(text: str) -> float:
    """float() of ASCII text only (float() also reads fullwidth digits)."""
    if not text.isascii():
        raise ValueError(text)
    return float(text)
