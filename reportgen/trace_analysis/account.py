"""The step-time account: every millisecond of every profiled step in exactly one slice.

A detector can only find the causes it was written for; an account cannot miss time. Each step's wall time
is split into exclusive slices that add up to the step, whatever the job did:

* **host perspective** (a rank without GPU work in its steps: CPU training, JAX/TF on CPU): what the
  training process's threads were doing at each instant, the first that applies of
  ``data_wait`` (DataLoader / ``IteratorGetNext`` / JAX's ``next``), ``compilation`` (XLA, torch.compile,
  JIT), ``communication`` (CPU-side collectives), ``host_blocked`` (synchronising with a device),
  ``memory_management`` (allocator calls), operators (with torch's own ranges around the optimizer, whose
  time outside operators is the optimizer's Python) — split into ``dispatch`` (each operator call's fixed
  cost, estimated as the calls times the median time of the metadata-only operators such as ``aten::view``,
  which do no work; an eager operation's time outside its kernel; a ``tf.function`` call's time outside its
  operations' kernels when they are less than it: a step too small for its fixed cost) and ``compute`` —, and
  ``no_operator``: nothing the profiler names, i.e. the
  training script's own Python (metrics, logging, ``.item()`` conversions, file writes). On a CPU rank that is
  exactly the steps' own time in torch's ``key_averages()`` (``ProfilerStep*``'s self CPU time).
* **device perspective** (a rank whose steps launch GPU work): what the GPU was doing — ``compute``
  (compute kernels), ``communication`` (collective kernels with no compute beside them: exposed),
  ``memory_copies`` (memcpy/memset alone, and an idle gap that began while the host was in a copy from pageable
  memory: staging it, or blocked until it landed) — and, while it sat idle, why: an idle
  gap that began while the host was blocked in a synchronising call (``cuda*Synchronize``, a synchronous copy) or an allocator call
  (``cudaMalloc``/``cudaFree`` synchronise too) is wholly ``host_blocked`` / ``memory_management`` (the queue
  ran dry because of it); otherwise the host's state at each instant as above, with the host busy in
  operators or launches counted as ``dispatch`` (the GPU waits for work to be issued).

On the host, the tensors the step's own thread creates outside every other operator, the optimizer's ranges and
the DataLoader (``aten::zeros`` / ``empty`` / ``full`` / ``*_like`` / ``new_*``: a scratch buffer made every step
instead of once) are ``memory_management`` where they reach 5 % of the steps: the allocation, the fresh memory's
page faults and its fill, which a buffer made once does not pay (a layer's own buffers are inside its operator).

On the host, time inside operators that is a debugging aid's rather than the model's is ``debug_checks``:
autograd's anomaly detection, recognised by its NaN checks after every backward function, costs those checks and
the Python stack it records for every backward node in the forward pass (estimated per node from ``aten::t``,
which records one in the forward pass and none in the backward).

Other threads count only with work the step waits for: the primary thread (the one holding the steps) in
any event, other threads in operators that are not the input pipeline's prefetching (tf.data's
``Iterator::…``, the DataLoader's pin-memory thread), which overlaps the step instead of being part of it.

Slices are computed as nested unions of intervals (``covered``): level *k*'s time in a step is what the
union of levels 1..k covers there minus what levels 1..k-1 covered, so the slices never overlap and always
sum to the step. The profiled window's own account — steps, time between steps, before the first and after
the last — comes with it (``window``).
"""

from __future__ import annotations

import re

import numpy as np

from reportgen.intervals import covered, merged
from reportgen.readers import trace_model as k
from reportgen.trace_analysis import regions
from reportgen.trace_analysis.classify import is_communication_kernel
from reportgen.trace_analysis.gpu_analyses import SYNC_CALL, pageable_copies
from reportgen.trace_analysis.gpu_idle import idle_gaps
from reportgen.trace_analysis.kernel_mix import kernel_mix
from reportgen.trace_analysis.columns import ends_of, with_names

# Slice ids in report.json (kineto.json's ``account``), in the page's order; ``compute`` is the useful one.
SLICES = ("compute", "data_wait", "communication", "host_blocked", "memory_management", "memory_copies",
          "compilation", "dispatch", "debug_checks", "no_operator")
USEFUL = ("compute",)
# the level of the GPU idle gaps that began while the host was in a pageable copy: counted in memory_copies (the copy's
# time, ahead of the host's other states), and kept apart as ``gpu.copies_idle_ms`` (that part of the slice is idle)
COPIES_IDLE = "memory_copies:idle"

COMPILE = re.compile(r"compile|jit_compil|XlaCompile|backend_compile|TorchDynamo|dynamo|inductor|"
                     r"CompileFunction|tracing|TraceFunction|graph_building", re.I)
# A tf.function's concrete function run for the first time is instantiated first (its graph optimised and
# partitioned) inside the call, before its kernels run: compilation, as its tracing (graph_building) is.
TF_FUNCTION_CALL = re.compile(r"^EagerLocalExecute: __inference_")
TF_FUNCTION_RUN = frozenset(("EagerKernelExecute", "KernelAndDeviceFunc::Run"))
FIRST_RUN_SETUP = "tf.function first run (instantiation)"
# running already-compiled code is not compiling, nor is checking its guards on each call
NOT_COMPILE = re.compile(r"Torch-Compiled Region|CompiledFunction(Backward)?$|^Compiled Function|Cache Lookup|"
                         r"Call CompiledFxGraph", re.I)
MEMORY_CALL = re.compile(r"^(cuda|hip)(Malloc|Free|HostAlloc|FreeHost|MallocHost|MallocAsync|FreeAsync|"
                         r"MallocManaged)\b|^cuMem(Alloc|Free)|CachingAllocator", re.I)
HIP_SYNC = re.compile(r"^hip(Stream|Device|Event)Synchronize|^hipMemcpy(2D|3D)?$")
# work on other threads that overlaps the step rather than being part of it: the input pipeline's prefetching
PREFETCH = re.compile(r"^Iterator::|PrefetchProduce|ParallelMap|MapAndBatch|pin_memory|InstantiatedCapturedFunction|"
                      r"^(EagerPyFunc|PyFunc|PyFuncStateless)(:|$)", re.I)
# metadata-only operators: they do no arithmetic, so their time is an operator call's fixed cost
METADATA_OPS = frozenset(("aten::view", "aten::as_strided", "aten::t", "aten::transpose", "aten::detach",
                          "aten::result_type", "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::permute",
                          "aten::reshape", "aten::_unsafe_view", "aten::alias", "aten::empty", "aten::lift_fresh",
                          "aten::resolve_conj", "aten::resolve_neg", "detach", "aten::select", "aten::slice"))
OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#")  # torch's annotation of optimizer.step(): part of compute
# torch's own ranges around the optimizer: their time outside operators is the optimizer's Python (the loop over
# the parameters; zero_grad(set_to_none=True) runs no operator at all), framework code like an operator's —
# torch's key_averages() counts it as theirs, not as the step's own time
FRAMEWORK_RANGE = re.compile(r"^Optimizer\.(step|zero_grad)#")
# the loss's node in autograd's backward pass: one per backward pass (micro-batches under gradient accumulation)
LOSS_BACKWARD = re.compile(r"^autograd::engine::evaluate_function: \w*(Loss|CrossEntropy)\w*Backward\d*$")
# Operations run one by one from Python: TensorFlow's eager execution (a primitive operation on its own, not a
# tf.function's graph, whose call is ``EagerLocalExecute: __inference_…``) and JAX outside jax.jit (each
# primitive is a small compiled function: ``PjitFunction(matmul)``; a jitted step is one ``PjitFunction(step)``,
# so only many of them a step count) — and the part of each that runs the operation's kernel.
EAGER_OPS = {"tensorflow": re.compile(r"^EagerLocalExecute: (?!__inference_|__forward_|__backward_)"),
             "jax": re.compile(r"^PjitFunction\(")}
EAGER_KERNELS = frozenset(("KernelAndDeviceFunc::Run", "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice"))
# A tf.function's graph run from the step (``EagerLocalExecute: __inference_…``, TF_FUNCTION_CALL): the executor's
# event for each of its operations is named ``<node>:<OpType>`` (``dense/MatMul:_MklMatMul``) — the kernels, the
# arithmetic that grows with the batch. The rest of the call (the tf.function's Python, the eager runtime, the
# executor scheduling each operation) is paid once per call whatever the batch: a step of tiny operations (a small
# batch) is mostly that (the keras-tiny-batch planted run: 0.3 ms of kernels in a 1.5 ms step).
GRAPH_OP = re.compile(r"^[^\s:]+:[A-Za-z_]\w*$")
# A jitted JAX step (one ``PjitFunction(step)`` from Python, not one per primitive) runs one XLA executable: its HLO
# operations (``dot.1``, ``ynn_fusion.4``, ``wrapped_reduce-window``: lower-case names, an optional ``.N``) are the
# kernels, on the executor's threads inside ``ThunkExecutor::Execute``; the rest of the call (parsing the arguments,
# putting them on the device, launching the executable, the executor's own events) is paid once per call whatever the
# batch — the jax-tiny-batch planted run: 0.56 ms of operations in a 9.4 ms profiled step.
XLA_OP = re.compile(r"^[a-z][\w\-]*(\.\d+)?$")
SMALL_STEP = 1.0  # the rest of the call at least this many times its kernels' time: a step too small for its cost
# A jitted JAX call's rest holds the step's wait for the executor's thread, which a loaded host stretches too: the
# jax-cpu recording (load 15, 7.2 ms of operations a step) waited 1.6x its operations in the median step, 7x in a
# quarter of them; jax-tiny-batch's 0.56 ms of operations 14x in the median step, 5x or more in three quarters. So a
# jitted step is too small for its cost where the rest is 4x its operations, in most steps.
SMALL_JIT_STEP = 4.0
EAGER_STEP_OPS = 20  # a step that runs this many operations eagerly runs its model op by op (not a few constants)
MIN_METADATA_CALLS = 20  # fewer metadata calls than this: no estimate of the fixed cost (no dispatch slice)
# Autograd's anomaly detection (torch.autograd.set_detect_anomaly(True) / detect_anomaly()): every backward
# function's outputs are checked for NaN (these operators, inside the engine's evaluate_function), and every
# forward operator that records a backward node first stores the Python stack that created it (inside the
# operator, so the profiler shows it as the operator's own time). A debugging aid, not training work.
BACKWARD_NODE = re.compile(r"^autograd::engine::evaluate_function: ")
ACCUMULATE_GRAD = re.compile(r"AccumulateGrad$")
ANOMALY_CHECKS = frozenset(("aten::isnan", "aten::_is_any_true", "aten::any"))
ANOMALY_CHECKS_PER_NODE = 0.5  # at least this many checks per backward node a step: the anomaly signature
MIN_BACKWARD_NODES = 10  # per step
# a forward operator that only transposes a weight and records its node (F.linear's aten::t): its time beyond
# the same operator's in the backward pass (no node recorded there) is what recording one node costs
NODE_PROBE = "aten::t"
MIN_PROBE_CALLS = 5
# A DataLoader iterator's creation (``iter(loader)``: ``_BaseDataLoaderIter.__init__`` draws its base seed with
# ``torch.empty((), dtype=torch.int64).random_().item()``) is the only place a training loop runs aten::random_ as
# an operator of its own, outside any other, on the step's thread: one per iterator (two with a shuffling sampler).
ITERATOR_SEED = "aten::random_"
# torch's reference kernels that float64 falls back to on CPU where oneDNN has no float64 kernel (convolutions:
# im2col + GEMM instead of a direct convolution); in float32 the optimised kernel runs instead
FALLBACK_KERNELS = re.compile(r"^aten::(_slow_conv|slow_conv|thnn_conv)")
# A Python function run by the input pipeline on its own threads: TensorFlow's tf.py_function (EagerPyFunc) and
# tf.numpy_function (PyFunc, PyFuncStateless) inside a tf.data map. Python holds the GIL, so such a map runs one
# sample at a time whatever its num_parallel_calls, and competes with the training step's own Python.
PIPELINE_PYTHON = re.compile(r"^(EagerPyFunc|PyFunc|PyFuncStateless)(:|$)")
# tf.data names each iterator of a pipeline by its path from the root (``Iterator::Root::Prefetch::BatchV2::
# FlatMap[0]::Generator`` for ``from_generator(...).batch(...).prefetch(...)``): the longest path is the pipeline's
# shape, which tells its source (a Python generator) and whether it prefetches
PIPELINE_ITERATOR = "Iterator::Root"

# A tensor element read into Python (``aten::item``: ``.item()``, ``float(t)``, ``bool(t)`` through
# ``aten::is_nonzero``), outside the optimizer's ranges (Adam reads each parameter's step count) and autograd's
# backward functions: a tensor's repr in a print or log line reads every element this way, as does iterating a
# tensor element by element; ``.tolist()`` / ``.numpy()`` read a whole tensor in one call.
SCALAR_READ = "aten::item"
# Operators that only move data — concatenate, stack, clone, copy, convert — run by the step's own thread outside
# every other operator, the optimizer's ranges and the DataLoader: not the model's arithmetic (a layer's own copies
# are inside its operator, the optimizer's inside its range) but tensors the script copies each step: a snapshot of
# the weights, a history grown with torch.cat, a needless .contiguous() / .clone() / .to().
COPY_OPS = frozenset(("aten::cat", "aten::concat", "aten::concatenate", "aten::stack", "aten::hstack",
                      "aten::vstack", "aten::clone", "aten::copy_", "aten::contiguous", "aten::to", "aten::_to_copy"))
COPIES_KEPT = 0.05  # the copies' share of the steps' time from which the account keeps them (per step, by name)
# Operators that create a tensor (and fill it with a constant, or not at all) run by the step's own thread outside
# every other operator, the optimizer's ranges and the DataLoader: a buffer the script makes every step rather than
# once (a scratch tensor, a mask, a gathered batch). Above a few MB each is a fresh mapping whose pages fault in as
# the fill touches them; a layer's own buffers are inside its operator (an LSTM's zero state is a few KB).
ALLOC_OPS = frozenset(("aten::zeros", "aten::ones", "aten::full", "aten::empty", "aten::empty_strided",
                       "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like", "aten::new_zeros",
                       "aten::new_ones", "aten::new_full", "aten::new_empty", "aten::new_empty_strided"))
ALLOCS_KEPT = 0.05  # their share of the steps' time from which they are memory_management, not compute
# A parameter's gradient node in the backward pass, and what it does: a first gradient is stored (aten::detach), a
# later one added to the one it holds (aten::add_). In a step with one backward pass and one optimizer step, a
# gradient added to rather than stored was never reset by the optimizer's zero_grad (set to None, or zeroed in place
# with aten::zero_): a parameter that requires grad which no optimizer holds (a backbone meant to be frozen).
ACCUMULATE_NODE = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
SCALAR_READS = 50  # a median step reading this many elements into Python one by one (a metrics line reads a few,
# a heavy one 22: gpu-host-sync; a printed 16x10 tensor 330): kept in the account


def _ids(trace: k.TraceColumns, predicate) -> np.ndarray:
    return np.fromiter((i for i, n in enumerate(trace.names) if predicate(n)), dtype=np.int32)


def _named(trace: k.TraceColumns, predicate) -> np.ndarray:
    return with_names(trace, _ids(trace, predicate))


def _union(trace: k.TraceColumns, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return merged(trace.start_us[mask], ends_of(trace, mask))


def _join(*ivs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return merged(np.concatenate([iv[0] for iv in ivs]), np.concatenate([iv[1] for iv in ivs]))


def _gaps(busy: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the windows [lo, hi) that ``busy`` (disjoint sorted intervals) leaves free, as intervals:
    the complement of ``busy`` intersected with each window, vectorised (a rank has tens of thousands)."""
    s, e = busy
    free_s = np.r_[-np.inf, e]  # the complement of busy on the whole line, as disjoint sorted intervals
    free_e = np.r_[s, np.inf]
    keep = free_e > free_s
    free_s, free_e = free_s[keep], free_e[keep]
    first = np.searchsorted(free_e, lo, side="right")  # the first free interval ending after the window starts
    last = np.searchsorted(free_s, hi, side="left")  # ... and the one past the last starting before it ends
    counts = np.maximum(last - first, 0)
    if not counts.sum():
        return np.zeros(0), np.zeros(0)
    window = np.repeat(np.arange(lo.size), counts)
    offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    idx = first[window] + offset
    starts = np.maximum(free_s[idx], lo[window])
    ends = np.minimum(free_e[idx], hi[window])
    ok = ends > starts
    return starts[ok], ends[ok]


def _starting_inside(gaps: tuple[np.ndarray, np.ndarray], calls: tuple[np.ndarray, np.ndarray]):
    """The gaps whose start lies inside one of ``calls`` (disjoint sorted intervals)."""
    gs, ge = gaps
    s, e = calls
    if gs.size == 0 or s.size == 0:
        return np.zeros(0), np.zeros(0)
    j = np.searchsorted(s, gs, side="right") - 1
    hit = (j >= 0) & (gs < e[np.maximum(j, 0)])
    return gs[hit], ge[hit]


def _after_pageable_copies(trace: k.TraceColumns, idle: tuple[np.ndarray, np.ndarray],
                           sync_calls: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The GPU idle gaps that begin while the host is in a host-to-device copy from pageable memory (its call or
    operator: staging it, or blocked until it lands), or in a synchronisation that waited for one (begun at its end):
    the copy's time, ahead of every other claim on the gap (``gpu_analyses.pageable_copies``; docs/diagnosis.md, the
    GPU causes' precedence)."""
    copies, in_copy = pageable_copies(trace)
    if not copies.any() or not idle[0].size:
        return np.zeros(0), np.zeros(0)
    at_copy = np.isin(idle[0], ends_of(trace, copies))
    waited = _starting_inside((idle[0][at_copy], idle[1][at_copy]), sync_calls)
    return _join(_starting_inside(idle, in_copy), waited)


def dispatch_floor_us(trace: k.TraceColumns, ops: np.ndarray) -> float | None:
    """An operator call's fixed cost: the median time of the metadata-only operators (None: too few)."""
    meta = ops & _named(trace, METADATA_OPS.__contains__)
    if int(meta.sum()) < MIN_METADATA_CALLS:
        return None
    return float(np.median(trace.dur_us[meta]))


def step_account(trace: k.TraceColumns, steps: list[dict]) -> dict | None:
    """The account of a rank's profiled steps (ms), or None without steps."""
    if not steps:
        return None
    lo = np.array([s["start_us"] for s in steps], np.float64)
    dur = np.array([s["dur_us"] for s in steps], np.float64)  # exact: epoch µs near 1.7e15 are 0.25 µs apart
    hi = lo + dur
    cpu = regions.cpu_side(trace)
    step_ids = _ids(trace, lambda n: n.startswith("ProfilerStep#"))
    is_step = with_names(trace, step_ids)
    primary = _primary_thread(trace, is_step & cpu)  # not the GPU's copy of the step annotation
    on_primary = trace.tid == primary if primary is not None else np.ones(trace.cat.size, bool)
    pattern = getattr(trace, "cpu_collectives", None) or regions.CPU_COLLECTIVE
    primary_cpu = cpu & on_primary
    sync_calls = _union(trace, cpu & _named(trace, lambda n: bool(SYNC_CALL.search(n) or HIP_SYNC.search(n))))
    memory_calls = _union(trace, cpu & _named(trace, lambda n: bool(MEMORY_CALL.search(n))))
    data = _named(trace, lambda n: bool(regions.DATALOADER.search(n)))
    compiling = _named(trace, lambda n: bool(COMPILE.search(n)) and not NOT_COMPILE.search(n))
    comm = _named(trace, lambda n: bool(pattern.search(n)))
    operator_rows = (trace.rows(k.CPU_OP, k.RUNTIME, k.DRIVER)
                     | (trace.rows(k.USER_ANNOTATION) & _named(trace, lambda n: bool(FRAMEWORK_RANGE.match(n))))) & ~is_step
    prefetch = _named(trace, lambda n: bool(PREFETCH.search(n)))
    ops = operator_rows & (on_primary | ~prefetch)
    gpu = trace.rows(k.KERNEL, k.MEMCPY, k.MEMSET)  # GPU work; cuda_sync events are waits, not work
    kernels = trace.rows(k.KERNEL)
    comm_kernel = kernels & _named(trace, is_communication_kernel)
    device_busy = _union(trace, gpu)
    compute_kernels = _union(trace, kernels & ~comm_kernel)
    device = bool(device_busy[0].size) and float(covered(device_busy, lo, hi).sum()) > 0.0

    levels: list[tuple[str, tuple[np.ndarray, np.ndarray]]] = []
    if device:
        idle = _gaps(device_busy, lo, hi)
        levels += [("compute", compute_kernels),
                   ("communication", _union(trace, comm_kernel)),
                   ("memory_copies", _union(trace, gpu & ~kernels)),
                   (COPIES_IDLE, _after_pageable_copies(trace, idle, sync_calls)),
                   ("host_blocked", _starting_inside(idle, sync_calls)),
                   ("memory_management", _starting_inside(idle, memory_calls))]
    # What the step's own thread waits in comes first; the same on another thread (gloo's all-reduce, a
    # background compile) overlaps the step's work and counts only where that thread has nothing to do.
    setup = _first_run_setup(trace, primary_cpu)
    levels += [("data_wait", _union(trace, primary_cpu & data)),
               ("compilation", _join(_union(trace, primary_cpu & compiling), setup)),
               ("communication", _union(trace, primary_cpu & comm)),
               ("host_blocked", sync_calls), ("memory_management", memory_calls),
               ("dispatch" if device else "operators", _union(trace, ops)),
               ("communication", _union(trace, cpu & comm & ~on_primary)),
               ("compilation", _union(trace, cpu & compiling & ~on_primary))]

    per_step = {name: np.zeros(lo.size) for name in SLICES}
    copies_idle = np.zeros(lo.size)  # of memory_copies: the GPU idle while the host was in a pageable copy
    done = np.zeros(lo.size)
    union: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))
    for name, iv in levels:
        union = _join(union, iv) if iv[0].size else union
        now = np.minimum(np.maximum(covered(union, lo, hi), done), dur)  # a union only grows, within the step
        if name == COPIES_IDLE:
            copies_idle += now - done
        per_step[{"operators": "compute", COPIES_IDLE: "memory_copies"}.get(name, name)] += now - done
        done = now
    per_step["no_operator"] = dur - done
    named = _named_in_gaps(trace, _gaps(union, lo, hi), ~is_step)
    waits = primary_cpu & data
    data_named = {}
    for name_id in np.unique(trace.name[waits]):
        data_named[trace.names[int(name_id)]] = float(trace.dur_us[waits & (trace.name == name_id)].sum()) / 1000.0
    data_named = dict(sorted(data_named.items(), key=lambda kv: -kv[1])[:TOP_NAMED])
    compile_named = _names_of(trace, primary_cpu & _outermost(trace, primary_cpu & compiling), merged(lo, hi))
    if setup[0].size:
        compile_named[FIRST_RUN_SETUP] = float(covered(setup, lo, hi).sum()) / 1000.0
    compile_named = dict(sorted(compile_named.items(), key=lambda kv: -kv[1])[:TOP_NAMED])
    optimizer = covered(_union(trace, cpu & _named(trace, lambda n: bool(OPTIMIZER_STEP.match(n)))), lo, hi)

    floor = None
    calls_per_step = None
    counted = kernels if device else ops & trace.rows(k.CPU_OP)  # the work items a step issues
    starts = np.sort(trace.start_us[counted])
    calls = np.searchsorted(starts, hi) - np.searchsorted(starts, lo)
    # only calls made from Python, not those inside another (tracing a function to compile it calls each of its
    # primitives inside it)
    eager_by = {runtime: np.array(_starts_per_step(trace, _outermost(trace, primary_cpu & _named(trace, op.match)),
                                                   lo, hi))
                for runtime, op in EAGER_OPS.items()}
    eager_runtime = max(eager_by, key=lambda runtime: int(eager_by[runtime].sum()))
    eager = eager_by[eager_runtime]
    graph_calls = np.array(_starts_per_step(trace, primary_cpu & _named(trace, lambda n: bool(TF_FUNCTION_CALL.match(n))),
                                            lo, hi))
    graph_split, graph_runtime = False, "tensorflow"
    made_named: dict[str, float] = {}
    if not device:
        calls_per_step = float(calls.mean())
        floor = dispatch_floor_us(trace, counted)
        if floor is not None:
            fixed = np.minimum(calls * floor, per_step["compute"])
            per_step["dispatch"] += fixed
            per_step["compute"] -= fixed
        elif eager.size and eager.max() >= EAGER_STEP_OPS:
            # operations run one by one from Python: of their time only the kernels' is compute, the rest (the
            # eager runtime's checks, copies, handles) is each call's fixed cost — in the steps that ran eagerly
            running = covered(_union(trace, primary_cpu & _named(trace, lambda n: n in EAGER_KERNELS)), lo, hi)
            fixed = np.where(eager >= EAGER_STEP_OPS, np.clip(per_step["compute"] - running, 0.0, None), 0.0)
            per_step["dispatch"] += fixed
            per_step["compute"] -= fixed
        elif graph_calls.size and graph_calls.max() >= 1:
            # a graph run from the step: of the operators' time only its operations' kernels are compute, the rest
            # of the call is its fixed cost (when the trace holds the operations) — in the steps that called one
            # and whose kernels are less than the rest of the call (steps too small for their fixed cost; in larger
            # steps the rest is mostly the executor's gaps between operations, which grow with them: compute)
            running = covered(_union(trace, ops & _named(trace, lambda n: bool(GRAPH_OP.match(n)))), lo, hi)
            rest = np.clip(per_step["compute"] - running, 0.0, None)
            small = (graph_calls >= 1) & (running > 0) & (rest >= SMALL_STEP * running)
            if small.any():
                graph_split = True
                fixed = np.where(small, rest, 0.0)
                per_step["dispatch"] += fixed
                per_step["compute"] -= fixed
        elif eager_by["jax"].size and eager_by["jax"].max() >= 1:
            # a jitted JAX step: the same split, its executable's HLO operations the kernels (XLA_OP); the call returns
            # before its executable runs on the executor's thread, and the step's thread waits for it in
            # block_until_ready, which no event marks (under no operator): that wait is the call's too
            jitted = eager_by["jax"]
            calls_iv = _jit_calls(trace, _outermost(trace, primary_cpu & _named(trace, EAGER_OPS["jax"].match)))
            waiting = covered(_join(union, calls_iv), lo, hi) - covered(union, lo, hi)
            running = covered(_union(trace, ops & _named(trace, lambda n: bool(XLA_OP.match(n)))), lo, hi)
            rest = np.clip(per_step["compute"] - running, 0.0, None)
            small = (jitted >= 1) & (running > 0) & (rest + waiting >= SMALL_JIT_STEP * running)
            # the batch's shape is paid in every step: where most steps are not small, the few whose executable
            # waited long for its thread (a busy host) are slow steps, the slow steps' story
            if 2 * int(small.sum()) > small.size:
                graph_split, graph_runtime, graph_calls = True, "jax", jitted
                per_step["dispatch"] += np.where(small, rest + waiting, 0.0)
                per_step["compute"] -= np.where(small, rest, 0.0)
                per_step["no_operator"] -= np.where(small, waiting, 0.0)
        debug = _anomaly_checks(trace, cpu, lo, hi, per_step["compute"])
        per_step["debug_checks"] += debug
        per_step["compute"] -= debug
        made, made_named = _script_ops(trace, primary_cpu & ~is_step, data, lo, hi, per_step["compute"], ALLOC_OPS)
        if float(made.sum()) >= ALLOCS_KEPT * float(dur.sum()) > 0:
            per_step["memory_management"] += made
            per_step["compute"] -= made
        else:
            made_named = {}
    # host compute only: a GPU's float64 kernels are not the CPU operators' time
    wide, fallback = (np.zeros(lo.size), np.zeros(lo.size)) if device else \
        _float64_compute(trace, cpu, lo, hi, per_step["compute"])
    reads = _scalar_reads(trace, primary_cpu, lo, hi)
    total = float(dur.sum())
    copies, copies_named = (np.zeros(lo.size), {}) if device else \
        _script_ops(trace, primary_cpu & ~is_step, data, lo, hi, per_step["compute"], COPY_OPS)
    unused = {} if device else _unused_gradients(trace, cpu, primary_cpu, lo, hi, per_step["compute"])
    python = cpu & ~on_primary & _named(trace, lambda n: bool(PIPELINE_PYTHON.match(n)))
    pipeline_python = {"input_python_ms": sum(_names_of(trace, python, merged(lo, hi)).values()),
                       "input_python_calls_per_step": float(np.median(_starts_per_step(trace, python, lo, hi)))
                       } if python.any() else {}
    iterators = [n for n in trace.names if n.startswith(PIPELINE_ITERATOR)]
    if iterators:  # the tf.data pipeline's deepest iterator: its shape, source to root
        pipeline_python["input_pipeline"] = max(iterators, key=len)
    wide_ms = {"float64_per_step_ms": [float(v) / 1000.0 for v in wide],  # of compute: operators with a float64 input
               "float64_fallback_per_step_ms": [float(v) / 1000.0 for v in fallback]} if wide.any() else {}
    return {
        "perspective": "device" if device else "host",
        "steps": int(lo.size),
        "step_ms": total / 1000.0,
        "slices_ms": {name: float(per_step[name].sum()) / 1000.0 for name in SLICES},
        "per_step_ms": {name: [float(v) / 1000.0 for v in per_step[name]] for name in SLICES},
        "useful": list(USEFUL),
        "operator_calls_per_step": calls_per_step,
        "dispatch_floor_us": floor,
        "no_operator_named": named,
        "data_wait_named": data_named,
        "compilation_named": compile_named,
        "optimizer_per_step_ms": [float(v) / 1000.0 for v in optimizer],
        "work_per_step": [int(c) for c in calls],  # operator calls (host) or kernels (device) starting in each step
        "backward_passes_per_step": _starts_per_step(trace, cpu & _named(trace, lambda n: bool(LOSS_BACKWARD.match(n))),
                                                     lo, hi),
        "eager_ops_per_step": [int(c) for c in eager],  # operations run one by one from Python
        "loader_starts_per_step": _loader_starts(trace, primary_cpu, data, lo, hi),
        "eager_runtime": eager_runtime if eager.size and eager.max() >= EAGER_STEP_OPS else None,
        "optimizer_steps_per_step": _starts_per_step(trace, cpu & _named(trace, lambda n: bool(OPTIMIZER_STEP.match(n))),
                                                     lo, hi),
        "window": _window(trace, lo, hi),
        "between_steps_ms": [gap / 1000.0 for gap in between_steps(lo, hi, _cycles(trace))],
        "between_cycles": between_cycles(steps, _cycles(trace)),
        **wide_ms,  # only where a step computed in float64 (record_shapes=True)
        **pipeline_python,  # where the input pipeline ran Python functions (tf.py_function) in the steps; its shape (tf.data)
        # only where the median step reads SCALAR_READS or more tensor elements into Python one by one
        **({"scalar_reads_per_step": reads} if reads and float(np.median(reads)) >= SCALAR_READS else {}),
        # only where the script's own copies (COPY_OPS outside any operator) reach COPIES_KEPT of the steps' time
        **({"copies_per_step_ms": [float(v) / 1000.0 for v in copies], "copies_named": copies_named}
           if total > 0 and float(copies.sum()) >= COPIES_KEPT * total else {}),
        # only where the median step adds gradients into ones no optimizer reset: how many a step, and the
        # backward's time after the last gradient an optimizer reset (the part that serves only those parameters)
        **unused,
        # only where the script's own tensor creations (ALLOC_OPS outside any operator) reach ALLOCS_KEPT of the
        # steps' time: then memory_management, ms by name
        **({"allocations_named": made_named} if made_named else {}),
        # only where the steps ran a tf.function's graph (or a jitted JAX executable) whose operations the trace
        # holds and were less than the rest of the call: calls per step, and whose runtime
        **({"graph_calls_per_step": [int(c) for c in graph_calls], "graph_runtime": graph_runtime}
           if graph_split else {}),
        "gpu": ({**_gpu_in_steps(trace, lo, hi, total, device_busy, compute_kernels, _union(trace, comm_kernel)),
                 "kernel_mix": kernel_mix(trace, kernels & ~comm_kernel, lo, hi),
                 # only where the GPU idled while the host was in a pageable copy: that part of memory_copies is idle
                 **({"copies_idle_ms": float(copies_idle.sum()) / 1000.0} if copies_idle.any() else {})}
                if device else None),
    }


def _gpu_in_steps(trace: k.TraceColumns, lo: np.ndarray, hi: np.ndarray, total: float,
                  busy: tuple[np.ndarray, np.ndarray], compute: tuple[np.ndarray, np.ndarray], comm: tuple[np.ndarray, np.ndarray]) -> dict:
    """HTA's figures restricted to the steps (ms), to reconcile the account with them: the GPU's busy time
    (= compute + exposed communication + memory copies, less their ``copies_idle_ms``), its idle time split as HTA splits the active window's
    idle (``gpu_idle``: host wait, kernel wait, other) plus the steps' time outside that window (before the
    cycle's first GPU activity or after its last), and the exposed communication (HTA's overlap: collective
    kernels with no compute kernel beside them). The account's device ``communication`` also holds the GPU idle
    while the host was in a collective call: that part is ``communication`` − ``exposed_communication_ms``."""
    busy_us = float(covered(busy, lo, hi).sum())
    split = {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
    in_window = 0.0
    for c0, c1 in _cycles(trace):
        gaps = idle_gaps(trace, c0, c1)
        if gaps is None:
            continue
        in_window += float(covered(gaps["window"], lo, hi).sum())
        for key in split:
            split[key] += float(covered(gaps[key], lo, hi).sum())
    split["outside_window"] = total - in_window
    exposed = float(covered(_join(compute, comm), lo, hi).sum() - covered(compute, lo, hi).sum())
    return {"busy_ms": busy_us / 1000.0, "idle_ms": (total - busy_us) / 1000.0,
            "idle_split_ms": {key: value / 1000.0 for key, value in split.items()},
            "exposed_communication_ms": exposed / 1000.0}


TOP_NAMED = 5


def _inside(trace: k.TraceColumns, mask: np.ndarray, union: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The events of ``mask`` wholly inside the disjoint sorted intervals."""
    rows = np.nonzero(mask)[0]
    start, end = trace.start_us[rows], ends_of(trace, rows)
    out = np.zeros(mask.shape, bool)
    out[rows[covered(union, start, end) >= end - start]] = True
    return out


def _anomaly_checks(trace: k.TraceColumns, cpu: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    compute: np.ndarray) -> np.ndarray:
    """Per step (µs), the time autograd's anomaly detection took out of the operators' time: its NaN checks
    inside backward functions, and the stack recorded for each backward node in the forward pass (zero without
    the signature: at least ``ANOMALY_CHECKS_PER_NODE`` checks per backward node, every step)."""
    none = np.zeros(lo.size)
    nodes_mask = cpu & _named(trace, lambda n: bool(BACKWARD_NODE.match(n)))
    if not nodes_mask.any():
        return none
    backward = _union(trace, nodes_mask)
    checks_mask = _inside(trace, cpu & _named(trace, ANOMALY_CHECKS.__contains__), backward)
    nodes = np.array(_starts_per_step(trace, nodes_mask & ~_named(trace, lambda n: bool(ACCUMULATE_GRAD.search(n))),
                                      lo, hi))
    checks = np.array(_starts_per_step(trace, checks_mask & _outermost(trace, checks_mask), lo, hi))
    if nodes.min() < MIN_BACKWARD_NODES or (checks < ANOMALY_CHECKS_PER_NODE * nodes).any():
        return none
    checked = covered(_union(trace, checks_mask), lo, hi)
    probe = cpu & _named(trace, NODE_PROBE.__eq__)
    later = _inside(trace, probe, backward)
    forward = probe & ~later
    per_node = 0.0
    if forward.sum() >= MIN_PROBE_CALLS and later.sum() >= MIN_PROBE_CALLS:
        per_node = max(float(trace.dur_us[forward].mean()) - float(np.median(trace.dur_us[later])), 0.0)
    return np.minimum(checked + nodes * per_node, np.maximum(compute, 0.0))


def _float64_compute(trace: k.TraceColumns, cpu: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     compute: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step (µs), the part of ``compute`` in operators with a float64 input (``TraceColumns.float64``), and of
    it the part in torch's reference kernels float64 falls back to (``FALLBACK_KERNELS``); zeros without them."""
    ops = getattr(trace, "float64", None)
    if ops is None or not len(ops):
        return np.zeros(lo.size), np.zeros(lo.size)
    wide = np.minimum(covered(merged(ops.time_us, ops.end_us), lo, hi), np.maximum(compute, 0.0))
    slow = covered(_union(trace, cpu & _named(trace, lambda n: bool(FALLBACK_KERNELS.match(n)))), lo, hi)
    return wide, np.minimum(slow, wide)


def _named_in_gaps(trace: k.TraceColumns, gaps: tuple[np.ndarray, np.ndarray], keep: np.ndarray) -> dict[str, float]:
    """What the trace names inside the time under no operator: annotations (``record_function``) and Python frames
    (``with_stack``), ms by name over all steps, the largest first (nested ones each count)."""
    if gaps[0].size == 0:
        return {}
    totals = _names_of(trace, trace.rows(k.USER_ANNOTATION, k.PYTHON) & keep, gaps)
    return dict(sorted(totals.items(), key=lambda kv: -kv[1])[:TOP_NAMED])


def _scalar_reads(trace: k.TraceColumns, thread: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[int]:
    """Per step, the tensor elements the step's thread read into Python one by one (``SCALAR_READ`` outside the
    optimizer's ranges and autograd's backward functions)."""
    reads = thread & _named(trace, SCALAR_READ.__eq__)
    if not reads.any():
        return [0] * int(lo.size)
    framework = thread & _named(trace, lambda n: bool(FRAMEWORK_RANGE.match(n) or BACKWARD_NODE.match(n)))
    if framework.any():
        reads &= ~_inside(trace, reads, _union(trace, framework))
    return _starts_per_step(trace, reads, lo, hi)


def _script_ops(trace: k.TraceColumns, thread: np.ndarray, data: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                compute: np.ndarray, names: frozenset[str]) -> tuple[np.ndarray, dict[str, float]]:
    """Per step (µs, of ``compute``), the time of the operators named in ``names`` (the data-moving ``COPY_OPS``,
    the tensor-making ``ALLOC_OPS``) that the step's thread ran outside every other operator, the optimizer's ranges
    and the DataLoader's; and their ms by name."""
    ranges = thread & (data | _named(trace, lambda n: bool(FRAMEWORK_RANGE.match(n))))
    copies = _outermost(trace, thread & (trace.rows(k.CPU_OP) | ranges)) & trace.rows(k.CPU_OP) \
        & _named(trace, names.__contains__)
    if copies.any() and ranges.any():  # one that spans the range exactly is still inside it
        copies &= ~_inside(trace, copies, _union(trace, ranges))
    if not copies.any():
        return np.zeros(lo.size), {}
    union = _union(trace, copies)
    per_step = np.minimum(covered(union, lo, hi), np.maximum(compute, 0.0))
    named = dict(sorted(_names_of(trace, copies, merged(lo, hi)).items(), key=lambda kv: -kv[1])[:TOP_NAMED])
    return per_step, named


def _unused_gradients(trace: k.TraceColumns, cpu: np.ndarray, primary: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      compute: np.ndarray) -> dict[str, list]:
    """Per step, the gradients added into ones that no optimizer reset (``ACCUMULATE_NODE`` holding an
    ``aten::add_``, less the gradients zeroed in place), in steps with one backward pass and an optimizer step (none
    where a step's backward pass has no update after it: gradient accumulation adds by design); and
    the backward's time (µs → ms, of ``compute``) from the last gradient stored afresh to the last one added: the
    backward nodes run only for parameters whose gradients nothing reads. Empty unless the median step has one."""
    nodes = np.nonzero(cpu & _named(trace, ACCUMULATE_NODE.__eq__))[0]
    if nodes.size == 0:
        return {}
    adds = np.nonzero(cpu & _named(trace, "aten::add_".__eq__))[0]
    adds = adds[np.argsort(trace.start_us[adds], kind="stable")]
    add_start = trace.start_us[adds]
    node_start, node_end = trace.start_us[nodes], ends_of(trace, nodes)
    first, last = np.searchsorted(add_start, node_start), np.searchsorted(add_start, node_end, side="right")
    added = np.array([any(trace.tid[adds[j]] == trace.tid[n] and ends_of(trace, adds[j]) <= node_end[i]
                          for j in range(first[i], last[i])) for i, n in enumerate(nodes)], bool)
    zero = primary & _named(trace, "aten::zero_".__eq__)
    others = primary & trace.rows(k.CPU_OP) & ~zero
    if zero.any() and others.any():  # zero_grad's own: outside every other operator (aten::zeros holds one)
        zero &= ~_inside(trace, zero, _union(trace, others))
    zeroed = np.array(_starts_per_step(trace, zero, lo, hi))
    passes = np.array(_starts_per_step(trace, cpu & _named(trace, lambda n: bool(LOSS_BACKWARD.match(n))), lo, hi))
    updates = np.array(_starts_per_step(trace, cpu & _named(trace, lambda n: bool(OPTIMIZER_STEP.match(n))), lo, hi))
    if ((passes >= 1) & (updates == 0)).any():
        return {}  # gradient accumulation: a backward pass without an update adds into the gradients by design
    unused = np.zeros(lo.size, np.int64)
    backward = np.zeros(lo.size)
    for i in range(lo.size):
        here = (node_start >= lo[i]) & (node_start < hi[i])
        if passes[i] != 1 or updates[i] < 1 or not (here & added).any():
            continue
        unused[i] = max(int((here & added).sum()) - int(zeroed[i]), 0)
        if unused[i] and (here & ~added).any():  # from the last gradient stored afresh to the last one added
            backward[i] = max(float(node_end[here & added].max() - node_end[here & ~added].max()), 0.0)
    if float(np.median(unused)) < 1:
        return {}
    backward = np.minimum(backward, np.maximum(compute, 0.0))
    return {"unused_gradients_per_step": [int(c) for c in unused],
            "unused_backward_per_step_ms": [float(v) / 1000.0 for v in backward]}


def _loader_starts(trace: k.TraceColumns, thread: np.ndarray, data: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray) -> list[int]:
    """Per step, whether a DataLoader iterator was created in it before the step took its batch (1 or 0): an
    iterator seed (``ITERATOR_SEED`` outside any other operator on the step's thread) before the step's first
    DataLoader event."""
    seeds = thread & _named(trace, ITERATOR_SEED.__eq__)
    if not seeds.any():
        return [0] * int(lo.size)
    seeds &= _outermost(trace, thread & (trace.rows(k.CPU_OP) | seeds))
    seed_starts = np.sort(trace.start_us[seeds])
    loads = np.sort(trace.start_us[thread & data])
    first_load = loads[np.minimum(np.searchsorted(loads, lo), max(loads.size - 1, 0))] if loads.size else hi
    first_load = np.where((first_load >= lo) & (first_load < hi), first_load, lo)
    return [int(c > 0) for c in np.searchsorted(seed_starts, first_load) - np.searchsorted(seed_starts, lo)]


def _names_of(trace: k.TraceColumns, mask: np.ndarray, within: tuple[np.ndarray, np.ndarray]) -> dict[str, float]:
    """ms by name of the events of ``mask`` inside ``within`` (disjoint sorted intervals; nested events each count)."""
    rows = np.nonzero(mask)[0]
    totals: dict[str, float] = {}
    if rows.size == 0:
        return totals
    inside = covered(within, trace.start_us[rows], ends_of(trace, rows))
    for name, us in zip(trace.name[rows], inside):
        if us > 0:
            label = trace.names[int(name)]
            totals[label] = totals.get(label, 0.0) + float(us) / 1000.0
    return totals


def _first_run_setup(trace: k.TraceColumns, thread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each tf.function concrete function's first call, from its start to its kernels' (the instantiation), as
    intervals; empty without such calls, or when the first call holds no kernel run."""
    calls = np.nonzero(thread & _named(trace, lambda n: bool(TF_FUNCTION_CALL.match(n))))[0]
    if calls.size == 0:
        return np.zeros(0), np.zeros(0)
    runs = np.nonzero(thread & _named(trace, TF_FUNCTION_RUN.__contains__))[0]
    run_starts = np.sort(trace.start_us[runs])
    first: dict[int, int] = {}
    for row in calls[np.argsort(trace.start_us[calls], kind="stable")]:
        first.setdefault(int(trace.name[row]), int(row))
    starts, ends = [], []
    for row in first.values():
        start, end = trace.start_us[row], ends_of(trace, row)
        j = np.searchsorted(run_starts, start, side="left")
        if j < run_starts.size and run_starts[j] < end and run_starts[j] > start:
            starts.append(start)
            ends.append(run_starts[j])
    return merged(np.array(starts, np.float64), np.array(ends, np.float64))


JIT_RUN = "ThunkExecutor::Execute"  # XLA's CPU executable running its operations (on the executor's threads)


def _jit_calls(trace: k.TraceColumns, calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each jitted call (``calls``: its outermost ``PjitFunction`` events) from its start to the end of the
    executable runs (``JIT_RUN``) that start after it and before the next call: the call as its step waits for it."""
    rows = np.nonzero(calls)[0]
    if rows.size == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(trace.start_us[rows], kind="stable")
    start, end = trace.start_us[rows][order], ends_of(trace, rows)[order].copy()
    runs = _named(trace, JIT_RUN.__eq__)
    run_start, run_end = trace.start_us[runs], ends_of(trace, runs)
    if run_start.size:
        by = np.argsort(run_start, kind="stable")
        run_start, run_end = run_start[by], run_end[by]
        first = np.searchsorted(run_start, start, side="left")
        last = np.searchsorted(run_start, np.r_[start[1:], np.inf], side="left")
        for i in np.nonzero(last > first)[0]:
            end[i] = max(end[i], float(run_end[first[i]:last[i]].max()))
    return merged(start, end)


def _outermost(trace: k.TraceColumns, mask: np.ndarray) -> np.ndarray:
    """The events of ``mask`` that no other event of ``mask`` holds (an event starting where another ends, or
    a copy of the same span, is outermost too)."""
    rows = np.nonzero(mask)[0]
    if rows.size == 0:
        return mask
    start, end = trace.start_us[rows], trace.start_us[rows] + trace.dur_us[rows]
    order = np.lexsort((-end, start))
    reach = np.maximum.accumulate(end[order])  # the furthest end among the events that started before each
    held = np.zeros(rows.size, bool)
    held[order[1:]] = (start[order[1:]] < reach[:-1]) & ~((start[order[1:]] == start[order[:-1]])
                                                          & (end[order[1:]] == end[order[:-1]]))
    out = np.zeros(mask.shape, bool)
    out[rows[~held]] = True
    return out


def _starts_per_step(trace: k.TraceColumns, mask: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[int]:
    starts = np.sort(trace.start_us[mask])
    return [int(c) for c in np.searchsorted(starts, hi) - np.searchsorted(starts, lo)]


def _primary_thread(trace: k.TraceColumns, is_step: np.ndarray) -> int | None:
    if not is_step.any() or trace.tid.size != trace.cat.size:
        return None
    tids, counts = np.unique(trace.tid[is_step], return_counts=True)
    return int(tids[np.argmax(counts)])


def _cycles(trace: k.TraceColumns) -> list[tuple[float, float]]:
    """The rank's profiling cycles (one span, first to last event, when the trace does not say)."""
    cycles = list(getattr(trace, "cycles", None) or [])
    if not cycles and trace.start_us.size:
        cycles = [(float(trace.start_us.min()), float(trace.end_us.max()))]
    return cycles


def between_steps(lo: np.ndarray, hi: np.ndarray, cycles: list[tuple[float, float]]) -> list[float]:
    """The time (µs) from each step's end to the next step's start, where both lie in one recorded cycle (between
    cycles nothing was recorded), in the steps' order."""
    order = np.argsort(lo)
    lo, hi = lo[order], hi[order]
    return [max(float(b_start - a_end), 0.0) for a_end, b_start in zip(hi[:-1], lo[1:])
            if any(c0 <= a_end and b_start <= c1 for c0, c1 in cycles)]


def between_cycles(steps: list[dict], cycles: list[tuple[float, float]]) -> list[dict]:
    """Each pause of the recording between two profiling cycles: from the last profiled step of one cycle to the
    first of the next (absolute µs), and how many steps ran there unrecorded (``ProfilerStep#`` counts every
    ``prof.step()``, recorded or not). That time holds those steps and the profiler's export of the cycle before:
    with the export known, the steps' mean time without the profiler recording (``diagnosis.profiler_cost``)."""
    ordered = sorted((s for s in steps if isinstance(s.get("step"), int)), key=lambda s: s["start_us"])
    out = []
    for a, b in zip(ordered[:-1], ordered[1:]):
        a_end, b_start = a["start_us"] + a["dur_us"], b["start_us"]
        if any(c0 <= a_end and b_start <= c1 for c0, c1 in cycles):
            continue  # both in one recorded cycle: the time between them is the window's, not the profiler's pause
        unrecorded = b["step"] - a["step"] - 1
        if unrecorded >= 1 and b_start > a_end:
            out.append({"after_step": a["step"], "before_step": b["step"], "unrecorded_steps": unrecorded,
                        "start_us": float(a_end), "end_us": float(b_start)})
    return out


def _window(trace: k.TraceColumns, lo: np.ndarray, hi: np.ndarray) -> dict:
    """The profiled window around the steps (ms): before the first, between consecutive steps (evaluation,
    checkpoints, anything the loop does outside a step), after the last. Between cycles nothing was recorded."""
    cycles = _cycles(trace)
    order = np.argsort(lo)
    lo, hi = lo[order], hi[order]
    between = 0.0
    for a_end, b_start in zip(hi[:-1], lo[1:]):
        if any(c0 <= a_end and b_start <= c1 for c0, c1 in cycles):  # both inside one recorded cycle
            between += max(b_start - a_end, 0.0)
    span = float(sum(c1 - c0 for c0, c1 in cycles))
    steps = float((hi - lo).sum())
    first, last = float(lo[0]), float(hi[-1])
    before = sum(max(min(c1, first) - c0, 0.0) for c0, c1 in cycles)
    after = sum(max(c1 - max(c0, last), 0.0) for c0, c1 in cycles)
    return {"span_ms": span / 1000.0, "steps_ms": steps / 1000.0, "between_steps_ms": between / 1000.0,
            "before_first_ms": before / 1000.0, "after_last_ms": after / 1000.0}
