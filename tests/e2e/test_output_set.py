"""Outputs (issue #20 items 2, 7, 9 and issue #21 item 5): targets that are not regular files, ``-`` as
standard output, colliding outputs, all-or-none commits when a later output fails, work folders a kill
cannot leave in the user's folder.

Runs ``reportgen.cli.main`` in this process with the notebook kernel replaced by the calls the notebook
makes (tests/support/corpus/runner.py), so the CLI, the pipeline and the output commit are the real ones; a few
tests run ``python -m reportgen`` as a subprocess where a real process is the point (SIGKILL, pipes).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reportgen import output_set, workdir
from tests.support.corpus.make_corpus import good_framework, good_system
from tests.support.corpus.runner import _fake_page_maker
from tests.support.paths import ROOT

REPO = ROOT
OLD = "old content, must survive\n"


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    prof = tmp_path_factory.mktemp("profile") / "job"
    good_system(prof, n=40)
    good_framework(prof)
    return prof


@pytest.fixture
def run(monkeypatch, capsysbinary):
    """``run(args) -> (exit code, stdout bytes, stderr text)`` of ``reportgen.cli.main(args)``."""
    from reportgen import cli, pipeline

    monkeypatch.setattr(pipeline, "NotebookProcess", _fake_page_maker())

    def call(args: list[str]):
        code = cli.main([str(a) for a in args])
        out, err = capsysbinary.readouterr()
        return code, out, err.decode("utf-8")
    return call


def _one_error_line(err: str, *pieces: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("reportgen: error: "), err
    for piece in pieces:
        assert piece in lines[0], (piece, lines[0])


def _old_pair(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("report.html", "report.json"):
        (folder / name).write_text(OLD)
    return {p.name: p.read_text() for p in folder.iterdir()}


def _listing(folder: Path) -> dict[str, str]:
    return {p.name: (p.read_text() if p.is_file() and not p.is_symlink() else "<not a file>")
            for p in sorted(folder.iterdir())}


# ------------------------------------------------------------------------ targets that are not files


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_character_device_output_is_written_in_place_not_replaced(run, profile, tmp_path):
    """Item 2: as root, ``-o d/mynull`` (a character device like /dev/null) was renamed over: the
    device node became a regular file, and ``mynull.json`` appeared beside it."""
    d = tmp_path / "d"
    d.mkdir()
    os.mknod(d / "mynull", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    code, _, err = run(["generate", profile, "-o", d / "mynull", "--json", d / "mynull", "--junit", d / "mynull", "-q"])
    assert code == 0, err
    st = os.lstat(d / "mynull")
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
    assert sorted(p.name for p in d.iterdir()) == ["mynull"]
    # without --json there is no sensible place for the JSON: refused, one line, nothing made
    code, _, err = run(["generate", profile, "-o", d / "mynull", "-q"])
    assert code == 2
    _one_error_line(err, "not a regular file", "--json")
    assert sorted(p.name for p in d.iterdir()) == ["mynull"]


def test_symlink_to_proc_self_fd_is_written_through_not_replaced(tmp_path, profile):
    """Item 2: ``--junit`` pointing at a symlink to /proc/self/fd/1 replaced the link by a regular
    file. A real process whose stdout is a pipe: the XML arrives on the pipe, the link stays a link."""
    link = tmp_path / "junit-out"
    link.symlink_to("/proc/self/fd/1")
    proc = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(profile), "-o", str(tmp_path / "r.html"),
                           "--junit", str(link), "-q", "--no-step-summary"],
                          capture_output=True, cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": str(REPO)},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(link) == "/proc/self/fd/1"
    assert proc.stdout.startswith(b"<?xml") and b"<testsuites" in proc.stdout
    assert (tmp_path / "r.html").is_file() and (tmp_path / "r.json").is_file()


def test_fifo_with_a_reader_gets_the_output_and_without_one_is_refused(run, profile, tmp_path):
    """Item 2: a FIFO is written in place (a reader gets the XML; the FIFO stays a FIFO); with no
    reader it would block the run for ever: refused with one line, and nothing is replaced."""
    fifo = tmp_path / "junit.fifo"
    os.mkfifo(fifo)
    before = _old_pair(tmp_path / "out")
    code, _, err = run(["generate", profile, "-o", tmp_path / "out/report.html", "--junit", fifo, "-q"])
    assert code == 2
    _one_error_line(err, "FIFO with no reader")
    assert _listing(tmp_path / "out") == before
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    time.sleep(0.3)
    code, _, err = run(["generate", profile, "-o", tmp_path / "out/report.html", "--junit", fifo, "-q"])
    got = reader.communicate(timeout=60)[0]
    assert code == 0, err
    assert got.startswith(b"<?xml") and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("flag", ["--markdown", "--junit", "--json"])
def test_dash_is_standard_output_for_generate(run, profile, tmp_path, flag, monkeypatch):
    """Issue #21 item 5: ``-`` wrote a file named ``-``. It is standard output; the other outputs
    are written as usual and no file named ``-`` appears."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["generate", profile, "-o", "r.html", flag, "-", "-q"])
    assert code == 0, err
    assert not Path("-").exists()
    if flag == "--markdown":
        assert out.decode().startswith("## Profiling report")
    elif flag == "--junit":
        assert out.startswith(b"<?xml") and b"</testsuites>" in out
    else:
        assert json.loads(out)["schema_version"].startswith("1.")
        assert not Path("r.json").exists()
    assert Path("r.html").is_file()


def test_dash_is_standard_output_for_check(run, profile, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(["generate", profile, "-o", "r.html", "-q"])[0] == 0
    code, out, err = run(["check", "r.json", "--markdown", "-", "-q", "--no-step-summary"])
    assert code == 0, err
    assert out.decode().startswith("## Profiling report") and not Path("-").exists()
    code, out, err = run(["check", "r.json", "--junit", "-", "--markdown", "-", "-q"])
    assert code == 2 and out == b""
    _one_error_line(err, "both name standard output")


# ------------------------------------------------------------------------ collisions and folders


@pytest.mark.parametrize("args,roles", [
    (["-o", "out.json"], ("-o", "--json")),
    (["-o", "r.html", "--junit", "r.html"], ("-o", "--junit")),
    (["-o", "r.html", "--markdown", "r.json"], ("--json", "--markdown")),
    (["-o", "r.html", "--json", "sub/../r.html"], ("-o", "--json")),
])
def test_outputs_naming_the_same_file_are_refused_before_any_work(run, profile, tmp_path, args, roles, monkeypatch):
    """Item 7: ``-o out.json`` wrote the HTML, then the JSON over it (exit 0); ``--junit`` equal
    to ``-o`` replaced the HTML by XML (exit 0). Refused, one line, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    code, _, err = run(["generate", profile, *args, "-q"])
    assert code == 2
    _one_error_line(err, *roles, "same file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_json_naming_a_folder_fails_before_the_html_is_replaced(run, profile, tmp_path):
    """Item 7: ``--json`` naming a folder while ``-o`` was fine replaced report.html, then failed."""
    before = _old_pair(tmp_path / "out")
    (tmp_path / "adir").mkdir()
    code, _, err = run(["generate", profile, "-o", tmp_path / "out/report.html", "--json", tmp_path / "adir", "-q"])
    assert code == 2
    _one_error_line(err, "--json", "is a folder")
    assert _listing(tmp_path / "out") == before


@pytest.mark.parametrize("failing", [2, 3])
def test_disk_full_after_the_first_output_replaces_nothing(run, profile, tmp_path, monkeypatch, failing):
    """Item 7: the disk filling after the first output left a new HTML beside the old JSON (or the
    pair written and then exit 2 for --junit). Now every temporary file is written and synced first;
    the ``failing``-th one hits ENOSPC: exit 2, one line, every old output intact, no temporary file."""
    out = tmp_path / "out"
    before = _old_pair(out)
    (out / "junit.xml").write_text(OLD)
    before["junit.xml"] = OLD
    calls = []
    real_fsync = output_set.os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) == failing:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)
    monkeypatch.setattr(output_set.os, "fsync", fsync)
    code, _, err = run(["generate", profile, "-o", out / "report.html", "--junit", out / "junit.xml", "-q"])
    assert code == 2
    _one_error_line(err, "No space left on device", "nothing was replaced")
    assert len(calls) == failing
    assert _listing(out) == before


def test_disk_full_keeps_the_old_rule_outputs_folder(run, profile, tmp_path, monkeypatch):
    """--rule-outputs is one of the outputs: a commit that fails leaves the earlier export as it was (it was
    swapped in before the commit, so a full disk left new rule outputs beside the old report)."""
    out = tmp_path / "out"
    before = _old_pair(out)
    kept = tmp_path / "ro"
    kept.mkdir()
    (kept / "CPUBottleneck.json").write_text(OLD)

    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(output_set.os, "fsync", fsync)
    code, _, err = run(["generate", profile, "-o", out / "report.html", "--rule-outputs", kept, "-q"])
    assert code == 2
    _one_error_line(err, "No space left on device", "nothing was replaced")
    assert _listing(out) == before
    assert _listing(kept) == {"CPUBottleneck.json": OLD}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "ro"]  # no staging folder left


def test_rule_outputs_folder_is_swapped_in_with_the_other_outputs(run, profile, tmp_path):
    kept = tmp_path / "ro"
    code, _, err = run(["generate", profile, "-o", tmp_path / "out/report.html", "--rule-outputs", kept, "-q"])
    assert code == 0, err
    assert "CPUBottleneck.json" in {p.name for p in kept.iterdir()} and len(list(kept.glob("*.json"))) >= 11
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "profile") == ["out", "ro"]


@pytest.mark.parametrize("output, kept", [("r.html", "r.html"), ("ro/r.html", "ro"), ("ro/sub/r.json", "ro")])
def test_an_output_inside_the_rule_outputs_folder_is_refused_before_any_work(run, profile, tmp_path, output,
                                                                             kept):
    """--rule-outputs is swapped in whole: an -o or --json that is that folder, or lies inside it, was
    written and then replaced by the swap (``ro/r.html``: exit 0, the report gone) or made the swap fail
    after the report was written (``-o r.html --rule-outputs r.html``: exit 2 with a new report)."""
    cwd = tmp_path / "cwd"
    (cwd / "ro" / "sub").mkdir(parents=True)  # the folder an output goes into exists; ro/ is not empty
    args = ["generate", profile, "-q", "--rule-outputs", cwd / kept]
    args += ["-o", cwd / output] if output.endswith(".html") else ["-o", cwd / "r.html", "--json", cwd / output]
    code, _, err = run(args)
    assert code == 2
    _one_error_line(err, f"is inside --rule-outputs {cwd / kept}")
    assert sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*")) == ["ro", "ro/sub"]


def test_report_inside_an_empty_rule_outputs_folder_is_refused(run, profile, tmp_path):
    """The common slip: ``-o ro/report.html --rule-outputs ro/`` with ``ro/`` new and empty. Before, the report
    was written into ro/ and the swap then moved it away (exit 0, no report)."""
    (tmp_path / "ro").mkdir()
    code, _, err = run(["generate", profile, "-q", "-o", tmp_path / "ro/report.html", "--rule-outputs",
                        tmp_path / "ro"])
    assert code == 2
    _one_error_line(err, "-o ", "is inside --rule-outputs")
    assert list((tmp_path / "ro").iterdir()) == []


def test_real_full_filesystem_for_json_keeps_the_old_pair(run, profile, tmp_path):
    """Item 7 on a real full filesystem (a 1 MiB tmpfs, as root): ``--json`` there, ``-o`` on a
    disk with room: the old report.html must not be replaced."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        with open(mnt / "filler", "wb") as fh:  # fill it up
            try:
                while True:
                    fh.write(b"x" * 65536)
                    fh.flush()
            except OSError:
                pass
        (mnt / "report.json").write_bytes(b"")
        before = _old_pair(tmp_path / "out")
        code, _, err = run(["generate", profile, "-o", tmp_path / "out/report.html", "--json", mnt / "report.json", "-q"])
        assert code == 2
        _one_error_line(err, "No space left on device")
        assert _listing(tmp_path / "out") == before
        assert sorted(p.name for p in mnt.iterdir()) == ["filler", "report.json"]
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_leftover_temporary_files_of_a_killed_commit_are_removed_under_the_lock(run, profile, tmp_path):
    """A kill between writing a temporary output and renaming it left ``.reportgen-tmp-*.tmp``; the
    next run that commits into the folder (holding the folder's lock) removes it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{output_set.TMP_PREFIX}report.html.abc123.tmp").write_text("half")
    code, _, err = run(["generate", profile, "-o", out / "report.html", "-q"])
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]


# ------------------------------------------------------------------------ work folders and kills


def test_sigkill_leaves_no_work_folder_in_the_output_folder(profile, tmp_path):
    """Item 9: SIGKILL left ``.reportgen-XXXXXXXX/`` in the output folder (14 of 15 kills), never
    removed. Work folders now live in $TMPDIR, locked; the next run removes a dead run's folder."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    cmd = [sys.executable, "-m", "reportgen", "generate", str(profile), "-o", str(out / "report.html")]
    killed = 0
    for delay in (0.5, 1.5, 3.0):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # wait until the run is inside its work (its work folder exists), then kill it
        deadline = time.monotonic() + 120
        while not any(p.name.startswith((workdir.PREFIX, ".reportgen-")) for p in [*tmp.iterdir(), *out.iterdir()]) \
                and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        time.sleep(delay / 10)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        assert [p.name for p in out.iterdir() if not p.name.startswith("report.")] == []
    assert killed >= 2
    assert any(p.name.startswith(workdir.PREFIX) for p in tmp.iterdir())  # a dead run's folder, in $TMPDIR
    done = subprocess.run(cmd + ["-q"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp.iterdir() if p.name.startswith(("reportgen-", ".reportgen"))] == []
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]


def test_a_live_runs_work_folder_is_never_removed(tmp_path):
    """Cleaning is by lock, not by age: a folder whose lock is held (a run in progress, however
    old) stays; the same folder with its lock free goes."""
    with workdir.work_folder(tmp_path) as live:
        (live / "x").write_text("in use")
        os.utime(live, (0, 0))  # looks 56 years old
        assert workdir.remove_stale(tmp_path) == []
        assert (live / "x").read_text() == "in use"
        stale = tmp_path / f"{workdir.PREFIX}dead1234"
        stale.mkdir()
        assert workdir.remove_stale(tmp_path) == [stale.name]
    assert list(tmp_path.iterdir()) == []


def test_compare_outputs_are_checked_first_and_committed_together(tmp_path, monkeypatch, capsys):
    """``compare`` writes its page and compare.json through the same output set: colliding paths are
    refused before any work, ``--json -`` is standard output, and no work folder is left beside -o."""
    from reportgen import cli
    from tests.support.corpus.make_corpus import rule_outputs

    a, b = tmp_path / "a", tmp_path / "b"
    rule_outputs(a)
    rule_outputs(b)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    assert cli.main(["compare", str(a), str(b), "--format", "md", "-o", "out/c.json", "-q"]) == 2
    _one_error_line(capsys.readouterr().err, "-o", "--json", "same file")
    assert cli.main(["compare", str(a), str(b), "--format", "md", "-o", "out/c.md", "--json", "-", "-q"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["schema_version"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["c.md"]
