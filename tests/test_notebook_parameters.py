"""Source paths reach the notebook through papermill as data, never as code."""

from __future__ import annotations

import json
import shutil
from html import unescape

from reportgen.pipeline import generate
from tests.conftest import REAL, need


def test_hostile_folder_name_is_not_executed(tmp_path):
    folder = need(REAL / "beauvilerobed-dd30fc8e")
    name = "job\"'; open('PWNED','w') #\n\"\"\"\\ é 日本 ${x} `id`"
    hostile = tmp_path / name
    shutil.copytree(folder / "profiler-reports", hostile / "profiler-reports")
    out = tmp_path / "out" / "report.html"
    result = generate(str(hostile), out, job_name=name)
    assert not list(tmp_path.rglob("PWNED"))
    data = json.loads(result.json_path.read_text())
    assert data["job"]["name"] == name
    assert data["job"]["source"] == str(hostile)
    html = out.read_text(encoding="utf-8")
    heading = html.split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert unescape(heading) == name  # shown verbatim as text
