"""A prefix holding several jobs is refused with the prefixes that exist, as one could give them: with jobs
under ``s3://b/job/`` and ``s3://b/job/sub/`` the listed prefix was written twice
(``s3://b/job/job/sub/profiler-output/``), naming prefixes that do not exist."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reportgen.errors import InputError
from reportgen.sources.remote import _pick_raw_root, _pick_rule_group, _select


@dataclass(frozen=True)
class Obj:
    key: str


RAW = [Obj("job/profiler-output/system/incremental/2021122220/1640205540.algo-1.json"),
       Obj("job/sub/profiler-output/system/incremental/2021122220/1640205540.algo-1.json")]
RULES = [Obj("job/a/rule-output/ProfilerReport/profiler-output/profiler-reports/StepOutlier.json"),
         Obj("job/b/rule-output/ProfilerReport/profiler-output/profiler-reports/StepOutlier.json")]


@pytest.mark.parametrize("objects, pick, listed", [
    (RAW, _pick_raw_root, ["s3://b/job/profiler-output/", "s3://b/job/sub/profiler-output/"]),
    (RULES, _pick_rule_group, ["s3://b/job/a/rule-output/ProfilerReport/profiler-output/profiler-reports/",
                               "s3://b/job/b/rule-output/ProfilerReport/profiler-output/profiler-reports/"]),
])
def test_several_jobs_are_refused_naming_prefixes_that_exist(objects, pick, listed):
    sel = _select(objects, "job/")
    with pytest.raises(InputError) as caught:
        pick(sel, "b/job")
    message = str(caught.value)
    assert message.startswith("s3://b/job/ holds ")
    assert all(prefix in message for prefix in listed), message
    assert "job/job" not in message
    for prefix in listed:  # each named prefix is where the listed keys are
        assert any(f"s3://b/{o.key}".startswith(prefix) for o in objects)
