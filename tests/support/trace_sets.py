"""Trace sets whose ``kineto.json`` was frozen (``tests/snapshots/kineto/``) from the all-files-at-once
analysis before the rank-by-rank path replaced it: every fixture folder with PyTorch traces, and
synthetic sets that plant the grouping cases (cycles of one worker, a cut file without
distributedInfo, two files or two workers with one rank, files named alike in two folders)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from reportgen.problems import ProblemLog
from tests.support.paths import SNAPSHOTS as ALL_SNAPSHOTS

FIXTURE_SETS = ("hta-cpu-only-gloo", "hta-resnet-v100-1gpu", "hta-sampled-128rank", "hta-trace-diff-rank3of8",
                "kineto-resnet50-num-workers-0", "kineto-resnet50-num-workers-4", "torch-cpu-record-ddp2",
                "torch-cpu-record-inputbound", "torch-cpu-record-workers2")
SNAPSHOTS = ALL_SNAPSHOTS / "kineto"


def rank_events(base: float, steps: int, kernel_scale: float, extra: str = "") -> list[dict]:
    """A small rank: steps with a CPU op, a kernel, a memcpy and an NCCL kernel each."""
    out = []
    t = base
    for i in range(steps):
        dur = 1000.0 + 100.0 * i * kernel_scale
        out.append({"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{i + 1}", "ts": t, "dur": dur, "pid": 1, "tid": 1})
        out.append({"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "ts": t + 10, "dur": 300.0, "pid": 1, "tid": 1})
        out.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{extra}", "ts": t + 320, "dur": 50.0 + i, "pid": 1,
                    "tid": 1})
        out.append({"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "ts": t + 20, "dur": 200.0 * kernel_scale,
                    "pid": 0, "tid": 7, "args": {"device": 0}})
        out.append({"ph": "X", "cat": "kernel", "name": f"kernel_{extra or 'x'}", "ts": t + 230, "dur": 30.0 + i,
                    "pid": 0, "tid": 7, "args": {"device": 0}})
        out.append({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "ts": t + 400,
                    "dur": 300.0 / kernel_scale, "pid": 0, "tid": 8, "args": {"device": 0}})
        out.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": t + 5,
                    "dur": 12.0, "pid": 0, "tid": 9, "args": {"device": 0, "bytes": 4096}})
        t += dur + 50.0
    return out


def write_trace(path: Path, events: list[dict], rank: int | None = None, cut: bool = False) -> None:
    doc = {"schemaVersion": 1, "traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 4}
    text = json.dumps(doc)
    if cut:  # an interrupted run: the file ends inside the events, before distributedInfo
        text = json.dumps({"schemaVersion": 1, "traceEvents": events})[:-40]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)


def synthetic_sets(root: Path) -> dict[str, list[Path]]:
    """name -> files (sorted as ``find_traces`` sorts them) of each synthetic set, written under ``root``."""
    sets: dict[str, list[Path]] = {}
    # Four DDP ranks, two profiling cycles each (torch's <host>_<pid>.<ns> names), rank 2 slower.
    d = root / "ddp4"
    for r in range(4):
        for c in range(2):
            write_trace(d / f"node{r // 2}_{100 + r}.{1700000000000000000 + 10**12 * c + r}.pt.trace.json",
                   rank_events(1.7e15 + 2e6 * c + 10 * r, 3, 2.0 if r == 2 else 1.0, extra=str(r)), rank=r)
    sets["ddp4"] = sorted(d.iterdir())
    # A cut cycle (no distributedInfo) joins its worker's rank; a second worker also claims rank 1
    # (a folder reused by two runs): the two workers' files are one rank.
    d = root / "regroup"
    write_trace(d / f"vm_1.{1700000000000000000}.pt.trace.json", rank_events(1.7e15, 3, 1.0, "a"), rank=0)
    write_trace(d / f"vm_1.{1700000001000000000}.pt.trace.json", rank_events(1.7e15 + 5e6, 3, 1.0, "a"), cut=True)
    write_trace(d / f"vm_2.{1700000000000000001}.pt.trace.json", rank_events(1.7e15 + 3, 3, 1.5, "b"), rank=1)
    write_trace(d / f"vm_3.{1700000002000000000}.pt.trace.json.gz", rank_events(1.7e15 + 9e6, 2, 1.2, "c"), rank=1)
    # Files torch did not name: rank-3.json and rank-3b.json carry rank 3 (distributedInfo, name);
    # two files called x.json in two folders are one "file" group.
    write_trace(d / "rank-3.json", rank_events(1.7e15 + 7, 4, 0.8, "d"), rank=3)
    write_trace(d / "rank-3b.json", rank_events(1.7e15 + 8e6, 2, 0.8, "e"), rank=3)
    write_trace(d / "a" / "x.json", rank_events(1.7e15 + 11, 2, 1.0, "f"))
    write_trace(d / "b" / "x.json", rank_events(1.7e15 + 4e6, 2, 1.0, "g"))
    write_trace(d / "y.json", rank_events(1.7e15 + 13, 2, 3.0, "h"))
    sets["regroup"] = sorted(p for p in d.rglob("*") if p.is_file())
    return sets


def fixture_files(name: str) -> list[Path]:
    from reportgen.trace_analysis import find_traces
    from tests.support.paths import RAW, need

    return list(find_traces(need(RAW / name)))


def normalised(doc: dict, problems: ProblemLog, root: Path) -> dict:
    """The kineto.json text and the problems, with the folder the files lie in replaced by ``<root>``."""
    listed = problems.to_json()
    for item in listed["problems"]:
        item["file"] = item["file"].replace(str(root), "<root>")
    return {"kineto_json": json.dumps(doc), "problems": listed}
