"""The sweeps of document 002's window experiments (E2.1 to E2.3), from one table.

Each experiment runs its flows on both paths, with and without the reverse flow, through the
four router builds (Table 1) and a list of windows; the twelve [[sweeps]] blocks of
python/fatpipe/reproductions/ansnet/E2.{1,2,3}.toml are written from the tables below, so
that the builds are written once. `python scripts/ansnet_sweeps.py` rewrites those blocks
in place (the rest of each file is its own); tests/test_reproduce.py checks that the
committed files hold what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Tuple

ANSNET = Path(__file__).resolve().parent.parent / "python" / "fatpipe" / "reproductions" / "ansnet"

#: The routers' builds (document 002 section 4.2, Table 1; the assumptions in document.toml):
#: 2 KB cells; RED with min_th at half the cells and max_th at all of them.
_RED = "max_p = 0.02, w_q = 0.002, gentle = false, wait = false, mean_packet_size = 4148"
BUILDS: Dict[str, str] = {
    "b60": "{ discipline = \"droptail\", cell_size = 2048, limit_cells = 60 }",
    "r60": "{ discipline = \"red\", cell_size = 2048, limit_cells = 60, min_th = 30, max_th = 60, " + _RED + " }",
    "b224": "{ discipline = \"droptail\", cell_size = 2048, limit_cells = 224 }",
    "r200": "{ discipline = \"red\", cell_size = 2048, limit_cells = 200, min_th = 100, max_th = 200, " + _RED + " }",
}

#: The paths, and the reverse flow's window on each (document 002 Table 2).
PATHS: List[Tuple[str, str]] = [("68ms", "256kB"), ("20ms", "64kB")]

#: Windows: 8 kB to 512 kB, in steps of 32 kB from 64 kB (section 4.4); 8 flows up to 256 kB.
_WINDOWS_KB = [8, 16, 32] + list(range(64, 513, 32))

#: Each experiment: its file, its bases' stem (bases/<stem>.toml, <stem>-revb.toml) and its
#: largest window per flow, kB.
EXPERIMENTS: List[Tuple[str, str, int]] = [("E2.1", "1f", 512), ("E2.2", "4f", 512), ("E2.3", "8f", 256)]


def sweeps(flows: str, max_window_kb: int) -> str:
    """The [[sweeps]] blocks of one experiment, as TOML."""
    names = ", ".join(f'"{n}"' for n in BUILDS)
    queues = "".join(f"    {q},\n" for q in BUILDS.values())
    windows = ", ".join(f'"{w}kB"' for w in _WINDOWS_KB if w <= max_window_kb)
    order = [(rtt, rev, revb) for rtt, rev in PATHS for revb in (False, True)]
    out = []
    for rtt, reverse_window, revb in order:
        suffix = "-revb" if revb else ""
        settings = f'"topology.rtt" = "{rtt}"' + (f', "flows[reverse].tcp.rcv_buffer" = "{reverse_window}"' if revb else "")
        out.append(
            "[[sweeps]]\n"
            f'name = "e2-{flows}-{rtt}{suffix}"\n'
            f'base = "bases/ansnet-{flows}{suffix}.toml"\n'
            f"set = {{ {settings} }}\n"
            "[[sweeps.zip]]\n"
            f"name = [{names}]\n"
            '"topology.queue" = [\n'
            f"{queues}"
            "]\n"
            "[[sweeps.zip]]\n"
            f'"flows[f*].tcp.rcv_buffer" = [{windows}]\n'
        )
    return "\n".join(out)


def with_sweeps(text: str, block: str) -> str:
    """``text`` (an experiment's file) with its sweeps, from the first [[sweeps]] to the line
    before [quick], replaced by ``block``."""
    start, end = text.index("[[sweeps]]\n"), text.index("\n[quick]\n")
    return text[:start] + block + text[end:]


def main() -> int:
    for name, flows, max_window in EXPERIMENTS:
        path = ANSNET / f"{name}.toml"
        path.write_text(with_sweeps(path.read_text(encoding="utf-8"), sweeps(flows, max_window)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
