"""Text from the data made safe for a terminal or a text file: the one sanitiser of every text output.

Node ids, job names, rule names and paths come from files anyone can write. Printed raw, a node id
holding ``ESC]0;...BEL`` retitles the terminal, ``ESC[2J`` clears it, an OSC 52 sequence writes the
clipboard, and a bidi override (U+202E) makes a line read differently from what it holds. HTML,
Markdown and XML escaping do not touch these characters. Every text output (stdout, stderr lines,
the Markdown summary, compare's Markdown, JUnit) passes data text through ``printable`` first: C0 and
C1 controls, DEL and the bidi controls are replaced by a visible escape (``\\x1b``, ``\\u202e``), so the
reader sees that something was there and what.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls; the bidi embeddings, overrides, isolates and marks; the line and paragraph
# separators (a terminal or a Markdown viewer may break a line on them).
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[\x00-\x1f{_OTHERS}]")
_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # tab (09) and line feed (0a) kept


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, *, lines: bool = False) -> str:
    """``value`` as text with every control and bidi character shown as an escape; ``lines=True`` keeps
    tab and line feed (a multi-line document such as a Markdown summary), else they are escaped too."""
    text = "" if value is None else str(value)
    return (_BUT_LINES if lines else _ANY).sub(_visible, text)


def printable_line(value: object) -> str:
    """One line for stderr or stdout: every control, tab and line break included, made visible."""
    return printable(value)


def has_unsafe(value: object, *, lines: bool = False) -> bool:
    """Whether ``printable`` would change ``value``."""
    text = "" if value is None else str(value)
    return (_BUT_LINES if lines else _ANY).search(text) is not None
