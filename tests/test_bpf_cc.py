"""Issue 27, section 2: a congestion control written once as a BPF struct_ops program runs in
the simulator (the core's eBPF interpreter, cc = { bpf = ... }) as in the kernel. fatpipe's
own programs (bpf/) run there give the summaries of the built-in algorithms they implement;
what the interpreter's view does not provide is refused in one line. Needs clang (CI
installs it); without it the tests skip, saying so."""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path

import pytest

import fatpipe
from emulate_helpers import cli
from fatpipe.scenario import ScenarioError, load
from fatpipe.scenario.bpf import BPF_DIR

BASE = {
    "name": "bpf",
    "duration": "20s",
    "topology": {"shape": "dumbbell", "bottleneck_rate": "100Mbps", "rtt": "40ms",
                 "queue": {"discipline": "droptail", "limit_bdp": 1.0}},
    "output": {"plots": False, "sample_interval": "100ms"},
}


@pytest.fixture(autouse=True)
def clang(tmp_path, monkeypatch):
    if shutil.which(os.environ.get("CLANG", "clang")) is None:
        pytest.skip("clang is not installed (BPF congestion controls are compiled with it)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def summary(cc) -> dict:
    flow = fatpipe.run({**BASE, "flows": [{"name": "f", "cc": cc}]}).summary["flows"][0]
    flow.pop("algorithm")
    return flow


def test_bpf_reno_and_cubic_give_the_builtin_summaries_byte_for_byte():
    # bpf/reno.bpf.c with its defaults is Linux's reno: fatpipe's "sack" preset on the linux
    # profile; bpf/cubic_linux.bpf.c with its defaults is tcp_cubic.c with HyStart, the
    # profile's cubic.
    assert summary({"bpf": str(BPF_DIR / "reno.bpf.c")}) == summary("sack")
    assert summary({"bpf": str(BPF_DIR / "cubic_linux.bpf.c")}) == summary("cubic")


FORMS = {
    "reno per ACK": {"algorithm": "reno", "byte_counting": False},
    "highspeed rfc": {"algorithm": "highspeed", "variant": "rfc"},
    "highspeed linux": {"algorithm": "highspeed", "variant": "linux"},
    "scalable-doc001": "scalable-doc001",
    "vegas paper": {"algorithm": "vegas", "variant": "paper"},
    "vegas linux": {"algorithm": "vegas", "variant": "linux"},
    "westwood": "westwood",
    "westwood_plus paper": {"algorithm": "westwood_plus", "variant": "paper"},
    "westwood_plus linux": {"algorithm": "westwood_plus", "variant": "linux"},
    "bic": "bic",
    "fast": "fast",
    "griddt-doc004": "griddt-doc004",
    "nocc": "nocc",
    "htcp": "htcp",
    "lp": "lp",
}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_program_implements_its_builtin_algorithm(form, tmp_path):
    """The programs `fatpipe emulate` registers, with the flow's parameters written in as
    the emulator writes them, run in the simulator: the built-in algorithm's summary."""
    builtin, program = summary(FORMS[form]), summary(_program_object(FORMS[form], tmp_path))
    if form != "htcp":
        assert program == builtin
        return
    # H-TCP's increase and backoff are floating point in the core and 20-bit fixed point in
    # BPF (which has no floating point): the windows part by a segment now and then.
    assert program["goodput_bps"] == pytest.approx(builtin["goodput_bps"], rel=1e-3)
    assert program["segments_retransmitted"] == pytest.approx(builtin["segments_retransmitted"], rel=0.02)


def _program_object(cc, tmp_path: Path) -> dict:
    """The BPF program for built-in algorithm `cc`, as `fatpipe emulate` writes its parameters."""
    cc = load({**BASE, "flows": [{"name": "f", "cc": cc}]}).core["flows"][0]["cc"]
    _, obj = fatpipe._core.bpf_program_object(cc, cc.get("kernel_hz", 250))
    path = tmp_path / "program.o"
    path.write_bytes(obj)
    return {"bpf": str(path), "kernel_hz": cc.get("kernel_hz", 250)}


JIT = pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                         reason="fatpipe's BPF JIT exists only for x86-64 Linux")


@JIT
@pytest.mark.parametrize("form", ["reno.bpf.c", "cubic_linux.bpf.c", *FORMS])
def test_every_program_gives_the_same_summary_jit_compiled_as_interpreted(form, tmp_path):
    """Every program under bpf/ (the FORMS cover them all, with reno and cubic as shipped),
    run by the JIT (jit = true): the interpreter's summary, byte for byte."""
    cc = {"bpf": str(BPF_DIR / form)} if form.endswith(".c") else _program_object(FORMS[form], tmp_path)
    assert summary({**cc, "jit": True}) == summary(cc)


def test_jit_takes_a_boolean_and_refuses_anything_else_in_one_line():
    reno = str(BPF_DIR / "reno.bpf.c")
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.cc\.jit") as err:
        load({**BASE, "flows": [{"name": "f", "cc": {"bpf": reno, "jit": "yes"}}]})
    assert "\n" not in str(err.value)
    assert load({**BASE, "flows": [{"name": "f", "cc": {"bpf": reno}}]}).core["flows"][0]["cc"]["jit"] is False


def program(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "mine.bpf.c"
    src.write_text('#include "fatpipe_cc.h"\nchar _license[] SEC("license") = "Dual MIT/GPL";\n' + body)
    return src


RENO_OPS = """
FP_OP(void, mine_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked) { tcp_reno_cong_avoid(sk, ack, acked); }
FP_RENO_UNDO_CWND(mine_undo)
SEC(".struct_ops") struct tcp_congestion_ops mine = {
    .ssthresh = (void *)mine_ssthresh, .cong_avoid = (void *)mine_cong_avoid, .undo_cwnd = (void *)mine_undo,
    .name = "mine" };
"""


def test_a_field_the_view_does_not_provide_is_refused_in_one_line(tmp_path):
    src = program(tmp_path, """
struct tcp_sock___mine { __u32 rcv_wnd; } __attribute__((preserve_access_index));
FP_OP(__u32, mine_ssthresh, struct sock *, sk) { return ((struct tcp_sock___mine *)sk)->rcv_wnd; }
""" + RENO_OPS)
    toml = tmp_path / "s.toml"
    toml.write_text(
        'name = "x"\nduration = "1s"\n[topology]\nshape = "dumbbell"\nbottleneck_rate = "10Mbps"\nrtt = "20ms"\n'
        f'[[flows]]\nname = "f"\ncc = {{ bpf = "{src}" }}\n'
    )
    proc = cli("run", toml, "-o", tmp_path / "out", env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "reads tcp_sock.rcv_wnd, which fatpipe's view of the socket does not provide" in proc.stderr


def test_a_parameter_the_program_lacks_and_a_source_that_does_not_compile_are_one_line(tmp_path):
    reno = str(BPF_DIR / "reno.bpf.c")
    with pytest.raises(ValueError, match=r"flows\[0\]\.cc\.parameters\.nonsense = 1: the program has no parameter for it"):
        fatpipe.run({**BASE, "flows": [{"name": "f", "cc": {"bpf": reno, "parameters": {"nonsense": 1}}}]})
    # b = 0.3 fills b_q20: a gentler decrease than Reno's, so losses come sooner again.
    gentle = summary({"bpf": reno, "parameters": {"b": 0.3}})
    assert gentle["segments_retransmitted"] > summary("sack")["segments_retransmitted"]
    broken = program(tmp_path, "this is not C;")
    with pytest.raises(ScenarioError, match="could not compile") as err:
        load({**BASE, "flows": [{"name": "f", "cc": {"bpf": str(broken)}}]})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("jit", [False, pytest.param(True, marks=JIT)])
def test_a_program_that_faults_while_running_ends_the_run_in_one_line(tmp_path, jit):
    # Reads 4 KiB past the socket: the kernel's verifier refuses this; the interpreter (and
    # the JIT's inline check) stops it at the first loss, when ssthresh runs.
    src = program(tmp_path, """
FP_OP(__u32, mine_ssthresh, struct sock *, sk) { return *(volatile __u32 *)((char *)sk + 4096); }
""" + RENO_OPS)
    with pytest.raises(ScenarioError) as err:
        fatpipe.run({**BASE, "flows": [{"name": "f", "cc": {"bpf": str(src), "jit": jit}}]})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("BPF congestion control mine: mine_ssthresh: a read of 4 bytes"), message


def test_bpf_trace_printk_lines_go_to_stderr_with_the_simulated_time(tmp_path):
    # The same program traced in both: in the kernel its lines go to trace_pipe, in the
    # simulator to stderr when FATPIPE_BPF_TRACE is set (cc/bpf.rs), never otherwise.
    src = program(tmp_path, """
FP_OP(__u32, mine_ssthresh, struct sock *, sk) {
    __u32 w = tcp_sk(sk)->snd_cwnd;
    FP_TRACE("ssthresh from cwnd %u, signed %d, hex %x\\n", w, -(int)w, w);
    return w / 2 > 2 ? w / 2 : 2;
}
""" + RENO_OPS)
    toml = tmp_path / "s.toml"
    toml.write_text(
        'name = "x"\nduration = "3s"\n[topology]\nshape = "dumbbell"\nbottleneck_rate = "10Mbps"\nrtt = "20ms"\n'
        f'[topology.queue]\nlimit_packets = 20\n[[flows]]\nname = "f"\ncc = {{ bpf = "{src}" }}\n'
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    quiet = cli("run", toml, "-o", tmp_path / "quiet", "--quiet", "--no-plots", env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert "ssthresh from" not in quiet.stderr
    traced = cli("run", toml, "-o", tmp_path / "traced", "--quiet", "--no-plots", env={**env, "FATPIPE_BPF_TRACE": "1"})
    assert traced.returncode == 0, traced.stderr
    lines = [line.split(" ", 1) for line in traced.stderr.splitlines() if "ssthresh from" in line]
    assert lines, traced.stderr
    for at, text in lines:
        assert 0 < float(at) < 3
        cwnd = int(text.split()[3].rstrip(","))
        assert text == f"ssthresh from cwnd {cwnd}, signed {-cwnd}, hex {cwnd:x}"
