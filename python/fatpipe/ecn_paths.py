"""An ECN congestion control on a path whose queues never mark, said before the run (issue 28
acceptance 4).

DCTCP and TCP Prague steer by the fraction of segments a queue marks CE (RFC 8257, RFC
9330): they need a queue on their path that marks at a shallow threshold. Where none can
mark, no echo ever comes; they see only drops and answer each with the classic response,
halving their window as Reno does (Linux tcp_dctcp.c `dctcp_ssthresh` after a loss;
tcp_prague.c likewise), so the run shows Reno, not the algorithm asked for. That is a
legitimate experiment (what DCTCP does on the Internet's drop-tail queues), so it is not
refused: each such flow gets one warning line, printed before the run and kept in
``summary.json``'s ``warnings`` as ``{"flow", "key": "cc", "message"}``.

A queue can mark when it is RED with ``ecn = true``, drop-tail with a ``mark_threshold``,
CoDel, FQ-CoDel, PIE or FQ-PIE with ``ecn = true``, or DualPI2 (which marks ECT(0) in its
classic queue with p_C and ECT(1) in its L4S queue).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .scenario.ecn_algorithms import ECN_NEEDS

__all__ = ["EcnPathWarning", "can_mark", "ecn_warnings"]


class EcnPathWarning(UserWarning):
    """A flow's congestion control needs ECN marks and no queue on its path makes them."""


def can_mark(queue: Mapping[str, Any]) -> bool:
    """Whether a normalized queue (``links[i]["queue"]``) can mark a segment CE."""
    if queue.get("discipline") == "dualpi2":
        return True
    if queue.get("mark_threshold_packets") is not None or queue.get("mark_threshold_bytes") is not None:
        return True
    return bool(queue.get("ecn") or queue.get("pie", {}).get("ecn"))


def ecn_warnings(scenario: Mapping[str, Any], routes: Sequence[Tuple[List[int], List[int]]]) -> List[Dict[str, Any]]:
    """One warning per flow whose algorithm needs ECN marks and whose data route has no
    queue that can mark; ``routes`` are the core's ``flow_routes``."""
    links = scenario.get("links") or []
    out = []
    for i, flow in enumerate(scenario["flows"]):
        algorithm = (flow.get("cc") or {}).get("algorithm")
        if algorithm not in ECN_NEEDS or i >= len(routes):
            continue
        if any(can_mark(links[link]["queue"]) for link in routes[i][0]):
            continue
        message = (f'flow "{flow["name"]}": cc "{algorithm}" reacts to ECN marks, and no queue on its path marks '
                   "(RED with ecn = true, drop-tail's mark_threshold, CoDel, FQ-CoDel, PIE or FQ-PIE with ecn = true, "
                   "DualPI2): it will see only drops and halve its window on each, as Reno does")
        out.append({"flow": flow["name"], "key": "cc", "message": message})
    return out
