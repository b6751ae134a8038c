"""Caches and scratch that heal and leave nothing (issue #30 item 6), as real commands.

Before: a damaged ``--incremental`` cache piece made every later run exit 3 until deleted by hand; every
run wrote ``~/.ipython``; ``--scheduler local:2`` left ``dask-scratch-space/`` in ``$TMPDIR``; a run that
failed on its source had already made its output folders (``-o new/deep/r.html`` left ``new/deep/``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import main_in_process, run_cli
from tests.support.paths import ROOT
from tests.support.shared_runs import page_in_this_process

REPO = ROOT
SAMPLE = REPO / "sample_data"


def _run(*args, home: Path, tmp: Path) -> subprocess.CompletedProcess:
    """With its own HOME and TMPDIR, and no IPython or XDG cache folder set elsewhere."""
    return run_cli(*args, timeout=300, env={"HOME": str(home), "TMPDIR": str(tmp), "IPYTHONDIR": None,
                                            "XDG_CACHE_HOME": None})


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    return home, tmp


def _sections(path: Path) -> dict:
    data = json.loads(path.read_text())
    data["generator"].pop("generated_at", None)
    return data


def _damage_zero_json(folder: Path) -> None:
    next(folder.glob("*.json")).write_bytes(b"")


def _damage_cut_npz(folder: Path) -> None:
    npz = next(folder.glob("*.npz"))
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])


def _damage_types(folder: Path) -> None:
    meta = next(folder.glob("*.json"))
    doc = json.loads(meta.read_text())
    doc["keys"] = [[1, 2, 3, 4]]
    doc["files"] = [{"not": "a list"}]
    meta.write_text(json.dumps(doc))


def _damage_arrays(folder: Path) -> None:
    import numpy as np

    npz = next(folder.glob("*.npz"))
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["s0"] = arrays["s0"].astype(np.float64) + 1e9  # series ids that index nothing
    with open(npz, "wb") as handle:
        np.savez(handle, **arrays)


@pytest.fixture(scope="module")
def first_incremental_run(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """``generate --incremental`` of the sample into a new cache, once: its report.json, the cache folder and
    the names of the pieces of its system records (each test damages a copy)."""
    root = tmp_path_factory.mktemp("incremental")
    home, tmp = _dirs(root)
    cache = root / "cache"
    first = _run("generate", SAMPLE, "-o", root / "a.html", "-q", "--incremental", "--cache-dir", cache,
                 home=home, tmp=tmp)
    assert first.returncode == 0, first.stderr
    folder, = (cache / "system-records").iterdir()
    return root / "a.json", cache, sorted(p.name for p in folder.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("damage, child", [(_damage_zero_json, True), (_damage_cut_npz, False),
                                           (_damage_types, False), (_damage_arrays, False)],
                         ids=["zero-byte-json", "cut-npz", "json-types", "npz-arrays"])
def test_a_damaged_incremental_cache_piece_is_read_again(tmp_path, damage, child, first_incremental_run, capsys,
                                                         monkeypatch):
    """The first kind of damage through ``reportgen`` in a child process (the exit code a user sees), the
    other three through ``cli.main`` in this process, the page made here too: the cache's reading is what
    differs between them, and it is the same code either way (6 child generates fewer)."""
    home, tmp = _dirs(tmp_path)
    first_json, first_cache, pieces = first_incremental_run
    cache = tmp_path / "cache"
    shutil.copytree(first_cache, cache)
    folder, = (cache / "system-records").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == pieces
    damage(folder)

    def run(*args):
        if child:
            return _run(*args, home=home, tmp=tmp)
        with page_in_this_process():
            return main_in_process(*args, capsys=capsys, monkeypatch=monkeypatch)

    again = run("generate", SAMPLE, "-o", tmp_path / "b.html", "-q", "--incremental", "--cache-dir", cache)
    assert again.returncode == 0, again.stderr  # was exit 3, on every later run
    assert _sections(first_json) == _sections(tmp_path / "b.json")
    healed = sorted(p.name for p in folder.iterdir())
    assert len(healed) == len(pieces) and not any(name.endswith(".tmp") for name in healed)
    third = run("generate", SAMPLE, "-o", tmp_path / "c.html", "--incremental", "--cache-dir", cache)
    assert third.returncode == 0, third.stderr
    assert "system metrics: 0 of 26 files read, the rest from the cache" in third.stderr  # the healed piece is used


def test_an_unwritable_home_leaks_nothing_into_tmpdir(tmp_path):
    home, tmp = _dirs(tmp_path)
    missing = tmp_path / "no-such-home"
    for _ in range(2):
        proc = _run("generate", SAMPLE, "-o", tmp_path / "r.html", "-q", home=missing, tmp=tmp)
        assert proc.returncode == 0, proc.stderr
    assert list(tmp.iterdir()) == [] and not missing.exists()


def test_a_local_dask_cluster_leaves_no_scratch_space_and_an_odd_tmpdir_prints_nothing(tmp_path):
    """``--scheduler local:2`` left ``dask-scratch-space/`` in ``$TMPDIR``. And Dask parses DASK_* variables as
    Python: a scratch path with ``9if`` in it printed a SyntaxWarning (``invalid decimal literal``) in this
    process and in each worker; a CI run failed on that line. One run checks both (a TMPDIR named ``9if``)."""
    pytest.importorskip("distributed")
    home, tmp = _dirs(tmp_path)
    odd = tmp / "9if"
    odd.mkdir()
    proc = _run("generate", SAMPLE, "-o", tmp_path / "r.html", "-q", "--scheduler", "local:2", home=home, tmp=odd)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert list(odd.iterdir()) == [] and list(home.iterdir()) == []  # dask-scratch-space/ before


def test_output_folders_are_made_only_when_the_outputs_are_committed_and_nothing_is_left_in_home_or_tmpdir(
        tmp_path):
    home, tmp = _dirs(tmp_path)
    empty = tmp_path / "empty-source"
    empty.mkdir()
    proc = _run("generate", empty, "-o", tmp_path / "new" / "deep" / "r.html", "--junit",
                tmp_path / "ci" / "junit.xml", home=home, tmp=tmp)
    assert proc.returncode == 2, proc.stderr
    assert not (tmp_path / "new").exists() and not (tmp_path / "ci").exists()
    ok = _run("generate", SAMPLE, "-o", tmp_path / "new" / "deep" / "r.html", "-q", home=home, tmp=tmp)
    assert ok.returncode == 0 and sorted(os.listdir(tmp_path / "new" / "deep")) == ["r.html", "r.json"]
    assert list(home.iterdir()) == [] and list(tmp.iterdir()) == []  # nothing left there (~/.ipython before)
