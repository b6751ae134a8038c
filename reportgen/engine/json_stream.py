"""Decode the events of a huge Chrome-trace JSON file one at a time, in bounded memory.

stdlib JSON needs about ten times a file's size to load it whole; ``TraceStream`` reads 4 MB at a
time and hands out one event (a dict, or whatever the array holds) per step, so memory holds one
read buffer plus what the caller keeps. Used by the framework reader and the Kineto reader for
traces above ``stream_bytes()`` (``is_big``), plain or gzip'd: a gzip'd file is decompressed as it
is read (``gunzip.GunzipStream``), so a trace of a few GB stays on disk, compressed.

Works for any layout (one event per line or one long line) as long as a single event is under
``MAX_EVENT_BYTES``. A corrupt event is skipped up to the next line that starts an object (writers
put one event per line) and counted; a file that ends inside the array is recorded as truncated.
After the array the stream is read to its end (a gzip stream is only known whole at its end; the
text there may hold metadata). The caller records the other outcomes from the attributes, in the
order its whole-file read would: ``found`` (an array was found; if not, ``head`` holds the whole
text when under ``MAX_EVENT_BYTES``), ``head`` (the text before it, e.g. a trace's metadata),
``tail`` (the last ``TAIL_CHARS`` of the text after it), ``replaced`` (non-UTF-8 bytes were
replaced), ``literal`` (the bytes held an encoded U+FFFD of their own), ``complete`` (the array was
closed), ``skipped`` (corrupt events), ``count`` (events handed out), ``gz``, ``broken`` (the gzip
stream is damaged) and ``unzipped`` (bytes decompressed, all of them the stream held before the
damage).
"""

from __future__ import annotations

import codecs
import json
import os
import re
from pathlib import Path
from typing import Callable

from reportgen.engine import gunzip
from reportgen.engine.problems import ProblemLog

# Traces larger than this are streamed; REPORTGEN_STREAM_TRACE_MB sets it.
STREAM_TRACE_MB = 64
MAX_EVENT_BYTES = 16 << 20  # one event larger than this is treated as corrupt
TAIL_CHARS = 1 << 16  # text kept from after the events array
MAX_RATIO = 1032  # deflate's largest compression ratio: the text is at most this times the .gz file
_NEXT_EVENT = re.compile(r"\n[ \t]*\{")
_OPEN = re.compile(r'"traceEvents"\s*:\s*\[')
_FFFD = "\ufffd".encode()


_BRACKET = re.compile(r"[\[{]")


def events_array_start(text: str) -> int | None:
    """Index of the ``[`` that opens a trace's events in ``text``, None when it is not (yet) there.

    The document's first bracket decides: ``[``, the document is the array; ``{``, it is an object
    and the array follows its ``"traceEvents":``. Whatever comes before that bracket (a BOM, a stray
    byte) is passed over. Searching ``"traceEvents"`` from the start of any text instead finds such
    a key inside an event's ``args`` first, and taking the first ``[`` of an object finds an array in
    its metadata (``"version": [1, 2]``): both lost every event (found by fuzzing)."""
    first = _BRACKET.search(text)
    if first is None:
        return None
    if text[first.start()] == "[":
        return first.start()
    m = _OPEN.search(text, first.start())
    return m.end() - 1 if m else None


def stream_bytes() -> int:
    try:
        return int(float(os.environ.get("REPORTGEN_STREAM_TRACE_MB", STREAM_TRACE_MB)) * (1 << 20))
    except ValueError:
        return STREAM_TRACE_MB << 20


def is_big(path: Path) -> bool:
    """A trace whose text may be above the streaming threshold ``stream_bytes()``.

    A plain file: its size. A gzip'd file (name ending in ``.gz``), judged without decompressing:
    streamed when the compressed size is above the threshold (the text is larger still), or when the
    trailer's ISIZE (the decompressed size modulo 2**32, of the last member only) is above it. An
    ISIZE below the compressed size cannot be a JSON text's size (the field wrapped past 4 GiB, the
    file holds several members, is cut or is not gzip): it is not trusted, and the file streamed
    when it could hold more than the threshold (compressed size x ``MAX_RATIO``). Not caught: a
    file whose last member is small after big ones, or whose text exceeds a multiple of 4 GiB by
    less than the threshold, all within a compressed size under the threshold (trace writers emit
    one member, and traces compress ~10x, far from the 64x needed at 64 MB). Either way round the
    result is the same: a wrong guess costs time (streamed) or memory (read whole), nothing else.
    """
    try:
        size = path.stat().st_size
    except OSError:
        return False
    limit = stream_bytes()
    if not path.name.endswith(".gz") or size > limit:
        return size > limit
    text = gunzip.isize(path)
    if text is None or text < size:
        return size * MAX_RATIO > limit
    return text > limit


class TraceStream:
    def __init__(self, path: Path, problems: ProblemLog, rel, *, every: int = 100_000,
                 on_every: Callable[[], None] | None = None, chunk: int = 1 << 22, gz: bool | None = None,
                 cut_line: str = "text"):
        """``gz``: the file is gzip'd (None: when it starts with the gzip magic bytes). ``cut_line``:
        the line given with a truncated array, the text line where it breaks ("text") or the number
        of the first event lost ("event", the Kineto reader's convention)."""
        self.path, self.problems, self.rel = Path(path), problems, rel
        self.every, self.on_every, self.chunk = every, on_every, chunk
        self.gz, self.cut_line = gz, cut_line
        self.found = self.replaced = self.literal = self.broken = False
        self.complete = True
        self.count = self.skipped = self.unzipped = 0
        self.head = self.tail = ""

    def __iter__(self):
        with open(self.path, "rb") as fh:
            if self.gz is None:
                self.gz = fh.peek(2)[:2] == gunzip.MAGIC
            src = gunzip.GunzipStream(fh) if self.gz else fh
            yield from self._events(src)
            if self.gz:
                self.broken, self.unzipped = src.broken, src.produced

    def _events(self, src):
        dec = json.JSONDecoder()
        utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        state = {"buf": "", "pos": 0, "eof": False, "lines": 1, "last": b""}

        def more() -> bool:
            if state["eof"]:
                return False
            data = src.read(self.chunk)
            state["eof"] = not data
            if not self.literal:  # an encoded U+FFFD, maybe across two reads
                self.literal = _FFFD in data or _FFFD in state["last"] + data[:2]
                state["last"] = data[-2:]
            text = utf8.decode(data, final=state["eof"])
            self.replaced = self.replaced or "\ufffd" in text
            state["lines"] += state["buf"].count("\n", 0, state["pos"])
            state["buf"] = state["buf"][state["pos"]:] + text
            state["pos"] = 0
            return bool(data)

        def line() -> int:
            return state["lines"] + state["buf"].count("\n", 0, state["pos"])

        def drain(start: int) -> str:
            """Read to the end; the last TAIL_CHARS of the text from ``start``."""
            tail, state["pos"] = "", start
            while True:
                tail = (tail + state["buf"][state["pos"]:])[-TAIL_CHARS:]
                state["buf"], state["pos"] = "", 0
                if not more():
                    return tail

        while True:  # the opening bracket: of a "traceEvents" array, or of a top-level array
            buf = state["buf"]
            start = events_array_start(buf)
            if start is not None:
                m = _OPEN.search(buf, 0, start + 1)  # an object's "traceEvents": key is not head text
                self.found, self.head = True, buf[: m.start()] if m and m.end() == start + 1 else buf[:start]
                state["pos"] = start + 1
                break
            if not more() or len(state["buf"]) > MAX_EVENT_BYTES:
                self.head = state["buf"][:MAX_EVENT_BYTES]
                self.complete = False
                drain(len(state["buf"]))
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
                self.tail = drain(pos + 1)
                return
            try:
                obj, end = dec.raw_decode(buf, pos)
            except (ValueError, RecursionError):  # RecursionError: nesting too deep for the stdlib parser
                if not state["eof"] and len(buf) - pos < MAX_EVENT_BYTES:
                    more()  # maybe only cut by the read: decode again with more text
                    continue
                nxt = _NEXT_EVENT.search(buf, pos)
                if nxt is None:
                    self._truncated(line())
                    return
                self.skipped += 1
                self.problems.add(self.rel, line(), "corrupt JSON event (skipped)")
                state["pos"] = nxt.start() + 1
                continue
            if len(buf) - end < 64 and not state["eof"] and not isinstance(obj, (dict, list)):
                more()  # a bare value near the end of the read may go on in the next ("3." + "7")
                continue
            state["pos"] = end
            self.count += 1
            yield obj
            if self.on_every is not None and self.count % self.every == 0:
                self.on_every()

    def _truncated(self, line: int) -> None:
        self.complete = False
        at = self.count + 1 if self.cut_line == "event" else line
        self.problems.add(self.rel, at, f"truncated or corrupt JSON array ({self.count} events before the break kept)")
