"""The scratch variables a run sets for the libraries it uses (``workdir.scratch_env``).

A CI run failed because one line too many reached stderr: ``<unknown>:1: SyntaxWarning: invalid decimal
literal``. Dask parses every ``DASK_*`` variable with ``ast.literal_eval``, and the run's random work folder
name had a number run into a keyword."""

from __future__ import annotations

import ast
import os
import warnings
from pathlib import Path

import pytest

from reportgen.workdir import dask_scratch, scratch_env

# Each parses as a number followed by a keyword: Python 3.11 warns on the tokenizer's way to a SyntaxError.
AWKWARD = ["/tmp/9if", "/tmp/reportgen-work-0xcfor", "/tmp/x-1e5in", "/tmp/it's \"odd\"\\n\u202e"]


@pytest.mark.parametrize("base", AWKWARD)
def test_dask_reads_its_scratch_folder_back_exactly_and_silently(base):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with scratch_env(Path(base)):
            raw = os.environ["DASK_TEMPORARY_DIRECTORY"]
            assert ast.literal_eval(raw) == f"{base}/dask"  # what Dask's config does with it
            assert dask_scratch() == f"{base}/dask"
            assert os.environ["IPYTHONDIR"] == f"{base}/ipython"  # IPython takes the text as it is


def test_the_raw_text_of_such_a_folder_would_have_warned():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(SyntaxError):
            ast.literal_eval("/tmp/9if/dask")
    assert [str(w.message) for w in seen] == ["invalid decimal literal"]


def test_dask_config_collects_the_folder_as_a_string():
    config = pytest.importorskip("dask.config")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with scratch_env(Path("/tmp/9if")):
            assert config.collect_env(dict(os.environ))["temporary_directory"] == "/tmp/9if/dask"


def test_outside_a_run_there_is_no_scratch_folder(monkeypatch):
    monkeypatch.delenv("DASK_TEMPORARY_DIRECTORY", raising=False)
    assert dask_scratch() is None
    monkeypatch.setenv("DASK_TEMPORARY_DIRECTORY", "/srv/scratch")  # set by the user, raw
    assert dask_scratch() == "/srv/scratch"
