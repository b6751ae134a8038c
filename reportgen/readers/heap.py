"""The process heap between big phases (glibc's malloc): handing freed pages back to the operating system
(``trim_heap``), and keeping the blocks numpy's temporaries come and go in mapped between uses (``reuse_freed_heap``)."""

from __future__ import annotations

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20  # the largest glibc takes (half its 64 MB arena heap on 64-bit systems)
TRIM_THRESHOLD_BYTES = 64 << 20  # free memory kept at the top of a heap for the next allocations


def trim_heap() -> None:
    """Give the freed heap pages back to the OS (glibc keeps them otherwise); a no-op elsewhere.

    Called once a big transient is gone for good (the system records after the last node, the trace
    chunks as the event table is assembled), not after every node: the next node reuses the freed
    pages, and handing them back only to fault them in again cost ~1 CPU s per four large nodes
    (2.2x the page faults)."""
    trim = _libc_function("malloc_trim")
    if trim:
        trim(0)


def allow_heap_reuse() -> None:
    """Let ``reuse_freed_heap`` change this process's heap: called by the command line in its own process only (a
    library caller's or a notebook's heap is its own)."""
    global _REUSE_ALLOWED
    _REUSE_ALLOWED = True


def reuse_freed_heap() -> bool:
    """Where allowed (``allow_heap_reuse``), serve blocks up to ``MMAP_THRESHOLD_BYTES`` from the heap and keep up to
    ``TRIM_THRESHOLD_BYTES`` of free memory at a heap's top, from now on, in this process and the children it forks
    next; True where glibc took both settings.

    Called when the rules start (``engine``) and by the system read's forked child (``readers.ingest``), whose
    freed memory goes with it. With glibc's defaults a block of 128 KB or more (the threshold rises
    with the blocks freed) is mapped for each array and unmapped when it is freed, and more than 128 KB free at a
    heap's top is handed back at once: each rule's numpy temporaries are faulted in anew (``analyze`` of the medium
    benchmark profile: ~150,000 page faults, ~0.95 CPU s of system time; from the rules on with these settings
    ~107,000 and ~0.78 s; the child's own ~51,000 -> ~38,000; benchmarks/HISTORY.md). Not in the command line's
    process during the read: set from its start, the traces' freed memory kept mapped raised the 16-node x 8 h
    job's peak from 775 to 898 MB (process tree); set in the child only, 774 -> 777 MB."""
    if not _REUSE_ALLOWED:
        return False
    mallopt = _libc_function("mallopt")
    if not mallopt:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) & bool(mallopt(_M_TRIM_THRESHOLD,
                                                                               TRIM_THRESHOLD_BYTES))


def _libc_function(name: str):
    """glibc's function ``name`` (ctypes), or False where there is none (another C library or system)."""
    if name not in _LIBC:
        try:
            import ctypes

            _LIBC[name] = getattr(ctypes.CDLL("libc.so.6"), name)
        except (OSError, AttributeError):
            _LIBC[name] = False
    return _LIBC[name]


_LIBC: dict = {}
_REUSE_ALLOWED = False
