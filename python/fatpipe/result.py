"""The results of one simulation run, as tables and files.

:class:`Result` wraps what ``_core.Simulation.finish()`` returns (see
``docs/core-interface.md``) together with the normalized scenario that produced it, and adds
what people want to read: goodput, utilization, per-interval throughput, seconds instead
of picoseconds, names instead of indices.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np
import pandas as pd

from .metrics import fairness, flow_metrics
from .units import PS_PER_S

__all__ = ["Result"]

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
#: docs/metrics.md's derived per-flow measures (float columns of ``Result.flows``).
FLOW_METRIC_COLUMNS = (
    "goodput_bps",
    "run_goodput_bps",
    "transmitted_throughput_bps",
    "retransmission_rate",
    "slow_start_duration_s",
    "slow_start_loss_rate",
    "recovery_time_s",
    "recovery_time_95_s",
)
#: The core's per-link drop counters by cause, in the order the summary table shows them:
#: (summary key, short label). ``drops_packets`` counts queue overflow only.
DROP_CAUSES = (
    ("drops_packets", "overflow"),
    ("early_drops_packets", "early (RED)"),
    ("impairment_drops_packets", "random loss"),
    ("outage_drops_packets", "outage"),
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
]


def _version() -> str:
    # Imported here: fatpipe/__init__ imports this module lazily, never the other way round
    # at import time.
    from . import __version__

    return __version__


class Result:
    """One finished run.

    Attributes:
        scenario: the normalized scenario (the document the core ran).
        plots: whether :meth:`write` draws PNGs by default (the scenario's ``output.plots``).
        summary: JSON-ready dict: the core's summary plus ``duration_s``,
            ``total_goodput_bps``, per flow ``goodput_bps`` (over the flow's active time,
            start to last in-order delivery, or for UDP to the last datagram received) and ``run_goodput_bps`` (over the whole run),
            per link ``utilization`` (busy time / duration) and ``total_drops_packets``
            (every packet lost on entering the link, the sum of :data:`DROP_CAUSES`: queue
            overflow ``drops_packets``, RED's ``early_drops_packets``, random loss
            ``impairment_drops_packets`` and ``outage_drops_packets``).
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
            utilization (of the interval ending at the sample; 0 at the first).
    """

    def __init__(
        self,
        output: Mapping[str, Any],
        scenario: Mapping[str, Any],
        plots: bool = True,
        capture_files: Optional[Mapping[str, str]] = None,
    ) -> None:
        """``output`` is the dict ``finish()`` returned; ``scenario`` the normalized scenario;
        ``capture_files`` maps capture point names to the pcap files the core wrote."""
        self.scenario: Dict[str, Any] = json.loads(json.dumps(scenario))  # a private deep copy
        self.plots = plots
        self.capture_files: Dict[str, str] = dict(capture_files or {})
        self._flow_names: List[str] = [f["name"] for f in self.scenario["flows"]]
        self._link_names: List[str] = [link["name"] for link in self.scenario["links"]]
        self.summary: Dict[str, Any] = self._build_summary(output["summary"])
        self.flows = _flow_table(self.summary["flows"])
        self.groups = pd.DataFrame(self.summary["groups"], columns=GROUP_COLUMNS)
        self.requests = self._build_requests(output.get("requests"))
        self.links = pd.DataFrame(self.summary["links"])
        self.flow_series = self._build_flow_series(output["flow_series"])
        self.queue_series = self._build_queue_series(output["queue_series"])

    # ---- summary ----------------------------------------------------------------------

    def _build_summary(self, core: Mapping[str, Any]) -> Dict[str, Any]:
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
            flows.append(flow)
        links = []
        for entry in core["links"]:
            link = dict(entry)
            link["utilization"] = int(link["busy_ps"]) / duration_ps
            link["total_drops_packets"] = sum(int(link[key]) for key, _ in DROP_CAUSES)
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
            total_goodput_bps=sum(8 * int(f["bytes_delivered"]) for f in flows) / duration_s,
            fatpipe_version=_version(),
        )
        return summary

    # ---- time series ------------------------------------------------------------------

    def _names(self, column: List[Any], names: List[str]) -> List[str]:
        """Maps the core's indices to names (accepts names already, for robustness)."""
        return [names[v] if isinstance(v, int) else str(v) for v in column]

    def _build_flow_series(self, cols: Mapping[str, List[int]]) -> pd.DataFrame:
        time_ps = np.asarray(cols["time_ps"], dtype=np.int64)
        df = pd.DataFrame(
            {
                "time_s": time_ps / PS_PER_S,
                "flow": self._names(list(cols["flow"]), self._flow_names),
            }
        )
        # A UDP flow has no window (the core writes -1) and no MSS: NaN for both.
        mss = {f["name"]: f["tcp"]["mss_bytes"] if "tcp" in f else np.nan for f in self.scenario["flows"]}
        cwnd = np.asarray(cols["cwnd_segments"], dtype=np.float64)
        df["cwnd_segments"] = np.where(cwnd < 0, np.nan, cwnd)
        df["cwnd_bytes"] = df["cwnd_segments"].to_numpy() * df["flow"].map(mss).to_numpy(dtype=np.float64)
        ssthresh = np.asarray(cols["ssthresh_segments"], dtype=np.float64)
        df["ssthresh_segments"] = np.where(ssthresh < 0, np.nan, ssthresh)
        df["outstanding_bytes"] = np.asarray(cols["outstanding_bytes"], dtype=np.int64)
        srtt = np.asarray(cols["srtt_ps"], dtype=np.float64)
        df["srtt_s"] = np.where(srtt < 0, np.nan, srtt / PS_PER_S)
        df["delivered_bytes"] = np.asarray(cols["delivered_bytes"], dtype=np.int64)
        df["sent_bytes"] = np.asarray(cols["sent_bytes"], dtype=np.int64)
        df["throughput_bps"] = _rate_per_interval(df, "flow", "delivered_bytes", time_ps)
        df["send_rate_bps"] = _rate_per_interval(df, "flow", "sent_bytes", time_ps)
        # Columns only some runs have (an emulation's TCP_INFO series), after the others:
        # picoseconds as seconds, and a negative value (not measured) as NaN.
        read_above = {"time_ps", "flow", "cwnd_segments", "ssthresh_segments", "outstanding_bytes", "srtt_ps", "delivered_bytes", "sent_bytes"}
        for key in (k for k in cols if k not in read_above):
            values = np.asarray(cols[key], dtype=np.float64)
            values = np.where(values < 0, np.nan, values)
            if key.endswith("_ps"):
                df[f"{key[:-3]}_s"] = values / PS_PER_S
            else:
                df[key] = values if np.isnan(values).any() else values.astype(np.int64)
        return df[FLOW_SERIES_COLUMNS + [c for c in df.columns if c not in FLOW_SERIES_COLUMNS]]

    def _build_requests(self, cols: Optional[Mapping[str, List[int]]]) -> pd.DataFrame:
        if not cols or not cols.get("flow"):
            return pd.DataFrame({c: [] for c in REQUEST_COLUMNS})
        df = pd.DataFrame({"flow": self._names(list(cols["flow"]), self._flow_names)})
        for column in ("request", "object", "connection", "size_bytes"):
            df[column] = np.asarray(cols[column], dtype=np.int64)
        for column in ("start", "request_sent", "first_byte", "last_byte", "response_time"):
            df[f"{column}_s"] = np.asarray(cols[f"{column}_ps"], dtype=np.int64) / PS_PER_S
        df["throughput_bps"] = df["size_bytes"] * 8 / df["response_time_s"]
        return df[REQUEST_COLUMNS]

    def _build_queue_series(self, cols: Mapping[str, List[int]]) -> pd.DataFrame:
        time_ps = np.asarray(cols["time_ps"], dtype=np.int64)
        df = pd.DataFrame(
            {
                "time_s": time_ps / PS_PER_S,
                "link": self._names(list(cols["link"]), self._link_names),
            }
        )
        for column in ("queue_packets", "queue_bytes", "drops_packets", "departed_bytes"):
            df[column] = np.asarray(cols[column], dtype=np.int64)
        rate = {link["name"]: link["rate_bps"] for link in self.scenario["links"]}
        departed_bps = _rate_per_interval(df, "link", "departed_bytes", time_ps)
        # departed_bytes counts wire bytes (framing included), so a link sending back to back
        # shows 1.0; a frame straddling a sample boundary can push one interval slightly
        # above 1 and the next below. Not clipped: clipping would hide that.
        df["utilization"] = departed_bps / df["link"].map(rate).to_numpy(dtype=np.float64)
        # Time a packet arriving at the sample would wait: the queued IP bytes at the rate.
        df["queue_delay_s"] = df["queue_bytes"] * 8 / df["link"].map(rate).to_numpy(dtype=np.float64)
        return df[QUEUE_SERIES_COLUMNS]

    @classmethod
    def read(cls, outdir: Union[str, "os.PathLike[str]"]) -> "Result":
        """The result a run wrote into ``outdir`` (``fatpipe run -o``, :meth:`write`):
        ``summary.json``, ``scenario.json`` and the Parquet series; captures found there
        are listed in ``capture_files``. Raises ``FileNotFoundError`` naming what is
        missing."""
        out = Path(outdir)
        missing = [n for n in ("summary.json", "scenario.json", "flow_series.parquet", "queue_series.parquet")
                   if not (out / n).is_file()]
        if missing:
            raise FileNotFoundError(f"{out}: not a fatpipe run directory (missing {', '.join(missing)})")
        self = cls.__new__(cls)
        self.scenario = json.loads((out / "scenario.json").read_text(encoding="utf-8"))
        self.summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        self.plots = True
        self._flow_names = [f["name"] for f in self.scenario["flows"]]
        self._link_names = [link["name"] for link in self.scenario["links"]]
        self.flows = _flow_table(self.summary["flows"])
        self.links = pd.DataFrame(self.summary["links"])
        self.groups = pd.DataFrame(self.summary.get("groups", []), columns=GROUP_COLUMNS)
        requests = out / "requests.parquet"
        self.requests = pd.read_parquet(requests) if requests.is_file() else pd.DataFrame(columns=REQUEST_COLUMNS)
        self.flow_series = pd.read_parquet(out / "flow_series.parquet")
        self.queue_series = pd.read_parquet(out / "queue_series.parquet")
        self.capture_files = {
            c["name"]: str(out / c["path"]) for c in self.summary.get("captures", []) if (out / c["path"]).is_file()
        }
        return self

    # ---- access -----------------------------------------------------------------------

    def series(self, name: str) -> pd.DataFrame:
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
        return f"<Result {self.summary['name']!r}: {self.summary['duration_s']:g} s; {flows}>"

    # ---- files ------------------------------------------------------------------------

    def write(self, outdir: Union[str, "os.PathLike[str]"], plots: Optional[bool] = None) -> Path:
        """Writes the run's files into ``outdir`` (created if needed) and returns its path.

        Files: ``summary.json``, ``scenario.json`` (both sorted, indented, newline-ended),
        ``flow_series.parquet``, ``queue_series.parquet``, ``requests.parquet`` (with HTTP
        flows), ``groups.parquet`` (with parallel streams), and, if ``plots`` (default: the
        scenario's ``output.plots``), ``cwnd.png`` and ``throughput.png``. Every file is a
        function of the scenario and seed only -- no clock time, no absolute paths -- so
        two runs of the same scenario give identical files.
        """
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        _write_json(out / "summary.json", self.summary)
        _write_json(out / "scenario.json", self.scenario)
        _write_parquet(out / "flow_series.parquet", self.flow_series)
        _write_parquet(out / "queue_series.parquet", self.queue_series)
        for name, path in self.capture_files.items():
            target = out / f"{name}.pcap"
            if Path(path).resolve() != target.resolve():
                shutil.copyfile(path, target)
        if any(f["source"]["kind"] == "http" for f in self.scenario["flows"]):
            _write_parquet(out / "requests.parquet", self.requests)
        if len(self.groups):
            _write_parquet(out / "groups.parquet", self.groups)
        if self.plots if plots is None else plots:
            from .plots import plot_cwnd, plot_throughput

            plot_cwnd(self, out / "cwnd.png")
            plot_throughput(self, out / "throughput.png")
        return out


def _flow_table(flows: List[Dict[str, Any]]) -> pd.DataFrame:
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


def _rate_per_interval(df: pd.DataFrame, key: str, column: str, time_ps: np.ndarray) -> np.ndarray:
    """bits/s over the interval ending at each sample, per group (flow or link); 0 at each
    group's first sample. Uses each row's own interval, so a last, shorter interval (when the
    duration is not a multiple of the sample interval) is still right."""
    grouped = pd.DataFrame({key: df[key], "t": time_ps, "v": df[column].to_numpy(dtype=np.int64)})
    g = grouped.groupby(key, sort=False)
    dt_ps = g["t"].diff().to_numpy(dtype=np.float64)
    dv = g["v"].diff().to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = dv * 8 * PS_PER_S / dt_ps
    return np.where(np.isfinite(rate), rate, 0.0)


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, sort_keys=True, indent=2, allow_nan=False) + "\n"
    path.write_text(text, encoding="utf-8")


def _write_parquet(path: Path, df: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    # Drop the pandas metadata (it records the pandas version): the file then depends only
    # on the data and the pyarrow version.
    table = table.replace_schema_metadata(None)
    pq.write_table(table, path, compression="snappy")
