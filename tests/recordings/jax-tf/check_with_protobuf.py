"""Hold reportgen's XSpace reader against the official protobuf parser (run by hand, in an environment with
tensorflow-cpu, whose wheel ships ``xplane_pb2``; reportgen's tests need neither):

    /tmp/tfvenv/bin/python check_with_protobuf.py /path/to/reportgen-checkout

Every host-plane event of each recording here is decoded by ``xplane_pb2`` and by
``reportgen.readers.xspace_trace.read_xspace`` in a subprocess of the checkout's own interpreter; the rows
(start µs, duration µs, name, steps renamed ``ProfilerStep#<n>``) must be identical.
"""

import gzip
import json
import subprocess
import sys
from pathlib import Path

from tensorflow.tsl.profiler.protobuf import xplane_pb2

HERE = Path(__file__).resolve().parent
MINE = r"""
import json, sys
from reportgen.readers.xspace_trace import read_xspace
t = read_xspace(sys.argv[1])
print(json.dumps(sorted((round(float(s), 6), round(float(d), 6), t.names[n]) for s, d, n in zip(t.start_us, t.dur_us, t.name))))
"""


def oracle(path: Path) -> list:
    space = xplane_pb2.XSpace()
    space.ParseFromString(gzip.decompress(path.read_bytes()))
    start = 0
    for plane in space.planes:
        if plane.name == "Task Environment":
            for s in plane.stats:
                if plane.stat_metadata[s.metadata_id].name == "profile_start_time":
                    start = s.uint64_value or s.int64_value
    rows = []
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        step = {k for k, m in plane.stat_metadata.items() if m.name == "step_num"}
        for line in plane.lines:
            for e in line.events:
                name = plane.event_metadata[e.metadata_id].name
                for s in e.stats:
                    if s.metadata_id in step:
                        name = f"ProfilerStep#{s.int64_value or s.uint64_value}"
                rows.append([round((start + line.timestamp_ns) / 1000 + e.offset_ps / 1e6, 6),
                             round(e.duration_ps / 1e6, 6), name])
    return sorted(rows)


def main() -> int:
    checkout = Path(sys.argv[1]).resolve()
    python = checkout / ".venv" / "bin" / "python"
    bad = 0
    for path in sorted(HERE.glob("*/logdir/plugins/profile/*/*.xplane.pb.gz")):
        want = oracle(path)
        got = json.loads(subprocess.run([str(python), "-c", MINE, str(path)], capture_output=True, text=True,
                                        check=True, cwd=checkout).stdout)
        same = sum(1 for a, b in zip(got, want) if a[2] == b[2] and abs(a[0] - b[0]) < 1e-3 and a[1] == b[1])
        print(f"{path.relative_to(HERE).parts[0]}: {len(got)} rows read, {len(want)} by xplane_pb2, {same} identical")
        bad += same != len(want) or len(got) != len(want)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
