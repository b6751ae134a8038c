"""The causes a GPU trace reveals: host syncs, launch-bound kernels, exposed communication, fp32 matrix
math on tensor-core GPUs, pageable copies.

Each detector reads the numbers ``reportgen.trace_analysis.gpu_analyses`` put in each rank's ``gpu_analysis``
(kineto.json) and registers ahead of gpu-underused, which is then concluded only when none of them explains
the idle GPU. Impact is the time a fix gives back: per step (the slowest rank's, the one the job waits for
in synchronous training) and as a share of step time, the job's share being the mean over the ranks with
GPU activity. Thresholds are documented in docs/diagnosis.md ("GPU causes").
"""

from __future__ import annotations

import math

from reportgen.diagnosis.causes import MINOR, Finding, detector, make, pct
from reportgen.diagnosis.evidence import Evidence
from reportgen.section_ids import SectionId

SYNC_MIN = 0.02  # idle after syncs beyond one per step, share of step time, for a finding at all
LAUNCH_SHORT = 0.30  # share of kernels shorter than their launch call
LAUNCH_IDLE = 0.10  # launch-related idle (host wait + kernel wait) share of the GPU's active window
LAUNCH_OF_IDLE = 0.50  # ... and at least this much of the window's idle time
COMM_EXPOSED = 0.10  # exposed communication, share of step time
FP32_ELIGIBLE = 0.30  # fp32 GEMM/conv share of compute kernel time
FP32_BUSY = 0.30  # compute kernels at least this share of step time: the GPU's own speed matters
AMP_SPEEDUP = 2.0  # assumed: tensor cores run an fp32 GEMM/conv at least twice as fast (TF32/bf16 give 2-8x)
PAGEABLE_BYTES = 1e6  # per step: smaller pageable copies (scalars, small tensors) are normal
PAGEABLE_MIN = 0.02  # cost share of step time for a finding at all
GRAPHED = 0.5  # share of GPU operations a CUDA-graph replay launched: the step is already captured


def _d(value) -> dict:
    return value if isinstance(value, dict) else {}


def _l(value) -> list:
    return value if isinstance(value, list) else []


def _steps(ga: dict) -> int:
    n = ga.get("steps")
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 10**9 else 0


def _ranks(ev: Evidence) -> list[tuple[str, dict, float]]:
    """(label, gpu_analysis, step time ms) of each rank with GPU activity and profiled steps (odd values in a
    kineto.json written by something else cost that rank, never the diagnosis)."""
    out = []
    for label, rank in ev.trace_ranks.items():
        ga = rank.entry.get("gpu_analysis")
        total = sum(s.dur_ms for s in rank.step_list if s.dur_ms is not None and 0 <= s.dur_ms < 1e12)
        if isinstance(ga, dict) and total > 0 and _steps(ga):
            out.append((label, ga, total))
    return out


def _num(d: dict, *path, default=None):
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        return default
    return d if (abs(d) < 1e18 if isinstance(d, int) else math.isfinite(d)) else default


def _judge(ev: Evidence, cause: str, costs: dict[str, tuple[float, float, int]], minimum: float, evidence, fix,
           metrics: dict, sections=(SectionId.GPU_KERNELS_OPERATORS,), least: bool = False) -> Finding | None:
    """``costs``: label -> (ms a fix gives back, step time ms, steps). The finding's share is the mean over
    the ranks with GPU activity (ranks without the cause count 0), per-step figures the worst rank's; with
    ``least``, both are the rank with the smallest share's (what every rank has in common)."""
    if not costs:
        return None
    shares = {label: ms / total for label, (ms, total, _) in costs.items() if total > 0}
    n = max(len(_ranks(ev)), 1)
    if least and len(shares) < n:
        return None  # some rank does not have it at all
    share = min(shares.values()) if least else sum(shares.values()) / n
    if share < minimum:
        return None
    worst = (min if least else max)(shares, key=shares.get)
    ms, total, steps = costs[worst]
    per_step = ms / steps if steps else None
    metrics = {**metrics, "share_of_step_time": share, "worst_rank": worst,
               "per_step_ms": per_step, "ranks_affected": sum(1 for s in shares.values() if s >= minimum)}
    text = [e for e in evidence(worst) if e]
    text.append(f"a fix gives back about {per_step:.1f} ms per step on rank {worst} ({pct(shares[worst], 1)} of its "
                f"step time)" + (f"; {pct(share, 1)} over the {n} ranks" if n > 1 and not least else "")
                if per_step is not None else "")
    return make(ev, cause, share, text, fix(worst, per_step), sections=list(sections), metrics=metrics)


@detector("host-sync")
def host_sync(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        sync = _d(ga.get("sync"))
        per_step = _num(sync, "per_step")
        beyond = _num(sync, "idle_after_beyond_one_per_step_ms", default=0.0)
        if per_step is None or per_step <= 1.0 or beyond <= 0:
            continue
        costs[label] = (beyond, total, _steps(ga))
        info[label] = sync

    def evidence(worst):
        sync = info[worst]
        ops = {k: v for k, v in _d(sync.get("by_operator")).items() if isinstance(v, int) and not isinstance(v, bool)}
        steps = max(int(_ranks_steps(ev, worst)), 1)
        calls = ", ".join(f"{name} ×{count}" for name, count in list(_d(sync.get("by_call")).items())[:3])
        where = "; ".join(f"{name}: {count / steps:.0f} per step" if count >= steps else f"{name}: {count} in the trace"
                          for name, count in list(ops.items())[:3])
        return [f"rank {worst}: {_num(sync, 'per_step', default=0):.0f} host synchronisations per step ({calls})",
                f"they run in {where}" if where else "",
                f"GPU idle {_num(sync, 'idle_after_ms', default=0.0):.1f} ms after them "
                f"({_num(sync, 'idle_after_beyond_one_per_step_ms', default=0.0):.1f} ms beyond one per step; "
                "one loss.item() per step is normal and not counted)",
                f"host blocked {_num(sync, 'blocked_ms', default=0.0):.1f} ms in them"]

    def fix(worst, per_step):
        sync = info[worst]
        n = _num(sync, "per_step", default=0)
        return (f"Keep values on the GPU instead of reading them every time: {n:.0f} synchronisations a step drain the "
                "GPU's queue each time. Accumulate losses and metrics as tensors and call .item() once per step (or "
                "every N steps), log asynchronously, replace data-dependent shapes (torch.nonzero, boolean masks, "
                "torch.unique) with torch.where or fixed-size ops, and drop explicit torch.cuda.synchronize() calls; "
                f"about {per_step:.1f} ms per step comes back.")
    return _judge(ev, "host-sync", costs, SYNC_MIN, evidence, fix,
                  {"syncs_per_step": {label: info[label].get("per_step") for label in info}})


def _ranks_steps(ev: Evidence, label: str) -> int:
    rank = ev.trace_ranks.get(label)
    return _steps(_d(rank.entry.get("gpu_analysis") if rank else None))


@detector("kernel-launch-bound")
def kernel_launch_bound(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        launch, gaps = _d(ga.get("launch")), _d(ga.get("idle_gaps_ms"))
        gpu = _d(ev.trace_ranks[label].entry.get("gpu"))
        window, idle = _num(gpu, "window_ms"), _num(gpu, "window_idle_ms")
        short = _num(launch, "shorter_than_launch_share")
        launch_idle = _num(gaps, "host_wait", default=0.0) + _num(gaps, "kernel_wait", default=0.0)
        if not window or not idle or short is None or window <= 0 or idle <= 0:
            continue
        if short < LAUNCH_SHORT or launch_idle / window < LAUNCH_IDLE or launch_idle / idle < LAUNCH_OF_IDLE:
            continue
        costs[label] = (launch_idle * min(total / window, 1.0) if window else launch_idle, total,
                        _steps(ga))
        info[label] = (launch, gaps, window, idle, launch_idle)

    def evidence(worst):
        launch, gaps, window, idle, launch_idle = info[worst]
        return [f"rank {worst}: {_num(launch, 'kernels_per_step', default=0):.0f} kernels per step, median "
                f"{_num(launch, 'kernel_p50_us', default=0):.1f} µs on the GPU vs {_num(launch, 'launch_p50_us', default=0):.1f} µs "
                "for the launch call",
                f"{pct(_num(launch, 'shorter_than_launch_share'))} of the kernels are shorter than the call that "
                "launched them",
                f"GPU idle {pct(idle / window)} of its active window, {pct(launch_idle / idle)} of it waiting on "
                f"launches (host wait {_num(gaps, 'host_wait', default=0):.1f} ms, kernel wait "
                f"{_num(gaps, 'kernel_wait', default=0):.1f} ms)"]

    def fix(worst, per_step):
        if (_num(info[worst][0], "graph_launched_share") or 0) >= GRAPHED:  # already replayed from CUDA graphs
            return ("Launch fewer, larger kernels: most of the step already replays from CUDA graphs, so what is left "
                    "are the kernels launched outside them and the graph's own small kernels: fuse elementwise ops "
                    "with torch.compile, use fused/foreach optimizers and larger batches so each kernel runs longer "
                    f"than its launch; the launch gaps are about {per_step:.1f} ms per step.")
        return ("Launch fewer, larger kernels: capture the step in CUDA graphs (torch.compile(mode='reduce-overhead') "
                "or torch.cuda.graphs), fuse elementwise ops with torch.compile, use fused/foreach optimizers "
                "(fused=True / foreach=True), and batch small ops into larger ones (a larger batch makes each kernel "
                f"longer than its launch); the launch gaps are about {per_step:.1f} ms per step.")
    return _judge(ev, "kernel-launch-bound", costs, MINOR / 2, evidence, fix, {})


@detector("communication-bound")
def communication_bound(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        overlap = _d(ga.get("overlap"))
        exposed = _num(overlap, "exposed_in_steps_ms")
        if not exposed:
            continue
        costs[label] = (exposed, total, _steps(ga))
        info[label] = overlap
    first = next(iter(ev.trace_ranks.values()), None)
    rank = first.entry if first else {}
    names = ", ".join(str(n)[:60] for n in _l(_d(rank.get("collectives")).get("names"))[:2])

    def evidence(worst):
        o = info[worst]
        steps = max(_ranks_steps(ev, worst), 1)
        waits = ("; it is the rank that waits least in them: the transfer itself, not a wait for a slower rank"
                 if len(info) > 1 else "")
        return [f"rank {worst}: communication overlaps computation {(_num(o, 'comm_comp_overlap_pct') or 0):.0f} % "
                f"of its time (comm_comp_overlap_pct, HTA's definition)",
                f"{_num(o, 'communication_ms', default=0) / steps:.1f} ms of collectives per step ({names}), "
                f"{_num(o, 'exposed_per_step_ms', default=0):.1f} ms of it with no compute beside it "
                f"({pct(_num(o, 'exposed_step_share'))} of step time){waits}",
                f"measured bus bandwidth {_num(o, 'busbw_gb_s'):.1f} GB/s (algorithm bandwidth "
                f"{_num(o, 'algbw_gb_s', default=0):.1f} GB/s, {_num(o, 'message_bytes', default=0) / steps / 1e6:.0f} MB "
                "a step)" if _num(o, "busbw_gb_s") is not None else
                "bus bandwidth not measured: the collectives' kernels do not say their message size (torch < 2.1)"]

    def fix(worst, per_step):
        return ("Overlap the gradient all-reduce with backward: keep DDP's bucketing on (do not call all_reduce after "
                "backward yourself; tune bucket_cap_mb so the first buckets start early, gradient_as_bucket_view=True), "
                "reduce what is sent (bf16/fp16 gradient compression hooks, gradient accumulation with no_sync() "
                f"between optimizer steps) or use a faster interconnect; {per_step:.1f} ms per step is exposed.")
    # A rank that waits for a straggler inside its collectives shows that wait as exposed communication too: the
    # rank that waits least has only the transfer itself, which every rank pays; that is what is judged.
    return _judge(ev, "communication-bound", costs, COMM_EXPOSED, evidence, fix,
                  {"comm_comp_overlap_pct": {label: info[label].get("comm_comp_overlap_pct") for label in info}},
                  least=True)


@detector("no-mixed-precision")
def no_mixed_precision(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        tc = _d(ga.get("tensor_cores"))
        eligible, fp32 = _num(tc, "eligible_share"), _num(tc, "fp32_gemm_conv_ms", default=0.0)
        compute = _num(tc, "compute_kernel_ms", default=0.0)
        if tc.get("has_tensor_cores") is not True or eligible is None or eligible < FP32_ELIGIBLE:
            continue
        if compute / total < FP32_BUSY:
            continue  # the GPU is mostly waiting: faster kernels would not shorten the step much
        costs[label] = (fp32 * (1 - 1 / AMP_SPEEDUP), total, _steps(ga))
        info[label] = tc
    devices = {label: [str(d) for d in _l(ev.trace_ranks[label].entry.get("devices"))] for label in info}

    def evidence(worst):
        tc = info[worst]
        steps = max(_ranks_steps(ev, worst), 1)
        device = (devices.get(worst) or ["?"])[0]
        return [f"rank {worst}: {pct(_num(tc, 'eligible_share'))} of compute kernel time in fp32 GEMM/convolution "
                f"kernels ({_num(tc, 'fp32_gemm_conv_ms', default=0) / steps:.1f} ms per step), "
                f"{_num(tc, 'tensor_core_gemm_conv_ms', default=0) / steps:.1f} ms in tensor-core precisions",
                f"{device} (compute capability {_num(tc, 'compute_capability', default=0):.1f}) has tensor cores",
                f"assuming tensor cores run them at least {AMP_SPEEDUP:.0f}× faster"]

    def fix(worst, per_step):
        cc = _num(info[worst], "compute_capability", default=0)
        if cc >= 8.0:
            how = ("train with torch.autocast('cuda', dtype=torch.bfloat16), or at least allow TF32 "
                   "(torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True)")
        else:
            how = "train with torch.autocast('cuda', dtype=torch.float16) and torch.cuda.amp.GradScaler"
        return (f"Use the tensor cores: {how}; {pct(_num(info[worst], 'eligible_share'))} of the kernel time is eligible, "
                f"about {per_step:.1f} ms per step or more comes back.")
    return _judge(ev, "no-mixed-precision", costs, MINOR / 2, evidence, fix,
                  {"eligible_share": {label: info[label].get("eligible_share") for label in info},
                   "assumed_speedup": AMP_SPEEDUP})


@detector("pageable-memcpy")
def pageable_memcpy(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        copy = _d(_d(ga.get("memcpy")).get("pageable_htod"))
        per_step = _num(copy, "bytes_per_step")
        if not copy or per_step is None or per_step < PAGEABLE_BYTES:
            continue
        gaps = _d(ga.get("idle_gaps_ms"))
        cost = _num(copy, "exposed_ms", default=0.0) + _num(gaps, "after_pageable_copy", default=0.0)
        costs[label] = (cost, total, _steps(ga))
        info[label] = copy

    def evidence(worst):
        copy = info[worst]
        steps = max(_ranks_steps(ev, worst), 1)
        return [f"rank {worst}: {_num(copy, 'bytes_per_step', default=0) / 1e6:.0f} MB per step copied host to device "
                f"from pageable memory ({_num(copy, 'count', default=0) / steps:.0f} copies per step, "
                f"{_num(copy, 'time_ms', default=0) / steps:.1f} ms per step at "
                f"{_num(copy, 'gb_per_s', default=0):.1f} GB/s)",
                f"{_num(copy, 'exposed_ms', default=0) / steps:.1f} ms per step of it with no kernel running beside it: "
                "a pageable copy is staged by the host and blocks it"]

    def fix(worst, per_step):
        return ("Copy from pinned memory without blocking: DataLoader(pin_memory=True) and "
                "batch.to(device, non_blocking=True) (or tensor.pin_memory() for your own buffers), so the copy runs "
                "on a copy engine beside compute at the link's full bandwidth (pinned copies reach 2-3× the "
                f"{_num(info[worst], 'gb_per_s', default=0):.1f} GB/s measured here); about {per_step:.1f} ms per "
                "step comes back.")
    return _judge(ev, "pageable-memcpy", costs, PAGEABLE_MIN, evidence, fix,
                  {"bytes_per_step": {label: info[label].get("bytes_per_step") for label in info}})

