"""Record real torch.profiler traces with one planted GPU cause each (issue 28), a few steps each.

python record.py OUT [--scenarios a,b] [--steps N]
Writes OUT/<scenario>/<worker>.<ns>.pt.trace.json.gz (torch's tensorboard_trace_handler) and
OUT/<scenario>/truth.json: what was planted and torch's own key_averages (self CUDA time, counts per name).
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

CUDA = torch.cuda.is_available()
DEV = torch.device("cuda" if CUDA else "cpu")


def mlp(width, depth):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    return torch.nn.Sequential(*layers).to(DEV)


def healthy(step_state):
    """bf16 autocast MLP, pinned non-blocking input, one loss.item() per step."""
    model, opt, host = step_state
    x = host.to(DEV, non_blocking=True)
    with torch.autocast(DEV.type, dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def host_sync(step_state):
    """21 extra .item() per step (one per layer: an activation statistic), a little Python after each."""
    model, opt, host = step_state
    x = host.to(DEV, non_blocking=True)
    stats = []
    with torch.autocast(DEV.type, dtype=torch.bfloat16):
        h = x
        for i, layer in enumerate(model):
            h = layer(h)
            if i % 2 == 1 and len(stats) < 21:
                value = h.abs().max().item()  # host sync
                stats.append(sum(v * 0.5 for v in [value] * 10000))  # Python work on the value
        loss = h.float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def launch_bound(step_state):
    """About 1,500 tiny kernels a step: a chain of elementwise ops on a small tensor, forward and backward."""
    w, opt, host = step_state
    x = host.to(DEV, non_blocking=True)
    h = x
    for _ in range(250):
        h = h * w + 0.001
        h = torch.tanh(h)
    loss = h.pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def fp32(step_state):
    """The healthy MLP without autocast (fp32 GEMMs; TF32 off, torch's default for matmul)."""
    model, opt, host = step_state
    x = host.to(DEV, non_blocking=True)
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def pageable(step_state):
    """77 MB batch from pageable host memory, copied synchronously each step, then a bf16 model on part of it."""
    model, opt, host = step_state
    x = host.to(DEV)  # pageable: staged by the host, blocking
    with torch.autocast(DEV.type, dtype=torch.bfloat16):
        loss = model(x.view(-1, model[0].in_features)[:8192]).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def setup(name, width, depth, batch):
    torch.manual_seed(0)
    if name == "kernel-launch-bound":
        w = torch.full((64, 64), 1.0001, device=DEV, requires_grad=True)
        return w, torch.optim.SGD([w], lr=1e-3), torch.randn(64, 64).pin_memory() if CUDA else torch.randn(64, 64)
    model = mlp(width, depth)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=CUDA)
    if name == "pageable-memcpy":
        host = torch.randn(128, 3, 224, 224)  # 77 MB fp32, pageable
    else:
        host = torch.randn(batch, width)
        if CUDA:
            host = host.pin_memory()
    return model, opt, host


SCENARIOS = {"healthy": healthy, "host-sync": host_sync, "kernel-launch-bound": launch_bound,
             "no-mixed-precision": fp32, "pageable-memcpy": pageable}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--batch", type=int, default=8192)
    a = ap.parse_args()
    info = {"torch": torch.__version__, "cuda": CUDA,
            "device": torch.cuda.get_device_name(0) if CUDA else "cpu"}
    print(json.dumps(info), flush=True)
    for name in a.scenarios.split(","):
        t0 = time.time()
        out = Path(a.out) / name
        out.mkdir(parents=True, exist_ok=True)
        state = setup(name, a.width, a.depth, a.batch)
        fn = SCENARIOS[name]
        for _ in range(2):  # warm up (cuBLAS handles, allocator)
            fn(state)
        if CUDA:
            torch.cuda.synchronize()
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else [])
        with profile(activities=acts, schedule=schedule(wait=1, warmup=1, active=a.steps, repeat=1),
                     on_trace_ready=tensorboard_trace_handler(str(out), worker_name=f"gpu_{name}", use_gzip=True)) as prof:
            for _ in range(a.steps + 2):
                fn(state)
                prof.step()
        rows = []
        for e in prof.key_averages():
            rows.append({"name": e.key, "count": e.count,
                         "self_device_us": getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)),
                         "device_us": getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)),
                         "self_cpu_us": e.self_cpu_time_total, "cpu_us": e.cpu_time_total})
        rows.sort(key=lambda r: -r["self_device_us"])
        (out / "truth.json").write_text(json.dumps({"planted": name, "steps": a.steps, **info,
                                                    "key_averages": rows[:300]}))
        print(name, f"{time.time() - t0:.1f}s", sorted(p.name for p in out.iterdir()), flush=True)
        del state
        if CUDA:
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
