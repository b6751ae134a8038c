"""Frequent CUDA kernel sequences per operator against Holistic Trace Analysis 0.5.0's
``get_frequent_cuda_kernel_sequences(operator_name, min_pattern_len=3, rank, top_k=5)`` (every pattern of its
dataframe: count, "GPU kernel duration (us)", "CPU op duration (us)", and the sequence's length: the ``|``-joined
pattern minus the operator), on each real GPU trace among the fixtures; recorded once (HolisticTraceAnalysis
0.5.0 with pandas 2.3 in a throwaway venv, ``include_last_profiler_step=True``, ``HTA_DISABLE_NS_ROUNDING=1``).

HTA takes the instances whose name contains ``operator_name`` at their shallowest depth; the operators chosen
here are top-level on their threads, so those are reportgen's roots (``top_level_ops``) with that name: every
pattern equal, to 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest

from reportgen.trace_analysis.kernel_patterns import kernel_patterns, top_level_ops
from reportgen.trace_analysis.ranks import merge_cycles
from reportgen.readers.kineto_trace import read_trace
from tests.support.paths import RAW, need

HTA = {
    'hta-resnet-v100-1gpu/0/aten::conv2d': [
        (35, 10299.555, 5786.358, 4), (15, 4582.439, 1520.286, 4), (10, 3278.669, 1910.694, 4),
        (5, 3466.764, 3791.036, 5), (5, 3035.919, 2124.014, 5)],
    'hta-resnet-v100-1gpu/0/evaluate_function: ConvolutionBackward0': [
        (35, 19908.335, 20852.085, 8), (30, 18274.902, 22097.773, 5), (25, 17416.512, 14519.232, 6),
        (20, 19119.635, 4979.252, 4), (20, 15581.45, 1671.219, 5), (20, 13034.546, 5257.168, 3),
        (15, 16214.149, 1338.391, 6), (15, 10472.932, 5429.202, 8), (15, 10391.397, 5199.44, 8),
        (10, 15602.758, 5602.611, 7), (10, 14617.673, 6274.767, 7), (10, 12401.562, 842.051, 4),
        (10, 6771.608, 6019.491, 9), (5, 7824.181, 1303.143, 7), (5, 7443.862, 428.259, 4), (5, 6923.93, 391.515, 4),
        (5, 6183.388, 469.254, 4), (5, 1920.85, 443.123, 4)],
    'hta-trace-diff-rank3of8/3/evaluate_function: AddmmBackward0': [
        (78, 5024.0, 9660.0, 4), (78, 3334.0, 8190.0, 4), (78, 2395.0, 10481.0, 4), (42, 778.0, 3482.0, 3),
        (30, 1130.0, 3757.0, 5), (24, 972.0, 3168.0, 5), (18, 1242.0, 2741.0, 6), (18, 659.0, 2714.0, 6),
        (18, 614.0, 2477.0, 5), (12, 4520.0, 1337.0, 4), (12, 2831.0, 1805.0, 6), (12, 1859.0, 1641.0, 5),
        (12, 1634.0, 1772.0, 6), (12, 1255.0, 1843.0, 6), (12, 712.0, 1463.0, 5), (6, 7039.0, 935.0, 6),
        (6, 3424.0, 826.0, 4), (6, 2977.0, 861.0, 5), (6, 2486.0, 675.0, 4), (6, 1625.0, 905.0, 6),
        (6, 1167.0, 822.0, 5), (6, 810.0, 937.0, 5), (6, 783.0, 848.0, 5), (6, 772.0, 841.0, 5), (6, 567.0, 657.0, 4),
        (6, 518.0, 759.0, 4), (6, 498.0, 820.0, 5), (6, 480.0, 1003.0, 6), (6, 412.0, 810.0, 5), (6, 398.0, 901.0, 5),
        (6, 301.0, 1122.0, 3), (6, 300.0, 751.0, 4), (6, 297.0, 917.0, 6), (6, 244.0, 938.0, 5), (6, 240.0, 635.0, 4),
        (6, 239.0, 902.0, 6), (6, 206.0, 920.0, 6), (6, 190.0, 941.0, 4)],
    'hta-sampled-128rank/0/evaluate_function: ClampBackward1': [(2, 46.0, 287.0, 3), (1, 21.0, 160.0, 3)],
}

pytestmark = pytest.mark.fixtures


@pytest.mark.parametrize("key", list(HTA))
def test_kernel_sequences_equal_htas(key):
    name, rank, operator = key.split("/", 2)
    for path in sorted(need(RAW / name).glob("*.gz")):
        trace = merge_cycles([read_trace(path)])
        if str(trace.rank) == rank:
            break
    else:
        raise AssertionError(key)
    steps = np.fromiter((i for i, n in enumerate(trace.names) if n.startswith("ProfilerStep#")), np.int32)
    top = top_level_ops(trace, steps)
    roots = top[np.isin(trace.name[top], [i for i, n in enumerate(trace.names) if operator in n])]
    ours = kernel_patterns(trace, roots, top=10_000)
    assert {p["operator"] for p in ours} <= {n for n in trace.names if operator in n}
    got = sorted(((p["count"], p["gpu_ms"] * 1000, p["cpu_ms"] * 1000, p["length"]) for p in ours), reverse=True)
    expected = sorted(HTA[key], reverse=True)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert (g[0], g[3]) == (e[0], e[3]) and g[1:3] == pytest.approx(e[1:3], rel=1e-6)
