"""The page's Jinja templates kept compiled in the trace cache's folder, so a run compiles none it compiled before.

Jinja turns every template into Python source and compiles it on each load: the 13 block templates and nbconvert's
page template cost the page's worker ~0.05 CPU s of its ~0.65 every run (benchmarks/HISTORY.md, *The page's
process*), for templates that change only with reportgen. ``TemplateCache`` is Jinja's own extension point for that
(``jinja2.BytecodeCache``: it hands a template's compiled code to keep, and asks for it before compiling), with
entries like the other caches of the folder (``readers.trace_cache``):

* keyed by content: the template's source (SHA-1, Jinja's checksum), its name and file, the settings of the
  environment that change its compiled code (delimiters, whitespace, autoescape, extensions, the filters' and
  tests' names and what each is passed), Jinja's version and the Python's. A changed template is a new entry; the
  old one ages out;
* one ``<key>.jinja`` file: a header line (format, key, SHA-256 of the body) and the code (``marshal``, as Python's
  own ``__pycache__`` keeps it; Jinja's own format would also unpickle its checksum). Written under a temporary
  name and renamed (``put_entry``); a cut, altered or foreign entry is removed and the template compiled again; an
  entry that is no regular file (a link, a FIFO) is never opened, followed nor replaced; at most ``MAX_ENTRY_BYTES``
  read;
* under the folder's bound and eviction (``trace_cache.ENTRY_SUFFIXES``), on and off with the page cache
  (``--no-cache``, ``REPORTGEN_NO_CACHE``, ``REPORTGEN_PAGE_CACHE=0``, ``--keep-notebook``, ``--debug``: templates
  compiled every run, as before), only read in a read-only folder. ``generate`` hands the folder to the page's
  worker (``render.worker``'s ``--template-cache``), which compiles the templates in its warm-up.

Like ``__pycache__``, an entry is code run by this process: the folder is the user's own cache folder.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import types
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from reportgen.environment import megabytes
from reportgen.errors import InputError
from reportgen.kept_file import read_kept, regular_or_absent
from reportgen.readers.trace_cache import TraceCache, put_entry, sealed, take_entry, unsealed

TEMPLATE_FORMAT = 1
TEMPLATE_SUFFIX = ".jinja"
MAX_ENTRY_BYTES = 8 << 20  # the largest compiled template here is ~60 kB
# What of an environment goes into its templates' compiled code (the rest is looked up when they run).
SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
            "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
            "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async")


class TemplateCache(jinja2.BytecodeCache):
    """Compiled templates in ``cache``'s folder (see the module docstring)."""

    def __init__(self, cache: TraceCache) -> None:
        self.cache = cache

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None, source: str) -> Bucket:
        checksum = self.get_source_checksum(source)
        bucket = Bucket(environment, template_key(environment, name, filename, checksum), checksum)
        self.load_bytecode(bucket)
        return bucket

    def load_bytecode(self, bucket: Bucket) -> None:
        where = entry_path(self.cache, bucket.key)
        code = take_entry(self.cache, where, read_kept(where, MAX_ENTRY_BYTES), lambda raw: _decode(raw, bucket.key))
        if code is not None:
            bucket.code = code

    def dump_bytecode(self, bucket: Bucket) -> None:
        where = entry_path(self.cache, bucket.key)
        if bucket.code is None or not self.cache.writable or not regular_or_absent(where):
            return
        body = marshal.dumps(bucket.code)
        entry = sealed(TEMPLATE_FORMAT, bucket.key, body)
        put_entry(self.cache, where, lambda handle: handle.write(entry))


def template_cache_in(folder: str | Path | None) -> TemplateCache | None:
    """The template cache of the trace cache's ``folder`` (None: none), bounded as the trace cache
    (``REPORTGEN_CACHE_MAX_MB``); None for a folder that is gone or no folder."""
    if not folder or not Path(folder).is_dir():
        return None
    try:
        bound = megabytes("REPORTGEN_CACHE_MAX_MB", os.environ)
    except InputError:  # the run says so itself
        return None
    return TemplateCache(TraceCache(Path(folder), bound, os.access(folder, os.W_OK | os.X_OK)))


def template_key(environment: jinja2.Environment, name: str, filename: str | None, checksum: str) -> str:
    """The entry name of ``name``'s code compiled by ``environment`` from the source of ``checksum``."""
    autoescape = environment.autoescape(name) if callable(environment.autoescape) else environment.autoescape
    ident = json.dumps([TEMPLATE_FORMAT, jinja2.__version__, sys.implementation.cache_tag, sys.version, name, filename,
                        checksum, bool(autoescape), [repr(getattr(environment, s)) for s in SETTINGS],
                        sorted(environment.extensions), _passed(environment.filters), _passed(environment.tests)])
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()


def _passed(functions: dict) -> list:
    """Each filter's or test's name and what Jinja passes it (context, environment...): compiled into the call."""
    return sorted([str(name), repr(getattr(function, "jinja_pass_arg", None))] for name, function in functions.items())


def entry_path(cache: TraceCache, key: str) -> Path:
    return cache.folder / f"{key}{TEMPLATE_SUFFIX}"


def _decode(raw: bytes, key: str) -> types.CodeType | None:
    opened = unsealed(raw, TEMPLATE_FORMAT, key)
    if opened is None:
        return None
    try:
        code = marshal.loads(opened[1])
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


__all__ = ["MAX_ENTRY_BYTES", "TEMPLATE_FORMAT", "TEMPLATE_SUFFIX", "TemplateCache", "entry_path", "template_cache_in",
           "template_key"]
