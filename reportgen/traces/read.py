"""Open one Chrome-trace file and hand out its events: whole when its text is small, streamed otherwise.

Every trace reader (smdebug framework timelines, TF profiler traces, Kineto traces) gets its events
here and only maps them to its columns. ``TraceRead`` decides how to read a file from what is
actually there, never from the gzip trailer (ISIZE is the size modulo 2**32 of the last member only,
and a gzip bomb sets it to anything):

* a plain file whose size is at most ``stream_bytes()``, or a gzip'd one whose text turns out to be
  (decompressed up to that size and no further), is parsed whole: orjson, else the stdlib parser,
  else salvaged by ``stream.EventWalk`` (the events before a break kept, a corrupt event skipped);
* any larger file is streamed: ``EventWalk`` decodes one event at a time from 4 MB reads.

Decompression is bounded by what it produces: ``text_cap`` of a compressed size (``MAX_GZIP_RATIO``
times it, at least ``MIN_TEXT_CAP``); past it the rest of the file is not read and a note says so.
A single event is capped by ``stream.MAX_EVENT_BYTES``. So memory and time depend on the file's
size on disk, not on what it decompresses to.

What went wrong is recorded by ``finish`` in one order whatever the path (whole or streamed): gzip
damage, the decompression cap, non-UTF-8 bytes, the document's shape, JSON breaks, then the
reader's own per-event problems. ``Wording`` keeps each reader's words for these outcomes.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from reportgen.garbage_collector import paused
from reportgen.problems import ProblemLog
from reportgen.environment import SIZES_MB, megabytes
from reportgen.traces.gunzip import MAGIC, GunzipStream
from reportgen.traces.stream import EventWalk

STREAM_TRACE_MB = SIZES_MB["REPORTGEN_STREAM_TRACE_MB"]  # traces whose text is larger are streamed; REPORTGEN_STREAM_TRACE_MB sets it
MAX_GZIP_RATIO = 40  # a gzip'd trace's text beyond this many times the file's size is not read ...
MIN_TEXT_CAP = 64 << 20  # ... unless below this (real traces compress 10-30x: 30.3x at most in our fixtures)
_FFFD = "\ufffd".encode()


def stream_bytes() -> int:
    return megabytes("REPORTGEN_STREAM_TRACE_MB")


def text_cap(compressed: int) -> int:
    """The most text decompressed from a gzip'd file of ``compressed`` bytes. Traces compress ~10x;
    deflate reaches ~1000x on repeated text, which is how a 10 MB file holds 10 GB of blanks."""
    return max(MIN_TEXT_CAP, MAX_GZIP_RATIO * compressed)


@dataclass(frozen=True)
class Wording:
    """How a reader words the outcomes of reading a file (kept per reader so outputs do not change)."""

    unreadable: str = "unreadable file: {}"
    broken_gzip: str = "broken gzip stream ({} bytes recovered)"
    object_without_events: str = "JSON object without a traceEvents array"
    no_events_array: str = "not a JSON array"
    no_events_line: int | None = 1
    cut_line: str = "text"  # see stream.EventWalk


def _fast_loads(raw: bytes):
    """The document as ``json.loads`` would return it, decoded by orjson (~2x faster), or None to let
    the stdlib path (with its salvage and problem reporting) handle the file. orjson rejects what
    the stdlib parser would need special handling for (invalid UTF-8, NaN / Infinity literals, lone
    surrogates, a BOM); it turns integers beyond 64 bits into floats where the stdlib keeps ints, so
    a file with a run of 19+ digits is left to the stdlib parser too. Decoded with the cyclic collector
    paused (``garbage_collector.paused``), as every whole or streamed decode here."""
    if _orjson is None or raw.translate(_DIGITS).find(b"0" * 19) >= 0:
        return None
    try:
        with paused():
            return _orjson.loads(raw)
    except _orjson.JSONDecodeError:
        return None


def _decoded(events, size: int) -> list:
    """The next ``size`` events of a stream, decoded with the collector paused (a chunk holds no cycle)."""
    with paused():
        return list(itertools.islice(events, size))


try:  # optional: the stdlib parser is the reference
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    _orjson = None

_DIGITS = bytes.maketrans(b"123456789", b"000000000")


class TraceRead:
    """The events of one trace file, and what went wrong reading them."""

    def __init__(self, path: Path, rel, wording: Wording = Wording(), *, gz: bool | None = None,
                 cap: int | None = None, whole=None, framed=None):
        """``rel``: how problems name the file. ``gz``: the file is gzip'd (None: when it starts with
        the gzip magic bytes). ``cap``: how many problems of each log are listed in full. ``whole``: the
        reader's own fast path for a file read whole, called with its text (bytes): the number of events
        it took (then ``chunks`` hands out none), or None to have the events decoded and handed out here.
        It must take a text only when that text parses whole as a JSON array of the shape it expects:
        nothing is then noted about the text. ``framed``: the same for a file to be streamed, called with its
        text as a binary source read from the start: the number of events it took, or None to have the file read
        again from the start here, event by event (``stream.FramedEvents`` is the way: it takes only a file it
        decodes whole); it must give None for a gzip stream it found damaged or cut (``broken``, ``capped``)."""
        self.path, self.rel, self.wording, self.gz = Path(path), rel, wording, gz
        self.whole, self.framed = whole, framed
        self.breaks = ProblemLog() if cap is None else ProblemLog(cap)  # corrupt events, a cut array
        self.streamed = False  # the file is read as a stream (else whole, its events in one list)
        self.count = 0  # events handed out
        self.parsed = False  # the document parsed whole (no salvage)
        self.doc: dict | None = None  # the document, when it parsed whole as an object
        self.walk: EventWalk | None = None
        self.broken = self.capped = False
        self.unzipped = 0  # bytes decompressed
        self.error: OSError | None = None
        self._notes: list[tuple[int | None, str]] = []

    # -- reading ---------------------------------------------------------------------------------
    def chunks(self, size: int):
        """The events in lists: one list (the whole file) when it is parsed whole, else lists of at
        most ``size`` events in file order (``streamed`` is then True while they come); none when the
        reader's ``whole`` took the file."""
        try:
            fh = open(self.path, "rb")
        except OSError as err:
            self.error = err
            return
        with fh:
            try:
                if self.gz is None:
                    self.gz = fh.peek(2)[:2] == MAGIC
                data = self._whole_or_none(fh)
            except OSError as err:
                self.error = err
                return
            if data is not None:
                taken = self.whole(data) if self.whole is not None else None
                if taken is not None:
                    self.parsed = True
                    self.count = taken
                    return
                events = self._judge(data)
                del data
                self.count = len(events)
                yield events
                return
            if self.framed is not None:
                fh.seek(0)
                src = GunzipStream(fh, text_cap(os.fstat(fh.fileno()).st_size)) if self.gz else fh
                try:
                    taken = self.framed(src)
                except OSError as err:
                    self.error = err
                    return
                if taken is not None:
                    self._gz_outcome(src)
                    self.parsed, self.count = True, taken
                    self.streamed = True  # read as a stream, a run of whole events at a time
                    return
            fh.seek(0)
            src = GunzipStream(fh, text_cap(os.fstat(fh.fileno()).st_size)) if self.gz else fh
            walk = self.walk = EventWalk(src, self.breaks, self.rel, cut_line=self.wording.cut_line)
            events = iter(walk)
            self.streamed = True
            try:
                while chunk := _decoded(events, size):
                    self.count += len(chunk)
                    yield chunk
            except OSError as err:
                self.error = err
                return
            self._gz_outcome(src)
            if walk.found:
                if walk.replaced and not walk.literal:
                    self._notes.append((None, "non-UTF-8 bytes (replaced)"))
                return
            # No events array: the head is the whole text (a file without one is small); judge it whole
            # (for its problems: a text without an events array has no events).
            self._judge_text(walk.head, walk.replaced and not walk.literal)

    def _whole_or_none(self, fh) -> bytes | None:
        """The file's text when it is at most ``stream_bytes()`` (decompressed no further), else None."""
        limit = stream_bytes()
        size = os.fstat(fh.fileno()).st_size
        if not self.gz:
            if size > limit:
                return None
            return fh.read()
        src = GunzipStream(fh, text_cap(size))
        data = src.read(limit + 1)
        if len(data) > limit:
            return None
        self._gz_outcome(src)
        return data

    def _gz_outcome(self, src) -> None:
        if not self.gz:
            return
        self.broken, self.capped, self.unzipped = src.broken, src.capped, src.produced
        if src.broken:
            self._notes.append((None, self.wording.broken_gzip.format(src.produced)))
        if src.capped:
            self._notes.append((None, f"gzip'd text cut at {src.produced >> 20} MiB, the most read from a file of "
                                      "its size (a decompression bomb?): the rest was not read"))

    def _judge(self, raw: bytes) -> list:
        doc = _fast_loads(raw)
        if isinstance(doc, list) or (isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)):
            return self._parsed(doc)
        text = raw.decode("utf-8", errors="replace")
        return self._judge_text(text, "\ufffd" in text and _FFFD not in raw)

    def _judge_text(self, text: str, replaced: bool) -> list:
        """The events of a file's whole text (stdlib JSON), salvaged up to a break."""
        if replaced:
            self._notes.append((None, "non-UTF-8 bytes (replaced)"))
        if not text.strip():
            self._notes.append((None, "empty file"))
            return []
        try:
            with paused():
                doc = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nesting too deep for the stdlib parser
            doc = None
        if isinstance(doc, list):
            return self._parsed(doc)
        if isinstance(doc, dict):
            if isinstance(doc.get("traceEvents"), list):
                return self._parsed(doc)
            self._notes.append((None, self.wording.object_without_events))
            return []
        raw = text.encode("utf-8", errors="surrogatepass")
        walk = self.walk = EventWalk(io.BytesIO(raw), self.breaks, self.rel, cut_line=self.wording.cut_line,
                                     chunk=len(raw) + 1)
        events = list(walk)
        if not walk.found:
            self._notes.append((self.wording.no_events_line, self.wording.no_events_array))
        return events

    def _parsed(self, doc) -> list:
        self.parsed = True
        if isinstance(doc, dict):
            self.doc = doc
            return doc["traceEvents"]
        return doc

    # -- outcome ---------------------------------------------------------------------------------
    @property
    def complete(self) -> bool:
        """Every event of the file was handed out (no damage, cap, salvage or skipped event)."""
        if self.error is not None or self.broken or self.capped:
            return False
        if self.parsed:
            return True
        walk = self.walk
        return walk is not None and walk.found and walk.complete and not walk.skipped

    def finish(self, problems: ProblemLog, events: ProblemLog | None = None) -> None:
        """Record the file's problems in ``problems``, in the whole-file read's order; ``events``: the
        reader's own problems with the events, recorded last."""
        if self.error is None:
            for line, reason in self._notes:
                problems.add(self.rel, line, reason)
        problems.merge(self.breaks)
        if events is not None:
            problems.merge(events)
        if self.error is not None:
            err = self.error
            problems.add(self.rel, None, self.wording.unreadable.format(err.strerror or err))

    def meta(self, keys) -> dict:
        """The document's top-level ``keys``: from the parsed document, else looked for in the text
        before the events and after them (a trace's metadata may follow its events)."""
        if self.doc is not None:
            return {k: self.doc[k] for k in keys if k in self.doc}
        walk = self.walk
        if walk is None:
            return {}
        return meta_of(walk.head, walk.tail, keys)


def meta_of(head: str, tail: str, keys) -> dict:
    """A streamed document's top-level ``keys`` looked for in the text before its events (``head``) and after
    them (``tail``): how ``TraceRead.meta`` and a ``framed`` reader find them."""
    decoder = json.JSONDecoder()
    meta: dict = {}
    for key in keys:
        for text in (head, tail):
            match = re.search(r'"%s"\s*:\s*' % re.escape(key), text)
            if match:
                try:
                    meta[key], _ = decoder.raw_decode(text, match.end())
                    break
                except (ValueError, RecursionError):
                    pass
    return meta
