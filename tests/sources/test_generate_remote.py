"""`generate` from an ARN, a job name or an s3:// URI gives the same report as from the local folder."""

from __future__ import annotations

import json

import pytest

from reportgen.pipeline import generate

from sources_testlib import REGION


def sections(path):
    data = json.loads(path.read_text())
    return data["sections"]


@pytest.fixture(scope="module")
def local_report(tmp_path_factory, rule_fixture_dir):
    out = tmp_path_factory.mktemp("local") / "report.html"
    generate(str(rule_fixture_dir), out)
    return sections(out.with_suffix(".json"))


@pytest.mark.parametrize("form", ["processing_arn", "training_arn", "training_name", "s3_rules"])
def test_remote_sources_give_the_local_report(world, local_report, tmp_path, monkeypatch, form):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    source = {
        "processing_arn": world.processing_by_uris,
        "training_arn": world.training_arn,
        "training_name": world.training_job,
        "s3_rules": f"s3://{world.bucket}/{world.rule_prefix}/",
    }[form]
    messages = []
    out = tmp_path / "report.html"
    result = generate(source, out, cache_dir=tmp_path / "cache", progress=messages.append)
    assert result.used == "rule outputs"
    assert sections(result.json_path) == local_report
    assert any(m.startswith("downloaded 11/11 files") for m in messages)
    html = out.read_text(encoding="utf-8")
    assert 'id="system-usage"' in html
    # the second run on the same source downloads nothing
    again = []
    generate(source, tmp_path / "again.html", cache_dir=tmp_path / "cache", progress=again.append)
    assert not any(m.startswith("downloaded") for m in again)
