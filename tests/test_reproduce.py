"""`fatpipe reproduce`: every experiment of documents 000 to 004 runs in --quick mode
and writes its figures and comparison files; the comparison itself (numbers against a
tolerance, findings, counts) is checked on a small catalog of our own whose values follow
from a closed form; mistakes in a reproduction's files or the command line are one line.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from fatpipe.reproduce import CatalogError, reproduce, select
from fatpipe.reproduce.catalog import documents
from fatpipe.reproduce.evaluate import _reduce, kendall_tau
from fatpipe.reproduce.expressions import Expression, ExpressionError

from test_cli_errors import assert_one_line_error, fatpipe

DOCUMENTS = {"nocc-pacing": "000", "sandia-hstcp": "001", "ansnet": "002", "tcp-versions": "003", "griddt": "004"}


def test_list_names_every_experiment_of_the_three_documents():
    proc = fatpipe("reproduce", "--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    known = documents()
    assert len(lines) == sum(len(d.experiments) for d in known.values())
    for name, number in DOCUMENTS.items():
        assert known[name].number == number
        ids = [line.split()[1] for line in lines if line.split()[0] == name]
        # The experiments guide's ids: E1.1-E1.6, E2.1-E2.6 (E2.4-E2.6 read E2.1-E2.3's
        # runs), E4.1-E4.5.
        assert ids == list(known[name].experiments), (name, ids)
    assert [line.split()[1] for line in lines if line.startswith("griddt")] == [f"E4.{i}" for i in range(1, 6)]
    assert [line.split()[1] for line in lines if line.startswith("sandia-hstcp")] == [f"E1.{i}" for i in range(1, 7)]
    assert [line.split()[1] for line in lines if line.startswith("ansnet")] == [f"E2.{i}" for i in range(1, 7)]


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_quick_mode_runs_every_experiment_and_writes_figures_and_comparisons(name, tmp_path):
    results = reproduce(name, outdir=tmp_path, quick=True, jobs=1)
    (doc, outcomes, data, target), = results
    assert target == tmp_path / name
    assert [o.experiment.id for o in outcomes] == list(doc.experiments)
    whole = json.loads((target / "comparison.json").read_text())
    assert whole["mode"] == "quick" and whole["name"] == name
    assert "comparison" in (target / "comparison.md").read_text() or (target / "comparison.md").stat().st_size > 0
    for outcome, exp_json in zip(outcomes, whole["experiments"]):
        exp = outcome.experiment
        assert outcome.failed == 0, (exp.id, outcome.errors)
        assert outcome.runs > 0
        folder = target / exp.id
        data = json.loads((folder / "comparison.json").read_text())
        assert data == exp_json
        assert data["experiment"] == exp.id and data["mode"] == "quick"
        # Each finding, then the same finding on each variant's runs (document 000's host limit).
        scored = sum(1 + sum(v.of(f) is not None for v in doc.variants) for f in exp.findings)
        assert len(data["numbers"]) == len(exp.numbers) and len(data["findings"]) == scored
        # Counts add up; what quick mode cannot measure says why, and never counts as agreement.
        for key, flag in (("numbers", "agrees"), ("findings", "holds")):
            measured = [r for r in data[key] if r[flag] is not None and not r.get("calibration")]
            assert data["counts"][key]["measured"] == len(measured)
            assert data["counts"][key]["agree"] == sum(bool(r[flag]) for r in measured)
            assert all(r.get("error") for r in data[key] if r[flag] is None), (exp.id, key)
        # Every figure of the document is drawn, even in quick mode.
        for fig in data["figures"]:
            assert fig["drawn"], (exp.id, fig)
            png = folder / fig["file"]
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        md = (folder / "comparison.md").read_text()
        assert f"# {exp.id}:" in md and "quick mode" in md and "## Assumptions" in md
        assert (folder / "runs.csv").stat().st_size > 0
    assert data["assumptions"], "every experiment lists what its document leaves open"


# A catalog of our own: one window-limited flow, whose goodput is the window over the
# round trip (a closed form), so the comparison's verdicts are known in advance.
DOCUMENT = """\
name = "window-limit"
document = "900"
title = "A window-limited flow"
summary = "One Reno flow limited by its receive window."
tolerance = 0.05
tolerance_why = "5 %: the window's first round trip and the headers"
"""

BASE = """\
name = "w"
duration = "10s"
[topology]
bottleneck_rate = "100Mbps"
rtt = "40ms"
[[flows]]
name = "flow"
cc = "reno"
[flows.tcp]
profile = "rfc"
rcv_buffer = "100kB"
[output]
sample_interval = "100ms"
plots = false
"""

# 100 kB per 40 ms is 20 Mb/s of payload (69 segments of 1448 bytes: 19.9), less the
# handshake and slow start, some 0.25 s of the 10 s.
EXPERIMENT = """\
id = "E9.1"
title = "Goodput against the window"
reports = "Figure 1"
summary = "Goodput is the window over the round trip."
interval = "1s"

[[sweeps]]
name = "windows"
base = "base.toml"
[sweeps.grid]
"flows[0].tcp.rcv_buffer" = ["50kB", "100kB"]

[quick]
keep = { "flows[0].tcp.rcv_buffer" = ["100kB"] }

[[assumptions]]
what = "Headers"
assumed = "rfc profile"
why = "a test"

[[numbers]]
what = "100 kB window"
document = 20
unit = "Mb/s"
value = "{flows.flow.goodput_bps}"
where = { "flows[0].tcp.rcv_buffer" = "100kB" }
source = "closed form"

[[numbers]]
what = "100 kB window, a wrong document value"
document = 30
unit = "Mb/s"
value = "{flows.flow.goodput_bps}"
where = { "flows[0].tcp.rcv_buffer" = "100kB" }
source = "closed form"

[[numbers]]
what = "ratio of the two windows' goodputs"
document = 2
measures = { big = { value = "{flows.flow.goodput_bps}", where = { "flows[0].tcp.rcv_buffer" = "100kB" } }, small = { value = "{flows.flow.goodput_bps}", where = { "flows[0].tcp.rcv_buffer" = "50kB" } } }
value = "big / small"
tolerance = { absolute = 0.1 }
source = "closed form"

[[numbers]]
what = "third second"
document = 20
unit = "Mb/s"
value = "{interval.flow.2}"
source = "closed form"
where = { "flows[0].tcp.rcv_buffer" = "100kB" }

[[findings]]
claim = "goodput rises with the window"
holds_if = "big > 1.5 * small"
source = "closed form"
[findings.measures]
big = { value = "{flows.flow.goodput_bps}", where = { "flows[0].tcp.rcv_buffer" = "100kB" } }
small = { value = "{flows.flow.goodput_bps}", where = { "flows[0].tcp.rcv_buffer" = "50kB" } }

[[findings]]
claim = "a claim the runs refute"
holds_if = "g > 50e6"
source = "closed form"
measures = { g = { value = "{flows.flow.goodput_bps}" } }

[[figures]]
file = "goodput"
title = "Goodput against the window"
kind = "lines"
x = "flows[0].tcp.rcv_buffer"
y = "{flows.flow.goodput_bps}"
unit = "Mb/s"
document = { "closed form" = [10, 20] }

[[figures]]
file = "per-second"
title = "Per second"
kind = "intervals"
flows = ["flow"]
where = { "flows[0].tcp.rcv_buffer" = "100kB" }

[[figures]]
file = "series"
title = "Throughput per second, beside the closed form"
kind = "series"
y = "throughput_bps"
every = "1s"
unit = "Mb/s"
where = { "flows[0].tcp.rcv_buffer" = "100kB" }
document = { "closed form" = [20, 20, 20] }
"""


def _catalog(tmp_path, experiment=EXPERIMENT, document=DOCUMENT):
    folder = tmp_path / "catalog" / "window-limit"
    folder.mkdir(parents=True)
    (folder / "document.toml").write_text(document)
    (folder / "base.toml").write_text(BASE)
    (folder / "E9.1.toml").write_text(experiment)
    return folder.parent


def test_comparison_agrees_and_disagrees_as_the_closed_form_says(tmp_path):
    catalog = _catalog(tmp_path)
    (doc, [outcome], data, target), = reproduce("window-limit", outdir=tmp_path / "out", jobs=1, catalog=catalog)
    numbers = {n["what"]: n for n in outcome.numbers}
    right = numbers["100 kB window"]
    assert right["agrees"] is True and 19.0 <= right["fatpipe"] <= 20.0, right
    assert numbers["100 kB window, a wrong document value"]["agrees"] is False
    ratio = numbers["ratio of the two windows' goodputs"]
    assert ratio["agrees"] is True and abs(ratio["fatpipe"] - 2) < 0.1 and ratio["tolerance"] == "±0.1"
    assert numbers["third second"]["agrees"] is True
    assert abs(numbers["third second"]["fatpipe"] - 20.0) < 0.5
    findings = {f["claim"]: f for f in outcome.findings}
    assert findings["goodput rises with the window"]["holds"] is True
    assert findings["a claim the runs refute"]["holds"] is False
    assert data["counts"] == {"numbers": {"total": 4, "measured": 4, "agree": 3, "calibration": 0},
                              "findings": {"total": 2, "measured": 2, "agree": 1, "calibration": 0}}
    md = (target / "comparison.md").read_text()
    assert "**3 of 4 numbers agree within tolerance; 1 of 2 findings hold**" in md
    assert (target / "E9.1" / "goodput.png").exists() and (target / "E9.1" / "per-second.png").exists()
    assert (target / "E9.1" / "series.png").exists()
    # Quick mode keeps the 100 kB point only: what needs the 50 kB one is not measured,
    # which is never counted as agreement.
    (_, [quick], qdata, _), = reproduce("window-limit", outdir=tmp_path / "quick", quick=True, jobs=1,
                                        catalog=catalog)
    ratio = {n["what"]: n for n in quick.numbers}["ratio of the two windows' goodputs"]
    assert ratio["agrees"] is None and "no run matches" in ratio["error"]
    assert qdata["counts"]["numbers"] == {"total": 4, "measured": 3, "agree": 2, "calibration": 0}


def test_a_second_run_reuses_the_finished_runs(tmp_path):
    catalog = _catalog(tmp_path)
    first = reproduce("window-limit", outdir=tmp_path / "out", jobs=1, catalog=catalog)
    runs = sorted((tmp_path / "out" / "window-limit" / "E9.1" / "sweeps" / "windows" / "runs").iterdir())
    stamps = [(r / "done.json").stat().st_mtime_ns for r in runs]
    second = reproduce("window-limit", outdir=tmp_path / "out", jobs=1, catalog=catalog)
    assert [(r / "done.json").stat().st_mtime_ns for r in runs] == stamps
    assert first[0][2]["counts"] == second[0][2]["counts"]


@pytest.mark.parametrize("old, new, fragments", [
    ('document = 30\n', 'document = "thirty"\n', ["E9.1.toml", "numbers[1].document"]),
    ('holds_if = "g > 50e6"', 'holds_if = "h > 50e6"', ["findings[1].holds_if", "h is not a measure"]),
    ('kind = "intervals"', 'kind = "pie"', ["figures[1].kind", "pie"]),
    # The document's values are drawn or refused, never silently dropped.
    ('kind = "lines"', 'kind = "scatter"', ["figures[0].document", "not drawn on a scatter plot"]),
    ('every = "1s"\n', '', ["figures[2].document", "set every"]),
    ('id = "E9.1"', 'id = "E9.2"', ["holds experiment E9.1"]),
    ('value = "big / small"', 'value = "big.real"', ["Attribute is not allowed"]),
    ('unit = "Mb/s"\nvalue = "{flows.flow.goodput_bps}"\nwhere = { "flows[0].tcp.rcv_buffer" = "100kB" }\n'
     'source = "closed form"\n\n[[numbers]]\nwhat = "100 kB window, a wrong',
     'unit = "Mb/s"\nvalue = "{flows.flow.goodput_bps}"\nwhere = { "flows[0].tcp.rcv_buffer" = "100kB" }\n'
     'source = "closed form"\nreduce = "peak_drop"\n\n[[numbers]]\nwhat = "100 kB window, a wrong',
     ["numbers[0].x", "peak_drop"]),
])
def test_a_mistake_in_a_reproduction_file_is_one_line_naming_file_and_key(tmp_path, old, new, fragments):
    assert old in EXPERIMENT
    catalog = _catalog(tmp_path, EXPERIMENT.replace(old, new, 1))
    with pytest.raises(CatalogError) as err:
        select("window-limit", None, catalog)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_unknown_parameter_in_a_where_is_reported_not_counted(tmp_path):
    broken = EXPERIMENT.replace('where = { "flows[0].tcp.rcv_buffer" = "100kB" }\nsource = "closed form"\n\n'
                                '[[numbers]]\nwhat = "100 kB window, a wrong',
                                'where = { "flows[0].tcp.snd_buffer" = "100kB" }\nsource = "closed form"\n\n'
                                '[[numbers]]\nwhat = "100 kB window, a wrong', 1)
    assert broken != EXPERIMENT
    (_, [outcome], data, _), = reproduce("window-limit", outdir=tmp_path / "out", quick=True, jobs=1,
                                         catalog=_catalog(tmp_path, broken))
    first = outcome.numbers[0]
    assert first["agrees"] is None and "flows[0].tcp.snd_buffer" in first["error"]


@pytest.mark.parametrize("args, fragments", [
    (["reproduce", "nosuch"], ["'nosuch' is not a reproduction", "sandia-hstcp", "ansnet", "griddt"]),
    (["reproduce", "griddt", "E9.9"], ["'E9.9' is not an experiment of griddt", "E4.3"]),
    (["reproduce", "all", "E4.3"], ["needs a document name"]),
    (["reproduce"], ["NAME: missing"]),
    (["reproduce", "--list", "griddt"], ["--list takes no NAME"]),
    (["reproduce", "griddt", "--quick", "--docs", "x.md"], ["--docs is not allowed with --quick"]),
    (["reproduce", "griddt", "--docs", "x.md"], ["--docs needs every document"]),
    (["reproduce", "griddt", "--jobs", "0"], ["--jobs"]),
])
def test_command_line_mistakes_are_one_line(args, fragments):
    assert_one_line_error(fatpipe(*args), *fragments)


def test_expressions_are_parsed_never_executed():
    import pandas as pd

    table = pd.DataFrame({"flows.a.goodput_bps": [1.0, 3.0], "flows.b.goodput_bps": [2.0, 2.0],
                          "w": ["1MB", "2MB"]})
    assert list(Expression("max({flows.*.goodput_bps})").evaluate(table)) == [2.0, 3.0]
    assert list(Expression("count({flows.*.goodput_bps}) * min({flows.*.goodput_bps})").evaluate(table)) == [2, 4]
    assert list(Expression("bytes({w}) / 1e6").evaluate(table)) == [1.0, 2.0]
    assert Expression("a > 2 * b and not c").evaluate(None, {"a": 5, "b": 2, "c": False}) is True
    for text, fragment in [("__import__('os')", "__import__() is not a function"), ("'a'", "only numbers"), ("open(1)", "open() is not a function"),
                           ("(lambda: 1)()", "is not a function here"), ("x[0]", "Subscript is not allowed"),
                           ("1 +", "does not parse")]:
        with pytest.raises(ExpressionError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            Expression(text)
    with pytest.raises(ExpressionError, match="no column {flows.c.goodput_bps}; columns like it"):
        Expression("{flows.c.goodput_bps}").evaluate(table)


def test_reductions_and_rank_agreement():
    # Document 002's superscripts: the percentage lost from the peak, after the peak.
    assert _reduce("peak_drop", [10, 40, 30, 35]) == pytest.approx(0.25)
    assert _reduce("peak_drop", [10, 20, 30]) == 0.0
    assert _reduce("median", [3, 1, 2, 10]) == 2.5
    assert kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert kendall_tau(["c", "b", "a"], ["a", "b", "c"]) == -1.0
    assert kendall_tau(["b", "a", "c"], ["a", "b", "c"]) == pytest.approx(1 / 3)


def test_the_package_ships_the_reproductions(tmp_path):
    # The catalog is read from the installed package, not the source tree: its files are
    # package data (maturin includes everything under python/fatpipe).
    script = textwrap.dedent("""
        from fatpipe.reproduce.catalog import REPRODUCTIONS_DIR, documents
        print(REPRODUCTIONS_DIR, len(documents()))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[-1]) >= 3


def test_docs_reproductions_md_documents_the_current_format():
    # The page is generated by a full run (`fatpipe reproduce all --docs ...`); its format
    # section comes from the catalog's own schema, so a new key shows up there or fails here.
    from pathlib import Path

    from fatpipe.reproduce.report import format_reference

    page = (Path(__file__).resolve().parent.parent / "docs" / "reproductions.md").read_text(encoding="utf-8")
    assert page.rstrip().endswith(format_reference().rstrip()), (
        "docs/reproductions.md is out of date: run fatpipe reproduce all -o runs/reproduce --docs docs/reproductions.md")
    for name in DOCUMENTS:
        assert f"(`fatpipe reproduce {name}`)" in page


def test_document_002s_sweeps_are_what_their_generator_writes():
    """The four router builds and the windows of E2.1 to E2.3 are written once, in
    scripts/ansnet_sweeps.py; the committed files must hold exactly what it writes (run it
    after changing either)."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "ansnet_sweeps.py"
    spec = importlib.util.spec_from_file_location("ansnet_sweeps", script)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    for name, flows, max_window in generator.EXPERIMENTS:
        text = (generator.ANSNET / f"{name}.toml").read_text(encoding="utf-8")
        assert text == generator.with_sweeps(text, generator.sweeps(flows, max_window)), (
            f"{name}.toml differs from what scripts/ansnet_sweeps.py writes: run it"
        )
        assert text.count('discipline = "') == 4 * len(generator.BUILDS), name
