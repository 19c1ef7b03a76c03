"""What the probe tests share: a daemon on loopback or in a network namespace, the command
line, and a pair of network namespaces joined by a veth pair with a tbf rate limit.

The namespaces belong to two holder processes (`unshare --net sleep`) that die with the
test process (PR_SET_PDEATHSIG), and the namespaces and their veth ends with them: nothing
is mounted under /run/netns, so nothing can be left behind, even if the test is killed.
Real traffic goes only to loopback or between these two namespaces.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, Sequence

import pytest

from emulate_helpers import require_root

PR_SET_PDEATHSIG = 1
#: The two namespaces' addresses: a /24 that exists only on their veth pair.
NS_ADDRESSES = ("10.231.0.1", "10.231.0.2")


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def fatpipe_cmd(*args: object, netns: Optional[int] = None) -> List[str]:
    """The command line of `python -m fatpipe ARGS`, inside the namespace of process
    `netns` if given."""
    cmd = [sys.executable, "-m", "fatpipe", *map(str, args)]
    return ["nsenter", f"--net=/proc/{netns}/ns/net", *cmd] if netns else cmd


def run_cli(*args: object, netns: Optional[int] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(fatpipe_cmd(*args, netns=netns), capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_die_with_parent)


class Daemon:
    """`fatpipe probe serve` in a subprocess; `address` is where it listens."""

    def __init__(self, *args: object, netns: Optional[int] = None, bind: str = "127.0.0.1:0") -> None:
        self.proc = subprocess.Popen(fatpipe_cmd("probe", "serve", "--bind", bind, *args, netns=netns),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=_die_with_parent)
        line = self.proc.stdout.readline()
        m = re.search(r"serving on (\d+\.\d+\.\d+\.\d+:\d+)", line)
        if m is None:
            self.proc.kill()
            pytest.fail(f"the daemon did not start: {line!r} {self.proc.stderr.read()!r}")
        self.address = m.group(1)
        self.log: Optional[str] = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> str:
        """Stops it (SIGTERM) and returns its log (stderr)."""
        if self.log is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                _, self.log = self.proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, self.log = self.proc.communicate()
        return self.log


@contextmanager
def daemon(*args: object, netns: Optional[int] = None, bind: str = "127.0.0.1:0") -> Iterator[Daemon]:
    d = Daemon(*args, netns=netns, bind=bind)
    try:
        yield d
    finally:
        d.stop()


def _ip(args: Sequence[str], netns: Optional[int] = None) -> None:
    cmd = (["nsenter", f"--net=/proc/{netns}/ns/net"] if netns else []) + list(args)
    subprocess.run(cmd, check=True, capture_output=True, text=True)


class VethPair:
    """Two network namespaces, a veth pair between them, tbf at `rate` on both ends."""

    def __init__(self, rate: str, burst: str, latency: str) -> None:
        require_root()
        self.holders = [subprocess.Popen(["unshare", "--net", "sleep", "3600"], preexec_fn=_die_with_parent)
                        for _ in range(2)]
        self.pids = [h.pid for h in self.holders]
        deadline = time.monotonic() + 10
        while any(os.readlink(f"/proc/{p}/ns/net") == os.readlink("/proc/self/ns/net") for p in self.pids):
            if time.monotonic() > deadline:
                raise RuntimeError("unshare did not make the namespaces")
            time.sleep(0.01)
        names = (f"fpp{os.getpid() % 100000}a", f"fpp{os.getpid() % 100000}b")
        try:
            _ip(["ip", "link", "add", names[0], "type", "veth", "peer", "name", names[1]])
            for name, pid in zip(names, self.pids):
                _ip(["ip", "link", "set", name, "netns", str(pid)])
        except Exception:
            subprocess.run(["ip", "link", "del", names[0]], capture_output=True)
            self.close()
            raise
        for name, pid, address in zip(names, self.pids, NS_ADDRESSES):
            _ip(["ip", "link", "set", "lo", "up"], pid)
            _ip(["ip", "addr", "add", f"{address}/24", "dev", name], pid)
            _ip(["ip", "link", "set", name, "up"], pid)
            _ip(["tc", "qdisc", "add", "dev", name, "root", "tbf", "rate", rate, "burst", burst, "latency", latency], pid)
        self.names = names

    def close(self) -> None:
        for h in self.holders:
            h.kill()
            h.wait()


def namespace_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


class Client:
    """A probe client speaking the control protocol by hand (tests of the daemon), with
    the secret's MAC computed by Python's own hmac and hashlib."""

    def __init__(self, address: str, timeout: float = 30.0) -> None:
        import socket

        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def recv(self) -> dict:
        import json

        line = self.file.readline()
        if not line:
            raise ConnectionError("the daemon closed the connection")
        return json.loads(line)

    def send(self, message: dict) -> None:
        import json

        self.send_raw((json.dumps({"version": 1, **message}) + "\n").encode())

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def handshake(self, secret: Optional[bytes] = None, mac: Optional[str] = None) -> dict:
        """hello, hello, and the daemon's answer (welcome or error); the daemon's own MAC is
        checked when a secret is given."""
        import hashlib
        import hmac
        import secrets

        hello = self.recv()
        assert hello["type"] == "hello" and hello["version"] == 1, hello
        nonce = secrets.token_hex(32)
        if secret is not None and mac is None:
            mac = hmac.new(secret, b"fatpipe-probe client" + hello["nonce"].encode() + nonce.encode(), hashlib.sha256).hexdigest()
        self.send({"type": "hello", "software": "test", "nonce": nonce, "mac": mac})
        answer = self.recv()
        if answer["type"] == "welcome" and secret is not None:
            expected = hmac.new(secret, b"fatpipe-probe daemon" + nonce.encode() + hello["nonce"].encode(), hashlib.sha256).hexdigest()
            assert answer["mac"] == expected, "the daemon's proof, as Python's HMAC-SHA256 computes it"
        return answer

    def ping(self, seq: int = 7) -> None:
        self.send({"type": "ping", "seq": seq})
        assert self.recv() == {"type": "pong", "seq": seq, "version": 1}

    def closed(self) -> bool:
        """Whether the daemon has closed the connection (EOF or reset)."""
        try:
            return self.file.readline() == b""
        except OSError:
            return True

    def close(self) -> None:
        self.file.close()
        self.sock.close()
