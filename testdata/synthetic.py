"""Deterministic synthetic SageMaker-Debugger raw profiler data.

Writes a profiler-output tree in the raw format described in the spec (Part A):

* ``system/incremental/<YYYYMMDDHH>/<minute_epoch>.algo-<n>.json`` — JSON lines, one file per node
  per minute, the full record catalog of A.2 for every sampling instant;
* ``system/training_job_end.ts`` — end-of-job marker;
* ``framework/pevents/<YYYYMMDDHH>/<END_US>_<pid>-algo-<n>_pythontimeline.json`` — smdebug-style
  Chrome-trace arrays rotated about every 60 s (A.3).

Everything is derived from ``numpy.random.default_rng`` streams seeded from ``seed`` and the node
index, so the same arguments give byte-identical files.  System metrics are formatted with numpy
into large byte blocks (no per-record ``json.dumps``), which keeps multi-GB benchmark data fast.

A :class:`Scenario` plants known conditions (CPU bottlenecks, iowait spikes, GPU memory jumps,
step-duration outliers, GPU imbalance, dataloader worker count ...); the exact planted positions
are returned in :attr:`GenerationStats.planted` so tests can check them against the written files.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["Scenario", "GenerationStats", "generate", "records_per_tick", "DEFAULT_START_EPOCH"]

#: 2023-11-14 22:14:00 UTC, a minute boundary.
DEFAULT_START_EPOCH = 1700000040

# Timestamp offsets (µs) of the record groups inside one sampling instant, relative to the
# instant's base time (the agent reads the sources one after the other, a few ms apart).
_GROUP_OFFSETS_US = {"cpu": 9000, "gpu": 11900, "memory": 9100, "i/o": 8900, "network": 13600}
_GROUPS = ("cpu", "gpu", "memory", "i/o", "network")

_NET_RECORDS = (
    ("ReceiveBytesPerSecond", "Algorithm"),
    ("TransmitBytesPerSecond", "Algorithm"),
    ("ReceiveBytesPerSecond", "Platform"),
    ("TransmitBytesPerSecond", "Platform"),
)
_IO_RECORDS = ("IOPS", "ReadThroughputInBytesPerSecond", "WriteThroughputInBytesPerSecond")

# Trace phases in the order their integer pid is assigned (stable across files of a process).
_PHASES = (
    "Step:ModeKeys.TRAIN",
    "Step:ModeKeys.EVAL",
    "Forward",
    "Backward(post-forward)",
    "Forward-SubModuleInternal",
    "Backward-SubModuleInternal",
    "cpu_functions",
    "gpu_functions-dev:0",
    "DataLoaderIterInitialize",
    "DataLoaderIter",
    "DataLoaderWorker",
)
_PHASE_PID = {p: i + 1 for i, p in enumerate(_PHASES)}

_SUBMODULES = ("conv1", "bn1", "relu", "layer1", "layer2", "layer3", "avgpool", "fc")
_CPU_OPS = (
    "aten::conv2d",
    "aten::batch_norm",
    "aten::relu_",
    "aten::conv2d",
    "aten::conv2d",
    "aten::conv2d",
    "aten::adaptive_avg_pool2d",
    "aten::addmm",
)
_GPU_KERNELS = (
    "volta_scudnn_128x64_relu_interior_nn_v1",
    "cudnn::bn_fw_tr_1C11_kernel_NCHW",
    "at::native::vectorized_elementwise_kernel",
    "volta_scudnn_128x128_relu_small_nn_v1",
    "volta_scudnn_128x64_relu_medium_nn_v1",
    "implicit_convolve_sgemm",
    "at::native::reduce_kernel",
    "volta_sgemm_128x32_tn",
)
_TRACE_WRITE_TIME_S = 60.0  # trace file rotation period


@dataclass(frozen=True)
class Scenario:
    """Knobs that plant known conditions.  Per-node tuples are indexed by node (0-based) and
    repeat their last entry for further nodes.

    Timing
      init_s: seconds from the first system sample to the first training step
        (MaxInitializationTime / report summary "Initialization time").
      final_s: seconds from the last step's end to the end of the job.
      step_ms: mean TRAIN step duration, per node (a slower node is a straggler); step_jitter:
        relative lognormal sigma of step durations.
      gap_ms: mean time between two steps (the DataLoaderIter::GetNext call), per node (a node that waits
        longer for its batches is a straggler whose TRAIN steps are as long as the others').
      data_wait_ms: mean time each step's GetNext call also waits for its batch (lognormal, sigma 0.25): an input
        pipeline that cannot keep up (0 = none). The GPUs idle through those waits, and the samples taken in them
        are the training loop's CPU bottleneck samples (the loader's core saturated): see cpu_bottleneck_fraction.
      wait_outliers / wait_outlier_ms: per node, that many TRAIN steps wait ``wait_outlier_ms`` for their
        batch in the GetNext call before the step (a stalled loader): the TRAIN step itself is as usual.
      eval_every / eval_steps: after every ``eval_every`` TRAIN steps run ``eval_steps`` EVAL
        steps (0 = no EVAL); EVAL steps take 40 % of a TRAIN step.
      step_outliers / step_outlier_factor: per node, that many TRAIN steps are made
        ``factor`` times longer (never across a minute boundary, so the rules' window overlap
        cannot count one twice).
      step_outlier_wait: the outliers' extra time is a DataLoader iterator created again inside the
        step (its worker processes starting: a loader restarted at an epoch's start) before normal
        forward and backward passes, instead of longer passes.
      slow_every / slow_every_factor: every ``slow_every``-th TRAIN step (checkpointing, evaluation,
        logging on a schedule) is made ``slow_every_factor`` times longer (0 = none).
      slack_ms: per node, the last ``slack_ms`` of each TRAIN step hold no forward or backward pass (the passes
        shrink to the rest): a process that waits at the step's end for a slower one, in lock step through
        collectives its framework events do not record (PyTorch DDP without them, Horovod's optimizer step).
        With equal ``step_ms`` the node with the least slack is the straggler the others wait for.

    GPU
      gpu_util_busy: mean GPUUtilization (%) of a busy sample, per node.
      gpu_offsets: ((node, gpu, delta), ...) added to the busy level of one GPU -> imbalance
        between the GPUs of a node (LoadBalancing).
      gpu_noise: std-dev of busy samples (values are integers, like NVML's).
      gpu_idle_fraction: per node, fraction of the training-time samples where the GPUs idle
        (0..5 %) -> fluctuation (LowGPUUtilization's p5).
      gpu_memory_base: GPUMemoryUtilization (%) while the model is resident.
      gpu_memory_jumps / gpu_memory_jump_size / gpu_memory_jump_s: number of square pulses of
        +size percentage points lasting ``jump_s`` seconds, evenly spread over
        ``gpu_memory_jump_window`` (fractions of the job duration), on the GPUs listed in
        ``gpu_memory_jump_targets`` ((node, gpu), ...) (GPUMemoryIncrease).
      gpu_memory_growth: percentage points every GPU's memory gains, linearly, from the first to
        the last step (a leak: a steady rise that GPUMemoryIncrease's jump test does not see).

    CPU / I/O
      cpu_util / cpu_noise: mean and std-dev of per-core CPUUtilization while training (core 0,
        the training process, runs 20 points higher).
      cpu_bottleneck_fraction: fraction of ALL samples of every node (exactly
        ``round(fraction * samples)``) where one core is > 90 % while every GPU is < 10 %.
        No other sample has both a core > 90 % and a GPU < 10 % (CPUBottleneck). With ``data_wait_ms``
        the samples inside the training loop are instead exactly those taken while the training process
        waits for data (the framework events and the system metrics tell one story), and the fraction
        applies to the samples outside the loop only.
      iowait_spike_fraction: fraction of samples (exact count, per node) where one core has
        I/OWaitPercentage in 55..95 %; every other iowait value is <= 8 % (IOBottleneck).
      iowait_stalls_gpu: the GPUs idle (< 10 %) in the iowait-spike samples too, as when
        training waits for storage (then IOBottleneck counts them).
      host_memory_growth: percentage points host memory gains, linearly, from the first to the last
        step, on top of the usual slow drift (a host-memory leak, e.g. losses kept with their graphs).

    Dataloader
      dataloader_workers: ``num_workers`` of the DataLoader (worker processes in the trace).
      pin_memory: ``pin_memory`` arg of DataLoaderIterInitialize.
      steps_per_epoch: a DataLoaderIterInitialize event is emitted at every epoch start.

    Detailed profiling
      detailed_start / detailed_steps: TRAIN steps with sub-module, cpu_functions and
        gpu_functions-dev:0 events (like smdebug's detailed-profiling step range).
    """

    init_s: float = 60.0
    final_s: float = 4.0
    step_ms: float | tuple[float, ...] = 300.0
    step_jitter: float = 0.04
    gap_ms: float | tuple[float, ...] = 12.0
    wait_outliers: int = 0
    wait_outlier_ms: float = 2000.0
    data_wait_ms: float = 0.0
    eval_every: int = 0
    eval_steps: int = 0
    step_outliers: int = 0
    step_outlier_factor: float = 10.0
    step_outlier_wait: bool = False
    slow_every: int = 0
    slow_every_factor: float = 3.0
    slack_ms: float | tuple[float, ...] = 0.0

    gpu_util_busy: tuple[float, ...] = (88.0,)
    gpu_offsets: tuple[tuple[int, int, float], ...] = ()
    gpu_noise: float = 3.0
    gpu_idle_fraction: tuple[float, ...] = (0.05,)
    gpu_memory_base: float = 30.0
    gpu_memory_jumps: int = 0
    gpu_memory_jump_size: float = 62.0
    gpu_memory_jump_s: float = 20.0
    gpu_memory_jump_window: tuple[float, float] = (0.7, 0.9)
    gpu_memory_jump_targets: tuple[tuple[int, int], ...] = ((0, 0),)
    gpu_memory_growth: float = 0.0

    cpu_util: float = 35.0
    cpu_noise: float = 8.0
    cpu_bottleneck_fraction: float = 0.0
    iowait_spike_fraction: float = 0.0
    iowait_stalls_gpu: bool = False
    host_memory_growth: float = 0.0

    dataloader_workers: int = 4
    pin_memory: bool = True
    steps_per_epoch: int = 1000

    detailed_start: int = 5
    detailed_steps: int = 10


@dataclass
class GenerationStats:
    out_dir: str
    nodes: int
    cores: int
    gpus: int
    ticks_per_node: int
    records_per_tick: int
    system_files: int = 0
    system_records: int = 0
    system_bytes: int = 0
    trace_files: int = 0
    trace_events: int = 0
    trace_bytes: int = 0
    seconds: float = 0.0
    #: what was planted, JSON-serialisable; see generate().
    planted: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def records_per_tick(cores: int, gpus: int) -> int:
    """Number of JSON lines one node writes per sampling instant."""
    return 2 * cores + 2 * gpus + 1 + len(_IO_RECORDS) + len(_NET_RECORDS)


def _per_node(values, node: int):
    if isinstance(values, (int, float)):
        return float(values)
    return float(values[min(node, len(values) - 1)])


def _hour_folder(epoch_s: float) -> str:
    return time.strftime("%Y%m%d%H", time.gmtime(epoch_s))


# --------------------------------------------------------------------------------------------
# Vectorised byte formatting
# --------------------------------------------------------------------------------------------

_POW10 = 10 ** np.arange(19, dtype=np.int64)


def _n_digits(x: np.ndarray) -> np.ndarray:
    """Decimal digits of non-negative int64 values (0 has 1 digit)."""
    nd = np.ones(x.shape, dtype=np.int64)
    for k in range(1, 19):
        nd += x >= _POW10[k]
    return nd


def _write_digits(buf: np.ndarray, pos: np.ndarray, x: np.ndarray, width: np.ndarray | int) -> None:
    """Write x (int64) as exactly ``width`` decimal digits starting at ``pos``."""
    width = np.broadcast_to(np.asarray(width, dtype=np.int64), x.shape)
    maxw = int(width.max()) if width.size else 0
    for k in range(maxw):
        m = width > k
        if not m.all():
            xs, ws, ps = x[m], width[m], pos[m]
        else:
            xs, ws, ps = x, width, pos
        buf[ps + k] = 48 + (xs // _POW10[ws - 1 - k]) % 10


class _SystemFormatter:
    """Formats the system records of one node into JSON-lines bytes."""

    def __init__(self, node_name: str, columns: list[tuple[str, str, str, str]], decimals: np.ndarray):
        # columns: (type, name, dimension, group)
        prefixes = [
            '{"Type":"%s","Name":"%s","Dimension":"%s","Value":' % (t, n, d) for t, n, d, _g in columns
        ]
        pb = [p.encode() for p in prefixes]
        self.prefix_len = np.array([len(p) for p in pb], dtype=np.int64)
        # columns grouped by prefix length -> one 2-D copy per group
        self.prefix_groups = []
        for L in np.unique(self.prefix_len):
            cols_l = np.flatnonzero(self.prefix_len == L)
            mat = np.frombuffer(b"".join(pb[c] for c in cols_l), dtype=np.uint8).reshape(cols_l.size, int(L))
            self.prefix_groups.append((int(L), cols_l, mat))
        self.group_idx = np.array([_GROUPS.index(g) for *_x, g in columns], dtype=np.int64)
        self.decimals = decimals.astype(np.int64)
        self.tail_head = (',"NodeId":"%s","Timestamp":' % node_name).encode()
        self.tail_len = len(self.tail_head) + 17 + 2  # 10 digits '.' 6 digits '}' '\n'
        self.n_cols = len(columns)

    def tails(self, tick_base_us: np.ndarray) -> np.ndarray:
        """(n_ticks*len(_GROUPS), tail_len) uint8: ',"NodeId":..,"Timestamp":<s.µs>}\\n'."""
        offs = np.array([_GROUP_OFFSETS_US[g] for g in _GROUPS], dtype=np.int64)
        ts = (tick_base_us[:, None] + offs[None, :]).reshape(-1)
        n = ts.size
        out = np.empty((n, self.tail_len), dtype=np.uint8)
        h = len(self.tail_head)
        out[:, :h] = np.frombuffer(self.tail_head, dtype=np.uint8)
        sec = ts // 1_000_000
        frac = ts % 1_000_000
        flat = out.reshape(-1)
        base = np.arange(n, dtype=np.int64) * self.tail_len
        _write_digits(flat, base + h, sec, 10)
        out[:, h + 10] = ord(".")
        _write_digits(flat, base + h + 11, frac, 6)
        out[:, h + 17] = ord("}")
        out[:, h + 18] = ord("\n")
        return out

    def format(self, tick_base_us: np.ndarray, values: np.ndarray) -> tuple[bytes, np.ndarray]:
        """values: (n_ticks, n_cols) floats >= 0.  Returns the bytes and the byte offset of
        every tick's first line (length n_ticks + 1)."""
        n_t, n_c = values.shape
        if not np.isfinite(values).all() or (values < 0).any():
            raise ValueError("system values must be finite and >= 0")
        scaled = np.rint(values * _POW10[self.decimals][None, :]).astype(np.int64)
        ip = scaled // _POW10[self.decimals][None, :]
        fp = scaled % _POW10[self.decimals][None, :]
        nd = _n_digits(ip)
        dec = np.broadcast_to(self.decimals[None, :], (n_t, n_c))
        vlen = nd + 1 + dec
        plen = np.broadcast_to(self.prefix_len[None, :], (n_t, n_c))
        line_len = plen + vlen + self.tail_len
        flat_len = line_len.reshape(-1)
        starts = np.cumsum(flat_len) - flat_len
        total = int(flat_len.sum())
        buf = np.empty(total, dtype=np.uint8)
        # prefix: one 2-D copy per group of columns sharing a prefix length
        starts2 = starts.reshape(n_t, n_c)
        for L, cols_l, mat in self.prefix_groups:
            dst = starts2[:, cols_l]  # (n_t, k)
            buf[dst[:, :, None] + np.arange(L)] = mat[None, :, :]
        col = np.broadcast_to(np.arange(n_c)[None, :], (n_t, n_c)).reshape(-1)
        # value
        vpos = starts + plen.reshape(-1)
        ndf = nd.reshape(-1)
        _write_digits(buf, vpos, ip.reshape(-1), ndf)
        buf[vpos + ndf] = ord(".")
        _write_digits(buf, vpos + ndf + 1, fp.reshape(-1), dec.reshape(-1))
        # tail
        tails = self.tails(tick_base_us)
        tick = np.repeat(np.arange(n_t, dtype=np.int64), n_c)
        tail_row = tick * len(_GROUPS) + self.group_idx[col]
        tpos = vpos + vlen.reshape(-1)
        tails2 = tails.reshape(-1, self.tail_len)
        buf[tpos[:, None] + np.arange(self.tail_len)] = tails2[tail_row]
        tick_starts = np.append(starts[::n_c], total)
        return buf.tobytes(), tick_starts


# --------------------------------------------------------------------------------------------
# System metrics
# --------------------------------------------------------------------------------------------


def _system_columns(cores: int, gpus: int):
    cols: list[tuple[str, str, str, str]] = []
    dec: list[int] = []
    for c in range(cores):
        cols.append(("cpu", f"cpu{c}", "CPUUtilization", "cpu"))
        dec.append(2)
        cols.append(("cpu", f"cpu{c}", "I/OWaitPercentage", "cpu"))
        dec.append(2)
    for g in range(gpus):
        cols.append(("gpu", f"gpu{g}", "GPUUtilization", "gpu"))
        dec.append(1)
        cols.append(("gpu", f"gpu{g}", "GPUMemoryUtilization", "gpu"))
        dec.append(1)
    cols.append(("memory", "MemoryUsedPercent", "", "memory"))
    dec.append(2)
    for name in _IO_RECORDS:
        cols.append(("i/o", name, "", "i/o"))
        dec.append(2)
    for name, dim in _NET_RECORDS:
        cols.append(("network", name, dim, "network"))
        dec.append(2)
    return cols, np.array(dec)


def _node_phase_us(node: int, interval_us: int) -> int:
    """Sub-interval phase of a node's sampler: distinct per node, and small enough that every
    record of an instant (up to +16.6 ms) stays inside the same interval (hence the same minute)."""
    span = interval_us - 20_000 if interval_us > 40_000 else max(interval_us // 2, 1)
    return (137_000 + 29_113 * node) % span


def _system_values(
    rng: np.random.Generator,
    node: int,
    n_ticks: int,
    t_rel: np.ndarray,
    cores: int,
    gpus: int,
    nodes: int,
    duration_s: float,
    train_span: tuple[float, float],
    sc: Scenario,
    planted: dict,
    waiting: np.ndarray | None = None,
) -> np.ndarray:
    """(n_ticks, n_cols) values of one node, in _system_columns order. ``waiting``: the samples taken while the
    training process waited for data (``Scenario.data_wait_ms``), None when it never does."""
    t0, t1 = train_span
    training = (t_rel >= t0) & (t_rel < t1)
    init = t_rel < t0

    # --- planted CPU bottleneck and iowait spike ticks (exact counts) ---
    bneck = np.zeros(n_ticks, dtype=bool)
    if waiting is not None:  # in the loop: the GPUs idle while the loader's core works on the late batch
        outside = np.flatnonzero(~training)
        n_out = int(round(sc.cpu_bottleneck_fraction * outside.size))
        if n_out:
            bneck[rng.choice(outside, size=n_out, replace=False)] = True
        bneck |= training & waiting
    else:
        n_bneck = int(round(sc.cpu_bottleneck_fraction * n_ticks))
        if n_bneck:
            bneck[rng.choice(n_ticks, size=n_bneck, replace=False)] = True
    n_bneck = int(bneck.sum())
    n_io = int(round(sc.iowait_spike_fraction * n_ticks))
    io_spike = np.zeros(n_ticks, dtype=bool)
    if n_io:
        io_spike[rng.choice(n_ticks, size=n_io, replace=False)] = True

    # --- GPU ---
    idle_frac = _per_node(sc.gpu_idle_fraction, node)
    rand_idle = rng.random(n_ticks) < idle_frac
    stall = io_spike if sc.iowait_stalls_gpu else np.zeros(n_ticks, dtype=bool)
    busy = training & ~rand_idle & ~bneck & ~stall
    level = _per_node(sc.gpu_util_busy, node)
    gpu_util = np.empty((n_ticks, gpus))
    gpu_mem = np.empty((n_ticks, gpus))
    jump_ticks: dict[str, list[int]] = {}
    for g in range(gpus):
        lv = level + sum(d for (nn, gg, d) in sc.gpu_offsets if nn == node and gg == g)
        busy_v = np.clip(np.rint(rng.normal(lv, sc.gpu_noise, n_ticks)), 15, 100)
        idle_v = np.clip(np.rint(np.abs(rng.normal(0.0, 2.0, n_ticks))), 0, 5)
        gpu_util[:, g] = np.where(busy, busy_v, np.where(training | bneck, idle_v, 0.0))
        mem = np.clip(np.rint(rng.normal(sc.gpu_memory_base, 1.0, n_ticks)), 0, 100)
        resident = (t_rel >= t0 - 5.0) & (t_rel < t1)
        if sc.gpu_memory_growth:
            mem = mem + sc.gpu_memory_growth * np.clip((t_rel - t0) / max(t1 - t0, 1e-9), 0.0, 1.0)
            mem = np.clip(np.rint(mem), 0, 100)
        mem = np.where(resident, mem, 0.0)
        if sc.gpu_memory_jumps and (node, g) in set(map(tuple, sc.gpu_memory_jump_targets)):
            lo, hi = sc.gpu_memory_jump_window
            centers = np.linspace(lo, hi, sc.gpu_memory_jumps) * duration_s
            starts = []
            for c in centers:
                k0 = int(np.searchsorted(t_rel, c))
                k1 = int(np.searchsorted(t_rel, c + sc.gpu_memory_jump_s))
                mem[k0:k1] = np.clip(mem[k0:k1] + sc.gpu_memory_jump_size, 0, 100)
                starts.append(k0)
            jump_ticks[f"gpu{g}"] = starts
        gpu_mem[:, g] = mem

    # --- CPU ---
    cpu = rng.normal(sc.cpu_util, sc.cpu_noise, (n_ticks, cores))
    cpu[:, 0] += 20.0
    cpu = np.where(training[:, None], cpu, rng.normal(12.0, 4.0, (n_ticks, cores)) + 8.0 * init[:, None])
    cpu = np.clip(cpu, 0.0, 100.0)
    any_gpu_low = (gpu_util < 10).any(axis=1) if gpus else np.zeros(n_ticks, dtype=bool)
    cap = any_gpu_low & ~bneck
    cpu[cap] = np.minimum(cpu[cap], 89.9)
    if gpus == 0:
        # CPU-only: a bottleneck needs a low GPU, so nothing can be planted; keep cores < 90
        # in unplanted samples anyway for a uniform definition.
        cpu[~bneck] = np.minimum(cpu[~bneck], 89.9)
    bidx = np.flatnonzero(bneck)
    cpu[bidx, rng.integers(0, cores, bidx.size)] = rng.uniform(91.0, 100.0, bidx.size)
    iow = np.minimum(rng.exponential(0.6, (n_ticks, cores)), 8.0)
    iidx = np.flatnonzero(io_spike)
    iow[iidx, rng.integers(0, cores, iidx.size)] = rng.uniform(55.0, 95.0, iidx.size)

    # --- host memory, i/o, network ---
    memp = np.clip(14.0 + 9.0 * np.clip(t_rel / max(duration_s, 1.0), 0, 1) + 6.0 * training
                   + rng.normal(0, 0.15, n_ticks), 0, 100)
    if sc.host_memory_growth:
        memp = np.clip(memp + sc.host_memory_growth * np.clip((t_rel - t0) / max(t1 - t0, 1e-9), 0.0, 1.0), 0, 100)
    iops = np.abs(rng.normal(140.0, 35.0, n_ticks)) * np.where(training, 1.0, 0.4) + 400.0 * io_spike
    read = iops * rng.uniform(48_000.0, 80_000.0, n_ticks)
    write = np.abs(rng.normal(30_000.0, 20_000.0, n_ticks))
    write[rng.random(n_ticks) < 0.01] *= 300.0  # occasional checkpoint write
    if nodes > 1:
        alg = np.where(busy, rng.normal(2.4e8, 2.0e7, n_ticks), rng.normal(3.0e5, 1.0e5, n_ticks))
    else:
        alg = rng.normal(2.0e3, 8.0e2, n_ticks)
    alg_rx = np.abs(alg)
    alg_tx = np.abs(alg * rng.uniform(0.95, 1.05, n_ticks))
    plat_rx = np.abs(np.where(init & (t_rel > 5.0), rng.normal(1.6e8, 3.0e7, n_ticks),
                              rng.normal(6.0e3, 2.0e3, n_ticks)))
    plat_tx = np.abs(rng.normal(3.0e3, 1.0e3, n_ticks))

    parts = []
    for c in range(cores):
        parts.append(cpu[:, c])
        parts.append(iow[:, c])
    for g in range(gpus):
        parts.append(gpu_util[:, g])
        parts.append(gpu_mem[:, g])
    parts += [memp, iops, read, write, alg_rx, alg_tx, plat_rx, plat_tx]
    values = np.stack(parts, axis=1)

    planted["cpu_bottleneck_ticks"] = int(n_bneck)
    planted["iowait_spike_ticks"] = int(n_io)
    planted["gpu_memory_jump_ticks"] = jump_ticks
    planted["gpu_busy_ticks"] = int(busy.sum())
    return values


def _write_system(
    out_dir: str, node: int, tick_base_us: np.ndarray, values: np.ndarray, fmt: _SystemFormatter,
    stats: GenerationStats, chunk_lines: int = 250_000,
) -> None:
    n_ticks = tick_base_us.size
    minute = tick_base_us // 60_000_000
    bounds = np.flatnonzero(np.diff(minute)) + 1
    file_starts = np.concatenate([[0], bounds])
    file_ends = np.concatenate([bounds, [n_ticks]])
    per_chunk_ticks = max(1, chunk_lines // fmt.n_cols)
    i = 0
    nf = len(file_starts)
    while i < nf:
        # group whole minute files into a chunk of about chunk_lines lines
        j = i + 1
        while j < nf and file_ends[j] - file_starts[i] <= per_chunk_ticks:
            j += 1
        a, b = int(file_starts[i]), int(file_ends[j - 1])
        data, tick_off = fmt.format(tick_base_us[a:b], values[a:b])
        for f in range(i, j):
            fa, fb = int(file_starts[f]) - a, int(file_ends[f]) - a
            key = int(minute[file_starts[f]]) * 60
            d = os.path.join(out_dir, "system", "incremental", _hour_folder(key))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"{key}.algo-{node + 1}.json"), "wb") as fh:
                fh.write(data[tick_off[fa]:tick_off[fb]])
            stats.system_files += 1
            stats.system_records += (fb - fa) * fmt.n_cols
        stats.system_bytes += len(data)
        i = j


# --------------------------------------------------------------------------------------------
# Framework traces
# --------------------------------------------------------------------------------------------


def _step_schedule(rng: np.random.Generator, node: int, start_us: int, duration_s: float, sc: Scenario):
    """Returns dict of arrays describing the steps of one node's training process."""
    step_us = _per_node(sc.step_ms, node) * 1000.0
    first = start_us + int(sc.init_s * 1e6) + 250_000 * node
    end_limit = start_us + int((duration_s - sc.final_s) * 1e6)
    gap_ms = _per_node(sc.gap_ms, node)
    between_us = (gap_ms + sc.data_wait_ms) * 1000.0
    period = step_us + between_us
    if sc.eval_every and sc.eval_steps:
        per_block = sc.eval_every * period + sc.eval_steps * (0.4 * step_us + between_us)
        n_est = int((end_limit - first) / per_block * (sc.eval_every + sc.eval_steps)) + 8
    else:
        n_est = int((end_limit - first) / period) + 8
    n_est = max(n_est, 1)
    # mode sequence
    if sc.eval_every and sc.eval_steps:
        block = np.concatenate([np.zeros(sc.eval_every, dtype=np.int8), np.ones(sc.eval_steps, dtype=np.int8)])
        mode = np.resize(block, n_est)
    else:
        mode = np.zeros(n_est, dtype=np.int8)
    dur = step_us * np.exp(rng.normal(0.0, sc.step_jitter, n_est))
    dur = np.where(mode == 1, dur * 0.4, dur)
    gap = np.clip(rng.normal(gap_ms * 1000.0, gap_ms * 150.0, n_est), 1000.0, None)
    if sc.data_wait_ms:  # the batch is not ready: GetNext waits for the loader
        gap = gap + sc.data_wait_ms * 1000.0 * np.exp(rng.normal(0.0, 0.25, n_est))
    train_idx = np.flatnonzero(mode == 0)
    if sc.slow_every:
        beat = train_idx[sc.slow_every - 1::sc.slow_every]
        dur[beat] = dur[beat] * sc.slow_every_factor
    dur = np.rint(dur).astype(np.int64)
    gap = np.rint(gap).astype(np.int64)

    outl = np.zeros(0, dtype=np.int64)
    if sc.step_outliers:
        lo = sc.detailed_start + sc.detailed_steps + 20
        pool = train_idx[(train_idx >= lo) & (train_idx < int(n_est * 0.8))]
        outl = np.sort(rng.choice(pool, size=min(sc.step_outliers, pool.size), replace=False))
        dur[outl] = np.rint(dur[outl] * sc.step_outlier_factor).astype(np.int64)

    waits = np.zeros(0, dtype=np.int64)
    if sc.wait_outliers:  # evenly spread over the loop's first 80 %, away from the outliers and the detailed steps
        lo = sc.detailed_start + sc.detailed_steps + 20
        pool = train_idx[(train_idx >= lo) & (train_idx < int(n_est * 0.8))]
        pool = pool[~np.isin(pool, outl)]
        waits = pool[np.linspace(0, pool.size - 1, min(sc.wait_outliers, pool.size)).astype(np.int64)]
        gap[waits] = int(sc.wait_outlier_ms * 1000.0)

    def starts_of():
        s = np.empty(n_est, dtype=np.int64)
        s[0] = first + gap[0]
        s[1:] = first + np.cumsum(gap + dur)[:-1] + gap[1:]
        return s

    starts = starts_of()
    # keep every outlier step inside one minute (the rules' windows are minute-aligned)
    for k in outl:
        s = starts[k]
        e = s + dur[k]
        if s // 60_000_000 != e // 60_000_000:
            gap[k] += (e // 60_000_000) * 60_000_000 - s + 20_000
            starts = starts_of()
    keep = starts + dur <= end_limit
    n = int(np.argmin(keep)) if not keep.all() else n_est
    starts, dur, gap, mode = starts[:n], dur[:n], gap[:n], mode[:n]
    outl = outl[outl < n]
    waits = waits[waits < n]
    # per-mode step numbers (strings in the trace)
    stepnum = np.empty(n, dtype=np.int64)
    for m in (0, 1):
        idx = np.flatnonzero(mode == m)
        stepnum[idx] = np.arange(idx.size)
    return {"start": starts, "dur": dur, "gap": gap, "mode": mode, "stepnum": stepnum, "outliers": outl,
            "waits": waits, "slack_us": int(_per_node(sc.slack_ms, node) * 1000.0)}


def _waiting(sched: dict, at_us: np.ndarray) -> np.ndarray:
    """Which of the instants ``at_us`` fall in a DataLoaderIter::GetNext call of the schedule (the training
    process waiting for its next batch; the call ends 300 µs before its step, see _trace_events)."""
    begins = sched["start"] - sched["gap"]
    ends = sched["start"] - 300
    i = np.searchsorted(begins, at_us, side="right") - 1
    inside = np.zeros(at_us.size, dtype=bool)
    ok = i >= 0
    inside[ok] = at_us[ok] < ends[i[ok]]
    return inside


def _trace_events(sched: dict, pid: int, sc: Scenario):
    """All events of one process as parallel lists: phase, name, start_us, dur_us, args_json."""
    phase: list[str] = []
    name: list[str] = []
    start: list[int] = []
    dur: list[int] = []
    args: list[str] = []

    def add(p, nm, s, d, a):
        phase.append(p)
        name.append(nm)
        start.append(int(s))
        dur.append(int(d))
        args.append(a)

    st, du, gp, mo, sn = sched["start"], sched["dur"], sched["gap"], sched["mode"], sched["stepnum"]
    W = max(0, sc.dataloader_workers)
    init_name = "_MultiProcessingDataLoaderIter.__init__" if W else "_SingleProcessDataLoaderIter.__init__"
    pin = "true" if sc.pin_memory else "false"
    n = st.size
    train_count = 0
    waits = {int(i) for i in sched["outliers"]} if sc.step_outlier_wait else set()
    for i in range(n):
        s, d, g, m, k = int(st[i]), int(du[i]), int(gp[i]), int(mo[i]), int(sn[i])
        fetch_s = s - g
        if m == 0 and k % sc.steps_per_epoch == 0:
            add("DataLoaderIterInitialize", init_name, fetch_s - 1500, 1200,
                '{"num_workers": %d, "pin_memory": %s}' % (W, pin))
        if m == 1 and (i == 0 or mo[i - 1] == 0):
            add("DataLoaderIterInitialize", init_name, fetch_s - 1500, 1200,
                '{"num_workers": %d, "pin_memory": %s}' % (W, pin))
        add("DataLoaderIter", "DataLoaderIter::GetNext", fetch_s, max(g - 300, 200), '{"pid": %d}' % pid)
        if W:
            w = i % W
            wd = int(0.85 * W * (d + g)) if i else int(0.85 * (d + g))
            add("DataLoaderWorker", "DataLoaderWorker::fetch", fetch_s - wd, wd - 500,
                '{"pid": %d, "worker_id": %d}' % (pid + 40 + w, w))
        mode_name = "Step:ModeKeys.TRAIN" if m == 0 else "Step:ModeKeys.EVAL"
        add(mode_name, mode_name, s, d, '{"pid": %d, "step_num": "%d"}' % (pid, k))
        if i in waits:  # the loader started again in the step: the passes keep their usual length after it
            wait = d - int(round(d / sc.step_outlier_factor))
            add("DataLoaderIterInitialize", init_name, s + 100, wait - 200,
                '{"num_workers": %d, "pin_memory": %s}' % (W, pin))
            s, d = s + wait, d - wait
        work = d - sched["slack_us"] if m == 0 and 0 < sched["slack_us"] < d else d  # the rest: waiting, unrecorded
        fwd_s, fwd_d = s + work // 100, (work * 37) // 100
        add("Forward", "ResNet", fwd_s, fwd_d, '{"pid": %d, "step_num": "%d"}' % (pid, k))
        if m == 0:
            bwd_s, bwd_d = s + (work * 40) // 100, (work * 57) // 100
            add("Backward(post-forward)", "ResNet", bwd_s, bwd_d, '{"pid": %d, "step_num": "%d"}' % (pid, k))
            detailed = sc.detailed_start <= train_count < sc.detailed_start + sc.detailed_steps
            train_count += 1
            if detailed:
                nsub = len(_SUBMODULES)
                fs, bs = fwd_d // nsub, bwd_d // nsub
                for j, sub in enumerate(_SUBMODULES):
                    a = '{"pid": %d, "step_num": "%d"}' % (pid, k)
                    ss = fwd_s + j * fs
                    add("Forward-SubModuleInternal", sub, ss, fs - 50, a)
                    add("cpu_functions", _CPU_OPS[j], ss + 20, fs // 3,
                        '{"tid": %d, "step_num": %d, "device": "cpu"}' % (pid, k))
                    gs = ss + fs // 3 + 40
                    add("gpu_functions-dev:0", _CPU_OPS[j], gs, (fs * 55) // 100,
                        '{"tid": %d, "step_num": %d, "event_name": "%s", "device": 0, '
                        '"start_cpu_thread": %d, "cpu_thread_start_time": %d}'
                        % (pid, k, _GPU_KERNELS[j], pid, ss + 20))
                    bb = bwd_s + (nsub - 1 - j) * bs
                    add("Backward-SubModuleInternal", sub, bb, bs - 50, a)
                    add("gpu_functions-dev:0", _CPU_OPS[j] + "_backward", bb + 30, (bs * 70) // 100,
                        '{"tid": %d, "step_num": %d, "event_name": "%s", "device": 0, '
                        '"start_cpu_thread": %d, "cpu_thread_start_time": %d}'
                        % (pid, k, _GPU_KERNELS[j], pid, bb))
    return phase, name, np.array(start, dtype=np.int64), np.array(dur, dtype=np.int64), args


def _write_traces(out_dir: str, node: int, pid: int, open_us: int, events, stats: GenerationStats) -> None:
    phase, name, start, dur, args = events
    end = start + dur
    order = np.argsort(end, kind="stable")
    fidx = (end[order] - open_us) // int(_TRACE_WRITE_TIME_S * 1e6)
    bounds = np.flatnonzero(np.diff(fidx)) + 1
    f_starts = np.concatenate([[0], bounds])
    f_ends = np.concatenate([bounds, [order.size]])
    nodeid = f"{pid}-algo-{node + 1}"
    for a, b in zip(f_starts, f_ends):
        sel = order[a:b]
        end_us = int(end[sel].max())
        opened = open_us + int(fidx[a]) * int(_TRACE_WRITE_TIME_S * 1e6)
        base = min(opened, int(start[sel].min()))
        lines = [
            '{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": %d}}' % base,
            '{"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}}',
        ]
        declared: set[str] = set()
        for e in sel:
            p = phase[e]
            ppid = _PHASE_PID[p]
            if p not in declared:
                declared.add(p)
                lines.append('{"name": "process_name", "ph": "M", "pid": %d, "args": {"name": "%s"}}' % (ppid, p))
                lines.append('{"name": "process_sort_index", "ph": "M", "pid": %d, "args": {"sort_index": %d}}'
                             % (ppid, ppid))
            lines.append('{"name": "%s", "pid": %d, "ph": "X", "ts": %d, "dur": %d, "args": %s}'
                         % (name[e], ppid, int(start[e]) - base, int(dur[e]), args[e]))
        data = ("[\n" + ",\n".join(lines) + "\n]\n").encode()
        d = os.path.join(out_dir, "framework", "pevents", _hour_folder(end_us / 1e6))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{end_us}_{nodeid}_pythontimeline.json"), "wb") as fh:
            fh.write(data)
        stats.trace_files += 1
        stats.trace_events += int(b - a)
        stats.trace_bytes += len(data)


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def generate(
    out_dir: str | os.PathLike,
    *,
    nodes: int = 2,
    cores: int = 8,
    gpus: int = 1,
    duration_s: float = 900,
    interval_ms: int = 500,
    start_epoch: int = DEFAULT_START_EPOCH,
    seed: int = 0,
    scenario: Scenario = Scenario(),
    framework: bool = True,
    node_subset: tuple[int, ...] | None = None,
) -> GenerationStats:
    """Write a synthetic raw profile under ``out_dir`` and return what was written/planted.

    ``node_subset`` (0-based node indices) writes only those nodes of the described cluster
    (the data of a node does not depend on which other nodes are written) — useful to
    smoke-test the speed of a huge configuration.

    ``stats.planted`` holds, per node ``algo-N``: ``cpu_bottleneck_ticks`` and
    ``iowait_spike_ticks`` (exact counts), ``gpu_memory_jump_ticks`` (sample index of each
    pulse's rising edge per GPU), ``gpu_busy_ticks``, ``first_step_us``, ``last_step_end_us``,
    ``train_steps``, ``eval_steps``, ``step_outliers`` (step_num strings) and the framework
    node id; plus ``job_start_us`` / ``job_end_us``.
    """
    t_begin = time.perf_counter()
    out_dir = os.fspath(out_dir)
    if nodes < 1 or cores < 1 or gpus < 0 or interval_ms <= 0 or duration_s <= 0:
        raise ValueError("nodes, cores, interval_ms, duration_s must be positive and gpus >= 0")
    sc = scenario
    interval_us = int(interval_ms * 1000)
    n_ticks = int(duration_s * 1e6 // interval_us)
    cols, dec = _system_columns(cores, gpus)
    stats = GenerationStats(out_dir=out_dir, nodes=nodes, cores=cores, gpus=gpus, ticks_per_node=n_ticks,
                            records_per_tick=len(cols))
    start_us = int(start_epoch) * 1_000_000
    planted: dict = {"job_start_us": start_us, "nodes": {}}
    job_end_us = start_us
    for node in (range(nodes) if node_subset is None else node_subset):
        node_name = f"algo-{node + 1}"
        rng_fw = np.random.default_rng([seed, node, 1])
        rng_sys = np.random.default_rng([seed, node, 0])
        p: dict = {}
        sched = _step_schedule(rng_fw, node, start_us, duration_s, sc)
        if sched["start"].size:
            first_us = int(sched["start"][0])
            last_end_us = int((sched["start"] + sched["dur"]).max())
        else:
            first_us = last_end_us = start_us + int(duration_s * 1e6)
        phase_us = _node_phase_us(node, interval_us)
        jitter = rng_sys.integers(0, 3000, n_ticks)
        tick_base = start_us + phase_us + np.arange(n_ticks, dtype=np.int64) * interval_us + jitter
        t_rel = (tick_base - start_us) / 1e6
        waiting = _waiting(sched, tick_base + _GROUP_OFFSETS_US["gpu"]) if sc.data_wait_ms else None
        values = _system_values(rng_sys, node, n_ticks, t_rel, cores, gpus, nodes, duration_s,
                                ((first_us - start_us) / 1e6, (last_end_us - start_us) / 1e6), sc, p, waiting)
        fmt = _SystemFormatter(node_name, cols, dec)
        _write_system(out_dir, node, tick_base, values, fmt, stats)
        job_end_us = max(job_end_us, int(tick_base[-1]) + _GROUP_OFFSETS_US["network"])
        # Every node runs the same container entrypoint, so the training process has the same
        # pid on every node (as on SageMaker); the node part keeps the trace node ids distinct.
        pid = 27
        p.update(first_step_us=first_us, last_step_end_us=last_end_us,
                 train_steps=int((sched["mode"] == 0).sum()), eval_steps=int((sched["mode"] == 1).sum()),
                 step_outliers=[str(int(sched["stepnum"][k])) for k in sched["outliers"]],
                 wait_outliers=[str(int(sched["stepnum"][k])) for k in sched["waits"]],
                 framework_node_id=f"algo-{node + 1}-{pid}", pid=pid)
        if framework and sched["start"].size:
            events = _trace_events(sched, pid, sc)
            _write_traces(out_dir, node, pid, start_us + int(sc.init_s * 0.5e6), events, stats)
        planted["nodes"][node_name] = p
    planted["job_end_us"] = job_end_us
    sysdir = os.path.join(out_dir, "system")
    os.makedirs(sysdir, exist_ok=True)
    with open(os.path.join(sysdir, "training_job_end.ts"), "w") as fh:
        fh.write(f"{job_end_us / 1e6:.6f}\n")
    stats.planted = json.loads(json.dumps(planted))
    stats.seconds = time.perf_counter() - t_begin
    return stats
