import sys
import time
import json
import numpy as np
import tensorflow as tf
slow_cb = "--slow-callback" in sys.argv
tf.random.set_seed(0)
x = np.random.default_rng(0).standard_normal((256 * 80, 256)).astype(np.float32)
y = np.random.default_rng(1).integers(0, 10, 256 * 80)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(256).prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.Input((256,)), tf.keras.layers.Dense(1024, activation="relu"),
                             tf.keras.layers.Dense(1024, activation="relu"), tf.keras.layers.Dense(10)])
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
SPENT = []
class Slow(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        t0 = time.perf_counter()
        self._work()
        SPENT.append(time.perf_counter() - t0)
    def _work(self):
        w = np.concatenate([v.numpy().ravel() for v in self.model.trainable_variables])
        for _ in range(3):
            np.histogram(w, bins=128); np.sort(np.abs(w))[-100:]
cbs = [tf.keras.callbacks.TensorBoard(log_dir="tb", profile_batch=(20, 49))] + ([Slow()] if slow_cb else [])
t = time.perf_counter()
model.fit(ds, epochs=int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 2, callbacks=cbs, verbose=0)
fit = time.perf_counter() - t
print("fit", fit, "callback", sum(SPENT), len(SPENT))
json.dump({"fit_s": fit, "callback_s": sum(SPENT), "batches": len(SPENT)}, open("truth.json", "w"))
