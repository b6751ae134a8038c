#!/usr/bin/env python
"""(Re)create ``sample_data/`` — a small synthetic SageMaker Debugger raw profile.

Usage (from the repository root)::

    PYTHONPATH=. python scripts/make_sample_data.py [--out sample_data]

The output is deterministic: running it twice gives byte-identical files.  See
``sample_data/README.md`` for the planted scenario and the rules expected to fire.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from testdata.synthetic import DEFAULT_START_EPOCH, Scenario, generate  # noqa: E402

#: The planted scenario (also imported by tests/unit/testdata/test_synthetic.py).
SAMPLE_SCENARIO = Scenario(
    init_s=90.0,
    final_s=4.0,
    step_ms=450.0,
    gap_ms=15.0,
    data_wait_ms=620.0,  # one loader worker per process cannot keep up: each step first waits for its batch
    eval_every=500,
    eval_steps=20,
    step_outliers=15,
    step_outlier_factor=10.0,
    gpu_util_busy=(88.0,),
    gpu_offsets=((0, 1, -14.0),),  # algo-1 gpu1 runs at ~74 % while gpu0 runs at ~88 %
    gpu_noise=3.0,
    gpu_idle_fraction=(0.05,),
    gpu_memory_base=30.0,
    gpu_memory_jumps=2,
    gpu_memory_jump_size=62.0,
    gpu_memory_jump_s=20.0,
    gpu_memory_jump_window=(0.72, 0.85),
    gpu_memory_jump_targets=((0, 0),),
    cpu_util=35.0,
    cpu_noise=8.0,
    cpu_bottleneck_fraction=0.58,
    iowait_spike_fraction=0.04,
    dataloader_workers=1,
    pin_memory=False,
    steps_per_epoch=500,
    detailed_start=5,
    detailed_steps=10,
)

SAMPLE_KWARGS = dict(
    nodes=2,
    cores=4,
    gpus=2,
    duration_s=780,
    interval_ms=500,
    start_epoch=DEFAULT_START_EPOCH,
    seed=0,
    scenario=SAMPLE_SCENARIO,
    framework=True,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample_data"))
    args = ap.parse_args(argv)
    out = os.path.abspath(args.out)
    # keep README.md; replace the generated trees
    for sub in ("system", "framework"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    stats = generate(out, **SAMPLE_KWARGS)
    print(f"wrote {out}: {stats.system_files} system files ({stats.system_bytes / 1e6:.2f} MB, "
          f"{stats.system_records} records), {stats.trace_files} trace files "
          f"({stats.trace_bytes / 1e6:.2f} MB, {stats.trace_events} events) in {stats.seconds:.2f} s")
    for node, p in stats.planted["nodes"].items():
        print(f"  {node}: bottleneck ticks {p['cpu_bottleneck_ticks']}/{stats.ticks_per_node}, "
              f"iowait spikes {p['iowait_spike_ticks']}, memory jumps {p['gpu_memory_jump_ticks']}, "
              f"train steps {p['train_steps']}, eval steps {p['eval_steps']}, "
              f"outlier steps {p['step_outliers']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
