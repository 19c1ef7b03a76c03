"""Running a scenario between this host and a probe daemon (``fatpipe._core.ProbeRun``)."""

from __future__ import annotations

import copy
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .. import realtime
from ..realtime import sigterm_as_interrupt, wait_for
from ..result import Result
from ..runner import import_core
from ..scenario import Loaded, ScenarioError, load, read_scenario_file

__all__ = ["probe", "load_probe_scenario", "resolve_daemon", "ProbeScenario", "ProbeError", "ProbeRefused"]

#: A probe needs no [topology]: the path is the real one. The scenario loader does, so a
#: scenario without one gets this stand-in, used for nothing but loading.
STAND_IN_TOPOLOGY: Dict[str, Any] = {"shape": "dumbbell", "bottleneck_rate": "1Gbps", "rtt": "1ms"}
#: The two hosts of a probe run, as its scenario.json and summaries name them.
HOSTS = ("controller", "daemon")


class ProbeError(RuntimeError):
    """The probe could not run: the daemon was unreachable, the connection failed, or an
    end failed during the test."""


class ProbeRefused(ProbeError):
    """What was asked cannot be done: the daemon refused it (its secret, its ports, its
    limits), or a host lacks what a flow needs (an algorithm)."""


@dataclass
class ProbeScenario:
    """A scenario as a probe runs it."""

    #: The scenario as the user wrote it, and loaded.
    user: Dict[str, Any]
    loaded: Loaded
    #: Per flow of ``loaded.core``: sent from this host (else from the daemon's).
    controller_sends: List[bool]
    #: The sections the probe does not use, one phrase each (empty: none).
    ignored: List[str] = field(default_factory=list)

    def ignored_line(self) -> Optional[str]:
        """The one line that says what the probe ignores (None if nothing)."""
        return "fatpipe probe ignores " + "; ".join(self.ignored) if self.ignored else None


def load_probe_scenario(scenario: Union[str, "os.PathLike[str]", Mapping[str, Any]], seed: Optional[int] = None) -> ProbeScenario:
    """Reads and validates a scenario for a probe; raises :class:`ScenarioError` (one line)."""
    user = dict(scenario) if isinstance(scenario, Mapping) else read_scenario_file(scenario)
    doc = copy.deepcopy(user)
    if seed is not None:
        doc["seed"] = seed
    doc.setdefault("topology", copy.deepcopy(STAND_IN_TOPOLOGY))
    loaded = load(doc)
    return ProbeScenario(user, loaded, _controller_sends(user, loaded.core), _ignored(user))


def _ignored(user: Mapping[str, Any]) -> List[str]:
    items = []
    if "topology" in user:
        items.append("[topology] (the real path between the two hosts is used: its base RTT and path MTU are "
                     "measured, its links, queues and impairments are not emulated)")
    output = user.get("output") or {}
    captures = sorted(k for k in output if k.startswith("capture"))
    if captures:
        items.append(", ".join(f"output.{k}" for k in captures) + " (a probe captures no packets)")
    return items


def _controller_sends(user: Mapping[str, Any], core: Mapping[str, Any]) -> List[bool]:
    """Which host sends each flow. Named shapes: a "forward" flow (the default) goes from
    this host to the daemon's, a "reverse" one back. Custom topologies: the first flow's
    hosts are this host and the daemon's, and every flow runs between them."""
    flows = core["flows"]
    names = [n["name"] for n in core["nodes"]]
    if (user.get("topology") or {}).get("shape") == "custom":
        first = (flows[0]["src"], flows[0]["dst"])
        sends = []
        for i, f in enumerate(flows):
            pair = (f["src"], f["dst"])
            if pair not in (first, first[::-1]):
                raise ScenarioError(
                    f"flows[{i}] ({f['name']}): a probe runs between two hosts, and flows[0] runs from "
                    f"{names[first[0]]} to {names[first[1]]}; this flow runs from {names[pair[0]]} to {names[pair[1]]}"
                )
            sends.append(pair == first)
        return sends
    directions = {}
    for i, f in enumerate(user.get("flows") or []):
        directions[f.get("name", f"flow{i}")] = f.get("direction") or "forward"
    return [directions.get(f.get("group") or f["name"], "forward") == "forward" for f in flows]


def resolve_daemon(text: str, default_port: int) -> str:
    """``HOST[:PORT]`` as the daemon's "ADDRESS:PORT" (IPv4; a name is resolved). Raises
    :class:`ValueError` with one line."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = text, str(default_port)
    if not host:
        raise ValueError(f"{text!r}: give HOST or HOST:PORT (an IPv4 address or a host name)")
    try:
        port = int(port_text, 10)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise ValueError(f"{text!r}: the port must be a whole number from 1 to 65535")
    try:
        address = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except (socket.gaierror, UnicodeError) as err:
        raise ValueError(f"{text!r}: cannot resolve {host!r} to an IPv4 address ({err})") from None
    return f"{address}:{port}"


def probe_scenario(core: Mapping[str, Any], controller_sends: List[bool]) -> Dict[str, Any]:
    """The normalized scenario as a probe ran it: two hosts, this one and the daemon's, and
    no links (the path is real); what ``scenario.json`` of a probe run holds."""
    doc = copy.deepcopy(dict(core))
    doc["nodes"] = [{"name": name, "kind": "host"} for name in HOSTS]
    doc["links"], doc["splits"], doc["routes"] = [], [], []
    doc.pop("captures", None)
    for f, here in zip(doc["flows"], controller_sends):
        f["src"], f["dst"] = (0, 1) if here else (1, 0)
    return doc


def probe(
    daemon: str,
    scenario: Union[str, "os.PathLike[str]", Mapping[str, Any], ProbeScenario],
    secret: Optional[bytes] = None,
    seed: Optional[int] = None,
    data_port: Optional[int] = None,
    progress: bool = False,
    pings: int = 10,
) -> Result:
    """Runs a scenario's flows between this host and the daemon at ``daemon``
    (``HOST[:PORT]``) and returns its :class:`~fatpipe.result.Result`.

    Args:
        daemon: where ``fatpipe probe serve`` listens (default port ``PROBE_DEFAULT_PORT``).
        scenario: a TOML file, a dict in the scenario format, or a :class:`ProbeScenario`.
        secret: the daemon's shared secret, if it has one.
        seed: overrides the scenario's seed (only flows' start jitter draws from it).
        data_port: ask the daemon for its data ports from this one on (flow i: port + i);
            they must be among its ``--data-ports``.
        progress: a progress bar of the test's seconds on stderr.
        pings: ping-pong exchanges that measure the base RTT.

    Raises:
        ScenarioError: the scenario is invalid.
        ProbeRefused: what was asked cannot be done (one line naming it).
        ProbeError: the daemon could not be reached, or the test failed.
        KeyboardInterrupt: Ctrl-C or SIGTERM; both ends were stopped first.
    """
    core = import_core()
    ps = scenario if isinstance(scenario, ProbeScenario) else load_probe_scenario(scenario, seed)
    try:
        address = resolve_daemon(daemon, core.PROBE_DEFAULT_PORT)
    except ValueError as err:
        raise ProbeRefused(str(err)) from None
    run = core.ProbeRun(address, ps.loaded.core, ps.controller_sends, secret=secret,
                        data_port=data_port, pings=pings)
    with sigterm_as_interrupt():
        try:
            wait_for(run, f"{ps.loaded.core['name']} (probed)", progress)
            output = run.finish()
        except ValueError as err:
            raise ProbeRefused(str(err)) from None
        except OSError as err:
            raise ProbeError(str(err)) from None
        finally:
            run.close()
    output["summary"]["probe"]["ignored"] = ps.ignored
    return Result(output, probe_scenario(ps.loaded.core, ps.controller_sends), plots=ps.loaded.plots)


def path_line(summary: Mapping[str, Any]) -> str:
    """The measured path in one line."""
    path = summary["probe"]["path"]
    mtu = path.get("path_mtu_bytes")
    return (f"path: base RTT {path['base_rtt_ps'] / 1e9:.3f} ms (control connection, smallest of "
            f"{len(path['rtt_samples_ps'])} ping-pongs), path MTU {mtu if mtu else 'unknown'} bytes; "
            f"the hosts' clocks agree within {path['clock_offset_bound_ps'] / 1e9:.3f} ms")


def notes_lines(summary: Mapping[str, Any]) -> List[str]:
    """Where the hosts or Linux depart from what the flows asked, one line per distinct
    note, naming the flows it applies to."""
    return realtime.notes_lines(summary, "probe")


def hosts_of(summary: Mapping[str, Any]) -> Tuple[str, str]:
    """(this host, the daemon's) as "name (address)"."""
    p = summary["probe"]
    return tuple(f"{p[h]['hostname']} ({p[h]['address']})" for h in HOSTS)  # type: ignore[return-value]
