"""Round 4 (#50) where the real process is the point: its exit code and its one line.

* An environment value that cannot be used (``REPORTGEN_MAX_JSON_MB=inf`` failed at import, before any
  handler; ``TZ=UTC+25``) is exit 2, one line naming it.
* A long ``$TMPDIR`` (a CI runner's nested work folder): ``--scheduler local:N``'s fork server placed its
  Unix socket there and died with "OSError: AF_UNIX path too long", a traceback.
* A full disk under ``record --out`` is named: the line said only "No space left on device".
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tests.support.tmpfs import fill, small_tmpfs


@pytest.mark.parametrize("name, value", [("REPORTGEN_MAX_JSON_MB", "inf"), ("REPORTGEN_STREAM_TRACE_MB", "nan"),
                                         ("TZ", "UTC+25")])
def test_an_unusable_environment_value_is_exit_2_with_one_line(tmp_path, name, value):
    result = run_cli("check", tmp_path / "report.json", env={name: value}, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"reportgen: error: {name}={value!r}: not a "), lines


def test_the_local_clusters_socket_fits_whatever_tmpdir_is(tmp_path):
    pytest.importorskip("distributed")
    long_tmp = tmp_path / ("t" * 60) / ("u" * 60)
    long_tmp.mkdir(parents=True)
    code = ("from multiprocessing import forkserver\n"
            "from reportgen.cluster.client import start_fork_server\n"
            "start_fork_server()\n"
            "print(forkserver._forkserver._forkserver_address)\n")
    env = {**os.environ, "TMPDIR": str(long_tmp), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    address = result.stdout.strip()
    assert len(os.fsencode(address)) <= 107 and not address.startswith(str(long_tmp)), address
    assert list(long_tmp.iterdir()) == []


def test_a_full_disk_under_record_names_the_path(tmp_path):
    with small_tmpfs(tmp_path / "full", "64k") as mnt:
        fill(mnt)
        result = run_cli("record", "--out", mnt / "rec", "--", sys.executable, "-c", "pass", timeout=60)
        assert result.returncode == 2, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"reportgen: error: No space left on device: {mnt / 'rec'}/"), last
