"""Real CPU PyTorch runs recorded with profile_memory=True and with_flops=True, one planted memory behaviour each.

  leak:     every step keeps one extra tensor of --leak-bytes (torch.full) in a list: allocated memory grows
            by exactly that much per step
  plateau:  the same training without keeping anything: allocated memory returns to the same level every step

truth.json holds what the script knows: the bytes kept per step, the model's parameter bytes, the analytic FLOPs
of one step's matrix multiplications (forward 2·B·in·out per Linear, backward twice that), the step numbers.
"""
import argparse
import json
import torch
import torch.nn as nn
from torch.profiler import profile, schedule, ProfilerActivity

WIDTHS = (512, 1024, 1024, 10)
BATCH = 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["leak", "plateau"])
    ap.add_argument("--leak-bytes", type=int, default=4 * 2**20)
    ap.add_argument("--active", type=int, default=8)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    layers = []
    for i, (w_in, w_out) in enumerate(zip(WIDTHS, WIDTHS[1:])):
        layers += [nn.Linear(w_in, w_out)] + ([nn.ReLU()] if i < len(WIDTHS) - 2 else [])
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(BATCH, WIDTHS[0]), torch.randint(0, 10, (BATCH,))
    kept, steps = [], []
    trace = f"{a.out}/worker0.1.pt.trace.json"
    sched = schedule(wait=1, warmup=1, active=a.active, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, profile_memory=True, with_flops=True,
                 record_shapes=True, on_trace_ready=lambda p: p.export_chrome_trace(trace)) as prof:
        for step in range(2 + a.active):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if a.mode == "leak":
                kept.append(torch.full((a.leak_bytes // 4,), float(step)))
            steps.append(step)
            prof.step()
    gemm = sum(2 * BATCH * i * o for i, o in zip(WIDTHS, WIDTHS[1:]))
    json.dump({"mode": a.mode, "leak_bytes_per_step": a.leak_bytes if a.mode == "leak" else 0,
               "active_steps": a.active, "batch": BATCH, "widths": WIDTHS,
               "param_bytes": sum(p.numel() * 4 for p in model.parameters()),
               # backward: a weight gradient per layer, an input gradient for every layer but the first (x needs none)
               "forward_matmul_flops": gemm, "train_step_matmul_flops": 3 * gemm - 2 * BATCH * WIDTHS[0] * WIDTHS[1],
               "torch": torch.__version__}, open(f"{a.out}/truth.json", "w"), indent=1)


if __name__ == "__main__":
    main()
