"""Errors that end a run with a one-line message instead of a traceback.

Exit codes of ``reportgen generate`` and ``reportgen check`` (also in README.md and docs/ci.md):

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     done: every requested output was written (rules may have fired; ``--fail-on none``)
1     a rule listed in ``--fail-on`` fired (``any``: any rule); every output was written first
2     no report could be made: usage or input error (bad source, nothing usable in it, unreadable
      report.json, unknown rule in ``--fail-on``) or an OSError of the environment (disk full,
      read-only output folder, a file vanished); one line on stderr, nothing half-written (an
      unwritable $GITHUB_STEP_SUMMARY is found after the report was written)
3     internal error (a bug, or the notebook/HTML conversion failed); nothing half-written
130   interrupted (Ctrl-C)
====  ==========================================================================================
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_RULE_FIRED = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


class ReportgenError(Exception):
    """A failure the user can act on; ``str(err)`` is the whole message (one line)."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(" ".join(str(message).split()))
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(ReportgenError):
    """The source is missing, empty, or not something we can read."""


class RenderError(ReportgenError):
    """The notebook or the HTML conversion failed."""

    exit_code = EXIT_INTERNAL
