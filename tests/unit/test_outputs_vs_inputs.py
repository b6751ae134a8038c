"""One policy: an output never replaces an input nor joins an input folder (``output_set.command_inputs``).

Every command's every output path is resolved (symlinks followed, hard links by inode, ``..``) against the
command's inputs before any work; a clash is one line, exit 2, and every file stays as it was. The cases
are the issue's (#50) and their kin, through ``cli.main`` in this process: each is refused before any
work starts (no page worker, no notebook, no child process: the unit lane's conftest would fail the test).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from reportgen import cli
from reportgen.errors import InputError
from reportgen.output_set import OutputSet, command_inputs
from tests.support.corpus.make_corpus import rule_outputs


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    """A rule-output folder and two report.json files made from it."""
    from reportgen.notebook import open_report

    root = tmp_path_factory.mktemp("outputs-vs-inputs")
    folder = rule_outputs(root)
    path = open_report(str(folder), standalone=True).save_json(root / "made")
    (root / "base.json").write_bytes(path.read_bytes())
    (root / "new.json").write_bytes(path.read_bytes())
    return root


@pytest.fixture
def here(job, tmp_path, monkeypatch) -> Path:
    """A fresh folder holding ``ro/`` (rule outputs), ``base.json``, ``new.json``, ``cfg.toml``, a hard
    link and a symlink to ``base.json``; the current folder."""
    import shutil

    shutil.copytree(job / "profiler-reports", tmp_path / "ro")
    for name in ("base.json", "new.json"):
        shutil.copyfile(job / name, tmp_path / name)
    (tmp_path / "cfg.toml").write_text("[LowGPUUtilization]\nthreshold_p95 = 80\n")
    os.link(tmp_path / "base.json", tmp_path / "hard.json")
    (tmp_path / "link.json").symlink_to("base.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def _state(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with its content's hash (a symlink: its target)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        found[rel] = (f"-> {os.readlink(path)}" if path.is_symlink() else "dir" if path.is_dir()
                      else hashlib.sha256(path.read_bytes()).hexdigest())
    return found


# (argv, the clash the one line names): an output that is an input file (by name, by symlink, by hard
# link, through ".."), inside an input folder, an input folder itself, or a folder replaced whole that
# holds an input.
CASES = [
    ("trend new.json base.json -o t.html --json new.json", "--json new.json is the input file REPORT_JSON new.json"),
    ("trend new.json base.json -o link.json", "-o link.json is the input file REPORT_JSON base.json"),
    ("check new.json --markdown new.json", "--markdown new.json is the input file REPORT_JSON new.json"),
    ("check new.json --base base.json --junit base.json", "--junit base.json is the input file --base base.json"),
    ("check new.json --base base.json --junit hard.json", "--junit hard.json is the input file --base base.json"),
    ("check new.json --junit ro/../new.json", "--junit ro/../new.json is the input file REPORT_JSON new.json"),
    ("generate ro/ -o out/r.html --json ro/StepOutlier.json",
     "--json ro/StepOutlier.json is inside the input folder SOURCE ro/"),
    ("generate ro -o r.html --json ro/sub/kineto.json", "--json ro/sub/kineto.json is inside the input folder SOURCE ro"),
    ("generate ro -o ro/system/r.html", "-o ro/system/r.html is inside the input folder SOURCE ro"),
    ("generate ro -o ro/w.pt.trace.json", "-o ro/w.pt.trace.json is inside the input folder SOURCE ro"),
    ("generate ro -o r.html --rule-outputs ro", "--rule-outputs ro is the input folder SOURCE ro"),
    ("generate ro -o r.html --config cfg.toml --keep-notebook cfg.toml",
     "--keep-notebook cfg.toml is the input file --config cfg.toml"),
    ("generate ro -o r.html --prices cfg.toml --markdown ./cfg.toml",
     "--markdown cfg.toml is the input file --prices cfg.toml"),
    ("generate ro -o r.html --rule-outputs kept --config kept/cfg.toml", None),  # made below: kept/ holds it
    ("analyze ro -o ro/again", "-o ro/again is inside the input folder SOURCE ro"),
    ("analyze ro -o .", "-o . holds the input folder SOURCE ro, and the folder is replaced whole"),
    ("compare ro base.json -o ro/LowGPUUtilization.json --format md",
     "-o ro/LowGPUUtilization.json is inside the input folder A ro"),
    ("compare new.json ro -o c.md --format md --json ro/kineto.json",
     "--json ro/kineto.json is inside the input folder B ro"),
    ("record --out ro/rec --trace-dir ro -- true", "--out ro/rec is inside the input folder --trace-dir ro"),
    ("memory-snapshot base.json --json link.json", "--json link.json is the input file SNAPSHOT base.json"),
]


@pytest.mark.parametrize("argv, clash", CASES, ids=[c[0] for c in CASES])
def test_an_output_that_is_or_joins_an_input_is_refused_and_nothing_changes(here, argv, clash, capsys):
    if "kept/" in argv:  # an earlier export that now also holds the config: the swap would take it away
        (here / "kept").mkdir()
        (here / "kept" / "cfg.toml").write_text("[LowGPUUtilization]\nthreshold_p95 = 80\n")
        clash = "--rule-outputs kept holds the input file --config kept/cfg.toml, and the folder is replaced whole"
    before = _state(here)
    assert cli.main(argv.split()) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"reportgen: error: {clash}"), err
    assert _state(here) == before  # no input replaced, no output written, no folder made


def test_the_step_summary_is_never_an_input(here, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(here / "hard.json"))  # a hard link of the base report
    before = _state(here)
    assert cli.main("check new.json --base base.json --junit j.xml".split()) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"reportgen: error: $GITHUB_STEP_SUMMARY {here / 'hard.json'} is "
                                               "the input file --base base.json"), err
    assert _state(here) == before


@pytest.mark.parametrize("argv", ["check new.json --junit j.xml --markdown ro.md",
                                  "trend new.json base.json -o t.md --format md --json t.json"])
def test_outputs_beside_inputs_are_written(here, argv, capsys):
    """The policy refuses the clash only: outputs beside the inputs, in the inputs' own folder, are fine."""
    assert cli.main(argv.split()) == 0
    for name in argv.split()[3::2]:
        if "." in name and name not in ("new.json", "base.json", "md"):
            assert (here / name).stat().st_size > 0


@pytest.mark.parametrize("name, read", [
    ("report.html", False), ("report.json", False), ("sub/summary.md", False), ("StepOutlier.json", True),
    ("timeline.json", True), ("system/incremental/x.html", True), ("framework/pevents/1/x_y_z.json", True),
    ("rank0.pt.trace.json.gz", True), ("host0.xplane.pb", True), ("plugins/profile/r/host0.trace.json.gz", True),
    ("old-trace.json", True)])
def test_a_report_beside_the_data_is_no_input_but_what_the_readers_take_is(tmp_path, name, read):
    """Inside a source folder an output is refused where the folder's readers would take it (a file there
    now that is a trace by its content, ``old-trace.json``, included); ``job/report.html`` is fine."""
    from reportgen.sources.layout import read_from_source

    (tmp_path / "old-trace.json").write_text('{"traceEvents": [{"ph": "X", "cat": "kernel"}], "schemaVersion": 1}')
    with command_inputs([("SOURCE", tmp_path, read_from_source)]):
        outputs = OutputSet()
        if read:
            with pytest.raises(InputError, match=f"is inside the input folder SOURCE {tmp_path}"):
                outputs.add("--json", tmp_path / name)
        else:
            outputs.add("--json", tmp_path / name)


def test_api_callers_protect_their_inputs_too(tmp_path):
    """``OutputSet.protect`` (no command line): the outputs added before and after it are checked."""
    src = tmp_path / "in.json"
    src.write_text("{}")
    outputs = OutputSet()
    outputs.add("--json", tmp_path / "out.json")
    outputs.protect("data", src)
    with pytest.raises(InputError, match="is the input file data"):
        outputs.add("--junit", src)
    late = OutputSet()
    late.add("--junit", src)
    with pytest.raises(InputError, match="--junit .* is the input file data"):
        late.protect("data", src)


def test_inputs_that_name_nothing_here_are_not_inputs(tmp_path):
    """An s3:// URI, an ARN, a missing path: nothing local to protect (their readers report them)."""
    with command_inputs([("SOURCE", "s3://bucket/job/"), ("SOURCE", "arn:aws:sagemaker:x"),
                         ("--config", tmp_path / "missing.toml")]) as inputs:
        assert inputs == ()
        OutputSet().add("-o", tmp_path / "r.html")
