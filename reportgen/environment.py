"""The environment values reportgen reads (``REPORTGEN_*`` sizes and counts, ``TZ``), validated in one place.

Why: each reader parsed its own variable, so ``REPORTGEN_STREAM_TRACE_MB=inf`` raised OverflowError (exit 3)
inside a trace read, ``REPORTGEN_XSPACE_MAX_MB=inf`` the same in the XSpace reader, ``REPORTGEN_MAX_JSON_MB``
at import time, and ``TZ=UTC+25`` a ValueError wherever a local time was made. The command line calls
``check()`` before any work: a value that cannot be used is one line naming the variable and what it takes
(exit 2). The readers ask ``megabytes`` and ``count`` for their value, which say the same (an ``InputError``)
to a notebook or a program that calls them without the command line.
"""

from __future__ import annotations

import math
import os
from datetime import datetime

from reportgen.errors import InputError

# name -> default, in MB: the sizes the readers and the engine take from the environment
SIZES_MB = {
    "REPORTGEN_STREAM_TRACE_MB": 64,  # traces whose text is larger are streamed (traces/read.py)
    "REPORTGEN_XSPACE_MAX_MB": 1024,  # the most of one XSpace file read (readers/xspace_trace.py)
    "REPORTGEN_TABLES_MEMORY_MB": 64,  # tick tables kept in memory before spilling (readers/tick_table.py)
    "REPORTGEN_MAX_JSON_MB": 256,  # the most of one JSON document read whole (json_file.py)
    "REPORTGEN_CACHE_MAX_MB": 2048,  # the trace cache's bound (readers/trace_cache.py)
}
MAX_MB = 1 << 30  # 1 PiB: any larger "size" is a typo, and no buffer arithmetic should meet it
# name -> (default, least value): the counts
COUNTS = {"REPORTGEN_DASK_DUCKDB_THREADS": (1, 1)}
MAX_COUNT = 4096


def megabytes(name: str, environ=None) -> int:
    """``$name`` (MB, a number ≥ 0; unset or empty: its default) in bytes."""
    environ = os.environ if environ is None else environ
    text = environ.get(name, "").strip()
    if not text:
        return int(SIZES_MB[name] * (1 << 20))
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= MAX_MB):
        raise InputError(f"{name}={text!r}: not a size in MB (a number from 0 to {MAX_MB}, e.g. "
                         f"{SIZES_MB[name]}); unset it for the default")
    return int(value * (1 << 20))


def count(name: str, environ=None) -> int:
    """``$name`` (a whole number at least its least value; unset or empty: its default)."""
    environ = os.environ if environ is None else environ
    default, least = COUNTS[name]
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if not least <= value <= MAX_COUNT:
        raise InputError(f"{name}={text!r}: not a whole number from {least} to {MAX_COUNT} (e.g. {default}); "
                         "unset it for the default")
    return value


def check_time_zone() -> None:
    """``TZ`` must give a local time Python can hold (glibc takes ``UTC+25``, a day and an hour west,
    and ``datetime.astimezone`` then raises for any local time)."""
    try:
        datetime.now().astimezone()
    except (ValueError, OverflowError, OSError):
        raise InputError(f"TZ={os.environ.get('TZ', '')!r}: not a usable time zone (no local time can be made "
                         "with it: an offset of a day or more?); give one such as UTC or Europe/Berlin, or unset it"
                         ) from None


def check(environ=None) -> None:
    """Every value above, before any work (the command line's first step)."""
    for name in SIZES_MB:
        megabytes(name, environ)
    for name in COUNTS:
        count(name, environ)
    check_time_zone()
