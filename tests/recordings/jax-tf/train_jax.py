"""A small JAX training loop recorded with jax.profiler (tests/recordings/jax-tf/README.md).

An MLP on synthetic data; batches come from a Python generator that sleeps ``--load-ms`` per batch
(a slow input pipeline on purpose), fetched with ``next()`` inside each step. Every step is annotated
with ``jax.profiler.StepTraceAnnotation`` and timed by this script itself (perf_counter inside the
annotation); ``truth.json`` holds those times, the time spent in ``next()`` per step, and the steps'
count, so that the tests can hold reportgen's numbers against the script's own.

    python train_jax.py OUT_DIR [--steps 30] [--load-ms 8]
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np


def batches(load_ms: float, batch: int = 64, features: int = 256, seed: int = 0):
    rng = np.random.default_rng(seed)
    while True:
        time.sleep(load_ms / 1000.0)  # the slow input pipeline (decoding, augmentation, ...)
        x = rng.standard_normal((batch, features), dtype=np.float32)
        y = (x[:, :10].sum(axis=1, keepdims=True) > 0).astype(np.float32)
        yield x, y


def init(key, sizes=(256, 512, 512, 1)):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (a, b)) * (1.0 / np.sqrt(a)), jnp.zeros(b)))
    return params


def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--load-ms", type=float, default=8.0)
    args = parser.parse_args()
    out = Path(args.out)
    params = init(jax.random.PRNGKey(0))
    it = batches(args.load_ms)
    x, y = next(it)
    params, loss = train_step(params, x, y)  # compile outside the profile
    loss.block_until_ready()
    steps, loads = [], []
    loop_start = time.perf_counter()
    with jax.profiler.trace(str(out / "logdir")):
        for i in range(args.steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                t0 = time.perf_counter()
                x, y = next(it)
                t1 = time.perf_counter()
                params, loss = train_step(params, x, y)
                loss.block_until_ready()
                t2 = time.perf_counter()
            steps.append((t2 - t0) * 1000.0)
            loads.append((t1 - t0) * 1000.0)
    loop_s = time.perf_counter() - loop_start
    truth = {"framework": "jax", "version": jax.__version__, "steps": len(steps), "step_ms": steps,
             "load_ms": loads, "median_step_ms": float(np.median(steps)),
             "input_share": sum(loads) / sum(steps), "loop_s": loop_s, "load_ms_asked": args.load_ms,
             "final_loss": float(loss)}
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")


if __name__ == "__main__":
    main()
