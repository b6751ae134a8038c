"""One signal policy for every command: SIGINT, SIGTERM and SIGHUP all stop a run the same way.

Ctrl-C (SIGINT), a CI cancellation or ``timeout`` (SIGTERM) and a closed terminal or ssh session (SIGHUP)
mean the same thing: stop, clean up, write nothing. Only SIGINT used to be handled; SIGTERM and SIGHUP
killed the process at once, leaving ``reportgen-events-*`` spill folders in ``$TMPDIR``, ``.reportgen-tmp-*``
files in the output folder and the page's worker running. ``watch()`` makes each of them raise
``KeyboardInterrupt`` in the main thread, so every context manager that cleans up on Ctrl-C cleans up on
all three; the command line then leaves with ``128 + n``.

DuckDB turns a KeyboardInterrupt raised inside a query into its own error (``RuntimeError`` or
``duckdb.InterruptException``, "Query interrupted"); where such an error is caught as "DuckDB rejected
the file" the run went on and wrote its outputs after the user pressed Ctrl-C. ``check()`` (called
before any output is written) therefore raises KeyboardInterrupt again if a signal arrived at any time.

A signal whose disposition is "ignored" when the command starts (``nohup`` ignores SIGHUP, a background
job inherits SIGINT ignored) stays ignored. Only the first signal interrupts; a second one is remembered
while the clean-up runs (so it is not cut short), and a third ends the process at once (the default
action), for a clean-up that hangs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

_seen: list[int] = []


def _is_default(signum: int, handler) -> bool:
    if signum == signal.SIGINT:
        return handler is signal.default_int_handler
    return handler == signal.SIG_DFL


def handled_signals() -> tuple[int, ...]:
    """The stop signals this process may take over now: those not ignored by whoever started it."""
    return tuple(s for s in STOP_SIGNALS if signal.getsignal(s) not in (signal.SIG_IGN, None))


@contextlib.contextmanager
def watch():
    """Remember every stop signal and raise KeyboardInterrupt for the first while the block runs; a no-op
    outside the main thread, and for each signal that is not at its default disposition."""
    if threading.current_thread() is not threading.main_thread():
        yield _seen
        return
    mine = [s for s in STOP_SIGNALS if _is_default(s, signal.getsignal(s))]
    if not mine:
        yield _seen
        return
    _seen.clear()

    def handler(signum, frame):
        _seen.append(signum)
        if len(_seen) == 1:
            raise KeyboardInterrupt
        if len(_seen) >= 3:  # the clean-up hangs: give up as the default action would
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    previous = {s: signal.signal(s, handler) for s in mine}
    try:
        yield _seen
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
        _seen.clear()


def pending() -> bool:
    return bool(_seen)


def received() -> int | None:
    """The first stop signal seen in this command, if any."""
    return _seen[0] if _seen else None


def exit_code(signum: int | None) -> int:
    """``128 + n`` for signal n (the shell's convention); 130 (SIGINT) for an interrupt of unknown origin."""
    return 128 + int(signum if signum is not None else signal.SIGINT)


def name(signum: int | None) -> str:
    try:
        return signal.Signals(signum if signum is not None else signal.SIGINT).name
    except ValueError:
        return f"signal {signum}"


def check() -> None:
    """Raise KeyboardInterrupt when a stop signal arrived (and was swallowed on its way up)."""
    if _seen:
        raise KeyboardInterrupt
