"""The ``fatpipe`` command.

::

    fatpipe run SCENARIO.toml [-o OUTDIR] [--seed N] [--no-plots] [--quiet]
    fatpipe emulate SCENARIO.toml [-o OUTDIR] [--seed N] [--no-plots] [--quiet]
    fatpipe probe serve [--bind ADDR:PORT] [--secret-file FILE] [--data-ports LOW-HIGH]
    fatpipe probe run HOST[:PORT] SCENARIO.toml [-o OUTDIR] [--simulate] [--secret-file FILE]
    fatpipe compare RUN_A RUN_B [...] [-o OUTDIR] [--labels A,B,...]
    fatpipe validate SCENARIO.toml [--json]
    fatpipe reference [--update docs/scenario.md]
    fatpipe report OUTDIR [-o FILE.html]
    fatpipe plot OUTDIR [--what cwnd,throughput,...] [--format png|svg] [--flow NAME]
    fatpipe sweep SWEEP.toml [-o OUTDIR] [--jobs N] [--executor processes|threads]
                  [--dask local|tcp://host:8786] [--plots] [--dry-run] [--quiet]
    fatpipe bench [--quick] [--case NAME] [--json FILE] [--sweep] [--many-flows]
    fatpipe reproduce NAME [ID] [--quick] [--list] [-o OUTDIR] [--jobs N] [--dask ...] [--docs FILE]

Every user mistake -- an invalid scenario, a missing or unreadable file, a TOML syntax
error, an unwritable output directory, a bad argument -- prints one line
``fatpipe: error: <message>`` on stderr and exits with status 2; never a traceback.
Status 1 means the simulation could not run (the compiled core is missing; an emulation
without root or whose system calls failed; a probe whose daemon could not be reached or
whose test failed), or, for a sweep, that some of its runs failed or were invalid; 130
means interrupted (143: an emulation or a probe ended by SIGTERM).
"""

from .app import entry, main

__all__ = ["main", "entry"]
