"""A small training job to try ``reportgen record`` on from a fresh clone (the README's journey 3).

Fits a linear model to synthetic data by mini-batch gradient descent in plain Python (no package beyond the
standard library, so it runs wherever reportgen does), for ``--seconds`` of wall time. It is a stand-in for
your own ``train.py``: ``reportgen record`` samples the machine and this process while it runs.
"""

from __future__ import annotations

import argparse
import random
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="how long to train (wall seconds)")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    rng = random.Random(0)
    features, true_w = 16, [rng.uniform(-1, 1) for _ in range(16)]
    w, rate, step, loss = [0.0] * features, 0.05, 0, float("nan")
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        batch = [[rng.gauss(0, 1) for _ in range(features)] for _ in range(args.batch_size)]
        targets = [sum(a * b for a, b in zip(x, true_w)) + rng.gauss(0, 0.1) for x in batch]
        errors = [sum(a * b for a, b in zip(x, w)) - y for x, y in zip(batch, targets)]
        loss = sum(e * e for e in errors) / len(errors)
        for j in range(features):
            w[j] -= rate * 2 * sum(e * x[j] for e, x in zip(errors, batch)) / len(batch)
        step += 1
    print(f"{step} steps of batch {args.batch_size}, final loss {loss:.4f}")


if __name__ == "__main__":
    main()
