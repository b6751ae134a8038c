"""The page and report.json kept in the user cache, so a re-run over the same rule outputs makes no page twice.

Issue 51: with each trace's reduction and each rank's analysis cached, what a warm ``generate`` still spent was
mostly the page's process: papermill, the notebook's cells and nbconvert, ~1.6-2.0 CPU s, the same every run.
The page is a pure function of what this module keys it by, so a second run serves the first one's bytes:

* the rule-output files the notebook reads (each ``*.json`` of the rule-output folder and the extras beside it,
  ``sources.layout.RULE_EXTRA_NAMES``, found as ``rule_outputs`` finds them; ``compare``'s notebook: both sides')
  and the prices file, by content;
* the notebook's parameters, the work folder's path left out (the page never shows it);
* the code that makes the page: every file of reportgen (its templates, notebooks and plotly.js included),
  hashed once per process, each file's digest taken from the digest memo where it knows the file's identity
  (``readers/digest_memo.py``), the Python and the versions of the libraries that convert the notebook;
* the environment it reads (``REPORTGEN_*`` but the cache's own settings, ``TZ``) and ``PAGE_FORMAT``.

The one thing of a page that is not a function of these is the time it says it was made: the page is made with a
placeholder in its place (``fixed_generation_time``, read by the notebook through ``generation_time``) and each
run puts its own time in, the run that made it as much as every run served from the cache, so both hand out
the same bytes. A page whose report.json lacks the placeholder (made in a kernel process, where the placeholder
cannot reach) is not kept.

One entry is one ``<key>.page`` in the trace cache's folder, under its bound and eviction (``trace_cache``): a
header line (format, key, placeholder, the page's length, SHA-256 of the body), then the page and report.json.
Written under a temporary name and renamed into place; a cut, altered or foreign entry is removed and the page
made again; an entry that is no regular file (a link, a FIFO) is never opened, followed nor replaced.
``REPORTGEN_PAGE_CACHE=0`` turns only this cache off (the trace cache's ``--no-cache`` turns off both).

The key is known only once the rule outputs are, after the engine; the page's worker starts before it. A worker
started and killed on a hit cost 0.88-1.10 s of wall against 0.51-0.54 s without it (2 x 100 MB, load 4), so a
forecast (``source_stamp``: the local source's files as they lie on disk, and the run's options) remembers the
page its last run had (``<stamp>.page-hint``): where that page is kept, the run starts no worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import sys
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from reportgen.atomic import write_text_atomic
from reportgen.kept_file import read_kept, regular_or_absent
from reportgen.readers.digest_memo import DigestMemo
from reportgen.readers.trace_cache import (HASH_BLOCK, TraceCache, put_entry, remove_entry, sealed, take_entry,
                                           trace_cache_for, unsealed)
from reportgen.render.html import Page
from reportgen.resources import bundled
from reportgen.sources.layout import RULE_EXTRA_NAMES, find_rule_output_dir

# Bump when the layout of an entry or what the key covers changes.
PAGE_FORMAT = 1
PAGE_SUFFIX = ".page"
HINT_SUFFIX = ".page-hint"
MAX_STAMPED = 20_000  # a source of more files gets no forecast (the page's process is started as ever)
MAX_HINTS = 1024  # forecasts kept (the most recent)
HINT_LIMIT = 256  # a forecast holds one page key (64 hex digits): a larger file under its name is not one
PAGE_CACHE_ENV = "REPORTGEN_PAGE_CACHE"
# The environment that changes no page: where the caches are and how large, whether the page has a process.
NOT_KEYED = frozenset(("REPORTGEN_CACHE_DIR", "REPORTGEN_NO_CACHE", "REPORTGEN_CACHE_MAX_MB", PAGE_CACHE_ENV,
                       "REPORTGEN_NOTEBOOK_PROCESS", "REPORTGEN_DIGEST_MEMO"))
# What executes and converts the notebook besides reportgen (their versions are keyed).
LIBRARIES = ("papermill", "nbclient", "nbconvert", "nbformat", "jinja2", "markupsafe", "mistune", "pygments",
             "beautifulsoup4", "bleach", "traitlets", "ipython", "pandas", "numpy", "plotly")
TIME_FORMAT = "%Y-%m-%d %H:%M UTC"

_fixed_time: list[str] = []  # the placeholder the page being made says instead of its time (innermost last)


# ------------------------------------------------------------------------------------------------ the time


def generation_time() -> str:
    """The time a report says it was made: now, unless a page is being made for the cache (the placeholder)."""
    return _fixed_time[-1] if _fixed_time else datetime.now(timezone.utc).strftime(TIME_FORMAT)


@contextlib.contextmanager
def fixed_generation_time(text: str | None) -> Iterator[None]:
    """While in it, ``generation_time()`` is ``text`` (None: unchanged)."""
    if text is None:
        yield
        return
    _fixed_time.append(text)
    try:
        yield
    finally:
        _fixed_time.pop()


PLACEHOLDER = re.compile(r"reportgen-time-[0-9a-f]{32}")


def new_placeholder() -> str:
    """A word no data holds by chance, that no escaping (HTML, JSON, Markdown) changes."""
    return f"reportgen-time-{secrets.token_hex(16)}"


# ------------------------------------------------------------------------------------------------ the key


def file_digest(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes (following a link, as the notebook's read does); None for anything
    else (a FIFO is not waited on) or a file that cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            while block := handle.read(HASH_BLOCK):
                digest.update(block)
    except OSError:
        return None
    finally:
        os.close(fd)
    return digest.hexdigest()


def _input_files(rule_dir: Path) -> list | None:
    """``[name, digest]`` of each file the notebook reads of ``rule_dir`` (every ``*.json``, then each extra where
    ``rule_outputs._load_extra`` takes it: beside the folder first); None when one is no readable regular file."""
    found: list = []
    for path in sorted(rule_dir.glob("*.json")):
        digest = file_digest(path)
        if digest is None:
            return None
        found.append([path.name, digest])
    for name in RULE_EXTRA_NAMES:
        for where, candidate in (("beside", rule_dir.parent / name), ("in", rule_dir / name)):
            if os.path.lexists(candidate):
                digest = file_digest(candidate)
                if digest is None:
                    return None
                found.append([where, name, digest])
                break
    return found


def code_roots() -> tuple[Path, ...]:
    """The folders of what makes a page: reportgen's package (plotly.js, the price table and, in a wheel, the
    notebooks and templates are in it) and, from a source checkout, the notebooks' and templates' folders."""
    package = Path(__file__).resolve().parents[1]
    return tuple(sorted({package, *(bundled(name).resolve() for name in ("notebooks", "templates"))}))


_code_digests: dict[tuple[Path, ...], str] = {}  # code_roots() -> tree_digest, once per process


def code_digest(memo: DigestMemo | None = None) -> str:
    """SHA-256 of ``code_roots()``'s files, once per process: any change to what makes a page is a miss, a
    version bump or not. ``memo`` (the cache folder's, ``readers/digest_memo.py``): each file's digest taken
    from it where the file's identity on disk is one it holds, so a run over unchanged code reads no byte of it
    (~2.3 MB, ~240 files, ~15 ms of CPU a run)."""
    roots = code_roots()
    if roots not in _code_digests:
        _code_digests[roots] = tree_digest(roots, memo)
    return _code_digests[roots]


def tree_digest(roots: tuple[Path, ...], memo: DigestMemo | None = None) -> str:
    """SHA-256 over every file under ``roots`` (their paths and the SHA-256 of their bytes; compiled files aside),
    each file's digest from ``memo`` when it holds the file's identity (the same value: the memo only spares the
    read)."""
    digest = hashlib.sha256()
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = Path(folder) / name
                digest.update(f"{path.relative_to(root.parent)}\0".encode("utf-8", "surrogatepass"))
                found = memo.digest(path) if memo is not None else None
                digest.update((found[0] if found is not None else file_digest(path) or "unreadable").encode("ascii"))
    return digest.hexdigest()


@lru_cache(maxsize=1)
def library_versions() -> tuple:
    """The Python and the versions of ``LIBRARIES`` (None: not installed), from the names of the installed
    distributions' metadata folders (``<name>-<version>.dist-info``) where imports find them: importing
    ``importlib.metadata`` alone took 46 ms, more than all the rest of the key."""
    wanted = {_normalized(name): name for name in LIBRARIES}
    versions: dict[str, str | None] = dict.fromkeys(LIBRARIES)
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            stem, dot, kind = folder.rpartition(".")
            if kind not in ("dist-info", "egg-info") or not dot:
                continue
            name, _, version = stem.partition("-")
            library = wanted.get(_normalized(name))
            if library is not None and versions[library] is None:
                versions[library] = version
    return sys.version, sorted(versions.items())


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def page_key(parameters: dict, work_dir: Path, environ=None, memo: DigestMemo | None = None) -> str | None:
    """The entry name of the page the notebook makes with ``parameters`` (papermill's) in ``work_dir``; None when
    it cannot be told (no rule-output folder, an input that is no regular file, a value JSON cannot hold).
    ``generate``'s notebook reads the rule outputs at ``source``, ``compare``'s at each side's ``rule_dir``.
    ``memo``: the code's files' digests remembered (``code_digest``)."""
    environ = os.environ if environ is None else environ
    keyed = {name: value for name, value in parameters.items() if name != "output_dir"}
    inputs: list = []
    for side in ((None,) if "source" in parameters else ("a", "b")):
        holder = parameters if side is None else parameters.get(side)
        name = "source" if side is None else "rule_dir"
        if not (isinstance(holder, dict) and holder.get(name)):
            return None
        source = Path(str(holder[name]))
        rule_dir = find_rule_output_dir(source) if source.is_dir() else None
        found = _input_files(rule_dir) if rule_dir is not None else None
        if found is None:
            return None
        inputs.append(found)
        if _in_folder(source, work_dir):  # the run's own rule outputs: where the work folder is does not count
            where = ["work", str(source.resolve().relative_to(Path(work_dir).resolve()))]
            keyed.update({name: where} if side is None else {side: {**holder, name: where}})
    cost = parameters.get("cost")
    prices = parameters.get("prices_file") or (cost.get("prices_file") if isinstance(cost, dict) else None)
    prices_digest = file_digest(Path(prices)) if prices else None
    if prices and prices_digest is None:
        return None
    env = sorted((name, value) for name, value in environ.items()
                 if (name.startswith("REPORTGEN_") and name not in NOT_KEYED) or name == "TZ")
    try:
        ident = json.dumps([PAGE_FORMAT, keyed, inputs[0] if len(inputs) == 1 else inputs, prices_digest,
                            code_digest(memo), library_versions(), env], sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(ident.encode("ascii")).hexdigest()


def _in_folder(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(Path(folder).resolve())


# ------------------------------------------------------------------------------------------------ entries


def page_entry_path(cache: TraceCache, key: str) -> Path:
    return cache.folder / f"{key}{PAGE_SUFFIX}"


def load_page(cache: TraceCache, key: str) -> tuple[str, str, str] | None:
    """The page, report.json's text and their placeholder kept under ``key``, or None: absent, no regular file
    (left alone), or unusable (then removed)."""
    where = page_entry_path(cache, key)
    if not regular_or_absent(where):
        return None
    return take_entry(cache, where, read_kept(where, cache.max_bytes), lambda raw: _decode(raw, key))


def store_page(cache: TraceCache, key: str, placeholder: str, html: str, json_text: str) -> bool:
    """Keep the page and report.json (each holding ``placeholder`` for its time) under ``key``; best effort: a
    read-only or full folder, or a non-regular file under the name, keeps nothing."""
    where = page_entry_path(cache, key)
    if not cache.writable or not regular_or_absent(where):
        return False
    page = html.encode("utf-8", "surrogatepass")
    body = page + json_text.encode("utf-8", "surrogatepass")
    entry = sealed(PAGE_FORMAT, key, body, placeholder=placeholder, html_bytes=len(page))
    return put_entry(cache, where, lambda handle: handle.write(entry))


def _decode(raw: bytes, key: str) -> tuple[str, str, str] | None:
    opened = unsealed(raw, PAGE_FORMAT, key)
    if opened is None:
        return None
    header, body = opened
    try:
        size, placeholder = header.get("html_bytes"), header.get("placeholder")
        if not (type(size) is int and 0 <= size <= len(body) and isinstance(placeholder, str)
                and PLACEHOLDER.fullmatch(placeholder)):  # only ever a placeholder is replaced by the time
            return None
        return (body[:size].decode("utf-8", "surrogatepass"), body[size:].decode("utf-8", "surrogatepass"),
                placeholder)
    except (ValueError, RecursionError):  # JSON that is not, bytes that are not UTF-8
        return None


# ------------------------------------------------------------------------------------------------ the forecast


def source_stamp(source: str, settings: str, memo: DigestMemo | None = None) -> str | None:
    """A cheap name for a local source as it lies on disk (each file's path under it, size, mtime, ctime and
    inode) run with ``settings`` (the run's options, as text): what tells, before any work, that the page will
    likely come from the cache. None for a source that is no local path or holds more than ``MAX_STAMPED``
    files. Only a forecast: the page itself is served by ``page_key``, never by this. ``memo``: as ``page_key``'s."""
    try:
        path = Path(source).expanduser()
        top = os.stat(path)
        where = str(path.resolve())
    except (OSError, ValueError, RuntimeError):  # s3://, a job's name or ARN, ~unknown-user, a link loop: none
        return None
    rows: list = []
    if stat.S_ISDIR(top.st_mode):
        for folder, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                if len(rows) >= MAX_STAMPED:
                    return None
                try:
                    st = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                rows.append([os.path.relpath(os.path.join(folder, name), path), st.st_size, st.st_mtime_ns,
                             st.st_ctime_ns, st.st_ino])
    else:
        rows.append(["", top.st_size, top.st_mtime_ns, top.st_ctime_ns, top.st_ino])
    ident = json.dumps([PAGE_FORMAT, where, settings, code_digest(memo), rows])
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()


def sources_stamp(sources: list[str], settings: str, memo: DigestMemo | None = None) -> str | None:
    """``source_stamp`` of several sources run together (``compare``'s two sides); None when one has none."""
    stamps = [source_stamp(source, settings, memo) for source in sources]
    if None in stamps:
        return None
    return hashlib.sha256(json.dumps([PAGE_FORMAT, settings, stamps]).encode("ascii")).hexdigest()


def hint_path(cache: TraceCache, stamp: str) -> Path:
    return cache.folder / f"{stamp}{HINT_SUFFIX}"


def expects_hit(cache: TraceCache | None, stamp: str | None) -> bool:
    """The last run of this stamp's source and settings left a page that is still in the cache."""
    if cache is None or stamp is None:
        return False
    kept = read_kept(hint_path(cache, stamp), HINT_LIMIT)
    if kept is None or not re.fullmatch(rb"[0-9a-f]{64}", kept):
        return False
    try:
        return stat.S_ISREG(os.lstat(page_entry_path(cache, kept.decode("ascii"))).st_mode)
    except OSError:
        return False


def _remember(cache: TraceCache, stamp: str | None, key: str) -> None:
    """The stamp's page is ``key`` (``expects_hit`` of the next run); best effort."""
    if stamp is None or not cache.writable or read_kept(hint_path(cache, stamp), HINT_LIMIT) == key.encode("ascii"):
        return
    if regular_or_absent(hint_path(cache, stamp)):
        if put_entry(cache, hint_path(cache, stamp), lambda handle: handle.write(key.encode("ascii"))):
            prune_hints(cache)


def prune_hints(cache: TraceCache, keep: int = MAX_HINTS) -> int:
    """Remove all but the ``keep`` most recent forecasts: 64 bytes each, the folder's size bound would let a CI
    cache gather one per run for ever; returns how many went."""
    try:
        hints = [(item.stat(follow_symlinks=False).st_mtime_ns, item.name) for item in os.scandir(cache.folder)
                 if item.name.endswith(HINT_SUFFIX) and item.is_file(follow_symlinks=False)]
    except OSError:
        return 0
    return sum(remove_entry(cache.folder / name) for _, name in sorted(hints)[:max(len(hints) - keep, 0)])


# ------------------------------------------------------------------------------------------------ a run's page


def page_cache_for(cache_dir: Path | None = None, environ=None) -> TraceCache | None:
    """The trace cache's folder (``trace_cache.trace_cache_for``: off with ``REPORTGEN_NO_CACHE``), unless
    ``REPORTGEN_PAGE_CACHE=0`` turns the page cache alone off; a folder that cannot be made is a silent miss."""
    environ = os.environ if environ is None else environ
    if environ.get(PAGE_CACHE_ENV, "").strip() == "0":
        return None
    return trace_cache_for(cache_dir, None, environ)



def cached_page(make: Callable, parameters: dict, work_dir: Path, cache: TraceCache | None,
                progress: Callable[[str], None], stamp: str | None = None, json_name: str = "report.json",
                notebook: str = "analysis", making: str | None = None):
    """The page (``render.html.Page``) of ``parameters`` with report.json (``json_name``: compare.json, of the
    ``notebook`` "comparison") written into ``work_dir``, as ``make(placeholder)`` gives them (``make`` executes the notebook, saying ``placeholder``
    for the time; None: the time itself) but from ``cache`` when it holds them; either way with this run's own
    time in both. ``stamp`` (``source_stamp``): remembered as this page's, for the next run's forecast.
    ``making``: what the progress says while ``make`` runs (default: the notebook executed and converted; compare's
    Markdown is built in this process)."""
    key = page_key(parameters, work_dir, memo=cache.memo) if cache is not None else None
    produced = Path(work_dir) / json_name
    if cache is not None and key is not None:
        hit = load_page(cache, key)
        if hit is not None:
            html, json_text, placeholder = hit
            progress(f"the page and {json_name} from the page cache in {cache.folder} (same rule outputs, "
                     "parameters and code): no notebook executed")
            now = generation_time()
            write_text_atomic(produced, json_text.replace(placeholder, now))
            _remember(cache, stamp, key)
            return Page(html.replace(placeholder, now))
    progress(making or f"executing the {notebook} notebook and converting it to HTML")
    if key is None:
        return make(None)
    placeholder = new_placeholder()
    page = make(placeholder)
    try:
        json_text = produced.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # the notebook wrote no report.json: the pipeline says so
        return page
    # Kept only when the time is the placeholder's and the inputs are still what was keyed (a user's folder
    # rewritten while the notebook read it is not; the run's own rule outputs in its work folder cannot be); an
    # executed notebook kept beside the page (--keep-notebook) is not.
    if placeholder in json_text and page.notebook is None and (
            _in_folder(Path(str(parameters.get("source"))), work_dir) or page_key(parameters, work_dir, memo=cache.memo) == key):
        if store_page(cache, key, placeholder, page.html, json_text):
            _remember(cache, stamp, key)
    now = generation_time()
    if placeholder in json_text:
        write_text_atomic(produced, json_text.replace(placeholder, now))
    notebook = page.notebook.replace(placeholder, now) if page.notebook is not None else None
    return Page(page.html.replace(placeholder, now), notebook)

__all__ = ["PAGE_CACHE_ENV", "PAGE_FORMAT", "PAGE_SUFFIX", "cached_page", "code_digest", "code_roots", "expects_hit", "file_digest",
           "fixed_generation_time", "generation_time", "library_versions", "load_page", "new_placeholder",
           "page_cache_for", "page_entry_path", "page_key", "prune_hints", "source_stamp", "sources_stamp", "store_page",
           "tree_digest"]
