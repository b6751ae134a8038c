"""Typed contracts between rooms (issue #31, item 3): the notebook's parameters declared once."""

from __future__ import annotations

import inspect

import nbformat

from reportgen.notebook import open_report
from reportgen.notebook_parameters import NotebookParameters
from reportgen.resources import notebook_path


def test_open_report_takes_exactly_the_declared_parameters():
    signature = inspect.signature(open_report)
    assert tuple(signature.parameters) == NotebookParameters.opened()
    assert NotebookParameters.opened()[0] == "source" and "output_dir" not in NotebookParameters.opened()
    defaults = NotebookParameters()
    for name, parameter in list(signature.parameters.items())[1:]:
        declared = getattr(defaults, name)
        assert parameter.default == declared or (parameter.default is None and declared in ({}, [])), name


def test_the_notebook_cells_are_derived_from_the_class():
    nb = nbformat.read(str(notebook_path()), as_version=4)
    parameters = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert parameters.source == NotebookParameters.cell_source()
    namespace: dict = {}
    exec(parameters.source, namespace)  # noqa: S102 - our own generated cell: its defaults are the class's
    assert {k: v for k, v in namespace.items() if not k.startswith("__")} == {
        "source": "", "output_dir": "", "job_name": "", "standalone": False, "notes": [], "description": "",
        "incomplete": False, "source_label": "", "cost": {}, "debug": False}
    opening = next(c for c in nb.cells if "open_report(" in c.source)
    assert NotebookParameters.open_report_call() in opening.source
    assert "debug=debug)" in opening.source and all(len(line) <= 110 for line in opening.source.splitlines())


def test_what_papermill_gets_leaves_debug_out_unless_set():
    plain = NotebookParameters(source="/r", job_name="j", notes=["n"], cost={"region": "x"}).to_papermill()
    assert list(plain) == ["source", "output_dir", "job_name", "standalone", "notes", "description", "incomplete",
                           "source_label", "cost"]
    assert plain["source"] == "/r" and plain["notes"] == ["n"] and plain["cost"] == {"region": "x"}
    assert NotebookParameters(debug=True).to_papermill()["debug"] is True
