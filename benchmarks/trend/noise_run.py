"""Short CPU training runs (a small MLP on random data, 1 thread), one after another: prints each run's median
step time in seconds, one a line. ``bench_trend_changepoints.py --record`` starts this in several processes, one
after another, to measure the run-to-run noise of a CI-like shared machine (process start, neighbours' load,
frequency changes between runs). Needs torch. Usage: noise_run.py SEED RUNS"""

import statistics
import sys
import time

import torch

torch.set_num_threads(1)
seed, runs = int(sys.argv[1]), int(sys.argv[2])
for run in range(runs):
    torch.manual_seed(seed * 1000 + run)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 512), torch.randint(0, 10, (256,))
    times = []
    for step in range(30):
        start = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    print(statistics.median(times[5:]), flush=True)  # the first 5 steps warm up
    time.sleep(1.0)  # runs apart in time, as CI runs are
