"""record --trace-dir copies every trace format the readers take, JAX's and TensorFlow's XSpace included."""

from __future__ import annotations

import os
import time

from reportgen.recorder.run import copy_traces


def test_xspace_profiles_are_copied_beside_torch_traces_and_keep_their_write_time(tmp_path):
    traces = tmp_path / "traces"
    run = traces / "plugins" / "profile" / "2026_12_07_03_00_00"
    run.mkdir(parents=True)
    run_dir = "plugins/profile/2026_12_07_03_00_00"
    written = {"vm_1.1796613477973794101.pt.trace.json.gz": b"\x1f\x8b", f"{run_dir}/vm.xplane.pb": b"\n\x00",
               f"{run_dir}/vm.xplane.pb.gz": b"\x1f\x8b", "notes.txt": b"not a trace"}
    for name, data in written.items():
        (traces / name).write_bytes(data)
    wrote = round(time.time()) - 10.5
    os.utime(traces / "vm_1.1796613477973794101.pt.trace.json.gz", (wrote, wrote))
    copied, skipped, _ = copy_traces(traces, tmp_path / "out", since=time.time() - 3600)
    assert sorted(copied) == sorted(f"pytorch-traces/{name}" for name in written if name != "notes.txt")
    assert skipped == []
    # copies keep the write time, which record puts in recording.json (the profiler's export ends there)
    assert os.stat(tmp_path / "out" / "pytorch-traces" / "vm_1.1796613477973794101.pt.trace.json.gz").st_mtime == wrote
