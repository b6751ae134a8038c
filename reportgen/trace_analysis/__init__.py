"""The analysis of the trace model (``readers/trace_model.py``) whatever the format: PyTorch profiler
(Kineto) traces, JAX and TensorFlow XSpace files. Find, read, analyse, and write what the report reads.

```python
from reportgen.trace_analysis import find_traces, read_trace, analyze_trace, analyze_job, write_kineto_outputs
files = find_traces(Path("traces"))            # *.pt.trace.json[.gz] (and sniffed Kineto *.json[.gz])
doc, problems = analyze_job(files)             # the kineto.json document: per rank + comparison + job-wide
doc, problems = analyze_job(files, scheduler="local:2")  # one Dask task per rank (reportgen.trace_analysis.job)
write_kineto_outputs(files, Path("analysis"))  # kineto.json, profiler-reports/StepOutlier.json, ...
```
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - the names' types; at run time each is imported on first use (below)
    from reportgen.readers.kineto_trace import read_trace
    from reportgen.readers.trace_model import TraceColumns
    from reportgen.sources.layout import find_traces, looks_like_kineto
    from reportgen.trace_analysis.analysis import analyze_trace, compare_ranks
    from reportgen.trace_analysis.outputs import KINETO_JSON, analyze_job, step_outlier_rule, write_kineto_outputs

# Where each name above lives, imported when first asked for (PEP 562): importing one module of the package (the
# page's worker imports ``account`` for the diagnosis, and ``regions`` with it) no longer imports the readers, the
# task plan and the writers with it (~30 of the worker's ~650 CPU ms, benchmarks/HISTORY.md, *The page's process*).
_API = {"analyze_trace": "reportgen.trace_analysis.analysis", "compare_ranks": "reportgen.trace_analysis.analysis",
        "find_traces": "reportgen.sources.layout", "looks_like_kineto": "reportgen.sources.layout",
        "KINETO_JSON": "reportgen.trace_analysis.outputs", "analyze_job": "reportgen.trace_analysis.outputs",
        "step_outlier_rule": "reportgen.trace_analysis.outputs",
        "write_kineto_outputs": "reportgen.trace_analysis.outputs",
        "read_trace": "reportgen.readers.kineto_trace", "TraceColumns": "reportgen.readers.trace_model"}

__all__ = ["KINETO_JSON", "TraceColumns", "analyze_job", "analyze_trace", "compare_ranks", "find_traces",
           "looks_like_kineto", "read_trace", "step_outlier_rule", "write_kineto_outputs"]


def __getattr__(name: str):
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value  # found once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
