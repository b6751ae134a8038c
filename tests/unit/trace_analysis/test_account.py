"""The step-time account on hand-made traces whose every microsecond is known (µs in the traces, ms out)."""

from __future__ import annotations

import json

import pytest

from reportgen.trace_analysis import account
from reportgen.trace_analysis.job import analyze_traces
from reportgen.report.model import Table
from reportgen.report.sections.gpu_kernels_operators import gpu_analysis_blocks
from reportgen.trace_ranks import ACCOUNT_SLICES, TraceAccount, TraceRank

SGEMM = "volta_sgemm_128x64_nn"


def _cpu(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def _gpu(name, ts, dur, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7}}


def _account(tmp_path, events, props=()):
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"deviceProperties": list(props), "traceEvents": events}))
    doc, _ = analyze_traces([path])
    return doc["ranks"]["0"]["account"]


def test_host_steps_split_exactly(tmp_path):
    """CPU training: the step's thread decides first; another thread's collective counts only while it idles."""
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 200, cat="user_annotation"),
        _cpu("aten::conv2d", 200, 300),
        _cpu("gloo:all_reduce", 550, 100, cat="user_annotation", tid=2),  # 550-600 while the step's thread idles
        _cpu("aten::add", 600, 200),
        _cpu("backend_compile_and_load", 800, 100),
        _cpu("log_metrics", 900, 50, cat="user_annotation"),  # named, but no operator: the script's own Python
    ])
    assert got["perspective"] == "host" and got["steps"] == 1
    assert got["slices_ms"] == pytest.approx({"compute": 0.5, "data_wait": 0.2, "communication": 0.05,
                                              "host_blocked": 0.0, "memory_management": 0.0, "memory_copies": 0.0,
                                              "compilation": 0.1, "dispatch": 0.0, "debug_checks": 0.0,
                                              "no_operator": 0.15})
    assert sum(got["slices_ms"].values()) == pytest.approx(got["step_ms"]) == pytest.approx(1.0)
    assert got["no_operator_named"] == pytest.approx({"log_metrics": 0.05})
    assert got["window"]["steps_ms"] == pytest.approx(1.0)


def test_the_optimizers_own_python_is_framework_time_not_the_scripts(tmp_path):
    """torch's Optimizer.zero_grad#/step# ranges count as operators (as key_averages() counts them); a user's own
    range stays the script's time, named."""
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("aten::linear", 0, 400),
        _cpu("Optimizer.zero_grad#SGD.zero_grad", 400, 100, cat="user_annotation"),  # set_to_none: no operator
        _cpu("Optimizer.step#SGD.step", 500, 300, cat="user_annotation"),
        _cpu("aten::add_", 550, 100),  # the update's operator; 200 µs of the range is the optimizer's Python
        _cpu("my_logging", 850, 100, cat="user_annotation"),
    ])
    assert got["slices_ms"]["compute"] == pytest.approx(0.8)
    assert got["slices_ms"]["no_operator"] == pytest.approx(0.2)
    assert got["no_operator_named"] == pytest.approx({"my_logging": 0.1})
    assert got["optimizer_per_step_ms"] == pytest.approx([0.3])


def test_operator_calls_pay_the_metadata_operators_time(tmp_path):
    """41 calls at the median metadata-only call (2 µs) are dispatch; the rest of the operators' time compute."""
    views = [_cpu("aten::view", 10 + 20 * i, 2) for i in range(40)]
    got = _account(tmp_path, [_cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"), _cpu("aten::linear", 0, 900),
                              *views])
    assert got["operator_calls_per_step"] == 41 and got["dispatch_floor_us"] == 2.0
    assert got["slices_ms"]["dispatch"] == pytest.approx(0.082)
    assert got["slices_ms"]["compute"] == pytest.approx(0.818)
    assert got["slices_ms"]["no_operator"] == pytest.approx(0.1)


def _anomaly_step(checks=True):
    """One 3 ms step: a forward pass of 10 layers (aten::t 100 µs, aten::addmm 50 µs holding 3 views of 1 µs),
    a backward pass of 10 nodes of 110 µs (each: aten::t 2 µs and, with anomaly detection, a NaN check: isnan and
    _is_any_true, 5 µs each), then 300 µs of the script's Python."""
    events = [_cpu("ProfilerStep#1", 0, 3000, cat="user_annotation")]
    for i in range(10):
        events += [_cpu("aten::t", 150 * i, 100), _cpu("aten::addmm", 150 * i + 100, 50),
                   *(_cpu("aten::view", 150 * i + 110 + 10 * j, 1) for j in range(3))]
        node = 1500 + 120 * i
        events += [_cpu("autograd::engine::evaluate_function: AddmmBackward0", node, 110), _cpu("aten::t", node + 5, 2)]
        if checks:
            events += [_cpu("aten::isnan", node + 10, 5), _cpu("aten::_is_any_true", node + 20, 5)]
    return events


def test_autograd_anomaly_detection_is_a_debugging_aids_time_not_compute(tmp_path):
    """Its signature (a NaN check in every backward node) carves out the checks (100 µs) and each node's stack
    capture in the forward pass: the forward aten::t's mean (100 µs) beyond the backward's median (2 µs), times the
    10 nodes. Dispatch first: 90 operator calls at the 1 µs floor."""
    got = _account(tmp_path, _anomaly_step())
    assert got["dispatch_floor_us"] == 1.0 and got["operator_calls_per_step"] == 90
    assert got["slices_ms"]["dispatch"] == pytest.approx(0.09)
    assert got["slices_ms"]["debug_checks"] == pytest.approx(0.1 + 10 * 0.098)
    assert got["slices_ms"]["compute"] == pytest.approx(2.6 - 0.09 - 1.08)
    assert got["slices_ms"]["no_operator"] == pytest.approx(0.4)  # 1.5-1.5: none; 2.7-3.0 and the nodes' gaps
    assert sum(got["slices_ms"].values()) == pytest.approx(3.0)
    clean = _account(tmp_path, _anomaly_step(checks=False))
    assert clean["slices_ms"]["debug_checks"] == 0.0  # no checks, no signature: the slow forward aten::t is compute


def test_device_steps_split_by_what_the_gpu_did_and_why_it_idled(tmp_path):
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 60, cat="user_annotation"),
        _cpu("aten::to", 60, 30),  # GPU idle while the host issues work: dispatch
        _gpu(SGEMM, 100, 200),
        _gpu("Memcpy DtoH (Device -> Pinned)", 300, 50, cat="gpu_memcpy"),
        _cpu("cudaStreamSynchronize", 320, 80, cat="cuda_runtime"),  # the gap 350-500 began inside it
        _gpu(SGEMM, 500, 190),
        _cpu("aten::add", 590, 60),  # while the GPU is busy: no effect
        _cpu("cudaFree", 690, 30, cat="cuda_runtime"),  # the gap 690-800 began inside it
        _gpu(SGEMM, 800, 100),
    ])
    assert got["perspective"] == "device"
    assert got["slices_ms"] == pytest.approx({"compute": 0.49, "data_wait": 0.06, "communication": 0.0,
                                              "host_blocked": 0.15, "memory_management": 0.11,
                                              "memory_copies": 0.05, "compilation": 0.0, "dispatch": 0.03,
                                              "debug_checks": 0.0, "no_operator": 0.11})


def test_slices_are_per_step_and_a_step_free_rank_has_none(tmp_path):
    got = _account(tmp_path, [_cpu("ProfilerStep#1", 0, 100, cat="user_annotation"), _cpu("aten::mm", 0, 100),
                              _cpu("ProfilerStep#2", 150, 100, cat="user_annotation"), _cpu("aten::mm", 150, 50)])
    assert got["per_step_ms"]["compute"] == [0.1, 0.05] and got["per_step_ms"]["no_operator"] == [0.0, 0.05]
    assert got["window"]["between_steps_ms"] == pytest.approx(0.05)
    assert _account(tmp_path, [_cpu("aten::mm", 0, 100)]) is None


def test_the_page_and_the_analysis_name_the_same_slices():
    assert ACCOUNT_SLICES == account.SLICES


def test_the_typed_view_never_fails_and_counts_what_every_step_pays():
    assert TraceAccount.of(None) is None and TraceAccount.of({"steps": 0, "step_ms": 1.0}) is None
    assert TraceAccount.of({"steps": 2, "step_ms": float("nan")}) is None
    odd = TraceAccount.of({"steps": 3, "step_ms": 30.0, "perspective": [1], "slices_ms": {"compute": "x",
                           "no_operator": 12.0}, "per_step_ms": {"no_operator": [2.0, 2.0, 8.0], "compute": "x"}})
    assert odd.perspective == "host" and odd.slices_ms["compute"] == 0.0 and odd.per_step_ms["compute"] == ()
    assert odd.share("no_operator") == pytest.approx(0.4)
    assert odd.every_step_share("no_operator") == pytest.approx(0.2)  # median 2 ms x 3 steps: the 8 ms is one step's


def test_covered_counts_each_window_once():
    import numpy as np

    iv = (np.array([0.0, 10.0]), np.array([5.0, 20.0]))
    got = account.covered(iv, np.array([0.0, 3.0, 21.0, -5.0]), np.array([20.0, 12.0, 30.0, 2.0]))
    assert list(got) == [15.0, 4.0, 0.0, 2.0]


def _eager_step(i, ops, name, kernel):
    """A step of ``ops`` operations run from Python: each 100 µs, 40 of them in its kernel, 20 µs of Python after."""
    t0 = i * 10_000
    events = [_cpu(f"ProfilerStep#{i}", t0, ops * 120, cat="user_annotation")]
    for j in range(ops):
        events += [_cpu(name, t0 + 120 * j, 100), _cpu(kernel, t0 + 120 * j + 50, 40)]
    return events


def test_tensorflow_eager_operations_split_into_kernels_and_each_calls_cost(tmp_path):
    events = [e for i in range(3) for e in _eager_step(i, 25, "EagerLocalExecute: MatMul", "KernelAndDeviceFunc::Run")]
    got = _account(tmp_path, events)
    assert got["eager_ops_per_step"] == [25, 25, 25] and got["eager_runtime"] == "tensorflow"
    assert got["slices_ms"]["compute"] == pytest.approx(3 * 25 * 0.04)
    assert got["slices_ms"]["dispatch"] == pytest.approx(3 * 25 * 0.06)
    assert got["slices_ms"]["no_operator"] == pytest.approx(3 * 25 * 0.02)


def test_a_compiled_step_is_not_eager_though_tracing_it_calls_its_primitives(tmp_path):
    """JAX: a jitted step is one PjitFunction(step) a step; tracing it to compile calls each primitive inside it
    (outermost calls count only). Twenty-five primitives called from Python a step are eager."""
    jitted = []
    for i in range(3):
        jitted += [_cpu(f"ProfilerStep#{i}", i * 10_000, 5000, cat="user_annotation"),
                   _cpu("PjitFunction(train_step)", i * 10_000, 4000)]
        jitted += [_cpu("PjitFunction(matmul)", i * 10_000 + 10 + 100 * j, 50) for j in range(30) if i == 0]
    got = _account(tmp_path, jitted)
    assert got["eager_ops_per_step"] == [1, 1, 1] and got["eager_runtime"] is None
    assert got["slices_ms"]["dispatch"] == 0.0
    eager = [e for i in range(3)
             for e in _eager_step(i, 25, "PjitFunction(matmul)", "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice")]
    got = _account(tmp_path, eager)
    assert got["eager_runtime"] == "jax" and got["slices_ms"]["dispatch"] == pytest.approx(3 * 25 * 0.06)


def test_a_few_eager_constants_leave_a_graph_step_alone(tmp_path):
    """tf.function steps still make a constant or two eagerly: under 20 a step, no split."""
    events = [e for i in range(3) for e in _eager_step(i, 3, "EagerLocalExecute: _EagerConst", "KernelAndDeviceFunc::Run")]
    got = _account(tmp_path, events)
    assert got["eager_runtime"] is None and got["slices_ms"]["dispatch"] == 0.0


def test_running_a_compiled_graph_and_checking_its_guards_is_not_compiling(tmp_path):
    """torch.compile's steps call the compiled graph and check dynamo's guards every step; only inductor's and
    dynamo's own work is compilation."""
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("TorchDynamo Cache Lookup", 0, 20, cat="user_annotation"),
        _cpu("## Call CompiledFxGraph fhyfjofvpznsqfczxf2bqq ##", 20, 600, cat="user_annotation"),
        _cpu("aten::mm", 30, 500),
        _cpu("inductor_compile", 700, 250, cat="user_annotation"),
    ])
    assert got["slices_ms"]["compilation"] == pytest.approx(0.25)
    assert got["slices_ms"]["compute"] == pytest.approx(0.5)


def test_tf_function_tracing_and_a_new_functions_first_run_are_compilation(tmp_path):
    """Step 1 traces a tf.function (400 µs) and runs the new concrete function, which is instantiated (200 µs)
    before its kernels run (300 µs); step 2 calls the same function again: its set-up is running it, not compiling."""
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("tf.function-graph_building", 0, 400),
        _cpu("EagerLocalExecute: __inference_step_1", 400, 500),
        _cpu("KernelAndDeviceFunc::Run", 600, 300),
        _cpu("ProfilerStep#2", 1000, 1000, cat="user_annotation"),
        _cpu("EagerLocalExecute: __inference_step_1", 1000, 500),
        _cpu("KernelAndDeviceFunc::Run", 1100, 400),
    ])
    assert got["per_step_ms"]["compilation"] == pytest.approx([0.6, 0.0])
    assert got["per_step_ms"]["compute"] == pytest.approx([0.3, 0.5])
    assert got["per_step_ms"]["no_operator"] == pytest.approx([0.1, 0.5])
    assert got["compilation_named"] == pytest.approx({"tf.function-graph_building": 0.4,
                                                      account.FIRST_RUN_SETUP: 0.2})


def _graph_step(i, kernels):
    """A step that calls a tf.function's graph (800 µs of its 1,000): the executor runs ``kernels`` operations of
    60 µs on its own thread, 100 µs apart; 200 µs of Python after the call."""
    t0 = i * 10_000
    events = [_cpu(f"ProfilerStep#{i}", t0, 1000, cat="user_annotation"),
              _cpu("EagerLocalExecute: __inference_train_function_9", t0, 800)]
    return events + [_cpu(f"sequential/dense_{j}/MatMul:_MklMatMul", t0 + 10 + 100 * j, 60, tid=2)
                     for j in range(kernels)]


def test_a_graph_call_too_small_for_its_cost_splits_into_kernels_and_dispatch(tmp_path):
    """Three operations (180 µs of kernels) in an 800 µs call: the other 620 µs is the call's fixed cost (dispatch).
    With eight (480 µs) the kernels outweigh the rest of the call, which stays compute: the executor's gaps grow
    with the operations."""
    got = _account(tmp_path, [e for i in range(3) for e in _graph_step(i, 3)])
    assert got["graph_calls_per_step"] == [1, 1, 1]
    assert got["per_step_ms"]["compute"] == pytest.approx([0.18] * 3)
    assert got["per_step_ms"]["dispatch"] == pytest.approx([0.62] * 3)
    assert got["per_step_ms"]["no_operator"] == pytest.approx([0.2] * 3)
    got = _account(tmp_path, [e for i in range(3) for e in _graph_step(i, 8)])
    assert "graph_calls_per_step" not in got and got["slices_ms"]["dispatch"] == 0.0
    assert got["per_step_ms"]["compute"] == pytest.approx([0.8] * 3)


def _jit_step(i, run_at, run_us, ops_us):
    """A jitted JAX step of 1,000 µs: the call (PjitFunction, 100 µs on the step's thread) returns before its
    executable runs on the executor's thread (ThunkExecutor::Execute from ``run_at`` µs for ``run_us``, its HLO
    operations ``ops_us`` back to back inside it, each with the profiler's ``end:`` marker); the step's thread waits
    for it in block_until_ready, which no event marks."""
    t0 = i * 10_000
    events = [_cpu(f"ProfilerStep#{i}", t0, 1000, cat="user_annotation"),
              _cpu("PjitFunction(train_step)", t0, 100),
              _cpu("ThunkExecutor::Execute", t0 + run_at, run_us, tid=2)]
    at = t0 + run_at
    for j, us in enumerate(ops_us):
        events += [_cpu(f"ynn_fusion.{j}", at, us, tid=2), _cpu(f"end: ynn_fusion.{j}", at + us, 0, tid=2)]
        at += us
    return events


def test_a_jitted_step_too_small_for_its_cost_splits_into_kernels_and_dispatch(tmp_path):
    """100 µs of operations in a step whose call took 100 µs, then waited 500 µs for the executor's thread to run
    them (300 µs with its own events): the call's other 800 µs is its fixed cost (dispatch), the last 100 µs the
    Python between calls. With 700 µs of operations the kernels outweigh the rest of the call: no split."""
    got = _account(tmp_path, [e for i in range(3) for e in _jit_step(i, 600, 300, [60, 40])])
    assert got["graph_calls_per_step"] == [1, 1, 1] and got["graph_runtime"] == "jax"
    assert got["per_step_ms"]["compute"] == pytest.approx([0.1] * 3)
    assert got["per_step_ms"]["dispatch"] == pytest.approx([0.8] * 3)
    assert got["per_step_ms"]["no_operator"] == pytest.approx([0.1] * 3)
    assert sum(got["slices_ms"].values()) == pytest.approx(got["step_ms"]) == pytest.approx(3.0)
    got = _account(tmp_path, [e for i in range(3) for e in _jit_step(i, 150, 750, [400, 300])])
    assert "graph_calls_per_step" not in got and got["slices_ms"]["dispatch"] == 0.0
    assert got["per_step_ms"]["compute"] == pytest.approx([0.85] * 3)
    assert got["per_step_ms"]["no_operator"] == pytest.approx([0.15] * 3)


def test_tensor_elements_read_one_by_one_are_counted_outside_the_optimizer(tmp_path):
    """A printed tensor reads each element with aten::item (60 a step here); Adam's reads of each parameter's step
    count inside Optimizer.step# are the framework's. Under 50 reads a step the account keeps no count."""
    def step(i, reads):
        t0 = i * 10_000
        events = [_cpu(f"ProfilerStep#{i}", t0, 5000, cat="user_annotation"), _cpu("aten::linear", t0, 500),
                  _cpu("Optimizer.step#Adam.step", t0 + 600, 900, cat="user_annotation")]
        events += [_cpu("aten::item", t0 + 610 + 10 * j, 5) for j in range(40)]  # inside the optimizer
        return events + [_cpu("aten::item", t0 + 1600 + 20 * j, 5) for j in range(reads)]

    got = _account(tmp_path, [e for i in range(3) for e in step(i, 60)])
    assert got["scalar_reads_per_step"] == [60, 60, 60]
    assert TraceAccount.of(got).scalar_reads_per_step == (60, 60, 60)
    got = _account(tmp_path, [e for i in range(3) for e in step(i, 30)])
    assert "scalar_reads_per_step" not in got


def test_a_dataloader_iterator_created_in_a_step_is_counted_from_its_seed(tmp_path):
    """iter(loader) draws its seed (aten::random_ outside any operator) before the step's batch: step 1 creates one,
    step 2 reuses it; a random_ inside another operator (torch.randint's) is no iterator."""
    next_ = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("aten::random_", 10, 5), _cpu(next_, 100, 300, cat="user_annotation"), _cpu("aten::linear", 500, 400),
        _cpu("ProfilerStep#2", 1000, 1000, cat="user_annotation"),
        _cpu("aten::randint", 1010, 20), _cpu("aten::random_", 1012, 5),
        _cpu(next_, 1100, 50, cat="user_annotation"), _cpu("aten::linear", 1200, 400),
    ])
    assert got["loader_starts_per_step"] == [1, 0]


def _hta_events():
    return [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("cudaLaunchKernel", 40, 10, cat="cuda_runtime") | {"args": {"correlation": 1}},
        _gpu(SGEMM, 100, 200) | {"args": {"device": 0, "stream": 7, "correlation": 1}},
        _gpu("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 250, 150),  # 300-400 exposed
        _gpu("Stream Wait Event", 400, 100, cat="cuda_sync"),  # a wait, not work: 400-500 idle, host wait
        _cpu("cudaMemcpyAsync", 480, 10, cat="cuda_runtime") | {"args": {"correlation": 2}},  # launched in the gap
        _gpu("Memcpy HtoD (Pinned -> Device)", 500, 20, cat="gpu_memcpy") | {"args": {"device": 0, "stream": 7,
                                                                                        "correlation": 2}},
        _gpu(SGEMM, 530, 470),  # 520-530: a 10 µs gap with no launch known: kernel wait
    ]


def test_the_gpu_block_reconciles_the_device_slices_with_htas_figures_in_the_steps(tmp_path):
    """Busy = compute + exposed communication + copies; idle split as HTA splits the window, clipped to the steps,
    plus the step's time before the GPU's first activity; a cuda_sync event (a stream waiting) is not GPU work."""
    got = _account(tmp_path, _hta_events())
    s, gpu = got["slices_ms"], got["gpu"]
    assert (s["compute"], s["communication"], s["memory_copies"]) == pytest.approx((0.67, 0.1, 0.02))
    assert gpu["busy_ms"] == pytest.approx(0.79) and gpu["idle_ms"] == pytest.approx(0.21)
    assert gpu["exposed_communication_ms"] == pytest.approx(0.1)
    assert gpu["idle_split_ms"] == pytest.approx({"host_wait": 0.1, "kernel_wait": 0.01, "other": 0.0,
                                                  "outside_window": 0.1})
    host = _account(tmp_path, [_cpu("ProfilerStep#1", 0, 100, cat="user_annotation"), _cpu("aten::mm", 0, 100)])
    assert host["gpu"] is None


def test_the_page_shows_the_account_beside_htas_window(tmp_path):
    """Inside the step against the GPU's active window (100-1000 here: the step's first 100 µs are before it)."""
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": _hta_events()}))
    doc, _ = analyze_traces([path])
    blocks = gpu_analysis_blocks("0", TraceRank.of("0", doc["ranks"]["0"]))
    table = next(b for b in blocks if isinstance(b, Table) and b.id == "kineto-account-hta-0")
    assert [row[1:] for row in table.rows] == [pytest.approx(v) for v in (
        [0.79, 0.79], [0.1, 0.1], [0.21, 0.11], [0.1, 0.1], [0.01, 0.01], [0.0, 0.0], [0.1, None])]
    assert TraceRank.of("0", {**doc["ranks"]["0"], "account": {**doc["ranks"]["0"]["account"], "gpu": "x"}}
                        ).account.gpu is None  # the view never fails


def test_the_time_between_steps_is_kept_gap_by_gap(tmp_path):
    """Three steps, 100 and 300 µs apart: the gaps in order, and their sum in the window."""
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"), _cpu("aten::linear", 0, 900),
        _cpu("ProfilerStep#2", 1100, 1000, cat="user_annotation"), _cpu("aten::linear", 1100, 900),
        _cpu("ProfilerStep#3", 2400, 1000, cat="user_annotation"), _cpu("aten::linear", 2400, 900),
    ])
    assert got["between_steps_ms"] == pytest.approx([0.1, 0.3])
    assert got["window"]["between_steps_ms"] == pytest.approx(0.4)


def test_the_scripts_own_tensors_made_every_step_are_memory_management(tmp_path):
    """A tensor the step's thread makes outside every other operator (a scratch buffer every step) is
    memory_management once such tensors reach 5 % of the steps; one made inside a layer's operator, the optimizer's
    range or the DataLoader stays where it is."""
    events = []
    for k in range(2):
        t = k * 1000
        events += [_cpu(f"ProfilerStep#{k + 1}", t, 1000, cat="user_annotation"),
                   _cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, 100, cat="user_annotation"),
                   _cpu("aten::zeros", t + 10, 20),  # the loader's: its wait
                   _cpu("aten::zeros", t + 100, 300),  # the script's 300 µs scratch tensor
                   _cpu("aten::empty", t + 110, 10), _cpu("aten::zero_", t + 120, 270),
                   _cpu("aten::lstm", t + 400, 400), _cpu("aten::zeros", t + 410, 50),  # a layer's own
                   _cpu("Optimizer.step#SGD.step", t + 800, 150, cat="user_annotation"),
                   _cpu("aten::empty_like", t + 810, 20)]  # the optimizer's own
    got = _account(tmp_path, events)
    assert got["slices_ms"]["memory_management"] == pytest.approx(0.6)
    assert got["slices_ms"]["compute"] == pytest.approx(1.1)
    assert got["slices_ms"]["data_wait"] == pytest.approx(0.2)
    assert sum(got["slices_ms"].values()) == pytest.approx(got["step_ms"]) == pytest.approx(2.0)
    assert got["allocations_named"] == pytest.approx({"aten::zeros": 0.6})


def test_a_few_tensors_made_in_the_step_stay_compute(tmp_path):
    """Under 5 % of the steps (an LSTM's zero state, a loss's ones_like), the script's tensors are not singled out."""
    got = _account(tmp_path, [
        _cpu("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _cpu("aten::zeros", 0, 40),
        _cpu("aten::linear", 40, 900),
    ])
    assert got["slices_ms"]["memory_management"] == 0.0 and "allocations_named" not in got
    assert got["slices_ms"]["compute"] == pytest.approx(0.94)


ACC = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"


def _step_with_gradients(t, *, update=True, frozen_added=True, zero_in_place=0):
    """One 1,000 µs step: forward, a loss backward, a trained parameter's gradient stored afresh (aten::detach) at
    400-420, then 300 µs of backward through a frozen block whose 2 parameters add into the gradients they hold
    (aten::add_), then the optimizer's step."""
    events = [_cpu(f"ProfilerStep#{t // 1000 + 1}", t, 1000, cat="user_annotation"),
              _cpu("aten::linear", t, 300),
              _cpu("autograd::engine::evaluate_function: NllLossBackward0", t + 300, 50),
              _cpu("autograd::engine::evaluate_function: AddmmBackward0", t + 350, 50),
              _cpu(ACC, t + 400, 20), _cpu("aten::detach", t + 405, 5),
              _cpu("autograd::engine::evaluate_function: ConvolutionBackward0", t + 420, 240)]
    for j, at in enumerate((t + 660, t + 690)):
        events += [_cpu(ACC, at, 30), _cpu("aten::add_" if frozen_added else "aten::detach", at + 5, 20)]
    events += [_cpu("aten::zero_", t + 730 + 10 * j, 5) for j in range(zero_in_place)]
    if update:
        events.append(_cpu("Optimizer.step#SGD.step", t + 800, 150, cat="user_annotation"))
    return events


def test_gradients_no_optimizer_resets_are_counted_with_the_backward_they_cost(tmp_path):
    """Two parameters add into their gradients in every step with one backward and one update: nothing reset them
    (no optimizer holds them); the backward after the last gradient stored afresh (420-720 µs) serves only them."""
    got = _account(tmp_path, _step_with_gradients(0) + _step_with_gradients(1000))
    assert got["unused_gradients_per_step"] == [2, 2]
    assert got["unused_backward_per_step_ms"] == pytest.approx([0.3, 0.3])
    assert sum(got["slices_ms"].values()) == pytest.approx(2.0)  # a refinement of compute: the slices unchanged


def test_gradients_added_by_design_are_not_unused(tmp_path):
    """Gradient accumulation (a backward pass without an update after it), gradients zeroed in place by zero_grad
    (set_to_none=False: the add is into zeros), and gradients stored afresh are no unused gradients."""
    accumulating = _step_with_gradients(0, update=False) + _step_with_gradients(1000)
    zeroed = _step_with_gradients(0, zero_in_place=2) + _step_with_gradients(1000, zero_in_place=2)
    fresh = _step_with_gradients(0, frozen_added=False) + _step_with_gradients(1000, frozen_added=False)
    for events in (accumulating, zeroed, fresh):
        got = _account(tmp_path, events)
        assert "unused_gradients_per_step" not in got and "unused_backward_per_step_ms" not in got
