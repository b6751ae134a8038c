"""papermill runs the analysis notebook's cells in reportgen's own process (``render.inprocess``): the page is
the one a kernel process makes, Ctrl-C still ends the run, nothing leaks from one run into the next, and a
user's own IPython shell (generate called from Jupyter) is never used; nbconvert's BeautifulSoup pass is
skipped without changing the document."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from reportgen.render import inprocess
from reportgen.render.html import execute_notebook, notebook_to_html
from tests.support.paths import ROOT

_MINUTE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


@pytest.fixture(scope="module")
def rule_dir(sample_rule_outputs) -> Path:
    return sample_rule_outputs


def _notebook(tmp_path: Path, *sources: str) -> Path:
    """A small notebook: a parameters cell, then ``sources`` as code cells."""
    params = nbformat.v4.new_code_cell('marker = ""')
    params.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[params, *(nbformat.v4.new_code_cell(s) for s in sources)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "small.ipynb"
    nbformat.write(nb, str(path))
    return path


def _stdout(nb) -> list[str]:
    return [o["text"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.output_type == "stream" and o.name == "stdout"]


def test_the_cells_run_in_this_process(tmp_path):
    nb = execute_notebook({"marker": "x"}, notebook=_notebook(tmp_path, "import os\nprint(os.getpid(), marker)"))
    assert _stdout(nb) == [f"{os.getpid()} x\n"]
    assert [c.execution_count for c in nb.cells if c.cell_type == "code"] == [1, 2, 3]  # injected parameters cell
    assert nb.metadata["language_info"]["name"] == "python"
    assert nb.metadata["papermill"]["exception"] is None


def test_the_page_is_the_one_a_kernel_process_makes(rule_dir, tmp_path, monkeypatch):
    here = execute_notebook({"source": str(rule_dir), "output_dir": str(tmp_path / "here"), "standalone": True})
    monkeypatch.setattr(inprocess, "available", lambda: False)  # as inside a user's IPython shell
    kernel = execute_notebook({"source": str(rule_dir), "output_dir": str(tmp_path / "kernel"), "standalone": True},
                              cwd=tmp_path)
    shown = [o.metadata["reportgen"]["id"] for c in here.cells if c.cell_type == "code" for o in c.outputs
             if o.get("metadata", {}).get("reportgen", {}).get("role") == "section"]
    assert shown[:2] == ["training-job-summary", "system-usage-statistics"] and "data-quality" in shown
    assert _MINUTE.sub("T", notebook_to_html(here)) == _MINUTE.sub("T", notebook_to_html(kernel))
    a, b = (json.loads((tmp_path / side / "report.json").read_text()) for side in ("here", "kernel"))
    a["generator"].pop("generated_at"), b["generator"].pop("generated_at")
    assert a == b


def test_ctrl_c_inside_a_cell_ends_the_run(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        execute_notebook({}, notebook=_notebook(tmp_path, "raise KeyboardInterrupt", "print('not reached')"))


def test_nothing_of_one_run_is_seen_by_the_next_and_main_is_left_alone(tmp_path):
    main = sys.modules["__main__"]
    notebook = _notebook(tmp_path, "print('leftover' in globals())\nleftover = 1")
    assert _stdout(execute_notebook({}, notebook=notebook)) == ["False\n"]
    assert _stdout(execute_notebook({}, notebook=notebook)) == ["False\n"]
    assert sys.modules["__main__"] is main


def test_a_users_own_ipython_shell_is_left_alone(tmp_path):
    """Inside Jupyter the notebook runs on a kernel process, never on the user's shell."""
    notebook = _notebook(tmp_path, "import os\nprint(os.getpid())\nmine = 'overwritten'")
    code = ("import os; from IPython.core.interactiveshell import InteractiveShell\n"
            "shell = InteractiveShell.instance(); shell.user_ns['mine'] = 'the user'\n"
            "from reportgen.render.html import execute_notebook\n"
            f"nb = execute_notebook({{}}, notebook={str(notebook)!r}, cwd={str(tmp_path)!r})\n"
            "pid = [o['text'] for c in nb.cells for o in c.get('outputs', []) if o.get('name') == 'stdout'][0]\n"
            "print(int(pid) != os.getpid(), shell.user_ns['mine'])\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True", "the", "user"]


class _Dom(HTMLParser):
    """The document as events: start tags with their attributes as a set, end tags, text (entities decoded);
    ``<br/>`` and ``<br>`` are the same element, and so are ``open`` and ``open=""``."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events: list = []

    def handle_starttag(self, tag, attrs):
        self.events.append(("start", tag, frozenset((k, v or "") for k, v in attrs)))  # open == open=""

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            self.events.append(("end", tag))

    def handle_data(self, data):
        if self.events and self.events[-1][0] == "text":
            self.events[-1] = ("text", self.events[-1][1] + data)
        else:
            self.events.append(("text", data))

    def handle_decl(self, decl):
        self.events.append(("decl", decl.lower()))


def _dom(html: str) -> list:
    parser = _Dom()
    parser.feed(html)
    parser.close()
    events = [e if e[0] != "text" else ("text", e[1].strip()) for e in parser.events]
    return [e for e in events if e != ("text", "")]


def test_skipping_nbconvert_soup_pass_leaves_the_same_document(rule_dir, tmp_path):
    """nbconvert's HTMLExporter re-serialises the page through BeautifulSoup (attribute order, ``/>``, entities)
    to add alt text to images and tabindex to JupyterLab cells; the report has neither, so the same DOM."""
    from nbconvert import HTMLExporter

    import reportgen.render.html as render_html

    nb = execute_notebook({"source": str(rule_dir), "output_dir": str(tmp_path), "standalone": True})
    ours = render_html.convert_notebook(nb)  # the conversion alone: before the charts share their parts
    real = render_html._report_exporter_class
    try:
        render_html._report_exporter_class = lambda: HTMLExporter  # nbconvert's own, soup pass included
        stock = render_html.convert_notebook(nb)
    finally:
        render_html._report_exporter_class = real
    assert ours != stock  # the soup pass did change bytes: this compares two different serialisations
    assert "<img" not in ours and "jp-Cell-inputWrapper" not in ours and "jp-OutputArea-output" not in ours
    assert len(_dom(ours)) > 1000
    assert _dom(ours) == _dom(stock)
