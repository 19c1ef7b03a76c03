"""``fatpipe reproduce``: rerun a source document's experiments and compare fatpipe's
results with what the document reports.

The experiments are data (``python/fatpipe/reproductions/<name>/``, read by
:mod:`.catalog`); running one goes through the sweep machinery (:mod:`.runner`), fatpipe's
values come from the runs' summaries (:mod:`.evaluate`), and :mod:`.figures` and
:mod:`.report` write the analogues of the document's figures and the comparison files.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .catalog import CatalogError, Document, documents

__all__ = ["reproduce", "documents", "CatalogError", "ALL"]

#: The name that runs every document.
ALL = "all"


def select(name: str, experiment: Optional[str], root: Optional[Path] = None) -> List[Tuple[Document, List[str]]]:
    """The documents and experiment ids a command names; raises :class:`CatalogError`.
    ``root`` is the folder of reproductions (default: the package's)."""
    from .catalog import CatalogError, documents

    known = documents(root) if root is not None else documents()
    if name == ALL:
        if experiment is not None:
            raise CatalogError(f"{experiment}: an experiment id needs a document name, not {ALL!r}")
        return [(d, list(d.experiments)) for d in known.values()]
    if name not in known:
        raise CatalogError(f"{name!r} is not a reproduction; known: {', '.join(known)} (or {ALL!r})")
    doc = known[name]
    if experiment is None:
        return [(doc, list(doc.experiments))]
    if experiment not in doc.experiments:
        raise CatalogError(f"{experiment!r} is not an experiment of {name}: {', '.join(doc.experiments)}")
    return [(doc, [experiment])]


def reproduce(
    name: str,
    experiment: Optional[str] = None,
    *,
    outdir: Optional[Any] = None,
    quick: bool = False,
    jobs: Optional[int] = None,
    executor: str = "processes",
    dask: Optional[str] = None,
    progress: bool = False,
    report: Optional[Callable[[str], None]] = None,
    catalog: Optional[Path] = None,
) -> List[Tuple[Document, List[Any], Dict[str, Any], Path]]:
    """Runs a document's experiments (or one, or every document's with ``name = "all"``)
    and writes the comparisons under ``outdir/<document>/``; returns, per document, its
    outcomes and comparison data. Finished runs found in ``outdir`` are reused. ``catalog``
    is the folder of reproductions (default: the package's)."""
    from .report import counts_line, write_document
    from .runner import run_experiment

    say = report or (lambda _: None)
    root = Path(outdir) if outdir is not None else Path("runs") / ("reproduce-quick" if quick else "reproduce")
    out = []
    for doc, ids in select(name, experiment, catalog):
        target = root / doc.name
        target.mkdir(parents=True, exist_ok=True)
        done: Dict[Tuple[str, str], Any] = {}
        outcomes = []
        for exp_id in ids:
            started = time.perf_counter()
            outcome = run_experiment(doc, doc.experiments[exp_id], target, quick=quick, jobs=jobs, executor=executor,
                                     dask=dask, progress=progress, done=done)
            failed = f", {outcome.failed} failed" if outcome.failed else ""
            say(f"{doc.name} {exp_id} {outcome.experiment.title}: {counts_line(outcome.counts)} "
                f"({outcome.runs} runs{failed}, {time.perf_counter() - started:.0f} s)")
            outcomes.append(outcome)
        if len(ids) == len(doc.experiments):
            # The document's comparison covers all of its experiments; one alone leaves it be.
            data = write_document(doc, outcomes, target)
            say(f"{doc.name}: {counts_line(data['counts'])}; {target / 'comparison.md'}")
        else:
            from .report import document_json

            data = document_json(doc, outcomes)
            say(f"{doc.name} {', '.join(ids)}: {target / ids[0] / 'comparison.md'}")
        out.append((doc, outcomes, data, target))
    return out


def __getattr__(name: str) -> Any:
    # The catalog is read on first use: importing the package (to select, or for its ALL)
    # must not read every reproduction's files (issue 16).
    if name in ("CatalogError", "Document", "documents"):
        from . import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
