"""The GPU analyses HTA and TensorBoard show (reportgen.trace_analysis.gpu_analyses), each asserted on a small
hand-made trace whose numbers are worked out by hand below (times in µs, one step [0, 1000)).

GPU (device 0): K1 sgemm [100, 300) stream 7; K2 add<float> [300, 302); NCCL all-reduce [250, 450) stream 20;
Memcpy HtoD (Pageable) [500, 600) 1 MB; K3 bf16 gemm [700, 800); K4 add<float> [900, 910); K5 add<float> [920, 930).
CPU (thread 1 unless said): DataLoader [10, 60); aten::mm [85, 97) around K1's launch [90, 95); K2's launch
[280, 290); NCCL launch [240, 300) on thread 2; aten::item [430, 470) > _local_scalar_dense [435, 465) around
cudaStreamSynchronize [440, 460); cudaMemcpyAsync [495, 601); K3's launch [590, 595); K4's [850, 855); K5's [905, 908).
"""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis.job import analyze_traces

SGEMM = "volta_sgemm_128x64_nn"
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")
BF16 = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _cpu(name, ts, dur, cat="cpu_op", tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _gpu(name, ts, dur, corr, cat="kernel", stream=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr, **args}}


def _launch(ts, dur, corr, name="cudaLaunchKernel", tid=1):
    return _cpu(name, ts, dur, cat="cuda_runtime", tid=tid, correlation=corr)


EVENTS = [
    _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
    _cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 10, 50, cat="user_annotation"),
    _cpu("aten::mm", 85, 12), _launch(90, 5, 1), _gpu(SGEMM, 100, 200, 1),
    _launch(280, 10, 2), _gpu(ADD, 300, 2, 2),
    _launch(240, 60, 3, tid=2), _gpu(NCCL, 250, 200, 3, stream=20, **{"Collective name": "allreduce",
                                                                   "In msg nelems": 1_000_000, "dtype": "Float"}),
    _cpu("aten::item", 430, 40), _cpu("aten::_local_scalar_dense", 435, 30),
    _cpu("cudaStreamSynchronize", 440, 20, cat="cuda_runtime", correlation=9),
    _launch(495, 106, 4, name="cudaMemcpyAsync"), _gpu("Memcpy HtoD (Pageable -> Device)", 500, 100, 4,
                                                       cat="gpu_memcpy", bytes=1_000_000),
    _launch(590, 5, 5), _gpu(BF16, 700, 100, 5),
    _launch(850, 5, 6), _gpu(ADD, 900, 10, 6),
    _launch(905, 3, 7), _gpu(ADD, 920, 10, 7),
]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    path = tmp_path_factory.mktemp("hand") / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB", "computeMajor": 7,
                                                      "computeMinor": 0}],
                                "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 4},
                                "traceEvents": EVENTS}))
    doc, _ = analyze_traces([path])
    return doc["ranks"]["0"]


def test_communication_computation_overlap(analysis):
    o = analysis["gpu_analysis"]["overlap"]
    # NCCL [250, 450) = 200; compute beside it [250, 302) = 52
    assert o["communication_ms"] == pytest.approx(0.200)
    assert o["overlapped_ms"] == pytest.approx(0.052)
    assert o["comm_comp_overlap_pct"] == pytest.approx(26.0)
    assert o["exposed_ms"] == pytest.approx(0.148)
    assert o["exposed_step_share"] == pytest.approx(0.148)
    assert o["exposed_per_step_ms"] == pytest.approx(0.148)
    # 1,000,000 fp32 elements in 200 µs: 20 GB/s; an all-reduce over 4 ranks moves 2(n-1)/n of it: 30 GB/s
    assert o["message_bytes"] == 4e6
    assert o["algbw_gb_s"] == pytest.approx(20.0) and o["busbw_gb_s"] == pytest.approx(30.0)


def test_overlap_aware_kernel_type_split(analysis):
    split = analysis["gpu_analysis"]["kernel_type_split_ms"]
    assert split == pytest.approx({
        "compute only": 0.270,  # [100, 250) + [700, 800) + 10 + 10
        "communication only": 0.148,  # [302, 450)
        "memory only": 0.100,
        "compute + communication": 0.052,
        "compute + memory": 0.0, "communication + memory": 0.0, "compute + communication + memory": 0.0})


def test_kernel_duration_distribution(analysis):
    row = next(k for k in analysis["kernels"]["top"] if k["name"] == ADD)
    assert (row["launches"], row["min_us"], row["p50_us"], row["max_us"]) == (3, 2.0, 10.0, 10.0)
    assert row["std_us"] == pytest.approx((((2 - 22 / 3) ** 2 + 2 * (10 - 22 / 3) ** 2) / 3) ** 0.5)  # 3.771
    assert row["sample_std_us"] == pytest.approx((((2 - 22 / 3) ** 2 + 2 * (10 - 22 / 3) ** 2) / 2) ** 0.5)


def test_launch_statistics(analysis):
    """HTA's definitions: every GPU activity paired with its cudaLaunchKernel / cudaMemcpyAsync call."""
    launch = analysis["gpu_analysis"]["launch"]
    assert launch["kernels"] == 6 and launch["kernels_per_step"] == 6
    assert launch["with_launch"] == 7  # 6 kernels and the copy
    assert launch["shorter_than_launch"] == 1  # K2: 2 µs on the GPU, 10 µs to launch (a call <= 50 µs)
    assert launch["shorter_than_launch_share"] == pytest.approx(1 / 7)
    assert launch["runtime_over_cutoff"] == 2  # NCCL's 60 µs launch, the copy's 106 µs call
    # delays (activity start - call end, negatives clipped): K1 5, K2 10, NCCL 0, copy 0, K3 105, K4 45, K5 12
    assert launch["launch_delay_us"]["mean"] == pytest.approx(177 / 7)
    assert launch["launch_delay_us"]["max"] == pytest.approx(105.0)
    assert launch["launch_delay_over_cutoff"] == 1
    assert launch["kernel_p50_us"] == pytest.approx(55.0)  # kernels 200, 2, 200, 100, 10, 10
    assert launch["launch_p50_us"] == pytest.approx(5.0)  # kernels' calls 5, 10, 60, 5, 5, 3


def test_idle_gaps_are_each_attributed_once(analysis):
    gaps = analysis["gpu_analysis"]["idle_gaps_ms"]
    # [450, 500): the host was in cudaStreamSynchronize when the GPU drained; [600, 700): after the pageable copy;
    # [800, 900): K4's launch started after the GPU went idle (host wait); [910, 920): K5 already launched (kernel wait)
    assert gaps == pytest.approx({"after_sync": 0.050, "after_pageable_copy": 0.100, "host_wait": 0.100,
                                  "kernel_wait": 0.010, "other": 0.0})
    assert sum(gaps.values()) == pytest.approx(analysis["gpu"]["window_idle_ms"])


def test_host_synchronisations(analysis):
    sync = analysis["gpu_analysis"]["sync"]
    assert sync["calls"] == 1 and sync["per_step"] == 1.0
    assert sync["by_operator"] == {"aten::item > aten::_local_scalar_dense": 1}
    assert sync["sync_operators"] == {"aten::item": 1, "aten::_local_scalar_dense": 1}
    assert sync["blocked_ms"] == pytest.approx(0.020)
    assert sync["idle_after_ms"] == pytest.approx(0.050)
    assert sync["idle_after_beyond_one_per_step_ms"] == 0.0  # one a step is normal


def test_queue_length_per_stream(analysis):
    """HTA's definition: +1 when the launch call starts, -1 when the GPU operation starts. Stream 7: six launches
    (K1, K2, the copy, K3, K4, K5), each started before the next launch: 1, 0, 1, 0, ...; stream 20: the NCCL kernel."""
    queue = analysis["gpu_analysis"]["queue_length"]
    assert queue == {"7": {"count": 12, "mean": 0.5, "p50": 0.5, "max": 1},
                     "20": {"count": 2, "mean": 0.5, "p50": 0.5, "max": 1}}


def test_memcpy_bandwidth_and_pageable_copies(analysis):
    memcpy = analysis["gpu_analysis"]["memcpy"]
    assert memcpy["by_kind"] == [{"kind": "HtoD", "host_memory": "pageable", "count": 1, "bytes": 1e6,
                                  "time_ms": pytest.approx(0.1), "gb_per_s": pytest.approx(10.0)}]
    page = memcpy["pageable_htod"]
    assert (page["count"], page["bytes_per_step"]) == (1, 1e6)
    assert page["exposed_ms"] == pytest.approx(0.1) and page["gb_per_s"] == pytest.approx(10.0)


def test_tensor_core_eligibility(analysis):
    tc = analysis["gpu_analysis"]["tensor_cores"]
    assert tc["compute_capability"] == 7.0 and tc["has_tensor_cores"] is True
    assert tc["compute_kernel_ms"] == pytest.approx(0.322)  # 200 + 2 + 100 + 10 + 10
    assert tc["fp32_gemm_conv_ms"] == pytest.approx(0.200)  # the sgemm; the add kernels are no GEMM
    assert tc["tensor_core_gemm_conv_ms"] == pytest.approx(0.100)
    assert tc["eligible_share"] == pytest.approx(200 / 322)


def test_exclusive_step_breakdown(analysis):
    b = analysis["gpu_analysis"]["step_breakdown"]
    assert b["categories"] == ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec",
                               "other"]
    step = b["steps"][0]
    expected = {"kernel": 0.322, "memcpy": 0.100, "memset": 0.0, "communication": 0.148,
                # runtime: [90, 95) + [450, 460) (sync after the NCCL kernel) + [495, 500) + [600, 601) + [850, 855)
                "runtime": 0.026, "dataloader": 0.050,
                "cpu_exec": 0.017,  # aten::mm [85, 90) + [95, 97), aten::item [460, 470)
                "other": 0.337}
    assert {k: step[k] for k in expected} == pytest.approx(expected)
    assert sum(step[k] for k in expected) == pytest.approx(1.0)  # exclusive: the step's 1000 µs once
    assert b["total_ms"] == pytest.approx(expected)


def test_cpu_only_trace_has_no_gpu_analysis(tmp_path):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": [_cpu("ProfilerStep#1", 0, 100, cat="user_annotation"),
                                                _cpu("aten::add", 10, 5)]}))
    doc, _ = analyze_traces([path])
    assert doc["ranks"]["0"]["gpu_analysis"] is None
