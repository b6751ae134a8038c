"""The step-time account of a SageMaker job's training processes, from smdebug's framework events.

``engine.framework_trace`` turns each training process's framework events into the one trace model
(``TraceColumns``) with its training steps; this runs the same account as for PyTorch and JAX/TF traces
(``trace_analysis.account.step_account``) on each and writes ``framework-account.json`` beside the rule outputs,
which the diagnosis (account findings, ``healthy`` earned from the account) and the page read. A process whose
steps hold no operator at all (smdebug's Python profiling off: only the steps and the data loader recorded) is
not accounted: all of its step would be "under no operator" for want of a recording, not of work; it is named
under ``not_accounted`` with why.

smdebug records the forward and backward passes (and, with detailed profiling, a few steps' operators), not the
loss or ``optimizer.step()``: here ``no_operator`` is the step outside the forward and backward passes, which
holds the optimizer — so it is shown, not judged as waste (``COARSE_NO_OPERATOR``).
"""

from __future__ import annotations

import json
from pathlib import Path

from reportgen.atomic import write_text_atomic
from reportgen.trace_analysis.account import step_account

FRAMEWORK_ACCOUNT_JSON = "framework-account.json"
COARSE_NO_OPERATOR = ("outside the forward and backward passes smdebug records: the loss, optimizer.step() and the "
                      "script's own Python")
NO_OPERATORS = ("its steps hold no forward, backward or operator event (smdebug's Python profiling was off: only the "
                "steps and the data loader were recorded)")


def framework_account_doc(traces) -> dict:
    """``engine.framework_trace.NodeTrace`` list -> the ``framework-account.json`` document (times in ms)."""
    nodes: dict[str, dict] = {}
    not_accounted: dict[str, str] = {}
    for trace in traces:
        account = step_account(trace.columns, trace.steps)
        if account is None:
            continue
        slices = account["slices_ms"]
        if slices["compute"] <= 0 and slices["communication"] <= 0:
            not_accounted[trace.node] = NO_OPERATORS
            continue
        nodes[trace.node] = {"account": _compact(account), "steps": [s["step"] for s in trace.steps],
                             "workers_left_out": trace.workers_left_out}
    return {"source": "SageMaker framework events", "unit": "ms", "no_operator_means": COARSE_NO_OPERATOR,
            "nodes": nodes, "not_accounted": not_accounted}


PER_STEP = ("work_per_step", "backward_passes_per_step", "eager_ops_per_step", "loader_starts_per_step",
            "optimizer_steps_per_step", "optimizer_per_step_ms")


def _compact(account: dict) -> dict:
    """The account without its per-step lists that hold only zeros (most slices of framework events: no kernels,
    copies or compilation), which a reader takes as absent: a 4-hour job has ~46,000 steps per process."""
    per_step = {name: values for name, values in account["per_step_ms"].items() if account["slices_ms"][name] > 0}
    lists = {key: account[key] for key in PER_STEP if any(account[key])}
    return {**{key: value for key, value in account.items() if key not in PER_STEP}, **lists, "per_step_ms": per_step}


def write_framework_account(traces, analysis_dir: Path) -> Path | None:
    """Write ``framework-account.json`` into ``analysis_dir`` (beside ``profiler-reports/``) when a process had
    training steps; None when none had."""
    if not traces:
        return None
    path = Path(analysis_dir) / FRAMEWORK_ACCOUNT_JSON
    write_text_atomic(path, json.dumps(framework_account_doc(traces)))
    return path
