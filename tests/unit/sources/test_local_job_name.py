"""A local source's job name (the report's title): a TensorBoard log dir is named by itself or, with a generic
name such as ``logdir``, by its parent (#49: a JAX report was titled "logdir")."""

from __future__ import annotations

import pytest

from reportgen.sources.layout import local_job_name


@pytest.mark.parametrize("given, name", [
    ("jax-cpu", "jax-cpu"),
    ("jax-cpu/logdir", "jax-cpu"),
    ("jax-cpu/logdir/plugins", "jax-cpu"),
    ("jax-cpu/logdir/plugins/profile", "jax-cpu"),
    ("jax-cpu/logdir/plugins/profile/2026_11_26_18_48_00", "jax-cpu"),
    ("bert-run7/plugins/profile/2026_11_26_18_48_00", "bert-run7"),  # a log dir with a name of its own
    ("jobs/logs", "logs"),  # no TensorBoard layout inside: the folder's own name
])
def test_tensorboard_log_dirs_are_named_after_the_job(tmp_path, given, name):
    (tmp_path / "jax-cpu/logdir/plugins/profile/2026_11_26_18_48_00").mkdir(parents=True)
    (tmp_path / "bert-run7/plugins/profile/2026_11_26_18_48_00").mkdir(parents=True)
    (tmp_path / "jobs/logs").mkdir(parents=True)
    assert local_job_name(str(tmp_path / given)) == name
    assert local_job_name(str(tmp_path / "missing")) == ""
