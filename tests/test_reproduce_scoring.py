"""How the reproductions score (issue 25): every finding re-encoded there can fail when the
behaviour it describes is absent (its condition fed a counter-example), a calibration value
is never counted, a variant scores a finding on other runs, ``at_max`` reads a curve's peak,
and iperf's client-side intervals count the bytes written."""

import math

import pandas as pd
import pytest

from fatpipe.metrics import interval_rates, written_interval_rates
from fatpipe.reproduce.catalog import Measure, documents
from fatpipe.reproduce.evaluate import Results, count, evaluate_number, measure
from fatpipe.reproduce.expressions import Expression

DOCS = documents()


def finding(doc, exp, claim_start):
    found = [f for f in DOCS[doc].experiments[exp].findings if f.claim.startswith(claim_start)]
    assert len(found) == 1, (exp, claim_start, [f.claim for f in DOCS[doc].experiments[exp].findings])
    return found[0]


def holds(f, **values):
    return bool(f.holds_if.evaluate(None, values))


def test_local_back_off_fails_on_a_network_loss_or_without_a_back_off():
    f = finding("sandia-hstcp", "E1.2", "The back-off is local")
    assert holds(f, local=1, cwr=2, recoveries=0)
    assert not holds(f, local=1, cwr=2, recoveries=1)  # a loss was recovered: not local
    assert not holds(f, local=0, cwr=0, recoveries=0)  # no back-off at all


def test_txqueuelen_gains_are_each_algorithms_own():
    f = finding("sandia-hstcp", "E1.5", "Past txqueuelen 210")
    doc = dict(std_100=828, std_above=966, stcp_100=897, stcp_above=966, hs_100=948, hs_above=966)
    assert holds(f, **doc)
    # Scalable gaining more than Standard over its own throughput fails, whatever 966 says.
    assert not holds(f, **dict(doc, stcp_100=800, stcp_above=966))


def test_standard_pair_share_reads_each_runs_slower_stream():
    # Ten runs where the slower stream is 'first' in half of them: labels average to 50 %,
    # the slower stream's share is 38 %.
    rows = []
    for k in range(10):
        fast, slow = 500e6, 308e6
        first, second = (fast, slow) if k % 2 else (slow, fast)
        rows.append({"sweep": "e13-pairs", "status": "ok", "name": "std-std", "flows[*].tcp.rcv_buffer": "12MiB",
                     "replication": k, "flows.first.goodput_bps": first, "flows.second.goodput_bps": second})
    results = Results(pd.DataFrame(rows), {"name": ["std-std"], "flows[*].tcp.rcv_buffer": ["12MiB"]})
    share = DOCS["sandia-hstcp"].experiments["E1.3"].numbers[0]
    m = Measure(share.measure.value, {"name": "std-std"})
    value, _ = measure(results, m, "share")
    assert value == pytest.approx(308 / 808)
    labelled = Measure(Expression("{flows.second.goodput_bps} / ({flows.first.goodput_bps} + "
                                  "{flows.second.goodput_bps})", "old"), {"name": "std-std"})
    assert measure(results, labelled, "old")[0] == pytest.approx(0.5)


@pytest.mark.parametrize("exp, claim", [("E2.2", "RED cannot make up"), ("E2.3", "With eight flows and a reverse")])
def test_ansnet_findings_read_the_reverse_flow_runs_table_3_quotes(exp, claim):
    f = finding("ansnet", exp, claim)
    assert all(m.where["sweep"].endswith("-revb") for m in f.measures.values())
    names = set(f.measures)
    if exp == "E2.2":  # Table 3, 4 flows with a reverse flow: r60 33.36, r200 40.56, 224 38.68, 60 25.16
        assert holds(f, r60=33.36, r200=40.56, b224=38.68, b60=25.16)
        assert not holds(f, r60=39.7, r200=40.56, b224=40.5, b60=39.7)  # r60 as good as the rest
    else:  # 8 flows with a reverse flow: 40.88, 39.68, 36.00, 28.32
        assert holds(f, r200=40.88, b224=39.68, r60=36.00, b60=28.32)
        assert not holds(f, r200=40.88, b224=39.68, r60=38.5, b60=38.6)
    assert names


def test_fairness_findings_fail_when_the_flows_are_not_as_described():
    typical = finding("ansnet", "E2.5", "Deviations are typically")
    assert holds(typical, typical=0.13) and not holds(typical, typical=0.02) and not holds(typical, typical=0.4)
    growth = finding("ansnet", "E2.5", "68 ms, no background")
    assert holds(growth, small4=0.01, small8=0.02, large4=0.15, large8=0.12)
    assert not holds(growth, small4=0.01, small8=0.02, large4=0.01, large8=0.01)  # no loss of fairness
    assert not holds(growth, small4=0.10, small8=0.02, large4=0.3, large8=0.3)  # unfair from the start
    red = finding("ansnet", "E2.5", "RED is slightly less fair")
    assert holds(red, red=0.16, droptail=0.10) and not holds(red, red=0.08, droptail=0.10)


def test_inflection_findings_fail_when_the_peaks_are_not_as_described():
    lower = finding("ansnet", "E2.4", "68 ms, reverse flow: for every build the single flow")
    # Table 3's reverse-flow peaks hold; one build whose single flow beats both fails.
    table = {"b60": (22.97, 25.16, 28.32), "r60": (33.48, 33.36, 36.00), "b224": (35.29, 38.68, 39.68),
             "r200": (33.59, 40.56, 40.88)}
    values = {f"{b}_{n}": v for b, vs in table.items() for n, v in zip((1, 4, 8), vs)}
    assert holds(lower, **values)
    assert not holds(lower, **dict(values, b224_1=40.0))
    where = finding("ansnet", "E2.4", "68 ms, reverse flow: one flow peaks just above")
    one = {f"w1_{b}": 416e3 for b in table}
    several = {f"w{n}_{b}": 768e3 for b in table for n in (4, 8)}
    assert holds(where, **one, **several)
    assert not holds(where, **one, **{k: 300e3 for k in several})  # several flows peak earlier
    assert not holds(where, **{k: 1e6 for k in one}, **{k: 2e6 for k in several})  # far above D x BW


def test_dcr_without_reordering_is_two_sided():
    f = finding("griddt", "E4.5", "Without reordering DCR changes nothing")
    assert holds(f, dcr=100.0, no_dcr=101.0)
    assert not holds(f, dcr=116.0, no_dcr=100.0)  # 16 % better: DCR is not neutral
    assert not holds(f, dcr=90.0, no_dcr=100.0)


def test_no_finding_is_an_experiment_repeated_on_the_same_runs():
    # E3.2's sequence curves end at goodput x duration: its old finding was E3.1's.
    assert DOCS["tcp-versions"].experiments["E3.2"].findings == []
    # E4.2's three-hosts set-up is ours, not the document's, and E4.3 cites the document.
    assert not any("three hosts" in f.claim for f in DOCS["griddt"].experiments["E4.2"].findings)
    assert not any("issue" in f.source for exp in DOCS["griddt"].experiments.values() for f in exp.findings)


def test_calibration_values_are_shown_not_counted():
    numbers = DOCS["ansnet"].experiments["E2.6"].numbers
    calibration = [n for n in numbers if n.calibration]
    assert calibration and all(n.document >= 41.1 for n in calibration)
    assert all(not n.calibration for n in numbers if n.unit == "Mb/s" and n.document < 41.1)
    table = pd.DataFrame([{"sweep": "s", "status": "ok", "x": 1, "flows.f1.goodput_bps": 41.2e6}])
    results = Results(table, {"x": [1]})
    records = [evaluate_number(results, n, ("relative", 0.1), f"numbers[{i}]") for i, n in enumerate(calibration[:1])]
    records.append({"agrees": False})
    assert records[0]["calibration"]
    assert count(records, "agrees") == {"total": 1, "measured": 1, "agree": 0, "calibration": 1}


def test_document_000_scores_every_finding_with_the_hosts_limit_too():
    doc = DOCS["nocc-pacing"]
    (variant,) = doc.variants
    for exp in doc.experiments.values():
        for f in exp.findings:
            other = variant.of(f)
            assert other is not None, (exp.id, f.claim)
            assert other.claim.endswith("[hosts limited to 130 Mb/s]")
            wheres = [str(m.where) for m in other.measures.values()]
            assert all("free" not in w for w in wheres) and any("host-130" in w for w in wheres), wheres


def test_at_max_reads_where_a_curve_peaks():
    rows = [{"sweep": "s", "status": "ok", "w": w, "y": y} for w, y in (("1kB", 1.0), ("2kB", 5.0), ("4kB", 3.0))]
    results = Results(pd.DataFrame(rows), {"w": ["1kB", "2kB", "4kB"]})
    m = Measure(Expression("{y}", "y"), {}, "at_max", None, Expression("bytes({w})", "at"))
    assert measure(results, m, "m")[0] == 2000


def test_iperf_client_intervals_count_the_buffer_the_writer_filled_at_once():
    # Delivery at 100 bytes/s from 0 to 10 s; the writer filled 250 bytes of buffer ahead of
    # it at the start and kept it full (written 1250 when 1000 were delivered).
    times = [0.0, 10.0]
    delivered = [0.0, 1000.0]
    client = written_interval_rates(times, delivered, 5.0, 1250.0, 1000.0)
    server = interval_rates(times, delivered, 5.0)
    assert server == pytest.approx([800.0, 800.0])
    assert client == pytest.approx([(500 + 250) * 8 / 5, 800.0])
    # A writer that stopped early: never more than it wrote in all.
    capped = written_interval_rates(times, delivered, 5.0, 1000.0, 1000.0)
    assert capped == pytest.approx(server) and not any(math.isnan(x) for x in capped)


def test_count_and_parameters_over_sweeps_of_different_flow_counts():
    # E2.4 to E2.6 read one-, four- and eight-flow runs in one table: a four-flow row has no
    # value for flows f5 to f8, and count() counts the flows it has. A parameter whose path
    # holds a pattern (flows[f*].tcp.rcv_buffer) is read as that column.
    table = pd.DataFrame({"flows.f1.goodput_bps": [10.0, 10.0], "flows.f2.goodput_bps": [8.0, float("nan")],
                          "flows[f*].tcp.rcv_buffer": ["64kB", "32kB"]})
    util = Expression("count({flows.f*.goodput_bps}) * min({flows.f*.goodput_bps})", "u").evaluate(table)
    assert util.tolist() == [16.0, 10.0]
    windows = Expression("count({flows.f*.goodput_bps}) * bytes({flows[f*].tcp.rcv_buffer})", "w").evaluate(table)
    assert windows.tolist() == [128000, 32000]
