"""One trace file read by its format's reader: the rows of ``sources.layout.TRACE_FORMATS`` resolved.

The format table lives in the layout vocabulary (layer 1) and names each reader by its dotted path,
because the readers build this layer's columns; here the path becomes the function. A file no row
recognises (one named explicitly) is read as a Kineto trace, as before there were formats.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path

from reportgen.garbage_collector import paused
from reportgen.readers.trace_model import TraceColumns
from reportgen.problems import ProblemLog
from reportgen.sources.layout import TRACE_FORMATS, TraceFormat, sibling_copy, trace_format

# What the readers make of the same bytes, as a number: the trace cache (``readers/trace_cache.py``) keys every
# stored reduction with it, so a reduction made by another reader is never served. Bump it with any change to
# what ``read_trace_file`` returns for a file (a column, a name, a problem's reason, a new field of the model):
# ``tests/unit/readers/test_trace_cache.py::test_reader_version_is_bumped_with_the_output`` holds a digest of
# the recordings' reductions and fails, saying so, when they change under the same number.
READER_VERSION = 5  # 5: ROCm's CopyDeviceToDevice … read as copies; 4: a TPU's XLA copy-start / copy-done read as copies (hlo_names); 2: XSpace varints over 64 bits keep their low 64 bits (protovec); 3: float64 operators


@lru_cache(maxsize=None)
def reader_of(fmt: TraceFormat):
    """The function a format's row names (``module:function``)."""
    module, _, function = fmt.reader.partition(":")
    return getattr(importlib.import_module(module), function)


def read_trace_file(path: Path, problems: ProblemLog | None = None) -> TraceColumns:
    """``path`` read by its format's reader into the trace columns; never raises on bad content. The whole
    read runs with the cyclic collector paused (``garbage_collector.paused``): the decoded events are
    converted to columns and freed before it runs again. A pause around the decode alone left the first
    young collection after it to walk the whole decoded tree: 0.23-0.26 s of collections over 8 real
    ranks (0.30-0.35 s with no pause), against 0.04-0.05 s with the whole file paused."""
    with paused():
        fmt = trace_format(Path(path)) or TRACE_FORMATS[0]
        trace = reader_of(fmt)(Path(path), problems)
        if trace.start_us.size == 0:
            return _from_sibling_copy(Path(path), trace, problems)
        return trace


def _from_sibling_copy(path: Path, trace: TraceColumns, problems: ProblemLog | None) -> TraceColumns:
    """``path`` gave no event (empty, damaged): when the same profile lies beside it in another format
    (``sources.layout.sibling_copy``: JAX's ``<host>.trace.json.gz`` beside ``<host>.xplane.pb``), that copy
    is read instead, under the same rank name, and Data quality says so; else ``trace`` as it was."""
    copy = sibling_copy(path)
    if copy is None:
        return trace
    own = ProblemLog()
    other = reader_of(trace_format(copy) or TRACE_FORMATS[0])(copy, own)
    if other.start_us.size == 0:
        return trace
    if problems is not None:
        problems.merge(own)
        problems.add(path, None, f"no usable events: the same profile's other copy {copy.name} was read instead")
    other.label = trace.label
    return other
