"""Reference documentation generated from the schema (docs/scenario.md, `fatpipe
reference`, `fatpipe algorithms`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

from .congestion import CC_ALGORITHMS, format_presets
from .host import _HOST, format_host_elements
from .profiles import format_profiles
from .document import SCENARIO
from .schema import (
    REQUIRED, UNSET, Derived, Field, PathLike, Table, TableArray, Tagged, _toml_literal,
)
from .tcp import _TCP

REFERENCE_BEGIN = "<!-- BEGIN GENERATED REFERENCE: fatpipe reference --update docs/scenario.md -->"
REFERENCE_END = "<!-- END GENERATED REFERENCE -->"


def _default_doc(f: Field) -> str:
    if f.default is REQUIRED:
        return "**required**"
    if f.default is UNSET:
        return "unset"
    if isinstance(f.default, Derived):
        return f.default.text
    if isinstance(f.default, Mapping):
        return "all defaults"
    return f"`{_toml_literal(f.default)}`"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _section(
    title: str, doc: str, table: Table, tag: Optional[Tuple[str, str, str, Optional[str]]] = None
) -> List[str]:
    """One Markdown section: a heading, the table's description, and one row per key."""
    lines = [f"### {title}", ""]
    if doc:
        lines += [doc, ""]
    lines += [
        "| key | type | default | source of the default | meaning |",
        "|---|---|---|---|---|",
    ]
    if tag is not None:
        # The tag's row: its value for this table, and its own default (the table's value
        # only when it is the default: the reference once showed "bernoulli" as the default
        # of every impairment's kind, which is required).
        key, value, meaning, default = tag
        shown = "**required**" if default is None else f"`{json.dumps(default)}`"
        lines.append(f"| `{key}` | string: `{json.dumps(value)}` here | {shown} | | {_md(meaning)} |")
    for f in table.fields:
        lines.append(
            f"| `{f.key}` | {_md(f.kind.type_doc)} | {_md(_default_doc(f))} | {_md(f.source)} | {_md(f.doc)} |"
        )
    return lines + [""]


def _walk(
    title: str, header: str, doc: str, table: Table, tag: Optional[Tuple[str, str, str, Optional[str]]] = None
) -> List[str]:
    lines = _section(title, doc, table, tag)
    for f in table.fields:
        child = f"{header}.{f.key}" if header else f.key
        kind = f.kind
        if isinstance(kind, TableArray) and isinstance(kind.table, Tagged):
            lines += _walk_variants(f"[[{child}]]", child, f.doc, kind.table)
        elif isinstance(kind, TableArray):
            lines += _walk(f"`[[{child}]]`", child, kind.table.doc, kind.table)
        elif isinstance(kind, Tagged):
            lines += _walk_variants(f"[{child}]", child, f.doc, kind)
        elif isinstance(kind, Table):
            lines += _walk(f"`[{child}]`", child, kind.doc, kind)
    return lines


def _walk_variants(header_text: str, child: str, doc: str, kind: Tagged) -> List[str]:
    """One section per variant of a tagged table (``header_text`` is ``[x]`` or ``[[x]]``)."""
    lines: List[str] = []
    for value, variant in kind.variants.items():
        default_note = " (the default)" if value == kind.default_tag else ""
        lines += _walk(
            f"`{header_text}` with `{kind.tag} = {json.dumps(value)}`{default_note}",
            child,
            f"{doc[:1].upper()}{doc[1:]}. {variant.doc}".strip(),
            variant,
            tag=(
                kind.tag,
                value,
                f"{kind.tag_doc}; one of {', '.join(json.dumps(v) for v in kind.variants)}",
                kind.default_tag,
            ),
        )
    return lines


#: The [flows.tcp] keys that modify how any algorithm runs (listed by `fatpipe algorithms`).
MODIFIER_KEYS = (
    "profile", "recovery", "rack", "tlp", "frto", "undo", "dsack", "window_reduction", "adaptive_reordering",
    "max_reordering", "rto_estimator", "limited_transmit", "newreno_impatient", "ssthresh_every_timeout", "bsd_window", "reno_recover_guard", "sack_variant", "fack", "dcr_div", "max_ssthresh", "pacing_gain",
    "initial_window", "no_metrics_save", "no_ssthresh_metrics_save",
)


def format_algorithms() -> str:
    """Every preset, algorithm (with parameters) and modifier, with defaults and sources
    (Markdown), for `fatpipe algorithms`."""
    lines = [
        "## Stack profiles (`[flows.tcp] profile`)",
        "",
        format_profiles(),
        "## Presets (`cc = \"name\"`)",
        "",
        format_presets(),
        "## Algorithms (`[flows.cc]` with `algorithm = \"name\"`)",
        "",
    ]
    for name, alg in CC_ALGORITHMS.items():
        lines += _section(f"`{name}`", alg.table.doc, alg.table) + [""]
    modifiers = Table(
        fields=tuple(f for f in _TCP.fields if f.key in MODIFIER_KEYS),
        doc="Loss recovery and the modifiers any algorithm can take.",
    )
    lines += ["## Modifiers (`[flows.tcp]`)", ""] + _section("", modifiers.doc, modifiers)[2:]
    lines += [
        "## Host elements (`[flows.host]`)",
        "",
        "Off unless a flow's `[flows.host]` turns them on; no profile turns any on yet (the "
        "`linux` profile's hosts are the kernel comparison's at 100 Mb/s, without offloads).",
        "",
        format_host_elements(),
    ] + _section("", _HOST.doc, _HOST)[2:]
    return "\n".join(lines).rstrip() + "\n"


def format_reference() -> str:
    """The reference of every scenario key (Markdown), generated from the schema."""
    return (
        "\n".join(
            _walk("Top level", "", "Keys at the top of the file, before any [table].", SCENARIO)
        ).rstrip()
        + "\n\n### Presets (`cc = \"name\"`)\n\n"
        + "A preset names a congestion control, some with the parameters of a document's tuning; "
        + "keys set in [flows.tcp] override what the name implies.\n\n"
        + format_presets()
        + "\n### Stack profiles (`[flows.tcp] profile`)\n\n"
        + format_profiles()
    )


def update_reference(doc_path: PathLike) -> bool:
    """Rewrites the generated block of ``doc_path`` (between the markers); True if changed."""
    p = Path(doc_path)
    text = p.read_text(encoding="utf-8")
    begin, end = text.index(REFERENCE_BEGIN), text.index(REFERENCE_END)
    new = text[: begin + len(REFERENCE_BEGIN)] + "\n\n" + format_reference() + "\n" + text[end:]
    if new != text:
        p.write_text(new, encoding="utf-8")
        return True
    return False
