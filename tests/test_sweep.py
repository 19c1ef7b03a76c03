"""Sweeps: paths into scenarios, grids, zips, replications; running them in parallel,
resuming, recording failures; the same rows locally, on threads and on Dask."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_errors import assert_one_line_error
from test_cli_errors import fatpipe as cli

import fatpipe
from fatpipe.scenario import ScenarioError
from fatpipe.sweeps import (
    Sweep,
    SweepError,
    format_path,
    load_sweep,
    parse_path,
    replication_seed,
    set_path,
)

REPO = Path(__file__).resolve().parent.parent
SWEEP_EXAMPLES = sorted((REPO / "examples" / "sweeps").glob("*.toml"))

#: A run of a few hundred milliseconds of simulated time: a sweep of a dozen takes seconds.
BASE = {
    "name": "tiny",
    "duration": "0.5s",
    "topology": {"bottleneck_rate": "10Mbps", "rtt": "20ms"},
    "flows": [{"name": "a"}, {"name": "b", "cc": "cubic"}],
    "output": {"sample_interval": "50ms"},
}

BASE_TOML = """\
name = "tiny"
duration = "0.5s"
[topology]
bottleneck_rate = "10Mbps"
rtt = "20ms"
[[flows]]
name = "a"
[output]
sample_interval = "50ms"
"""


def write_sweep(tmp_path, body, base=BASE_TOML, name="sweep.toml"):
    (tmp_path / "base.toml").write_text(base, encoding="utf-8")
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


# ---- paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("topology.bottleneck_rate", "topology.bottleneck_rate"),
        ("flows[0].cc", "flows[0].cc"),
        ("flows.*.tcp.rcv_buffer", "flows[*].tcp.rcv_buffer"),
        ("flows[*].tcp.rcv_buffer", "flows[*].tcp.rcv_buffer"),
        ("flows[cubic flow].cc", "flows[cubic flow].cc"),
        ("topology.impairments[1].probability", "topology.impairments[1].probability"),
    ],
)
def test_paths_have_one_canonical_spelling(text, canonical):
    assert format_path(parse_path(text)) == canonical


@pytest.mark.parametrize("text", ["", "a..b", ".a", "a.", "flows[", "flows[]", "a b", "*.x", "flows[0]x"])
def test_malformed_paths_are_refused(text):
    with pytest.raises(SweepError):
        parse_path(text)


def test_set_path_creates_tables_selects_elements_and_copies_values():
    doc = json.loads(json.dumps(BASE))
    set_path(doc, parse_path("flows[*].tcp.rcv_buffer"), "64KB")  # no [flows.tcp] yet
    assert [f["tcp"] for f in doc["flows"]] == [{"rcv_buffer": "64KB"}, {"rcv_buffer": "64KB"}]
    set_path(doc, parse_path("flows[b].cc"), "reno")
    set_path(doc, parse_path("flows[0].cc"), "bbr")
    assert [f["cc"] for f in doc["flows"]] == ["bbr", "reno"]
    table = {"discipline": "red"}
    set_path(doc, parse_path("topology.queue"), table)
    set_path(doc, parse_path("topology.queue.gentle"), False)
    assert table == {"discipline": "red"}  # the sweep's value is not changed by later steps
    assert doc["topology"]["queue"] == {"discipline": "red", "gentle": False}


def test_a_name_pattern_selects_every_element_it_matches():
    doc = json.loads(json.dumps(BASE))
    doc["flows"].append({"name": "reverse", "cc": "reno"})
    set_path(doc, parse_path("flows[?].tcp.rcv_buffer"), "64KB")  # one-letter names: a and b
    assert [f.get("tcp") for f in doc["flows"]] == [{"rcv_buffer": "64KB"}, {"rcv_buffer": "64KB"}, None]
    set_path(doc, parse_path("flows[r*].cc"), "cubic")
    assert doc["flows"][2]["cc"] == "cubic"
    with pytest.raises(ScenarioError) as err:
        set_path(doc, parse_path("flows[x*].cc"), "reno")
    assert "flows[x*]: no element of flows matches 'x*'; names: a, b, reverse" in str(err.value)


@pytest.mark.parametrize(
    "path, fragments",
    [
        ("flows[2].cc", ["flows[2]: no such element: flows has 2 (positions 0 to 1)"]),
        ("flows[c].cc", ["flows[c]: no element of flows is named 'c'; names: a, b"]),
        ("flows[1].cc.beta", ["flows[1].cc: \"cubic\" is not a table"]),
        ("topology[0].rtt", ["topology: a table is not an array"]),
        ("topology.impairments[0].link", ["topology.impairments: missing in the scenario"]),
    ],
)
def test_set_path_names_the_place_that_does_not_exist(path, fragments):
    doc = json.loads(json.dumps(BASE))
    with pytest.raises(ScenarioError) as err:
        set_path(doc, parse_path(path), 1)
    for fragment in fragments:
        assert fragment in str(err.value)


# ---- the definition ----------------------------------------------------------------------


def test_grid_is_the_product_last_varying_fastest_and_zip_goes_together():
    spec = Sweep.build(
        BASE,
        grid={"topology": {"rtt": ["20ms", "40ms"]}, "flows[a].cc": ["reno", "cubic", "bbr"]},
        zip={"topology.bottleneck_rate": ["10Mbps", "20Mbps"], "topology.queue.limit_packets": [20, 40]},
    )
    assert spec.shape == [2, 3, 2] and len(spec) == 12
    points = spec.points()
    assert [p.params["flows[a].cc"] for p in points[:6]] == ["reno", "reno", "cubic", "cubic", "bbr", "bbr"]
    assert all(p.params["topology.rtt"] == "20ms" for p in points[:6])
    pairs = {(p.params["topology.bottleneck_rate"], p.params["topology.queue.limit_packets"]) for p in points}
    assert pairs == {("10Mbps", 20), ("20Mbps", 40)}
    # Every point is validated and normalized: the values reached the core's document.
    last = points[-1].core
    assert last["links"][1]["rate_bps"] == 20_000_000 and last["links"][1]["queue"]["limit_packets"] == 40
    assert last["flows"][0]["cc"]["algorithm"] == "bbr"
    assert len({p.run_id for p in points}) == 12


def test_replications_derive_seeds_deterministically():
    spec = Sweep.build(BASE, grid={"topology.rtt": ["20ms", "40ms"]}, replications=3)
    points = spec.points()
    seeds = [p.seed for p in points]
    # Replication 0 keeps the scenario's seed (1 by default); the others are derived,
    # distinct, the same for every point (common random numbers) and fit 63 bits.
    assert seeds[:3] == seeds[3:] == [1, replication_seed(1, 1), replication_seed(1, 2)]
    assert len(set(seeds[:3])) == 3 and all(0 <= s < 2**63 for s in seeds)
    assert [p.core["seed"] for p in points] == seeds
    assert Sweep.build(BASE, replications=3).points()[1].seed == seeds[1]  # no randomness in time
    with_seed = Sweep.build(dict(BASE, seed=7), replications=2).points()
    assert with_seed[0].seed == 7 and with_seed[1].seed == replication_seed(7, 1) != seeds[1]
    # Seeds given explicitly are the seeds used.
    explicit = Sweep.build(BASE, grid={"seed": [5, 6]}).points()
    assert [p.seed for p in explicit] == [5, 6] == [p.core["seed"] for p in explicit]


def test_run_ids_stay_when_values_are_added():
    small = Sweep.build(BASE, grid={"topology.rtt": ["20ms", "40ms"]}).points()
    larger = Sweep.build(BASE, grid={"topology.rtt": ["10ms", "20ms", "40ms"]}).points()
    assert {p.run_id for p in small} < {p.run_id for p in larger}


@pytest.mark.parametrize(
    "kwargs, fragments",
    [
        ({"grid": {"topology.rtt": "20ms"}}, ['grid.topology.rtt: "20ms" is not allowed: expected a list']),
        ({"grid": {"topology.rtt": []}}, ["grid.topology.rtt: [] is not allowed"]),
        ({"grid": {"topology..rtt": [1]}}, ["grid.topology..rtt", "is not allowed as a path"]),
        ({"zip": {"topology.rtt": ["1ms", "2ms"], "topology.bottleneck_rate": ["1Mbps"]}},
         ["zip: lists of different lengths", "topology.rtt has 2, topology.bottleneck_rate has 1"]),
        ({"grid": {"flows.*.cc": ["reno"]}, "zip": {"flows[*].cc": ["bbr"]}},
         ["zip.flows[*].cc: flows[*].cc is varied twice (also at grid.flows.*.cc)"]),
        ({"grid": {"topology.rtt": ["20ms", "40ms", "20ms"]}}, ['"20ms" is given twice (positions 0 and 2)']),
        ({"replications": 0}, ["replications: 0 is not allowed: must be at least 1"]),
        ({"grid": {"seed": [1, 2]}, "replications": 2},
         ["grid.seed: varying seed is not allowed with replications = 2"]),
    ],
)
def test_bad_sweep_definitions(kwargs, fragments):
    with pytest.raises(SweepError) as err:
        Sweep.build(BASE, **kwargs)
    for fragment in fragments:
        assert fragment in str(err.value)


def test_sweep_file_base_is_relative_to_the_file(tmp_path):
    sub = tmp_path / "sweeps"
    sub.mkdir()
    path = write_sweep(sub, 'base = "../base.toml"\n[grid]\n"topology.rtt" = ["20ms", "30ms"]\n')
    (sub / "base.toml").rename(tmp_path / "base.toml")
    spec = load_sweep(path)
    assert spec.name == "sweep" and len(spec) == 2
    assert spec.points()[0].core["name"] == "tiny"


# ---- command-line errors and dry runs ----------------------------------------------------


@pytest.mark.parametrize(
    "body, fragments",
    [
        ('base = "base.toml"\nreplication = 2\n', ["replication: unknown key", 'did you mean "replications"?']),
        ('[grid]\n"topology.rtt" = ["1ms"]\n', ["base: missing; required"]),
        ('base = "nope.toml"\n', ["base:", "nope.toml: no such file"]),
        ('base = "base.toml"\n[grid]\n"flows[0].cc" = ["turbo", "warp"]\n',
         ["every point is invalid", 'flows[0].cc: "turbo" is not allowed']),
        ('base = "base.toml"\n[grid]\n"flows[3].cc" = ["reno"]\n',
         ["every point is invalid", "flows[3]: no such element: flows has 1"]),
        ('base = "base.toml"\n[grid\n', ["invalid TOML"]),
    ],
)
def test_sweep_file_mistakes_are_one_line_and_status_2(tmp_path, body, fragments):
    path = write_sweep(tmp_path, body)
    for extra in (["--dry-run"], ["-o", tmp_path / "out"]):
        assert_one_line_error(cli("sweep", path, *extra), str(path), *fragments)
    assert not (tmp_path / "out").exists()  # nothing ran


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--jobs", "0"], "argument --jobs"),
        (["--jobs", "2", "--dask", "tcp://127.0.0.1:1"], "--jobs 2 is not allowed with --dask tcp://127.0.0.1:1"),
        (["--executor", "threads", "--dask", "local"], "not allowed with argument"),
        (["--executor", "fibers"], "invalid choice"),
    ],
)
def test_bad_sweep_arguments(tmp_path, args, fragment):
    path = write_sweep(tmp_path, 'base = "base.toml"\n')
    assert_one_line_error(cli("sweep", path, "-o", tmp_path / "out", *args), fragment)


def test_dry_run_counts_and_shows_the_first_points(tmp_path):
    path = write_sweep(
        tmp_path,
        'base = "base.toml"\nreplications = 2\n[grid]\n"topology.rtt" = ["20ms", "40ms", "60ms"]\n'
        '"flows.*.tcp.rcv_buffer" = ["64KB", "1MB"]\n',
    )
    proc = cli("sweep", path, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "sweep sweep: 12 runs = 3 x 2 points x 2 replications; 0 invalid"
    assert "topology.rtt" in lines[2] and "flows[*].tcp.rcv_buffer" in lines[2]
    assert len(lines) == 3 + 5 and lines[3].split()[1:] == ["0", "1", "20ms", "64KB"]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("path", SWEEP_EXAMPLES, ids=[p.stem for p in SWEEP_EXAMPLES])
def test_example_sweeps_dry_run(path):
    proc = cli("sweep", path, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "; 0 invalid" in proc.stdout.splitlines()[0]


def test_there_are_example_sweeps():
    assert len(SWEEP_EXAMPLES) >= 2


def test_bench_sweep_is_32_valid_points():
    from fatpipe.bench import bench_sweep

    points = bench_sweep(quick=True).points()
    assert len(points) == 32 and all(p.valid for p in points)


# ---- running (needs the core) ------------------------------------------------------------

needs_core = pytest.mark.skipif(
    not __import__("importlib").util.find_spec("fatpipe._core"), reason="the compiled core is not built"
)

TWELVE = """\
base = "base.toml"
[grid]
"topology.bottleneck_rate" = ["10Mbps", "20Mbps"]
"flows[0].cc" = ["reno", "cubic", "bbr"]
"flows.*.tcp.rcv_buffer" = ["16KB", "1MB"]
"""


def read_summary(outdir):
    import pandas as pd

    return pd.read_parquet(outdir / "summary.parquet")


def done_times(outdir):
    return {p.parent.name: p.stat().st_mtime_ns for p in (outdir / "runs").glob("*/done.json")}


@needs_core
def test_twelve_points_then_resume_skips_all_then_reruns_only_the_deleted_one(tmp_path):
    import shutil

    path = write_sweep(tmp_path, TWELVE)
    out = tmp_path / "out"
    proc = cli("sweep", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "12 runs: 12 ok (0 reused from an earlier sweep), 0 failed, 0 invalid; 12 ran" in proc.stdout
    df = read_summary(out)
    assert len(df) == 12
    params = ["topology.bottleneck_rate", "flows[0].cc", "flows[*].tcp.rcv_buffer"]
    assert list(df.columns[:8]) == ["run_id", "replication", "seed"] + params + ["status", "error"]
    assert set(map(tuple, df[params].values.tolist())) == {
        (r, c, w) for r in ("10Mbps", "20Mbps") for c in ("reno", "cubic", "bbr") for w in ("16KB", "1MB")
    }
    assert (df["status"] == "ok").all() and df["error"].isna().all()
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(df["run_id"])

    # Each row is what `fatpipe run` gives for that point, and what its run directory holds.
    row = df[(df["topology.bottleneck_rate"] == "20Mbps") & (df["flows[0].cc"] == "bbr") & (df["flows[*].tcp.rcv_buffer"] == "1MB")].iloc[0]
    doc = json.loads(json.dumps({"name": "tiny", "duration": "0.5s", "topology": {"bottleneck_rate": "20Mbps", "rtt": "20ms"},
                                 "flows": [{"name": "a", "cc": "bbr", "tcp": {"rcv_buffer": "1MB"}}],
                                 "output": {"sample_interval": "50ms"}}))
    direct = fatpipe.run(doc).summary
    assert row["flows.a.goodput_bps"] == direct["flows"][0]["goodput_bps"] > 0
    assert row["links.bottleneck.utilization"] == direct["links"][1]["utilization"]
    assert row["flows.a.algorithm"] == "bbr" and row["events"] == direct["events"]
    stored = json.loads((out / "runs" / row["run_id"] / "summary.json").read_text())
    assert stored["flows"][0]["bytes_delivered"] == direct["flows"][0]["bytes_delivered"]
    # The varied window took effect: a 16 KB window gives at most window / RTT (6.4 Mb/s).
    small = df[df["flows[*].tcp.rcv_buffer"] == "16KB"]
    assert (small["flows.a.goodput_bps"] <= 16_000 * 8 / 0.020).all()
    assert (df["flows.a.goodput_bps"] > 0).all() and df["flows.a.goodput_bps"].max() > 16_000 * 8 / 0.020
    assert not list(out.glob("runs/*/*.png"))  # no plots unless asked for

    before = done_times(out)
    proc = cli("sweep", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "12 ok (12 reused from an earlier sweep)" in proc.stdout and "; 0 ran" in proc.stdout
    assert done_times(out) == before
    assert read_summary(out).equals(df)

    victim = df["run_id"][5]
    shutil.rmtree(out / "runs" / victim)
    proc = cli("sweep", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "(11 reused from an earlier sweep)" in proc.stdout and "; 1 ran" in proc.stdout
    after = done_times(out)
    assert {k for k in after if after[k] != before.get(k)} == {victim}
    assert read_summary(out).equals(df)


@needs_core
def test_runs_of_another_build_of_fatpipe_are_run_again(tmp_path, monkeypatch):
    # A finished run is reused only by the build that made it: results of an older (or
    # newer) simulator are not mixed into this one's summary.
    from fatpipe import sweep_runner
    from fatpipe.sweeps import load_sweep

    spec = load_sweep(write_sweep(tmp_path, TWELVE))
    out = tmp_path / "out"
    first = sweep_runner.run_sweep(spec, out, jobs=2, executor="threads")
    assert (first.ran, first.reused) == (12, 0)
    records = [json.loads(p.read_text()) for p in (out / "runs").glob("*/done.json")]
    assert {r["build"] for r in records} == {sweep_runner.build_fingerprint()}
    again = sweep_runner.run_sweep(spec, out, jobs=2, executor="threads")
    assert (again.ran, again.reused) == (0, 12)
    monkeypatch.setattr(sweep_runner, "build_fingerprint", lambda: "another build")
    rebuilt = sweep_runner.run_sweep(spec, out, jobs=2, executor="threads")
    assert (rebuilt.ran, rebuilt.reused) == (12, 0)
    assert {json.loads(p.read_text())["build"] for p in (out / "runs").glob("*/done.json")} == {"another build"}


def test_the_build_fingerprint_follows_the_compiled_core(tmp_path, monkeypatch):
    import types

    from fatpipe import sweep_runner

    compute = sweep_runner.build_fingerprint.__wrapped__  # uncached
    core = tmp_path / "_core.abi3.so"
    monkeypatch.setattr(sweep_runner.importlib.util, "find_spec", lambda name: types.SimpleNamespace(origin=str(core)))
    core.write_bytes(b"one build")
    one = compute()
    core.write_bytes(b"another build")
    assert compute() != one and len(one) == 64
    core.write_bytes(b"one build")
    assert compute() == one


@needs_core
def test_a_changed_base_reruns_stale_points_and_plots_when_asked(tmp_path):
    out = tmp_path / "out"
    kwargs = dict(grid={"topology.rtt": ["20ms", "40ms"]}, outdir=out, executor="threads")
    first = fatpipe.sweep(BASE, **kwargs)
    before = done_times(out)
    assert fatpipe.sweep(BASE, **kwargs).equals(first) and done_times(out) == before
    second = fatpipe.sweep(dict(BASE, duration="0.4s"), **kwargs)
    assert list(second["run_id"]) == list(first["run_id"])  # same points, same directories
    assert (second["duration_s"] == 0.4).all()
    changed = done_times(out)
    assert all(changed[k] != before[k] for k in before)
    # The finished runs have no plots: asking for them runs the points again.
    fatpipe.sweep(dict(BASE, duration="0.4s"), plots=True, **kwargs)
    assert len(list(out.glob("runs/*/cwnd.png"))) == 2


@needs_core
def test_replications_differ_where_the_scenario_is_random(tmp_path):
    base = json.loads(json.dumps(BASE))
    base["topology"]["impairments"] = [{"link": "bottleneck", "kind": "bernoulli", "probability": 0.01}]
    df = fatpipe.sweep(base, replications=3, outdir=tmp_path / "out", executor="threads", jobs=2)
    assert list(df["replication"]) == [0, 1, 2] and (df["status"] == "ok").all()
    # About four losses a run: two replications may lose as many packets, not the same ones.
    outcome = df[["links.bottleneck.impairment_drops_packets", "flows.a.bytes_delivered", "flows.b.bytes_delivered"]]
    assert len(outcome.drop_duplicates()) == 3, outcome
    # Replication 0 is the scenario as it stands, seed and all.
    plain = fatpipe.run(base).summary
    assert df["flows.a.bytes_delivered"][0] == plain["flows"][0]["bytes_delivered"]
    assert df["links.bottleneck.impairment_drops_packets"][0] == plain["links"][1]["impairment_drops_packets"]


@needs_core
def test_an_invalid_point_is_reported_and_the_others_run(tmp_path):
    path = write_sweep(
        tmp_path,
        'base = "base.toml"\n[grid]\n"topology.rtt" = ["20ms", "30ms"]\n'
        '"topology.queue.limit_packets" = [50, 0, 80]\n',
    )
    out = tmp_path / "out"
    proc = cli("sweep", path, "-o", out)
    assert proc.returncode == 1, proc.stderr
    df = read_summary(out)
    assert len(df) == 6
    bad = df[df["topology.queue.limit_packets"] == 0]
    assert list(bad["status"]) == ["invalid", "invalid"]
    assert all(e.startswith("topology.queue.limit_packets: 0 is not allowed") for e in bad["error"])
    assert (df[df["topology.queue.limit_packets"] != 0]["status"] == "ok").all()
    assert df[df["status"] == "ok"]["flows.a.goodput_bps"].gt(0).all()
    failures = json.loads((out / "failures.json").read_text())
    assert [(f["status"], f["params"]) for f in failures] == [
        ("invalid", {"topology.rtt": "20ms", "topology.queue.limit_packets": 0}),
        ("invalid", {"topology.rtt": "30ms", "topology.queue.limit_packets": 0}),
    ]
    assert "0 is not allowed" in failures[0]["error"]
    # The end of the report lists them by parameters and error.
    assert "invalid: " in proc.stdout and "topology.rtt=20ms, topology.queue.limit_packets=0" in proc.stdout
    assert len(list((out / "runs").iterdir())) == 4


class FakePanic(BaseException):
    """What a Rust panic looks like from Python (pyo3_runtime.PanicException is a
    BaseException, so `except Exception` would let it through)."""


@needs_core
def test_a_failing_run_is_recorded_and_retried_next_time(tmp_path, monkeypatch):
    from fatpipe import sweep_runner

    real = sweep_runner._simulate

    def panics_at_40ms(task):
        if task.core["links"][1]["delay_ps"] == 20 * 10**9:  # rtt 40 ms: 20 ms one way
            raise FakePanic("called `Option::unwrap()` on a `None` value")
        return real(task)

    monkeypatch.setattr(sweep_runner, "_simulate", panics_at_40ms)
    out = tmp_path / "out"
    kwargs = dict(grid={"topology.rtt": ["20ms", "40ms", "60ms"]}, outdir=out, executor="threads", jobs=2)
    df = fatpipe.sweep(BASE, **kwargs)
    assert list(df["status"]) == ["ok", "failed", "ok"]
    assert df["error"][1] == "FakePanic: called `Option::unwrap()` on a `None` value"
    failed_dir = out / "runs" / df["run_id"][1]
    assert json.loads((failed_dir / "failed.json").read_text())["error"] == df["error"][1]
    assert not (failed_dir / "done.json").exists()
    assert [f["params"] for f in json.loads((out / "failures.json").read_text())] == [{"topology.rtt": "40ms"}]

    monkeypatch.setattr(sweep_runner, "_simulate", real)
    before = done_times(out)
    df = fatpipe.sweep(BASE, **kwargs)
    assert (df["status"] == "ok").all()
    after = done_times(out)
    assert {k for k in after if after[k] != before.get(k)} == {df["run_id"][1]}
    assert json.loads((out / "failures.json").read_text()) == []


@needs_core
def test_a_dying_worker_process_fails_only_its_own_run(tmp_path):
    import sweep_helpers
    from fatpipe.sweep_runner import WORKER_DIED, _run_local

    spec = Sweep.build(BASE, grid={"name": ["ok1", "crash", "ok2", "ok3"]})
    from fatpipe.sweep_runner import RunTask

    tasks = [
        RunTask(p.run_id, str(tmp_path / p.run_id), p.core, p.scenario_sha256, False) for p in spec.points()
    ]
    outcomes = {}
    _run_local(tasks, 2, "processes", lambda t, o: outcomes.__setitem__(t.core["name"], o),
               task_fn=sweep_helpers.die_on_crash_point)
    assert outcomes["crash"] == {"status": "failed", "error": WORKER_DIED}
    assert all(outcomes[n]["status"] == "ok" for n in ("ok1", "ok2", "ok3"))
    assert len(outcomes) == 4


@needs_core
def test_threads_processes_and_dask_give_identical_rows(tmp_path):
    # Dask is a test dependency ('.[test]'): if it is missing this fails, it does not skip.
    import distributed  # noqa: F401
    import pandas as pd

    path = write_sweep(
        tmp_path,
        'base = "base.toml"\nreplications = 2\n[grid]\n"flows[0].cc" = ["reno", "cubic", "bbr"]\n',
        base=BASE_TOML + '[[topology.impairments]]\nlink = "bottleneck"\nkind = "bernoulli"\nprobability = 0.005\n',
    )
    frames = {}
    for label, args in {
        "processes": [],
        "threads": ["--executor", "threads"],
        "dask": ["--dask", "local", "--jobs", "2"],
    }.items():
        out = tmp_path / label
        proc = cli("sweep", path, "-o", out, *args)
        assert proc.returncode == 0, (label, proc.stderr)
        assert "6 ok (0 reused" in proc.stdout, (label, proc.stdout)
        frames[label] = read_summary(out)
    assert frames["processes"]["links.bottleneck.impairment_drops_packets"].nunique() > 1
    pd.testing.assert_frame_equal(frames["processes"], frames["threads"])
    pd.testing.assert_frame_equal(frames["processes"], frames["dask"])
    # The CSV twin holds the same rows.
    csv = pd.read_csv(tmp_path / "dask" / "summary.csv")
    assert list(csv["run_id"]) == list(frames["dask"]["run_id"])


# ---- issue 22: what a sweep says before it runs -------------------------------------------


def test_invalid_points_are_counted_on_stderr_with_the_first_error(tmp_path, capfd):
    # The README's sweep once had two of four points invalid, and fatpipe.sweep said nothing:
    # the errors sat in df.error. Now one line on stderr says how many and the first error.
    df = fatpipe.sweep(str(REPO / "examples" / "reno-100M-40ms.toml"),
                       grid={"duration": ["200ms"], "flows[0].cc": ["tahoe", "reno", "cubic"]},
                       outdir=tmp_path / "s", jobs=1, executor="threads")
    assert sorted(df["status"]) == ["invalid", "ok", "ok"]
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if "invalid" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("fatpipe: sweep reno-100M-40ms: 1 of 3 points are invalid and will not run"), lines
    assert 'the first (duration="200ms", flows[0].cc="tahoe", replication 0): flows[0].cc: "tahoe" is not allowed' in lines[0]


def test_the_cli_sweep_counts_invalid_points_on_stderr(tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'base = {str(REPO / "examples" / "reno-100M-40ms.toml")!r}\n'
                     '[grid]\nduration = ["200ms"]\n"flows[0].cc" = ["tahoe", "reno"]\n')
    done = cli("sweep", str(sweep), "-o", str(tmp_path / "out"), "--jobs", "1", "--quiet")
    assert done.returncode == 1, done.stderr
    assert "1 of 2 points are invalid and will not run (failures.json lists them); the first" in done.stderr


@pytest.mark.parametrize("guarded", [False, True])
def test_a_sweep_script_without_a_main_guard_is_told_and_still_runs(tmp_path, guarded):
    # Processes re-import the main script (forkserver, spawn): a sweep at its top level ran
    # again in every worker, which died, and the sweep ended with "worker processes kept
    # dying" on every point. Now it runs on threads and one line says why; under the
    # guard it runs on processes, and says nothing.
    call = (f"fatpipe.sweep({str(REPO / 'examples' / 'reno-100M-40ms.toml')!r}, grid={{'duration': ['200ms', '300ms']}},"
            f" outdir={str(tmp_path / 'sweep')!r}, jobs=2)")
    body = f"df = {call}\nprint(sorted(df['status']))\n"
    if guarded:
        body = "if __name__ == '__main__':\n" + "".join("    " + line + "\n" for line in body.splitlines())
    script = tmp_path / "my_sweep.py"
    script.write_text("import fatpipe\n" + body)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['ok', 'ok']", (done.stdout, done.stderr)
    notes = [line for line in done.stderr.splitlines() if line.startswith("fatpipe:")]
    if guarded:
        assert notes == [], done.stderr
    else:
        assert notes == [f"fatpipe: sweep reno-100M-40ms: running on threads, not processes: {script}, line 2, runs the "
                         'sweep outside `if __name__ == "__main__":`, and every worker process re-runs the script\'s '
                         "top level; put the sweep under that guard to use processes"], done.stderr
