"""A run's tables written without pandas (issue 16: start-up): the Parquet files are the
ones the pandas path wrote, byte for byte, they read back the same, and `fatpipe run
--no-plots` imports neither pandas nor matplotlib."""

import json
import subprocess
import sys

import pytest

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("fatpipe._core")

import fatpipe  # noqa: E402
from fatpipe.columns import Columns, code_dtype, write_frame_parquet  # noqa: E402
from fatpipe.result import Result  # noqa: E402

PATH = {"bottleneck_rate": "100Mbps", "rtt": "20ms"}

#: Runs that fill every table: flows with losses (NaN-free and NaN series: ssthresh is unset
#: before the first loss), a UDP flow (NaN cwnd), parallel streams (groups), HTTP (requests),
#: and an HTTP run too short for any request to finish (an empty request table).
RUNS = {
    "tcp-udp": {"duration": "1s", "topology": PATH, "output": {"sample_interval": "50ms"},
                "flows": [{"name": "bulk", "cc": "cubic"},
                          {"name": "cbr", "transport": "udp", "udp": {"mode": "cbr", "rate": "20Mbps"}, "start": "0.2s"}]},
    "streams": {"duration": "1s", "topology": PATH,
                "flows": [{"name": "par", "streams": 3}, {"name": "one", "stop": "0.5s", "bytes": "1MB"}]},
    "http": {"duration": "2s", "topology": PATH,
             "flows": [{"name": "web", "http": {"objects": ["2KB", "100KB"], "requests": 4}}]},
    "http-unfinished": {"duration": "30ms", "topology": {"bottleneck_rate": "10Mbps", "rtt": "100ms"},
                        "flows": [{"name": "web", "http": {"objects": ["100KB"]}}]},
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def written(request, tmp_path_factory):
    result = fatpipe.run(RUNS[request.param])
    out = tmp_path_factory.mktemp(request.param)
    result.write_files(out, plots=False)
    return request.param, result, out


def _pandas_path(frame, path):
    """What Result.write_files did before (pa.Table.from_pandas of the DataFrame, without
    the pandas metadata)."""
    write_frame_parquet(path, frame)


def test_parquet_files_are_the_pandas_path_byte_for_byte(written, tmp_path):
    name, result, out = written
    tables = ["flow_series", "queue_series"] + (["requests"] if "http" in name else [])
    tables += ["groups"] if name == "streams" else []
    for table in tables:
        ours = (out / f"{table}.parquet").read_bytes()
        if name == "http-unfinished" and table == "requests":
            # The pandas path wrote a table without rows as all-float columns (pandas' guess
            # for empty lists); ours keeps the column types of a table with rows.
            schema = pq.read_table(out / "requests.parquet").schema
            assert pa.types.is_dictionary(schema.field("flow").type)
            assert (str(schema.field("size_bytes").type), str(schema.field("start_s").type)) == ("int64", "double")
            assert len(pd.read_parquet(out / "requests.parquet")) == 0
            continue
        frame = getattr(result, table)
        _pandas_path(frame, tmp_path / f"{table}.parquet")
        assert ours == (tmp_path / f"{table}.parquet").read_bytes(), f"{name}: {table}.parquet differs"


def test_files_read_back_as_the_result_tables(written, tmp_path):
    name, result, out = written
    again = Result.read(out)
    # Read and written again, every file is the same, byte for byte.
    again.write_files(tmp_path / "again", plots=False)
    for path in out.iterdir():
        assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), path.name
    for table in ("flow_series", "queue_series", "requests"):
        frame = getattr(result, table)
        if not len(frame):
            continue
        from_file = pd.read_parquet(out / f"{table}.parquet")
        pd.testing.assert_frame_equal(from_file, frame)
        pd.testing.assert_frame_equal(getattr(again, table), frame)
    assert list(again.flows["name"]) == list(result.flows["name"])
    if name == "streams":
        pd.testing.assert_frame_equal(pd.read_parquet(out / "groups.parquet"), result.groups)
    if name == "tcp-udp":
        # A UDP flow has no window: NaN in memory, null in the file.
        udp = result.flow_series[result.flow_series["flow"] == "cbr"]
        assert udp["cwnd_segments"].isna().all() and len(udp)
        assert pq.read_table(out / "flow_series.parquet").column("cwnd_segments").null_count == len(udp)


def test_summary_measures_from_the_columns_match_pandas(written):
    """The per-flow measures taken from the series and requests without pandas (mean
    response time, regain) are what pandas' group-by gave."""
    name, result, _ = written
    if "http" in name and len(result.requests):
        means = result.requests.groupby("flow", observed=True)["response_time_s"].mean()
        flow = result.summary["flows"][0]
        assert flow["mean_response_time_s"] == means[flow["name"]]


def test_codes_as_pandas_types_them():
    # pandas' categorical codes: int8 below 127 categories, then int16, int32.
    assert [code_dtype(n).__name__ for n in (1, 126, 127, 32766, 32767)] == ["int8", "int8", "int16", "int16", "int32"]
    for n in (3, 127, 40000):
        names = [f"f{i}" for i in range(n)]
        codes = [0, n - 1, 1]
        table = Columns({"flow": codes, "x": [1.5, float("nan"), 2.0]}, {"flow": names})
        expected = pa.Table.from_pandas(table.frame(), preserve_index=False).replace_schema_metadata(None)
        assert table.arrow().equals(expected) and table.arrow().schema == expected.schema


def test_records_typed_as_pandas_types_them():
    records = [{"name": "a", "n": 1, "ok": True, "x": 1, "gap": None, "none": None},
               {"name": "b", "n": 2, "ok": False, "x": 2.5, "gap": 3, "none": None}]
    columns = ["name", "n", "ok", "x", "gap", "none"]
    table = Columns.from_records(records, columns)
    expected = pa.Table.from_pandas(pd.DataFrame(records, columns=columns), preserve_index=False)
    assert table.arrow().equals(expected.replace_schema_metadata(None))
    assert table.arrow().schema == expected.schema.remove_metadata()


def test_fatpipe_run_imports_no_pandas_and_without_plots_no_matplotlib(tmp_path):
    scenario = tmp_path / "short.toml"
    scenario.write_text('duration = "0.1s"\n[topology]\nbottleneck_rate = "100Mbps"\nrtt = "40ms"\n'
                        '[[flows]]\nname = "bulk"\n', encoding="utf-8")
    def imported(*flags):
        code = (
            "import sys, json\n"
            "from fatpipe.cli import main\n"
            f"status = main(['run', {str(scenario)!r}, '-o', {str(tmp_path / 'out')!r}, '--overwrite', '--quiet', "
            f"*{list(flags)!r}])\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'matplotlib'})\n"
            "print(json.dumps({'status': status, 'heavy': heavy}))\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    assert imported("--no-plots") == {"status": 0, "heavy": []}
    assert (tmp_path / "out" / "flow_series.parquet").is_file()
    # The run's own plots are drawn from the numpy columns too: matplotlib, no pandas.
    assert imported() == {"status": 0, "heavy": ["matplotlib"]}
    assert (tmp_path / "out" / "cwnd.png").stat().st_size > 0


def test_the_fatpipe_command_ends_at_once_after_a_run_with_its_output_whole(tmp_path):
    """`fatpipe run` ends without the interpreter's teardown (cli.entry): what it printed
    and wrote is complete, and the exit status is kept, errors included."""
    scenario = tmp_path / "short.toml"
    scenario.write_text('duration = "0.1s"\n[topology]\nbottleneck_rate = "100Mbps"\nrtt = "40ms"\n'
                        '[[flows]]\nname = "bulk"\n', encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "fatpipe", "run", str(scenario), "-o", str(out), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["outdir"] == str(out) and summary["flows"][0]["name"] == "bulk"
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["duration_s"] == 0.1
    assert len(pd.read_parquet(out / "flow_series.parquet")) == 11
    assert (out / "cwnd.png").stat().st_size > 0
    proc = subprocess.run([sys.executable, "-m", "fatpipe", "run", str(scenario), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not empty" in proc.stderr


def test_rates_of_an_irregular_series_as_pandas_group_by_gave_them():
    """A series whose rows are not one per group per sample in order (an emulation's
    sampler) takes each row's predecessor in its group: the same rates, to the bit, as the
    pandas group-by that computed them before."""
    import numpy as np

    from fatpipe.rundata import _rate_per_interval

    rng = np.random.default_rng(7)
    codes = rng.integers(0, 3, size=200).astype(np.int32)
    codes[:3] = [2, 0, 2]  # group 1 starts later; group 2 twice at the start
    time_ps = np.cumsum(rng.integers(1, 10**10, size=200)).astype(np.int64)
    values = np.cumsum(rng.integers(0, 10**6, size=200)).astype(np.int64)
    frame = pd.DataFrame({"g": codes, "t": time_ps, "v": values})
    g = frame.groupby("g", sort=False)
    dt_ps = g["t"].diff().to_numpy(dtype=np.float64)
    dv = g["v"].diff().to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = dv * 8 * 10**12 / dt_ps
    expected = np.where(np.isfinite(expected), expected, 0.0)
    got = _rate_per_interval(codes, 3, values, time_ps)
    assert np.array_equal(got, expected)
    assert got[0] == 0.0 and got[1] == 0.0 and got[2] > 0
