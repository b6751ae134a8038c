"""What a terminal's foreground job has: the stop signals at their default disposition in a child process.

A test runner started in the background (``cmd &`` in a script without job control, ``nohup``, some CI
runners) has SIGINT (and with ``nohup`` SIGHUP) ignored; its children inherit that, so a Python child never
installs its Ctrl-C handler and ``reportgen`` (rightly) leaves an ignored signal alone. A test that signals a
child gives it ``preexec_fn=default_stop_signals``, or its outcome depends on how pytest was started."""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def default_stop_signals() -> None:
    """In the child, before exec: SIGINT, SIGTERM and SIGHUP at their default disposition."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_DFL)
