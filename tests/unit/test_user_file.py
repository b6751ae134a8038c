"""One guard for every file read (``reportgen.user_file``): every reader of a user's file refuses a FIFO, a
device and a folder, and reads at most its bound, with a few words that say why.

Before: ``--config`` and ``--prices`` naming a FIFO hung for ever, a symlink to ``/dev/zero`` read 2.5 GB;
an XSpace file named ``host.xplane.pb`` that is a FIFO hung the trace read. Each reader below is called
as its command calls it; an alarm turns a hang into a failure instead of a stuck test run.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from reportgen.cost import load_prices
from reportgen.engine.params import load_config
from reportgen.errors import InputError
from reportgen.json_file import JsonFileError, read_json_file
from reportgen.problems import ProblemLog
from reportgen.readers.xspace_trace import read_xspace
from reportgen.user_file import SETTINGS_MAX_BYTES, UserFileError, read_user_file


def _xspace(path: Path) -> str:
    problems = ProblemLog()
    read_xspace(path, problems)
    return " | ".join(problems.counts)


def _raises(call, error):
    def run(path: Path) -> str:
        with pytest.raises(error) as caught:
            call(path)
        return str(caught.value)
    return run


# reader name -> (file name it reads, how it is called -> the words it gives)
READERS = {
    "--config toml": ("rules.toml", _raises(load_config, InputError)),
    "--config yaml": ("rules.yaml", _raises(load_config, InputError)),
    "--prices": ("prices.toml", _raises(load_prices, InputError)),
    "JSON document": ("CPUBottleneck.json", _raises(read_json_file, JsonFileError)),
    "XSpace protobuf": ("host0.xplane.pb", _xspace),
}
KINDS = {
    "fifo": (lambda path: os.mkfifo(path), "a FIFO, not a regular file; not read"),
    "dev-zero": (lambda path: path.symlink_to("/dev/zero"), "a device, not a regular file; not read"),
    "folder": (lambda path: path.mkdir(), "a folder, not a regular file; not read"),
}


@contextlib.contextmanager
def _no_hang(seconds: int = 10):
    def hung(*_):
        raise AssertionError(f"the read hung for {seconds} s")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_what_is_not_a_regular_file(tmp_path, reader, kind):
    name, read = READERS[reader]
    make, words = KINDS[kind]
    path = tmp_path / name
    make(path)
    with _no_hang():
        said = read(path)
    assert words in said


@pytest.mark.parametrize("reader", ["--config toml", "--prices"])
def test_settings_files_are_read_up_to_their_bound(tmp_path, reader):
    name, read = READERS[reader]
    path = tmp_path / name
    with open(path, "wb") as handle:  # sparse: no disk used
        handle.truncate(SETTINGS_MAX_BYTES + 1)
    assert f"above the {SETTINGS_MAX_BYTES / 1e6:.0f} MB" in read(path)


def test_the_guard_stops_at_the_bound_when_a_file_grows_while_read(tmp_path, monkeypatch):
    """fstat said small, the file gave more: at most bound + 1 bytes are read, then the same refusal."""
    path = tmp_path / "grows.toml"
    path.write_bytes(b"x" * 100)
    real_fstat = os.fstat

    class Small:
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(os, "fstat", lambda fd: Small(real_fstat(fd)))
    with pytest.raises(UserFileError, match="above the 0 MB a test file may have"):
        read_user_file(path, 50, "a test file")
    assert read_user_file(path, 100, "a test file") == b"x" * 100


def test_the_guard_names_the_setting_of_its_bound(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b"0," * 600_000 + b"0]")
    with pytest.raises(JsonFileError, match=r"1 MB, above the 1 MB a JSON file may have \(REPORTGEN_MAX_JSON_MB\)"):
        read_json_file(path, max_bytes=1_000_000)
