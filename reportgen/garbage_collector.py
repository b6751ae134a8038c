"""How reportgen's work uses Python's cyclic garbage collector: paused while a decoder builds a tree that
cannot hold a cycle, and, in reportgen's own processes, the objects that imports made kept out of its scans.

The collector starts a young collection every ~700 container objects allocated and not yet freed, and a
full one, which walks every tracked object of the process, as the survivors pile up. Decoding a trace
builds a tree of dicts and lists that all survive until the decode ends, so for six real ranks (15 MB of
JSON each) orjson's decode started 93 collections of the older generations, 6 of them full ones walking
the growing tree (63 ms), and none could find anything: decoded JSON holds no reference cycle (its objects
are still freed by reference counting as usual). ``paused()`` stops the collector while a trace file is
read and converted to columns (``readers.trace_files.read_trace_file``, the framework reader) and around
every decode; it nests and spans threads (the collector runs again when the last pause ends, if it ran
before the first).

A full collection also walks what the imports made, alive until the process ends: 10-20 thousand objects
after numpy, ~60 thousand in a Dask worker (Dask and the trace reader). With decoding paused, a worker's
task still ran about one full collection (~20 ms of a ~0.37 s rank; ~2 ms with those objects frozen).
``freeze_imported_objects`` moves them to a generation the collector never scans (``gc.freeze``); almost
nothing is garbage at that point (a ``gc.collect()`` after these imports frees no object), so no
collection runs first. Only processes reportgen owns freeze: the command line's own process (``cli.main``
without ``argv``, after numpy's import); the local Dask workers' fork server (``readers.fork_server_heap``),
whose workers are forked with the frozen objects and so also leave those pages unwritten by their
collections (copy-on-write); and the page's worker process after its warm-up (``render.worker``: ~78
thousand objects; a medium page's one full collection took 40 ms of its 0.56 CPU s). That warm-up runs
``paused()`` too: its imports' ~240 collections cost 0.04-0.06 CPU s and would free ~4,900 of ~160 thousand
objects (1.1 MB, kept instead until the process ends after its one page). A library caller's
process, a test that calls ``main(argv)``, or a Jupyter kernel keep their collector as it was. Before an
interpreter teardown the command line thaws them (``thaw_imported_objects``): the teardown's collections
finalize objects that only a reference cycle keeps alive, which a frozen one would never be.

Measured together (``bench_dask_ranks.py --distinct --base``, 24 real ranks, 8 interleaved rounds): one
process 10.32 -> 9.82 s, ``--scheduler local:2`` 7.12 -> 6.22 s (its workers' task CPU 11.2 -> 9.7 s).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_pause_lock = threading.Lock()
_pauses = 0  # pauses running now, in any thread
_resume = False  # the collector was running when the first of them began


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector stopped while the block runs (decoding a tree without cycles), then as before."""
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


def freeze_imported_objects() -> None:
    """Move every object tracked now out of the collector's scans, until ``thaw_imported_objects``."""
    gc.freeze()


def freeze_long_lived_objects() -> bool:
    """In a process that froze its imports (``freeze_imported_objects``: reportgen's own), move what is tracked now
    out of the collector's scans too; True where it did. Called when the rules start (``engine``): the profile's
    tables and events, alive until the rules end, are then no longer walked by the full collections the rules'
    allocations start (medium profile: one full collection of ~34,000 objects, ~50 ms, in the process's lane;
    a ``gc.collect()`` at that point found no garbage). Freed by reference counting as before; a cycle among
    them waits for ``thaw_imported_objects``."""
    if gc.get_freeze_count() == 0:
        return False
    gc.freeze()
    return True


def thaw_imported_objects() -> None:
    """Give the frozen objects back to the collector: before an interpreter teardown, whose last collections
    finalize what only a reference cycle keeps alive (a frozen one would never be)."""
    gc.unfreeze()
