"""The batch size in compare's comparability check (issue 49): where it is known (``--batch-size-a/-b``, or a
``reportgen record`` recording's command line), two runs of different batch sizes are "not comparable because
batch size 32 vs 64", and ``--force`` adds the time per sample, the fair comparison of such runs."""

from __future__ import annotations

import pytest

from reportgen.compare.batch import BatchSize, batch_size_of, from_command, from_hyperparameters
from reportgen.compare.run import CompareOptions, _batch, compare
from reportgen.errors import InputError
from reportgen.sources.jobs import training_info_from_description
from reportgen.compare.comparability import Comparability
from reportgen.compare.regression import Regression
from reportgen.compare.sections.verdict import per_sample


@pytest.mark.parametrize("command, size", [
    (["python", "train.py", "--batch-size", "64"], 64),
    (["python", "train.py", "--batch_size=32", "--lr", "0.1"], 32),
    (["torchrun", "train.py", "--per_device_train_batch_size", "16"], 16),
    (["python", "t.py", "--bs", "8", "--BATCH-SIZE", "8"], 8),  # the same size twice: that size
    (["python", "t.py", "--train-batch-size=128"], 128),
])
def test_a_recorded_command_gives_its_batch_size(command, size):
    found = from_command(command)
    assert found is not None and found.value == size and found.source.startswith("the recorded command's --")


@pytest.mark.parametrize("command", [
    ["python", "train.py", "--steps", "200"],  # the repository's planted runs: no batch flag
    ["python", "t.py", "--batch-size"],  # no value
    ["python", "t.py", "--batch-size", "auto"],
    ["python", "t.py", "--batch-size", "0"],
    ["python", "t.py", "--batch-size", "99999999999"],
    ["python", "t.py", "--batch-size", "32", "--bs", "64"],  # two sizes: which one a step processes is unknown
    ["python", "t.py", "--micro-batch-size", "2", "--global-batch-size", "64"],  # not the per-step batch
    ["python", "t.py", "--batch-sizes", "32"],
    "python t.py --batch-size 32",  # not a list: not a recording's command
    None,
])
def test_no_batch_size_where_the_command_does_not_say_one(command):
    assert from_command(command) is None


def test_a_batch_size_given_on_the_command_line_wins_over_the_recordings():
    recording = {"command": ["python", "train.py", "--batch-size", "64"]}
    given = BatchSize(32, "--batch-size-a")
    assert batch_size_of(given, recording) is given
    assert batch_size_of(None, recording) == BatchSize(64, "the recorded command's --batch-size 64")
    assert batch_size_of(None, None) is None and batch_size_of(None, {"command": 3}) is None


def _described(hyperparameters) -> dict:
    """A DescribeTrainingJob response as boto3 returns it, with these HyperParameters."""
    return {"TrainingJobName": "job-1", "TrainingJobStatus": "Completed",
            "ResourceConfig": {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 1},
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"}, "HyperParameters": hyperparameters}


@pytest.mark.parametrize("hyperparameters, size, name", [
    ({"epochs": "10", "batch-size": "64"}, 64, "batch-size"),
    ({"batch_size": '"128"', "sagemaker_program": '"train.py"'}, 128, "batch_size"),  # the SDK's JSON values
    ({"per_device_train_batch_size": "16", "model_name": "bert"}, 16, "per_device_train_batch_size"),
])
def test_a_sagemaker_jobs_hyperparameters_give_its_batch_size(hyperparameters, size, name):
    info = training_info_from_description(_described(hyperparameters), "us-east-1")
    found = from_hyperparameters(info.hyperparameters)
    assert found == BatchSize(size, f"the training job's hyperparameter {name} = {size}")
    # compare's side: given on the command line first, else the job's
    assert _batch("A", None, info.hyperparameters) == {"batch": {"size": size, "from": found.source}}
    assert _batch("B", 8, info.hyperparameters) == {"batch": {"size": 8, "from": "--batch-size-b"}}
    assert BatchSize.of_spec(_batch("A", None, info.hyperparameters)["batch"]) == found


@pytest.mark.parametrize("hyperparameters", [
    None, "batch_size=32", {}, {"epochs": "10"}, {"batch_size": "auto"}, {"batch_size": 32},
    {"batch_size": "32", "train_batch_size": "64"}, {"global_batch_size": "512"},
])
def test_no_batch_size_from_hyperparameters_that_do_not_say_one(hyperparameters):
    info = training_info_from_description(_described(hyperparameters), "us-east-1")
    assert from_hyperparameters(info.hyperparameters) is None and _batch("A", None, info.hyperparameters) == {}


def test_a_side_spec_that_is_no_batch_size_gives_none():
    for spec in (None, {}, {"size": 32}, {"size": "x", "from": "y"}, {"size": 0, "from": "y"}, [32, "y"]):
        assert BatchSize.of_spec(spec) is None


@pytest.mark.parametrize("flag, value", [("batch_a", 0), ("batch_b", -3), ("batch_a", 1 << 30)])
def test_a_batch_size_that_is_none_is_refused_before_any_work(tmp_path, flag, value):
    with pytest.raises(InputError, match="--batch-size-"):
        compare("nowhere-a", "nowhere-b", tmp_path / "c.md", CompareOptions(fmt="md", **{flag: value}))
    assert list(tmp_path.iterdir()) == []


def _regression(basis="median step time", ratio=1.5, low=1.4, high=1.6, a_s=0.2, b_s=0.3) -> Regression:
    return Regression(basis, ratio, low, high, a_s, b_s, 500, 500, None, "slower beyond noise", False)


def test_per_sample_time_is_the_step_time_over_the_batch_with_the_interval_scaled():
    fit = Comparability(comparable=False, batch_a=32, batch_b=64)
    text, data = per_sample(fit, _regression())
    # A: 200 ms / 32 = 6.25 ms a sample; B: 300 ms / 64 = 4.69 ms: B is 25 % faster per sample though 50 % slower
    # per step; the interval 1.4-1.6 per step is 0.7-0.8 per sample
    assert data["a_ms"] == pytest.approx(6.25) and data["b_ms"] == pytest.approx(4.6875)
    assert data["ratio"] == pytest.approx(0.75) and (data["low"], data["high"]) == pytest.approx((0.7, 0.8))
    assert text == ("Per sample (batch 32 vs 64, the fair comparison of these runs): 6.25 ms → 4.69 ms of median "
                    "step time (−25.0 %, 95 % interval −30.0 to −20.0 %).")


def test_no_per_sample_time_without_two_known_different_batches_or_step_times():
    assert per_sample(Comparability(comparable=True, batch_a=32, batch_b=32), _regression()) is None
    assert per_sample(Comparability(comparable=True, batch_a=32), _regression()) is None
    assert per_sample(Comparability(comparable=True), _regression()) is None
    duration = _regression(basis="job duration", low=None, high=None)  # no steps: a step's work is unknown
    assert per_sample(Comparability(comparable=False, batch_a=32, batch_b=64), duration) is None
