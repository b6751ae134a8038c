"""The training process's other threads against its steps (``thread-contention``).

A trace holds the step's thread only. A Python thread beside the loop (a monitor re-serialising metrics, a logger, a
watchdog) holds the GIL whenever it runs Python, and the step's thread must take it back after every operator that
released it; on a host with no core to spare its CPU is also taken from the process's share. Neither shows in the
trace as anything but time under no operator and slower operators. ``reportgen record`` splits the command's own
process by thread at each tick (``thread_usage``): where its other threads used a significant share of a core over
the loop while the steps spend time under no operator, the finding names them and prices their CPU.
"""

from __future__ import annotations

from reportgen.diagnosis.account_causes import WASTE, accounts, every_step
from reportgen.diagnosis.causes import Finding, detector, make, pct
from reportgen.diagnosis.evidence import Evidence

OTHER_THREADS = 0.10  # the process's other threads used at least this share of a core over the loop


def _names(ev: Evidence) -> str:
    """The busiest other threads as the kernel names them (Python before 3.14 leaves its threads the process's name)."""
    named = [f"{name} ({seconds:.1f} CPU s)" for name, seconds in ev.busiest_threads]
    return ("the busiest of them over the recording, by the names the kernel keeps: " + ", ".join(named)
            + " (Python before 3.14 leaves its threads the process's name; threading.Thread(name=...) does not reach "
              "the kernel)") if named else ""


@detector("thread-contention")
def thread_contention(ev: Evidence, found: dict) -> Finding | None:
    threads = ev.loop_threads
    if threads is None or threads.other_cores < OTHER_THREADS or not accounts(ev):
        return None
    share, worst, _ = every_step(ev, "no_operator")
    if share < WASTE:  # the steps do not wait outside their operators: the other threads ran beside them
        return None
    loop_share = max(share, threads.other_cores)
    evidence = [
        f"the training process's other threads (not its step's; DataLoader workers are processes, not counted) used "
        f"{threads.other_cores:.2f} of a core during the loop, while the step's own thread ran "
        f"{threads.main_cores:.2f} of a core, waited {threads.main_queue_cores:.2f} for one and slept "
        f"{pct(threads.main_blocked)} of the loop (on the GIL, a lock, a queue)",
        _names(ev),
        f"{pct(share)} of every profiled step runs under no profiler operator: where the step's thread waits to take "
        "the GIL back after an operator, and the trace holds only the step's thread",
        "a Python thread holds the GIL while it runs: what it ran, the step's Python could not; on a host with no core "
        "to spare its CPU is also taken from the process's own",
    ]
    fix = ("Take the other thread's work off the training process: run it in its own process (multiprocessing, a "
           "sidecar), do it less often or on less data (every N steps, only what changed), or in code that releases "
           "the GIL (numpy, a C extension); find it with py-spy dump --native or threading.enumerate().")
    return make(ev, "thread-contention", 0.0, evidence, fix, loop_share=loop_share,
                basis="the other threads' CPU over the loop (at least the steps' time under no operator): what they "
                      "ran, under the GIL or on a shared core, the steps could not",
                metrics={"other_threads_cores": threads.other_cores, "main_thread_cores": threads.main_cores,
                         "main_thread_run_queue_cores": threads.main_queue_cores,
                         "main_thread_blocked_share": threads.main_blocked, "no_operator_share": share,
                         "worst_rank": worst, "threads": [name for name, _ in ev.busiest_threads]})
