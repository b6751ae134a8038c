"""Helpers shared by tests/sources (imported by conftest and the tests)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = "reportgen-test-bucket"
TRAINING_JOB = "pytorch-training-2021-12-22-20-38-07-416"
RULE = "ProfilerReport-1640205487"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole"


def client(service: str):
    import boto3

    return boto3.Session(region_name=REGION).client(service)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def system_lines(epoch: int) -> bytes:
    records = []
    for i in range(3):
        ts = epoch + 9 + i * 0.5
        records += [
            {"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 90.0 + i, "NodeId": "algo-1", "Timestamp": ts},
            {"Type": "gpu", "Name": "gpu0", "Dimension": "GPUUtilization", "Value": 10.0 * i, "NodeId": "algo-1", "Timestamp": ts},
            {"Type": "memory", "Name": "MemoryUsedPercent", "Dimension": "", "Value": 12.5, "NodeId": "algo-1", "Timestamp": ts},
        ]
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def pythontimeline() -> bytes:
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1640205540000000}},
        {"name": "Step:ModeKeys.TRAIN", "cat": "Step:ModeKeys.TRAIN", "ph": "X", "ts": 1000, "dur": 250000, "pid": 0,
         "tid": 27, "args": {"step_num": "0", "node_id": "27-algo-1"}},
    ]
    return json.dumps(events).encode()


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative POSIX path -> bytes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def raw_profile(root: Path) -> Path:
    """A tiny raw SageMaker profile under ``root``: one system file and one framework timeline."""
    (root / "system" / "incremental" / "2021122220").mkdir(parents=True)
    (root / "system" / "incremental" / "2021122220" / "1640205540.algo-1.json").write_bytes(system_lines(1640205540))
    (root / "framework" / "pevents" / "2021122220").mkdir(parents=True)
    (root / "framework" / "pevents" / "2021122220" / "1640205600250000_27-algo-1_pythontimeline.json").write_bytes(pythontimeline())
    return root
