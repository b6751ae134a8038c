"""Real CPU PyTorch runs with one planted cause each, timed by the script itself (the truth).

  leak:     losses kept with their autograd graph (host memory grows every step), no profiler
  periodic: every 20th step also saves a checkpoint and runs a small evaluation; every step profiled
  plain:    the input-bound job (num_workers 0) with no profiler at all
  short:    8 steps, profiled
"""
import argparse
import json
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.profiler import profile, schedule, tensorboard_trace_handler, ProfilerActivity


class Images(Dataset):
    def __init__(self, n, reps): self.n, self.reps = n, reps
    def __len__(self): return self.n
    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((3, 64, 64), dtype=np.float32)
        for _ in range(self.reps):
            img = (img + np.roll(img, 1, 1) + np.roll(img, 1, 2)) / 3.0
        return torch.from_numpy(np.ascontiguousarray(img)), int(rng.integers(0, 10))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 16 * 16, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["leak", "periodic", "plain", "short"])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--trace-dir", default="traces")
    ap.add_argument("--out", default="truth.json")
    a = ap.parse_args()
    steps = 8 if a.mode == "short" else a.steps
    torch.manual_seed(0)
    model, loss_fn = Net(), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Images(steps * 32 + 64, a.reps), batch_size=32, num_workers=0)
    kept, times = [], []
    prof = None
    if a.mode in ("periodic", "short"):
        prof = profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
                       on_trace_ready=tensorboard_trace_handler(a.trace_dir))
        prof.start()
    t_loop = time.perf_counter()
    it = iter(loader)
    for step in range(steps):
        t0 = time.perf_counter()
        x, y = next(it)
        out = model(x)
        loss = loss_fn(out, y)
        opt.zero_grad(); loss.backward(retain_graph=a.mode == "leak"); opt.step()
        if a.mode == "leak":
            kept.append((loss, out))  # the planted leak: the graph and the activations stay alive
        if a.mode == "periodic" and step % 20 == 19:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, "/tmp/trust/ckpt.pt")
            with torch.no_grad():
                for _ in range(6):
                    model(torch.randn(256, 3, 64, 64))
        if prof is not None:
            prof.step()
        times.append(time.perf_counter() - t0)
    loop = time.perf_counter() - t_loop
    if prof is not None:
        prof.stop()
    med = float(np.median(times))
    slow = [i for i in range(len(times)) if i % 20 == 19] if a.mode == "periodic" else []
    json.dump({"mode": a.mode, "loop_s": loop, "steps": steps, "median_step_s": med,
               "slow_steps_lost_s": sum(times[i] - med for i in slow), "slow_steps": len(slow),
               "step_s": times}, open(a.out, "w"))
    print(a.mode, "loop", round(loop, 2), "median", round(med, 4), "lost", round(sum(times[i] - med for i in slow), 2))


if __name__ == "__main__":
    main()
