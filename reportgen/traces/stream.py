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


_LINE_EVENT = re.compile(rb"\n[ \t]*\{")
RUN_BLOCK = 1 << 20  # bytes read at a time by FramedEvents: a run's text, its structs and copies stay a few MB
_RUN_BLANKS = b" \t\r\n"


class FramedEvents:
    """A trace's events array cut into runs of whole events at line starts, each run decoded at once by a strict
    decoder: the fast way through a streamed file whose writer put one event per line (torch does), in memory of
    one run. ``decode(text)`` gets ``[<events>]`` (bytes) and gives the decoded list, or None when the text is
    not a JSON array of the events it expects.

    A cut inside an event (a line that starts an object inside one, as an indented writer puts it) leaves an
    array that is not JSON, so a run the decoder takes is a run of whole events. Anything this does not take
    (no events array in the first read, a run or the head or tail not UTF-8, a run the decoder refuses, no line
    start for ``MAX_EVENT_BYTES``, no ``]`` found that closes the array) ends the iteration with ``ok`` False:
    the caller then reads the file again with ``EventWalk``, which salvages and notes what it finds. With ``ok``
    True, ``head`` and ``tail`` are what ``EventWalk`` keeps of the text before and after the array and
    ``count`` the events handed out."""

    def __init__(self, src, decode, *, chunk: int | None = None):
        self.src, self.decode, self.chunk = src, decode, chunk or min(READ_BLOCK, RUN_BLOCK)
        self.head = self.tail = ""
        self.count = 0
        self.ok = False

    def __iter__(self):
        first = self.src.read(self.chunk)
        text = first.decode("utf-8", "surrogateescape")
        start = events_array_start(text)
        if start is None:
            return
        m = _OPEN.search(text, 0, start + 1)
        head = text[: m.start()] if m and m.end() == start + 1 else text[:start]
        if not _utf8_text(head):
            return
        buf = first[len(text[: start + 1].encode("utf-8", "surrogateescape")):]
        del first, text
        eof = False
        while not eof:
            more = self.src.read(self.chunk)
            eof = not more
            buf += more
            if eof:
                break
            cut = _last_line_start(buf)
            if cut is None:
                if len(buf) > MAX_EVENT_BYTES:
                    return
                continue
            events = self._decoded(buf[:cut])
            if events is None:
                return
            buf = buf[cut:]
            yield events
        end = _array_end(buf)  # the last run: up to the "]" that closes the array
        if end is None:
            return
        events = self._decoded(buf[:end])
        if events is None:
            return
        tail = buf[end + 1:].decode("utf-8", "surrogateescape")
        if not _utf8_text(tail):
            return
        self.head, self.tail, self.ok = head, tail[-TAIL_CHARS:], True
        yield events

    def _decoded(self, run: bytes) -> list | None:
        """``run`` (whole events, the comma before the next run's first event at its end) decoded as an array."""
        end = len(run)
        while end and run[end - 1] in _RUN_BLANKS:
            end -= 1
        if end and run[end - 1] == 0x2C:  # ","
            end -= 1
        framed = bytearray(b"[")
        framed += memoryview(run)[:end]
        framed += b"]"
        if not (framed.isascii() or _utf8_bytes(framed)):
            return None
        events = self.decode(framed)
        if events is not None:
            self.count += len(events)
        return events


def _last_line_start(buf: bytes) -> int | None:
    """Where the last line of ``buf`` that starts an object begins (after its newline), None when none does."""
    end = len(buf)
    while (newline := buf.rfind(b"\n", 0, end)) >= 0:
        if _LINE_EVENT.match(buf, newline):
            return newline + 1
        end = newline
    return None


def _array_end(rest: bytes) -> int | None:
    """Where the ``]`` that closes the events array lies in ``rest`` (the array's last events, its end and the
    text after it), found as ``EventWalk`` finds it (the events passed over with the stdlib parser: a line or
    two here); None when the text is not UTF-8, an event is not JSON, or the array does not end."""
    try:
        text = rest.decode("utf-8")
    except UnicodeDecodeError:
        return None
    dec, pos = json.JSONDecoder(), 0
    while True:
        pos = _BLANKS.match(text, pos).end()
        if pos >= len(text):
            return None
        if text[pos] == "]":
            return len(text[:pos].encode("utf-8"))
        try:
            _, pos = dec.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return None


def _utf8_bytes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_text(text: str) -> bool:
    """``text`` decoded with surrogateescape held no byte that is not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_OPEN_BYTES = re.compile(rb'"traceEvents"\s*:\s*\[')
_FIRST_BYTE = re.compile(rb"[^ \t\r\n]")
_TAIL_LINES = 4096  # lines from a text's end looked through for the last that starts an event


def events_array_bounds(text: bytes) -> tuple[int, int] | None:
    """Where a whole trace's events array is likely to lie in ``text`` (a JSON object's text), without reading the
    events: the ``[`` after the first ``"traceEvents":`` and the ``]`` that ends the events found after the text's
    last line that starts an object (looked for among its last ``_TAIL_LINES`` lines), parsed up to it
    (``_array_end``). A guess: the caller checks it (``ArrayRuns`` decodes every event between, the document around
    is decoded with the array left out); None when none is found."""
    first = _FIRST_BYTE.search(text)
    if first is None or text[first.start()] != 0x7B:  # "{"
        return None
    opened = _OPEN_BYTES.search(text, first.start())
    if opened is None:
        return None
    end = len(text)
    for _ in range(_TAIL_LINES):
        newline = text.rfind(b"\n", opened.end(), end)
        if newline < 0:
            return None
        if _LINE_EVENT.match(text, newline):
            close = _array_end(text[newline + 1:])
            return (opened.end() - 1, newline + 1 + close) if close is not None else None
        end = newline
    return None


class ArrayRuns:
    """A whole file's JSON events array (its text UTF-8: ``readers.kineto_decode.split_document``) cut into runs of
    about ``RUN_BLOCK`` bytes at line starts, each run decoded by ``decode`` as its own array: what ``FramedEvents``
    does to a stream, less its checks and copies (the text is not read into pieces and joined again; a run is
    copied once, into the text the decoder reads). The same attributes (``ok``, ``head``, ``tail``, ``count``): the
    text around the array is not here (``head`` and ``tail`` empty, the caller has the document's metadata).

    Every byte of the array is in a run the decoder took or is a blank or the "," between two runs, so a text the
    runs take is a JSON array: it need not be checked first (``events_array_bounds`` guesses where it lies). A run
    the decoder refuses (a line start inside an event, an event the structs do not fit, a wrong end) ends the
    iteration with ``ok`` False; the last run is decoded first (kept, handed out last): a wrong end costs one run."""

    def __init__(self, text, decode, *, chunk: int | None = None):
        """``text``: the array (a bytes-like object from its ``[`` to its ``]``)."""
        self.text, self.decode, self.chunk = memoryview(text), decode, chunk or RUN_BLOCK
        self.head = self.tail = ""
        self.count = 0
        self.ok = False

    def __iter__(self):
        text, size = self.text, len(self.text)
        if size < 2 or text[0] != 0x5B or text[size - 1] != 0x5D:  # "[" ... "]"
            return
        ends, pos = [], 1  # where each run ends: at the first line start past RUN_BLOCK bytes, the last at the "]"
        while pos + self.chunk < size - 1 and (line := _LINE_EVENT.search(text, pos + self.chunk, size - 1)):
            pos = line.start() + 1
            ends.append(pos)
        runs = list(zip([1, *ends], ends))
        last = self._run(ends[-1] if ends else 1, size - 1, middle=False)  # first: a wrong "]" fails here
        if last is None or (runs and not last):
            return
        for start, end in runs:
            events = self._run(start, end, middle=True)
            if not events:  # None (refused) or no event before a ","
                return
            yield events
        self.ok = True
        yield last

    def _run(self, start: int, end: int, *, middle: bool) -> list | None:
        """The events of ``text[start:end]`` decoded as an array; a run before another must end with a ","."""
        text, stop = self.text, end
        while stop > start and text[stop - 1] in _RUN_BLANKS:
            stop -= 1
        if middle:
            if stop == start or text[stop - 1] != 0x2C:  # ","
                return None
            stop -= 1
        events = self.decode(b"".join((b"[", text[start:stop], b"]")))
        if events is not None:
            self.count += len(events)
        return events
