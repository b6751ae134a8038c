"""Raw profiler data whose every free-text field is hostile: operator, phase, step, node, metric,
kernel and job names carry HTML/JS payloads, a ``javascript:`` URL, a table breaker and a 10,000-character
name. Each payload that could run sets ``window.PWNED``, so a test can see whether anything executed.
"""

from __future__ import annotations

import json
from pathlib import Path

T = 1_700_000_040

PAYLOADS = [
    "<script>window.PWNED=1</script>",
    "<img src=x onerror=\"window.PWNED=2\">",
    "\"></table></div><script>window.PWNED=3</script>",
    "javascript:window.PWNED=4",
    "</script><script>window.PWNED=5</script><!--",
    "<a href=\"javascript:window.PWNED=6\">click</a>",
    "<svg onload=window.PWNED=7>",
    "{{7*7}} ${7*7} `id` | pipe | **bold** [x](javascript:window.PWNED=8)",
    "<b>bold</b><br><i>plotly markup</i>",
    "&lt;script&gt;window.PWNED=9&lt;/script&gt;",
]
LONG = "L" * 10_000
# A job name with the lot (what --job-name and the folder name carry).
JOB = "job<script>window.PWNED=10</script>\"'&<img src=x onerror=window.PWNED=11>"
# What a file name can hold on Linux (no '/', and no '_' in a framework node id).
FILE_NODE = "<svg onload=window.PWNED=12>"


def _rec(typ, name, dim, value, ts, node) -> str:
    return json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": value, "NodeId": node, "Timestamp": ts})


def system_lines(node: str, n: int, gpu_name="gpu0", cpu_name="cpu0") -> list[str]:
    out = []
    for k in range(n):
        ts = T + 0.5 * k
        out += [
            _rec("cpu", cpu_name, "CPUUtilization", 20.0 + k % 50, ts + 0.001, node),
            _rec("cpu", "cpu1", "CPUUtilization", 30.0, ts + 0.001, node),
            _rec("gpu", gpu_name, "GPUUtilization", 60.0 + k % 30, ts + 0.002, node),
            _rec("gpu", gpu_name, "GPUMemoryUtilization", 40.0, ts + 0.002, node),
            _rec("memory", "MemoryUsedPercent", "", 12.5, ts + 0.003, node),
            _rec("network", "ReceiveBytesPerSecond", "Algorithm", 700.0, ts + 0.003, node),
        ]
    return out


def build(root: Path) -> Path:
    """The hostile job folder (its own name hostile too); returns it."""
    folder = root / JOB.replace("/", "-")
    sysdir = folder / "system" / "incremental" / "2023111422"
    sysdir.mkdir(parents=True)
    (sysdir / f"{T}.algo-1.json").write_text("\n".join(system_lines("algo-1", 240)) + "\n")
    (sysdir / f"{T}.algo-2.json").write_text("\n".join(system_lines(PAYLOADS[1], 240, gpu_name="gpu0")) + "\n")
    (sysdir / f"{T}.algo-3.json").write_text("\n".join(system_lines(LONG, 240)) + "\n")
    (sysdir / f"{T}.algo-4.json").write_text("\n".join(system_lines(PAYLOADS[2], 120, cpu_name="cpu0")) + "\n")
    (sysdir / f"{T}.algo-5.json").write_text("\n".join(system_lines(PAYLOADS[7], 120)) + "\n")
    fw = folder / "framework" / "pevents" / "2023111422"
    fw.mkdir(parents=True)
    names = PAYLOADS + [LONG]
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": T * 1_000_000}}]
    for pid, phase in enumerate(["Step:ModeKeys.TRAIN", PAYLOADS[0], PAYLOADS[3], LONG], start=1):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": phase}})
    for k in range(120):
        events.append({"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 1_000 + 500_000 * k, "dur": 400_000,
                       "args": {"step_num": str(k)}})
        events.append({"name": names[k % len(names)], "pid": 2 + k % 3, "ph": "X", "ts": 2_000 + 500_000 * k,
                       "dur": 10_000 + k, "args": {"step_num": PAYLOADS[k % len(PAYLOADS)]}})
    text = "[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n"
    (fw / f"{T * 1_000_000 + 60_000_000}_27-algo-1_pythontimeline.json").write_text(text)
    (fw / f"{T * 1_000_000 + 60_000_001}_27-{FILE_NODE}_pythontimeline.json").write_text(text)
    traces = folder / "traces"
    traces.mkdir()
    base = T * 1_000_000
    kev = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1,
            "ts": base + 10_000 * k, "dur": 9_000} for k in range(4)]
    for k, name in enumerate(names):
        kev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": base + 100 + 1000 * k, "dur": 200})
        kev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": base + 500 + 1000 * k,
                    "dur": 300 + k, "args": {"device": 0}})
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1},
           "deviceProperties": [{"name": PAYLOADS[6]}], "traceEvents": kev}
    (traces / "rank-0.pt.trace.json").write_text(json.dumps(doc))
    return folder
