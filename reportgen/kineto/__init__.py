"""PyTorch profiler (Kineto) traces: find, read, analyse, and write what the report reads.

```python
from reportgen.kineto import find_traces, read_trace, analyze_trace, analyze_job, write_kineto_outputs
files = find_traces(Path("traces"))            # *.pt.trace.json[.gz] (and sniffed Kineto *.json[.gz])
doc, problems = analyze_job(files)             # the kineto.json document: per rank + comparison + job-wide
doc, problems = analyze_job(files, scheduler="local:2")  # one Dask task per rank (reportgen.kineto.job)
write_kineto_outputs(files, Path("analysis"))  # kineto.json, profiler-reports/StepOutlier.json, ...
```
"""

from reportgen.kineto.analysis import analyze_trace, compare_ranks
from reportgen.sources.layout import find_traces, looks_like_kineto
from reportgen.kineto.outputs import KINETO_JSON, analyze_job, step_outlier_rule, write_kineto_outputs
from reportgen.kineto.reader import KinetoTrace, read_trace

__all__ = ["KINETO_JSON", "KinetoTrace", "analyze_job", "analyze_trace", "compare_ranks", "find_traces",
           "looks_like_kineto", "read_trace", "step_outlier_rule", "write_kineto_outputs"]
