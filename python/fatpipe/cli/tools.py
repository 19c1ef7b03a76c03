"""`fatpipe` subcommands that help write scenarios rather than run them: ``validate`` (a
scenario checked, or normalized), ``reference`` and ``algorithms`` (the scenario format and
the congestion controls, in Markdown), ``schema`` (the scenario format as JSON Schema, for
editors), ``examples`` (the example scenarios shipped in the package) and ``completion``
(shell completion for bash, zsh and fish, generated from the command line's own parser)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..scenario import format_reference, update_reference
from ..units import format_duration
from .common import EXIT_OK, CliError, add_command, load_scenario

__all__ = [
    "add_validate", "add_reference", "add_algorithms", "add_schema", "add_examples", "add_completion",
    "example_files", "completion_script",
]

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
SHELLS = ("bash", "zsh", "fish")


def add_validate(commands: Any) -> None:
    p = add_command(
        commands,
        "validate",
        _cmd_validate,
        help="check a scenario without running it",
        description="Check a scenario file; print OK, or with --json the normalized scenario "
        "the core would receive (all defaults filled in, base units).",
    )
    p.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file, or - to read it from standard input")
    p.add_argument("--json", action="store_true", help="print the normalized scenario as JSON")


def add_reference(commands: Any) -> None:
    p = add_command(
        commands,
        "reference",
        _cmd_reference,
        help="print the reference of every scenario key",
        description="Print every scenario key with its type, default and the default's source "
        "(Markdown; the same text as docs/scenario.md).",
    )
    p.add_argument(
        "--update",
        metavar="FILE.md",
        help="instead of printing, rewrite the generated block of FILE.md (docs/scenario.md)",
    )


def add_algorithms(commands: Any) -> None:
    add_command(
        commands,
        "algorithms",
        _cmd_algorithms,
        help="list congestion control presets, algorithms and modifiers",
        description="List every preset (cc = \"name\"), every algorithm with its parameters, "
        "defaults and their sources, and the modifiers any algorithm can take (Markdown).",
    )


def _cmd_validate(args: argparse.Namespace) -> int:
    loaded = load_scenario(args.scenario)
    core = loaded.core
    if args.json:
        print(json.dumps(core, indent=2))
        return EXIT_OK
    flows = len(core["flows"])
    print(
        f"{args.scenario}: OK: scenario {core['name']!r}, {format_duration(core['duration_ps'])}, "
        f"{len(core['nodes'])} nodes, {len(core['links'])} links, {flows} flow{'s' if flows != 1 else ''}, "
        f"time series every {format_duration(core['sample_interval_ps'])}"
    )
    return EXIT_OK


def _cmd_reference(args: argparse.Namespace) -> int:
    if args.update is None:
        sys.stdout.write(format_reference())
        return EXIT_OK
    try:
        changed = update_reference(args.update)
    except ValueError:
        raise CliError(f"{args.update}: the generated-reference markers are missing") from None
    except OSError as err:
        raise CliError(f"{args.update}: {err.strerror or err}") from None
    print(f"{args.update}: {'updated' if changed else 'up to date'}")
    return EXIT_OK


def _cmd_algorithms(args: argparse.Namespace) -> int:
    from ..scenario import format_algorithms

    sys.stdout.write(format_algorithms())
    return EXIT_OK



def add_schema(commands: Any) -> None:
    p = add_command(
        commands,
        "schema",
        _cmd_schema,
        help="print the scenario format as JSON Schema (editor completion and checks)",
        description="Print the scenario format as JSON Schema (draft 2020-12), generated from the "
        "field definitions that validate scenarios. Editors use it for completion and to flag "
        "misspelled keys in TOML files: see the README (taplo, Even Better TOML).",
    )
    p.add_argument("-o", "--output", metavar="FILE.json", help="write it to FILE.json instead of printing")


def add_examples(commands: Any) -> None:
    p = add_command(
        commands,
        "examples",
        _cmd_examples,
        help="list the example scenarios, print one, or copy it",
        description="Without NAME, list the example scenarios shipped with fatpipe. With NAME, "
        "print it, or with -o copy it (to a file, or into a directory).",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help='an example, such as "reno-100M-40ms" or "sweeps/..."')
    p.add_argument("-o", "--output", metavar="PATH", help="copy the example there instead of printing it")


def add_completion(commands: Any, root: argparse.ArgumentParser) -> None:
    """``fatpipe completion``, whose scripts list the commands and options of ``root``, the
    whole command line's parser (read when the command runs: every command is in it then)."""
    p = add_command(
        commands,
        "completion",
        lambda args: _cmd_completion(args, root),
        help="print a shell completion script (bash, zsh, fish)",
        description="Print the completion script for SHELL. bash: eval \"$(fatpipe completion bash)\" "
        "in ~/.bashrc; zsh: eval \"$(fatpipe completion zsh)\" in ~/.zshrc; fish: fatpipe "
        "completion fish > ~/.config/fish/completions/fatpipe.fish.",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell")


# ---- schema ------------------------------------------------------------------------------


def _cmd_schema(args: argparse.Namespace) -> int:
    from ..scenario.jsonschema import user_schema

    text = json.dumps(user_schema(), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as err:
        raise CliError(f"{args.output}: cannot write: {err.strerror or err}") from None
    print(f"schema: {args.output}")
    return 0


# ---- examples ------------------------------------------------------------------------------


def example_files() -> Dict[str, Path]:
    """Every shipped example by name: the file's path under examples/ without ``.toml``."""
    return {p.relative_to(EXAMPLES_DIR).with_suffix("").as_posix(): p for p in sorted(EXAMPLES_DIR.rglob("*.toml"))}


def _first_comment(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def _cmd_examples(args: argparse.Namespace) -> int:
    examples = example_files()
    if args.name is None:
        if args.output is not None:
            raise CliError("-o needs an example NAME (see `fatpipe examples`)")
        width = max(len(n) for n in examples)
        for name, path in examples.items():
            print(f"{name:<{width}}  {_first_comment(path)}")
        return 0
    name = args.name[:-5] if args.name.endswith(".toml") else args.name
    if name not in examples:
        raise CliError(f"{args.name!r} is not allowed: expected an example, one of: {', '.join(examples)}")
    path = examples[name]
    if args.output is None:
        sys.stdout.write(path.read_text(encoding="utf-8"))
        return 0
    target = Path(args.output)
    if target.is_dir():
        target = target / path.name
    if target.exists():
        raise CliError(f"{target}: exists; not overwritten")
    try:
        shutil.copyfile(path, target)
    except OSError as err:
        raise CliError(f"{target}: cannot write: {err.strerror or err}") from None
    note = " (its base scenario is named relative to it: copy that too)" if name.startswith("sweeps/") else ""
    print(f"{name}: {target}{note}")
    return 0


# ---- completion ----------------------------------------------------------------------------


def _commands(parser: argparse.ArgumentParser) -> List[Tuple[str, str, List[str], List[str]]]:
    """(subcommand, help, its options, its choices) read from the parser itself, so the
    completion follows every command and flag as they change."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    out = []
    for name, p in sub.choices.items():
        options = [o for a in p._actions for o in a.option_strings if o.startswith("--")]
        choices = [str(c) for a in p._actions if not a.option_strings and a.choices for c in a.choices]
        out.append((name, helps.get(name, ""), options, choices))
    return out


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell`` of the command line that ``parser`` parses."""
    commands = _commands(parser)
    names = " ".join(example_files())
    if shell == "bash":
        opts = "\n".join(f'        {name}) opts="{" ".join(options)}" ;;' for name, _, options, _ in commands)
        words = "\n".join(f'        {name}) words="{" ".join(choices)}" ;;' for name, _, _, choices in commands if choices)
        return f"""# fatpipe completion for bash: eval "$(fatpipe completion bash)"
_fatpipe() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmd="${{COMP_WORDS[1]}}" opts="" words=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "{' '.join(c[0] for c in commands)} --help --version" -- "$cur"))
        return
    fi
    case "$cmd" in
{opts}
    esac
    case "$cmd" in
{words}
        examples) words="{names}" ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
    elif [ -n "$words" ]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o filenames -F _fatpipe fatpipe
"""
    if shell == "zsh":
        lines = "\n".join(f"        '{name}:{_quote(h, chr(39))}'" for name, h, _, _ in commands)
        cases = "\n".join(
            f"        {name}) compadd -- {' '.join(options + choices + (names.split() if name == 'examples' else []))}; "
            "_files ;;"
            for name, _, options, choices in commands
        )
        return f"""#compdef fatpipe
# fatpipe completion for zsh: eval "$(fatpipe completion zsh)"
_fatpipe() {{
    local -a commands
    commands=(
{lines}
    )
    if (( CURRENT == 2 )); then
        _describe 'command' commands
        return
    fi
    case "$words[2]" in
{cases}
    esac
}}
compdef _fatpipe fatpipe
"""
    rows = [f"complete -c fatpipe -n __fish_use_subcommand -f -a {name} -d '{_quote(h, chr(39))}'"
            for name, h, _, _ in commands]
    for name, _, options, choices in commands:
        rows += [f"complete -c fatpipe -n '__fish_seen_subcommand_from {name}' -l {o[2:]}" for o in options]
        words = choices + (names.split() if name == "examples" else [])
        rows += [f"complete -c fatpipe -n '__fish_seen_subcommand_from {name}' -f -a '{w}'" for w in words]
    return "# fatpipe completion for fish: fatpipe completion fish > ~/.config/fish/completions/fatpipe.fish\n" + "\n".join(rows) + "\n"


def _quote(text: str, quote: str) -> str:
    return text.replace(quote, "")


def _cmd_completion(args: argparse.Namespace, root: argparse.ArgumentParser) -> int:
    sys.stdout.write(completion_script(args.shell, root))
    return 0
