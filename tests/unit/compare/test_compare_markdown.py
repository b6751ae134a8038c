"""``compare --format md`` is meant for pull-request comments (issue #20 item 10): names from the data
must not become mentions, live links or references there, and the comment must not carry the absolute
local paths of the machine that made it."""

from __future__ import annotations

import json
import re

from reportgen import cli
from reportgen.compare.output import md_escape, public_source
from tests.support.corpus.make_corpus import rule_outputs

HOSTILE = "@octocat see https://evil.example/x and www.evil.example #12 ![img](https://evil.example/i.png)"


def _live(text: str) -> list[str]:
    """Markup GitHub would act on: an unescaped @mention or #ref, a URL scheme, a bare www. name."""
    found = re.findall(r"(?<!\\)@[A-Za-z0-9]", text) + re.findall(r"(?<![\\&])#\d", text)
    found += re.findall(r"[a-z]+://", text) + re.findall(r"(?<![&\w])www\.", text)
    found += re.findall(r"(?<!\\)!\[", text)
    return found


def test_md_escape_neutralises_mentions_links_and_references():
    text = md_escape(HOSTILE)
    assert _live(text) == []
    assert "\\@octocat" in text and "https://" not in text


def test_public_source_names_local_folders_only_by_their_own_name():
    assert public_source("/home/alice/jobs/run-7") == "local folder run-7"
    assert public_source("s3://bucket/prefix") == "s3://bucket/prefix"
    assert public_source("arn:aws:sagemaker:us-east-1:1:training-job/x") == "arn:aws:sagemaker:us-east-1:1:training-job/x"


def test_compare_markdown_has_no_live_mentions_links_or_local_paths(tmp_path, capsys):
    """Two runs whose folder names and operator names are hostile, given by absolute paths: the
    Markdown keeps the names as text, makes nothing live, and shows no absolute path."""
    root = tmp_path / "private-home"
    a = root / "@octocat www.evil.example A"
    b = root / "#12 @admin B"
    for side in (a, b):
        folder = rule_outputs(side)
        doc = json.loads((folder / "StepOutlier.json").read_text())
        doc["Details"]["step_details"] = {HOSTILE: doc["Details"].get("step_details", {}).get("algo-1", {})}
        (folder / "StepOutlier.json").write_text(json.dumps(doc))
    out = tmp_path / "cmp.md"
    code = cli.main(["compare", str(a), str(b), "--format", "md", "-o", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    text = out.read_text()
    assert "octocat" in text and "admin" in text  # the names are there, as text
    assert _live(text) == [], _live(text)
    assert str(root) not in text and str(tmp_path) not in text
    assert "local folder" in text
