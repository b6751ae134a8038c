"""The training process's other threads against its steps (``thread-contention``).

A trace holds the step's thread only. A Python thread beside the loop (a monitor re-serialising metrics, a logger, a
watchdog) holds the GIL whenever it runs Python, and the step's thread must take it back after every operator that
released it; on a host with no core to spare its CPU is also taken from the process's share. Neither shows in the
trace as anything but time under no operator and slower operators. ``reportgen record`` splits the command's own
process by thread at each tick (``thread_usage``): where its other threads used a significant share of a core over
the loop while the steps spend time under no operator and the step's thread slept through it (a thread waiting for
the GIL sleeps; one running the script's own Python does not), the finding names them and claims that slice.
"""

from __future__ import annotations

from reportgen.diagnosis.account_causes import WASTE, accounts, every_step, from_xspace
from reportgen.diagnosis.causes import Finding, detector, make, pct
from reportgen.diagnosis.evidence import Evidence

OTHER_THREADS = 0.10  # the process's other threads used at least this share of a core over the loop
# ... while the step's thread slept (neither on a core nor waiting for one), beyond its waits for data and for the
# device, at least this part of the steps' time under no operator: a thread held off the GIL sleeps; one running the
# script's own Python (host-overhead's) or an operator whose pool threads work beside it (intra-op threads) does not
ASLEEP = 0.5


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
    if from_xspace(ev):  # TensorFlow and JAX run their operators in their own pools: those threads are the steps'
        return None
    share, worst, _ = every_step(ev, "no_operator")
    if share < WASTE:  # the steps do not wait outside their operators: the other threads ran beside them
        return None
    waits = every_step(ev, "data_wait")[0] + every_step(ev, "host_blocked")[0]
    asleep = threads.main_blocked - waits  # the step's thread's sleep that no wait in the trace explains
    if asleep < ASLEEP * share:
        return None
    evidence = [
        f"the training process's other threads (not its step's; DataLoader workers are processes, not counted) used "
        f"{threads.other_cores:.2f} of a core during the loop, while the step's own thread ran "
        f"{threads.main_cores:.2f} of a core, waited {threads.main_queue_cores:.2f} for one and slept "
        f"{pct(threads.main_blocked)} of the loop (on the GIL, a lock, a queue; {pct(asleep)} beyond its waits for data "
        "and for the device)",
        _names(ev),
        f"{pct(share)} of every profiled step runs under no profiler operator: where the step's thread waits to take "
        "the GIL back after an operator, and the trace holds only the step's thread",
        "a Python thread holds the GIL while it runs: what it ran, the step's Python could not; on a host with no core "
        "to spare its CPU is also taken from the process's own",
    ]
    fix = ("Take the other thread's work off the training process: run it in its own process (multiprocessing, a "
           "sidecar), do it less often or on less data (every N steps, only what changed), or in code that releases "
           "the GIL (numpy, a C extension); find it with py-spy dump --native or threading.enumerate().")
    return make(ev, "thread-contention", 0.0, evidence, fix, loop_share=share,
                basis="the time every profiled step spends under no operator (the median step's, times the steps): "
                      "where the step's thread waits for the GIL; what the other threads' CPU slowed in the "
                      "operators is not counted",
                metrics={"other_threads_cores": threads.other_cores, "main_thread_cores": threads.main_cores,
                         "main_thread_run_queue_cores": threads.main_queue_cores,
                         "main_thread_blocked_share": threads.main_blocked, "no_operator_share": share,
                         "main_thread_asleep_share": asleep,
                         "worst_rank": worst, "threads": [name for name, _ in ev.busiest_threads]})
