"""A run's batch size, where something says it: the user (``compare --batch-size-a/-b``), a SageMaker training
job's hyperparameters (DescribeTrainingJob's ``HyperParameters``: ``batch_size``, ``batch-size``, …), or the
command a ``reportgen record`` recording ran (its ``--batch-size 64``, as recording.json keeps the command line).

Neither SageMaker's rule outputs nor the profiler traces carry a batch size (SageMaker's BatchSize rule judges
utilization, not the batch), so a run without one of these has no known batch size and the comparability check
says nothing about it. Names of a micro-batch or a global batch are not read: which of them a profiled step
processes depends on the script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reportgen.command_flags import flag_values
from reportgen.rule_outputs import command_line

# --batch-size, --batch_size, --batchsize, --bs, --train-batch-size, --per_device_train_batch_size (Hugging Face)
BATCH_FLAG = re.compile(r"--(?:batch[-_]?size|bs|train[-_]batch[-_]size|per[-_]device[-_]train[-_]batch[-_]size)",
                        re.IGNORECASE)
# the same names as hyperparameters (the SageMaker SDK passes a job's hyperparameters as these flags)
BATCH_NAME = re.compile(r"(?:batch[-_]?size|bs|train[-_]batch[-_]size|per[-_]device[-_]train[-_]batch[-_]size)",
                        re.IGNORECASE)
MAX_BATCH = 1 << 24  # a larger "batch size" is no batch size


@dataclass(frozen=True)
class BatchSize:
    value: int
    source: str  # where it was read: "--batch-size-a", "the recorded command's --batch-size 64"

    def to_spec(self) -> dict:
        """As a side's spec holds it (``compare.session``: the comparison notebook's parameters are JSON)."""
        return {"size": self.value, "from": self.source}

    @classmethod
    def of_spec(cls, spec) -> BatchSize | None:
        if not isinstance(spec, dict) or not {"size", "from"} <= spec.keys():
            return None
        size = _size(str(spec["size"]))
        return cls(size, str(spec["from"])) if size is not None else None


def _size(text: str) -> int | None:
    text = text.strip().strip('"')  # the SageMaker SDK writes each hyperparameter as JSON: 64 or "64"
    return int(text) if text.isdigit() and 0 < int(text) <= MAX_BATCH else None


def from_hyperparameters(pairs) -> BatchSize | None:
    """The batch size a SageMaker training job's hyperparameters give ((name, value) text pairs); None when they
    give none, or several that differ."""
    found = {size: name for name, value in pairs or () if BATCH_NAME.fullmatch(name)
             for size in [_size(value)] if size is not None}
    if len(found) != 1:
        return None
    ((size, name),) = found.items()
    return BatchSize(size, f"the training job's hyperparameter {name} = {size}")


def from_command(command) -> BatchSize | None:
    """The batch size a recorded command line gives (``--batch-size 64`` or ``--batch-size=64``); None when it
    gives none, or several that differ."""
    found: dict[int, str] = {}
    for flag, value in flag_values(command, BATCH_FLAG):
        size = _size(value)
        if size is not None:
            found.setdefault(size, f"{flag} {size}")
    if len(found) != 1:
        return None
    ((size, flag),) = found.items()
    return BatchSize(size, f"the recorded command's {flag}")


def batch_size_of(given: BatchSize | None, recording) -> BatchSize | None:
    """A run's batch size: ``given`` (on the command line, or by its job's hyperparameters), else its recording's
    command's."""
    if given is not None:
        return given
    return from_command(command_line(recording))
