"""The vocabulary of input layouts: every module that needs to know how profiler data is laid out
(locally or in S3) asks here.

SageMaker Debugger (spec Part A): a training job's raw profiler data is
``<S3OutputPath>/<job>/profiler-output/`` holding ``system/`` (system metrics) and ``framework/``
(framework traces); the ProfilerReport rule writes ``<job>/rule-output/ProfilerReport*/profiler-output/
profiler-reports/<Rule>.json`` (``profiler-report/`` in some versions). PyTorch profiler (Kineto)
traces are recognised by name (``*.pt.trace.json`` / ``*.pt.trace.json.gz``) or, for other
``*.json`` / ``*.json.gz`` files, by sniffing the first bytes for a Chrome trace with Kineto's
markers; SageMaker's own trees and rule-output folders are skipped (their JSON files belong to the
other readers).

Trace formats are rows of :data:`TRACE_FORMATS` (name, recogniser, reader): every format's reader turns
one file into the same trace columns (``reportgen.readers.kineto_trace.TraceColumns``), so the analysis, the
report and ``compare`` never ask which format a rank came from. A new format is one reader module and
one row here (docs/architecture.md, "Adding a trace format"). The reader is named by its dotted path
(``module:function``, resolved by ``reportgen.readers.trace_files``) because readers build the analysis
layer's columns, above this layer.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from reportgen.errors import expanduser
from reportgen.rulebook import RULE_ORDER

PROFILER_OUTPUT = "profiler-output"  # a job's raw profiler data (and the rule's own output folder)
RULE_OUTPUT = "rule-output"  # a job's rule outputs: rule-output/<RuleConfigurationName>/...
PROFILER_REPORT = "ProfilerReport"  # the rule that writes the report's inputs
RULE_DIR_NAMES = ("profiler-reports", "profiler-report")  # folders of <Rule>.json
RAW_DIR_NAMES = ("system", "framework")  # the trees of raw profiler data
RULE_JSON_NAMES = frozenset(f"{name}.json" for name in RULE_ORDER)
# reportgen's own files beside the rule JSONs: the engine's, the traces', and a recording's summary
RULE_EXTRA_NAMES = ("timeline.json", "data-quality.json", "kineto.json", "recording.json", "framework-account.json")
# Where rule outputs sit relative to what a user points at (layouts seen in the wild), in preference order.
RULE_OUTPUT_SUBDIRS = (
    "profiler-reports",
    "profiler-output/profiler-reports",
    "profiler-report",
    "profiler-output/profiler-report",
    "ProfilerReport/profiler-output/profiler-reports",
    "rule-output/ProfilerReport/profiler-output/profiler-reports",
    "profiler-output",
    ".",
)
# Folder names that are part of the layout, not of the job's name.
LAYOUT_FOLDERS = frozenset({PROFILER_OUTPUT, "profiler-reports", RULE_OUTPUT, PROFILER_REPORT})



def is_framework_trace(parts: tuple[str, ...]) -> bool:
    """Whether a file under a profile's ``framework/`` (the parts of its path, or of its S3 key) is a
    framework trace: a TF profiler ``*.trace.json.gz``, or a Chrome trace in a ``pevents`` folder
    named ``<END_US>_<node>_<kind>.json``. The local reader and the S3 listing of ``--scheduler`` ask here."""
    name = parts[-1] if parts else ""
    if name.endswith(".trace.json.gz"):
        return True
    return "pevents" in parts and name.endswith(".json") and len(name.split("_")) >= 3


SKIP_DIRS = frozenset({*RAW_DIR_NAMES, *RULE_DIR_NAMES, RULE_OUTPUT})
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_SNIFF_BYTES = 64 * 1024
_MARKERS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"cpu_op"', b'"Operator"',
            b'"ProfilerStep#', b'"cuda_runtime"', b'"kernel"')
_MAX_DEPTH = 6


def _head(path: Path) -> bytes:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read(_SNIFF_BYTES)
        with open(path, "rb") as handle:
            return handle.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        # A broken file with a trace name is still a trace (the reader records why it is broken).
        return b""


def looks_like_kineto(path: Path) -> bool:
    name = path.name
    if name.endswith(TRACE_SUFFIXES):
        return True
    if not (name.endswith(".json") or name.endswith(".json.gz")):
        return False
    head = _head(path)
    return b'"traceEvents"' in head and any(marker in head for marker in _MARKERS)


XSPACE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")


def looks_like_xspace(path: Path) -> bool:
    """An XSpace protobuf as JAX (``jax.profiler.trace``) and TensorFlow (``tf.profiler.experimental``)
    write it: ``<logdir>/plugins/profile/<run>/<host>.xplane.pb`` (recognised by its name alone; also
    gzip'd by the user)."""
    return path.name.endswith(XSPACE_SUFFIXES)


@dataclass(frozen=True)
class TraceFormat:
    """One trace format: how the report names it, how a file is recognised, which function reads it."""

    name: str
    recognise: Callable[[Path], bool]
    reader: str  # "module:function" taking (path, ProblemLog) and returning the trace columns
    suffixes: tuple[str, ...]  # names that are this format without looking inside (S3 listings select by them)


TRACE_FORMATS = (
    TraceFormat("PyTorch profiler (Kineto)", looks_like_kineto, "reportgen.readers.kineto_trace:read_trace", TRACE_SUFFIXES),
    TraceFormat("XSpace (JAX / TensorFlow profiler)", looks_like_xspace, "reportgen.readers.xspace_trace:read_xspace",
                XSPACE_SUFFIXES),
)
TRACE_NAME_SUFFIXES = tuple(s for fmt in TRACE_FORMATS for s in fmt.suffixes)


def trace_format(path: Path) -> TraceFormat | None:
    """The first row of :data:`TRACE_FORMATS` that recognises ``path`` (None: no trace)."""
    path = Path(path)
    return next((fmt for fmt in TRACE_FORMATS if fmt.recognise(path)), None)


PYTORCH_TRACES = "PyTorch profiler traces"
XSPACE_TRACES = "JAX / TensorFlow profiler traces"
XSPACE_FILE_ENDINGS = (".xplane.pb", ".xplane.pb.gz")  # JAX's and TensorFlow's XSpace files, gzip'd or not


def is_xspace_file(name: str) -> bool:
    """Whether a trace file's name is JAX's or TensorFlow's XSpace (``<host>.xplane.pb``, gzip'd or not): one test
    for every place that tells XSpace ranks from PyTorch's (a name test in one place missed ``.gz``)."""
    return str(name).lower().endswith(XSPACE_FILE_ENDINGS)


def traces_name(files: Iterable[object] | None) -> str:
    """What the report calls its traces, from their file names: "JAX / TensorFlow profiler traces" when every
    one is an XSpace file (``*.xplane.pb``, gzip'd or not), else "PyTorch profiler traces" (a JAX report called
    itself a PyTorch one)."""
    names = [str(getattr(f, "key", f)) for f in files or ()]
    xspace = [n for n in names if is_xspace_file(n)]
    return XSPACE_TRACES if names and len(xspace) == len(names) else PYTORCH_TRACES


def find_rule_output_dir(source: Path) -> Path | None:
    """The folder under ``source`` that holds the rule JSONs, or None if there is none."""
    for sub in RULE_OUTPUT_SUBDIRS:
        folder = (source / sub) if sub != "." else source
        if folder.is_dir() and any((folder / f"{rule}.json").is_file() for rule in RULE_ORDER):
            return folder
    return None


def traces_named(paths) -> str:
    """How messages name a set of trace files: "PyTorch profiler" while they are all Kineto traces (the
    words used before there were other formats), else their formats' names."""
    names = sorted({(trace_format(Path(str(p))) or TRACE_FORMATS[0]).name for p in paths})
    return "PyTorch profiler" if names in ([], [TRACE_FORMATS[0].name]) else " and ".join(names)


CHROME_COPY_SUFFIX = ".trace.json.gz"  # JAX's Chrome-JSON copy of the profile beside <host>.xplane.pb


def _superseded(path: Path, names: set[str]) -> bool:
    """JAX writes ``<host>.trace.json.gz`` (Chrome JSON) beside ``<host>.xplane.pb``: the same profile,
    read once (from the XSpace file, which holds everything; the copy is its fallback, ``sibling_copy``).
    An XSpace name that is no regular file (a FIFO, a folder) is not listed, so the copy is the profile."""
    name = path.name
    host = name[: -len(CHROME_COPY_SUFFIX)]
    return name.endswith(CHROME_COPY_SUFFIX) and any(
        host + suffix in names and (path.parent / (host + suffix)).is_file() for suffix in XSPACE_SUFFIXES)


def sibling_copy(path: Path) -> Path | None:
    """The same profile in another format beside ``path`` (``<host>.trace.json.gz`` beside
    ``<host>.xplane.pb``), read when ``path`` gives no event; None when there is none."""
    path = Path(path)
    for suffix in XSPACE_SUFFIXES:
        if path.name.endswith(suffix):
            copy = path.with_name(path.name[: -len(suffix)] + CHROME_COPY_SUFFIX)
            return copy if copy.is_file() else None
    return None


def find_traces(root: Path) -> list[Path]:
    """Every trace file of a format in :data:`TRACE_FORMATS` under ``root`` (sorted), not descending
    into SageMaker's trees."""
    root = Path(root)
    if root.is_file():
        return [root] if trace_format(root) is not None else []
    found: list[Path] = []
    base = len(root.parts)
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        if len(here.parts) - base >= _MAX_DEPTH:
            dirs[:] = []
        names = set(files)
        for name in sorted(files):
            if name in RULE_EXTRA_NAMES or name == "report.json":
                continue
            path = here / name
            if path.is_file() and trace_format(path) is not None and not _superseded(path, names):
                found.append(path)
    return sorted(found)


def read_from_source(path: Path, parts: tuple[str, ...]) -> bool:
    """Whether a file at ``path`` (``parts``: its path inside a local source folder) is one the readers of
    that folder take, or would take once it is there: a rule output or one of our files beside them, a
    file of SageMaker's raw or rule-output trees, a trace by its name or its content. An output elsewhere
    in the folder (``job/report.html`` and its ``report.json``) is no input (``output_set`` asks here)."""
    name = parts[-1] if parts else path.name
    if name in RULE_JSON_NAMES or name in RULE_EXTRA_NAMES or name.endswith(TRACE_NAME_SUFFIXES):
        return True
    if any(part in SKIP_DIRS for part in parts[:-1]) or is_framework_trace(parts):
        return True
    return name != "report.json" and path.is_file() and trace_format(path) is not None


# A TensorBoard log dir's usual names: they say nothing about the job, its parent folder does (a JAX report
# was titled "logdir").
GENERIC_LOG_DIRS = frozenset({"logdir", "log_dir", "logs", "log", "tensorboard", "tb_logs", "tblogs"})


def local_job_name(source: str) -> str:
    """A local folder's own name (or its parent's, for a profiler-output/ folder) names the job; ""
    when ``source`` is no existing path. Inside a TensorBoard log dir (``<logdir>/plugins/profile/<run>``) the
    log dir names it, and a log dir with a generic name (``logdir``, ``logs``, …) its parent."""
    path = expanduser(str(source)).resolve()
    while path.name in LAYOUT_FOLDERS and path.parent != path:
        path = path.parent
    parts = path.parts
    for i in range(len(parts) - 1, 0, -1):  # plugins, plugins/profile or plugins/profile/<run>: the log dir
        if parts[i] == "plugins" and parts[i + 1:i + 2] in ((), ("profile",)) and len(parts) - i <= 3:
            path = Path(*parts[:i])
            break
    if path.name.lower() in GENERIC_LOG_DIRS and (path / "plugins" / "profile").is_dir() and path.parent != path:
        path = path.parent
    return path.name if expanduser(str(source)).exists() else ""


def job_folder_name(path: Path) -> str:
    """The name of the folder that holds a job's profiler data (the layout's own folders passed
    over): a local folder is usually named after the job."""
    parts = [p for p in Path(path).parts if p not in ("/", *LAYOUT_FOLDERS)]
    return parts[-1] if parts else ""
