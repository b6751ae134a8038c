"""Local folders: layouts found, one-line errors (that a local source imports no AWS SDK:
tests/e2e/test_lazy_imports.py)."""

from __future__ import annotations

import shutil

import pytest

from reportgen.errors import InputError
from reportgen.sources import resolve_source
from tests.support.sources_testlib import raw_profile


@pytest.mark.fixtures
def test_fixture_folder_in_place(rule_fixture_dir):
    resolved = resolve_source(str(rule_fixture_dir.parent))
    assert resolved.kind == "local"
    assert resolved.rule_output_dir == rule_fixture_dir
    assert resolved.raw_dir is None and resolved.raw_available is False
    assert resolved.downloads == 0 and resolved.incomplete is False
    assert resolved.description == f"local folder: rule outputs in {rule_fixture_dir}"


@pytest.mark.fixtures
@pytest.mark.parametrize(
    "layout",
    [
        "job/rule-output/ProfilerReport-1640205487/profiler-output/profiler-reports",  # SageMaker layout
        "ProfilerReport/profiler-output/profiler-reports",  # published copies
        "profiler-report",  # singular
        "profiler-output",  # JSONs directly in profiler-output/
    ],
)
def test_rule_output_layouts(rule_fixture_dir, tmp_path, layout):
    target = tmp_path / "src" / layout
    shutil.copytree(rule_fixture_dir, target)  # into the test's temp folder only
    raw_profile(tmp_path / "src" / "job" / "profiler-output")
    resolved = resolve_source(str(tmp_path / "src"))
    assert resolved.rule_output_dir == target
    assert resolved.raw_dir == tmp_path / "src" / "job" / "profiler-output"
    assert resolved.raw_available is True and resolved.end_marker is False


def test_raw_only_folder(tmp_path):
    raw = raw_profile(tmp_path / "profiler-output")
    (raw / "system" / "training_job_end.ts").write_bytes(b"")
    resolved = resolve_source(str(raw), recompute=True)
    assert (resolved.rule_output_dir, resolved.raw_dir, resolved.end_marker) == (None, raw, True)


def test_empty_folder(tmp_path):
    with pytest.raises(InputError) as info:
        resolve_source(str(tmp_path))
    assert str(info.value) == (
        f"No profiler data in {str(tmp_path)!r}: expected rule outputs (profiler-reports/*.json) "
        "or raw profiler data (system/, framework/) or PyTorch profiler traces (*.pt.trace.json[.gz]) "
        "or JAX / TensorFlow profiler output (plugins/profile/<run>/<host>.xplane.pb)."
    )


def test_recompute_needs_raw_data(tmp_path):
    (tmp_path / "profiler-reports").mkdir()
    (tmp_path / "profiler-reports" / "CPUBottleneck.json").write_text("{}")
    with pytest.raises(InputError) as info:
        resolve_source(str(tmp_path), recompute=True)
    assert str(info.value) == (
        f"--recompute needs raw profiler data (system/, framework/) but {str(tmp_path)!r} has only rule outputs."
    )


def test_a_file_is_not_a_folder(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{}")
    with pytest.raises(InputError) as info:
        resolve_source(str(path))
    assert str(info.value) == f"Local source {str(path)!r} is not a folder."
