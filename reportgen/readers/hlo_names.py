"""XLA's ops as a TPU profile names them: the HLO instruction's text, not a kernel's name.

A TPU plane's ``XLA Ops`` line names each event ``%name = shape opcode(operands), attributes``. What the op
does is its opcode (for a fusion, its instruction name), never the names of its operands: ``copy-start(…
%broadcast.2)`` is a copy, a fusion fed by ``%all-reduce`` computes. The reader takes XLA's asynchronous copies
for copies by the opcode (``xspace_trace``), the analysis XLA's collectives (``trace_analysis.classify``).
"""

from __future__ import annotations

import re

_HLO_TEXT = re.compile(r"^%([\w.-]+) = ")
_OPCODE = re.compile(r"\s([a-z][a-z0-9-]*)\(")  # the first ``word(`` after a space: a shape's ``T(8,128)`` has none
# XLA's asynchronous copies: between memory spaces (to and from the host's, ``S(5)``) or a prefetch; copy-done's
# time is the wait for the copy, not compute
COPIES = ("copy-start", "copy-done")


def hlo_op(name: str) -> tuple[str, str] | None:
    """(instruction name, opcode) of an event named by its HLO text (opcode "" when none is found); None for a
    name that is no HLO text (a GPU kernel's, a host operator's)."""
    head = _HLO_TEXT.match(name)
    if head is None:
        return None
    opcode = _OPCODE.search(name, head.end() - 1)
    return head.group(1), opcode.group(1) if opcode else ""


def is_hlo_copy(name: str) -> bool:
    op = hlo_op(name)
    return op is not None and op[1] in COPIES
