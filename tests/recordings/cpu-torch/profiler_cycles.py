"""A real CPU PyTorch run profiled in several cycles, to measure the profiler's own cost per step (issue 46, item 5).

    python profiler_cycles.py --steps 800 --trace-dir <traces> --out truth.json

A small, deep MLP (24 layers of 128, batch 8, in-memory data, one thread): a few hundred operator calls a step,
each cheap, so the profiler's per-call cost shows. ``torch.profiler`` records with ``record_shapes``, ``profile_memory``
and ``with_stack`` (what people switch on to look closer) under ``schedule(wait=20, warmup=1, active=2, repeat=3)``:
three cycles of 2 recorded steps, 20 steps with the profiler off and 1 warm-up step (profiler on, nothing kept)
before each (2 recorded steps a cycle keep the three traces near 75 KB each, gzip'd). The script times every step itself and writes truth.json: ``step_s`` (the whole iteration,
``prof.step()`` included), ``prof_step_s`` (each ``prof.step()`` call), ``recorded_steps``, ``warmup_steps``,
``off_steps`` (the profiler off), the export of each cycle (``exports``: epoch seconds around torch's trace handler),
and ``overhead_s``: the recorded steps' median less the median of the steps with the profiler off — what the
profiler adds to each step it records.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE, REPEAT = 20, 1, 2, 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--trace-dir", default="traces")
    ap.add_argument("--out", default="truth.json")
    a = ap.parse_args()
    t_script = time.time()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(24):
        layers += [nn.Linear(128, 128), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    xs, ys = torch.randn(a.steps, 8, 128), torch.randint(0, 10, (a.steps, 8))
    exports = []
    write = tensorboard_trace_handler(a.trace_dir, use_gzip=True)

    def handler(p):
        t0 = time.time()
        write(p)
        exports.append([t0, time.time()])

    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True, with_stack=True,
                   schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=REPEAT), on_trace_ready=handler)
    prof.start()
    step_s, prof_step_s = [], []
    t_loop = time.time()
    for i in range(a.steps):
        t0 = time.perf_counter()
        loss = loss_fn(model(xs[i]), ys[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        prof.step()
        t2 = time.perf_counter()
        step_s.append(t2 - t0)
        prof_step_s.append(t2 - t1)
    t_loop_end = time.time()
    prof.stop()
    cycle = WAIT + WARMUP + ACTIVE
    phase = [i % cycle if i < cycle * REPEAT else None for i in range(a.steps)]
    recorded = [i for i, p in enumerate(phase) if p is not None and p >= WAIT + WARMUP]
    warmup = [i for i, p in enumerate(phase) if p is not None and WAIT <= p < WAIT + WARMUP]
    off = [i for i, p in enumerate(phase) if p is None or p < WAIT]
    # the recorded window's last step holds the export in its prof.step(): its work alone is compared
    work = [s - p for s, p in zip(step_s, prof_step_s)]
    med = lambda idx: statistics.median(work[i] for i in idx)
    truth = {"steps": a.steps, "schedule": {"wait": WAIT, "warmup": WARMUP, "active": ACTIVE, "repeat": REPEAT},
             "step_s": step_s, "prof_step_s": prof_step_s, "work_s": work,
             "recorded_steps": recorded, "warmup_steps": warmup, "off_steps": off,
             "median_recorded_s": med(recorded), "median_warmup_s": med(warmup), "median_off_s": med(off),
             "median_off_between_cycles_s": med([i for i in off if i < cycle * REPEAT]),
             "overhead_s": med(recorded) - med(off),
             "exports": exports, "profiler_export_s": sum(e - s for s, e in exports),
             "loop_s": t_loop_end - t_loop, "t_script_start": t_script, "t_loop_start": t_loop,
             "t_loop_end": t_loop_end, "t_end": time.time(), "torch": torch.__version__}
    with open(a.out, "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
