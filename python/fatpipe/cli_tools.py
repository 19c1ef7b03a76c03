"""`fatpipe` subcommands that help write scenarios rather than run them: ``schema`` (the
scenario format as JSON Schema, for editors), ``examples`` (the example scenarios shipped in
the package) and ``completion`` (shell completion for bash, zsh and fish, generated from the
command line's own parser). Registered by :func:`add_commands` from ``cli.py``."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

__all__ = ["add_commands", "example_files", "completion_script"]

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
SHELLS = ("bash", "zsh", "fish")


def add_commands(commands: Any) -> None:
    p = commands.add_parser(
        "schema",
        help="print the scenario format as JSON Schema (editor completion and checks)",
        description="Print the scenario format as JSON Schema (draft 2020-12), generated from the "
        "field definitions that validate scenarios. Editors use it for completion and to flag "
        "misspelled keys in TOML files: see the README (taplo, Even Better TOML).",
    )
    p.add_argument("-o", "--output", metavar="FILE.json", help="write it to FILE.json instead of printing")
    p.set_defaults(func=_cmd_schema)

    p = commands.add_parser(
        "examples",
        help="list the example scenarios, print one, or copy it",
        description="Without NAME, list the example scenarios shipped with fatpipe. With NAME, "
        "print it, or with -o copy it (to a file, or into a directory).",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help='an example, such as "reno-100M-40ms" or "sweeps/..."')
    p.add_argument("-o", "--output", metavar="PATH", help="copy the example there instead of printing it")
    p.set_defaults(func=_cmd_examples)

    p = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description="Print the completion script for SHELL. bash: eval \"$(fatpipe completion bash)\" "
        "in ~/.bashrc; zsh: eval \"$(fatpipe completion zsh)\" in ~/.zshrc; fish: fatpipe "
        "completion fish > ~/.config/fish/completions/fatpipe.fish.",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p.set_defaults(func=_cmd_completion)


# ---- schema ------------------------------------------------------------------------------


def _cmd_schema(args: argparse.Namespace) -> int:
    from .cli import CliError
    from .scenario.jsonschema import user_schema

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
    from .cli import CliError

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


def completion_script(shell: str) -> str:
    from .cli import _build_parser

    commands = _commands(_build_parser())
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


def _cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.shell))
    return 0
