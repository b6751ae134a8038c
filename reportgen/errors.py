"""Errors that end a run with a one-line message instead of a traceback.

Exit codes (documented in docs/cli.md): 0 success, 1 a rule listed in --fail-on fired,
2 usage or input error (nothing could be made), 3 an internal failure while rendering.
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
