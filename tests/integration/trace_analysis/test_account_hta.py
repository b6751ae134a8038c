"""The step-time account of a GPU rank against Holistic Trace Analysis' own split of the same trace.

HTA 0.5.0's ``get_temporal_breakdown`` (``TraceAnalysis(trace_dir, include_last_profiler_step=True)``,
``HTA_DISABLE_NS_ROUNDING=1``; recorded once in a throwaway venv) splits the GPU's active window (first to last GPU
activity) into idle, compute (the union of compute kernels) and non-compute (the rest of the busy time:
communication and memory kernels with no compute beside them). The account splits the profiled steps. Both are unions
of the same intervals, so on every GPU fixture and on our own GPU recordings

* the account's GPU-busy slices ``compute + exposed communication + memory_copies`` = ``gpu.busy_ms``, the union of
  GPU activity inside the steps (``memory_copies`` less ``gpu.copies_idle_ms``, the GPU idle while the host was in a
  pageable copy, which the account gives the copy); the idle slices (with that part) plus the communication slice's host part (GPU idle while the host
  was in a collective call, which the account files under communication) = ``gpu.idle_ms`` = HTA's idle split
  (host wait, kernel wait, other) clipped to the steps plus the steps' time outside the GPU's window;
* ``gpu.exposed_communication_ms`` = ``gpu_analysis.overlap.exposed_in_steps_ms`` (HTA's overlap inside the steps);
* and what lies in the steps plus what lies outside them (measured here from the trace, on its own) is HTA's number
  for the whole window: compute, non-compute and idle, to the µs (and the compute and non-compute pieces of
  ``kernel_type_split_ms``, HTA's kernel breakdown with overlaps) — except on hta-resnet-v100-1gpu, where HTA keeps
  only activities launched among the CPU events it keeps (19.6 µs less compute, 11.6 µs less non-compute than the
  trace holds) and its relative ns times separate what reportgen's absolute µs (0.25 µs resolution) cannot (idle
  8.0 µs more): the reportgen-parity tests document both (test_hta_parity.py, test_hta_idle_per_stream.py); and on
  our H100 recordings (torch 2, ns times), within 0.01 % of the window: the resolution of absolute epoch µs.
"""

from __future__ import annotations

import numpy as np
import pytest

from reportgen.readers import trace_model as k
from reportgen.readers.kineto_trace import read_trace
from reportgen.trace_analysis.analysis import steps_of
from reportgen.trace_analysis.classify import is_communication_kernel
from reportgen.trace_analysis.outputs import analyze_job
from tests.support.paths import RAW, RECORDINGS, need

# HTA 0.5.0 get_temporal_breakdown, µs: rank -> (idle, compute, non-compute, window)
HTA = {"hta-resnet-v100-1gpu": {"0": (7574.786, 468153.602, 4300.839, 480029.227)},
       "hta-trace-diff-rank3of8": {"3": (76007.0, 281336.0, 107251.0, 464594.0)},
       "hta-sampled-128rank": {"0": (675191.0, 210320.0, 337336.0, 1222847.0),
                               "1": (651136.0, 271973.0, 308077.0, 1231186.0)}}
# the same on our H100 recordings (torch 2, ns times), rank label -> (idle, compute, non-compute, window)
HTA_RECORDINGS = {"gpu-host-sync/h100-host-sync": {"gpu_host-sync": (73346.538258, 144321.904, 11190.65,
                                                                      228859.092258)},
                  "gpu-input/w0": {"vm_442": (418742.71982, 58042.055516, 9528.82, 486313.595336)},
                  "gpu-input/w4": {"vm_442": (56298.641555, 58088.247977, 1408.851, 115795.740531)}}
EXACT = ("hta-trace-diff-rank3of8", "hta-sampled-128rank")  # the definitions agree to the µs
GPU_FIXTURES = [*HTA, "kineto-resnet50-num-workers-0", "kineto-resnet50-num-workers-4"]
IDLE_SLICES = ("data_wait", "host_blocked", "memory_management", "compilation", "dispatch", "no_operator")
US = 1e-3  # ms: one µs

GPU_RECORDINGS = ["gpu-host-sync/h100-host-sync", "gpu-input/w0", "gpu-input/w4"]  # ours, recorded on an H100


def _ranks(folder):
    files = sorted(p for p in folder.iterdir() if p.name.endswith(".json.gz"))  # not truth.json
    doc, _ = analyze_job(files)
    return doc["ranks"]


def _check_identities(ranks):
    assert ranks
    for label, rank in ranks.items():
        a, gpu = rank["account"], rank["account"]["gpu"]
        s = a["slices_ms"]
        assert a["perspective"] == "device", label
        # the busy slices are the GPU's busy time in the steps; memory_copies holds the GPU's idle while the host was
        # in a pageable copy too (the copy's time: docs/diagnosis.md, the GPU causes' precedence), kept apart
        copies_idle = gpu.get("copies_idle_ms", 0.0)
        assert s["compute"] + gpu["exposed_communication_ms"] + s["memory_copies"] - copies_idle == pytest.approx(
            gpu["busy_ms"], abs=US)
        assert gpu["busy_ms"] + gpu["idle_ms"] == pytest.approx(a["step_ms"], abs=US)
        # the idle slices (with the GPU's idle under host-side collective calls) are HTA's idle split in the steps
        host_collectives = s["communication"] - gpu["exposed_communication_ms"]
        assert host_collectives >= -US, label
        assert sum(s[key] for key in IDLE_SLICES) + host_collectives + copies_idle == pytest.approx(gpu["idle_ms"],
                                                                                                    abs=US)
        assert sum(gpu["idle_split_ms"].values()) == pytest.approx(gpu["idle_ms"], abs=US)
        whole = rank["gpu"]["window_idle_split_ms"]  # the same classification over the whole window
        for key in whole:
            assert gpu["idle_split_ms"][key] <= whole[key] + US
        # the exposed communication is HTA's overlap inside the steps
        assert gpu["exposed_communication_ms"] == pytest.approx(rank["gpu_analysis"]["overlap"]["exposed_in_steps_ms"],
                                                                abs=US)


@pytest.mark.fixtures
@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_the_account_is_htas_split_in_the_steps_on_every_gpu_fixture(name):
    _check_identities(_ranks(need(RAW / name)))


@pytest.mark.parametrize("name", GPU_RECORDINGS)
def test_the_account_is_htas_split_in_the_steps_on_our_gpu_recordings(name):
    _check_identities(_ranks(RECORDINGS / name))


def _union(starts, ends):
    order = np.argsort(starts, kind="stable")
    out = []
    for s, e in zip(starts[order], ends[order]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return np.array(out, dtype=np.float64).reshape(-1, 2)


def _inside(iv, steps):
    """How much of the disjoint intervals ``iv`` lies inside the (disjoint) steps, µs."""
    lo, hi = steps[:, 0][None, :], steps[:, 1][None, :]
    return float(np.clip(np.minimum(iv[:, 1:2], hi) - np.maximum(iv[:, 0:1], lo), 0, None).sum())


def _outside_the_steps(path):
    """µs outside the steps of one rank's trace file, measured from the file on its own: compute-kernel time, the
    rest of the GPU's busy time, and the idle time inside its active window (first to last GPU activity)."""
    t = read_trace(path)
    steps = np.array([[s["start_us"], s["start_us"] + s["dur_us"]] for s in steps_of(t)])
    kernels = t.rows(k.KERNEL)
    comm = kernels & np.array([is_communication_kernel(t.names[i]) for i in t.name])
    busy_rows = t.rows(k.KERNEL, k.MEMCPY, k.MEMSET)
    busy = _union(t.start_us[busy_rows], t.end_us[busy_rows])
    compute = _union(t.start_us[kernels & ~comm], t.end_us[kernels & ~comm])
    window = np.array([[busy[0, 0], busy[-1, 1]]])
    busy_out = float((busy[:, 1] - busy[:, 0]).sum()) - _inside(busy, steps)
    compute_out = float((compute[:, 1] - compute[:, 0]).sum()) - _inside(compute, steps)
    window_out = float(window[0, 1] - window[0, 0]) - _inside(window, steps)
    return t.rank, {"compute": compute_out, "non_compute": busy_out - compute_out, "idle": window_out - busy_out}


def _check_against_hta(files, expected: dict, tolerance_us: float):
    doc, _ = analyze_job(files)
    measured = dict(_outside_the_steps(path) for path in files)
    for label, (idle, compute, non_compute, window) in expected.items():
        rank = doc["ranks"][label]
        a, gpu = rank["account"], rank["account"]["gpu"]
        outside = measured[rank["rank"]]
        ours = {"compute": a["slices_ms"]["compute"] * 1000 + outside["compute"],
                "non_compute": (gpu["exposed_communication_ms"] + a["slices_ms"]["memory_copies"]
                                - gpu.get("copies_idle_ms", 0.0)) * 1000
                + outside["non_compute"],
                "idle": sum(v for key, v in gpu["idle_split_ms"].items() if key != "outside_window") * 1000
                + outside["idle"]}
        assert ours["idle"] == pytest.approx(rank["gpu"]["window_idle_ms"] * 1000, abs=1.0)
        assert sum(ours.values()) == pytest.approx(rank["gpu"]["window_ms"] * 1000, abs=1.0)
        split = rank["gpu_analysis"]["kernel_type_split_ms"]  # HTA's kernel breakdown with overlaps, whole trace
        assert ours["compute"] == pytest.approx(sum(v for kind, v in split.items() if "compute" in kind) * 1000,
                                                abs=1.0)
        assert ours["non_compute"] == pytest.approx(sum(v for kind, v in split.items() if "compute" not in kind)
                                                    * 1000, abs=1.0)
        assert ours == pytest.approx({"compute": compute, "non_compute": non_compute, "idle": idle}, abs=tolerance_us)
        assert sum(ours.values()) == pytest.approx(window, abs=tolerance_us)


@pytest.mark.fixtures
@pytest.mark.parametrize("name", list(HTA))
def test_the_steps_and_the_rest_of_the_window_are_htas_temporal_breakdown(name):
    files = sorted(p for p in need(RAW / name).iterdir() if p.name.endswith(".json.gz"))
    _check_against_hta(files, HTA[name], 1.0 if name in EXACT else 20.0)  # µs; hta-resnet: 19.6 at most


@pytest.mark.parametrize("name", list(HTA_RECORDINGS))
def test_the_steps_and_the_rest_of_the_window_are_htas_temporal_breakdown_on_our_recordings(name):
    """torch 2 writes ns times: HTA keeps them; reportgen's absolute epoch µs in float64 step by 0.25 µs, which over
    1,808 GPU operations (h100-host-sync), many under 2 µs, moves up to 15 µs (0.0064 % of the window) between busy
    and idle. The same trace with its times made relative (``baseTimeNanoseconds`` dropped) gives HTA's numbers to
    0.001 µs."""
    files = sorted(p for p in (RECORDINGS / name).iterdir() if p.name.endswith(".json.gz"))
    window = next(iter(HTA_RECORDINGS[name].values()))[3]
    _check_against_hta(files, HTA_RECORDINGS[name], 1e-4 * window)
