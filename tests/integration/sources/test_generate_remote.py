"""`generate` from an ARN, a job name or an s3:// URI gives the same report as from the local folder."""

from __future__ import annotations

import json

import pytest

from reportgen.pipeline import GenerateOptions, SourceOptions, generate

from tests.support.sources_testlib import REGION


def cached(tmp_path) -> GenerateOptions:
    return GenerateOptions(source=SourceOptions(cache_dir=tmp_path / "cache"))


def sections(path):
    data = json.loads(path.read_text())
    return data["sections"]


@pytest.fixture(scope="module")
def local_report(tmp_path_factory, rule_fixture_dir):
    out = tmp_path_factory.mktemp("local") / "report.html"
    generate(str(rule_fixture_dir), out)
    return sections(out.with_suffix(".json"))


@pytest.mark.fixtures
@pytest.mark.parametrize("form", ["processing_arn", "training_arn", "training_name", "s3_rules"])
def test_remote_sources_give_the_local_report(world, local_report, tmp_path, monkeypatch, form):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    source = {
        "processing_arn": world.processing_by_uris,
        "training_arn": world.training_arn,
        "training_name": f"job:{world.training_job}",
        "s3_rules": f"s3://{world.bucket}/{world.rule_prefix}/",
    }[form]
    messages = []
    out = tmp_path / "report.html"
    result = generate(source, out, cached(tmp_path), progress=messages.append)
    assert result.used == "rule outputs"
    got = sections(result.json_path)
    # A job source's description names the instances, so its report also gains the cost of the run.
    cost = got.pop("cost", None)
    assert got == local_report
    if form == "s3_rules":
        assert cost is None
    else:
        assert (cost["instance_type"], cost["instance_count"], cost["region"], cost["instance_from"]) == \
            ("ml.p3.2xlarge", 1, REGION, "job description")
        assert cost["duration_s"] == local_report["training-job-summary"]["job_duration_s"]
        assert cost["cost"] == pytest.approx(cost["duration_s"] * 3.825 / 3600)
    assert any(m.startswith("downloaded 11/11 files") for m in messages)
    html = out.read_text(encoding="utf-8")
    assert 'id="system-usage"' in html
    # the second run on the same source downloads nothing
    again = []
    generate(source, tmp_path / "again.html", cached(tmp_path), progress=again.append)
    assert not any(m.startswith("downloaded") for m in again)


@pytest.mark.fixtures
def test_compare_takes_the_instances_of_an_arn_source_from_its_job(world, rule_fixture_dir, tmp_path, monkeypatch):
    from reportgen.compare.run import CompareOptions, compare
    from reportgen.pipeline import CostOptions

    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    out = tmp_path / "compare.md"
    compare(world.training_arn, str(rule_fixture_dir), out,
            CompareOptions(source=SourceOptions(cache_dir=tmp_path / "cache"), fmt="md",
                           b=CostOptions(instance="ml.g5.xlarge")))
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    a, b = data["sections"]["cost"]["a"], data["sections"]["cost"]["b"]
    assert (a["instance_type"], a["instance_count"], a["region"], a["instance_from"]) == \
        ("ml.p3.2xlarge", 1, REGION, "job description")
    assert (b["instance_type"], b["instance_count"], b["instance_from"]) == ("ml.g5.xlarge", 1, "command line")
    assert a["duration_s"] == b["duration_s"]  # the same rule outputs on both sides
    assert data["sections"]["cost"]["saving_pct"] == pytest.approx((3.825 - 1.408) / 3.825 * 100)
    assert "| A | ml.p3.2xlarge | 1 | us-east-1 | $3.825 |" in out.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.fixtures
def test_pytorch_traces_from_s3_give_the_local_report(world, tmp_path, monkeypatch):
    """PyTorch profiler traces under an s3:// prefix are downloaded (cache) and analysed like a local folder."""
    from tests.support.sources_testlib import client
    from tests.support.paths import RAW, need

    folder = need(RAW / "kineto-resnet50-num-workers-0")
    traces = sorted(folder.glob("*.pt.trace.json.gz"))
    assert len(traces) == 2
    s3 = client("s3")
    for path in traces:
        s3.put_object(Bucket=world.bucket, Key=f"pytorch/run-7/traces/{path.name}", Body=path.read_bytes())
    s3.put_object(Bucket=world.bucket, Key="pytorch/run-7/notes.txt", Body=b"not a trace")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    local = generate(str(folder), tmp_path / "local.html")
    messages = []
    result = generate(f"s3://{world.bucket}/pytorch/run-7", tmp_path / "s3.html", cached(tmp_path),
                      progress=messages.append)
    assert result.used == "PyTorch profiler traces"
    assert any(m.startswith("downloaded 2/2 files") for m in messages)
    assert any(f"2 PyTorch profiler trace file(s) from s3://{world.bucket}/pytorch/run-7/traces/" in m for m in messages)
    got, want = sections(result.json_path), sections(local.json_path)
    assert got["gpu-kernels-operators"] == want["gpu-kernels-operators"]
    assert got["step-duration-analysis"] == want["step-duration-analysis"]
    again = []
    generate(f"s3://{world.bucket}/pytorch/run-7/", tmp_path / "again.html", cached(tmp_path),
             progress=again.append)
    assert not any(m.startswith("downloaded") for m in again)



@pytest.mark.fixtures
def test_jax_profiler_output_from_s3_gives_the_local_report(world, tmp_path, monkeypatch):
    """A JAX log folder under an s3:// prefix: the .xplane.pb is selected by the format table's suffixes
    (the Chrome-JSON copy beside it is not), downloaded and analysed like the local folder."""
    from tests.support.sources_testlib import client
    from tests.support.paths import ROOT

    folder = ROOT / "tests" / "recordings" / "jax-tf" / "jax-cpu"
    s3 = client("s3")
    for path in (folder / "logdir").rglob("*.gz"):
        s3.put_object(Bucket=world.bucket, Key=f"jax/run-1/{path.relative_to(folder).as_posix()}", Body=path.read_bytes())
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    local = generate(str(folder), tmp_path / "local.html")
    messages = []
    result = generate(f"s3://{world.bucket}/jax/run-1", tmp_path / "s3.html", cached(tmp_path), progress=messages.append)
    assert any(m.startswith("downloaded 1/1 files") for m in messages), messages
    assert any("1 XSpace (JAX / TensorFlow profiler) trace file(s) from s3://" in m for m in messages), messages
    got, want = sections(result.json_path), sections(local.json_path)
    assert got["step-duration-analysis"] == want["step-duration-analysis"]
    assert got["step-duration-analysis"]["datapoints"] == 30
    assert got["gpu-kernels-operators"]["ranks"] == want["gpu-kernels-operators"]["ranks"]
