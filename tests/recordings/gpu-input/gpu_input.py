"""GPU input-pipeline before/after: the same job with num_workers 0 and 4; each profiles 10 steps and times
its whole loop (the truth for what the fix saved)."""
import json
import os
import sys
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.profiler import profile, schedule, tensorboard_trace_handler, ProfilerActivity


class Images(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((3, 96, 96), dtype=np.float32)
        for _ in range(6):  # CPU augmentation, ~ms per sample
            img = (img + np.roll(img, 1, 1) + np.roll(img, 1, 2)) / 3.0
        return torch.from_numpy(np.ascontiguousarray(img)), int(rng.integers(0, 10))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                               nn.MaxPool2d(2), nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.fc = nn.Linear(128 * 16, 10)
    def forward(self, x): return self.fc(self.c(x).flatten(1))


def run(workers, steps, out):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Images(), batch_size=64, num_workers=workers, pin_memory=workers > 0,
                        persistent_workers=workers > 0)
    it = iter(loader)
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(wait=5, warmup=2, active=10, repeat=1),
                   on_trace_ready=tensorboard_trace_handler(out, use_gzip=True))
    prof.start()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    times = []
    for step in range(steps):
        s = time.perf_counter()
        x, y = next(it)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        torch.cuda.synchronize()
        prof.step()
        times.append(time.perf_counter() - s)
    loop = time.perf_counter() - t0
    prof.stop()
    return {"workers": workers, "loop_s": loop, "median_step_s": float(np.median(times)), "steps": steps}


if __name__ == "__main__":
    out = sys.argv[1]
    truth = [run(0, 120, os.path.join(out, "w0")), run(4, 120, os.path.join(out, "w4"))]
    json.dump(truth, open(os.path.join(out, "truth.json"), "w"), indent=1)
    print(json.dumps(truth))
