"""One node's system metrics with many GPU series (issue #30): the input of tests/unit/engine/test_bounded_rules.py.

(It was ``benchmarks/bench_gpu_series.py``'s, retired in issue 47: benchmarks/HISTORY.md, "Scripts retired
from the tree".)
"""

from __future__ import annotations

import json
from pathlib import Path

T = 1_700_000_040


def make_node(folder: Path, gpus: int, instants: int = 6) -> Path:
    """``instants`` samples, 0.5 s apart, of 2 CPU cores and ``gpus`` GPUs (utilisation and memory) on algo-1."""
    lines = []
    for k in range(instants):
        ts = T + 0.5 * k
        lines += [json.dumps({"Type": "cpu", "Name": f"cpu{c}", "Dimension": "CPUUtilization", "Value": 5.0,
                              "Timestamp": ts, "NodeId": "algo-1"}) for c in range(2)]
        for g in range(gpus):
            for dim, value in (("GPUUtilization", 3.0 + g % 50), ("GPUMemoryUtilization", 2.0)):
                lines.append(json.dumps({"Type": "gpu", "Name": f"gpu{g}", "Dimension": dim, "Value": value,
                                         "Timestamp": ts + 0.001, "NodeId": "algo-1"}))
    path = folder / "system" / "incremental" / "2023111400" / f"{T}.algo-1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
