"""Samples of the host (psutil) and of NVIDIA GPUs (NVML, optional) in SageMaker's vocabulary.

Each call to :meth:`Sampler.sample` returns the records of one sampling instant, as the SageMaker
profiler agent wrote them (spec A.2): per core ``CPUUtilization`` and ``I/OWaitPercentage``,
``MemoryUsedPercent``, ``IOPS`` and disk throughput, network throughput (``Algorithm``: the host's
interfaces; there is no separate platform traffic outside SageMaker), and per GPU
``GPUUtilization`` / ``GPUMemoryUtilization`` (NVML's utilization rates: kernel activity and
memory-controller activity). Rates are deltas since the previous call.
"""

from __future__ import annotations

import time

NODE_ID = "algo-1"


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
        now = self._counters()
        (t0, cpus0, disk0, net0), (t1, cpus1, disk1, net1) = self._last, now
        self._last = now
        dt = max(t1 - t0, 1e-6)
        out = []
        for i, (a, b) in enumerate(zip(cpus0, cpus1)):
            total = sum(b) - sum(a)
            idle = (b.idle - a.idle) + (getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0))
            iowait = getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0)
            busy = 100.0 * (1.0 - idle / total) if total > 0 else 0.0
            out.append(self._record("cpu", f"cpu{i}", "CPUUtilization", min(max(busy, 0.0), 100.0), ts))
            out.append(self._record("cpu", f"cpu{i}", "I/OWaitPercentage",
                                    min(max(100.0 * iowait / total, 0.0), 100.0) if total > 0 else 0.0, ts))
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
        return out

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass
