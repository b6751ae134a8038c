"""The causes a GPU trace reveals: host syncs, launch-bound kernels, exposed communication, fp32 matrix
math on tensor-core GPUs, pageable copies, a GPU busy in unfused memory-bound kernels.

Each detector reads the numbers ``reportgen.trace_analysis.gpu_analyses`` put in each rank's ``gpu_analysis``
(kineto.json; memory-bound-kernels the step-time account's kernel mix, ``account.gpu.kernel_mix``) and registers ahead of gpu-underused, which is then concluded only when none of them explains
the idle GPU. Impact is the time a fix gives back: per step (the slowest rank's, the one the job waits for
in synchronous training) and as a share of step time, the job's share being the mean over the ranks with
GPU activity. Thresholds are documented in docs/diagnosis.md ("GPU causes").
"""

from __future__ import annotations

from reportgen.diagnosis.causes import MINOR, Finding, detector, make, pct
from reportgen.diagnosis.evidence import Evidence
from reportgen.section_ids import SectionId
from reportgen.trace_gpu_analysis import GpuAnalysis, Launch
from reportgen.trace_ranks import KernelMix, is_xspace_file

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
ONE_OFF_TIMES = 100.0  # the only launch call over HTA's cutoff, this many times the median call: warm-up
ONE_OFF_SHARE = 0.25  # ... and at least this share of the launch gaps (one that dwarfs the rest)


def _steps(ga: GpuAnalysis) -> int:
    n = ga.steps
    return n if isinstance(n, int) and 0 < n < 10**9 else 0


def _ranks(ev: Evidence) -> list[tuple[str, GpuAnalysis, float]]:
    """(label, gpu_analysis, step time ms) of each rank with GPU activity and profiled steps (odd values in a
    kineto.json written by something else cost that rank, never the diagnosis)."""
    out = []
    for label, rank in ev.trace_ranks.items():
        ga = rank.gpu_analysis
        total = sum(s.dur_ms for s in rank.step_list if s.dur_ms is not None and 0 <= s.dur_ms < 1e12)
        if ga.listed and total > 0 and _steps(ga):
            out.append((label, ga, total))
    return out


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _within(ev: Evidence, label: str, cost_ms: float, *slices: str) -> float:
    """A cost held to the slices of the rank's step-time account it is drawn from (device perspective): the account
    gives each GPU idle gap to one slice by what the host was doing when it began (a pageable copy first, then a
    synchronisation, an allocator call, the host's own state), so the GPU causes, each within its slices, never claim
    the same gap twice (docs/diagnosis.md, "The GPU causes' precedence")."""
    account = ev.trace_ranks[label].account
    if account is None or account.perspective != "device":
        return cost_ms
    return min(cost_ms, sum(account.slices_ms[name] for name in slices))


def _judge(ev: Evidence, cause: str, costs: dict[str, tuple[float, float, int]], minimum: float, evidence, fix,
           metrics: dict, sections=(SectionId.GPU_KERNELS_OPERATORS,), least: bool = False,
           set_aside: float = 0.0) -> Finding | None:
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
    return make(ev, cause, share, text, fix(worst, per_step), sections=list(sections), metrics=metrics,
                set_aside=set_aside)


@detector("host-sync")
def host_sync(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        sync = ga.sync
        per_step = sync.per_step
        beyond = _or(sync.idle_after_beyond_one_per_step_ms, 0.0)
        if per_step is None or per_step <= 1.0 or beyond <= 0:
            continue
        costs[label] = (_within(ev, label, beyond, "host_blocked"), total, _steps(ga))
        info[label] = sync

    def evidence(worst):
        sync = info[worst]
        ops = {k: v for k, v in sync.by_operator.items() if isinstance(v, int) and not isinstance(v, bool)}
        steps = max(int(_ranks_steps(ev, worst)), 1)
        calls = ", ".join(f"{name} ×{count}" for name, count in list(sync.by_call.items())[:3])
        where = "; ".join(f"{name}: {count / steps:.0f} per step" if count >= steps else f"{name}: {count} in the trace"
                          for name, count in list(ops.items())[:3])
        return [f"rank {worst}: {_or(sync.per_step, 0):.0f} host synchronisations per step ({calls})",
                f"they run in {where}" if where else "",
                f"GPU idle {_or(sync.idle_after_ms, 0.0):.1f} ms after them "
                f"({_or(sync.idle_after_beyond_one_per_step_ms, 0.0):.1f} ms beyond one per step; "
                "one loss.item() per step is normal and not counted)",
                f"host blocked {_or(sync.blocked_ms, 0.0):.1f} ms in them"]

    def fix(worst, per_step):
        sync = info[worst]
        n = _or(sync.per_step, 0)
        return (f"Keep values on the GPU instead of reading them every time: {n:.0f} synchronisations a step drain the "
                "GPU's queue each time. Accumulate losses and metrics as tensors and call .item() once per step (or "
                "every N steps), log asynchronously, replace data-dependent shapes (torch.nonzero, boolean masks, "
                "torch.unique) with torch.where or fixed-size ops, and drop explicit torch.cuda.synchronize() calls; "
                f"about {per_step:.1f} ms per step comes back.")
    return _judge(ev, "host-sync", costs, SYNC_MIN, evidence, fix,
                  {"syncs_per_step": {label: info[label].per_step for label in info}})


def _ranks_steps(ev: Evidence, label: str) -> int:
    rank = ev.trace_ranks.get(label)
    return _steps(rank.gpu_analysis) if rank else 0


@detector("kernel-launch-bound")
def kernel_launch_bound(ev: Evidence, found: dict) -> Finding | None:
    costs, info, warmups = {}, {}, {}
    for label, ga, total in _ranks(ev):
        launch, gaps = ga.launch, ga.idle_gaps_ms
        gpu = ev.trace_ranks[label].gpu
        window, idle = gpu.window_ms, gpu.window_idle_ms
        short = launch.shorter_than_launch_share
        launch_idle = _or(gaps.host_wait, 0.0) + _or(gaps.kernel_wait, 0.0)
        if not window or not idle or short is None or window <= 0 or idle <= 0:
            continue
        warmup = _warmup_ms(launch, launch_idle)
        rest, rest_idle = launch_idle - warmup, idle - warmup  # judged without the one-off: not every step's
        if short < LAUNCH_SHORT or rest / window < LAUNCH_IDLE or rest_idle <= 0 or rest / rest_idle < LAUNCH_OF_IDLE:
            continue
        cost = rest * min(total / window, 1.0)
        # HTA's host wait counts every gap the host's launch opened late, whatever held the host: the account says
        # what did, and only the GPU's idle while the host was issuing work (or running the script's Python between
        # launches) is the launches' (waiting for data is the input pipeline's, a pageable copy's staging the copy's)
        cost = _within(ev, label, cost, "dispatch", "no_operator")
        costs[label] = (cost, total, _steps(ga))
        info[label] = (launch, gaps, window, idle, launch_idle)
        if warmup > 0:
            warmups[label] = (warmup, total)

    def evidence(worst):
        launch, gaps, window, idle, launch_idle = info[worst]
        # the one-off first: the page's glance shows the first three lines, and it changes what the rest means
        return [_warmup_text(launch, warmups[worst][0]) if worst in warmups else "",
                f"rank {worst}: {_or(launch.kernels_per_step, 0):.0f} kernels per step, median "
                f"{_or(launch.kernel_p50_us, 0):.1f} µs on the GPU vs {_or(launch.launch_p50_us, 0):.1f} µs "
                "for the launch call",
                f"{pct(launch.shorter_than_launch_share)} of the kernels are shorter than the call that "
                "launched them",
                f"GPU idle {pct(idle / window)} of its active window, {pct(launch_idle / idle)} of it waiting on "
                f"launches (host wait {_or(gaps.host_wait, 0):.1f} ms, kernel wait "
                f"{_or(gaps.kernel_wait, 0):.1f} ms" + (", less the one-off launch above)" if worst in warmups
                                                         else ")")]

    def fix(worst, per_step):
        first = ("First profile later steps (torch.profiler.schedule(wait=1, warmup=1, active=N)): the one-off "
                 "launch is warm-up the profiled steps paid, not the loop's. Then: " if worst in warmups else "")
        return first + _launch_fix(info[worst][0], per_step)
    # left out of the launch gaps: the account's step-waste leaves it out too (one-off, not every step's)
    warm = sum(ms / total for ms, total in warmups.values() if total > 0) / max(len(_ranks(ev)), 1)
    return _judge(ev, "kernel-launch-bound", costs, MINOR / 2, evidence, fix,
                  {"warmup_share": warm} if warmups else {}, set_aside=warm)


def _warmup_ms(launch: Launch, launch_idle: float) -> float:
    """The GPU idle a one-off launch call opened, at most the launch gaps: the only call over HTA's cutoff, 100x the
    median call and a quarter of the gaps or more (a kernel's first launch loading its code: module load, JIT);
    0 when there is none."""
    one, median = launch.one_over_cutoff_us, launch.launch_p50_us
    if one is None or not median or median <= 0 or one < ONE_OFF_TIMES * median:
        return 0.0
    ms = min(one / 1000.0, launch_idle)
    return ms if launch_idle > 0 and ms >= ONE_OFF_SHARE * launch_idle else 0.0


def _warmup_text(launch: Launch, ms: float) -> str:
    return (f"one launch call took {ms:.2f} ms, {_or(launch.one_over_cutoff_us, 0) / _or(launch.launch_p50_us, 1):,.0f}x "
            "the median call and the only one over HTA's 50 µs cutoff: a one-off (a kernel's first launch loading its "
            "code, in the first profiled steps), left out of the launch gaps")


def _launch_fix(launch: Launch, per_step: float) -> str:
    if (launch.graph_launched_share or 0) >= GRAPHED:  # already replayed from CUDA graphs
        return ("Launch fewer, larger kernels: most of the step already replays from CUDA graphs, so what is left "
                "are the kernels launched outside them and the graph's own small kernels: fuse elementwise ops "
                "with torch.compile, use fused/foreach optimizers and larger batches so each kernel runs longer "
                f"than its launch; the launch gaps are about {per_step:.1f} ms per step.")
    return ("Launch fewer, larger kernels: capture the step in CUDA graphs (torch.compile(mode='reduce-overhead') "
            "or torch.cuda.graphs), fuse elementwise ops with torch.compile, use fused/foreach optimizers "
            "(fused=True / foreach=True), and batch small ops into larger ones (a larger batch makes each kernel "
            f"longer than its launch); the launch gaps are about {per_step:.1f} ms per step.")


@detector("communication-bound")
def communication_bound(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        overlap = ga.overlap
        exposed = overlap.exposed_in_steps_ms
        if not exposed:
            continue
        costs[label] = (exposed, total, _steps(ga))
        info[label] = overlap
    first = next(iter(ev.trace_ranks.values()), None)
    names = ", ".join(n[:60] for n in (first.collectives.names if first else ())[:2])

    def evidence(worst):
        o = info[worst]
        steps = max(_ranks_steps(ev, worst), 1)
        waits = ("; it is the rank that waits least in them: the transfer itself, not a wait for a slower rank"
                 if len(info) > 1 else "")
        return [f"rank {worst}: communication overlaps computation {(o.comm_comp_overlap_pct or 0):.0f} % "
                f"of its time (comm_comp_overlap_pct, HTA's definition)",
                f"{_or(o.communication_ms, 0) / steps:.1f} ms of collectives per step ({names}), "
                f"{_or(o.exposed_per_step_ms, 0):.1f} ms of it with no compute beside it "
                f"({pct(o.exposed_step_share)} of step time){waits}",
                f"measured bus bandwidth {o.busbw_gb_s:.1f} GB/s (algorithm bandwidth "
                f"{_or(o.algbw_gb_s, 0):.1f} GB/s, {_or(o.message_bytes, 0) / steps / 1e6:.0f} MB "
                "a step)" if o.busbw_gb_s is not None else
                "bus bandwidth not measured: the collectives' kernels do not say their message size (torch < 2.1)"]

    def fix(worst, per_step):
        return ("Overlap the gradient all-reduce with backward: keep DDP's bucketing on (do not call all_reduce after "
                "backward yourself; tune bucket_cap_mb so the first buckets start early, gradient_as_bucket_view=True), "
                "reduce what is sent (bf16/fp16 gradient compression hooks, gradient accumulation with no_sync() "
                f"between optimizer steps) or use a faster interconnect; {per_step:.1f} ms per step is exposed.")
    # A rank that waits for a straggler inside its collectives shows that wait as exposed communication too: the
    # rank that waits least has only the transfer itself, which every rank pays; that is what is judged.
    return _judge(ev, "communication-bound", costs, COMM_EXPOSED, evidence, fix,
                  {"comm_comp_overlap_pct": {label: info[label].comm_comp_overlap_pct for label in info}},
                  least=True)


@detector("no-mixed-precision")
def no_mixed_precision(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        tc = ga.tensor_cores
        eligible, fp32 = tc.eligible_share, _or(tc.fp32_gemm_conv_ms, 0.0)
        compute = _or(tc.compute_kernel_ms, 0.0)
        if not tc.has_tensor_cores or eligible is None or eligible < FP32_ELIGIBLE:
            continue
        if compute / total < FP32_BUSY:
            continue  # the GPU is mostly waiting: faster kernels would not shorten the step much
        costs[label] = (fp32 * (1 - 1 / AMP_SPEEDUP), total, _steps(ga))
        info[label] = tc
    devices = {label: list(ev.trace_ranks[label].devices) for label in info}

    def evidence(worst):
        tc = info[worst]
        steps = max(_ranks_steps(ev, worst), 1)
        device = (devices.get(worst) or ["?"])[0]
        return [f"rank {worst}: {pct(tc.eligible_share)} of compute kernel time in fp32 GEMM/convolution "
                f"kernels ({_or(tc.fp32_gemm_conv_ms, 0) / steps:.1f} ms per step), "
                f"{_or(tc.tensor_core_gemm_conv_ms, 0) / steps:.1f} ms in tensor-core precisions",
                f"{device} (compute capability {_or(tc.compute_capability, 0):.1f}) has tensor cores",
                f"assuming tensor cores run them at least {AMP_SPEEDUP:.0f}× faster"]

    def fix(worst, per_step):
        cc = _or(info[worst].compute_capability, 0)
        if cc >= 8.0:
            how = ("train with torch.autocast('cuda', dtype=torch.bfloat16), or at least allow TF32 "
                   "(torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True)")
        else:
            how = "train with torch.autocast('cuda', dtype=torch.float16) and torch.cuda.amp.GradScaler"
        return (f"Use the tensor cores: {how}; {pct(info[worst].eligible_share)} of the kernel time is eligible, "
                f"about {per_step:.1f} ms per step or more comes back.")
    return _judge(ev, "no-mixed-precision", costs, MINOR / 2, evidence, fix,
                  {"eligible_share": {label: info[label].eligible_share for label in info},
                   "assumed_speedup": AMP_SPEEDUP})


@detector("pageable-memcpy")
def pageable_memcpy(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, ga, total in _ranks(ev):
        copy = ga.pageable_htod
        per_step = copy.bytes_per_step if copy else None
        if copy is None or per_step is None or per_step < PAGEABLE_BYTES:
            continue
        cost = _or(copy.exposed_ms, 0.0) + _or(ga.idle_gaps_ms.after_pageable_copy, 0.0)
        costs[label] = (_within(ev, label, cost, "memory_copies"), total, _steps(ga))
        info[label] = copy

    def evidence(worst):
        copy = info[worst]
        steps = max(_ranks_steps(ev, worst), 1)
        return [f"rank {worst}: {_or(copy.bytes_per_step, 0) / 1e6:.0f} MB per step copied host to device "
                f"from pageable memory ({_or(copy.count, 0) / steps:.0f} copies per step, "
                f"{_or(copy.time_ms, 0) / steps:.1f} ms per step at "
                f"{_or(copy.gb_per_s, 0):.1f} GB/s)",
                f"{_or(copy.exposed_ms, 0) / steps:.1f} ms per step of it with no kernel running beside it: "
                "a pageable copy is staged by the host and blocks it"]

    def fix(worst, per_step):
        return ("Copy from pinned memory without blocking: DataLoader(pin_memory=True) and "
                "batch.to(device, non_blocking=True) (or tensor.pin_memory() for your own buffers), so the copy runs "
                "on a copy engine beside compute at the link's full bandwidth (pinned copies reach 2-3× the "
                f"{_or(info[worst].gb_per_s, 0):.1f} GB/s measured here); about {per_step:.1f} ms per "
                "step comes back.")
    return _judge(ev, "pageable-memcpy", costs, PAGEABLE_MIN, evidence, fix,
                  {"bytes_per_step": {label: info[label].bytes_per_step for label in info}})



# memory-bound-kernels (docs/diagnosis.md, "GPU kernel mix and fusion")
GPU_BOUND = 0.60  # the account's compute slice at least this share of the step: the GPU's own work is the step
UNFUSED_SHARE = 0.50  # elementwise + reductions + per-tensor optimizer kernels, share of the compute slice
PER_TENSOR_OPTIMIZER = 0.05  # the optimizer's per-tensor kernels, share of the unfused time, and at least
PER_TENSOR_LAUNCHES = 50  # this many of them per step (a parameter's update is several): fused=True for it
LAYOUT_SHARE = 0.10  # layout transposes (nchwToNhwc), share of the unfused time: channels_last
CAST_SHARE = 0.20  # dtype casts and copies as kernels, share of the unfused time: autocast placement


def _mix_ranks(ev: Evidence) -> list[tuple[str, KernelMix, float, float, int]]:
    """(label, kernel mix, compute slice ms, step time ms, steps) of each rank whose account is the device's."""
    out = []
    for label, rank in ev.trace_ranks.items():
        account = rank.account
        gpu = account.gpu if account is not None else None
        mix = gpu.kernel_mix if gpu is not None else None
        if account is None or account.perspective != "device" or mix is None or mix.compute_ms <= 0:
            continue
        if any(is_xspace_file(name) for name in rank.files):
            continue  # JAX / TensorFlow: XLA fuses elementwise work already; what is left is not the user's to fuse
        out.append((label, mix, account.slices_ms["compute"], account.step_ms, account.steps))
    return out


@detector("memory-bound-kernels")
def memory_bound_kernels(ev: Evidence, found: dict) -> Finding | None:
    costs, info = {}, {}
    for label, mix, compute, total, steps in _mix_ranks(ev):
        if total <= 0 or compute / total < GPU_BOUND or mix.unfused_memory_bound_ms / mix.compute_ms < UNFUSED_SHARE:
            continue
        # an estimate: each chain of memory-bound kernels fused into one pass; never more than their own time
        saving = min(mix.fusable_ms, mix.unfused_memory_bound_ms)
        costs[label] = (saving, total, steps)
        info[label] = (mix, compute, total, steps)

    def evidence(worst):
        mix, compute, total, steps = info[worst]
        c = mix.classes_ms
        n = max(steps, 1)
        lines = [f"rank {worst}: the GPU computes {pct(compute / total)} of each step, and "
                 f"{pct(mix.unfused_memory_bound_ms / mix.compute_ms)} of that compute is memory-bound kernels that "
                 f"fusion would merge (elementwise {pct(c['elementwise'] / mix.compute_ms)}, reductions and norms "
                 f"{pct(c['reduction'] / mix.compute_ms)}, the optimizer's per-tensor kernels "
                 f"{pct(max(mix.unfused_memory_bound_ms - c['elementwise'] - c['reduction'], 0.0) / mix.compute_ms)})"
                 f"; GEMM, convolution and attention {pct((c['gemm'] + c['convolution'] + c['attention']) / mix.compute_ms)}"]
        for t in mix.top[:3]:
            ops = ", ".join(t.operators) or "no operator in the trace"
            lines.append(f"{t.name.removeprefix('void ')[:90]}: {pct(t.share_of_compute, 1)} of the compute, "
                         f"{_or(t.calls_per_step, 0):.0f} calls per step, launched by {ops}")
        if mix.optimizer_names and mix.optimizer_kernels_per_step:
            lines.append(f"Optimizer.step#{mix.optimizer_names[0]}.step launches "
                         f"{mix.optimizer_kernels_per_step:.0f} kernels per step ({mix.optimizer_ms / n:.1f} ms), "
                         f"{pct(mix.optimizer_multi_tensor_ms / mix.optimizer_ms if mix.optimizer_ms else 0.0)} of "
                         "that time in multi-tensor (foreach / fused) kernels")
        lines.append(f"estimate: fusing each run of consecutive memory-bound kernels into one pass (its longest kernel; "
                     f"the optimizer's, one pass per tensor) saves about {min(mix.fusable_ms, mix.unfused_memory_bound_ms) / n:.1f} ms of the "
                     f"{mix.unfused_memory_bound_ms / n:.1f} ms per step they take")
        return lines

    def fix(worst, per_step):
        mix = info[worst][0]
        unfused = mix.unfused_memory_bound_ms or 1.0
        per_tensor = max(mix.optimizer_ms - mix.optimizer_multi_tensor_ms, 0.0)
        fixes = []
        if (per_tensor / unfused >= PER_TENSOR_OPTIMIZER
                and mix.optimizer_per_tensor_kernels_per_step >= PER_TENSOR_LAUNCHES):
            name = mix.optimizer_names[0] if mix.optimizer_names else "the optimizer"
            fixes.append((per_tensor, f"create the optimizer with fused=True (or foreach=True): "
                                      f"torch.optim.{name}(params, ..., fused=True) runs its update as a few "
                                      f"multi-tensor kernels instead of "
                                      f"{mix.optimizer_per_tensor_kernels_per_step:.0f} "
                                      "per-tensor launches a step"))
        if mix.layout_ms / unfused >= LAYOUT_SHARE:
            fixes.append((mix.layout_ms, "use channels_last memory format (model.to(memory_format=torch.channels_last) "
                                         "and the inputs too): cuDNN transposes every NCHW tensor to NHWC and back "
                                         "around each convolution"))
        if mix.casts_ms / unfused >= CAST_SHARE:
            fixes.append((mix.casts_ms, "cast once: let torch.autocast own the dtype casts (no .to(dtype) / .half() "
                                        "inside the model's forward, inputs converted once in the data pipeline)"))
        chains = ("BatchNorm and activation chains after the convolutions" if mix.norms_ms and mix.convolution_kernels_ms
                  else "elementwise and normalisation chains")
        fixes.append((mix.unfused_memory_bound_ms - sum(ms for ms, _ in fixes),
                      f"compile the model with torch.compile(model), which fuses {chains} into a few kernels"))
        ordered = [text for _, text in sorted(fixes, key=lambda f: -f[0])]
        return (f"Fuse the memory-bound kernels: {ordered[0]}" + "".join(f"; {t}" for t in ordered[1:])
                + f". Estimated: about {per_step:.1f} ms per step comes back (an estimate: each chain of memory-bound "
                "kernels kept as one pass over its data).")
    return _judge(ev, "memory-bound-kernels", costs, MINOR / 2, evidence, fix,
                  {"unfused_share_of_compute": {label: info[label][0].unfused_memory_bound_ms / info[label][0].compute_ms
                                                for label in info},
                   "estimate": True})
