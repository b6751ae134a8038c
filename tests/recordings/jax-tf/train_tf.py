"""A small TensorFlow training loop with a tf.data pipeline, recorded with tf.profiler
(tests/recordings/jax-tf/README.md).

A Keras MLP trained with a ``tf.function`` step on a tf.data pipeline whose ``map`` runs a Python
function that sleeps ``--load-ms`` per batch (a slow input pipeline on purpose; no prefetch, so the
training thread waits for it in ``IteratorGetNext``). Every step is annotated with
``tf.profiler.experimental.Trace("train", step_num=i, _r=1)`` and timed by this script itself
(perf_counter inside the annotation); ``truth.json`` holds the step times, the time spent getting the
next batch per step, and the steps' count.

    python train_tf.py OUT_DIR [--steps 30] [--load-ms 8]
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import tensorflow as tf


def slow_decode(x, y):
    def work(a, b):
        time.sleep(LOAD_MS / 1000.0)  # decoding, augmentation, ...
        return a, b
    x, y = tf.numpy_function(work, [x, y], [tf.float32, tf.float32])
    x.set_shape([64, 256])
    y.set_shape([64, 1])
    return x, y


LOAD_MS = 8.0


def dataset(seed: int = 0) -> tf.data.Dataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64 * 64, 256), dtype=np.float32)
    y = (x[:, :10].sum(axis=1, keepdims=True) > 0).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(64, drop_remainder=True).repeat().map(slow_decode)


def main() -> None:
    global LOAD_MS
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--load-ms", type=float, default=8.0)
    args = parser.parse_args()
    LOAD_MS = args.load_ms
    out = Path(args.out)
    model = tf.keras.Sequential([tf.keras.Input((256,)), tf.keras.layers.Dense(512, activation="relu"),
                                 tf.keras.layers.Dense(512, activation="relu"), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    it = iter(dataset())
    x, y = next(it)
    train_step(x, y).numpy()  # trace and compile outside the profile
    steps, loads = [], []
    loop_start = time.perf_counter()
    tf.profiler.experimental.start(str(out / "logdir"))
    for i in range(args.steps):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            t0 = time.perf_counter()
            x, y = next(it)
            t1 = time.perf_counter()
            loss = train_step(x, y).numpy()
            t2 = time.perf_counter()
        steps.append((t2 - t0) * 1000.0)
        loads.append((t1 - t0) * 1000.0)
    tf.profiler.experimental.stop()
    loop_s = time.perf_counter() - loop_start
    truth = {"framework": "tensorflow", "version": tf.__version__, "steps": len(steps), "step_ms": steps,
             "load_ms": loads, "median_step_ms": float(np.median(steps)),
             "input_share": sum(loads) / sum(steps), "loop_s": loop_s, "load_ms_asked": args.load_ms,
             "final_loss": float(loss)}
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")


if __name__ == "__main__":
    main()
