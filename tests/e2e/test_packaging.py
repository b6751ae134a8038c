"""`pip install .` (not editable) must carry the notebook and templates and work on its own."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from tests.support.paths import REAL, need


def test_wheel_contains_notebook_and_templates(installed_wheel):
    wheel, _ = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("reportgen/_bundled/notebooks/profiler_report.ipynb",
                     "reportgen/_bundled/templates/reportgen/index.html.j2",
                     "reportgen/_bundled/templates/reportgen/conf.json",
                     "reportgen/_bundled/templates/reportgen/report.css",
                     "reportgen/_bundled/templates/blocks/table.html.j2",
                     "reportgen/schemas/report.schema.json",
                     "reportgen/_bundled/notebooks/compare_report.ipynb",
                     "reportgen/_bundled/templates/blocks/compare_header.html.j2",
                     "reportgen/data/prices.toml",
                     "reportgen/vendor/plotly-reportgen.min.js.gz",  # the page's plotly.js: no network request
                     "reportgen/cli.py"):
        assert required in names


@pytest.mark.fixtures
def test_installed_wheel_generates_a_report_outside_the_checkout(installed_wheel, tmp_path):
    folder = need(REAL / "beauvilerobed-dd30fc8e")
    _, target = installed_wheel
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import reportgen.resources as r; print(r.__file__); "
                            "print(r.notebook_path())"], cwd=tmp_path, env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    assert all(path.startswith(str(target)) for path in where)
    run = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(folder), "-o", "out.html", "-q"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    html = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert 'id="system-usage"' in html and "Legal notice" in html
