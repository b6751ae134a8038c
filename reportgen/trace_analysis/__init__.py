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

from reportgen.trace_analysis.analysis import analyze_trace, compare_ranks
from reportgen.sources.layout import find_traces, looks_like_kineto
from reportgen.trace_analysis.outputs import KINETO_JSON, analyze_job, step_outlier_rule, write_kineto_outputs
from reportgen.readers.kineto_trace import read_trace
from reportgen.readers.trace_model import TraceColumns

__all__ = ["KINETO_JSON", "TraceColumns", "analyze_job", "analyze_trace", "compare_ranks", "find_traces",
           "looks_like_kineto", "read_trace", "step_outlier_rule", "write_kineto_outputs"]
