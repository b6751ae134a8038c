"""Run one corpus case the way a user would, and measure what came out.

``run_in_process`` calls ``reportgen.cli.main(["generate", ...])`` in this process with the notebook
kernel replaced by the same calls the notebook makes (``open_report`` -> header, every section,
``save_json``), so CLI error mapping, the pipeline, the engine, the loaders, the section builders, the
HTML blocks and the atomic writes are all the real ones, at a fraction of papermill's start-up cost.
``run_cli`` runs ``python -m reportgen generate`` in a subprocess, papermill included.

``records_used`` counts what the readers kept: non-NaN cells of every node's tick table, rows of the
framework event table, complete events of every Kineto trace, loaded rule outputs.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tests.support.paths import ROOT as CHECKOUT

ROOT = CHECKOUT


@dataclass
class Outcome:
    exit: int
    stderr: str
    traceback: str | None = None
    report: dict | None = None  # report.json
    html: str | None = None
    leftovers: list[str] = field(default_factory=list)  # files in the output folder besides the outputs

    @property
    def data_quality(self) -> dict:
        return (self.report or {}).get("sections", {}).get("data-quality") or {}

    @property
    def problems(self) -> dict:
        raw = self.data_quality.get("raw_data") or {}
        return raw.get("by_reason") or {}

    @property
    def notes(self) -> list[str]:
        return self.data_quality.get("notes") or []


# ------------------------------------------------------------------------------------------ hooks


@contextlib.contextmanager
def hook(spec: str | None, case_dir: Path, out_dir: Path):
    """Conditions made at run time (see make_corpus.py)."""
    if not spec:
        yield
        return
    if spec.startswith("vanish:"):
        with _vanish(case_dir / spec.split(":", 1)[1]):
            yield
    elif spec.startswith("unreadable:"):
        with _unreadable(case_dir / spec.split(":", 1)[1]):
            yield
    elif spec == "readonly-output":
        with _readonly(out_dir):
            yield
    elif spec == "disk-full":
        with _disk_full():
            yield
    elif spec == "disk-full-after-first":
        with _disk_full(after=1):
            yield
    else:
        raise ValueError(spec)


@contextlib.contextmanager
def _vanish(victim: Path):
    """Delete ``victim`` right after the reader listed it (the listing still names it)."""
    from reportgen.readers import framework as framework_reader, framework_files, system as system_reader

    saved = victim.read_bytes()
    # every module that holds the lister under its name (framework.py re-exports framework_files')
    modules, name = (([system_reader], "list_system_files") if "system" in victim.parts
                     else ([framework_files, framework_reader], "list_framework_files"))
    original = getattr(modules[0], name)

    def listed(*args, **kwargs):
        result = original(*args, **kwargs)
        victim.unlink(missing_ok=True)
        return result

    for module in modules:
        setattr(module, name, listed)
    try:
        yield
    finally:
        for module in modules:
            setattr(module, name, original)
        victim.write_bytes(saved)


@contextlib.contextmanager
def _unreadable(folder: Path):
    """chmod 000 (what a normal user meets); root reads such a folder anyway, so listing it is also
    refused with EACCES at the ``os.scandir`` boundary (``tests/test_reliability_round2.py`` checks
    the real thing as an unprivileged user)."""
    folder.chmod(0)
    real_scandir = os.scandir
    target = os.path.realpath(folder)

    def guarded(path=".", *args, **kwargs):
        if not isinstance(path, int) and os.path.realpath(os.fspath(path)) == target:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_scandir(path, *args, **kwargs)

    os.scandir = guarded
    try:
        yield
    finally:
        os.scandir = real_scandir
        folder.chmod(0o755)


@contextlib.contextmanager
def _readonly(folder: Path):
    """chmod 0555 (enough for a normal user); root ignores modes, so opening a new file in the folder
    is refused with EACCES at the OS-call boundary as well."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    real_open = os.open
    prefix = str(folder.resolve()) + os.sep

    def guarded(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and os.path.abspath(os.fspath(path)).startswith(prefix):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    os.open = guarded
    try:
        yield
    finally:
        os.open = real_open
        folder.chmod(0o755)


@contextlib.contextmanager
def _disk_full(after: int = 0):
    """Every write through reportgen's atomic writer and output commit fails with ENOSPC after the
    first 100 bytes."""
    from reportgen import atomic, output_set

    real_fdopen = atomic.os.fdopen

    opened = []

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        opened.append(fd)
        if len(opened) <= after:  # the first ``after`` files are written whole
            return handle
        real_write = handle.write

        def write(text):
            real_write(text[:100])
            handle.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        handle.write = write
        return handle

    class _Os:
        def __getattr__(self, name):
            return fdopen if name == "fdopen" else getattr(os, name)

    # ``after``: only the outputs' commit fills up (the work folder's report.json is written whole)
    if not after:
        atomic.os = _Os()
    output_set.os = _Os()
    try:
        yield
    finally:
        atomic.os = output_set.os = os


# ------------------------------------------------------------------------------------------ runs


def _fake_page_maker():
    """A stand-in for the page's worker (papermill + nbconvert) that makes the notebook's calls in this process."""
    from reportgen.notebook import open_report
    from reportgen.notebook_parameters import NotebookParameters
    from reportgen.render.blocks import render_header, render_section
    from reportgen.render.html import Page
    from reportgen.render.page_cache import fixed_generation_time

    class InThisProcess:
        def __init__(self, work_dir, notice=None, in_process=False, template_folder=None):
            pass

        def render(self, parameters: dict, notebook=None, keep_notebook=False, generated_at=None) -> Page:
            keys = NotebookParameters.opened()[1:]  # open_report's keywords (source is positional)
            with fixed_generation_time(generated_at):  # the page cache's placeholder, as the worker says it
                session = open_report(parameters["source"], **{k: parameters[k] for k in keys if k in parameters})
            page = [render_header(session.report, session.generated_at, "test")]
            page += [render_section(s) for s in session.report.sections]
            session.save_json(parameters["output_dir"])
            return Page("\n".join(page), "{}" if keep_notebook else None)

        def close(self):
            pass

    return InThisProcess


def run_in_process(source: Path, out_html: Path, hook_spec: str | None = None, case_dir: Path | None = None,
                   extra_args: list[str] | None = None) -> Outcome:
    from reportgen import cli, pipeline

    err = io.StringIO()
    tb = None
    saved = pipeline.NotebookProcess
    pipeline.NotebookProcess = _fake_page_maker()
    try:
        with hook(hook_spec, case_dir or source, out_html.parent), contextlib.redirect_stderr(err):
            extra = [a.replace("{out}", str(out_html.parent)) for a in extra_args or []]
            if extra:
                out_html.parent.mkdir(parents=True, exist_ok=True)
            code = cli.main(["generate", str(source), "-o", str(out_html), "-q", "--no-step-summary", *extra])
    except BaseException:  # noqa: BLE001 - a traceback is exactly what the corpus hunts for
        code, tb = -1, traceback.format_exc()
    finally:
        pipeline.NotebookProcess = saved
    return _collect(code, err.getvalue(), tb, out_html)


def run_cli(source: Path, out_html: Path, timeout: float = 300) -> Outcome:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(source), "-o", str(out_html), "-q"],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT))
    tb = proc.stderr if "Traceback (most recent call last)" in proc.stderr else None
    return _collect(proc.returncode, proc.stderr, tb, out_html)


def _collect(code: int, stderr: str, tb: str | None, out_html: Path) -> Outcome:
    outcome = Outcome(exit=code, stderr=stderr, traceback=tb)
    json_path = out_html.with_suffix(".json")
    if out_html.is_file():
        outcome.html = out_html.read_text(encoding="utf-8")
    if json_path.is_file():
        outcome.report = json.loads(json_path.read_text(encoding="utf-8"))
    if out_html.parent.is_dir():
        outcome.leftovers = sorted(p.name for p in out_html.parent.iterdir()
                                   if p.name not in (out_html.name, json_path.name))
    return outcome


# ------------------------------------------------------------------------------------------ records


def records_used(source: Path, hook_spec: str | None = None) -> dict:
    """What the readers kept from ``source`` (independently of the report)."""
    from reportgen.engine import load_data
    from reportgen.errors import ReportgenError
    from reportgen.trace_analysis import find_traces
    from reportgen.readers.kineto_trace import read_trace
    from reportgen.problems import ProblemLog
    from reportgen.rule_outputs import find_rule_output_dir, load_rule_outputs

    used: dict = {}
    with hook(hook_spec if hook_spec and hook_spec.startswith(("vanish:", "unreadable:")) else None, source, source):
        if (source / "system").is_dir() or (source / "framework").is_dir():
            try:
                data, _ = load_data(source)
                used["system_values"] = int(sum(np.count_nonzero(~np.isnan(n.values)) for n in data.nodes.values()))
                used["events"] = int(data.framework.n_events)
            except ReportgenError:
                used["system_values"], used["events"] = 0, 0
    traces = find_traces(source)
    if traces:
        used["kineto_events"] = int(sum(len(read_trace(p, ProblemLog()).start_us) for p in traces))
    rule_dir = find_rule_output_dir(source)
    if rule_dir is not None:
        try:
            used["rules"] = len(load_rule_outputs(rule_dir).rules)
        except ReportgenError:
            used["rules"] = 0
    return used
