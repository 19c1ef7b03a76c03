"""The Python package's modules import one another without circles (issue 24, section 4).

Every ``import`` and ``from ... import`` in python/fatpipe is read from the source (AST, no
module is imported), wherever it stands: at the top, inside a function (a lazy import), or
under ``if TYPE_CHECKING:``. A lazy or typing-only import still ties the two modules: one
cannot be read, moved or tested without the other. The graph of these imports must be
acyclic: a circle means a module that uses what stands above it (``Result`` importing its
own plots, the subcommands importing ``cli.py``'s private helpers, as before the ``cli/``
package).

Not counted, as Python and import linters do not count them as the importer's choice:
the implicit import of a module's parent packages, and modules loaded by name through
``importlib.import_module`` (fatpipe/__init__.py's lazy attributes).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "python" / "fatpipe"


def module_names(root: Path) -> Dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = ["fatpipe", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_package(name: str, modules: Dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _absolute(name: str, level: int, module: Optional[str], modules: Dict[str, Path]) -> str:
    """``from <level dots><module> import ...`` in module ``name``, as an absolute name."""
    if level == 0:
        return module or ""
    base = name.split(".") if _is_package(name, modules) else name.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _compiled(target: str, modules: Dict[str, Path]) -> bool:
    """Whether ``target`` is a compiled extension module of the package (fatpipe._core)."""
    parent, _, leaf = target.rpartition(".")
    return parent in modules and _is_package(parent, modules) and any(modules[parent].parent.glob(f"{leaf}.*.so"))


def _known(target: str, modules: Dict[str, Path]) -> Optional[str]:
    """The package's own module (in Python) that importing ``target`` loads, or None (another
    package, or the compiled core)."""
    if _compiled(target, modules):
        return None
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def imports_of(name: str, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that module ``name`` imports, anywhere in its source."""
    tree = ast.parse(modules[name].read_text(encoding="utf-8"), filename=str(modules[name]))
    found: Set[str] = set()
    for node in ast.walk(tree):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, node.level, node.module, modules)
            # `from pkg import mod` imports the submodule; `from mod import name`, the module.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules or _compiled(f"{base}.{alias.name}", modules)
                       else base for alias in node.names]
        for target in targets:
            known = _known(target, modules)
            if known is not None and known != name:
                found.add(known)
    return found


def import_graph(root: Path = PACKAGE_DIR) -> Dict[str, Set[str]]:
    modules = module_names(root)
    return {name: imports_of(name, modules) for name in modules}


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        # Recursive: the package's import chains are a few dozen modules deep at most.
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_reader_sees_lazy_and_typing_imports(tmp_path: Path) -> None:
    # A small package whose only circle runs through an import inside a function and one
    # under TYPE_CHECKING: the check must see both, or it could not fail.
    pkg = tmp_path / "fatpipe"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.b import B\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("import fatpipe.a\nfrom fatpipe import sub\n")
    graph = import_graph(pkg)
    assert graph["fatpipe.a"] == {"fatpipe.sub.b"}
    assert graph["fatpipe.sub.b"] == {"fatpipe.c"}
    assert graph["fatpipe.c"] == {"fatpipe.a", "fatpipe.sub"}
    assert circles(graph) == [["fatpipe.a", "fatpipe.c", "fatpipe.sub.b"]]


def test_the_package_has_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 50, "the package's modules were not found"
    found = circles(graph)
    lines = [
        " -> ".join(c) + ": " + "; ".join(f"{m} imports {', '.join(sorted(graph[m] & set(c)))}" for m in c)
        for c in found
    ]
    assert not found, "import circles in python/fatpipe:\n" + "\n".join(lines)
