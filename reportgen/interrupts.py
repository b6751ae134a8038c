"""Whether Ctrl-C was pressed during this command, whatever a library made of the KeyboardInterrupt.

DuckDB turns a KeyboardInterrupt raised inside a query into its own error (``RuntimeError`` or
``duckdb.InterruptException``, "Query interrupted"); where such an error is caught as "DuckDB rejected
the file" the run went on and wrote its outputs after the user pressed Ctrl-C. The command line
installs ``watch()``; ``check()`` (called before any output is written) then raises KeyboardInterrupt
if a SIGINT arrived at any time, so an interrupted run writes nothing and ends as exit 130.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_seen: list[int] = []


@contextlib.contextmanager
def watch():
    """Remember every SIGINT (then raise KeyboardInterrupt as Python does) while the block runs; a
    no-op outside the main thread or when SIGINT is not Python's default handler."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield _seen
        return
    _seen.clear()

    def handler(signum, frame):
        _seen.append(signum)
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield _seen
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _seen.clear()


def pending() -> bool:
    return bool(_seen)


def check() -> None:
    """Raise KeyboardInterrupt when Ctrl-C was pressed (and swallowed on its way up)."""
    if _seen:
        raise KeyboardInterrupt
