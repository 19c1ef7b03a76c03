"""Speed work must not move results: every example's summary, byte for byte, against the
summaries the simulator produced before the speed issue (issue 16) changed the engine.

`tests/data/reference_summaries.json` was written by this file's `__main__` with the
package built from `main` at 4248210 (the engine before the speed work: one event per
hop came later; first written from 0f8bfab, where issue 16 started, and rewritten when
main's HyStart and BBR fixes moved two examples) on the path:

    PYTHONPATH=/path/to/that/build python3 tests/test_reference_summaries.py > tests/data/reference_summaries.json

Each example runs its first 3 s (shorter runs keep the suite fast; 3 s cover slow
start, the first losses and recovery in most of them). The summary is compared as sorted
JSON text without `events` (one event per hop instead of two changes the count by design)
and `fatpipe_version`.

One tie order changed, and it is listed in TIE_ORDER_CHANGES: with one event per hop a
packet that arrives at a link at the very instant the link's previous packet leaves, on a
link of the same rate, goes straight onto the wire; before, its arrival was processed
before the departure event at that instant, so it counted as one packet queued for zero
time. Only the maximum-queue statistics of those links move (1 packet -> 0); every
delivery, drop, rate, series and capture is the same.

Correctness fixes that move results are listed too: a few values in FIX_CHANGES, a whole
example in FIX_REWRITES (its summary after the fix in `tests/data/reference_summaries_fixed.json`,
its headline values before and after stated there).

Examples added after the speed work have their summary from the build that added them:
`bpf-adaptive-reno.toml` (issue 27, a user's own BPF congestion control, compiled with clang;
skipped where clang is missing) from branch bpf after the Linux stack's hook order was fixed;
`host-fq-10G-into-1G-100ms.toml` (issue 26, the hosts' TSO, GRO and fq) from branch hosts;
`bbr3-shallow-100M-40ms.toml` (issue 28, BBRv3) from main at 6df94b4, after the ECN merge: on
the Linux stack `cwnd_limited` was refreshed only before `cong_avoid`, so BBRv3 (which runs
`cong_control`) read a stale false and never raised inflight_hi when cwnd-limited
(probe_bw.rs, v3's `bbr_probe_inflight_hi_upward`); the ECN branch refreshes it before
`cong_control` too, and the example sends 2 more segments in its 3 s (22,151 against 22,149
from branch bbr3, 596 drops against 594).
`hybla-satellite-10M-600ms.toml` (issue 28, Hybla) from main at 5b7c8d5 (the merge that added
it; identical on main after the later merges).
`dctcp-1G-step-marking.toml` and `prague-cubic-classic-ecn-fifo.toml` (issue 28, the ECN
congestion controls) from branch ecn.
`fq-codel-cubic-vs-bbr.toml` (issue 28, FQ-CoDel) from branch aqm.
`fq-pie-cubic-vs-bbr.toml` and `tbf-shaper-cubic-vs-bbr.toml` (issue 28, FQ-PIE and the TBF
shaper) from branch fqpie, on main at bb435f8, where every other example's summary stayed
byte-identical through that branch's refactoring (FQ-CoDel's scheduler into drr.rs, PIE's
per-queue state into PieVars, the policer's bucket into token_bucket.rs).
`lp-yields-to-reno-10M-20ms.toml` (issue 28, TCP-LP) from branch lp (the commit that added it).
`prague-cubic-dualpi2.toml` and `dctcp-dualpi2-l4s-queue.toml` (issue 28, DualPI2) from branch
dualpi2 (based on main at bb435f8), which added them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REFERENCE = Path(__file__).resolve().parent / "data" / "reference_summaries.json"
DURATION_PS = 3 * 10**12

# (example, path in the summary) -> (before, after): the tie-order change explained above.
TIE_ORDER_CHANGES: Dict[Tuple[str, str], Tuple[Any, Any]] = {
    ("txqueuelen-1G-30ms.toml", "links[1].max_queue_bytes"): (9000, 0),
    ("txqueuelen-1G-30ms.toml", "links[1].max_queue_packets"): (1, 0),
    ("txqueuelen-1G-30ms.toml", "links[2].max_queue_bytes"): (9000, 0),
    ("txqueuelen-1G-30ms.toml", "links[2].max_queue_packets"): (1, 0),
}

# (example, path) -> (before, after): results a correctness fix moved on purpose. Issue 22:
# on the Linux stack without SACK, an ACK covering a retransmission took an RTT sample from
# the original segments beside it (Karn's rule, RFC 6298 3, and Linux `tcp_clean_rtx_queue`
# take none), so srtt grew by the time recovery had taken. Within the 3 s compared, only the
# two examples with NewReno on the `linux` profile move, and only their final srtt: the new
# values are the paths' RTT plus queueing (45 ms path: 61 ms; 100 ms path: 116 ms), where
# the old ones (2.03 s, 0.71 s) exceeded any RTT the path can give.
FIX_CHANGES: Dict[Tuple[str, str], Tuple[Any, Any]] = {
    ("dumbbell-rtt-fairness.toml", "flows[0].srtt_ps"): (2029316657109, 61205653333),
    ("lfn-1G-100ms.toml", "flows[0].srtt_ps"): (709315918054, 115815901160),
}

# Examples a correctness fix moved as a whole: compared with their summary after the fix,
# kept in FIXED (written by `python3 tests/test_reference_summaries.py --fixed NAME`), and
# their headline values before and after stated here. Issue 22: the receiver took TS.Recent
# from an old duplicate segment, so the ACK it sent echoed the duplicate's timestamp; RFC 7323
# 4.3 takes it only from a segment covering Last.ACK.sent, and Linux drops an old duplicate
# before it could (`tcp_sequence`). In document 004's reordering test every spurious fast
# retransmit ends in such duplicates; now the ACKs that follow echo the delayed originals,
# whose timestamps give the sender Eifel's evidence sooner (the recovery is undone on the
# partial ACK instead of by DSACK) and the RTT the slow pipe really has (srtt 108 -> 118 ms
# at 3 s; over its 30 s the example moves from 42.9 to 41.7 Mb/s, 3,054 to 2,667 fast
# retransmits, all but 5 and 6 undone; at 3 s 32.7 Mb/s, 41 fast retransmits, 39 undone).
# Issue 25 (2026-11-28): the linux-2.4 profile started at RFC 3390's 3 segments; Linux 2.4
# starts a fresh connection at 2 (tcp_v4_init_sock sets snd_cwnd = 2, and 2.4.27's
# tcp_init_metrics replaces it only when the route cache holds an RTT for the destination).
# Slow start then reaches each window about 0.58 RTT later (log2 of 3/2), so the first 3 s
# carry less: the two linux-2.4 examples with a 1500-byte MTU move (the jumbo-frame ones
# started at 2 already, RFC 3390 giving 2 segments of 8,948 bytes). The values below are
# after every fix listed.
FIX_REWRITES: Dict[str, Dict[str, Tuple[Any, Any]]] = {
    "reordering-3-paths.toml": {
        "flows[0].goodput_bps": (33941433.95675936, 31415885.70491678),
        "flows[0].fast_retransmits": (134, 26),
        "flows[0].undos": (131, 24),
        "flows[0].srtt_ps": (108229839395, 111339006796),
    },
    "outage-griddt.toml": {
        "flows[0].goodput_bps": (250307674.34038752, 212647828.6901746),
        "flows[0].bytes_delivered": (93865152, 79742808),
    },
}
FIXED = Path(__file__).resolve().parent / "data" / "reference_summaries_fixed.json"


# Examples whose scenario changed on purpose since the reference was written, and the
# settings that give back the scenario it was written from (sweep paths), so that the
# engine is still compared with itself. Issue 22: three examples now run the profile of the
# document they model (their "Expect" lines had been derived on another stack): the
# reference ran them on the default profile as they were.
SCENARIO_CHANGES: Dict[str, Tuple[Tuple[str, Any], ...]] = {
    "dumbbell-rtt-fairness.toml": (("flows[*].tcp", {"timestamps": False}),),
    "two-to-one-1G-30ms.toml": (("flows[*].tcp", {"rcv_buffer": "16MiB", "snd_buffer": "16MiB"}),
                                ("flows[1].cc", "newreno")),
    "txqueuelen-1G-30ms.toml": (("flows[0].tcp", {"rcv_buffer": "16MiB", "snd_buffer": "16MiB"}),),
}


# Per-flow measures the Python layer added after the reference was written (document 003's
# recovery time, issue 15): new keys, not moved results. Only these may be absent from it.
MEASURES_ADDED_SINCE = ("regain_time_s", "cwnd_ceiling_segments", "first_climb_cwnd_segments",
                        "mean_response_time_s", "mean_request_throughput_bps")


# Run-level keys added since, likewise: the time series' interval (issue 16 made its default
# depend on the run's length; it was the scenario's or 10 ms before, as it still is here), and
# the buffer warnings said before a run (issue 22).
SUMMARY_KEYS_ADDED_SINCE = ("sample_interval_s", "warnings")


#: Examples whose congestion control is a BPF program's C source: they need clang.
NEED_CLANG = ("bpf-adaptive-reno.toml",)


def summary_of(path: Path) -> Dict[str, Any]:
    import fatpipe
    from fatpipe.scenario import load

    from fatpipe.scenario import read_scenario_file
    from fatpipe.sweeps import parse_path, set_path

    doc = read_scenario_file(path)
    for flow in doc.get("flows", []):  # a BPF program's path is relative to its scenario file
        if isinstance(flow.get("cc"), dict) and "bpf" in flow["cc"]:
            flow["cc"]["bpf"] = str(path.parent / flow["cc"]["bpf"])
    for key, value in SCENARIO_CHANGES.get(path.name, ()):
        set_path(doc, parse_path(key), value)
    loaded = load(doc)
    loaded.core["duration_ps"] = min(loaded.core["duration_ps"], DURATION_PS)
    summary = dict(fatpipe.run(loaded).summary)
    summary.pop("events")
    summary.pop("fatpipe_version", None)
    return json.loads(json.dumps(summary, sort_keys=True, default=str))


def _set(doc: Any, path: str, value: Any) -> None:
    """Sets `links[1].max_queue_bytes`-style paths."""
    *parents, last = path.replace("]", "").replace("[", ".").split(".")
    for part in parents:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    doc[last] = value


def _get(doc: Any, path: str) -> Any:
    for part in path.replace("]", "").replace("[", ".").split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


@pytest.fixture(scope="module")
def reference() -> Dict[str, Any]:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_every_example_has_a_reference(reference: Dict[str, Any]) -> None:
    assert sorted(reference) == sorted(p.name for p in EXAMPLES.glob("*.toml"))


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_summary_is_byte_identical_to_before_the_speed_work(name: str, reference: Dict[str, Any]) -> None:
    if name in NEED_CLANG and shutil.which(os.environ.get("CLANG", "clang")) is None:
        pytest.skip("clang is not installed (the example's BPF program is compiled with it)")
    expected = json.loads(json.dumps(reference[name]))
    actual = summary_of(EXAMPLES / name)
    if name in FIX_REWRITES:
        fixed = json.loads(FIXED.read_text(encoding="utf-8"))[name]
        for path, (before, after) in FIX_REWRITES[name].items():
            assert _get(expected, path) == before, f"the reference no longer shows the old value at {path}"
            assert _get(fixed, path) == after, f"{path}: the fixed summary does not show the stated change"
        expected = fixed
    for (example, path), (before, after) in {**TIE_ORDER_CHANGES, **FIX_CHANGES}.items():
        if example == name:
            assert _get(expected, path) == before, f"the reference no longer shows the old value at {path}"
            assert _get(actual, path) == after, f"{path}: the stated change did not happen"
            _set(expected, path, after)
    for key in SUMMARY_KEYS_ADDED_SINCE:
        if key not in expected:
            actual.pop(key, None)
    for flow, flow_before in zip(actual["flows"], expected["flows"]):
        for key in MEASURES_ADDED_SINCE:
            if key not in flow_before:
                flow.pop(key, None)
    assert json.dumps(actual, sort_keys=True) == json.dumps(expected, sort_keys=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fixed"]:
        # The examples of FIX_REWRITES after their fix, into FIXED.
        out = {name: summary_of(EXAMPLES / name) for name in sys.argv[2:]}
        FIXED.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        sys.exit(0)
    out = {p.name: summary_of(p) for p in sorted(EXAMPLES.glob("*.toml"))}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
