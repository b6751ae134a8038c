"""How often ``trend``'s change points raise a false alarm, and how often they find a planted step.

Real run-to-run noise, two sources: ``noise.json`` holds the median step times of repeated short CPU training
runs (``noise_run.py``, several processes one after another on this project's shared 2-core machine; ``--record
PYTHON`` measures them again with a Python that has torch); and the step times of the repository's CPU
recordings (``tests/recordings/cpu-torch/{plain,periodic}/truth.json``), as the medians of blocks of 10
consecutive steps. Each simulated history draws its runs from those measurements (their log deviations from
the median, with replacement), as measured and rescaled to a run-to-run sd of 5 % and 10 % (the shape of the
real noise, tails and skew, at a CI runner's size: this machine, shared by several agents, moves by ~40 %); a
planted history multiplies every run from the middle on by 1.05 or 1.10. A false alarm is a noise-only
history with any change point; a detection is a change point at the planted run (exactly, and within one run).

    python benchmarks/trend/bench_trend_changepoints.py [--runs 20] [--histories 2000] [--record PYTHON]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from reportgen.compare.history import PENALTY, change_points

HERE = Path(__file__).resolve().parent
NOISE = HERE / "noise.json"
RECORDINGS = HERE.parents[1] / "tests" / "recordings" / "cpu-torch"
BLOCK = 10


def record(python: str, processes: int = 5, runs: int = 8) -> None:
    values = []
    for seed in range(1, processes + 1):
        out = subprocess.run([python, str(HERE / "noise_run.py"), str(seed), str(runs)], capture_output=True,
                             text=True, check=True).stdout
        values += [float(line) for line in out.split()]
    NOISE.write_text(json.dumps({"what": "median step time (s) of short CPU training runs, noise_run.py, "
                                         f"{processes} processes x {runs} runs, one after another",
                                 "median_step_s": values}, indent=1) + "\n")


def rates(noise: np.ndarray, runs: int, histories: int, penalty: float, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    at = runs // 2
    found = {"false_alarm": 0, **{f"{step}%": [0, 0] for step in (5, 10)}}
    for _ in range(histories):
        series = rng.choice(noise, size=runs)
        if change_points(list(series), penalty):
            found["false_alarm"] += 1
        for step in (5, 10):
            planted = series.copy()
            planted[at:] *= 1 + step / 100
            points = change_points(list(planted), penalty)
            found[f"{step}%"][0] += at in points
            found[f"{step}%"][1] += any(abs(p - at) <= 1 for p in points)
    return {"false_alarm_rate": found["false_alarm"] / histories,
            **{f"detect_{k}_exact": v[0] / histories for k, v in found.items() if k != "false_alarm"},
            **{f"detect_{k}_within_1": v[1] / histories for k, v in found.items() if k != "false_alarm"}}


def noise_sources() -> dict[str, np.ndarray]:
    """Each source's log deviations from its median."""
    runs = np.asarray(json.loads(NOISE.read_text())["median_step_s"])
    blocks = []
    for name in ("plain", "periodic"):
        steps = json.loads((RECORDINGS / name / "truth.json").read_text())["step_s"]
        blocks += [float(np.median(steps[i:i + BLOCK])) / float(np.median(steps)) for i in range(0, len(steps) - BLOCK + 1, BLOCK)]
    return {f"repeated runs ({len(runs)})": np.log(runs / np.median(runs)),
            f"recordings' step blocks ({len(blocks)})": np.log(np.asarray(blocks))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--histories", type=int, default=1000)
    parser.add_argument("--penalty", type=float, nargs="*", default=[PENALTY])
    parser.add_argument("--sd", type=float, nargs="*", default=[0.05, 0.10, 0.0], help="rescale to these (0: as measured)")
    parser.add_argument("--record", metavar="PYTHON", help="measure noise.json again with this Python (needs torch)")
    args = parser.parse_args()
    if args.record:
        record(args.record)
    for name, logs in noise_sources().items():
        measured = statistics.stdev(logs)
        print(f"{name}: sd of log {measured * 100:.1f} %")
        for sd in args.sd:
            noise = np.exp(logs * (sd / measured if sd else 1.0))
            for penalty in args.penalty:
                result = rates(noise, args.runs, args.histories, penalty)
                print(f"  sd {sd * 100 if sd else measured * 100:.0f} %{'' if sd else ' (as measured)'}, penalty "
                      f"{penalty:g}, {args.runs} runs, {args.histories} histories: "
                      + ", ".join(f"{k} {v * 100:.1f} %" for k, v in result.items()), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
