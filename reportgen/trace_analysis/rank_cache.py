"""Each rank's analysis kept beside its files' reductions, so a warm run analyses no rank twice.

The trace cache (``readers/trace_cache.py``) spares a second run the reading of each file; what a rank's files
are then turned into (``job.reduce_reads``: the cycles merged, ``analysis.analyze_trace`` and
``analysis.totals_by_name``) was still redone every run: 0.85 of a warm ``generate``'s 3.7 CPU s over 2 x 100 MB
(issue 51). This module keeps that result, the rank's ``doc`` and ``totals``, in the same folder.

The key: the trace cache keys of the rank's files in the order they are merged (each covers the file's content,
its path and the readers' version, so the merged trace is fully given by them), ``ANALYSIS_VERSION`` (bumped with
any change to what the analysis returns), this module's ``RANK_FORMAT`` and the peak-FLOP/s table the MFU is
taken from (``flops.peak_table``: ``REPORTGEN_PEAK_TFLOPS`` may name another). Nothing else goes in.

One entry is one ``<key>.rank.json``: a header line (format, key, SHA-256 of the body) and the body, the JSON of
``[doc, totals]``; written under a temporary name and renamed into place, bounded with the file entries
(``trace_cache.put_entry``). A cut, altered or foreign entry is removed and the rank analysed again. A result JSON
would not give back exactly (a numpy integer, a tuple, a key that is no string) is not kept, so what a warm run
serves is what ``json.loads`` of the entry gives; the cold run that stores it goes on with that same decoded copy,
so cold and warm runs hand the same values on.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from reportgen.kept_file import read_kept
from reportgen.readers.trace_cache import TraceCache, put_entry, sealed, take_entry, unsealed
from reportgen.trace_analysis.flops import peak_table

# Bump with any change to what ``analyze_trace`` or ``totals_by_name`` give for a merged rank (a key, a number, a
# rounding): tests/unit/trace_analysis/test_rank_cache.py holds a digest of the recordings' analyses and fails,
# saying so, when they change under the same number.
ANALYSIS_VERSION = 16  # 16: XLA's fusions on ROCm (name.kd) are fused kernels; 15: no bare "broadcast" taken for a collective (Eigen's, XLA's broadcast fusions), XLA's collectives by their HLO opcode; 14: launch.one_over_cutoff_us (the only launch call over the cutoff); 13: steps cut at the profiler's span or found between optimizer steps, data_notes (events of categories no analysis reads); 12: a GPU idle gap begun in a pageable copy is its memory_copies (its host time the copy's innermost operator); 11: the account splits a jitted JAX step's call like a tf.function's (graph_runtime); 10: the account's unused_gradients_per_step, unused_backward_per_step_ms; 9: the account's allocations_named (the script's tensors made each step: memory_management); 8: the account's copies_per_step_ms and copies_named; 7: the account's scalar_reads_per_step; 6: the account splits a tf.function graph call
# into its kernels and dispatch (graph_calls_per_step); 5: the three 3s of one day merged (kernel_mix; the float64 / input-Python keys;
# between_cycles); 2: the account's debug_checks, compilation_named, loader_starts_per_step, between_steps_ms, gpu
RANK_FORMAT = 1
RANK_SUFFIX = ".rank.json"


def rank_entry_key(file_keys: list[str]) -> str:
    """The entry name of the rank whose files have the trace cache keys ``file_keys`` (in merge order)."""
    ident = json.dumps([RANK_FORMAT, ANALYSIS_VERSION, peak_table(), list(file_keys)], sort_keys=True)
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()


def rank_entry_path(cache: TraceCache, key: str) -> Path:
    return cache.folder / f"{key}{RANK_SUFFIX}"


def load_rank(cache: TraceCache, key: str) -> tuple[dict, dict] | None:
    """The rank's ``(doc, totals)`` kept under ``key``, or None: absent, or unusable (then removed)."""
    where = rank_entry_path(cache, key)
    # absent (the usual miss), unreadable, no regular file or past the bound: analysed again
    return take_entry(cache, where, read_kept(where, cache.max_bytes), lambda found: _decode(found, key))


def store_rank(cache: TraceCache, key: str, doc: dict, totals: dict) -> tuple[dict, dict] | None:
    """Keep the rank's ``doc`` and ``totals`` under ``key`` (best effort: a read-only or full folder keeps
    nothing); the decoded copy an entry gives back, what the run goes on with, or None when JSON would not give
    them back exactly (then nothing is kept and the run goes on with its own)."""
    try:
        body = json.dumps([doc, _listed(totals)], ensure_ascii=True, allow_nan=True).encode("ascii")
    except (TypeError, ValueError, OverflowError):  # a value JSON does not hold (a numpy integer)
        return None
    decoded = _restored(json.loads(body))
    if decoded is None or not same_values([doc, totals], list(decoded)):
        return None
    if not cache.writable:
        return decoded
    entry = sealed(RANK_FORMAT, key, body)
    put_entry(cache, rank_entry_path(cache, key), lambda handle: handle.write(entry))
    return decoded


def same_values(a, b) -> bool:
    """``a`` and ``b`` hold the same values of the same kinds (a float subclass as its float, NaN equal to NaN,
    -0.0 apart from 0.0; dict keys in the same order)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) and type(b) is float:
        a = float(a)
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return a == b


def _listed(totals: dict) -> dict:
    """``totals`` (kind -> name -> (total µs, count)) with its pairs as lists, as JSON writes them."""
    return {kind: {name: list(pair) for name, pair in names.items()} for kind, names in totals.items()}


def _restored(value) -> tuple[dict, dict] | None:
    """``[doc, totals]`` as decoded, the totals' pairs as tuples again; None when it is not of that shape."""
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], dict) and isinstance(value[1], dict)):
        return None
    doc, totals = value
    if not all(isinstance(names, dict) and all(isinstance(p, list) and len(p) == 2 for p in names.values())
               for names in totals.values()):
        return None
    return doc, {kind: {name: tuple(pair) for name, pair in names.items()} for kind, names in totals.items()}


def _decode(raw: bytes, key: str) -> tuple[dict, dict] | None:
    """An entry's ``(doc, totals)`` when it is whole and this key's, else None."""
    opened = unsealed(raw, RANK_FORMAT, key)
    if opened is None:
        return None
    try:
        return _restored(json.loads(opened[1]))
    except (ValueError, RecursionError):
        return None


__all__ = ["ANALYSIS_VERSION", "RANK_FORMAT", "RANK_SUFFIX", "load_rank", "rank_entry_key", "rank_entry_path",
           "same_values", "store_rank"]
