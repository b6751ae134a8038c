"""A full disk is reported against the path that is full (``errors.naming``): a write or a flush through
an open file raises ENOSPC without a file name, so the one line said "No space left on device" and no
more (``record --out FULL/``), or named a file the user never gave. Every writer wraps its writes."""

from __future__ import annotations

import errno
import os

import pytest

from reportgen.errors import InputError, environment_message, naming
from reportgen.output_set import OutputSet
from reportgen.recorder.writer import MetricsWriter


def _full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_the_output_set_names_the_output_it_was_writing(tmp_path, monkeypatch):
    outputs = OutputSet()
    outputs.add("-o", tmp_path / "r.html")
    outputs.add("--json", tmp_path / "sub" / "r.json")
    monkeypatch.setattr(os, "fsync", _full)
    with pytest.raises(InputError) as caught:
        outputs.commit({"-o": "<html>", "--json": "{}"})
    assert str(caught.value).startswith(f"cannot write the outputs (No space left on device: {tmp_path / 'r.html'})")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing replaced, no temporary file, no folder


def test_the_recorder_names_its_metrics_file(tmp_path, monkeypatch):
    writer = MetricsWriter(tmp_path / "rec")
    writer.write([{"Timestamp": 1_795_000_000.0, "Value": 1}])
    monkeypatch.setattr(writer._handle, "flush", _full)
    with pytest.raises(OSError) as caught:
        writer.write([{"Timestamp": 1_795_000_000.5, "Value": 2}])
    assert environment_message(caught.value) == f"No space left on device: {writer.files[-1]}"


def test_a_name_the_error_has_is_kept(tmp_path):
    with pytest.raises(OSError) as caught, naming(tmp_path / "outer"):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "inner"))
    assert caught.value.filename == str(tmp_path / "inner")
