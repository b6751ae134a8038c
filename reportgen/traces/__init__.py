"""The trace layer: every Chrome-trace file (smdebug framework timelines, TF profiler traces, PyTorch
profiler / Kineto traces) is opened, decompressed, parsed or streamed, salvaged and checked here.

* ``read.TraceRead``: one file's events, whole or streamed, plain or gzip'd, with its problems
  recorded in one order (and each reader's wording);
* ``stream.EventWalk``: the one walker over a JSON events array (salvage of damage, oversized events);
* ``gunzip.GunzipStream``: step-wise decompression that keeps every byte before damage and stops at a cap;
* ``numbers``: what counts as a time, a number, an id;
* ``spans.OpenSpans``: B/E pairing.

The readers (``readers/framework.py``, ``readers/kineto_trace.py``) only map events to their columns.
"""
