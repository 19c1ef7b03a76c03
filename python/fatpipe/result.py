"""The results of one run as users get them: :class:`Result` is the run's data
(:class:`~fatpipe.rundata.RunData`: summary, scenario, tables) with its views, the plots it
writes beside its files and the page Jupyter shows.

It stands above the views it uses: ``plots.py`` and ``report.py`` read a
:class:`~fatpipe.rundata.RunData` and never import this module, so a result and its viewers
import one another in one direction only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from .outdir import check_target, discard, publish, staging_dir
from .rundata import RunData

__all__ = ["Result"]


class Result(RunData):
    """One finished run: everything :class:`~fatpipe.rundata.RunData` holds (``summary``,
    ``scenario``, ``flows``, ``flow_series``, ..., :meth:`read`), written with its plots
    (:meth:`write`) and shown in notebooks."""

    def write(
        self, outdir: Union[str, "os.PathLike[str]"], plots: Optional[bool] = None, overwrite: bool = False
    ) -> Path:
        """Writes the run's files into ``outdir`` and returns its path.

        The directory appears complete or not at all: the files are written into a staging
        directory beside it, renamed into place at the end (an interrupt leaves ``outdir``
        as it was). A directory that already holds files is refused
        (:class:`~fatpipe.outdir.OutputExistsError`) unless ``overwrite``, which replaces it
        whole. See :meth:`write_files` for the files.
        """
        own = [Path(p) for p in self.capture_files.values()]  # captures written there already
        out = check_target(outdir, overwrite, own)
        staging = staging_dir(out, overwrite, own)
        try:
            self.write_files(staging, plots)
            return publish(staging, out)
        finally:
            discard(staging)  # gone already once published; releases the lock

    def write_files(self, outdir: Union[str, "os.PathLike[str]"], plots: Optional[bool] = None) -> Path:
        """Writes the run's files into the directory ``outdir`` (created if needed), beside
        whatever it holds; :meth:`write` is the safe way to write a run directory.

        Files: the data (:meth:`~fatpipe.rundata.RunData.write_data`: ``summary.json``,
        ``scenario.json``, the Parquet tables, the captures) and, if ``plots`` (default: the
        scenario's ``output.plots``), ``cwnd.png`` and ``throughput.png``. Every file is a
        function of the scenario and seed only, so two runs of the same scenario give
        identical files.
        """
        out = self.write_data(outdir)
        if self.plots if plots is None else plots:
            # matplotlib is imported only to draw: `fatpipe run --no-plots` never pays for it.
            from .plots import plot_cwnd, plot_throughput

            plot_cwnd(self, out / "cwnd.png")
            plot_throughput(self, out / "throughput.png")
        return out

    def _repr_html_(self) -> str:
        """Jupyter's rich view: the flows and links tables and the cwnd and throughput plots."""
        from .report import notebook_html

        return notebook_html(self)
