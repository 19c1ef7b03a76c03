"""What `fatpipe run` and `fatpipe sweep --dry-run` print on the terminal: plain-text
tables of a run's flows and links (the HTML report has its own, `report.py`)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .units import PS_PER_S, format_duration, format_rate


def percent(fraction: float) -> str:
    """A utilization (or any fraction) as the terminal and the report show it: "66.6%"."""
    return f"{100 * fraction:.1f}%"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> List[str]:
    """Plain-text columns: the first left-aligned, the rest right-aligned."""
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(parts).rstrip())
    return lines


def summary_table(summary: dict, wall_s: float, scenario: Optional[dict] = None) -> str:
    """The run's summary as text; ``scenario`` (normalized) tells which drop causes the
    links can have."""
    duration_s = summary["duration_s"]
    speed = f", {duration_s / wall_s:.3g}x real time" if wall_s > 0 else ""
    if "emulation" in summary:
        head = (f"{summary['name']}: {duration_s:g} s emulated with Linux {summary['emulation']['kernel']} "
                f"({wall_s:.1f} s wall with setup), {summary['events']:,} link events, seed {summary['seed']}")
    elif "probe" in summary:
        p = summary["probe"]
        head = (f"{summary['name']}: {duration_s:g} s probed between {p['controller']['hostname']} ({p['controller']['address']}) "
                f"and {p['daemon']['hostname']} ({p['daemon']['address']}) ({wall_s:.1f} s wall with setup)")
    else:
        head = (f"{summary['name']}: {duration_s:g} s simulated in {wall_s:.1f} s wall{speed}, "
                f"{summary['events']:,} events, seed {summary['seed']}{_series(summary)}")
    lines = [head, ""]
    # TCP counts retransmissions and timeouts, UDP lost datagrams: "-" where a flow's
    # transport has no such count; the lost column only when there is a UDP flow, window
    # reductions without loss (local congestion, ECN) only when there were any.
    udp = any(f.get("transport") == "udp" for f in summary["flows"])
    cwr = any(f.get("cwr_entries") for f in summary["flows"])
    keys = ["segments_retransmitted", "timeouts"] + (["datagrams_lost"] if udp else []) + (["cwr_entries"] if cwr else [])
    lines += text_table(
        ["flow", "goodput Mb/s", "retransmits", "timeouts"] + (["lost datagrams"] if udp else [])
        + (["cwnd cuts w/o loss"] if cwr else []),
        [
            [f["name"], f"{f['goodput_bps'] / 1e6:.2f}"] + [f.get(k, "-") for k in keys]
            for f in summary["flows"]
        ],
    )
    lines.append("")
    if summary.get("groups"):
        lines += text_table(
            ["streams", "count", "summed goodput Mb/s", "retransmits"],
            [[g["name"], g["streams"], f"{g['goodput_bps'] / 1e6:.2f}", g["segments_retransmitted"]] for g in summary["groups"]],
        )
        lines.append("")
    http = [f for f in summary["flows"] if f.get("requests_completed") is not None]
    if http and scenario is not None:
        requested = {f["name"]: f["source"]["requests"] for f in scenario["flows"] if f["source"]["kind"] == "http"}
        lines += text_table(
            ["http", "requests done", "connections", "request resends"],
            [[f["name"], f"{f['requests_completed']}/{requested[f['name']]}", f["connections"], f["request_retransmissions"]] for f in http],
        )
        lines.append("")
    if summary["links"]:  # a probe run has none: the path is real
        lines += link_table(summary["links"], scenario)
    return "\n".join(lines)


def _series(summary: dict) -> str:
    """The time series' interval (it is coarser than 10 ms by default in long runs)."""
    interval = summary.get("sample_interval_s")
    return "" if interval is None else f", time series every {format_duration(round(interval * PS_PER_S))}"


def link_table(links: Sequence[dict], scenario: Optional[dict]) -> List[str]:
    """Rate, utilization and drops per link. Without RED or impairments every drop is a
    queue overflow and one "drops" column says it all; otherwise "drops" is the total and
    one column per cause that can occur (configured in the scenario, or counted) follows."""
    # Imported here: rundata.py needs numpy, which validation does without.
    from .rundata import DROP_CAUSES

    configured = set()
    for link in (scenario or {}).get("links", []):
        if link["queue"]["discipline"] == "red":
            configured.add("early_drops_packets")
        for imp in link.get("impairments", []):
            own = {"outage": "outage_drops_packets", "policer": "policer_drops_packets"}
            configured.add(own.get(imp["kind"], "impairment_drops_packets"))
    causes = [
        (key, label)
        for key, label in DROP_CAUSES[1:]
        if key in configured or any(link.get(key, 0) for link in links)
    ]
    headers = ["link", "rate", "utilization", "drops"]
    if causes:
        headers += [DROP_CAUSES[0][1]] + [label for _, label in causes]
    rows = []
    for link in links:
        row = [link["name"], format_rate(link["rate_bps"]), percent(link["utilization"])]
        if causes:
            row += [link["total_drops_packets"], link["drops_packets"]] + [link.get(key, 0) for key, _ in causes]
        else:
            row.append(link["drops_packets"])
        rows.append(row)
    return text_table(headers, rows)


# ---- entry point ---------------------------------------------------------------------
