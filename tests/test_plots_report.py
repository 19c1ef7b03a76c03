"""Plots (each function: a non-empty image with its title and axis labels), `fatpipe plot`,
and `fatpipe report` rendered by a headless browser (issue 5, acceptance 4 and 5)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import fatpipe
from fatpipe.plots import PLOTS, PlotUnavailable, plot_sweep
from fatpipe.result import Result

SCENARIO = {
    "name": "plots",
    "duration": "3s",
    "topology": {"shape": "dumbbell", "bottleneck_rate": "50Mbps", "rtt": "40ms", "queue": {"limit_packets": 60}},
    "flows": [{"name": "a", "cc": "sack"}, {"name": "b", "cc": "cubic", "start": "0.5s"}],
    "output": {"sample_interval": "20ms", "capture": ["sender"], "plots": False},
}

#: name -> (title, x label, y label)
EXPECTED = {
    "cwnd": ("plots: congestion window", "time (s)", "cwnd (segments)"),
    "outstanding": ("plots: bytes outstanding", "time (s)", "outstanding (MB)"),
    # The bin fits the run (issue 22): the 40 ms RTT rounded up to a whole number of 20 ms samples.
    "throughput": ("plots: throughput (delivered, per 100 ms)", "time (s)", "throughput (Mb/s)"),
    "throughput_stacked": ("plots: throughput, stacked (per 100 ms)", "time (s)", "throughput (Mb/s)"),
    "queue": ("plots: queue length", "time (s)", "queue (packets)"),
    "rtt": ("plots: smoothed RTT", "time (s)", "RTT (ms)"),
    "time_sequence": ("plots: time-sequence graph of a", "time (s)", "sequence number (MB from the first byte)"),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    # The captures are in out already: writing the run there replaces it with them and the rest.
    fatpipe.run(SCENARIO, capture_dir=out).write(out, plots=False, overwrite=True)
    return out


def svg_texts(path: Path):
    return set(re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text()))


def test_every_plot_is_listed():
    assert set(PLOTS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_plot_writes_png_and_svg_with_title_and_labels(name, run_dir, tmp_path):
    result = Result.read(run_dir)
    title, xlabel, ylabel = EXPECTED[name]
    png = tmp_path / f"{name}.png"
    assert PLOTS[name](result, png) == title
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    svg = tmp_path / f"{name}.svg"
    PLOTS[name](result, svg)
    texts = svg_texts(svg)
    assert {title, xlabel, ylabel} <= texts, texts


def test_time_sequence_needs_a_sender_capture(tmp_path):
    out = tmp_path / "nocap"
    fatpipe.run(dict(SCENARIO, output={"plots": False})).write(out, plots=False)
    with pytest.raises(PlotUnavailable, match=r'needs a packet capture at the sender host .sender.: add output.capture = \["sender"\]'):
        PLOTS["time_sequence"](Result.read(out), tmp_path / "t.png")


def test_time_sequence_marks_every_retransmission(run_dir, tmp_path):
    # The SVG has one red "R" marker per retransmitted segment of the flow (matplotlib
    # writes markers as <use> elements of one path).
    result = Result.read(run_dir)
    flow = result.summary["flows"][0]
    assert flow["segments_retransmitted"] > 0
    svg = tmp_path / "tsg.svg"
    PLOTS["time_sequence"](result, svg, flow="a")
    assert f"retransmissions ({flow['segments_retransmitted']})" in svg_texts(svg)


def test_sweep_plot(tmp_path):
    table = pd.DataFrame(
        {"window": [1, 2, 4, 1, 2, 4, 1, 2, 4], "cc": ["reno"] * 3 + ["cubic"] * 3 + ["reno"] * 3,
         "goodput_mbps": [10, 20, 30, 12, 24, 36, 11, 19, 31]}
    )
    svg = tmp_path / "s.svg"
    title = plot_sweep(table, svg, x="window", y="goodput_mbps", by="cc", xlabel="window (MB)", ylabel="goodput (Mb/s)")
    assert title == "goodput_mbps against window"
    assert {title, "window (MB)", "goodput (Mb/s)", "cc = reno", "cc = cubic"} <= svg_texts(svg)
    with pytest.raises(PlotUnavailable, match="no column 'x'"):
        plot_sweep(table, svg, x="x", y="goodput_mbps")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "fatpipe", *map(str, args)], capture_output=True, text=True)


def test_cli_plot(run_dir, tmp_path):
    proc = cli("plot", run_dir, "--what", "cwnd,queue", "--format", "svg", "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cwnd.svg").stat().st_size > 0 and (tmp_path / "queue.svg").stat().st_size > 0
    proc = cli("plot", run_dir, "--what", "time_sequence", "--flow", "b", "-o", tmp_path, "--start", "0.5", "--stop", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(tmp_path / "time_sequence_b.png")]
    bad = cli("plot", run_dir, "--what", "cwnd,bogus")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "'bogus' is not allowed: expected comma-separated plot names from cwnd" in bad.stderr
    nodir = cli("plot", tmp_path / "missing")
    assert nodir.returncode == 2 and "not a fatpipe run directory (missing summary.json" in nodir.stderr
    badflow = cli("plot", run_dir, "--what", "time_sequence", "--flow", "zz")
    assert badflow.returncode == 2 and "--flow: 'zz' is not allowed: flows of this run: a, b" in badflow.stderr


def test_report_renders_in_headless_chromium(run_dir, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (scripts/test.sh installs it)")
    proc = cli("report", run_dir, "-o", tmp_path / "report.html")
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "report.html"
    text = page.read_text()
    # Self-contained: every image is embedded, nothing is fetched.
    assert "src=\"data:image/png;base64," in text and "src=\"http" not in text
    expected_images = len(PLOTS) - 1 + 2  # every run plot, time-sequence for both flows
    assert text.count("<img ") == expected_images
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([chromium, *flags, "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert f'data-images-loaded="{expected_images}/{expected_images}"' in dom.stdout
    console_errors = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console_errors == []
    shot = tmp_path / "report.png"
    subprocess.run([chromium, *flags, "--hide-scrollbars", "--window-size=1200,3000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=180)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    for name in ("Flows", "Links", "Sharing", "Plots", "Scenario", "Packet captures"):
        assert f"<h2>{name}</h2>" in text


def test_report_fits_a_1280_pixel_window_and_writes_rates_as_people_do(tmp_path):
    # The flows table used to overflow its column at 1280 px, and a 1 Gb/s link printed as
    # "1e+03 Mb/s".
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (scripts/test.sh installs it)")
    out = tmp_path / "run"
    doc = dict(SCENARIO, topology=dict(SCENARIO["topology"], bottleneck_rate="1Gbps", access_rate="10Gbps"),
               output={"plots": False})
    fatpipe.run(doc).write(out)
    proc = cli("report", out)
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.html").read_text()
    cells = re.findall(r"<td>([^<]*)</td>", text)
    assert cells and not [c for c in cells if re.search(r"\de[+-]\d", c)]
    assert "<td>1Gbps</td>" in text and "<td>10Gbps</td>" in text
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                          "--virtual-time-budget=10000", "--dump-dom", (out / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=180)
    width = re.search(r'data-page-width="(\d+)"', dom.stdout)
    assert width is not None and int(width.group(1)) <= 1280, width and width.group(1)


def test_report_lists_http_requests_and_stream_groups(tmp_path):
    from fatpipe.report import write_report

    out = tmp_path / "run"
    fatpipe.run({
        "name": "web",
        "duration": "2s",
        "topology": {"shape": "dumbbell", "bottleneck_rate": "100Mbps", "rtt": "67ms"},
        "flows": [
            {"name": "web", "cc": "sack", "http": {"version": "1.0", "objects": ["2KB", "100KB"]}},
            {"name": "bulk", "cc": "sack", "streams": 2, "bytes": "1MB"},
        ],
        "output": {"plots": False},
    }).write(out, plots=False)
    text = write_report(out).read_text()
    assert "<h2>HTTP requests</h2>" in text and "<h2>Parallel streams</h2>" in text
    # Both object sizes appear with their request counts (one request each).
    assert "<td>web</td><td>2,000</td><td>1</td>" in text and "<td>web</td><td>100,000</td><td>1</td>" in text


def test_sweep_report_renders_with_a_plot_per_measure(tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (scripts/test.sh installs it)")
    base = {"duration": "1s", "topology": {"shape": "dumbbell", "bottleneck_rate": "20Mbps", "rtt": "40ms"},
            "flows": [{"name": "a"}], "output": {"plots": False}}
    out = tmp_path / "sweep"
    fatpipe.sweep(base, grid={"topology.rtt": ["20ms", "80ms"], "flows[0].cc": ["reno", "cubic"]}, outdir=out, jobs=1)
    proc = cli("report", out)
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.html").read_text()
    # Goodput of flow a, the bottleneck's utilization, total goodput: against the RTT (in s),
    # one line per algorithm; axes and titles in words (issue 22), not raw column names.
    assert text.count("<img ") == 3
    assert 'alt="goodput of a against RTT"' in text and "4 runs: 4 ok" in text
    assert 'alt="utilization of bottleneck against RTT"' in text
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", (out / "report.html").as_uri()], capture_output=True, text=True, timeout=180)
    assert 'data-images-loaded="3/3"' in dom.stdout


def test_result_shows_a_rich_summary_in_jupyter(run_dir):
    # Jupyter calls _repr_html_; it used to fall back to the one-line repr.
    html_text = Result.read(run_dir)._repr_html_()
    assert html_text.startswith('<div class="fatpipe-result">') and html_text.endswith("</div>")
    assert html_text.count('src="data:image/png;base64,') == 2  # cwnd and throughput
    assert "congestion window" in html_text and "throughput" in html_text
    assert "<td>a</td>" in html_text and "<td>b</td>" in html_text and "<td>bottleneck</td>" in html_text


def test_plots_of_many_flows_draw_their_groups(tmp_path):
    # One line per flow, found by filtering the whole table per flow, never finished for
    # 10,000 flows; past 20 flows the plots draw the stream groups instead.
    from fatpipe.plots import MAX_LINES, _per_flow

    doc = {"duration": "1s", "topology": {"bottleneck_rate": "100Mbps", "rtt": "20ms"},
           "flows": [{"name": n, "streams": 10} for n in ("x", "y", "z")], "output": {"plots": False}}
    result = fatpipe.run(doc)
    assert len(result.scenario["flows"]) == 30 > MAX_LINES
    lines, note = _per_flow(result, "throughput_bps", tcp_only=False)
    assert [name for name, _, _ in lines] == ["x (10 streams, sum)", "y (10 streams, sum)", "z (10 streams, sum)"]
    assert note == ""
    total = result.flow_series.groupby("flow", observed=True)["throughput_bps"].sum()
    assert lines[0][2].sum() == pytest.approx(sum(total[f"x.{k}"] for k in range(1, 11)))
    assert PLOTS["cwnd"](result, tmp_path / "cwnd.png") == "plots: congestion window".replace("plots", result.scenario["name"])


# ---- issue 22: plots a researcher can read -------------------------------------------------

RED3 = {
    "name": "red3",
    "duration": "6s",
    "topology": {"shape": "dumbbell", "bottleneck_rate": "200Mbps", "rtt": "40ms", "pairs": 3,
                 "queue": {"discipline": "red", "limit_packets": 400}},
    "flows": [{"name": n, "pair": i, "cc": cc} for i, (n, cc) in enumerate([("a", "cubic"), ("b", "reno"), ("c", "newreno")])],
    "output": {"plots": False, "capture": ["sender0"]},
}


@pytest.fixture(scope="module")
def red3_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("red3")
    fatpipe.run(RED3, capture_dir=out).write(out, plots=False, overwrite=True)
    return out


def test_throughput_bins_fit_the_run_and_average_what_was_delivered(red3_dir, tmp_path):
    from fatpipe.plots import _binned, default_bin_s

    result = Result.read(red3_dir)
    # 10 ms samples, 6 s, the longest min RTT 40 ms: 6 s / 200 bins = 30 ms < 40 ms, so the
    # bin is the next 1-2-5 step above the RTT, 50 ms, five samples.
    assert default_bin_s(result) == pytest.approx(0.05)
    # Each bin's rate is the bytes delivered within it: the mean of the per-sample rates.
    a = result.flow_series[result.flow_series["flow"] == "a"]
    starts, mbps = _binned(a["time_s"].to_numpy(), a["delivered_bytes"].to_numpy(), 0.05, 6.0)
    per_sample = a["throughput_bps"].to_numpy()[1:] / 1e6  # rate over each 10 ms ending at a sample
    assert len(starts) == 120 and mbps == pytest.approx(per_sample.reshape(-1, 5).mean(axis=1))
    # What was delivered in a bin is never above the bottleneck's payload rate by more than
    # the refills of holes; over the run the bins add up to the flow's delivered bytes.
    assert mbps.sum() * 0.05 / 8 * 1e6 == pytest.approx(a["delivered_bytes"].iloc[-1], rel=1e-9)
    svg = tmp_path / "t.svg"
    PLOTS["throughput"](result, svg, bin_s=0.5)
    texts = svg_texts(svg)
    assert "red3: throughput (delivered, per 500 ms)" in texts and "bottleneck rate (200 Mb/s)" in texts


def test_cli_plot_bin_and_what_it_cannot_draw(red3_dir, tmp_path):
    # Before, the first flow without a capture stopped `fatpipe plot` with exit 2 and nothing
    # more was drawn. Now it draws what it can, names each skip on stderr, and exits 1.
    proc = cli("plot", red3_dir, "--what", "time_sequence,queue,throughput_stacked", "--bin", "200ms", "-o", tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.split() == [str(tmp_path / n) for n in ("time_sequence_a.png", "queue.png", "throughput_stacked.png")]
    assert proc.stderr.splitlines() == [
        f"fatpipe: skipped time_sequence_{f}.png: needs a packet capture at the sender host 'sender{i}': add "
        f'output.capture = ["sender{i}"] to the scenario' for i, f in ((1, "b"), (2, "c"))]
    nothing = cli("plot", red3_dir, "--what", "time_sequence", "--flow", "c", "-o", tmp_path)
    assert nothing.returncode == 2 and nothing.stderr.startswith("fatpipe: error: nothing drawn: time_sequence")
    fine = cli("plot", red3_dir, "--what", "throughput", "--bin", "5ms", "-o", tmp_path)
    assert fine.returncode == 2 and "--bin: 5 ms is not allowed: at least the run's sample interval (10 ms)" in fine.stderr


def test_queue_plot_gives_the_bottleneck_its_own_scale_with_reds_thresholds_and_average(tmp_path):
    # The ansnet example: a 66-packet RED queue, and the sender's 1,000-packet interface
    # queue that once held about a hundred. Before, both shared one axis up to 1,000.
    from fatpipe.plots import plot_queue

    out = tmp_path / "ansnet"
    example = Path(__file__).resolve().parents[1] / "examples" / "ansnet-ds3-red.toml"
    fatpipe.run(example).write(out, plots=False)
    result = Result.read(out)
    svg = tmp_path / "q.svg"
    plot_queue(result, svg)
    texts = svg_texts(svg)
    assert {"bottleneck", "the other queues that held packets", "RED average (packets)", "RED min_th (33 packets)",
            "RED max_th (66 packets)", "bottleneck limit (66 packets)"} <= texts, texts
    # The core samples RED's average: it stays below the hard limit and follows the queue.
    q = result.queue_series[result.queue_series["link"] == "bottleneck"]
    assert q["red_avg_packets"].notna().all() and 0 < q["red_avg_packets"].max() < 66
    assert abs(q["red_avg_packets"].mean() - q["queue_packets"].mean()) < 0.3 * q["queue_packets"].mean()


def test_report_names_the_version_and_gives_utilization_in_percent(red3_dir):
    from fatpipe.report import write_report

    text = write_report(red3_dir).read_text()
    rows = re.findall(r"<tr><td>([abc])</td><td>([^<]*)</td>", text)
    assert rows == [("a", "cubic"), ("b", "reno"), ("c", "newreno")], rows
    bottleneck = re.search(r"<tr><td>bottleneck</td><td>[^<]*</td><td>[^<]*</td><td>([^<]*)</td>", text).group(1)
    assert re.fullmatch(r"\d+\.\d%", bottleneck), bottleneck
    assert f"{100 * Result.read(red3_dir).links.set_index('name').utilization['bottleneck']:.1f}%" == bottleneck
    # A caption says how to read a figure; it never repeats the title drawn in it.
    for alt, caption in re.findall(r'<img src="[^"]*" alt="([^"]*)"><figcaption>([^<]*)</figcaption>', text):
        assert caption != alt and caption


def test_equal_series_show_and_the_legend_lists_only_what_is_drawn(tmp_path):
    table = pd.DataFrame({"x": [1, 2, 1, 2, 1, 2], "y": [5.0, 6.0, 5.0, 6.0, float("nan"), float("nan")],
                          "cc": ["reno", "reno", "sack", "sack", "tahoe", "tahoe"]})
    svg = tmp_path / "s.svg"
    plot_sweep(table, svg, x="x", y="y", by="cc")
    texts = svg_texts(svg)
    assert "cc = reno" in texts and "cc = sack (same as reno)" in texts
    assert not [t for t in texts if "tahoe" in t]


def test_long_titles_wrap_instead_of_being_cut(tmp_path):
    from fatpipe.plots import TITLE_CHARS

    long = "The long-RTT flow's share against the bottleneck's rate, DropTail and RED (document Figures 21 and 22)"
    assert len(long) > TITLE_CHARS
    svg = tmp_path / "w.svg"
    plot_sweep(pd.DataFrame({"x": [1, 2], "y": [1.0, 2.0]}), svg, x="x", y="y", title=long)
    texts = svg_texts(svg)
    lines = [t for t in texts if t and t in long]
    assert len(lines) == 2 and all(len(t) <= TITLE_CHARS for t in lines), texts


def test_compare_bins_and_clips_throughput_and_draws_the_bottleneck(red3_dir, tmp_path):
    from fatpipe.compare import compare
    from fatpipe.compare import _overlay_throughput

    result = Result.read(red3_dir)
    svg = tmp_path / "c.svg"
    _overlay_throughput([result, result], ["sim", "again"], svg, ["a", "b"], 0.1)
    texts = svg_texts(svg)
    assert {"throughput (per 100 ms): sim vs again", "bottleneck rate (200 Mb/s)", "a", "b"} <= texts, texts
    with pytest.raises(PlotUnavailable, match="--bin: 1 ms is not allowed"):
        compare([result, result], ["sim", "again"], tmp_path / "out", bin_s=0.001)
