"""Decode the events of a huge Chrome-trace JSON file one at a time, in bounded memory.

stdlib JSON needs about ten times a file's size to load it whole; ``TraceStream`` reads 4 MB at a
time and hands out one event (a dict, or whatever the array holds) per step, so memory holds one
read buffer plus what the caller keeps. Used by the framework reader and the Kineto reader for
plain (not gzip'd) traces above ``stream_bytes()``.

Works for any layout (one event per line or one long line) as long as a single event is under
``MAX_EVENT_BYTES``. A corrupt event is skipped up to the next line that starts an object (writers
put one event per line) and counted; a file that ends inside the array is recorded as truncated.
The caller records the other outcomes from the attributes: ``found`` (an array was found),
``head`` (the text before it, e.g. a trace's metadata), ``replaced`` (non-UTF-8 bytes were replaced),
``complete`` (the array was closed), ``count`` (events handed out).
"""

from __future__ import annotations

import codecs
import json
import os
import re
from pathlib import Path
from typing import Callable

from reportgen.engine.problems import ProblemLog

# Traces larger than this are streamed; REPORTGEN_STREAM_TRACE_MB sets it.
STREAM_TRACE_MB = 64
MAX_EVENT_BYTES = 16 << 20  # one event larger than this is treated as corrupt
_NEXT_EVENT = re.compile(r"\n[ \t]*\{")
_OPEN = re.compile(r'"traceEvents"\s*:\s*\[')


def stream_bytes() -> int:
    try:
        return int(float(os.environ.get("REPORTGEN_STREAM_TRACE_MB", STREAM_TRACE_MB)) * (1 << 20))
    except ValueError:
        return STREAM_TRACE_MB << 20


def is_big(path: Path) -> bool:
    """A plain trace file above the streaming threshold."""
    try:
        return not path.name.endswith(".gz") and path.stat().st_size > stream_bytes()
    except OSError:
        return False


class TraceStream:
    def __init__(self, path: Path, problems: ProblemLog, rel, *, every: int = 100_000,
                 on_every: Callable[[], None] | None = None, chunk: int = 1 << 22):
        self.path, self.problems, self.rel = Path(path), problems, rel
        self.every, self.on_every, self.chunk = every, on_every, chunk
        self.found = self.replaced = False
        self.complete = True
        self.count = 0
        self.head = ""

    def __iter__(self):
        dec = json.JSONDecoder()
        utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        state = {"buf": "", "pos": 0, "eof": False, "lines": 1}

        def more() -> bool:
            if state["eof"]:
                return False
            data = fh.read(self.chunk)
            state["eof"] = not data
            text = utf8.decode(data, final=state["eof"])
            self.replaced = self.replaced or "\ufffd" in text
            state["lines"] += state["buf"].count("\n", 0, state["pos"])
            state["buf"] = state["buf"][state["pos"]:] + text
            state["pos"] = 0
            return bool(data)

        def line() -> int:
            return state["lines"] + state["buf"].count("\n", 0, state["pos"])

        with open(self.path, "rb") as fh:
            while True:  # the opening bracket: of a "traceEvents" array, or of a top-level array
                buf = state["buf"]
                m = _OPEN.search(buf) or (re.match(r"\s*\[", buf) if buf.strip() else None)
                if m:
                    self.found, self.head, state["pos"] = True, buf[: m.start()], m.end()
                    break
                if not more() or len(state["buf"]) > MAX_EVENT_BYTES:
                    self.head = state["buf"][:MAX_EVENT_BYTES]
                    self.complete = False
                    return
            while True:
                buf, pos = state["buf"], state["pos"]
                while pos < len(buf) and buf[pos] in " \t\r\n,":
                    pos += 1
                state["pos"] = pos
                if pos >= len(buf):
                    if more():
                        continue
                    self._truncated(line())
                    return
                if buf[pos] == "]":
                    return
                try:
                    obj, end = dec.raw_decode(buf, pos)
                except ValueError:
                    if not state["eof"] and len(buf) - pos < MAX_EVENT_BYTES:
                        more()  # maybe only cut by the read: decode again with more text
                        continue
                    nxt = _NEXT_EVENT.search(buf, pos)
                    if nxt is None:
                        self._truncated(line())
                        return
                    self.problems.add(self.rel, line(), "corrupt JSON event (skipped)")
                    state["pos"] = nxt.start() + 1
                    continue
                if end == len(buf) and not state["eof"] and not isinstance(obj, (dict, list)):
                    more()  # a bare number may continue in the next read
                    continue
                state["pos"] = end
                self.count += 1
                yield obj
                if self.on_every is not None and self.count % self.every == 0:
                    self.on_every()

    def _truncated(self, line: int) -> None:
        self.complete = False
        self.problems.add(self.rel, line, f"truncated or corrupt JSON array ({self.count} events before the break kept)")
