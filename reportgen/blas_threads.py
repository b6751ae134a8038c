"""numpy imported with one BLAS thread in reportgen's own processes.

reportgen does no large linear algebra. OpenBLAS (numpy's wheels) starts one thread per core when numpy is
imported, and those threads spin about 0.1 s before they sleep: 0.12 CPU s of another core per process on
this project's 2-core machine, taken from whatever else runs then (DuckDB's threads, the traces thread, a
Dask worker, the page's worker process). The variable is set only for the import and removed after it, so
the processes reportgen starts for the user (``record``'s command, a Jupyter kernel) get the user's
environment unchanged; where the user set a thread count, it is theirs.
"""

from __future__ import annotations

import os
import sys

# What OpenBLAS reads for its thread count, in its own order of precedence; any of them set by the user wins.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def import_numpy_with_one_blas_thread() -> None:
    """Import numpy now (unless it is imported already): with ``OPENBLAS_NUM_THREADS=1``, or with the thread
    count the user chose. The environment is as before when this returns. Imported either way, so that what
    the command line freezes next (``garbage_collector``) holds numpy whatever the environment."""
    if "numpy" in sys.modules:
        return
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        import numpy  # noqa: F401
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
