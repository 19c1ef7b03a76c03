"""The data of one finished run (simulated, emulated or probed), as tables and files.

:class:`RunData` wraps what ``_core.Simulation.finish()`` returns (see
``docs/core-interface.md``) together with the normalized scenario that produced it, and adds
what people want to read: goodput, utilization, per-interval throughput, seconds instead
of picoseconds, names instead of indices. It is plain data: the plots (``plots.py``), the
reports (``report.py``) and comparisons read it, and it imports none of them;
:class:`fatpipe.result.Result`, what users get, adds the plots to its files and its
notebook view.

The tables are kept as numpy columns (:class:`~fatpipe.columns.Columns`) and written to
Parquet through pyarrow; the DataFrame attributes (``flows``, ``flow_series``, ...) are built
on first use, so that ``fatpipe run`` never imports pandas (half a second of start-up).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Type, TypeVar, Union

import numpy as np

from .columns import Columns
from .metrics import fairness, flow_metrics, regain, transfer_metrics
from .units import PS_PER_S
from .version import version

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RunData", "DROP_CAUSES"]

#: Columns of the flow time series, in order.
FLOW_SERIES_COLUMNS = [
    "time_s",
    "flow",
    "cwnd_segments",
    "cwnd_bytes",
    "ssthresh_segments",
    "outstanding_bytes",
    "srtt_s",
    "delivered_bytes",
    "sent_bytes",
    "throughput_bps",
    "send_rate_bps",
]
#: docs/metrics.md's derived per-flow measures (float columns of ``RunData.flows``).
FLOW_METRIC_COLUMNS = (
    "goodput_bps",
    "run_goodput_bps",
    "transmitted_throughput_bps",
    "retransmission_rate",
    "slow_start_duration_s",
    "slow_start_loss_rate",
    "recovery_time_s",
    "recovery_time_95_s",
    "regain_time_s",
    "cwnd_ceiling_segments",
    "first_climb_cwnd_segments",
    "mean_response_time_s",
    "mean_request_throughput_bps",
)
#: The core's per-link drop counters by cause, in the order the summary table shows them:
#: (summary key, short label). ``drops_packets`` counts queue overflow only.
DROP_CAUSES = (
    ("drops_packets", "overflow"),
    ("early_drops_packets", "early (AQM)"),
    ("impairment_drops_packets", "random loss"),
    ("outage_drops_packets", "outage"),
    ("policer_drops_packets", "policer"),
)

#: Columns of the HTTP request table, in order.
REQUEST_COLUMNS = [
    "flow",
    "request",
    "object",
    "connection",
    "size_bytes",
    "start_s",
    "request_sent_s",
    "first_byte_s",
    "last_byte_s",
    "response_time_s",
    "throughput_bps",
]
#: Per-stream counters a group of parallel streams sums.
GROUP_SUMS = (
    "bytes_delivered",
    "bytes_sent",
    "segments_sent",
    "segments_retransmitted",
    "fast_retransmits",
    "timeouts",
    "goodput_bps",
    "run_goodput_bps",
)
#: Columns of the groups table (one row per group of parallel streams).
GROUP_COLUMNS = ["name", "streams", "algorithm", "start_ps", "end_ps", "completed"] + list(GROUP_SUMS)

#: Columns of the queue (link) time series, in order.
QUEUE_SERIES_COLUMNS = [
    "time_s",
    "link",
    "queue_packets",
    "queue_bytes",
    "drops_packets",
    "departed_bytes",
    "utilization",
    "queue_delay_s",
    "red_avg_packets",
    "early_drops_packets",
    "ecn_marks",
    "sojourn_s",
    "aqm_dropping",
    "aqm_control",
    "l4s_queue_packets",
    "l4s_sojourn_s",
    "prob_classic",
    "prob_l4s_coupled",
]

R = TypeVar("R", bound="RunData")


class RunData:
    """One finished run's data.

    Attributes:
        scenario: the normalized scenario (the document the core ran).
        plots: whether :meth:`fatpipe.result.Result.write` draws PNGs by default (the
            scenario's ``output.plots``).
        summary: JSON-ready dict: the core's summary plus ``duration_s``,
            ``total_goodput_bps``, per flow ``goodput_bps`` (over the flow's active time,
            start to last in-order delivery, or for UDP to the last datagram received) and ``run_goodput_bps`` (over the whole run),
            ``sample_interval_s`` (the time series' interval, set or defaulted),
            per link ``utilization`` (busy time / duration) and ``total_drops_packets``
            (every packet lost on entering the link, the sum of :data:`DROP_CAUSES`: queue
            overflow ``drops_packets``, RED's ``early_drops_packets``, random loss
            ``impairment_drops_packets``, ``outage_drops_packets`` and, on a link with a
            token-bucket policer, ``policer_drops_packets``).
        flows: one row per flow (the summary's flow entries); keys a flow's transport does
            not have (a UDP flow's cwnd, a TCP flow's datagram counts) are NaN.
            A flow with ``streams = N`` has a row per stream, ``group`` naming the flow
            they came from.
        groups: one row per group of parallel streams (the summary's ``groups``): name,
            streams, algorithm, start_ps (earliest), end_ps (latest; None if no stream
            delivered), completed (every stream), and the sums of :data:`GROUP_SUMS`
            (goodput_bps is the sum of the streams' goodputs). Empty without streams.
        requests: one row per completed HTTP request (:data:`REQUEST_COLUMNS`): flow (name),
            request and object (indices), connection (the flow's connection it used, from
            0), size_bytes; start_s (the client began: sent the SYN of a new connection, or
            the request), request_sent_s (the request first went out), first_byte_s and
            last_byte_s (first response segment arrived, last byte delivered in order);
            response_time_s = last_byte_s - start_s, what the user waits, connection setup
            included; throughput_bps = size_bytes x 8 / response_time_s (document 000's
            "received throughput"). Empty without HTTP flows.
        links: one row per link (the summary's link entries).
        flow_series: per sample and flow: time_s, flow (name), cwnd_segments, cwnd_bytes
            (NaN for UDP flows), ssthresh_segments (NaN while unset), outstanding_bytes (UDP:
            payload bytes in flight), srtt_s (NaN before the first RTT sample), delivered_bytes
            and sent_bytes (cumulative), throughput_bps and send_rate_bps (over the interval
            ending at the sample; 0 at the first).
        queue_series: per sample and link: time_s, link (name), queue_packets, queue_bytes,
            drops_packets (queue overflow only) and departed_bytes (cumulative, wire bytes),
            utilization (of the interval ending at the sample; 0 at the first),
            queue_delay_s, red_avg_packets (RED's average queue in its thresholds' unit; NaN
            for other disciplines), early_drops_packets and ecn_marks (cumulative: RED's
            early drops, CoDel's drops at dequeue, PIE's and FQ-PIE's on arrival; CE marks),
            and for CoDel, FQ-CoDel, PIE, FQ-PIE and TBF sojourn_s (the sojourn time of the
            latest packet to leave the queue), aqm_dropping (CoDel: 1 in its dropping state,
            else 0; FQ-CoDel: queues in it; PIE: 1 while its burst allowance lasts; FQ-PIE:
            queues whose drop probability is above 0; TBF: 1 while packets wait for tokens)
            and aqm_control (the control law's count; FQ-CoDel: the largest among those
            queues; PIE: its drop probability; FQ-PIE: the largest among its queues'; TBF:
            the bytes in its bucket). DualPI2: sojourn_s is its classic queue's, aqm_dropping 1
            while overloaded (k p' > 1), aqm_control the base probability p', and its own
            l4s_queue_packets, l4s_sojourn_s, prob_classic (p_C = p'^2) and prob_l4s_coupled
            (p_CL = min(k p', 1)); NaN for other disciplines.
    """

    def __init__(
        self,
        output: Mapping[str, Any],
        scenario: Mapping[str, Any],
        plots: bool = True,
        capture_files: Optional[Mapping[str, str]] = None,
        copy_scenario: bool = True,
        warnings: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        """``output`` is the dict ``finish()`` returned; ``scenario`` the normalized scenario;
        ``capture_files`` maps capture point names to the pcap files the core wrote.

        The tables take the output's columns out of its dicts as they convert them, so each
        of the core's columns is released as soon as it is no longer needed (a run's series
        can be most of the machine's memory). ``copy_scenario=False`` keeps ``scenario``
        itself instead of a private deep copy (the runner's, which made it for this result).
        ``warnings``: the scenario's buffer warnings if already found (fatpipe.buffers).
        """
        self.scenario: Dict[str, Any] = json.loads(json.dumps(scenario)) if copy_scenario else dict(scenario)
        self.plots = plots
        self.capture_files: Dict[str, str] = dict(capture_files or {})
        self._flow_names: List[str] = [f["name"] for f in self.scenario["flows"]]
        self._link_names: List[str] = [link["name"] for link in self.scenario["links"]]
        self.summary: Dict[str, Any] = self._build_summary(output["summary"], warnings)
        self._frames: Dict[str, "pd.DataFrame"] = {}
        self._tables: Dict[str, Columns] = {
            "requests": self._build_requests(dict(output.get("requests") or {})),
            "flow_series": self._build_flow_series(_taken(output, "flow_series")),
            "queue_series": self._build_queue_series(_taken(output, "queue_series")),
        }
        self._add_series_metrics()

    # ---- tables -----------------------------------------------------------------------

    def table(self, name: str) -> Columns:
        """One of the run's tables as numpy columns (no pandas): ``"flow_series"``,
        ``"queue_series"``, ``"requests"`` or ``"groups"``; a name column (flow, link) holds
        indices into ``table.categories[name]``."""
        if name == "groups":
            return Columns.from_records(self.summary.get("groups", []), GROUP_COLUMNS)
        if name not in self._tables:
            raise KeyError(f"no table {name!r}; available: flow_series, queue_series, requests, groups")
        return self._tables[name]

    def _frame(self, name: str) -> "pd.DataFrame":
        # Built on first use and kept: pandas is imported only by a caller who wants it.
        if name not in self._frames:
            if name == "flows":
                frame = _flow_table(self.summary["flows"])
            elif name == "links":
                import pandas as pd

                frame = pd.DataFrame(self.summary["links"])
            elif name == "groups":
                import pandas as pd

                frame = pd.DataFrame(self.summary.get("groups", []), columns=GROUP_COLUMNS)
            else:
                frame = self._tables[name].frame()
            self._frames[name] = frame
        return self._frames[name]

    @property
    def warnings(self) -> List[Dict[str, Any]]:
        """What fatpipe warned of before the run (``summary.json``'s ``warnings``): a flow's
        send or receive buffer below its path's bandwidth-delay product, each ``{"flow",
        "key", "bytes", "needed_bytes", "message"}`` (:mod:`fatpipe.buffers`), and an ECN
        congestion control on a path that never marks, ``{"flow", "key": "cc",
        "message"}`` (:mod:`fatpipe.ecn_paths`)."""
        return self.summary.get("warnings", [])

    @property
    def flows(self) -> "pd.DataFrame":
        return self._frame("flows")

    @property
    def links(self) -> "pd.DataFrame":
        return self._frame("links")

    @property
    def groups(self) -> "pd.DataFrame":
        return self._frame("groups")

    @property
    def requests(self) -> "pd.DataFrame":
        return self._frame("requests")

    @property
    def flow_series(self) -> "pd.DataFrame":
        return self._frame("flow_series")

    @property
    def queue_series(self) -> "pd.DataFrame":
        return self._frame("queue_series")

    # ---- summary ----------------------------------------------------------------------

    def _build_summary(self, core: Mapping[str, Any], warnings: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
        duration_ps = int(core["duration_ps"])
        duration_s = duration_ps / PS_PER_S
        flows = []
        sources = [f["source"] for f in self.scenario["flows"]]
        for i, entry in enumerate(core["flows"]):
            flow = dict(entry)
            source = sources[i] if i < len(sources) else {}
            # Document 000 eq. 4.3: a paced application offers burst_size x 8 / period.
            flow["offered_load_bps"] = (
                source["burst_bytes"] * 8 * PS_PER_S / source["period_ps"] if source.get("kind") == "burst" else None
            )
            # Goodput over the active time (the application's start to the last in-order
            # delivery), so a flow that finished early or started late is not diluted by
            # idle time; the rest of docs/metrics.md's per-flow measures beside it.
            flow.update({k: _json_number(v) for k, v in flow_metrics(flow, duration_ps).items()})
            if flow.get("transfers") is not None:
                flow["transfers"] = transfer_metrics(flow)
            flows.append(flow)
        links = []
        for entry in core["links"]:
            link = dict(entry)
            link["utilization"] = int(link["busy_ps"]) / duration_ps
            link["total_drops_packets"] = sum(int(link.get(key, 0)) for key, _ in DROP_CAUSES)
            links.append(link)
        shared = _shared_link(links)
        sharing = fairness([f["goodput_bps"] for f in flows], shared["rate_bps"] if shared else None)
        sharing["link"] = shared["name"] if shared else None
        sharing["utilization"] = shared["utilization"] if shared else None
        summary = dict(core)
        summary["fairness"] = {k: _json_number(v) for k, v in sharing.items()}
        # File names only: summary.json must not depend on where the run was written.
        summary["captures"] = [
            dict(c, path=f"{c['name']}.pcap") for c in core.get("captures", [])
        ]
        summary.update(
            flows=flows,
            groups=_groups(flows),
            links=links,
            duration_s=duration_s,
            # The series' interval: the scenario's, or the default for a run this long.
            sample_interval_s=int(self.scenario["sample_interval_ps"]) / PS_PER_S,
            total_goodput_bps=sum(8 * int(f["bytes_delivered"]) for f in flows) / duration_s,
            fatpipe_version=version(),
        )
        # Buffers below the path's bandwidth-delay product (fatpipe.buffers); a probe's path
        # is real, not the scenario's topology.
        if warnings is None:
            from .buffers import buffer_warnings

            warnings = [] if "probe" in core else buffer_warnings(self.scenario)
        summary["warnings"] = list(warnings)
        return summary

    # ---- time series ------------------------------------------------------------------

    def _build_flow_series(self, cols: Dict[str, Any]) -> Columns:
        # The core's columns arrive as memory numpy views without a copy; each is taken out
        # of ``cols`` when converted, so that it is freed as soon as nothing views it, and
        # columns kept as they are stay views: a run of 100,000 flows never holds its
        # series twice.
        names = self._flow_names
        codes = _codes(cols.pop("flow"))
        time_ps = _int64(cols.pop("time_ps"))
        # A UDP flow has no window (the core writes -1) and no MSS: NaN for both.
        mss = np.array([f["tcp"]["mss_bytes"] if "tcp" in f else np.nan for f in self.scenario["flows"]],
                       dtype=np.float64)
        cwnd = _where_negative_nan(cols.pop("cwnd_segments"))
        cwnd_bytes = mss.take(codes) if len(mss) else np.zeros(len(cwnd))
        cwnd_bytes *= cwnd
        srtt = _where_negative_nan(cols.pop("srtt_ps"))
        srtt /= PS_PER_S
        delivered = _int64(cols.pop("delivered_bytes"))
        sent = _int64(cols.pop("sent_bytes"))
        columns = {
            "time_s": time_ps / PS_PER_S,
            "flow": codes,
            "cwnd_segments": cwnd,
            "cwnd_bytes": cwnd_bytes,
            "ssthresh_segments": _where_negative_nan(cols.pop("ssthresh_segments")),
            "outstanding_bytes": _int64(cols.pop("outstanding_bytes")),
            "srtt_s": srtt,
            "delivered_bytes": delivered,
            "sent_bytes": sent,
            "throughput_bps": _rate_per_interval(codes, len(names), delivered, time_ps),
            "send_rate_bps": _rate_per_interval(codes, len(names), sent, time_ps),
        }
        ordered = {c: columns[c] for c in FLOW_SERIES_COLUMNS}
        # Columns only some runs have (an emulation's TCP_INFO series), after the others:
        # picoseconds as seconds, and a negative value (not measured) as NaN.
        for key in list(cols):
            values = _where_negative_nan(cols.pop(key))
            if key.endswith("_ps"):
                ordered[f"{key[:-3]}_s"] = values / PS_PER_S
            else:
                ordered[key] = values if np.isnan(values).any() else values.astype(np.int64)
        return Columns(ordered, {"flow": names})

    def _add_series_metrics(self) -> None:
        """docs/metrics.md's per-flow measures that need the sampled series (document 003's
        recovery time) or the request table (document 000's HTTP response times), into the
        summary and the flow table."""
        series = self._tables["flow_series"]
        requests = self._tables["requests"]
        names = self._flow_names
        by_flow = _rows_by_code(series["flow"], len(names))
        requests_by_flow = _rows_by_code(requests["flow"], len(names))
        tcp = {f["name"] for f in self.scenario["flows"] if "tcp" in f}
        index = {name: i for i, name in enumerate(names)}
        for flow in self.summary["flows"]:
            i = index.get(flow["name"])
            done = requests_by_flow[i] if i is not None else None
            if done is not None:
                # Means as pandas took them (a pairwise sum over the rows in their order).
                flow["mean_response_time_s"] = _json_number(float(np.mean(requests["response_time_s"][done])))
                flow["mean_request_throughput_bps"] = _json_number(float(np.mean(requests["throughput_bps"][done])))
            rows = by_flow[i] if i is not None else None
            values = {"regain_time_s": math.nan, "cwnd_ceiling_segments": math.nan,
                      "first_climb_cwnd_segments": math.nan}
            if rows is not None and flow["name"] in tcp:
                loss = flow.get("first_loss_ps")
                values = regain(series["time_s"][rows], series["cwnd_segments"][rows], series["srtt_s"][rows],
                                series["ssthresh_segments"][rows], None if loss is None else loss / PS_PER_S)
            flow.update({k: _json_number(v) for k, v in values.items()})
        self._frames.pop("flows", None)

    def _build_requests(self, cols: Optional[Mapping[str, Any]]) -> Columns:
        if not cols or not len(cols.get("flow", ())):
            return _no_requests(self._flow_names)
        columns: Dict[str, Any] = {"flow": _codes(cols["flow"])}
        for column in ("request", "object", "connection", "size_bytes"):
            columns[column] = _int64(cols[column])
        for column in ("start", "request_sent", "first_byte", "last_byte", "response_time"):
            columns[f"{column}_s"] = _int64(cols[f"{column}_ps"]) / PS_PER_S
        columns["throughput_bps"] = columns["size_bytes"] * 8 / columns["response_time_s"]
        return Columns({c: columns[c] for c in REQUEST_COLUMNS}, {"flow": self._flow_names})

    def _build_queue_series(self, cols: Mapping[str, Any]) -> Columns:
        time_ps = _int64(cols["time_ps"])
        # As integers even when empty (a probe run has no links).
        codes = _codes(cols["link"])
        names = self._link_names
        rate = np.array([link["rate_bps"] for link in self.scenario["links"]], dtype=np.float64)
        columns: Dict[str, Any] = {"time_s": time_ps / PS_PER_S, "link": codes}
        for column in ("queue_packets", "queue_bytes", "drops_packets", "departed_bytes"):
            columns[column] = _int64(cols[column])
        departed_bps = _rate_per_interval(codes, len(names), columns["departed_bytes"], time_ps)
        # departed_bytes counts wire bytes (framing included), so a link sending back to back
        # shows 1.0; a frame straddling a sample boundary can push one interval slightly
        # above 1 and the next below. Not clipped: clipping would hide that.
        link_rate = rate[codes]
        columns["utilization"] = departed_bps / link_rate
        # Time a packet arriving at the sample would wait: the queued IP bytes at the rate.
        columns["queue_delay_s"] = columns["queue_bytes"] * 8 / link_rate
        # RED's average (the unit of its thresholds); NaN for other disciplines (-1 from the
        # core), and for runs whose core sampled none (an emulation's older output).
        red_avg = cols.get("red_avg_packets")
        columns["red_avg_packets"] = (_where_negative_nan(red_avg) if red_avg is not None
                                      else np.full(len(time_ps), np.nan))
        # The active queue managers' columns (issue 28); absent from older outputs: NaN.
        for column in ("early_drops_packets", "ecn_marks"):
            value = cols.get(column)
            columns[column] = _int64(value) if value is not None else np.full(len(time_ps), np.nan)
        for column in ("aqm_dropping", "aqm_control"):
            value = cols.get(column)
            columns[column] = (_where_negative_nan(value) if value is not None
                               else np.full(len(time_ps), np.nan))
        # The sojourn times (picoseconds to seconds) and DualPI2's columns (issue 28); absent
        # from older outputs: NaN.
        for column, name, scale in (("sojourn_ps", "sojourn_s", PS_PER_S),
                                    ("l4s_sojourn_ps", "l4s_sojourn_s", PS_PER_S),
                                    ("l4s_queue_packets", "l4s_queue_packets", 1),
                                    ("prob_classic", "prob_classic", 1),
                                    ("prob_l4s_coupled", "prob_l4s_coupled", 1)):
            value = cols.get(column)
            columns[name] = (_where_negative_nan(value) / scale if value is not None
                             else np.full(len(time_ps), np.nan))
        return Columns({c: columns[c] for c in QUEUE_SERIES_COLUMNS}, {"link": names})

    @classmethod
    def read(cls: Type[R], outdir: Union[str, "os.PathLike[str]"]) -> R:
        """The run that was written into ``outdir`` (``fatpipe run -o``, ``Result.write``):
        ``summary.json``, ``scenario.json`` and the Parquet series; captures found there
        are listed in ``capture_files``. Raises ``FileNotFoundError`` naming what is
        missing."""
        out = Path(outdir)
        missing = [n for n in ("summary.json", "scenario.json", "flow_series.parquet", "queue_series.parquet")
                   if not (out / n).is_file()]
        if missing:
            raise FileNotFoundError(f"{out}: not a fatpipe run directory (missing {', '.join(missing)})")
        self = cls.__new__(cls)
        self.scenario = _read_json(out / "scenario.json")
        self.summary = _read_json(out / "summary.json")
        _check_run(self.summary, self.scenario)
        self.plots = True
        self._flow_names = [f["name"] for f in self.scenario["flows"]]
        self._link_names = [link["name"] for link in self.scenario["links"]]
        self._frames = {}
        requests = out / "requests.parquet"
        self._tables = {
            "requests": _read_table(requests, ("flow",), self._flow_names) if requests.is_file()
            else _no_requests(self._flow_names),
            "flow_series": _read_table(out / "flow_series.parquet", ("time_s", "flow"), self._flow_names),
            "queue_series": _read_table(out / "queue_series.parquet", ("time_s", "link"), self._link_names),
        }
        self.capture_files = {
            c["name"]: str(out / c["path"]) for c in self.summary.get("captures", []) if (out / c["path"]).is_file()
        }
        return self

    # ---- access -----------------------------------------------------------------------

    def series(self, name: str) -> "pd.DataFrame":
        """A wide table of one time-series column: index time_s, one column per flow (for a
        flow column such as ``"cwnd_segments"``) or per link (``"queue_packets"``), in
        scenario order."""
        for df, key, order in (
            (self.flow_series, "flow", self._flow_names),
            (self.queue_series, "link", self._link_names),
        ):
            if name in df.columns and name not in ("time_s", key):
                wide = df.pivot(index="time_s", columns=key, values=name)
                wide = wide[[c for c in order if c in wide.columns]]
                wide.columns.name = key
                return wide
        available = [
            c
            for c in FLOW_SERIES_COLUMNS + QUEUE_SERIES_COLUMNS
            if c not in ("time_s", "flow", "link")
        ]
        raise KeyError(f"no time series {name!r}; available: {', '.join(available)}")

    def __repr__(self) -> str:
        flows = ", ".join(
            f"{f['name']} {f['goodput_bps'] / 1e6:.2f} Mb/s" for f in self.summary["flows"]
        )
        return f"<{type(self).__name__} {self.summary['name']!r}: {self.summary['duration_s']:g} s; {flows}>"

    # ---- files ------------------------------------------------------------------------

    def write_data(self, outdir: Union[str, "os.PathLike[str]"]) -> Path:
        """Writes the run's data files into the directory ``outdir`` (created if needed),
        beside whatever it holds: ``summary.json``, ``scenario.json`` (both sorted, indented,
        newline-ended), ``flow_series.parquet``, ``queue_series.parquet``,
        ``requests.parquet`` (with HTTP flows), ``groups.parquet`` (with parallel streams)
        and the captures. Every file is a function of the scenario and seed only -- no clock
        time, no absolute paths -- so two runs of the same scenario give identical files.
        :meth:`fatpipe.result.Result.write` adds the plots and writes a directory whole.
        """
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        _write_json(out / "summary.json", self.summary)
        _write_json(out / "scenario.json", self.scenario)
        self._tables["flow_series"].write_parquet(out / "flow_series.parquet")
        self._tables["queue_series"].write_parquet(out / "queue_series.parquet")
        for name, path in self.capture_files.items():
            target = out / f"{name}.pcap"
            if Path(path).resolve() != target.resolve():
                shutil.copyfile(path, target)
        if any(f["source"]["kind"] == "http" for f in self.scenario["flows"]):
            self._tables["requests"].write_parquet(out / "requests.parquet")
        if self.summary.get("groups"):
            self.table("groups").write_parquet(out / "groups.parquet")
        return out


def _read_json(path: Path) -> Any:
    """A run's JSON file; ValueError naming the file if it is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name}: not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path.name}: not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise ValueError(f"{path.name}: nested too deeply to be a run's file") from None


def _read_table(path: Path, required: Sequence[str], names: Sequence[str]) -> Columns:
    """A run's Parquet table, with the ``required`` columns, its name column (the second)
    naming only ``names``; ValueError naming the file otherwise."""
    try:
        table = Columns.read_parquet(path)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{path.name}: not a readable Parquet table ({' '.join(str(err).split())[:200]})") from None
    missing = [c for c in required if c not in table]
    if missing:
        raise ValueError(f"{path.name}: no column {', '.join(missing)}: not this table (damaged, or another file?)")
    key = required[-1]
    if table.categories.get(key) is None and len(table):
        raise ValueError(f"{path.name}: its {key} column holds no names")
    unknown = [n for n in table.categories.get(key, []) if n not in names]
    if unknown:
        raise ValueError(f"{path.name}: {key} {unknown[0]!r} is not in scenario.json (its {key}s: {', '.join(names)})")
    return table


def _version_tuple(text: Any) -> Optional[tuple]:
    parts = str(text).split(".")
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts) else None


def _check_run(summary: Any, scenario: Any) -> None:
    """A run's summary.json and scenario.json as fatpipe writes them, and of one run: a
    damaged or mismatched directory is refused here in one line naming the file and field,
    not in a KeyError deep inside a report or a plot (issue 23)."""
    for name, doc, keys in (("summary.json", summary, ("name", "flows", "links", "fatpipe_version")),
                            ("scenario.json", scenario, ("name", "flows", "links", "nodes", "duration_ps"))):
        if not isinstance(doc, dict):
            raise ValueError(f"{name}: not a JSON object (a run's {name} is one)")
        absent = [k for k in keys if k not in doc]
        if absent:
            raise ValueError(f"{name}: no {', '.join(absent)}: not a fatpipe run's {name}")
        for group in ("flows", "links"):
            entries = doc[group]
            if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str)
                                                        for e in entries):
                raise ValueError(f"{name}: {group} is not a list of named entries")
    if not all(isinstance(f.get("source"), dict) for f in scenario["flows"]):
        raise ValueError("scenario.json: a flow has no source table")
    written, this = _version_tuple(summary["fatpipe_version"]), _version_tuple(version())
    if written is None or (this is not None and written > this):
        raise ValueError(
            f"summary.json: written by fatpipe {summary['fatpipe_version']}, which this fatpipe ({version()}) does "
            "not know; read it with that version"
        )
    for group in ("flows", "links"):
        ours, theirs = [e["name"] for e in summary[group]], [e["name"] for e in scenario[group]]
        if ours != theirs:
            raise ValueError(
                f"scenario.json does not match summary.json: its {group} are {', '.join(theirs) or 'none'}, the "
                f"summary's {', '.join(ours) or 'none'} (files of two runs?)"
            )
    if summary["name"] != scenario["name"]:
        raise ValueError(f"scenario.json does not match summary.json: the run is {summary['name']!r} in one and "
                         f"{scenario['name']!r} in the other (files of two runs?)")


def _flow_table(flows: List[Dict[str, Any]]) -> "pd.DataFrame":
    import pandas as pd

    table = pd.DataFrame(flows)
    # Measures that may be undefined (None in JSON) are NaN in the table, never objects.
    for column in FLOW_METRIC_COLUMNS:
        if column in table:
            table[column] = table[column].astype(np.float64)
    return table


def _shared_link(links: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The link the flows share, for document 002's utilization estimate: the one named
    "bottleneck" (every named shape has one), else the busiest link."""
    for link in links:
        if link["name"] == "bottleneck":
            return link
    return max(links, key=lambda link: link["utilization"], default=None)


def _json_number(v: Any) -> Any:
    """NaN and infinity as None: JSON has neither."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _groups(flows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One summed row per group of parallel streams, in the order the groups first appear."""
    members: Dict[str, List[Dict[str, Any]]] = {}
    for flow in flows:
        if flow.get("group") is not None:
            members.setdefault(flow["group"], []).append(flow)
    groups = []
    for name, streams in members.items():
        ends = [f["end_ps"] for f in streams if f["end_ps"] is not None]
        row: Dict[str, Any] = {
            "name": name,
            "streams": len(streams),
            "algorithm": streams[0]["algorithm"],
            "start_ps": min(f["start_ps"] for f in streams),
            "end_ps": max(ends) if ends else None,
            "completed": all(f["completed"] for f in streams),
        }
        for key in GROUP_SUMS:
            # A count not every stream has (an emulated run measures no fast retransmits)
            # is not summed into a number.
            row[key] = sum(f[key] for f in streams) if all(key in f for f in streams) else None
        groups.append(row)
    return groups


def _taken(output: Mapping[str, Any], key: str) -> Dict[str, Any]:
    """``output[key]``'s columns, taken out of the output's own dict when it can give them
    up (the core's), so converting a column frees it; a copy of the mapping otherwise."""
    cols = output[key]
    if isinstance(cols, dict):
        taken = dict(cols)
        cols.clear()
        return taken
    return dict(cols)


def _codes(column: Any) -> np.ndarray:
    """The core's element indices (u32, below 2^31) viewed as int32, a categorical's codes."""
    a = np.asarray(column)
    return a.view(np.int32) if a.dtype == np.uint32 else a.astype(np.int32)


def _int64(column: Any) -> np.ndarray:
    """A column as int64: the core's unsigned columns are viewed, not copied (their values
    are below 2^63)."""
    a = np.asarray(column)
    if a.dtype == np.int64:
        return a
    if a.dtype == np.uint64:
        return a.view(np.int64)
    return a.astype(np.int64)


def _where_negative_nan(column: Any) -> np.ndarray:
    """A float64 copy of a column in which the core's -1 ("none") is NaN."""
    a = np.asarray(column).astype(np.float64)
    a[a < 0] = np.nan
    return a


def _no_requests(flow_names: Sequence[str]) -> Columns:
    """The request table of a run without completed requests: no rows, typed columns."""
    ints = ("request", "object", "connection", "size_bytes")
    return Columns({c: np.zeros(0, dtype=np.int32 if c == "flow" else np.int64 if c in ints else np.float64)
                    for c in REQUEST_COLUMNS}, {"flow": flow_names})


def _one_row_per_group_per_sample(codes: np.ndarray, groups: int) -> bool:
    """Whether a series has the core's layout: a row per group per sample, groups in order."""
    n = len(codes)
    return n % groups == 0 and bool((codes.reshape(-1, groups) == np.arange(groups)).all())


def _rows_by_code(codes: np.ndarray, groups: int) -> List[Any]:
    """The rows of each group (flow or link), in row order, as an index for its columns;
    None for a group with no rows. The core writes one row per group per sample, groups in
    order: then a group's rows are a strided slice (a view: a run of 100,000 flows and 50
    million rows costs nothing more). Any other layout: a stable sort, one pass for all."""
    out: List[Any] = [None] * groups
    if not len(codes) or not groups:
        return out
    if _one_row_per_group_per_sample(codes, groups):
        return [slice(group, None, groups) for group in range(groups)]
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=groups)
    for group, rows in enumerate(np.split(order, np.cumsum(counts)[:-1])):
        if len(rows):
            out[group] = rows
    return out


def _rate_per_interval(codes: np.ndarray, groups: int, values: np.ndarray, time_ps: np.ndarray) -> np.ndarray:
    """bits/s over the interval ending at each sample, per group (flow or link); 0 at each
    group's first sample. Uses each row's own interval, so a last, shorter interval (when the
    duration is not a multiple of the sample interval) is still right.

    The core writes one row per group per sample, groups in order: then a row's previous
    sample is ``groups`` rows before it, and the rates are one array operation. Any other
    layout falls back to a grouped difference."""
    n = len(values)
    rate = np.zeros(n, dtype=np.float64)
    if n == 0 or groups == 0:
        return rate
    if _one_row_per_group_per_sample(codes, groups):
        # In place on the result: no temporary as large as the column.
        per_sample = rate.reshape(-1, groups)
        v = values.reshape(-1, groups)
        np.subtract(v[1:], v[:-1], out=per_sample[1:], casting="unsafe")
        dt_ps = np.diff(time_ps[::groups]).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_sample[1:] *= (8 * PS_PER_S / dt_ps)[:, None]
        rate[~np.isfinite(rate)] = 0.0
        return rate
    # Each row's predecessor in its group (the rows of a group in order, by a stable sort);
    # a group's first row has none and a rate of 0.
    order = np.argsort(codes, kind="stable")
    first = np.ones(n, dtype=bool)
    first[1:] = codes[order][1:] != codes[order][:-1]
    previous = np.empty(n, dtype=np.int64)
    previous[order[1:]] = order[:-1]
    previous[order[first]] = order[first]
    dt_ps = (time_ps - time_ps[previous]).astype(np.float64)
    dv = values.astype(np.float64) - values[previous].astype(np.float64)
    dt_ps[order[first]] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = dv * 8 * PS_PER_S / dt_ps
    return np.where(np.isfinite(rate), rate, 0.0)


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, sort_keys=True, indent=2, allow_nan=False) + "\n"
    path.write_text(text, encoding="utf-8")
