"""Gzip'd traces decompressed step by step: memory bounded by the step, and damage costs only what follows it.

``GunzipStream(fh).read(n)`` hands out the decompressed bytes of an open binary file like a file's
``read``. Unlike ``gzip.GzipFile`` it does not raise on damage (a cut file, a corrupt deflate block, a
CRC or size mismatch, bytes after a member that are not gzip): it stops there and sets ``broken``,
having handed out every byte decompressed before. Members are read in turn and zero padding after
a member is skipped, as ``gzip.decompress`` does, so an undamaged file gives exactly its bytes.

zlib is called in steps (``BLOCK`` compressed bytes in, at most ``STEP`` bytes out), so memory holds
one step whatever the caller reads at a time. zlib hands out nothing of a call that fails, so a step
is taken on a copy of zlib's state (~2 µs) and a failed one redone from it a byte of output at a time:
every byte zlib decodes before the damage is kept but the last (zlib may write it in the call that
meets the damage), and what survives does not depend on how the file is read (whole or as a stream).

``limit`` bounds what is decompressed (a gzip bomb): once ``limit`` bytes are out the stream
stops and sets ``capped``. The trailer's ISIZE is never read: it is the size modulo 2**32 of the
last member only, and a bomb sets it to anything.
"""

from __future__ import annotations

import zlib

BLOCK = 1 << 16  # compressed bytes given to zlib at a time
STEP = 1 << 16  # most decompressed bytes one zlib call may return
MAGIC = b"\x1f\x8b"
_GZIP = 16 + zlib.MAX_WBITS  # zlib reads (and checks) the gzip header and trailer


class GunzipStream:
    def __init__(self, fh, limit: int | None = None):
        self.fh = fh
        self.limit = limit  # most bytes to decompress (None: no bound)
        self.broken = False  # the stream is damaged; everything before the damage was handed out
        self.capped = False  # ``limit`` bytes were decompressed and the rest was not read
        self.produced = 0  # decompressed bytes so far
        self._d = None  # zlib's state for the member being read
        self._input = b""  # compressed bytes read after a member's end, not yet given to zlib
        self._members = 0
        self._done = False
        self._left, self._at = b"", 0  # decompressed; handed out up to _at

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` decompressed bytes (all that is left if ``n < 0``); b"" at the end or at damage."""
        have = len(self._left) - self._at
        if n < 0 or n > have:
            # One growing buffer rather than a list of steps: a whole file's steps would leave their
            # freed pages in the heap, unused by what is decoded next.
            buf = bytearray(self._left[self._at:])
            while (n < 0 or len(buf) < n) and not self._done:
                buf += self._step()
            self._left, self._at = bytes(buf), 0
            del buf
            n = len(self._left) if n < 0 else min(n, len(self._left))
        data = self._left[self._at:self._at + n]
        self._at += n
        return data

    def _step(self) -> bytes:
        """One zlib call's output (maybe b""); sets ``_done`` at the end of the file or at damage."""
        if self.limit is not None and self.produced >= self.limit:
            self.capped = self._done = True
            return b""
        d = self._d
        if d is None:  # between members
            data = self._input.lstrip(b"\0") if self._members else self._input
            if not data:
                self._input = self.fh.read(BLOCK)
                self._done = not self._input  # the file ends after a whole member (or is empty)
                return b""
            self._d = d = zlib.decompressobj(_GZIP)
            self._input = b""
            self._members += 1
        else:
            data = d.unconsumed_tail or self.fh.read(BLOCK)
        try:
            if data:
                before = d.copy()
                out = d.decompress(data, STEP)
            else:  # the file ends inside a member: what zlib still holds, then stop
                out = d.flush()
                self.broken = self._done = not d.eof
        except zlib.error:
            self.broken = self._done = True
            out = _until_error(before, data) if data else b""
            self.produced += len(out)
            return out
        if d.eof:
            self._d, self._input = None, d.unused_data
        self.produced += len(out)
        return out


def _until_error(d, data: bytes) -> bytes:
    """What zlib decodes of ``data`` before its error, one byte per call (only the failed step)."""
    out = bytearray()
    try:
        while data and not d.eof:
            piece = d.decompress(data, 1)
            if not piece and d.unconsumed_tail == data:
                break
            out += piece
            data = d.unconsumed_tail
    except zlib.error:
        pass
    return bytes(out)
