"""Running a scenario in the emulator (``fatpipe._core.Emulation``)."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .. import realtime
from ..realtime import Terminated, sigterm_as_interrupt, wait_for
from ..result import Result
from ..runner import ScenarioSource, import_core, prepare, with_capture_paths
from ..scenario import Loaded, ScenarioError

__all__ = ["emulate", "EmulationError", "PrivilegeError", "Terminated", "check_privileges", "lateness_line", "notes_lines",
           "device_queue_line"]

#: Linux capabilities an emulation needs: CAP_SYS_ADMIN (network namespaces) and
#: CAP_NET_ADMIN (TUN devices, interface settings); bit numbers of linux/capability.h.
CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


class EmulationError(RuntimeError):
    """The emulation could not run or did not finish (a system call failed, a connection
    did not open, the run was stopped)."""


class PrivilegeError(EmulationError):
    """The process lacks root (CAP_SYS_ADMIN and CAP_NET_ADMIN)."""


def check_privileges() -> None:
    """Raises :class:`PrivilegeError` unless the process has CAP_SYS_ADMIN and
    CAP_NET_ADMIN (root has both)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            line = next((x for x in f if x.startswith("CapEff:")), "CapEff: 0")
        caps = int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        caps = 0
    need = (1 << CAP_SYS_ADMIN) | (1 << CAP_NET_ADMIN)
    if caps & need != need:
        raise PrivilegeError(
            "fatpipe emulate needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create network "
            "namespaces and TUN devices: run it as root, e.g. sudo fatpipe emulate SCENARIO.toml -o OUTDIR"
        )


def emulate(
    scenario: Union[ScenarioSource, Loaded],
    seed: Optional[int] = None,
    progress: bool = False,
    spin_margin_us: Optional[float] = None,
    realtime_priority: bool = True,
    on_start: Optional[Callable[[Any], None]] = None,
    capture_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    bpf: str = "auto",
    tun_offload: bool = True,
) -> Result:
    """Runs a scenario in real time with real Linux TCP and returns its
    :class:`~fatpipe.result.Result`.

    Args:
        scenario: a TOML file path, a dict in the scenario format, or a normalized scenario.
        seed: overrides the scenario's seed (the links' random loss, RED and parallel paths
            draw from it; the kernels' own randomness is not seeded).
        progress: a progress bar of the run's seconds on stderr.
        spin_margin_us: the relay wakes this early before each event and polls
            (default 0: it sleeps to the event).
        realtime_priority: run the relay (and, below it, the applications) under SCHED_FIFO
            (default True).
        on_start: called with the ``_core.Emulation`` once the run has started (tests
            read its namespaces).
        capture_dir: where the scenario's captures are written (as for :func:`fatpipe.run`;
            by default a new temporary directory).
        bpf: when a flow's algorithm runs as fatpipe's BPF congestion control (``bpf/``,
            compiled with clang and registered for the run): ``"auto"`` where the kernel's
            own module does not run it as the flow asks, ``"always"`` (the kernel's reno and
            cubic too, to check the programs), ``"never"``.
        tun_offload: pass TSO and GRO super-packets through the hosts' TUN devices (default
            True: the hosts' kernels send and receive as on a NIC with TSO and GRO, and the
            relay makes one system call per super-packet); False passes one packet per call.
            A kernel that refuses the offloads gets the latter, and
            ``summary["emulation"]["relay"]["tun"]["offload_refused"]`` says why.

    Raises:
        ScenarioError: the scenario is invalid, or asks for what the emulator or the kernel
            cannot do (one line naming the flow and what is available).
        PrivilegeError: not root.
        EmulationError: a system failure, or the run did not finish.
        KeyboardInterrupt: Ctrl-C or SIGTERM; everything was stopped and removed first.
    """
    loaded = prepare(scenario, seed)
    core = import_core()
    check_privileges()
    doc, capture_files = with_capture_paths(loaded, capture_dir)
    options: Dict[str, Any] = {"realtime_priority": realtime_priority, "bpf": bpf, "tun_offload": tun_offload}
    if spin_margin_us is not None:
        options["spin_margin_ps"] = int(round(spin_margin_us * 1e6))
    with sigterm_as_interrupt():
        emulation = _build(core, doc, options)
        try:
            emulation.start()
            if on_start is not None:
                on_start(emulation)
            wait_for(emulation, f"{loaded.core.get('name', 'run')} (emulated)", progress)
            try:
                output = emulation.finish()
            except OSError as err:
                raise EmulationError(str(err)) from None
        finally:
            emulation.close()
    for entry in output["summary"].get("captures", []):
        if entry.get("error"):
            raise EmulationError(entry["error"])
    return Result(output, loaded.core, plots=loaded.plots, capture_files=capture_files)


def _build(core: Any, doc: Mapping[str, Any], options: Mapping[str, Any]) -> Any:
    try:
        return core.Emulation(doc, **options)
    except PermissionError as err:
        raise PrivilegeError(f"fatpipe emulate: {err}") from None
    except ValueError as err:
        raise ScenarioError(str(err)) from None
    except OSError as err:
        raise EmulationError(str(err)) from None


def lateness_line(summary: Mapping[str, Any]) -> str:
    """The run's release lateness in one line."""
    e = summary["emulation"]
    late = e["release_lateness"]

    def us(ps: Optional[int]) -> str:
        return "-" if ps is None else f"{ps / 1e6:.0f} us" if ps < 10**10 else f"{ps / 1e9:.1f} ms"

    line = (
        f"release lateness: median {us(late['median_ps'])}, p99 {us(late['p99_ps'])}, max {us(late['max_ps'])} "
        f"over {late['packets']:,} packets (p99 limit {us(late['limit_p99_ps'])})"
    )
    delay = e["coalescing_delay"]
    if delay["max_ps"]:
        # Interrupt coalescing: the limit judges the lateness against the interrupts.
        irq = e["interrupt_lateness"]
        line = line.replace("(p99 limit", "including interrupt coalescing's delay (median "
                            f"{us(delay['median_ps'])}, max {us(delay['max_ps'])}); against the interrupts p99 "
                            f"{us(irq['p99_ps'])}, max {us(irq['max_ps'])} (p99 limit")
    return line


def notes_lines(summary: Mapping[str, Any]) -> List[str]:
    """Where the kernel departs from what the flows asked, one line per distinct note,
    naming the flows it applies to."""
    return realtime.notes_lines(summary, "emulation")


def device_queue_line(summary: Mapping[str, Any]) -> Optional[str]:
    """One line when a host's device queue refused or held back packets; None when none did.
    A qdisc drop refuses a packet to the host's own TCP (NET_XMIT_DROP), which puts that
    connection into CWR (`__tcp_transmit_skb` calls `tcp_enter_cwr`), a reduction without a
    loss that the simulated host, whose interface is the scenario's first link, would not
    make; requeues are the device pushing back (the step before the qdisc fills); the TUN
    device's own drops are packets lost inside the host (docs/emulation.md, "Results")."""
    parts = []
    for h in summary["emulation"]["hosts"]:
        q = h.get("qdisc") or {}
        drops, requeues, tun = q.get("drops", 0), q.get("requeues", 0), h.get("tun_tx_dropped", 0)
        if drops or requeues or tun:
            parts.append(f"{h['name']}: {q.get('kind', 'qdisc')} dropped {drops} (each a CWR), "
                         f"requeued {requeues}; the TUN device dropped {tun}")
    if not parts:
        return None
    return ("the hosts' device queues refused packets to their own TCP, which a simulated host does not ("
            + "; ".join(parts) + "; emulation.hosts[] in summary.json)")
