"""The TCP stack is chosen in one place (issue 24, section 3, acceptance 4).

``TcpSender`` holds a ``Stack`` value (crates/fatpipe-core/src/tcp/stack/mod.rs), and only
that module looks inside it: everything else calls the ``TcpStack`` methods, so that a
mechanism belongs to the stack that has it instead of being switched on from outside. This
test reads the core's Rust sources and fails where a variant of ``Stack`` is matched or
named in code (not in comments) outside that module.
"""

from __future__ import annotations

import re
from pathlib import Path

CORE_SRC = Path(__file__).resolve().parent.parent / "crates" / "fatpipe-core" / "src"
CHOOSER = CORE_SRC / "tcp" / "stack" / "mod.rs"
VARIANT = re.compile(r"\bStack::(Linux|Rfc)\b")


def _code(line: str) -> str:
    return line.split("//", 1)[0]


def places_that_choose() -> list:
    found = []
    for path in sorted(CORE_SRC.rglob("*.rs")):
        if path == CHOOSER:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if VARIANT.search(_code(line)):
                found.append(f"{path.relative_to(CORE_SRC)}:{number}: {line.strip()}")
    return found


def test_only_the_stack_module_looks_inside_the_stack():
    assert places_that_choose() == []


def test_the_check_sees_a_variant_in_code_and_not_in_a_comment():
    assert VARIANT.search(_code("        if let Stack::Linux(s) = &self.stack {"))
    assert not VARIANT.search(_code("//! The Linux stack (`Stack::Linux`; profiles `linux`)"))
    # The chooser itself names them.
    assert any(VARIANT.search(_code(line)) for line in CHOOSER.read_text().splitlines())
