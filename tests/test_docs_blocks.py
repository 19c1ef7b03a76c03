"""The README's and docs' code blocks run as written (issue 22: the README's own sweep had
half its points invalid, and nothing ran the documents' code to notice).

Every fenced block tagged ``sh``, ``python`` or ``toml`` in README.md and docs/*.md is
checked, unless the line before its fence says why not::

    <!-- docs-test: skip: needs root and real time -->

- ``python``: written to a file and run with this interpreter, in a scratch directory
  holding ``examples/`` (the blocks' paths are relative to the repository); it must exit 0
  and print no traceback.
- ``sh``: run by ``bash -e`` in the same kind of directory, with this interpreter's
  ``fatpipe`` first on PATH.
- ``toml``: a scenario must validate; a sweep (it has ``base``) must have no invalid point;
  a block marked ``<!-- docs-test: fragment -->`` is a piece of a scenario, merged into
  examples/reno-100M-40ms.toml (tables key by key, a ``[flows...]`` table into the first
  flow) and validated.

A skipped block must give its reason, and a marker must stand before a block: the markers
are read from the documents, so a block cannot be left out silently.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

import pytest

pytest.importorskip("fatpipe._core")
from fatpipe.scenario import load_scenario, read_scenario_bytes  # noqa: E402
from fatpipe.sweeps import Sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
LANGUAGES = ("sh", "python", "toml")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|fragment)\s*(?::\s*(.*?))?\s*-->\s*$")


class Block(NamedTuple):
    where: str
    language: str
    code: str
    marker: Optional[str]
    reason: str


def _blocks() -> List[Block]:
    out = []
    for doc in DOCUMENTS:
        text = doc.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            if m.group(1) not in LANGUAGES:
                continue
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            out.append(Block(f"{doc.relative_to(ROOT)}:{line}", m.group(1), m.group(2),
                             marker.group(1) if marker else None, (marker.group(2) or "") if marker else ""))
    return out


BLOCKS = _blocks()


def test_every_marker_stands_before_a_block_and_every_skip_says_why():
    for doc in DOCUMENTS:
        text = doc.read_text(encoding="utf-8")
        markers = [m for m in re.finditer(r"<!--\s*docs-test:.*?-->", text)]
        for m in markers:
            after = text[m.end():].lstrip(" ")
            assert after.startswith("\n```"), f"{doc.name}: {m.group(0)} does not stand right before a code block"
            assert _MARKER.search(m.group(0)), f"{doc.name}: {m.group(0)}: expected skip: REASON or fragment"
    skipped = [b for b in BLOCKS if b.marker == "skip"]
    assert all(len(b.reason) > 10 for b in skipped), [b.where for b in skipped if len(b.reason) <= 10]
    # The checks below have something to check.
    assert {b.language for b in BLOCKS if b.marker != "skip"} == set(LANGUAGES)


def _scratch(tmp_path: Path) -> Path:
    """A directory with the repository's examples, as the blocks expect."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


RUN = [b for b in BLOCKS if b.language in ("sh", "python") and b.marker != "skip"]


@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_code_block_runs(block, tmp_path):
    cwd = _scratch(tmp_path)
    if block.language == "python":
        script = cwd / "block.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-e", "-c", block.code]
    done = subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, f"{block.where}:\n{done.stderr[-3000:]}"
    # A sweep in a block must run every point (the README's once had two of four invalid).
    for failures in cwd.rglob("failures.json"):
        assert json.loads(failures.read_text()) == [], f"{block.where}: {failures.read_text()[:2000]}"


def _merge(base: Dict[str, Any], fragment: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in fragment.items():
        old = out.get(key)
        if isinstance(old, list) and old and isinstance(old[0], dict) and isinstance(value, dict):
            out[key] = [_merge(old[0], value)] + old[1:]  # [flows.tcp] into the first flow
        elif isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge(old, value)
        else:
            out[key] = value
    return out


TOML = [b for b in BLOCKS if b.language == "toml" and b.marker != "skip"]


@pytest.mark.parametrize("block", TOML, ids=[b.where for b in TOML])
def test_toml_block_is_valid(block, tmp_path, monkeypatch):
    doc = read_scenario_bytes(block.code.encode("utf-8"))
    if block.marker == "fragment":
        doc = _merge(read_scenario_bytes((ROOT / "examples" / "reno-100M-40ms.toml").read_bytes()), doc)
        # A fragment's paths (a BPF program's) are relative to the example it belongs in.
        monkeypatch.chdir(ROOT / "examples")
    if "base" in doc:
        # A sweep file: its base is relative to the file, which the docs place in examples/sweeps/.
        folder = tmp_path / "examples" / "sweeps"
        folder.mkdir(parents=True)
        for example in (ROOT / "examples").glob("*.toml"):
            (tmp_path / "examples" / example.name).symlink_to(example)
        path = folder / "block.toml"
        path.write_text(block.code, encoding="utf-8")
        points = Sweep.from_file(path).points()
        invalid = [p for p in points if not p.valid]
        assert not invalid, f"{block.where}: {len(invalid)} of {len(points)} points invalid; the first: {invalid[0].error}"
        return
    load_scenario(doc)
