"""Findings from the step-time account: waste shows up whether or not a named cause explains it.

Every profiled step's time is split into exclusive slices (``trace_analysis.account``); any slice that is not
useful compute and that every step pays for at least ``WASTE`` of the step is a finding. A named cause that
explains a slice (the input pipeline for waiting on data, host-sync for a blocked host, …) claims it: its
finding stands for that time, once. A slice no named cause claimed still gets its share, what the trace shows
of it and how to look closer (``step-waste``). Four slices have causes of their own here, with evidence and a
fix in the job's numbers: time under no operator (``host-overhead``), per-call operator overhead
(``operator-overhead``), compilation in the loop (``compilation``), allocator calls and the tensors the script makes
every step (``allocator-churn``), a debugging aid's checks inside the operators (``debug-mode``); and two refine
``compute`` itself: operators on float64 (``float64``), tensors the script copies outside every operator
(``tensor-copies``) and the backward through parameters no optimizer holds (``unused-gradients``).

"Every step pays" is the slice's median per step times the steps: a stall that only some steps pay is the
slow steps' cause (``step-outliers``), not a per-step overhead, so it is never counted twice.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from reportgen.diagnosis.causes import Finding, detector, make, pct, pipeline_python_fix
from reportgen.diagnosis.evidence import Evidence
from reportgen.diagnosis.slow_step_story import SLICE_TITLES, SlowStepStory, fix_for, steps_paying
from reportgen.engine.slow_steps import find_period
from reportgen.section_ids import SectionId
from reportgen.trace_analysis.account import EAGER_STEP_OPS
from reportgen.trace_ranks import TraceAccount, is_xspace_file

WASTE = 0.05  # a slice every step pays for at least this share of the step is a finding
TOTAL_WASTE = 0.15  # or all the unclaimed waste together, when no one slice reaches WASTE
# The named causes that explain a slice: their finding claims its time (one stall, one finding).
CLAIMS = {
    "data_wait": ("input-pipeline", "io-bound", "cpu-bound", "straggler", "loader-restart"),
    "host_blocked": ("host-sync",),
    "communication": ("communication-bound", "straggler"),
    "memory_copies": ("pageable-memcpy",),
    "dispatch": ("kernel-launch-bound", "operator-overhead"),
    "no_operator": ("host-overhead", "loader-restart", "thread-contention"),
    "compilation": ("compilation",),
    "memory_management": ("allocator-churn",),
    "debug_checks": ("debug-mode",),
}
# Causes that price part of a slice they claim (kernel-launch-bound: the launch gaps, less a one-off warm-up launch):
# what of the slice's every-step share they leave unpriced stays open to step-waste, never swallowed by the claim.
PRICED_IN_PART = {"dispatch": ("kernel-launch-bound",)}
UNPRICED_FIX = ("Find what the host does inside the operators that run while the GPU idles (the longest named above: "
                "an allocation, a host-side computation, a copy's staging) and do it once before the loop or off the "
                "step; the launch gaps themselves are the launch finding's.")
# What to do about a slice that no named cause explains, and how to look closer.
GENERIC_FIX = {
    "data_wait": "Overlap loading with compute: DataLoader workers (num_workers), persistent_workers=True so they "
                 "are not restarted each epoch, pin_memory=True; profile the Dataset's __getitem__ if it stays.",
    "host_blocked": "Remove per-step synchronisations (.item(), .cpu(), .tolist(), printing tensors, "
                    "torch.cuda.synchronize()): keep values on the GPU and read them every N steps.",
    "communication": "Overlap communication with compute: DDP's gradient buckets (bucket_cap_mb), no_sync() during "
                     "gradient accumulation, fewer and larger collectives.",
    "memory_copies": "Copy from pinned memory without blocking (pin_memory=True, .to(device, non_blocking=True)) "
                     "and keep tensors on the GPU between steps.",
    "dispatch": "Issue fewer, larger kernels: a larger batch, torch.compile (mode='reduce-overhead' captures CUDA "
                "graphs), fused optimizers (foreach/fused=True).",
}
# the step already replays from CUDA graphs (at least this share of its GPU operations): capturing is done
REPLAYED = 0.5
GRAPHS_REPLAYED = ("Give the GPU longer work per call: the step already runs from graph replays, so what holds it "
                   "is the host's work outside them and the graphs' own small kernels: fuse elementwise ops "
                   "(torch.compile), use fused optimizers (foreach/fused=True), a larger batch, and move CPU work "
                   "off the step.")
PROFILE_CLOSER = ("to see which lines: profile with with_stack=True (Python frames in the trace) or sample the "
                  "process with py-spy")
# JAX's and TensorFlow's profilers (XSpace traces) have no with_stack: their Python tracer puts the Python calls in
# the trace, and a step's host reads of device arrays are other calls than torch's .item()
PROFILE_CLOSER_XSPACE = ("to see which lines: trace the Python too (python_tracer_level=1 in jax.profiler.ProfileOptions"
                         " or tf.profiler.experimental.ProfilerOptions) or sample the process with py-spy")
HOST_CULPRITS = ("per-step metrics and logging (.item() conversions, numpy on outputs, files written with fsync), a "
                 "manual gc.collect() or empty_cache(), checkpoints")
HOST_CULPRITS_XSPACE = ("per-step metrics and logging (device arrays read into Python or numpy: float(loss), "
                        "np.asarray, jax.device_get, .numpy(); numpy on outputs, files written with fsync), a manual "
                        "gc.collect(), checkpoints")


def from_xspace(ev: Evidence) -> bool:
    """Whether every profiled rank was read from JAX's or TensorFlow's XSpace (their profilers' words apply)."""
    return bool(ev.trace_ranks) and all(any(is_xspace_file(name) for name in rank.files)
                                        for rank in ev.trace_ranks.values())


def accounts(ev: Evidence) -> dict[str, TraceAccount]:
    """The profiled ranks' accounts; without profiler traces, a SageMaker job's training processes' (from its
    framework events)."""
    traced = {label: rank.account for label, rank in ev.trace_ranks.items() if rank.account is not None}
    return traced or dict(ev.framework.nodes)


def from_framework(ev: Evidence) -> bool:
    """Whether the accounts are a SageMaker job's framework events' (forward and backward passes, no operators)."""
    return not any(rank.account is not None for rank in ev.trace_ranks.values()) and bool(ev.framework.nodes)


def over_ranks(ev: Evidence, name: str, whole: bool = False) -> tuple[float, str | None, float]:
    """(mean over the ranks of the slice's share, the rank where it is largest, that share): what every step pays,
    or with ``whole`` all of it (compilation and allocator calls cost what they cost, in every step or a few)."""
    acc = accounts(ev)
    if not acc:
        return 0.0, None, 0.0
    shares = {label: a.share(name) if whole else a.every_step_share(name) for label, a in acc.items()}
    worst = max(shares, key=shares.get)
    return statistics.mean(shares.values()), worst, shares[worst]


def every_step(ev: Evidence, name: str) -> tuple[float, str | None, float]:
    return over_ranks(ev, name)


def mean_and_worst(ev: Evidence, shares: dict[str, float]) -> tuple[float, str]:
    """(the mean over every account of a cost some of them show, 0 where one shows none; the account where it is
    largest): a cause's share of the job and the rank its evidence is told from. ``shares`` must not be empty."""
    return statistics.mean(shares.get(label, 0.0) for label in accounts(ev)), max(shares, key=lambda label: shares[label])


def _median_step_ms(account: TraceAccount) -> float:
    totals = [sum(values) for values in zip(*(v for v in account.per_step_ms.values() if v))]
    return statistics.median(totals) if totals else account.step_ms / max(account.steps, 1)


def _account_section(ev: Evidence) -> SectionId:
    """Where the page shows the account: the profiler traces' section, or a SageMaker job's framework metrics."""
    return SectionId.FRAMEWORK_METRICS_SUMMARY if from_framework(ev) else SectionId.GPU_KERNELS_OPERATORS


def _account_place(ev: Evidence) -> str:
    return "the framework metrics summary" if from_framework(ev) else "the profiler section"


def _rank_text(ev: Evidence, label: str | None) -> str:
    if from_framework(ev):
        return f" (node {label})" if label is not None and len(ev.framework.nodes) > 1 else ""
    return f" (rank {label})" if label is not None and len(ev.trace_ranks) > 1 else ""


def _per_step_text(account: TraceAccount, name: str) -> str:
    share = account.every_step_share(name)
    median = _median_step_ms(account)
    return f"{share * median:.1f} ms of a median {median:.1f} ms step"


NAMED_SHARE = 0.10  # a name the trace puts over less than this part of the time says little about it


def _named_text(account: TraceAccount) -> str:
    """What the trace names inside the time under no operator, when a name covers a tenth of it or more."""
    total = account.slices_ms["no_operator"]  # every slice is in the typed view
    named = {name: ms for name, ms in account.no_operator_named.items() if total and ms >= NAMED_SHARE * total}
    if not named:
        return ("the trace names none of that time (no record_function around it, no Python frames): it is code "
                "between the framework's calls")
    parts = ", ".join(f"{name} {ms:.1f} ms" for name, ms in list(named.items())[:3])
    return f"what the trace names in that time: {parts} (annotations and Python frames, over all steps)"


CHURN = 4  # process-count changes inside the loop from which children came and went while it ran (two at least)


@detector("host-overhead")
def host_overhead(ev: Evidence, found: dict) -> Finding | None:
    if "kernel-launch-bound" in found:  # the GPU waits for the host, whatever the host does between launches
        return None
    if "loader-restart" in found:  # starting and stopping the loader's workers: that finding's, once
        return None
    if "thread-contention" in found:  # another thread of the process held the GIL or the cores: that finding's
        return None
    if "operator-overhead" in found and ({"micro_batches", "eager_ops_per_step", "small_steps"}
                                         & set(found["operator-overhead"].metrics)):
        return None  # the Python between operators is paid per micro-batch, eager call or small step: that finding's
    if from_framework(ev):  # smdebug records no operators: the step outside forward and backward holds the optimizer
        return None
    share, worst, worst_share = every_step(ev, "no_operator")
    if share < WASTE:
        return None
    account = accounts(ev)[worst]
    shared = (f"; the host was shared{ev.cpu_whose()}: part of this time the process may have waited for a core"
              if ev.job_cpu is not None else "")
    evidence = [f"{pct(share)} of every profiled step runs under no profiler operator{_rank_text(ev, worst)}: "
                f"{_per_step_text(account, 'no_operator')} is the training script's own Python between the "
                f"framework's operators{shared}",
                _named_text(account),
                f"a clean training loop leaves under {pct(WASTE)} of the step there"]
    xspace = from_xspace(ev)
    closer = PROFILE_CLOSER_XSPACE if xspace else PROFILE_CLOSER
    fix = ("Find the Python that runs in every step between the framework's calls and take it off the step (every N "
           f"steps, or in a background thread); the usual culprits are {HOST_CULPRITS_XSPACE if xspace else HOST_CULPRITS}"
           f"; {closer}.")
    heading = ""
    churn = ev.process_churn or (0, 0)
    if churn[0] >= CHURN:  # the recording saw children come and go while the loop ran: the step may wait on them
        evidence[0] = evidence[0].replace("the training script's own Python between",
                                          "the training script's own Python, or what it waits for, between")
        evidence.insert(1, f"the recording saw the job's processes come and go {churn[0]} times while the loop ran (up "
                           f"to {churn[1]} at once), beyond its workers' first start and last end: a command the step "
                           "runs (subprocess.run, os.system) or workers started again is waited for under no "
                           "operator, and its CPU is not the training process's")
        fix = ("If the step runs a command (subprocess.run or os.system of nvidia-smi, df, ps, a script) — child "
               f"processes came and went {churn[0]} times in the loop — run it every N steps or in a background "
               "thread, or read the value in the process (psutil, NVML) instead of starting a program. " + fix)
    reads = _median(account.scalar_reads_per_step)
    if reads:  # the step reads tensors element by element into Python: the Python around each read is that time
        evidence.insert(1, f"every step reads {reads:,.0f} tensor elements into Python one by one (aten::item outside "
                           "the optimizer and the backward pass): what a tensor's repr does for each element when it "
                           "is printed or logged, or a loop over a tensor's elements")
        fix = (f"Stop printing or logging whole tensors in every step: their repr reads each element from Python "
               f"({reads:,.0f} a step here) and formats it. Log a float (loss.item()) or a few statistics, every N "
               "steps; where the values are needed, convert the tensor in one call (.tolist(), .numpy()), not "
               f"element by element. If no tensor is printed, {closer}.")
        heading = "Every step reads tensors into Python element by element (a tensor printed or logged)"
    return make(ev, "host-overhead", 0.0, evidence, fix, loop_share=share, sections=[_account_section(ev)],
                heading=heading,
                basis="the time every profiled step spends under no operator (the median step's, times the steps); "
                      "moving that work off the step gives it back",
                metrics=_metrics(ev, "no_operator", share, worst, worst_share))


MICRO_BATCHES = 4  # backward passes per optimizer step from which the micro-batches' fixed costs are looked at
SMALL_WORK = WASTE  # ... and the per-call overhead (Python between operators, dispatch) at least this of the step


def micro_batches(account: TraceAccount) -> int | None:
    """Backward passes per optimizer step (the median step's), when each step runs one optimizer step."""
    passes, steps = account.backward_passes_per_step, account.optimizer_steps_per_step
    if len(passes) != account.steps or len(steps) != account.steps:
        return None
    per = statistics.median(passes)
    return int(per) if per >= 2 and statistics.median(steps) == 1 else None


@detector("operator-overhead")
def operator_overhead(ev: Evidence, found: dict) -> Finding | None:
    host = {label: a for label, a in accounts(ev).items() if a.perspective == "host"}
    if not host:
        return None
    share, worst, worst_share = every_step(ev, "dispatch")
    micro = {label: micro_batches(a) for label, a in accounts(ev).items()}
    micro = {label: n for label, n in micro.items() if n is not None and n >= MICRO_BATCHES}
    if micro:
        label = max(micro, key=micro.get)
        account, n = accounts(ev)[label], micro[label]
        overhead = account.every_step_share("no_operator") + account.every_step_share("dispatch")
        if overhead >= SMALL_WORK:
            return _micro_batch_finding(ev, label, account, n, overhead)
    eager = {label: a for label, a in host.items() if _median(a.eager_ops_per_step) >= EAGER_STEP_OPS}
    if eager:
        label = max(eager, key=lambda name: eager[name].every_step_share("dispatch"))
        account = eager[label]
        overhead = account.every_step_share("dispatch") + account.every_step_share("no_operator")
        if overhead >= WASTE:
            return _eager_finding(ev, label, account, overhead)
    if share < WASTE:
        return None
    graph = {label: a for label, a in host.items() if _median(a.graph_calls_per_step) >= 1}
    if graph:
        label = worst if worst in graph else max(graph, key=lambda name: graph[name].every_step_share("dispatch"))
        return _graph_call_finding(ev, label, graph[label], share)
    account = host[worst] if worst in host else next(iter(host.values()))
    calls, floor = account.operator_calls_per_step, account.dispatch_floor_us
    evidence = [f"{pct(share)} of every profiled step is the fixed cost of operator calls{_rank_text(ev, worst)}: "
                f"{calls:,.0f} operator calls per step at {floor:.1f} µs each (the median time of the metadata-only "
                f"operators such as aten::view, which do no arithmetic)" if calls and floor else "",
                f"{_per_step_text(account, 'dispatch')}; the cost is paid per call, not per sample"]
    fix = ("Give each operator call more work: a larger micro-batch with fewer gradient-accumulation steps for the same "
           f"samples per update (a micro-batch 4x larger cuts this {pct(share)} to about {pct(share / 4)}), or fewer, "
           "fused operators (torch.compile).")
    return make(ev, "operator-overhead", 0.0, evidence, fix, loop_share=share, sections=[_account_section(ev)],
                basis="operator calls per step times their fixed cost; larger micro-batches make fewer calls for the "
                      "same samples",
                metrics={**_metrics(ev, "dispatch", share, worst, worst_share), "operator_calls_per_step": calls,
                         "dispatch_floor_us": floor})


def _median(values) -> float:
    return statistics.median(values) if values else 0.0


EAGER_WORDS = {  # runtime: (its operations, how the trace shows them, the fix)
    "tensorflow": ("TensorFlow operations", "EagerLocalExecute of single operations, no tf.function graph around them",
                   "Run the training step as one graph: decorate it with @tf.function (jit_compile=True to compile it "
                   "with XLA); Keras's fit() does so unless run_eagerly=True."),
    "jax": ("JAX primitives", "a PjitFunction(...) call for each primitive, no jax.jit around the step",
            "Compile the whole training step with jax.jit (the forward pass, the gradient and the update in one "
            "function, with static shapes): it runs as one executable instead of one per primitive."),
}


def _first_step_startup_ms(ev: Evidence, label: str, account: TraceAccount) -> float:
    """The loop's first step (step 0) when it is the first profiled step and the only one that compiles: the
    framework compiling what every later step reuses, paid once (ms); 0 otherwise. A window of a few steps from the
    loop's start holds it at far more than its part of a long loop, so a share of every step is taken over the
    other steps and applied to the loop less it."""
    rank = ev.trace_ranks.get(label)
    compiling = account.per_step_ms["compilation"]  # every slice is in the typed view
    durations = account.step_durations_ms()
    if rank is None or account.steps < 3 or len(compiling) != account.steps or len(durations) != account.steps:
        return 0.0
    numbered = [(x.start_ms, x.step) for x in rank.step_list if x.step is not None and x.start_ms is not None]
    if not numbered or min(numbered)[1] != 0:
        return 0.0
    if compiling[0] <= 0 or any(v > 0 for v in compiling[1:]):
        return 0.0
    return durations[0] if durations[0] < account.base_ms else 0.0


def _every_step_share_after(account: TraceAccount, name: str, first_ms: float) -> float:
    """``every_step_share`` over the steps after the first (its ``first_ms`` out of the steps' time)."""
    values = account.per_step_ms.get(name, ())[1:]
    base = account.base_ms - first_ms
    if not values or base <= 0:
        return 0.0
    return min(statistics.median(values) * len(values), sum(values)) / base


def _eager_finding(ev: Evidence, label: str, account: TraceAccount, overhead: float) -> Finding:
    """TensorFlow or JAX running the step op by op from Python: every operation pays the runtime's fixed cost and
    the Python between operations runs every step; compiled as one graph both are paid once, when it is traced.
    A first step that compiles every primitive on its own (JAX) is start-up: out of the shares and of the loop."""
    ops = _median(account.eager_ops_per_step)
    what, shown, remedy = EAGER_WORDS[account.eager_runtime or "tensorflow"]
    first_ms = _first_step_startup_ms(ev, label, account)
    loop_share, of_what, startup = overhead, "the profiled steps' time", []
    per_step = {name: account.every_step_share(name) for name in ("dispatch", "no_operator", "compute")}
    if first_ms and ev.loop_s:
        per_step = {name: _every_step_share_after(account, name, first_ms) for name in per_step}
        overhead = per_step["dispatch"] + per_step["no_operator"]
        loop_share = overhead * max(ev.loop_s - first_ms / 1000, 0.0) / ev.loop_s
        of_what = "the profiled steps' time after the first"
        compiled = ", ".join(f"{name} {ms / 1000:.1f} s" for name, ms in list(account.compilation_named.items())[:3])
        startup = [f"the loop's first step ({first_ms / 1000:.2f} s) compiled{f' ({compiled})' if compiled else ''} "
                   "what every later step reuses: start-up, left out of these shares and of the loop the impact "
                   "applies to (a compiled step compiles once too; what it would save there is not counted)"]
    median = _median_step_ms(account)
    evidence = [f"{ops:,.0f} {what} a step run one by one from Python{_rank_text(ev, label)} ({shown})",
                f"{pct(overhead)} of {of_what}, paid in every step, is outside the operations' kernels "
                f"({overhead * (account.step_ms - first_ms) / max(account.steps - (1 if first_ms else 0), 1):.1f} ms "
                f"of a median {median:.1f} ms step): the runtime's cost of each call ({pct(per_step['dispatch'])})"
                + (f" and the Python between calls ({pct(python)})" if (python := per_step["no_operator"])
                   >= 0.005 else "") + f"; the kernels themselves are {pct(per_step['compute'])}", *startup]
    fix = (f"{remedy} The Python then runs once, when the step is traced, and the operations run back to back in the "
           "runtime.")
    return make(ev, "operator-overhead", 0.0, evidence, fix, loop_share=loop_share,
                sections=[_account_section(ev)],
                heading=f"Each step runs {ops:,.0f} operations one by one from Python"
                        + (" (eager execution)" if account.eager_runtime == "tensorflow" else " (no jax.jit)"),
                basis="the time outside the operations' kernels in every step; as a graph the kernels still run (a "
                      "graph may also fuse them: more may be saved)",
                metrics={"slice": "dispatch", "eager_ops_per_step": ops, "overhead_share": overhead,
                         "worst_rank": label, "share_of_steps": overhead, "ranks": len(accounts(ev))})


SMALL_STEPS = 1.0  # a graph call's fixed cost at least this many times its kernels' time: the steps are too small

GRAPH_CALL_FIX = ("Give each step more work, so that its fixed cost is paid for more samples: a larger batch (the learning "
                  "rate scaled with it; a batch k times larger pays the fixed cost once instead of k times); with "
                  "Keras, model.compile(..., steps_per_execution=N) runs N steps in one graph call (the same updates) "
                  "and its per-batch Python and callbacks once per N steps; in a custom loop, iterate over several "
                  "batches inside one tf.function.")


JIT_CALL_FIX = ("Give each step more work, so that its fixed cost is paid for more samples: a larger batch (the learning "
                "rate scaled with it; a batch k times larger pays the fixed cost once instead of k times), or several "
                "steps in one jitted call: jax.lax.scan over a stack of batches inside the jitted function (the same "
                "updates, one call and one transfer for all of them).")
GRAPH_CALL_WORDS = {  # runtime: (the call, its kernels as the trace shows them, the rest of the call, the fix)
    "tensorflow": ("tf.function graph call", "the executor's <node>:<OpType> events",
                   "the tf.function's Python, the eager runtime, the executor scheduling each operation",
                   GRAPH_CALL_FIX),
    "jax": ("jitted call (PjitFunction, one XLA executable run)", "XLA's HLO operations on the executor's threads",
            "its arguments parsed and put on the device, the executable launched, the step waiting for the "
            "executor's thread to run it", JIT_CALL_FIX),
}


def _graph_call_finding(ev: Evidence, label: str, account: TraceAccount, share: float) -> Finding:
    """A tf.function step (or a jitted JAX step) whose operations' kernels are a small part of each call: the call's
    own cost (the tf.function's Python, the eager runtime, the executor scheduling each operation; JAX's dispatch of
    the executable and the wait for its thread) is paid once per step whatever the batch, and so is the Python between calls (a framework's loop and callbacks). Where that fixed cost
    outweighs the kernels the steps are too small for it, and both are this finding's; otherwise the call's cost."""
    kernels = account.every_step_share("compute")
    python = account.every_step_share("no_operator")
    small = share >= SMALL_STEPS * kernels
    claimed = share + python if small else share
    median = _median_step_ms(account)
    calls = _median(account.graph_calls_per_step)
    call, shown, rest, fix = GRAPH_CALL_WORDS[account.graph_runtime]
    # the step as the trace recorded it: the profiler's measured cost comes out of an XSpace trace's slices pro rata
    median *= account.step_ms / account.base_ms if account.base_ms > 0 else 1.0
    evidence = [f"{calls:,.0f} {call}{'s' if calls != 1 else ''} a step{_rank_text(ev, label)}, whose "
                f"operations' kernels ({shown}) take {kernels * median:.2f} ms of a median {median:.2f} ms profiled "
                f"step ({pct(kernels)})",
                f"the rest of each call — {rest} — is {pct(share)} of the step, paid once per call whatever the batch"
                + (f"; the Python between calls (the training loop, a framework's per-batch callbacks) another "
                   f"{pct(python)}" if small and python >= 0.005 else "")]
    if small:
        evidence.append("the step's fixed cost outweighs its arithmetic: the batch is small for the model")
    return make(ev, "operator-overhead", 0.0, evidence, fix, loop_share=claimed,
                sections=[_account_section(ev)],
                heading=("Each step is too small for its fixed cost: " if small else "Each step pays ")
                        + f"{pct(claimed)} outside its kernels",
                basis="an upper bound: the time outside the graph's kernels in every step"
                      + (" (and the Python between steps)" if small else "")
                      + ", which a batch k times larger pays once per k times the samples ((k-1)/k of it saved)"
                      + ("; steps_per_execution saves the Python part and part of the call's"
                         if account.graph_runtime == "tensorflow" else "; so does lax.scan over k batches"),
                metrics={"slice": "dispatch", "graph_calls_per_step": calls, "kernel_share": kernels,
                         "overhead_share": claimed, "worst_rank": label, "share_of_steps": claimed,
                         "ranks": len(accounts(ev)), **({"small_steps": True} if small else {})})


def _micro_batch_finding(ev: Evidence, label: str, account: TraceAccount, n: int, overhead: float) -> Finding:
    """Gradient accumulation over small micro-batches: every micro-batch pays the model's fixed costs again
    (its weights read, each operator called, Python between them), whatever its size."""
    work = account.every_step_share("compute") + account.every_step_share("dispatch") + \
        account.every_step_share("no_operator")
    saved = work * (n - 1) / n
    evidence = [f"{n} backward passes per optimizer step{_rank_text(ev, label)}: gradient accumulation over {n} "
                f"micro-batches, {account.operator_calls_per_step or 0:,.0f} operator calls a step",
                f"{pct(overhead)} of each step is per-call overhead (Python between operators and dispatch): the "
                "micro-batches are small for the work each call does",
                f"one batch of the same samples would pay the model's fixed costs once instead of {n} times"]
    fix = (f"Use larger micro-batches and fewer accumulation steps for the same samples per update (up to one batch "
           f"instead of {n}), as far as memory allows; a larger batch amortises the weights read, the operator calls "
           "and the Python of each forward and backward pass.")
    return make(ev, "operator-overhead", 0.0, evidence, fix, loop_share=saved, sections=[_account_section(ev)],
                heading=f"Each step runs {n} small micro-batches",
                basis=f"an upper bound: if a micro-batch's cost does not grow with its size (small micro-batches), one "
                      f"batch instead of {n} saves {n - 1}/{n} of the step's work",
                metrics={"slice": "dispatch", "micro_batches": n, "overhead_share": overhead, "worst_rank": label,
                         "share_of_steps": saved, "ranks": len(accounts(ev))})


COMPILE_FIX = {
    "tensorflow": "Give tf.function one trace: pass values that change between steps (a learning rate, a step "
                  "number, a flag) as tensors (tf.constant, tf.Variable), not Python numbers, which tf.function "
                  "traces and instantiates a new graph for each; fix the shapes with input_signature (None for a "
                  "dimension that varies) or reduce_retracing=True; pad the last partial batch (drop_remainder=True).",
    "jax": "Keep what jax.jit sees static: pad inputs to one shape (masking the padding) or a few fixed lengths "
           "(bucketing; the last partial batch too), and static_argnums only for values that rarely change.",
    "torch": "Keep what torch.compile sees static: pad inputs to one shape or a few fixed lengths (the last partial "
             "batch too), mark truly dynamic dimensions (dynamic=True, torch._dynamo.mark_dynamic) and pass "
             "changing Python numbers as tensors.",
    None: "Keep what the compiled step sees static: pad inputs to one shape (masking the padding) or a few fixed "
          "lengths (bucketing; the last partial batch too); jax.jit: static shapes, and static_argnums only for "
          "values that rarely change; torch.compile: mark truly dynamic dimensions (dynamic=True, "
          "torch._dynamo.mark_dynamic) and pass changing Python numbers as tensors; tf.function: tensors, not "
          "Python numbers, as arguments, and an input_signature.",
}
COMPILERS = (("tensorflow", ("tf.function", "__inference_", "Grappler")),
             ("jax", ("backend_compile", "jit_", "pjit", "XlaCompile")),
             ("torch", ("dynamo", "inductor", "aot", "CompiledFunction", "torch.compile")))


def _compiler(account: TraceAccount) -> str | None:
    """The framework that compiled most of the time, by what the trace names (None: not told)."""
    totals: dict[str, float] = {}
    for name, ms in account.compilation_named.items():
        for framework, marks in COMPILERS:
            if any(mark.lower() in name.lower() for mark in marks):
                totals[framework] = totals.get(framework, 0.0) + ms
                break
    return max(totals, key=lambda framework: totals[framework]) if totals else None


@detector("compilation")
def compilation(ev: Evidence, found: dict) -> Finding | None:
    share, worst, worst_share = over_ranks(ev, "compilation", whole=True)
    if share < WASTE:
        return None
    account = accounts(ev)[worst]
    steps = sum(1 for v in account.per_step_ms["compilation"] if v > 0)
    if steps <= 1:
        return None  # one compilation is the first one: static shapes would compile it too
    saved = share * (steps - 1) / steps  # static shapes still compile once
    named = ", ".join(f"{name} {ms / 1000:.1f} s" for name, ms in list(account.compilation_named.items())[:3])
    evidence = [f"{pct(share)} of the profiled steps' time is compilation{_rank_text(ev, worst)}, in {steps} of "
                f"{account.steps} steps: the framework compiled again inside the training loop (new input shapes "
                "or dtypes, or Python values the compiled function depends on)"
                + (f"; what the trace names: {named}" if named else "")]
    fix = COMPILE_FIX[_compiler(account)]
    return make(ev, "compilation", 0.0, evidence, fix, loop_share=saved, sections=[_account_section(ev)],
                basis=f"the compilation time inside the profiled steps less one compilation (of {steps}): with what "
                      "the compiled step sees kept static it is paid once",
                metrics={**_metrics(ev, "compilation", share, worst, worst_share), "steps_compiling": steps})


@detector("allocator-churn")
def allocator_churn(ev: Evidence, found: dict) -> Finding | None:
    share, worst, worst_share = over_ranks(ev, "memory_management", whole=True)
    if share < WASTE:
        return None
    account = accounts(ev)[worst]
    if account.allocations_named:  # the host's: tensors the script makes every step (the account's ALLOC_OPS)
        if made_and_kept(ev):
            return None  # kept, not made and freed: the memory-leak finding's (keep fewer), not a buffer to reuse
        return _tensors_made_finding(ev, account, share, worst, worst_share)
    evidence = [f"{pct(share)} of the profiled steps' time is in device memory allocation and freeing "
                f"(cudaMalloc/cudaFree and the GPU idle they cause){_rank_text(ev, worst)}: "
                f"{_per_step_text(account, 'memory_management')} every step"]
    fix = ("Keep memory in PyTorch's caching allocator: no torch.cuda.empty_cache() in the loop, stable tensor shapes "
           "(cached blocks are reused by size), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and buffers "
           "allocated once outside the loop.")
    return make(ev, "allocator-churn", 0.0, evidence, fix, loop_share=share, sections=[_account_section(ev)],
                basis="the allocator calls and the GPU idle they caused inside the profiled steps",
                metrics=_metrics(ev, "memory_management", share, worst, worst_share))


def made_and_kept(ev: Evidence) -> bool:
    """Whether the tensors the script makes every step are kept across steps: a rank's memory grows every step
    (memory events in the trace) and what it keeps was made by one of those operators — a leak, whose finding's fix
    (keep less) is the one, not a buffer made once."""
    for label, account in accounts(ev).items():
        rank = ev.trace_ranks.get(label)
        for device in rank.memory if rank is not None else ():
            if device.verdict == "growing" and any(h.operator in account.allocations_named for h in device.kept):
                return True
    return False


def _tensors_made_finding(ev: Evidence, account: TraceAccount, share: float, worst: str | None,
                          worst_share: float) -> Finding:
    """Tensors the script creates in every step outside the model (``aten::zeros`` / ``empty`` / ``full`` /
    ``*_like``, the account's ``allocations_named``): each pays the allocator (a fresh mapping above a few MB), the
    page faults of its new memory and its fill — what a buffer made once before the loop and reused does not."""
    top = max(account.allocations_named, key=account.allocations_named.get)
    named = ", ".join(f"{name} {ms:.0f} ms" for name, ms in list(account.allocations_named.items())[:3]
                      if ms >= 1.0 or name == top)
    evidence = [f"{pct(share)} of the profiled steps' time{_rank_text(ev, worst)} is tensors the script creates in "
                f"every step, outside the model's forward and backward operators, the optimizer and the DataLoader "
                f"({named}, over {account.steps} steps): {_per_step_text(account, 'memory_management')} every step",
                "a new tensor costs its allocation, the page faults of its fresh memory (a large one is a new mapping "
                "every time) and its fill; a layer's own buffers are inside its operator"]
    fix = (f"Allocate it once: the {top} in every step makes a new tensor outside the model (a scratch buffer, a mask, "
           "a gathered batch). Create it before the loop (or as a module buffer, register_buffer) and reuse it: "
           "write into it with copy_() or an out= argument, and zero it only if the step needs zeros; "
           "with_stack=True names the line.")
    return make(ev, "allocator-churn", 0.0, evidence, fix, loop_share=share, sections=[_account_section(ev)],
                heading=f"Every step makes new tensors it could reuse ({top})",
                basis="the tensors' creation in the profiled steps (allocation, page faults, fill), all of it: a "
                      "buffer made once pays it once",
                metrics={**_metrics(ev, "memory_management", share, worst, worst_share),
                         "allocations_named_ms": dict(account.allocations_named)})


@detector("debug-mode")
def debug_mode(ev: Evidence, found: dict) -> Finding | None:
    share, worst, worst_share = over_ranks(ev, "debug_checks", whole=True)
    if share < WASTE:
        return None
    account = accounts(ev)[worst]
    evidence = [f"{pct(share)} of the profiled steps' time is autograd's anomaly detection{_rank_text(ev, worst)}: "
                f"{_per_step_text(account, 'debug_checks')}",
                "the trace shows its signature: after every backward function its outputs are checked for NaN "
                "(aten::isnan and aten::_is_any_true inside autograd::engine::evaluate_function), and every forward "
                "operator that records a backward node first stores the Python stack that created it (aten::t "
                "takes far longer in the forward pass than in the backward pass)"]
    fix = ("Turn anomaly detection off for training: remove torch.autograd.set_detect_anomaly(True) (or the "
           "torch.autograd.detect_anomaly() context) from the training script; it is a debugging aid that finds "
           "where a NaN comes from, worth its cost in a short run reproducing one.")
    return make(ev, "debug-mode", 0.0, evidence, fix, loop_share=share, sections=[_account_section(ev)],
                basis="the NaN checks inside the profiled steps' backward functions, plus each backward node's stack "
                      "capture in the forward pass (the forward aten::t's time beyond the backward's, per node)",
                metrics=_metrics(ev, "debug_checks", share, worst, worst_share))


RESTARTING = 0.8  # a new DataLoader iterator in at least this share of the profiled steps (and 3 of them)


@detector("loader-restart")
def loader_restart(ev: Evidence, found: dict) -> Finding | None:
    restarting = {label: a for label, a in accounts(ev).items()
                  if len(a.loader_starts_per_step) >= 3 and sum(a.loader_starts_per_step)
                  >= RESTARTING * len(a.loader_starts_per_step)}
    if not restarting:
        return None
    cost = {label: a.every_step_share("data_wait") + a.every_step_share("no_operator") for label, a in restarting.items()}
    share, worst = mean_and_worst(ev, cost)
    if share < WASTE:
        return None
    account = restarting[worst]
    starts = int(sum(account.loader_starts_per_step))
    rank = ev.trace_ranks.get(worst)
    iterator = rank.dataloader.iterator if rank is not None and rank.dataloader is not None else None
    evidence = [f"in {starts} of {account.steps} profiled steps{_rank_text(ev, worst)} a new DataLoader iterator was "
                "created before the step took its batch (the trace shows its seed being drawn, aten::random_ outside "
                "any operator, as iter(loader) does)"
                + (f"; {iterator} starts its worker processes each time and stops them when it is dropped"
                   if iterator and "MultiProcessing" in iterator else ""),
                f"{_per_step_text(account, 'data_wait')} waits for the new iterator's first batch, "
                f"{_per_step_text(account, 'no_operator')} runs under no operator around it (creating and stopping "
                "the iterator)"]
    fix = ("Create the DataLoader's iterator once per epoch — for batch in loader:, or it = iter(loader) outside the "
           "step — instead of next(iter(loader)) (or a new DataLoader) in every step; persistent_workers=True keeps "
           "the workers from one epoch to the next too.")
    return make(ev, "loader-restart", 0.0, evidence, fix, loop_share=share,
                sections=[SectionId.DATALOADING_ANALYSIS, _account_section(ev)],
                basis="every step's wait for data and time under no operator (the median step's, times the steps): "
                      "with one iterator an epoch the workers keep batches ready while the step computes",
                metrics={"slice": "data_wait", "share_of_steps": share, "worst_rank": worst,
                         "worst_rank_share": cost[worst], "ranks": len(accounts(ev)), "iterator_starts": starts})


# What float32 saves of a float64 operator's time on a CPU: half (twice the SIMD lanes, half the bytes moved); a
# third of the time is left where float64 ran torch's reference kernel (im2col + GEMM) and float32 gets oneDNN's
# direct one — 3.0x measured on this project's VM in the planted float64 run's CPU time per step, 9.4x for a lone
# 16-to-32-channel convolution: the lower end is taken.
FLOAT32_KEEPS = 0.5
FLOAT32_KEEPS_FALLBACK = 1.0 / 3.0


@detector("float64")
def float64(ev: Evidence, found: dict) -> Finding | None:
    """Compute in float64: a refinement of the ``compute`` slice by the operators' input types (record_shapes=True).
    Not waste the account can see as a slice — the operators do the model's arithmetic — but twice or more the
    arithmetic float32 needs."""
    saved: dict[str, float] = {}
    for label, account in accounts(ev).items():
        wide, slow = sum(account.float64_per_step_ms), sum(account.float64_fallback_per_step_ms)
        if wide > 0 and account.base_ms > 0:
            saved[label] = ((wide - slow) * (1 - FLOAT32_KEEPS) + slow * (1 - FLOAT32_KEEPS_FALLBACK)) / account.base_ms
    if not saved:
        return None
    share, worst = mean_and_worst(ev, saved)
    if share < WASTE:
        return None
    account = accounts(ev)[worst]
    wide, slow = sum(account.float64_per_step_ms), sum(account.float64_fallback_per_step_ms)
    evidence = [f"{pct(wide / account.base_ms)} of the profiled steps' time{_rank_text(ev, worst)} is operators "
                f"computing in float64 (their recorded input type is double): {wide / max(account.steps, 1):.1f} ms of "
                f"a median {_median_step_ms(account):.1f} ms step",
                f"{pct(slow / account.base_ms)} of the steps' time in torch's reference kernels (aten::_slow_conv2d…, "
                "aten::thnn_conv…), which float64 falls back to where oneDNN has no float64 kernel; float32 runs the "
                "optimised ones" if slow > 0 else ""]
    fix = ("Train in float32: model.float() and float32 inputs (data from numpy is float64 unless converted: "
           ".float(), or astype(np.float32) in the Dataset); on a CPU with bfloat16 support, torch.autocast('cpu', "
           "dtype=torch.bfloat16) halves it again. Keep float64 only where the numerics need it (a reduction, a "
           "metric).")
    return make(ev, "float64", 0.0, evidence, fix, loop_share=share, sections=[SectionId.GPU_KERNELS_OPERATORS],
                heading=f"{pct(wide / account.base_ms)} of each step computes in float64",
                basis="float32 halves a float64 operator's time (twice the SIMD lanes, half the memory traffic) and "
                      "leaves a third of a reference kernel's (oneDNN's float32 kernel instead: 3-9x measured on "
                      "CPU); the float64 operators' time in the profiled steps",
                metrics={"slice": "compute", "share_of_steps": share, "worst_rank": worst,
                         "worst_rank_share": saved[worst], "ranks": len(accounts(ev)),
                         "float64_share": wide / account.base_ms, "fallback_share": slow / account.base_ms})


# the last third of the steps copies at least this many times what the first third does ... A tensor grown by one
# batch a step copies in proportion to the steps before it: over a window of n steps from step s the thirds' ratio is
# (s + 5n/6) / (s + n/6), 2 for a window from step n/2 but 1.3 from step 2n; the window sits anywhere in the loop
# (history-cat, its 30 steps from step 45: 1.44), so a steady rise, not a doubling, is asked
GROWS = 1.3
GROWS_FIT = 0.8  # ... and the copies follow the step's position this closely (Pearson r): they grow every step


@dataclass(frozen=True)
class SeriesWaste:
    """A per-step series' share of the steps' time: the mean over the ranks, the worst rank, its own share."""
    share: float
    worst: str
    worst_share: float
    account: TraceAccount


def series_waste(ev: Evidence, series: Callable[[TraceAccount], tuple[float, ...]]) -> SeriesWaste | None:
    """Each rank's per-step series (ms) summed as a share of its profiled steps' time (a rank whose series does not
    cover every step, or without steps' time, left out); None unless the mean over the ranks reaches ``WASTE``."""
    shares: dict[str, float] = {}
    for label, account in accounts(ev).items():
        per_step = series(account)
        if len(per_step) == account.steps and account.base_ms > 0:
            shares[label] = sum(per_step) / account.base_ms
    if not shares:
        return None
    share, worst = mean_and_worst(ev, shares)
    return SeriesWaste(share, worst, shares[worst], accounts(ev)[worst]) if share >= WASTE else None


def copies_grow(per_step: tuple[float, ...]) -> bool:
    """Whether the copies grow steadily from step to step (a tensor concatenated onto each step: every step copies
    all the steps before it), not in a few steps: the last third's median at least ``GROWS`` times the first
    third's (a window late in the loop sees a smaller rise than one at its start), and the copies correlated with
    the step's position at ``GROWS_FIT`` or more."""
    third = len(per_step) // 3
    if third < 3 or len(set(per_step)) < 2:
        return False
    first, last = _median(per_step[:third]), _median(per_step[-third:])
    fit = statistics.correlation(list(range(len(per_step))), list(per_step))
    return last >= GROWS * max(first, 1e-9) and fit >= GROWS_FIT


@detector("tensor-copies")
def tensor_copies(ev: Evidence, found: dict) -> Finding | None:
    """Data-moving operators the script runs in every step outside the model's passes (``copies_per_step_ms``: a
    refinement of ``compute``): copies no computation needs — a snapshot of the weights, a history grown with
    torch.cat. Time the operators spend, so the account calls it compute; the fix follows from its shape: copies
    that grow with every step are a tensor concatenated onto (all of it copied each time), steady ones a copy that
    every N steps, or none, would do."""
    # all of them, in every step: a copy slower in a few steps is still the copy the fix removes (the slow steps'
    # finding leaves the copies' excess in its steps to this one: one stall, one finding)
    waste = series_waste(ev, lambda account: account.copies_per_step_ms)
    if waste is None:
        return None
    share, worst, account = waste.share, waste.worst, waste.account
    copies = account.copies_per_step_ms
    grows = copies_grow(copies)
    top = max(account.copies_named, key=account.copies_named.get) if account.copies_named else "copy operators"
    named = ", ".join(f"{name} {ms:.0f} ms" for name, ms in list(account.copies_named.items())[:3])
    evidence = [f"{pct(sum(copies) / account.base_ms)} of the profiled steps' time{_rank_text(ev, worst)} is operators "
                f"that only copy data, run by the script itself outside the model's forward and backward operators, "
                f"the optimizer and the DataLoader ({named}, over {account.steps} steps)",
                "a clean training loop copies no tensor of its own each step: the model's and the optimizer's "
                "copies are inside their operators"]
    third = len(copies) // 3
    if grows:
        evidence.insert(1, f"the copies grow with every step: {_median(copies[:third]):.1f} ms a step in the first "
                           f"third of the profiled steps, {_median(copies[-third:]):.1f} ms in the last — each step "
                           "copies everything kept before it, so the steps get slower as the run goes on (a longer "
                           "run pays more than this share: the cost grows with the square of the steps)")
        heading = f"Each step copies more than the last: a tensor grows every step ({top})"
        fix = (f"Stop growing a tensor by concatenation in every step ({top}: kept = torch.cat([kept, new]) copies all "
               "of kept each time): append each step's tensor to a Python list and concatenate once when it is needed "
               "(torch.cat(list) at the end), or preallocate the whole tensor and write each step's rows into it. "
               "Keep only what is needed (detached, or reduced to the statistic you will use).")
        basis = ("the copies' time in the profiled steps, all of it (it grows with the steps); one concatenation "
                 "at the end copies the rows once")
    else:
        evidence.insert(1, f"every step pays it: {_median(copies):.1f} ms of a median {_median_step_ms(account):.1f} ms "
                           f"step, {max(copies):.0f} ms in the slowest")
        heading = f"Every step copies tensors no computation needs ({top})"
        fix = (f"Copy less often: the {top} in every step copies tensors outside the model (a snapshot of the weights "
               "or the optimizer's state to roll back to, a .clone() / .contiguous() / .to() of data that is already "
               "usable). Snapshot every N steps or when a metric improves, keep a reference instead of a copy where "
               "nothing writes to it, and convert data once in the Dataset; with_stack=True names the lines.")
        basis = "the copies' time in the profiled steps, all of it: every copy the fix leaves out is saved"
    return make(ev, "tensor-copies", 0.0, evidence, fix, loop_share=share,
                sections=[SectionId.GPU_KERNELS_OPERATORS], heading=heading, basis=basis,
                metrics={"slice": "compute", "share_of_steps": share, "worst_rank": worst,
                         "worst_rank_share": waste.worst_share, "ranks": len(accounts(ev)), "grows": grows,
                         "copies_named_ms": dict(account.copies_named)})


@detector("unused-gradients")
def unused_gradients(ev: Evidence, found: dict) -> Finding | None:
    """Parameters that require grad but that no optimizer holds (a backbone meant to be frozen): each step's backward
    runs through them and adds their gradients into ones nothing resets or reads (``unused_gradients_per_step``). A
    refinement of ``compute``: the backward after the last gradient an optimizer reset is what freezing them saves
    (a lower bound: their nodes that run before it are not counted)."""
    waste = series_waste(ev, lambda account: account.unused_backward_per_step_ms)
    if waste is None:
        return None
    share, worst, account = waste.share, waste.worst, waste.account
    count = _median(account.unused_gradients_per_step)
    backward = account.unused_backward_per_step_ms
    evidence = [f"{count:.0f} parameter tensors{_rank_text(ev, worst)} get a gradient in every step that is added to "
                "the one they already hold (autograd's AccumulateGrad runs aten::add_), with one backward pass and one "
                "optimizer step a step: no optimizer's zero_grad resets those gradients, so no optimizer updates "
                "those parameters — they require grad, but nothing trains them",
                f"the backward after the last gradient an optimizer uses takes {pct(share)} of the profiled steps' "
                f"time: {_median(backward):.1f} ms of a median {_median_step_ms(account):.1f} ms step, run only to "
                "compute those gradients"]
    fix = ("Freeze what is not trained: parameters the optimizer does not hold should not require grad — "
           "module.requires_grad_(False) on a frozen backbone (or its forward under torch.no_grad()) — so the backward "
           "stops at the first trained layer and no gradient accumulates; if they are meant to train, give them to "
           "the optimizer.")
    return make(ev, "unused-gradients", 0.0, evidence, fix, loop_share=share,
                sections=[SectionId.GPU_KERNELS_OPERATORS],
                heading=f"The backward computes gradients no optimizer uses ({count:.0f} parameter tensors)",
                basis="the backward's time after the last gradient an optimizer resets, in the profiled steps: what "
                      "freezing those parameters saves (their nodes that ran earlier not counted)",
                metrics={"slice": "compute", "share_of_steps": share, "worst_rank": worst,
                         "worst_rank_share": waste.worst_share, "ranks": len(accounts(ev)),
                         "unused_gradients_per_step": count})


LONG_GAP = 5.0  # a gap between steps this many times the median gap is a pause (evaluation, a checkpoint)


@detector("between-steps")
def between_steps(ev: Evidence, found: dict) -> Finding | None:
    """The loop's time outside every step: work after each step that the step annotation does not cover (a
    framework's per-batch callbacks, logging after prof.step()), or pauses between steps (evaluation, checkpoints)."""
    shares = {}
    for label, a in accounts(ev).items():
        gaps = sum(a.between_steps_ms)
        if gaps > 0 and a.base_ms > 0:
            shares[label] = gaps / (a.base_ms + gaps)  # of the loop's time in the window: the steps and between them
    if not shares:
        return None
    share, worst = mean_and_worst(ev, shares)
    if share < WASTE:
        return None
    gaps = accounts(ev)[worst].between_steps_ms
    median = _median(gaps)
    long = [(i, g) for i, g in enumerate(gaps) if g > LONG_GAP * max(median, 1e-9)]
    every = median * len(gaps) / sum(gaps)
    text = (f"{pct(shares[worst])} of the profiled loop{_rank_text(ev, worst)} lies between its steps, outside every "
            f"step the profiler recorded: {sum(gaps) / 1000:.2f} s over {len(gaps)} gaps, a median {median:.1f} ms "
            "after each step")
    if long and every < 0.5:
        text += (f"; most of it in {len(long)} long pause{'s' if len(long) != 1 else ''} (after step "
                 + ", ".join(str(i + 1) for i, _ in long[:5]) + (", …" if len(long) > 5 else "") + ")")
        fix = ("The pauses between steps are work the loop does every so often outside its steps (evaluation, "
               "checkpoints, logging a summary): do it less often, or off the training loop's critical path "
               "(a background thread or process, an asynchronous checkpoint).")
    else:
        fix = ("Work runs after every step, outside what the profiler counts as the step: a framework's per-batch "
               "callbacks (Keras on_train_batch_end: move it to on_epoch_end or every N batches), metrics or logging "
               "after prof.step() (torch: call prof.step() last in the iteration so the profiler sees it inside the "
               "step); do it every N steps or in a background thread.")
    evidence = [text, "the trace names little there: it is Python between the steps (the script's own or a "
                      "framework's callbacks)"]
    return make(ev, "between-steps", 0.0, evidence, fix, loop_share=share, sections=[_account_section(ev)],
                basis="the time between the profiled steps, as a share of the loop's time in the window (the steps "
                      "and the gaps between them)",
                metrics={"slice": "between_steps", "share_of_steps": share, "worst_rank": worst,
                         "worst_rank_share": shares[worst], "ranks": len(accounts(ev)), "gaps": len(gaps),
                         "median_gap_ms": median})


# Causes that judge only what every step pays of their slice: what some steps pay beyond it is still open.
EVERY_STEP_CLAIMS = frozenset(("host-overhead", "operator-overhead", "kernel-launch-bound"))


@dataclass(frozen=True)
class Intermittent:
    """A waste slice paid in some steps only, beyond what every step pays and what the slow-steps finding counts."""

    slice: str
    share: float  # of the profiled steps' time
    rank: str
    positions: tuple[int, ...]  # the steps (positions in the rank's sequence) that pay it
    excess_ms: float
    period: int | None


def intermittent(ev: Evidence, found: dict) -> Intermittent | None:
    """The largest waste slice that only some steps pay, when nothing else accounts for it: per rank, each step's
    excess of the slice over its median step, the steps that open the trace in an unbroken run left out (start-up
    work every run pays), less what the slow-steps finding already counts."""
    best: Intermittent | None = None
    for label, account in accounts(ev).items():
        for name in CLAIMS:  # every waste slice
            claimed = set(CLAIMS.get(name, ())) - EVERY_STEP_CLAIMS
            if any(c in found for c in claimed) or _judged_by_a_cause(ev, name):
                continue
            paying, excess = steps_paying(account, name)
            total = sum(excess[i] for i in paying)
            share = total / account.base_ms if account.base_ms > 0 else 0.0
            if paying and (best is None or share > best.share):
                found_period = find_period(paying, 0, account.steps - 1, [excess[i] for i in paying])
                best = Intermittent(name, share, label, tuple(paying), total,
                                    found_period[0] if found_period else None)
    if best is None:
        return None
    # the slow steps' finding counts its steps' excess (a share of the steps, as this one; a SageMaker process's slow
    # steps are counted in seconds over all its steps, which its account holds)
    outliers = found["step-outliers"] if "step-outliers" in found else None
    counted = 0.0
    if outliers is not None and outliers.loop_share is not None:
        counted = outliers.loop_share
    elif outliers is not None and accounts(ev)[best.rank].step_ms > 0:
        counted = outliers.seconds * 1000.0 / accounts(ev)[best.rank].step_ms
    left = best.share - counted
    return Intermittent(best.slice, left, best.rank, best.positions, best.excess_ms, best.period) if left >= WASTE else None


@detector("step-waste")
def step_waste(ev: Evidence, found: dict) -> Finding | None:
    """Waste slices that no named cause claimed: the largest names the finding, all of them count; and the largest
    waste paid in some steps only, beyond the slow steps already found."""
    open_slices, unpriced = {}, {}
    for name in GENERIC_FIX:
        claimers = [cause for cause in CLAIMS.get(name, ()) if cause in found]
        if _judged_by_a_cause(ev, name):
            continue
        if claimers:
            left = _left_unpriced(ev, found, name, claimers)
            if left is not None:
                open_slices[name], unpriced[name] = left, sum(_priced(found[cause]) for cause in claimers)
            continue
        share, worst, worst_share = every_step(ev, name)
        if share > 0:
            open_slices[name] = (share, worst, worst_share)
    some = intermittent(ev, found)
    big = {name: v for name, v in open_slices.items() if v[0] >= WASTE}
    if not big and some is not None:
        return _intermittent_finding(ev, some)
    if not big:
        total = sum(v[0] for v in open_slices.values())
        if total < TOTAL_WASTE:
            return None
        big = open_slices
    ordered = sorted(big, key=lambda name: -big[name][0])
    top = ordered[0]
    share = sum(big[name][0] for name in ordered)
    evidence = [f"{pct(big[name][0])} of every profiled step is {SLICE_TITLES[name]}"
                f"{_rank_text(ev, big[name][1])}" + _waited_in(ev, name, big[name][1])
                + (_unpriced_text(ev, unpriced[name], big[name][1]) if name in unpriced else "") for name in ordered]
    evidence.append("below what the named causes look for (e.g. a quarter of the step for the input pipeline), but "
                    f"every step pays it: the step-time account in {_account_place(ev)} shows where it falls")
    fixes = [UNPRICED_FIX if name in unpriced else _fix(ev, name) for name in ordered[:2]]
    metrics: dict = {"slices": {name: big[name][0] for name in ordered}}
    if unpriced:
        metrics["priced_by_claims"] = {name: unpriced[name] for name in ordered if name in unpriced}
    if some is not None:  # and what some steps pay beyond it: the same finding, counted once each
        evidence.insert(len(ordered), _intermittent_text(ev, some))
        share += some.share
        metrics.update(some_steps=list(some.positions), some_steps_share=some.share, period=some.period)
        if some.slice not in ordered[:2]:
            fixes.append(_intermittent_fix(some, ev.trace_ranks.get(some.rank), ev.job_cpu is not None))
    return make(ev, "step-waste", 0.0, evidence, " ".join(fixes), loop_share=share,
                sections=[_account_section(ev)],
                heading=f"{pct(share)} of each step is {SLICE_TITLES[top]}" + (" and more" if len(ordered) > 1
                                                                               or some is not None else ""),
                basis="the time every profiled step spends in these slices (the median step's, times the steps)"
                      + ("; and what some steps pay beyond it" if some is not None else ""),
                metrics=metrics)


def _priced(finding: Finding) -> float:
    """What of the steps' time a claiming finding priced (a GPU cause's share is of the step time), and set aside as
    a one-off (``Finding.set_aside``)."""
    return finding.share + finding.set_aside


def _left_unpriced(ev: Evidence, found: dict, name: str,
                   claimers: list[str]) -> tuple[float, str | None, float] | None:
    """The every-step share of a claimed slice its claiming causes left unpriced, where every one of them prices in
    part (``PRICED_IN_PART``) and the rest is a waste of its own (``WASTE``); None otherwise (the slice is claimed)."""
    if any(cause not in PRICED_IN_PART.get(name, ()) for cause in claimers):
        return None
    priced = sum(_priced(found[cause]) for cause in claimers)
    share, worst, worst_share = every_step(ev, name)
    rest = share - priced
    return (rest, worst, max(worst_share - priced, 0.0)) if rest >= WASTE else None


def _unpriced_text(ev: Evidence, priced: float, label: str | None) -> str:
    """What the claiming cause priced of the slice, and what the trace shows of the rest: the rank's longest host
    operators."""
    rank = ev.trace_ranks.get(label) if label is not None else None
    top = [row for row in (rank.cpu_ops.top if rank is not None else ()) if row.total_ms is not None][:3]
    named = ", ".join(f"{row.name} {row.total_ms:.2f} ms" for row in top if row.total_ms is not None)
    return (f", beyond the {pct(priced)} the launch finding prices: the host was inside operators, not launching, "
            "while the GPU idled" + (f" (its longest operators: {named})" if named else ""))


def _intermittent_text(ev: Evidence, some: Intermittent) -> str:
    account = accounts(ev)[some.rank]
    rank = ev.trace_ranks.get(some.rank)
    if rank is not None:
        rank_steps = rank.step_list
        numbers = [rank_steps[i].step if i < len(rank_steps) and rank_steps[i].step is not None else i
                   for i in some.positions]
        shown = ", ".join(f"{n:.0f}" for n in numbers[:5])
    else:  # a SageMaker job's process: smdebug's step numbers
        listed = ev.framework.steps.get(some.rank, ())
        shown = ", ".join(listed[i] if i < len(listed) else str(i) for i in some.positions[:5])
    shown += " …" if len(some.positions) > 5 else ""
    when = f"every {some.period} steps" if some.period else f"in {len(some.positions)} of {account.steps} steps"
    return (f"{pct(some.share)} of the profiled steps' time is {SLICE_TITLES[some.slice]} paid {when}"
            f"{_rank_text(ev, some.rank)} (steps {shown}), beyond what every step pays"
            + _waited_in(ev, some.slice, some.rank))


def _intermittent_fix(some: Intermittent, rank, shared_host: bool) -> str:
    story = SlowStepStory(some.slice, {some.slice: some.excess_ms}, 0.0, len(some.positions), some.positions)
    loader = rank.dataloader if rank is not None else None
    return fix_for(story, loader.workers if loader is not None else None, some.period, shared_host)


def _intermittent_finding(ev: Evidence, some: Intermittent) -> Finding:
    evidence = [_intermittent_text(ev, some),
                "those steps are not slow enough to be outliers each, but together they cost that much: the step-time "
                f"account in {_account_place(ev)} shows them step by step"]
    return make(ev, "step-waste", 0.0, evidence, _intermittent_fix(some, ev.trace_ranks.get(some.rank), ev.job_cpu is not None),
                loop_share=some.share, sections=[_account_section(ev)],
                heading=f"{pct(some.share)} of the steps' time is {SLICE_TITLES[some.slice]} "
                        + (f"every {some.period} steps" if some.period else "in some steps"),
                basis="the slice's time in the steps that pay it, over what the median step pays (the slow steps "
                      "already found left out)",
                metrics={"slices": {some.slice: some.share}, "some_steps": list(some.positions), "period": some.period})


TF_DATA = ("Overlap input with compute in tf.data: .prefetch(tf.data.AUTOTUNE) at the end of the pipeline, "
           "num_parallel_calls=tf.data.AUTOTUNE in map(), .cache() after the expensive steps.")
PYTHON_ITERATOR = ("Load the next batches while the step runs: a background thread or process that prefetches (e.g. a "
                   "queue a few batches deep, or a loader with workers such as grain or tf.data), then device_put "
                   "ahead of the step.")


def _waited_in(ev: Evidence, name: str, label: str | None) -> str:
    if name != "data_wait" or label is None:
        return ""
    account = accounts(ev)[label]
    named = account.data_wait_named
    calls = account.input_python_calls_per_step
    return ((f" (in {', '.join(list(named)[:2])})" if named else "")
            + (f"; the pipeline runs {calls:.0f} Python function call{'s' if calls >= 2 else ''} a step on its "
               "threads (tf.py_function / tf.numpy_function: EagerPyFunc, PyFunc), one at a time under the GIL"
               if calls >= 1 else ""))


def _fix(ev: Evidence, name: str) -> str:
    """A slice's general remedy, in the words of the framework the trace came from where it differs."""
    if name == "data_wait":
        names = " ".join(n for a in accounts(ev).values() for n in a.data_wait_named)
        if "IteratorGetNext" in names or "Iterator::" in names:
            python = [a.input_pipeline for a in accounts(ev).values() if a.input_python_calls_per_step >= 1]
            return pipeline_python_fix(python) if python else TF_DATA
        if "DataLoader" not in names and "dataloader" not in names.lower():
            return PYTHON_ITERATOR
    if name == "dispatch" and any((r.gpu_analysis.launch.graph_launched_share or 0) >= REPLAYED
                                  for r in ev.trace_ranks.values()):
        return GRAPHS_REPLAYED
    return GENERIC_FIX[name]


LAUNCH_GAPS = 0.10  # kernel-launch-bound's share of the GPU's window idle on launches (gpu_causes.LAUNCH_IDLE)


def _judged_by_a_cause(ev: Evidence, name: str) -> bool:
    """Slices a named cause judged even where it found nothing: a DataLoader that already loads in worker
    processes (the input-pipeline cause weighs its wait against the cores' budget: below its threshold the workers
    keep up as well as these cores allow), and a GPU's launch gaps under 10 % of the steps (kernel-launch-bound
    weighs them as HTA does: every GPU loop has some); from 10 % on, a GPU idle while the host issues work is waste
    whether or not the kernels are short (a host too slow to feed it)."""
    if name == "data_wait":
        return any(r.dataloader is not None and r.dataloader.workers for r in ev.trace_ranks.values())
    if name == "memory_management":  # tensors made every step and kept: the memory-leak cause judges them
        return made_and_kept(ev)
    if name == "dispatch":  # below HTA's 10 % every GPU loop has: launch gaps; above it the host holds the GPU back
        return any(a.perspective == "device" and a.every_step_share("dispatch") < LAUNCH_GAPS
                   for a in accounts(ev).values())
    return False


def _metrics(ev: Evidence, name: str, share: float, worst: str | None, worst_share: float) -> dict:
    return {"slice": name, "share_of_steps": share, "worst_rank": worst, "worst_rank_share": worst_share,
            "ranks": len(accounts(ev))}
