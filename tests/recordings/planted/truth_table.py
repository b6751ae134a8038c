"""Print the truth of every planted run beside this file: loop, planted cost and its share, what the fix saved.

    python tests/recordings/planted/truth_table.py [--json]

Reads each ``<run>/truth.json`` (the recorded run) and ``<run>/fix*-truth.json`` (the same job with the fix, not
recorded). The planted cost is the time the script measured inside the planted code (``planted_s``), except where
the plant changes the shape of the work itself and the fix still does some of it (``microbatch``, ``padded``: the
forward/backward/update time, ``float64`` too; ``keras-tiny-batch``: the whole step less what the fix at a larger
batch pays for the same samples, ``jax-tiny-batch`` too; ``jax-recompile``: the steps that met a new shape, less the median step): there it is
that time minus the fix run's (the fix still compiles once); ``periodic-eval``: the evaluations alone (its slow
start, ``slow_start_s``, is planted too but stays in the fix run). ``fix_saved_s`` is the loop's wall time minus
the fix run's, the profiler's export left out of both where it falls inside the loop (``loop_less_export``), one
value a fix run; ``fix_saved_cpu_s`` the same in the training process's CPU seconds (steadier on a shared host);
``planted_share`` is of the loop less the export too. ``profiled_*``: the same over the profiled steps alone
("profiled" / "there": the steps, their time less the export, and the planted share of it), which is what a
trace's evidence covers. ``truth_rows()`` gives the same numbers to tests.
"""
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LESS_THE_FIX = ("microbatch", "padded", "jax-recompile", "tf-eager", "jax-nojit", "torch-recompile", "anomaly",
               "tf-retrace", "float64", "keras-tiny-batch", "jax-tiny-batch", "bg-thread", "alloc-churn",
               "frozen-grad")


def load(path):
    with open(path) as f:
        return json.load(f)


def planted_per_step(t, fixes):
    """Each step's planted cost, as ``truth_row`` counts it (see the module's docstring)."""
    if t["mode"] in ("keras-tiny-batch", "jax-tiny-batch"):  # the whole step less what the larger batch's fix pays
        wide = [f for f in fixes if f["batch_size"] > t["batch_size"]]
        still = statistics.mean(sum(f["step_s"]) * t["batch_size"] / f["samples"] for f in wide) if wide else 0.0
        return [p - still for p in t["step_s"]]
    if "eval_s" in t:  # periodic-eval plants two costs: the fix (no evaluation in the loop) removes the evaluations
        return [t["eval_s"].get(str(i), 0.0) for i in range(t["steps"])]
    if t["mode"] in LESS_THE_FIX and fixes:
        # what the fix still pays a step (tf-eager's fix runs recorded before planted2.py timed their steps: the
        # whole step is what the fix still pays)
        still = statistics.mean((sum(f["planted_s"]) or sum(f["step_s"])) / f["steps"] for f in fixes)
        return [p - still for p in t["planted_s"]]
    return list(t["planted_s"])


def profiled_steps(t):
    """The steps in the trace: the torch schedule's active steps, TensorFlow's window, every JAX step."""
    if "profiler_schedule" in t:
        first = t["profiler_schedule"]["wait"] + t["profiler_schedule"]["warmup"]
        return range(first, min(first + t["profiler_schedule"]["active"], t["steps"]))
    if "profiler_window" in t:
        return range(t["profiler_window"][0], t["profiler_window"][1] + 1)
    return range(t["steps"])


def loop_less_export(t):
    """The loop's wall time without the profiler's export where it falls inside the loop: torch's trace handler
    (in the ``prof.step()`` closing the window) and TensorFlow's ``stop()``; JAX's ``stop_trace()`` follows it.
    ``history-cat``'s fix concatenates its list once after the loop: that cat is counted as the fix's loop."""
    if t.get("fix") and "history_final_cat_s" in t:
        return t["loop_s"] + t["history_final_cat_s"]
    if "profiler_handler_s" in t:
        return t["loop_s"] - sum(t["profiler_handler_s"])
    if "profiler_window" in t:
        return t["loop_s"] - t["profiler_export_s"]
    return t["loop_s"]


def truth_row(run_dir):
    """One run's truth: the recorded run's own timing and, where fix runs exist, what the fix saved; also the
    same over the profiled steps alone (what a trace's evidence covers: the export's ``prof.step()`` left out)."""
    t = load(run_dir / "truth.json")
    fixes = [load(p) for p in sorted(run_dir.glob("fix*-truth.json"))]
    per_step = planted_per_step(t, fixes)
    planted = sum(per_step)
    window = profiled_steps(t)
    window_s = sum(t["step_s"][i] for i in window)
    if t.get("prof_step_s"):  # torch: the profiled window's last prof.step() holds the export
        window_s -= t["prof_step_s"][window[-1]]
    window_planted = sum(per_step[i] for i in window)
    row = {"run": run_dir.name, "mode": t["mode"], "steps": t["steps"], "loop_s": t["loop_s"],
           "median_step_s": t["median_step_s"], "planted_s": planted, "planted_share": planted / loop_less_export(t),
           "profiler_export_s": t.get("profiler_export_s"), "startup_s": t.get("startup_s"),
           "slow_start_s": sum(t.get("slow_start_s", {}).values()),
           "profiled_steps": len(window), "profiled_s": window_s, "planted_profiled_s": window_planted,
           "planted_share_profiled": window_planted / window_s,
           "loop_less_export_s": loop_less_export(t),
           "fix_loop_s": [f["loop_s"] for f in fixes],
           "fix_saved_s": [loop_less_export(t) - loop_less_export(f) for f in fixes],
           # beyond the first step (jax-nojit: its first step compiles each primitive on its own, 20.2 s against the
           # jitted step's one compilation, 5.5-5.9 s; the rest is what every step pays)
           "steady_saved_s": [sum(t["step_s"][1:]) - sum(f["step_s"][1:]) for f in fixes]}
    if "loop_cpu_s" in t and fixes and all("loop_cpu_s" in f for f in fixes):
        row["fix_saved_cpu_s"] = [t["loop_cpu_s"] - f["loop_cpu_s"] for f in fixes]
    return row


def truth_rows(folder=HERE):
    return [truth_row(d) for d in sorted(folder.iterdir()) if (d / "truth.json").is_file()]


def main():
    rows = truth_rows()
    if "--json" in sys.argv[1:]:
        print(json.dumps(rows, indent=1))
        return
    fmt = lambda xs: " / ".join(f"{x:.1f}" for x in xs) if xs else "-"
    print(f"{'run':18} {'steps':>5} {'loop s':>7} {'median s':>8} {'planted s':>9} {'share':>6} {'export s':>8}"
          f" {'profiled':>13} {'there':>6}  {'fix loop s':>13}  {'fix saved s':>13}  {'saved CPU s':>13}")
    for r in rows:
        print(f"{r['run']:18} {r['steps']:5d} {r['loop_s']:7.1f} {r['median_step_s']:8.3f} {r['planted_s']:9.1f} "
              f"{100 * r['planted_share']:5.1f}% {r['profiler_export_s'] or 0:8.2f} "
              f"{r['profiled_steps']:4d} / {r['profiled_s']:5.1f}s {100 * r['planted_share_profiled']:5.1f}%  "
              f"{fmt(r['fix_loop_s']):>13}  {fmt(r['fix_saved_s']):>13}  {fmt(r.get('fix_saved_cpu_s', [])):>13}")

if __name__ == "__main__":
    main()
