"""Walk the events of a Chrome-trace JSON text one at a time, in bounded memory, salvaging damage.

``EventWalk`` reads a binary source (a file, a gzip stream, the bytes of a file already in memory)
``READ_BLOCK`` bytes at a time and hands out one event (a dict, or whatever the array holds) per
step, so memory holds one read buffer plus what the caller keeps. It is the only place that finds a
trace's events array and salvages a damaged one; ``traces.read`` uses it for streamed files and for
whole files that the JSON parsers reject.

Works for any layout (one event per line or one long line). A corrupt event is skipped up to the
next line that starts an object (writers put one event per line) and counted; so is an event larger
than ``MAX_EVENT_BYTES`` (its text is read past, not held); a text that ends inside the array is
recorded as truncated. After the array the source is read to its end (the text there may hold
metadata). The caller reads the other outcomes from the attributes: ``found`` (an array was found;
if not, ``head`` holds the whole text when under ``MAX_EVENT_BYTES``), ``head`` (the text before it,
e.g. a trace's metadata), ``tail`` (the last ``TAIL_CHARS`` of the text after it), ``replaced``
(non-UTF-8 bytes were replaced), ``literal`` (the bytes held an encoded U+FFFD of their own),
``complete`` (the array was closed), ``skipped`` (corrupt or oversized events) and ``count``
(events handed out).
"""

from __future__ import annotations

import codecs
import json
import re

from reportgen.problems import ProblemLog

READ_BLOCK = 4 << 20  # bytes read at a time
MAX_EVENT_BYTES = 16 << 20  # one event larger than this is skipped
TAIL_CHARS = 1 << 16  # text kept from after the events array
_KEEP_CHARS = 4096  # text kept when reading past an oversized event (a line start may span reads)
_NEXT_EVENT = re.compile(r"\n[ \t]*\{")
_BLANKS = re.compile(r"[ \t\r\n,]*")
_OPEN = re.compile(r'"traceEvents"\s*:\s*\[')
_BRACKET = re.compile(r"[\[{]")
_FFFD = "\ufffd".encode()
OVERSIZED = f"event larger than {MAX_EVENT_BYTES >> 20} MiB (skipped)"


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


class EventWalk:
    def __init__(self, src, problems: ProblemLog, rel, *, cut_line: str = "text", chunk: int | None = None):
        """``src``: an open binary source with ``read(n)``. ``problems``: where corrupt events and a
        cut array are recorded. ``cut_line``: the line given with a truncated array, the text line
        where it breaks ("text") or the number of the first event lost ("event", the Kineto
        reader's convention)."""
        self.src, self.problems, self.rel = src, problems, rel
        self.chunk = chunk or READ_BLOCK
        self.cut_line = cut_line
        self.found = self.replaced = self.literal = False
        self.complete = True
        self.count = self.skipped = 0
        self.head = self.tail = ""

    def __iter__(self):
        src = self.src
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

        def next_event(pos: int) -> int | None:
            """Where the next line that starts an object begins, reading past any amount of text
            (an oversized event) without holding it; None at the end of the text."""
            while True:
                buf = state["buf"]
                nxt = _NEXT_EVENT.search(buf, pos)
                if nxt is not None:
                    return nxt.start() + 1
                state["pos"] = max(state["pos"], len(buf) - _KEEP_CHARS)
                if not more():
                    return None
                pos = 0

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
            buf = state["buf"]
            pos = state["pos"] = _BLANKS.match(buf, state["pos"]).end()
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
                oversized = len(buf) - pos >= MAX_EVENT_BYTES
                if not state["eof"] and not oversized:
                    more()  # maybe only cut by the read: decode again with more text
                    continue
                at = line()
                nxt = next_event(pos)
                if nxt is None:
                    self._truncated(at)
                    return
                self.skipped += 1
                self.problems.add(self.rel, at, OVERSIZED if oversized else "corrupt JSON event (skipped)")
                state["pos"] = nxt
                continue
            if len(buf) - end < 64 and not state["eof"] and not isinstance(obj, (dict, list)):
                more()  # a bare value near the end of the read may go on in the next ("3." + "7")
                continue
            state["pos"] = end
            self.count += 1
            yield obj

    def _truncated(self, line: int) -> None:
        self.complete = False
        at = self.count + 1 if self.cut_line == "event" else line
        self.problems.add(self.rel, at, f"truncated or corrupt JSON array ({self.count} events before the break kept)")
