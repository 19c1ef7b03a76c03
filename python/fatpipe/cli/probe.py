"""``fatpipe probe serve`` and ``fatpipe probe run`` on the command line: their arguments,
output and exit status."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional, Tuple

from ..realtime import Terminated, sigterm_as_interrupt
from ..scenario import ScenarioError
from ..units import whole_number
from .common import EXIT_FAILURE, EXIT_OK, EXIT_TERMINATED, CliError, add_command, error, seed, staging, writing

__all__ = ["add_probe"]

#: The longest shared secret read: HMAC-SHA256 hashes any key longer than its 64-byte block
#: (RFC 2104 section 2), so more adds nothing; this bounds what --secret-file reads.
MAX_SECRET_BYTES = 4096
#: The environment variable that holds the shared secret when no --secret-file is given.
SECRET_ENV = "FATPIPE_PROBE_SECRET"


def add_probe(commands: Any) -> None:
    p = add_command(
        commands,
        "probe",
        None,
        help="run a scenario's flows between two real hosts (NetSpec's controller and daemon)",
        description="Run a scenario's flows between this host and another that runs `fatpipe probe serve`, "
        "with the same traffic engine as `fatpipe emulate`; write the same files as `fatpipe run`. "
        "See docs/probe.md.",
    )
    sub = p.add_subparsers(dest="probe_command", metavar="COMMAND", required=True)
    s = add_command(
        sub,
        "serve",
        serve_command,
        help="serve probe clients (the daemon)",
        description="Serve `fatpipe probe run` clients until Ctrl-C or SIGTERM: one test at a time per "
        "client, several clients at once. Binds to 127.0.0.1 unless --bind says otherwise.",
    )
    s.add_argument("--bind", type=_bind, metavar="ADDR[:PORT]",
                   help="IPv4 address and port to listen on (default 127.0.0.1 and port 5301; 0.0.0.0: every "
                   "address; port 0: any free one, printed)")
    _secret_argument(s, "clients must prove they know this secret (HMAC-SHA256 of fresh nonces; it never "
                     "crosses the network)")
    s.add_argument("--data-ports", type=_port_range, metavar="LOW-HIGH",
                   help="the ports data connections may use (default: free ones the kernel picks)")
    s.add_argument("--max-duration", type=_duration, metavar="DURATION",
                   help='the longest test it runs (default "1h")')
    s.add_argument("--max-clients", type=_positive, metavar="N",
                   help="clients served at once; more are refused with an error (default 64)")
    s.add_argument("--quiet", action="store_true", help="no line per client event")
    r = add_command(
        sub,
        "run",
        run_command,
        help="run a scenario against a daemon (the controller)",
        description="Run SCENARIO.toml's flows between this host and the daemon at HOST: \"forward\" flows "
        "from here to there, \"reverse\" ones back. The scenario's [topology] is not used: the path is "
        "measured (base RTT, path MTU). Writes OUTDIR as `fatpipe run` does; --simulate adds the "
        "simulation of a dumbbell built from the measurements (OUTDIR/simulated) and the comparison "
        "(OUTDIR/compare).",
    )
    r.add_argument("daemon", metavar="HOST[:PORT]", help="the daemon (default port 5301)")
    r.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file")
    r.add_argument("-o", "--output", metavar="OUTDIR",
                   help="output directory (default: runs/<scenario name>-probe); written whole at the end")
    r.add_argument("--overwrite", action="store_true", help="replace OUTDIR if it holds files")
    r.add_argument("--seed", type=seed, metavar="N", help="override the scenario's seed (flows' start jitter)")
    _secret_argument(r, "the daemon's shared secret")
    r.add_argument("--data-port", type=_port, metavar="PORT",
                   help="ask the daemon for data ports from PORT on (flow i: PORT + i), among its --data-ports")
    r.add_argument("--simulate", action="store_true",
                   help="also simulate a dumbbell built from the measured path, and compare the two")
    r.add_argument("--path-rate", type=_rate, metavar="RATE",
                   help="--simulate: the bottleneck's IP rate instead of measuring it with a capacity flow")
    r.add_argument("--path-queue", type=_size, metavar="SIZE",
                   help="--simulate: the bottleneck's queue instead of measuring it with a capacity flow")
    r.add_argument("--capacity-time", type=_seconds, metavar="DURATION", default=2.0,
                   help='--simulate: how long the capacity flow runs (default "2s")')
    r.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    r.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


def _secret_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--secret-file", metavar="FILE",
                   help=f"{what}: the file's bytes (a trailing newline dropped); default: ${SECRET_ENV} if set")


def _kind(parse: Any, allowed: str) -> Any:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (ValueError, TypeError):
            raise argparse.ArgumentTypeError(f"{text!r} is not allowed: {allowed}") from None

    return convert


def _port_of(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= 65535:
        raise ValueError(text)
    return value


def _port_range_of(text: str) -> Tuple[int, int]:
    low, _, high = text.partition("-")
    lo, hi = _port_of(low), _port_of(high or low)
    if lo > hi:
        raise ValueError(text)
    return lo, hi


def _bind_of(text: str) -> str:
    import ipaddress

    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, ""
    if host == "localhost":
        host = "127.0.0.1"
    ipaddress.IPv4Address(host)
    if port:
        value = whole_number(port)
        if not 0 <= value <= 65535:
            raise ValueError(text)
    return f"{host}:{port}" if port else host


def _duration_of(text: str) -> int:
    from ..units import UnitError, parse_duration

    try:
        ps = parse_duration(text)
    except UnitError as err:
        raise ValueError(str(err)) from None
    if ps <= 0:
        raise ValueError(text)
    return ps


def _rate_of(text: str) -> int:
    from ..units import UnitError, parse_rate

    try:
        return parse_rate(text)
    except UnitError as err:
        raise ValueError(str(err)) from None


def _size_of(text: str) -> int:
    from ..units import UnitError, parse_size

    try:
        value = parse_size(text)
    except UnitError as err:
        raise ValueError(str(err)) from None
    if value <= 0:
        raise ValueError(text)
    return value


_port = _kind(_port_of, "expected a port number from 1 to 65535")
_port_range = _kind(_port_range_of, "expected LOW-HIGH, port numbers from 1 to 65535 with LOW <= HIGH")
_bind = _kind(_bind_of, 'expected an IPv4 address with an optional port, such as "127.0.0.1:5301" or "0.0.0.0"')
_duration = _kind(_duration_of, 'expected a positive duration such as "10s" or "1h"')
_seconds = _kind(lambda t: _duration_of(t) / 10**12, 'expected a positive duration such as "2s"')
_rate = _kind(_rate_of, 'expected a rate such as "100Mbps"')
_size = _kind(_size_of, 'expected a positive size such as "256KB"')
def _positive_of(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise ValueError(text)
    return value


_positive = _kind(_positive_of, "expected a whole number >= 1")


def _secret(args: argparse.Namespace) -> Optional[bytes]:
    """The shared secret from --secret-file, else the environment, else None."""
    if args.secret_file is not None:
        source = f"--secret-file {args.secret_file}"
        try:
            # Read no more than a secret can be: /dev/urandom or a huge file is refused at
            # once instead of read without end.
            with open(args.secret_file, "rb") as file:
                data = file.read(MAX_SECRET_BYTES + 1)
        except OSError as err:
            raise CliError(f"{source}: cannot read: {err.strerror or err}") from None
        if len(data) > MAX_SECRET_BYTES:
            raise CliError(f"{source}: longer than {MAX_SECRET_BYTES} bytes; a shared secret is a short file "
                           "(16 random bytes or more are best, e.g. head -c 32 /dev/urandom | base64 > FILE)")
    elif os.environ.get(SECRET_ENV):
        data, source = os.environb[SECRET_ENV.encode()], f"${SECRET_ENV}"
    else:
        return None
    secret = data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith(b"\n") else data
    if not secret:
        raise CliError(f"{source}: empty; a shared secret needs at least one byte (16 random bytes or more are best)")
    return secret


def serve_command(args: argparse.Namespace) -> int:
    from ..runner import import_core

    core = import_core()
    secret = _secret(args)
    bind = args.bind or "127.0.0.1"
    if ":" not in bind:
        bind = f"{bind}:{core.PROBE_DEFAULT_PORT}"
    options: dict = {"secret": secret, "data_ports": args.data_ports, "log": not args.quiet}
    if args.max_duration is not None:
        options["max_duration_ps"] = args.max_duration
    if args.max_clients is not None:
        options["max_clients"] = args.max_clients
    try:
        server = core.ProbeServer(bind, **options)
    except OSError as err:
        error(f"probe serve: {err}")
        return EXIT_FAILURE
    auth = "clients must prove the shared secret" if secret else "no shared secret"
    ports = "data ports {}-{}".format(*args.data_ports) if args.data_ports else "data ports the kernel picks"
    print(f"fatpipe probe: serving on {server.address} (protocol {core.PROBE_PROTOCOL_VERSION}; {auth}; {ports})", flush=True)
    if secret is None and not server.address.startswith("127."):
        print(f"fatpipe: warning: {server.address} is reachable from other hosts and has no shared secret: anyone who "
              "reaches it can make this host send and receive test traffic (--secret-file)", file=sys.stderr, flush=True)
    try:
        with sigterm_as_interrupt():
            # Short waits: SIGTERM is handled between them, and the daemon stops within 1 s.
            while not server.wait(0.1):
                pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    print("fatpipe probe: stopped", flush=True)
    return EXIT_OK


def run_command(args: argparse.Namespace) -> int:
    from ..cli_tables import summary_table
    from ..outdir import discard, publish
    from ..probe.path import measure_path_capacity, measured_path, path_summary_line, simulate_beside
    from ..probe.runner import ProbeError, ProbeRefused, load_probe_scenario, notes_lines, path_line, probe, resolve_daemon
    from ..runner import import_core

    if not args.simulate and (args.path_rate is not None or args.path_queue is not None):
        raise CliError("--path-rate and --path-queue describe the simulated path: they need --simulate")
    try:
        ps = load_probe_scenario(args.scenario, args.seed)
    except OSError as err:
        raise CliError(f"{args.scenario}: cannot read: {err.strerror or err}") from None
    except ScenarioError as err:
        raise CliError(f"{args.scenario}: {err}") from None
    core = import_core()
    try:
        daemon = resolve_daemon(args.daemon, core.PROBE_DEFAULT_PORT)
    except ValueError as err:
        raise CliError(str(err)) from None
    secret = _secret(args)
    outdir = Path(args.output) if args.output else Path("runs") / f"{ps.loaded.core['name']}-probe"
    scratch = staging(outdir, args.overwrite)
    plots = ps.loaded.plots and not args.no_plots
    wall_start = time.perf_counter()
    try:
        result = probe(daemon, ps, secret=secret, data_port=args.data_port,
                       progress=not args.quiet and sys.stderr.isatty())
        wall_s = time.perf_counter() - wall_start
        path = None
        if args.simulate:
            capacity = None
            if args.path_rate is None or args.path_queue is None:
                capacity = measure_path_capacity(daemon, secret, args.capacity_time, forward=any(ps.controller_sends))
            path = measured_path(result.summary, args.path_rate, args.path_queue, capacity)
            result.summary["probe"]["simulated_path"] = path.to_json()
        with writing(outdir):
            result.write_files(scratch, plots=plots)
            if path is not None:
                comparison = simulate_beside(result, ps, path, scratch, plots)
            publish(scratch, outdir)
    except ScenarioError as err:
        raise CliError(f"{args.scenario}: {err}") from None
    except ProbeRefused as err:
        raise CliError(str(err)) from None
    except ProbeError as err:
        error(f"probe of {daemon} failed: {err}")
        return EXIT_FAILURE
    except Terminated:
        error("terminated (both ends stopped)")
        return EXIT_TERMINATED
    finally:
        discard(scratch)
    if not args.quiet:
        line = ps.ignored_line()
        if line:
            print(f"fatpipe: note: {line}", file=sys.stderr)
        print(summary_table(result.summary, wall_s, result.scenario))
        print(path_line(result.summary))
        notes = notes_lines(result.summary)
        if notes:
            print("where the hosts or Linux depart from the scenario (summary.json flows[].probe.notes):")
            print("\n".join(f"  {n}" for n in notes))
        if path is not None:
            print(path_summary_line(path))
            print(comparison[1].table_text())
        print(f"results: {outdir}")
    return EXIT_OK
