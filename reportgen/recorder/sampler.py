"""Samples of the host (psutil) and of NVIDIA GPUs (NVML, optional) in SageMaker's vocabulary.

Each call to :meth:`Sampler.sample` returns the records of one sampling instant, as the SageMaker
profiler agent wrote them (spec A.2): per core ``CPUUtilization`` and ``I/OWaitPercentage``,
``MemoryUsedPercent``, ``IOPS`` and disk throughput, network throughput (``Algorithm``: the host's
interfaces; there is no separate platform traffic outside SageMaker), and per GPU
``GPUUtilization`` / ``GPUMemoryUtilization`` (NVML's utilization rates: kernel activity and
memory-controller activity, the share of time the GPU's memory was read or written: SageMaker's name and
meaning, not how full it is). How full it is comes apart, from NVML's memory info: ``GPUMemoryUsedPercent``
(used of total), ``GPUMemoryUsedBytes`` and ``GPUMemoryTotalBytes``. Rates are deltas since the previous call.
"""

from __future__ import annotations

import os
import time

NODE_ID = "algo-1"
BUSIEST = 3  # the other threads of the command's own process named at each tick (the most CPU over it)
BUSY_THREAD_CORES = 0.01  # a thread under this share of a core over a tick is not named


def thread_name(pid: int, tid: int) -> str:
    """A thread's name as the kernel keeps it (``comm``: the process's name unless the thread was named), or "?"
    where the thread ended before it was read."""
    try:
        with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()[:15] or "?"
    except OSError:
        return "?"


def schedstats(pid: int) -> dict[int, tuple[float, float]] | None:
    """Each thread's time on a core and time runnable but waiting for a core, in seconds (tid -> (on, waiting)):
    the scheduler's own account (``/proc/<pid>/task/<tid>/schedstat``, in ns). A starved process (the cores held by
    others) and a sleeping one (waiting on I/O) both use little CPU; only the wait tells them apart. The time on a
    core is exact where ``cpu_times`` counts 10 ms clock ticks (0.02 cores at a 500 ms tick). None where the kernel
    keeps no such account (not Linux) or the process is gone."""
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return None
    stats = {}
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat", encoding="ascii") as f:
                fields = f.read().split()
            stats[int(tid)] = (int(fields[0]) / 1e9, int(fields[1]) / 1e9)
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return stats


def load_nvml():
    """The ``pynvml`` module (package nvidia-ml-py) initialised, or (None, reason) when absent."""
    try:
        import pynvml  # noqa: PLC0415 - optional dependency, imported only when recording
    except ImportError:
        return None, "nvidia-ml-py is not installed (pip install 'reportgen[gpu]')"
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception as err:  # NVMLError and friends: no driver, no GPU
        return None, f"NVML unavailable ({err})"
    if count == 0:
        return None, "no NVIDIA GPU found"
    return pynvml, ""


class Sampler:
    def __init__(self, nvml=None, node_id: str = NODE_ID):
        import psutil

        self.psutil = psutil
        self.node_id = node_id
        self.nvml = nvml
        self.gpus = []
        if nvml is not None:
            self.gpus = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        self.host_cpu_pct: float | None = None  # all cores' busy share over the last tick
        self.last_ts = time.time()
        self._last = self._counters()

    def _counters(self):
        ps = self.psutil
        try:
            disk = ps.disk_io_counters()
        except Exception:  # no disks visible (some containers)
            disk = None
        try:
            net = ps.net_io_counters()
        except Exception:
            net = None
        return time.monotonic(), ps.cpu_times(percpu=True), disk, net

    def _record(self, type_: str, name: str, dimension: str, value: float, ts: float) -> dict:
        return {"Type": type_, "Name": name, "Dimension": dimension, "Value": round(float(value), 4),
                "NodeId": self.node_id, "Timestamp": round(ts, 6)}

    def sample(self) -> list[dict]:
        ts = time.time()
        self.last_ts = ts
        now = self._counters()
        (t0, cpus0, disk0, net0), (t1, cpus1, disk1, net1) = self._last, now
        self._last = now
        dt = max(t1 - t0, 1e-6)
        out = []
        busy_all, total_all = 0.0, 0.0
        for i, (a, b) in enumerate(zip(cpus0, cpus1)):
            total = sum(b) - sum(a)
            idle = (b.idle - a.idle) + (getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0))
            iowait = getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0)
            busy = 100.0 * (1.0 - idle / total) if total > 0 else 0.0
            busy_all, total_all = busy_all + max(total - idle, 0.0), total_all + max(total, 0.0)
            out.append(self._record("cpu", f"cpu{i}", "CPUUtilization", min(max(busy, 0.0), 100.0), ts))
            out.append(self._record("cpu", f"cpu{i}", "I/OWaitPercentage",
                                    min(max(100.0 * iowait / total, 0.0), 100.0) if total > 0 else 0.0, ts))
        self.host_cpu_pct = 100.0 * busy_all / total_all if total_all > 0 else None  # all cores, this tick
        out.append(self._record("memory", "MemoryUsedPercent", "", self.psutil.virtual_memory().percent, ts))
        if disk0 is not None and disk1 is not None:
            ops = (disk1.read_count - disk0.read_count) + (disk1.write_count - disk0.write_count)
            out.append(self._record("i/o", "IOPS", "", ops / dt, ts))
            out.append(self._record("i/o", "ReadThroughputInBytesPerSecond", "",
                                    (disk1.read_bytes - disk0.read_bytes) / dt, ts))
            out.append(self._record("i/o", "WriteThroughputInBytesPerSecond", "",
                                    (disk1.write_bytes - disk0.write_bytes) / dt, ts))
        if net0 is not None and net1 is not None:
            out.append(self._record("network", "ReceiveBytesPerSecond", "Algorithm",
                                    max(net1.bytes_recv - net0.bytes_recv, 0) / dt, ts))
            out.append(self._record("network", "TransmitBytesPerSecond", "Algorithm",
                                    max(net1.bytes_sent - net0.bytes_sent, 0) / dt, ts))
        for i, handle in enumerate(self.gpus):
            try:
                rates = self.nvml.nvmlDeviceGetUtilizationRates(handle)
            except Exception:  # a GPU that fell off the bus costs its samples, not the recording
                continue
            out.append(self._record("gpu", f"gpu{i}", "GPUUtilization", rates.gpu, ts))
            out.append(self._record("gpu", f"gpu{i}", "GPUMemoryUtilization", rates.memory, ts))
            try:
                info = self.nvml.nvmlDeviceGetMemoryInfo(handle)
            except Exception:
                continue
            if info.total > 0:
                out.append(self._record("gpu", f"gpu{i}", "GPUMemoryUsedPercent", 100.0 * info.used / info.total, ts))
                out.append(self._record("gpu", f"gpu{i}", "GPUMemoryUsedBytes", info.used, ts))
                out.append(self._record("gpu", f"gpu{i}", "GPUMemoryTotalBytes", info.total, ts))
        return out

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass


class ProcessTree:
    """CPU and RSS of the recorded command's process tree (the command and every descendant) at each tick,
    beside the host's: on a shared machine the host's CPU is not the job's.

    CPU is the tree's CPU seconds (user + system) over the tick, in cores and as a share of the host's
    cores; ``RunQueueCores`` the time its threads were runnable but waited for a core (the scheduler's run queue:
    :func:`schedstats`), in cores, None where the kernel does not say. ``ChildCPUCores`` is the part of ``CPUCores``
    that the command's descendants used (its own process left out; from the scheduler's exact time on a core where
    the kernel keeps it, else from ``cpu_times``): a DataLoader's workers stop working when the loop stops asking
    for batches, so their last busy tick marks the loop's end where they live on after it. A thread that ends between two ticks loses
    its last part of that wait (a few ms at most). A descendant that exits between two ticks is counted once: the part seen while it ran, then
    what its parent collects when it is reaped (``children_user``/``children_system``) less that part.
    The command's own process is also split by thread (:meth:`_threads`): a thread beside the training loop is what
    no trace of the loop's thread shows.
    """

    def __init__(self, psutil, pid: int):
        self.psutil = psutil
        self.pid = pid
        self.cores = psutil.cpu_count() or 1
        self._last: dict[int, tuple[float, float]] = {}  # pid -> (own CPU s, reaped children's CPU s)
        self._procs: dict[int, object] = {}
        self._pending = 0.0  # CPU seconds counted for processes that exited and are not yet reaped
        self._t = time.monotonic()
        self.cpu_s = 0.0  # the tree's CPU seconds over the whole recording
        self.rss_peak = 0
        self.pids: set[int] = {pid}
        self._delays: dict[int, float] = {}  # tid -> its run-queue wait so far (s)
        self._on_core: dict[int, float] = {}  # a descendant's tid -> its time on a core so far (s)
        self.run_queue_s: float | None = None  # the tree's run-queue wait over the recording; None: never known
        self._own: dict[int, tuple[float, float]] = {}  # the command's own threads -> (on a core, waiting for one) so far (s)

    def _tree(self) -> list:
        ps = self.psutil
        try:
            root = self._procs.get(self.pid) or ps.Process(self.pid)
            self._procs[self.pid] = root
            found = [root, *root.children(recursive=True)]
        except (ps.NoSuchProcess, ps.AccessDenied, ps.ZombieProcess):
            return []
        procs = []
        for proc in found:  # the same Process objects tick after tick (psutil caches per object)
            procs.append(self._procs.setdefault(proc.pid, proc))
        return procs

    def sample(self, host_pct: float | None, ts: float) -> dict:
        ps = self.psutil
        now = time.monotonic()
        dt = max(now - self._t, 1e-6)
        self._t = now
        seen: dict[int, tuple[float, float]] = {}
        rss = 0
        delays: dict[int, float] = {}
        on_core: dict[int, float] = {}
        known = False
        own_threads: dict[int, tuple[float, float]] | None = None
        for proc in self._tree():
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    mem = proc.memory_info().rss
            except (ps.NoSuchProcess, ps.AccessDenied, ps.ZombieProcess):
                continue
            threads = schedstats(proc.pid)
            if threads is not None:
                known = True
                delays.update((tid, waited) for tid, (_, waited) in threads.items())
                if proc.pid != self.pid:
                    on_core.update((tid, on) for tid, (on, _) in threads.items())
                else:
                    own_threads = dict(threads)
            seen[proc.pid] = (times.user + times.system,
                              getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0))
            rss += mem
        delta = 0.0
        reaped = 0.0
        descendants = 0.0
        for pid, (own, children) in seen.items():
            last_own, last_children = self._last.get(pid, (0.0, children))
            delta += max(own - last_own, 0.0)
            if pid != self.pid:
                descendants += max(own - last_own, 0.0)
            reaped += max(children - last_children, 0.0)
        for pid in set(self._last) - set(seen):  # exited: what was counted of it waits for its reaping
            self._pending += self._last[pid][0]
            self._procs.pop(pid, None)
        extra = max(reaped - self._pending, 0.0)
        self._pending = max(self._pending - reaped, 0.0)
        delta += extra
        descendants += extra  # a reaped process is a descendant
        self._last = seen
        self.pids |= set(seen)
        self.cpu_s += delta
        self.rss_peak = max(self.rss_peak, rss)
        cores_used = delta / dt
        queued = None
        if known:  # a thread first seen started after the recording did: all its wait is inside it
            waited = sum(max(d - self._delays.get(tid, 0.0), 0.0) for tid, d in delays.items())
            self._delays = delays
            descendants = sum(max(on - self._on_core.get(tid, 0.0), 0.0) for tid, on in on_core.items())
            self._on_core = on_core
            self.run_queue_s = (self.run_queue_s or 0.0) + waited
            queued = round(waited / dt, 4)
        record = {"Timestamp": round(ts, 6), "CPUCores": round(cores_used, 4),
                  "CPUPercentOfHost": round(min(100.0 * cores_used / self.cores, 100.0), 4),
                  "HostCPUPercent": None if host_pct is None else round(host_pct, 4),
                  "RSSBytes": rss, "Processes": len(seen), "RunQueueCores": queued,
                  "ChildCPUCores": round(descendants / dt, 4)}
        if own_threads and self.pid in own_threads:  # its first thread read: the split means something
            record.update(self._threads(own_threads, dt))
        return record

    def _threads(self, own: dict[int, tuple[float, float]], dt: float) -> dict:
        """The command's own process split by thread over the tick, in cores: ``MainThreadCPUCores`` (its first
        thread, the one a script's loop runs in) and ``MainThreadRunQueueCores`` (its wait for a core: what it neither
        used nor waited for, it slept — on the GIL, a lock, I/O, a queue), ``OtherThreadsCPUCores`` (all its other
        threads: a Python thread beside the loop holds the GIL the loop's thread must take back; the runtimes' own
        pools) and ``BusiestThreads``, the ``BUSIEST`` other threads that used the most, [name, thread id, cores] (the
        kernel's ``comm``, 15 characters; at most ``BUSIEST`` names read a tick). A thread first seen started within
        the tick (all its time is inside it); one that ended since the last loses its last part (a tick at most)."""
        used = {tid: max(on - self._own.get(tid, (0.0, 0.0))[0], 0.0) for tid, (on, _) in own.items()}
        main_wait = max(own[self.pid][1] - self._own.get(self.pid, (0.0, 0.0))[1], 0.0)
        self._own = own
        main = used.pop(self.pid, 0.0)
        busiest = []
        for tid, seconds in sorted(used.items(), key=lambda item: -item[1])[:BUSIEST]:
            if seconds / dt >= BUSY_THREAD_CORES:
                busiest.append([thread_name(self.pid, tid), tid, round(seconds / dt, 4)])
        return {"MainThreadCPUCores": round(main / dt, 4), "MainThreadRunQueueCores": round(main_wait / dt, 4),
                "OtherThreadsCPUCores": round(sum(used.values()) / dt, 4),
                "BusiestThreads": busiest}
