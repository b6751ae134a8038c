"""The worker's stand-in modules (render.stand_ins): a named module imported inside ``stand_ins()`` gives a stand-in
whose listed names load the real module at their first use (called, subclassed, isinstance, an attribute), once;
other names load it too; imports after the block are real. That a page leaves the listed modules unloaded is tested
on a real page in tests/e2e/test_page_worker.py."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from reportgen.render.stand_ins import PLUGINS, STAND_INS, Deferred, stand_ins

PROBE = '''
import os
os.environ["RG_STAND_PROBE_RUNS"] = str(int(os.environ.get("RG_STAND_PROBE_RUNS", "0")) + 1)


class Base:
    def __init__(self, value):
        self.value = value


def double(value):
    return 2 * value


OTHER = 7
'''
# a module that binds names of the probe at its top, as papermill.clientwrap binds nbclient's NotebookClient
USER = "from rg_stand_probe import Base, double\n\nBOUND = (Base, double)\n"


@pytest.fixture
def probe(tmp_path, monkeypatch):
    (tmp_path / "rg_stand_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "rg_stand_user.py").write_text(USER, encoding="utf-8")
    monkeypatch.delenv("RG_STAND_PROBE_RUNS", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield
    for name in ("rg_stand_probe", "rg_stand_user"):
        sys.modules.pop(name, None)


def _runs() -> int:
    return int(os.environ.get("RG_STAND_PROBE_RUNS", "0"))


NAMES = {"rg_stand_probe": ("Base", "double")}


def test_a_named_module_is_a_stand_in_until_a_name_of_it_is_used(probe):
    finders = list(sys.meta_path)
    with stand_ins(NAMES):
        import rg_stand_user
    assert sys.meta_path == finders  # the finder is gone with the block
    assert _runs() == 0 and all(isinstance(name, Deferred) for name in rg_stand_user.BOUND)
    assert "rg_stand_probe" not in sys.modules  # the stand-in left with the block
    base, double = rg_stand_user.BOUND
    assert double(21) == 42 and _runs() == 1  # called: the real module, loaded
    assert base(3).value == 3 and _runs() == 1  # once
    assert sys.modules["rg_stand_probe"].double(5) == 10


def test_a_stand_in_class_is_subclassed_and_checked_as_the_real_one(probe):
    with stand_ins(NAMES):
        from rg_stand_probe import Base
    assert _runs() == 0

    class Child(Base):  # the real class is the base (__mro_entries__)
        pass

    real = sys.modules["rg_stand_probe"].Base
    assert _runs() == 1 and Child.__mro__[1] is real
    assert isinstance(Child(1), Base) and issubclass(Child, Base) and not isinstance(1, Base)
    assert Base.__name__ == "Base" and "stand-in for rg_stand_probe.Base" in repr(Base)


def test_another_name_of_a_stand_in_loads_the_real_module(probe):
    with stand_ins(NAMES):
        import rg_stand_probe

        assert _runs() == 0
        assert not hasattr(rg_stand_probe, "__path__") and _runs() == 0  # the import system's questions load nothing
        assert rg_stand_probe.OTHER == 7 and _runs() == 1
        assert sys.modules["rg_stand_probe"].OTHER == 7  # the real module replaced the stand-in
        import rg_stand_probe as again
    assert again.double(2) == 4 and _runs() == 1


def test_a_module_imported_before_or_after_the_block_is_real(probe):
    import rg_stand_probe

    with stand_ins(NAMES):
        from rg_stand_probe import double
    assert double is rg_stand_probe.double and _runs() == 1
    del sys.modules["rg_stand_probe"]
    with stand_ins(NAMES):
        pass
    from rg_stand_probe import Base

    assert not isinstance(Base, Deferred) and _runs() == 2


def test_the_worker_stands_in_for_classes_and_functions_of_installed_modules():
    """Each listed name exists in the real module and is a class or a function (never caught as an exception)."""
    import inspect

    for module, names in STAND_INS.items():
        real = importlib.import_module(module)
        for name in names:
            value = getattr(real, name)
            assert inspect.isclass(value) or inspect.isfunction(value), (module, name)
            assert not (inspect.isclass(value) and issubclass(value, BaseException)), (module, name)
    assert PLUGINS == "entrypoints"


def test_no_plugins_finds_no_entry_point_and_the_real_package_after_it(monkeypatch):
    from reportgen.render.stand_ins import no_plugins

    monkeypatch.delitem(sys.modules, PLUGINS, raising=False)  # as in the worker: not imported yet
    with no_plugins():
        import entrypoints

        inside = (entrypoints.get_group_all("papermill.engine"), entrypoints.get_group_named("papermill.io"))
        assert not hasattr(entrypoints, "__path__")
    assert inside == ([], {}) and PLUGINS not in sys.modules
    import entrypoints as real

    assert hasattr(real, "EntryPoint") and real is not entrypoints
