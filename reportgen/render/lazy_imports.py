"""Packages the page's worker imports only because a library names them at its top, executed on first use.

papermill imports ``requests`` (its HTTP notebook handler) and ``click`` (its command line's help), beautifulsoup4
imports ``soupsieve`` (CSS selectors), bleach imports ``tinycss2`` (its CSS sanitizer, which nbconvert leaves off),
html5lib ``webencodings``, jupyter_core ``platformdirs`` (only with ``JUPYTER_PLATFORM_DIRS``): a page made by the
worker never touches any of them, yet their imports were ~0.07 of the worker's ~0.65 CPU s (2 x 100 MB set,
benchmarks/README.md, *The page's process*). ``lazy(LAZY)`` around the worker's warm-up makes each of these a
lazy module (``importlib.util.LazyLoader``, the standard library's): the ``import`` statement binds the module,
whose code runs the first time one of its names is read, or a submodule of it is imported, in full and once.
Nothing else changes: a page that does use one (a notebook read over HTTP) loads it then.

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

LAZY = ("requests", "click", "soupsieve", "tinycss2", "webencodings", "platformdirs")


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
def lazy(names=LAZY) -> Iterator[None]:
    """While in it, a first import of one of ``names`` (top-level packages) gives a lazy module; afterwards imports
    are as ever (the lazy modules made stay lazy until used)."""
    finder = _LazyFinder(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


__all__ = ["LAZY", "lazy"]
