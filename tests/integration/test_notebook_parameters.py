"""Source paths reach the notebook through papermill as data, never as code."""

from __future__ import annotations

import json
import shutil
from html import unescape

import pytest

from reportgen.pipeline import GenerateOptions, generate
from tests.support.paths import REAL, need


@pytest.mark.fixtures
def test_hostile_folder_name_is_not_executed(tmp_path):
    folder = need(REAL / "beauvilerobed-dd30fc8e")
    name = "job\"'; open('PWNED','w') #\n\"\"\"\\ é 日本 ${x} `id`"
    hostile = tmp_path / name
    shutil.copytree(folder / "profiler-reports", hostile / "profiler-reports")
    out = tmp_path / "out" / "report.html"
    result = generate(str(hostile), out, GenerateOptions(job_name=name))
    assert not list(tmp_path.rglob("PWNED"))
    data = json.loads(result.json_path.read_text())
    assert data["job"]["name"] == name
    assert data["job"]["source"] == str(hostile)
    html = out.read_text(encoding="utf-8")
    heading = html.split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert unescape(heading) == name  # shown verbatim as text


HOSTILE_PARTS = [
    "q\"uote", "s'ingle", "\"\"\"triple", "'''triple", "back\\slash\\", "new\nline", "'); import os; os.system('touch PWNED1') #",
    "\"); open('PWNED2', 'w') #", "é 日本 ☃", "${HOME} `id` $(id)", "{source}", "\\u0022 \\x27",
]


def test_raw_source_path_with_code_in_it_reaches_the_notebook_as_data(tmp_path, monkeypatch):
    """A raw-data folder whose path holds quotes, triple quotes, backslashes, newlines, non-ASCII and
    statements; its name (the job name), the source label and the description travel through papermill's
    parameters. Every injected parameter must be a plain literal equal to what was passed; nothing runs."""
    import ast

    import nbformat

    from tests.support.corpus.make_corpus import good_framework, good_system

    monkeypatch.chdir(tmp_path)  # a relative PWNED file would land here
    name = "".join(HOSTILE_PARTS)
    source = tmp_path / "jobs" / name
    good_system(source)
    good_framework(source)
    kept = tmp_path / "executed.ipynb"
    out = tmp_path / "out" / "report.html"
    result = generate(str(source), out, GenerateOptions(keep_notebook=kept))
    assert not list(tmp_path.rglob("PWNED*"))
    data = json.loads(result.json_path.read_text(encoding="utf-8"))
    assert data["job"]["source"] == str(source)
    assert data["job"]["name"] == name  # the folder's name, verbatim
    nb = nbformat.read(str(kept), as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    tree = ast.parse(injected[0].source)
    values = {}
    for node in tree.body:  # nothing but `name = <literal>` statements
        assert isinstance(node, ast.Assign) and len(node.targets) == 1, ast.dump(node)
        values[node.targets[0].id] = ast.literal_eval(node.value)
    assert values["source_label"] == str(source)
    assert values["job_name"] == name
    assert str(source) in values["description"]
    heading = out.read_text(encoding="utf-8").split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert unescape(heading) == name
