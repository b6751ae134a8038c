"""One story in one set of numbers (issue 49): each count of outlier steps says what it counts, the trace
section names the profiler its traces came from, and the data-loading sentence claims nothing it does not know."""

from __future__ import annotations

from reportgen.report.outlier_steps import per_worker
from reportgen.report.trace_facts import PYTORCH_TITLE, XSPACE_TITLE, TraceFacts, dataloader_sentence, kernels_title
from reportgen.trace_ranks import PYTORCH_TRACES, XSPACE_TRACES, traces_name


def test_a_total_of_outlier_steps_says_how_it_splits_over_the_workers():
    found = [{"worker": "algo-2-27"}] * 15 + [{"worker": "algo-1-27"}] * 15
    assert per_worker(found) == "15 on algo-1-27, 15 on algo-2-27"  # 30 is never read as one node's 15
    assert per_worker([{"worker": "rank-0"}]) == "1 on rank-0"
    many = [{"worker": f"rank-{i}"} for i in range(16)] + [{"worker": "rank-3"}] * 4
    assert per_worker(many) == "on 16 workers, at most 5 on one"


def test_the_trace_section_names_the_profiler_from_the_trace_format():
    assert kernels_title(traces_name(["rank0.pt.trace.json.gz"])) == PYTORCH_TITLE
    assert kernels_title(traces_name(["plugins/profile/run/vm.xplane.pb.gz"])) == XSPACE_TITLE
    assert kernels_title(XSPACE_TRACES) == "Kernels and operators (JAX / TensorFlow profiler)"
    assert kernels_title(PYTORCH_TRACES) == "GPU kernels and operators (PyTorch profiler)"
    assert TraceFacts(name=XSPACE_TRACES).pointer() == "see \u201cKernels and operators (JAX / TensorFlow profiler)\u201d"


def test_the_data_loading_sentence_ends_where_its_facts_do():
    jax = TraceFacts(name=XSPACE_TRACES, dataloader_share=0.1386, dataloader_per_step_ms=18.0)
    assert dataloader_sentence(jax) == "Data loading took 14 % of the profiled step time, 18 ms per step."  # was "…, loaded."
    torch = TraceFacts(dataloader_share=0.82, dataloader_per_step_ms=40.0, workers=False, iterator="_SingleProcessDataLoaderIter")
    assert dataloader_sentence(torch) == ("Data loading took 82 % of the profiled step time, 40 ms per step, loaded in "
                                          "the training process, without DataLoader workers (num_workers=0); iterator "
                                          "_SingleProcessDataLoaderIter.")
