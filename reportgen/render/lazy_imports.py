"""Packages the page's worker imports only because a library names them at its top, executed on first use.

papermill imports ``requests`` (its HTTP notebook handler) and ``click`` (its command line's help), beautifulsoup4
imports ``soupsieve`` (CSS selectors), bleach imports ``tinycss2`` (its CSS sanitizer, which nbconvert leaves off),
html5lib ``webencodings``, jupyter_core ``platformdirs`` (only with ``JUPYTER_PLATFORM_DIRS``), nbconvert's filters
``bleach`` (its sanitizer) and its PDF exporter ``asyncio`` (for its headless browser; with ``ssl``, ~0.015 CPU s;
IPython runs a cell's code without it): a page made by the worker never touches any of them, yet their imports
were ~0.07 of the worker's ~0.65 CPU s (2 x 100 MB set, benchmarks/HISTORY.md, *The page's process*). ``lazy(LAZY)`` around the worker's warm-up makes each of these a
lazy module (``importlib.util.LazyLoader``, the standard library's): the ``import`` statement binds the module,
whose code runs the first time one of its names is read, or a submodule of it is imported, in full and once.
Nothing else changes: a page that does use one (a notebook read over HTTP) loads it then.

``left_out(LEFT_OUT)`` has a few modules that a library imports only if it can (``try: ... except ImportError``)
missing during the warm-up: the library goes on without them, as where they are not installed. Besides nbconvert's
``serve`` post-processor: beautifulsoup4's encoding detectors (``bs4.dammit``: cchardet, chardet or
charset_normalizer, ~0.01 CPU s; bs4 is imported by nbconvert's HTML exporter for the pass ``render.html``'s
exporter skips, and detects encodings only of bytes it is given) and the optional format checkers of jsonschema
(``jsonschema._format``: rfc3339_validator, idna, jsonpointer and others, ~0.005; nbformat's validators check no
``format``).

Only in the worker process: its warm-up and its one page run on one thread (the standard library's lazy module
is not safe against two threads loading it at once before Python 3.12), and only pure-Python packages found on
``sys.path`` are made lazy (an extension module or a namespace package is imported as usual).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import Iterator

LAZY = ("requests", "click", "bleach", "asyncio", "soupsieve", "tinycss2", "webencodings", "platformdirs")
# Modules a library imports only inside ``try: ... except ImportError`` and a page never uses: nbconvert's ``serve``
# post-processor (``--post serve``: tornado's web server and ``webbrowser``; nbconvert sets ``ServePostProcessor``
# to None without it), ~14 of the worker's ~650 CPU ms. ``left_out()`` has them missing while the warm-up imports.
# bs4.dammit's encoding detectors and jsonschema._format's optional checkers: each imported inside ``try`` or
# ``with suppress(ImportError)``, for work nothing of the page asks of them.
LEFT_OUT = ("nbconvert.postprocessors.serve", "tornado", "cchardet", "chardet", "charset_normalizer", "fqdn", "idna", "rfc3987",
            "rfc3986_validator", "rfc3339_validator", "webcolors", "jsonpointer", "uri_template", "isoduration")


class _LazyFinder(importlib.abc.MetaPathFinder):
    """Finds ``names`` as the other finders do and hands their source loader wrapped in a ``LazyLoader``."""

    def __init__(self, names) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            if isinstance(spec.loader, importlib.machinery.SourceFileLoader):
                spec.loader = importlib.util.LazyLoader(spec.loader)
            return spec
        return None


@contextlib.contextmanager
def finder_first(finder: importlib.abc.MetaPathFinder) -> Iterator[None]:
    """While in it, ``finder`` is asked first by every import (the head of ``sys.meta_path``); afterwards it is gone."""
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


@contextlib.contextmanager
def lazy(names=LAZY) -> Iterator[None]:
    """While in it, a first import of one of ``names`` (top-level packages) gives a lazy module; afterwards imports
    are as ever (the lazy modules made stay lazy until used)."""
    with finder_first(_LazyFinder(names)):
        yield


@contextlib.contextmanager
def left_out(names=LEFT_OUT) -> Iterator[None]:
    """While in it, importing one of ``names`` (modules not imported yet) raises ImportError, as if not installed;
    afterwards they import as ever. Only for modules whose importers catch that (``LEFT_OUT``)."""
    missing = [name for name in names if name not in sys.modules]
    for name in missing:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "not found here"
    try:
        yield
    finally:
        for name in missing:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


__all__ = ["LAZY", "LEFT_OUT", "finder_first", "lazy", "left_out"]
