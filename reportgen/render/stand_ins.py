"""Modules the page's worker imports only because a library names them at its top, stood in for until first used.

``render.lazy_imports`` defers a package a library binds with ``import X``. Most of what is left of the worker's
imports that a page never runs is bound with ``from X import Name`` instead, which reads the name at once (a lazy
module would run at that read), or is subclassed at the importer's top:

* nbclient's ``NotebookClient`` (papermill's ``clientwrap`` and nbconvert's ``ExecutePreprocessor`` subclass it,
  nbconvert imports nbclient for an exception's old name): it brings jupyter_client, pyzmq and tornado, ~0.05 CPU s.
  The page runs on ``render.inprocess``'s engine, which uses none of them;
* nbconvert's markdown filter (mistune, pygments' lexers, bs4) and sanitizer (bleach, html5lib), and bs4's
  ``BeautifulSoup`` in its HTML exporter: ~0.06. The report's template calls no filter of theirs, and
  ``render.html``'s exporter skips the bs4 pass;
* papermill's plugins: its import reads every installed distribution's entry points (the ``entrypoints``
  package, twice, ~0.017) for engines and I/O handlers of other packages; the page reads a local notebook on
  our engine.

``stand_ins(STAND_INS)`` around the worker's warm-up has a first import of each named module give a stand-in: each
listed name of it is a ``Deferred``, which loads the real module the first time it is called, subclassed
(``__mro_entries__``), checked with ``isinstance``/``issubclass`` or has an attribute read, then acts on the real
object; any other name read from the stand-in loads the real module too (a library version that imports more of it
is slower, never wrong). The import binds the stand-in; the real module, once loaded, replaces it in
``sys.modules``. A deferred name is never caught as an exception (``except Name`` needs a class): the names below
are classes and functions only. ``no_plugins()`` has ``entrypoints`` find no entry point while the warm-up imports.
Afterwards imports are as ever.

Only in the worker process: its warm-up and its page run on one thread, and no loading here is locked.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Iterator

from reportgen.render.lazy_imports import finder_first

# module: its names the importers bind, each loading the real module at its first use
STAND_INS: dict[str, tuple[str, ...]] = {
    "papermill.clientwrap": ("PapermillNotebookClient",),
    "nbclient.client": ("NotebookClient", "execute"),
    "nbconvert.preprocessors.execute": ("ExecutePreprocessor", "executenb"),
    "nbconvert.preprocessors.sanitize": ("SanitizeHTML", "_get_default_css_sanitizer"),
    "nbconvert.filters.markdown_mistune": ("markdown2html_mistune", "IPythonRenderer", "MarkdownWithMath"),
    "bs4": ("BeautifulSoup",),
}
PLUGINS = "entrypoints"  # papermill's: get_group_all(group) at its import, for its engines and I/O handlers


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the modules of ``stand_ins`` (until each is loaded for real) and makes their stand-ins."""

    def __init__(self, modules: dict[str, tuple[str, ...]]) -> None:
        self.modules = dict(modules)
        self.released: set[str] = set()  # loaded for real (or being loaded): found by the other finders

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.modules or fullname in self.released:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None  # a plain module

    def exec_module(self, module) -> None:
        name = module.__name__
        for attribute in self.modules[name]:
            setattr(module, attribute, Deferred(self, name, attribute))
        module.__getattr__ = lambda attribute: self.real_attribute(name, attribute)  # type: ignore[attr-defined]

    def real_attribute(self, name: str, attribute: str):
        """Another name read from the stand-in of ``name``: the real module's. A dunder name the import system looks
        for (``__path__``: the stand-in is no package) is missing, as on a plain module."""
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return getattr(self.real(name), attribute)

    def is_stand_in(self, module) -> bool:
        return getattr(getattr(module, "__spec__", None), "loader", None) is self

    def real(self, name: str) -> types.ModuleType:
        """The real module ``name``, imported the first time (its stand-in leaves ``sys.modules``)."""
        self.released.add(name)
        if self.is_stand_in(sys.modules.get(name)):
            del sys.modules[name]
        return importlib.import_module(name)


class Deferred:
    """A name a stand-in module gives: the real object of the real module, loaded at the first use."""

    __slots__ = ("_finder", "_module", "_name")

    def __init__(self, finder: _StandInFinder, module: str, name: str) -> None:
        self._finder, self._module, self._name = finder, module, name

    def real(self) -> Any:
        return getattr(self._finder.real(self._module), self._name)

    def __call__(self, *args, **kwargs):
        return self.real()(*args, **kwargs)

    def __getattr__(self, attribute: str):
        return getattr(self.real(), attribute)

    def __mro_entries__(self, bases):
        return (self.real(),)

    def __instancecheck__(self, instance) -> bool:
        return isinstance(instance, self.real())

    def __subclasscheck__(self, subclass) -> bool:
        return issubclass(subclass, self.real())

    def __repr__(self) -> str:
        return f"<stand-in for {self._module}.{self._name}>"


@contextlib.contextmanager
def stand_ins(modules: dict[str, tuple[str, ...]] | None = None) -> Iterator[None]:
    """While in it, a first import of one of ``modules`` (default ``STAND_INS``) gives its stand-in; afterwards
    imports are as ever (a stand-in still in ``sys.modules`` leaves it; what bound its names keeps them)."""
    finder = _StandInFinder(STAND_INS if modules is None else modules)
    try:
        with finder_first(finder):
            yield
    finally:
        for name in finder.modules:
            if finder.is_stand_in(sys.modules.get(name)):
                del sys.modules[name]


@contextlib.contextmanager
def no_plugins() -> Iterator[None]:
    """While in it, ``entrypoints`` (not imported yet) finds no entry point: what imports it then registers no plugin
    (papermill: no engine or I/O handler of another package). Afterwards ``import entrypoints`` is as ever."""
    if PLUGINS in sys.modules:
        yield
        return
    finder = _StandInFinder({PLUGINS: ()})
    stand_in = types.ModuleType(PLUGINS, "A stand-in that finds no entry point (render.stand_ins.no_plugins).")
    stand_in.__spec__ = importlib.machinery.ModuleSpec(PLUGINS, finder)
    stand_in.get_group_all = lambda group, path=None: []  # type: ignore[attr-defined]
    stand_in.get_group_named = lambda group, path=None: {}  # type: ignore[attr-defined]
    stand_in.__getattr__ = lambda attribute: finder.real_attribute(PLUGINS, attribute)  # type: ignore[attr-defined]
    sys.modules[PLUGINS] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(PLUGINS) is stand_in:
            del sys.modules[PLUGINS]


__all__ = ["PLUGINS", "STAND_INS", "Deferred", "no_plugins", "stand_ins"]
