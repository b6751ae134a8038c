"""Handing freed heap pages back to the operating system between big phases (glibc's malloc_trim)."""

from __future__ import annotations


def trim_heap() -> None:
    """Give the freed heap pages back to the OS (glibc keeps them otherwise); a no-op elsewhere.

    Called once a big transient is gone for good (the system records after the last node, the trace
    chunks as the event table is assembled), not after every node: the next node reuses the freed
    pages, and handing them back only to fault them in again cost ~1 CPU s per four large nodes
    (2.2x the page faults)."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None
