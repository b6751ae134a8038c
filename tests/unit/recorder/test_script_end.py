"""recorder/script_end.read_mark: what the recorded command's ``sitecustomize`` wrote is kept only when it is the
command's own process's end, inside its run (the interpreters themselves: tests/e2e/test_record_script_end.py)."""

from __future__ import annotations

from reportgen.recorder.script_end import read_mark


def test_a_mark_that_is_not_one_is_none(tmp_path):
    mark = tmp_path / "script-end"
    assert read_mark(None, 1, 0.0, 10.0) is None
    assert read_mark(mark, 1, 0.0, 10.0) is None  # never written (os._exit, a signal)
    for text in ("", "x 1", "5.0", "5.0 x"):
        mark.write_text(text)
        assert read_mark(mark, 1, 0.0, 10.0) is None
    mark.write_text("5.0 2\n")
    assert read_mark(mark, 1, 0.0, 10.0) is None  # another process's
    assert read_mark(mark, 2, 0.0, 10.0) == 5.0
    assert read_mark(mark, 2, 6.5, 10.0) is None  # before the command started
    mark.write_text("10.4 2\n")
    assert read_mark(mark, 2, 0.0, 10.0) == 10.0  # within the slack: kept inside the run
