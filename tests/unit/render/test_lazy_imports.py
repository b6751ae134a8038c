"""The worker's lazy packages (render.lazy_imports): a named package imported inside ``lazy()`` runs its code only
when first used, once and whole, submodules included; other imports and imports after it are as ever. That a
page leaves the listed packages unused is tested on a real page in tests/e2e/test_page_worker.py."""

from __future__ import annotations

import importlib
import sys

import pytest

from reportgen.render.lazy_imports import LAZY, LEFT_OUT, lazy, left_out

PACKAGE = '''
import os
os.environ["{name}_RUNS"] = str(int(os.environ.get("{name}_RUNS", "0")) + 1)
VALUE = 41 + 1
'''


@pytest.fixture
def probes(tmp_path, monkeypatch):
    """Two packages on sys.path, each counting the runs of its code in the environment."""
    for name in ("rg_lazy_probe", "rg_eager_probe"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(PACKAGE.format(name=name.upper()), encoding="utf-8")
        (tmp_path / name / "sub.py").write_text("from . import VALUE\nTWICE = VALUE * 2\n", encoding="utf-8")
        monkeypatch.delenv(f"{name.upper()}_RUNS", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield
    for name in [m for m in sys.modules if m.startswith(("rg_lazy_probe", "rg_eager_probe"))]:
        del sys.modules[name]


def _runs(name: str) -> int:
    import os

    return int(os.environ.get(f"{name.upper()}_RUNS", "0"))


def test_a_named_package_runs_at_its_first_use_once(probes):
    finders = list(sys.meta_path)
    with lazy(("rg_lazy_probe",)):
        import rg_eager_probe
        import rg_lazy_probe
    assert sys.meta_path == finders  # the finder is gone with the block
    assert _runs("rg_eager_probe") == 1 and rg_eager_probe.VALUE == 42  # not named: imported as ever
    assert _runs("rg_lazy_probe") == 0  # bound, not run
    assert rg_lazy_probe.VALUE == 42
    assert _runs("rg_lazy_probe") == 1
    assert rg_lazy_probe.VALUE == 42 and _runs("rg_lazy_probe") == 1  # once


def test_a_submodule_of_a_lazy_package_loads_the_package_once_first(probes):
    with lazy(("rg_lazy_probe",)):
        import rg_lazy_probe  # noqa: F401
    from rg_lazy_probe.sub import TWICE

    assert TWICE == 84 and _runs("rg_lazy_probe") == 1


def test_an_import_after_the_block_is_eager(probes):
    with lazy(("rg_lazy_probe",)):
        pass
    import rg_lazy_probe  # noqa: F401

    assert _runs("rg_lazy_probe") == 1


def test_an_extension_module_is_imported_as_usual():
    if "_testcapi" in sys.modules:
        pytest.skip("imported already")
    with lazy(("_testcapi",)):
        try:
            import _testcapi
        except ImportError:
            pytest.skip("no _testcapi in this Python")
    assert type(_testcapi).__name__ == "module"  # not a lazy module: a compiled module is never wrapped
    assert isinstance(_testcapi.INT_MAX, int)


def test_the_worker_names_top_level_packages():
    assert "requests" in LAZY and all(name.isidentifier() for name in LAZY)


def test_a_left_out_module_is_missing_inside_the_block_and_imports_after_it(probes):
    with left_out(("rg_lazy_probe.sub",)):
        import rg_lazy_probe  # the package itself is not left out

        try:  # as nbconvert.postprocessors imports its serve post-processor
            from rg_lazy_probe.sub import TWICE
        except ImportError:
            TWICE = None
        assert TWICE is None and sys.modules["rg_lazy_probe.sub"] is None
    assert "rg_lazy_probe.sub" not in sys.modules
    from rg_lazy_probe.sub import TWICE

    assert TWICE == 84 and rg_lazy_probe.VALUE == 42


def test_a_module_imported_before_the_block_is_left_alone(probes):
    import rg_eager_probe.sub

    with left_out(("rg_eager_probe.sub",)):
        from rg_eager_probe.sub import TWICE
    assert TWICE == 84 and sys.modules["rg_eager_probe.sub"] is rg_eager_probe.sub


# Where each module the worker leaves out is imported, and how (the statement's start, as in the library's source).
IMPORTERS = {"nbconvert.postprocessors.serve": ("nbconvert.postprocessors", "from .serve import"),
             "tornado": ("tenacity", "import tornado"), "cchardet": ("bs4.dammit", "import cchardet"),
             "chardet": ("bs4.dammit", "import chardet"),
             "charset_normalizer": ("bs4.dammit", "import charset_normalizer"),
             **{name: ("jsonschema._format", f"import {name}") for name in ("idna", "rfc3987", "webcolors", "jsonpointer",
                                                                            "uri_template", "isoduration")},
             **{name: ("jsonschema._format", f"from {name} import") for name in ("fqdn", "rfc3986_validator",
                                                                                 "rfc3339_validator")}}


def _guard(source: str, statement: str) -> str:
    """The line that opens the block of the first line of ``source`` starting with ``statement``."""
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(statement))
    indent = len(lines[at]) - len(lines[at].lstrip())
    return next(line.strip() for line in reversed(lines[:at])
                if line.strip() and not line.lstrip().startswith("#") and len(line) - len(line.lstrip()) < indent)


def test_what_the_worker_leaves_out_is_imported_only_if_it_can_be():
    """Each module of ``LEFT_OUT`` is imported inside ``try`` (or after ``except ImportError``, or in ``with
    suppress(ImportError)``) by the library that names it: missing, it leaves the library as where not installed."""
    import importlib.util

    assert set(LEFT_OUT) == set(IMPORTERS)
    for name, (importer, statement) in IMPORTERS.items():
        source = importlib.util.find_spec(importer).loader.get_source(importer)
        assert _guard(source, statement) in ("try:", "except ImportError:", "with suppress(ImportError):"), name
