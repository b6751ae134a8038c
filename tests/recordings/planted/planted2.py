"""Real training runs with ONE planted cost each (issue #46), timed by the script itself: the truth.

Every mode trains a small model on synthetic data and writes truth.json: the loop's wall time, each step's wall
time (perf_counter, the whole iteration including ``prof.step()``) and the training process's CPU time in it
(process_time: steadier than wall time on a shared host; DataLoader workers not included), the time spent inside
the planted code in each step (timed around it), the time each step waited for data, the median step, the
profiler's own export (time around the trace handler and ``prof.stop()``), wall-clock epochs of the script's start,
the loop and the end (to line up with recording.json), and what the script knows (batch size, accumulation,
workers, ...).
``--fix`` runs the same job with the planted cost fixed (same samples, same steps) so the fix's saving is measured.

CPU PyTorch (profiled with a torch.profiler schedule, gzip'd traces):
  clean            a well-configured loop: DataLoader with 1 persistent worker
  metrics          per-step metrics: .item() calls, numpy histograms, a JSON line written with fsync
                   (fix: log every 50 steps)
  microbatch       micro-batches of 2 with 16 accumulation steps (fix: one batch of 32, same samples a step)
  epoch-restart    num_workers=2, persistent_workers=False, 6-step epochs: each epoch re-starts the workers,
                   whose set-up (opening the data set) stalls the epoch's first step (fix: persistent_workers=True)
  padded           an LSTM on variable-length sequences padded to the batch's longest, a few very long ones
                   (record_shapes=True; fix: length buckets, the same samples)
  periodic-eval    an evaluation pass after every 30th step, and a slow start (the first 4 steps also warm a
                   cache; step 0 is the profiler's warm-up, outside the trace) (fix: no evaluation in the loop)
  accum-optimizer  accumulation of 4 with Adam over a large layer: every 4th step holds a long optimizer step
                   (slow by design, not a problem; no fix)
  io-latency       the Dataset sleeps 20-40 ms a sample (I/O latency), num_workers=0 (fix: num_workers=4)
  cpu-loading      the Dataset computes each sample (--reps rounds of numpy smoothing; 250: 7 ms a sample on a
                   quiet core), num_workers=0: the training process makes its own batches, CPU work unlike
                   io-latency's sleeps (fix: --fix-workers workers, default 1: the core a 2-core host leaves;
                   --reps 0: the same samples without the per-sample work)
  gc-pause         gc.collect() after every step while the process holds many Python objects (a metadata
                   index): no detector was written for it (fix: no manual collection)
  torch-recompile  an MLP under torch.compile(dynamic=False) fed a batch size that changes every 5 steps: a
                   recompilation each time (fix: every batch padded to 64, the padding ignored by the loss)
  checkpoint       a 64 MB checkpoint (model, optimizer and training state, fsync'd) after every 10th step
                   (fix: none in the loop)
  ema-loop         an exponential moving average of the weights of a deep, narrow network, updated after every
                   step one parameter at a time from Python (fix: the same average with torch._foreach_* ops)
  iter-per-step    each step takes its batch with next(iter(loader)) from a loader with 2 workers: every step
                   starts (and stops) the workers, which open the data set (fix: one iterator for the epoch)
  anomaly          torch.autograd.set_detect_anomaly(True) left on while training the deep, narrow network
                   (fix: off)
  float64          the small CNN and its inputs in float64 (model.double()), record_shapes=True (fix: float32)
  print-log        the microbatch MLP at batch 16 (in-memory data) logging its loss and logits tensors every step
                   (logging.info("... %s", out): the tensor's repr reads each element from Python) to a file
                   (--metrics-file) (fix: the loss as a float, loss.item())
  history-cat      the small CNN keeping every step's inputs with hist = torch.cat([hist, x]): each step copies
                   all the steps before it, slower than the last (fix: a list of the batches, one cat at the end)
  subprocess-monitor  every step runs monitoring commands (df, free, ps: as a loop might call nvidia-smi) with
                   subprocess.run and parses them: the training process waits on its children (fix: every 50 steps)
  needless-copy    the Wide network under SGD with momentum, snapshotting its weights and the optimizer's state
                   every step ({k: v.clone()}, "to roll back on a NaN"): large copies that compute nothing
                   (fix: a snapshot every 50 steps)
  bg-thread        the small CNN beside a background "monitor" thread that re-serialises the run's metrics history
                   to JSON and summarises it in Python every --bg-period s: it holds the GIL while the step's
                   operators wait to take it back (fix: the same monitor in its own process)
  alloc-churn      the small CNN building a 64 MB scratch tensor (torch.zeros) every step to gather the batch's
                   features into, instead of reusing one: allocation, page faults and the fill every step
                   (fix: the buffer allocated once before the loop)
  param-loop       the deep, narrow network's gradients clipped by their global norm and decayed by hand, one
                   parameter at a time from Python (~1,000 tiny operators a step) (fix: clip_grad_norm_(foreach=
                   True) and SGD(weight_decay=..., foreach=True)); tried and not kept as a recording: on CPU the
                   foreach fix saved ~10 % of the block (0.19 against 0.17 s over 40 steps), foreach loops inside
  frozen-grad      fine-tuning the small CNN's head: the optimizer holds only the head's parameters, but the
                   backbone's still require grad, so every backward runs through the convolutions and accumulates
                   gradients nothing uses (fix: backbone.requires_grad_(False))
JAX (jax.profiler into a logdir, one StepTraceAnnotation a step; every step, or with --window steps --wait ..
--wait + --active - 1, start_trace/stop_trace inside the loop):
  jax-recompile    a jitted step fed batches whose size changes every 3 steps (a recompile each time)
  jax-clean        the fix (= jax-recompile --fix): every batch padded to one shape, a mask keeps the loss the same
  jax-nojit        the same step without jax.jit: every primitive dispatched from Python (fix: jax.jit)
  jax-hostmetrics  the jax-clean step followed every step by host metrics on its outputs: np.asarray(loss),
                   float(acc), jax.device_get of the parameters for numpy histograms, norms and maxima, a JSON line
                   (--metrics-file); only a window of steps traced (start_trace at --wait, stop_trace after
                   --active steps) (fix: the metrics every 50 steps)
  jax-tiny-batch   a jitted MLP 256-256-256-10 at batch 8 over in-memory data, one step a call: the call's fixed
                   cost outweighs its arithmetic (fix: --fix --fix-batch 256, the same samples in larger batches)
TensorFlow (tf.profiler.experimental, one Trace(step_num=...) a step):
  tf-hostwork      a tf.function step followed by heavy per-step numpy post-processing on the host
  tf-clean         the same step without it (= tf-hostwork --fix)
  tf-eager         a small deep MLP stepped eagerly, op by op from Python (fix: the same step in tf.function)
  tf-retrace       a tf.function step given the learning rate of a decaying schedule as a Python float: a new
                   trace and graph for every value (fix: the rate passed as a tensor)
  tf-pyfunc        the tf-clean step fed by a tf.data pipeline whose per-sample map is a tf.py_function (numpy
                   decoding in Python, parallel map and prefetch; the GIL serialises it) (fix: the same map in
                   TensorFlow ops)
  tf-noprefetch-map the tf-clean step at batch 64 fed by a tf.data map in TensorFlow ops (a 96x96 image augmented,
                   --reps rounds of a 5x5 blur, downscaled) run sequentially, no prefetch: the step waits while the pipeline builds its batch
                   (fix: num_parallel_calls=AUTOTUNE and prefetch)
  tf-generator     the tf-clean step at batch 64 fed by tf.data.Dataset.from_generator, whose Python generator
                   makes and augments each sample in numpy (--reps rounds), batched and prefetched: the generator
                   runs under the GIL (fix: the same samples made by a TensorFlow-ops map, parallel and prefetched)
Keras (model.fit; a callback profiles batches --wait .. --wait + --active - 1 as Keras's TensorBoard does):
  keras-tiny-batch a small MLP fit at batch 8, one step an execution: Keras's per-step work outweighs the
                   step's arithmetic (fix: --fix --fix-batch 256, larger batches over the same samples; or
                   --fix --fix-spe 32, steps_per_execution=32: the same updates, 32 steps a graph call)
"""
import argparse
import gc
import json
import os
import platform
import sys
import time

T_SCRIPT_EPOCH, T_SCRIPT = time.time(), time.perf_counter()
import numpy as np  # noqa: E402 (the script's clock starts before its imports)


def median(xs):
    return float(np.median(xs)) if xs else 0.0


def summarise_metrics(stop, period, keep):
    """bg-thread's monitor: every ``period`` s, a new metrics record, the last ``keep`` re-serialised to JSON and
    summarised in Python (means, a sorted percentile): pure Python, which holds the GIL while it runs."""
    import random
    rng, history, k = random.Random(0), [], 0
    for k in range(keep):  # the run's history so far (a resumed run's, or the epochs before)
        history.append({"step": k, "loss": rng.random(), "lr": 0.01, "grad_norm": rng.random(),
                        "tags": ["train", "cnn", str(k % 7)], "time": time.time()})
    while not stop.is_set():
        k += 1
        history.append({"step": k, "loss": rng.random(), "lr": 0.01, "grad_norm": rng.random(),
                        "tags": ["train", "cnn", str(k % 7)], "time": time.time()})
        recent = history[-keep:]
        text = json.dumps(recent)
        losses = sorted(r["loss"] for r in recent)
        summary = {"n": len(recent), "chars": len(text), "mean": sum(losses) / len(losses),
                   "p90": losses[int(0.9 * (len(losses) - 1))]}
        del summary
        stop.wait(period)


# ---------------------------------------------------------------- PyTorch
def run_torch(a, truth):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, Dataset
    from torch.profiler import profile, schedule, tensorboard_trace_handler, ProfilerActivity

    class Images(Dataset):
        """Synthetic 3x64x64 images; ``reps`` rounds of numpy smoothing a sample are the loader's CPU work,
        ``sleep`` (a range in seconds) the I/O latency of reading one."""
        def __init__(self, n, reps, sleep=None, setup_s=0.0):
            self.n, self.reps, self.sleep, self.setup_s = n, reps, sleep, setup_s
        def __len__(self): return self.n
        def __getitem__(self, i):
            rng = np.random.default_rng(i)
            if self.sleep:
                time.sleep(rng.uniform(*self.sleep))
            img = rng.random((3, 64, 64), dtype=np.float32)
            for _ in range(self.reps):
                img = (img + np.roll(img, 1, 1) + np.roll(img, 1, 2)) / 3.0
            return torch.from_numpy(np.ascontiguousarray(img)), int(rng.integers(0, 10))

    def open_dataset(worker_id):
        """A worker's set-up, as real data sets do (open files, read an index): ~setup_s of numpy work."""
        info = torch.utils.data.get_worker_info()
        t = time.perf_counter()
        table = np.random.default_rng(worker_id).random(200_000)
        while time.perf_counter() - t < info.dataset.setup_s:
            table = np.sort(table + 1e-9)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
            self.fc = nn.Linear(32 * 16 * 16, 10)
        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            x = F.max_pool2d(F.relu(self.c2(x)), 2)
            return self.fc(x.flatten(1))

    class Seqs(Dataset):
        """Variable-length token sequences: most 16-64 long, one in 100 is 400-512 long."""
        def __init__(self, n):
            rng = np.random.default_rng(0)
            self.lens = np.where(rng.random(n) < 0.01, rng.integers(400, 513, n), rng.integers(16, 65, n))
        def __len__(self): return len(self.lens)
        def __getitem__(self, i):
            rng = np.random.default_rng(i)
            return torch.from_numpy(rng.integers(1, 1000, int(self.lens[i]))), int(rng.integers(0, 10))

    def pad_collate(batch):
        longest = max(len(s) for s, _ in batch)
        x = torch.zeros(len(batch), longest, dtype=torch.long)
        for k, (s, _) in enumerate(batch):
            x[k, :len(s)] = s
        return x, torch.tensor([y for _, y in batch]), torch.tensor([len(s) for s, _ in batch])

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.fc = nn.Embedding(1000, 64), nn.Linear(128, 10)
            self.lstm = nn.LSTM(64, 128, batch_first=True)
        def forward(self, x):
            h, _ = self.lstm(self.emb(x))
            return self.fc(h.mean(1))

    class Wide(nn.Module):
        """A small network with one large layer (16.8M parameters): Adam's update over it is long."""
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1)
            self.big = nn.Linear(8 * 32 * 32, 2048)
            self.fc = nn.Linear(2048, 10)
        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            return self.fc(F.relu(self.big(x.flatten(1))))

    class Deep(nn.Module):
        """A deep, narrow network: many small parameter tensors (an average over them op by op is slow)."""
        def __init__(self, depth=48):
            super().__init__()
            self.inp = nn.Linear(3 * 32 * 32, 128)
            self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(128), nn.Linear(128, 128)) for _ in range(depth))
            self.out = nn.Linear(128, 10)
        def forward(self, x):
            h = self.inp(x)
            for b in self.blocks:
                h = h + F.relu(b(h))
            return self.out(h)

    class MLP(nn.Module):
        """Little compute a sample: at micro-batches of 2 the per-operator overhead is most of the time."""
        def __init__(self):
            super().__init__()
            self.l1, self.l2, self.l3 = nn.Linear(3 * 32 * 32, 512), nn.Linear(512, 512), nn.Linear(512, 10)
        def forward(self, x):
            return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))

    mode, fix = a.mode, a.fix
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)  # one intra-op thread: steadier steps on a shared 2-core host
    bs, accum, workers, persistent = 32, 1, 1, True
    steps = a.steps
    loss_fn = nn.CrossEntropyLoss()
    record_shapes = False
    epoch_steps = None
    if mode == "padded":
        data = Seqs(steps * 16)
        bs, model = 16, Tagger()
        if fix:  # length buckets: sort by length in windows of 100 batches, then shuffle the batches
            order = np.arange(len(data))
            rng = np.random.default_rng(1)
            batches = []
            for w in range(0, len(order), bs * 100):
                win = sorted(order[w:w + bs * 100], key=lambda i: data.lens[i])
                batches += [win[k:k + bs] for k in range(0, len(win), bs)]
            rng.shuffle(batches)
            loader = DataLoader(data, batch_sampler=batches, collate_fn=pad_collate, num_workers=1,
                                persistent_workers=True)
        else:
            loader = DataLoader(data, batch_size=bs, collate_fn=pad_collate, num_workers=1, persistent_workers=True)
        record_shapes = True
    elif mode == "microbatch":  # in-memory data: indexing a tensor, no worker needed
        g = torch.Generator().manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(steps * bs, 3 * 32 * 32, generator=g),
                                              torch.randint(0, 10, (steps * bs,), generator=g))
        model, workers, persistent = MLP(), 0, False
        loader = DataLoader(data, batch_size=bs, num_workers=0)
    elif mode == "needless-copy":  # a large model (67 MB of weights, as much momentum) snapshotted every step
        model = Wide()
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=1, persistent_workers=True)
    elif mode == "accum-optimizer":
        model, accum, bs = Wide(), 4, 32
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=1, persistent_workers=True)
    elif mode == "io-latency":
        bs, workers, persistent = 8, (4 if fix else 0), fix
        model = Net()
        loader = DataLoader(Images(steps * bs, 0, sleep=(0.020, 0.040)), batch_size=bs, num_workers=workers,
                            persistent_workers=persistent)
    elif mode == "cpu-loading":  # per-sample CPU work in the Dataset, made by the training process itself
        bs, workers = 8, (a.fix_workers if fix else 0)
        persistent = workers > 0
        model = Net()
        truth["sample_reps"] = a.reps
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=workers,
                            persistent_workers=persistent)
    elif mode == "torch-recompile":  # torch.compile'd, static shapes, fed a batch size that changes every 5 steps
        g = torch.Generator().manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(steps * 64, 3 * 32 * 32, generator=g),
                                              torch.randint(0, 10, (steps * 64,), generator=g))
        sizes = [64, 40, 48, 56, 24, 32, 60, 44]
        order, k = [], 0
        for i in range(steps):  # batches of the step's size, the same samples in the fix (padded to 64, masked)
            n = sizes[(i // 5) % len(sizes)]
            order.append(list(range(k, k + n)))
            k += n
        bs, workers, persistent = 64, 0, False
        model = torch.compile(MLP(), dynamic=False)
        truth["batch_sizes"] = [len(b) for b in order]
        loader = DataLoader(data, batch_sampler=order, num_workers=0)
    elif mode == "checkpoint":
        model = Net()
        # the rest of the training state a checkpoint keeps (an EMA of the weights, a sampler's or replay
        # buffer's state): 64 MB
        truth["checkpoint_state_bytes"] = 16 * 2**20 * 4
        train_state = torch.zeros(16 * 2**20)
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=1, persistent_workers=True)
    elif mode == "print-log":  # the microbatch MLP at batch 16, in-memory data: a small step, its logits logged
        g = torch.Generator().manual_seed(0)
        bs = 16
        data = torch.utils.data.TensorDataset(torch.randn(steps * bs, 3 * 32 * 32, generator=g),
                                              torch.randint(0, 10, (steps * bs,), generator=g))
        model, workers, persistent = MLP(), 0, False
        loader = DataLoader(data, batch_size=bs, num_workers=0)
        import logging
        log = logging.getLogger("train")
        log.setLevel(logging.INFO)
        log.addHandler(logging.FileHandler(a.metrics_file, mode="w"))
        log.propagate = False
    elif mode == "alloc-churn":  # the small CNN, a 64 MB scratch buffer the step gathers its features into
        model = Net()
        scratch_elems = 16 * 2**20
        scratch = torch.empty(scratch_elems) if fix else None  # the fix: made once, reused
        truth["scratch_bytes"] = scratch_elems * 4
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=1, persistent_workers=True)
    elif mode in ("ema-loop", "anomaly", "param-loop"):  # in-memory data, a deep narrow net: the step is small, the parameters many
        g = torch.Generator().manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(steps * bs, 3 * 32 * 32, generator=g),
                                              torch.randint(0, 10, (steps * bs,), generator=g))
        model, workers, persistent = Deep(), 0, False
        loader = DataLoader(data, batch_size=bs, num_workers=0)
        ema = [p.detach().clone() for p in model.parameters()]
        truth["parameter_tensors"] = len(ema)
        if mode == "anomaly":
            ema = None
    elif mode == "float64":  # the small CNN; float64 (the plant) or float32 (the fix); shapes and types recorded
        model, record_shapes = Net(), True
        if not fix:
            model = model.double()
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=1, persistent_workers=True)
    elif mode == "iter-per-step":
        workers, persistent = 2, False
        model = Net()
        loader = DataLoader(Images(steps * bs, a.reps, setup_s=a.setup_s), batch_size=bs, num_workers=workers,
                            shuffle=True, worker_init_fn=open_dataset)
    elif mode == "epoch-restart":
        workers, persistent, epoch_steps = 2, fix, 6
        model = Net()
        loader = DataLoader(Images(epoch_steps * bs, a.reps, setup_s=a.setup_s), batch_size=bs,
                            num_workers=workers, persistent_workers=persistent, worker_init_fn=open_dataset)
    else:
        model = Net()
        loader = DataLoader(Images(steps * bs, a.reps), batch_size=bs, num_workers=1, persistent_workers=True)
    micro = bs
    if mode == "microbatch" and not fix:
        micro, accum = 2, 16
    opt_kw = {"momentum": 0.9} if mode == "needless-copy" else {}
    trained = model.parameters()
    if mode == "frozen-grad":  # the head fine-tuned; the backbone (c1, c2) meant to be frozen
        trained = model.fc.parameters()
        if fix:
            for layer in (model.c1, model.c2):
                layer.requires_grad_(False)
        truth["trained_parameter_tensors"] = len(list(model.fc.parameters()))
        truth["grad_parameter_tensors"] = sum(p.requires_grad for p in model.parameters())
    if mode == "param-loop" and fix:  # the weight decay in the optimizer, every parameter in one foreach call
        opt_kw = {"weight_decay": 1e-4, "foreach": True}
    opt = (torch.optim.Adam if mode == "accum-optimizer" else torch.optim.SGD)(trained, lr=0.01, **opt_kw)
    if mode == "float64":
        truth["dtype"] = "float32" if fix else "float64"
    truth.update(batch_size=bs, micro_batch=micro if mode == "microbatch" else None,
                 accumulation=accum, num_workers=workers,
                 persistent_workers=persistent, epoch_steps=epoch_steps, torch=torch.__version__,
                 torch_threads=torch.get_num_threads(), record_shapes=record_shapes)

    if mode == "anomaly":
        torch.autograd.set_detect_anomaly(not fix)
        truth["detect_anomaly"] = not fix
    export = []
    handler = tensorboard_trace_handler(a.trace_dir, use_gzip=True)
    def timed_handler(p):
        t = time.perf_counter()
        handler(p)
        export.append(time.perf_counter() - t)
    prof = None
    if not a.no_profile:
        wait = 0 if mode == "periodic-eval" else a.wait
        prof = profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes,
                       schedule=schedule(wait=wait, warmup=1, active=a.active, repeat=1), on_trace_ready=timed_handler)
        truth["profiler_schedule"] = {"wait": wait, "warmup": 1, "active": a.active, "repeat": 1}
        prof.start()

    step_s, cpu_s, planted_s, data_s, prof_step_s, extra = [], [], [], [], [], {}
    metrics_file = open(a.metrics_file, "w") if mode == "metrics" else None
    cache = []
    hist, hist_list, snapshot = None, [], None
    if mode == "gc-pause":  # a metadata index of many small Python objects, as data sets keep (the GC walks it)
        cache = [{"id": i, "path": f"shard-{i % 97}/sample-{i}.jpg", "tags": [i % 7, i % 11]}
                 for i in range(a.gc_objects)]
        truth["gc_objects"] = a.gc_objects

    def batches():
        """The loader's batches, epoch after epoch, with the time of each ``next()`` (a new epoch: ``iter()``)."""
        if mode == "iter-per-step" and not fix:  # the bug: a new iterator (new workers) for every batch
            while True:
                t = time.perf_counter()
                x = next(iter(loader))
                yield x, time.perf_counter() - t
        while True:
            t = time.perf_counter()
            it = iter(loader)
            for _ in range(len(loader)):
                x = next(it)
                yield x, time.perf_counter() - t
                t = time.perf_counter()

    source = batches()
    monitor = None
    if mode == "bg-thread":  # a "monitor" beside training: a thread (the plant) or a process (the fix)
        import threading
        import multiprocessing
        truth["bg_period_s"], truth["bg_history"] = a.bg_period, a.bg_history
        if fix:
            stop = multiprocessing.get_context("fork").Event()
            monitor = multiprocessing.get_context("fork").Process(target=summarise_metrics,
                                                                   args=(stop, a.bg_period, a.bg_history))
        else:
            stop = threading.Event()
            monitor = threading.Thread(target=summarise_metrics, args=(stop, a.bg_period, a.bg_history), daemon=True)
        monitor.start()
    t_loop_epoch, t_loop, c_loop = time.time(), time.perf_counter(), time.process_time()
    for step in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        planted = 0.0
        waited = 0.0
        model.train()
        if mode == "accum-optimizer":   # one profiler step = one micro-batch; every 4th also updates
            batch, w = next(source); waited += w
            loss = loss_fn(model(batch[0]), batch[1]) / accum
            loss.backward()
            if step % accum == accum - 1:
                t = time.perf_counter()
                opt.step(); opt.zero_grad()
                planted = time.perf_counter() - t
        else:
            batch, w = next(source); waited += w
            if mode in ("io-latency", "iter-per-step", "cpu-loading") or (mode == "epoch-restart" and step % epoch_steps == 0):
                planted = w  # the wait for data (at an epoch's first step: the workers' start included)
            if mode == "padded":
                x, y, lens = batch
                extra.setdefault("padded_len", []).append(int(x.shape[1]))
                extra.setdefault("real_tokens", []).append(int(lens.sum()))
            x, y = batch[0], batch[1]
            if mode == "torch-recompile" and fix and x.shape[0] < 64:  # one shape: pad, and weigh the padding out
                pad = 64 - x.shape[0]
                x = torch.cat([x, x.new_zeros(pad, x.shape[1])])
                y = torch.cat([y, y.new_full((pad,), -100)])  # CrossEntropyLoss ignores -100
            if mode == "float64" and not fix:
                x = x.double()
            if mode == "alloc-churn":  # the batch's inputs gathered flat into a 64 MB scratch buffer
                t = time.perf_counter()
                buf = scratch if fix else torch.zeros(scratch_elems)
                buf[:x.numel()].copy_(x.reshape(-1))
                x = buf[:x.numel()].view_as(x)
                planted = time.perf_counter() - t
            tc = time.perf_counter()
            opt.zero_grad()
            for c in range(0, bs, micro):
                out = model(x[c:c + micro])
                loss = loss_fn(out, y[c:c + micro]) * (micro / bs)
                loss.backward()
            tu = time.perf_counter()
            if mode == "param-loop":  # clip the gradients' global norm to 1, and decay the weights
                params = [p for p in model.parameters() if p.grad is not None]
                if fix:
                    torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
                else:  # by hand, one parameter at a time
                    total = torch.zeros(())
                    for p in params:
                        total += p.grad.pow(2).sum()
                    clip = (1.0 / (total.sqrt() + 1e-6)).clamp(max=1.0)
                    for p in params:
                        p.grad.mul_(clip)
                        p.grad.add_(p.detach(), alpha=1e-4)
            opt.step()
            if mode == "param-loop":
                planted = time.perf_counter() - tu  # the clipping, the decay and the update: the fix pays the update
            if mode == "history-cat":  # every step's inputs kept for a later look at them
                t = time.perf_counter()
                if fix:
                    hist_list.append(x.detach())
                else:
                    hist = x.detach().clone() if hist is None else torch.cat([hist, x.detach()])
                planted = time.perf_counter() - t
            if mode == "subprocess-monitor" and (not fix or step % 50 == 49):
                t = time.perf_counter()  # the host's disk, memory and this process's RSS, from the usual tools
                import subprocess
                mon = {"df": subprocess.run(["df", "-k", "/"], capture_output=True, text=True).stdout.split(),
                       "free": subprocess.run(["free", "-m"], capture_output=True, text=True).stdout.split(),
                       "ps": subprocess.run(["ps", "-o", "rss=,pcpu=", "-p", str(os.getpid())], capture_output=True,
                                            text=True).stdout.split()}
                extra.setdefault("monitor_fields", []).append(sum(len(v) for v in mon.values()))
                planted = time.perf_counter() - t
            if mode == "needless-copy" and (not fix or step % 50 == 49):
                t = time.perf_counter()  # a snapshot of the weights and the optimizer's state, to roll back to
                snapshot = ({k: v.clone() for k, v in model.state_dict().items()},
                            [s["momentum_buffer"].clone() for s in opt.state.values()])
                planted = time.perf_counter() - t
            if mode == "ema-loop":
                t = time.perf_counter()
                params = [p.detach() for p in model.parameters()]
                if fix:
                    torch._foreach_mul_(ema, 0.999)
                    torch._foreach_add_(ema, params, alpha=0.001)
                else:
                    for e, p in zip(ema, params):
                        e.mul_(0.999).add_(p, alpha=0.001)
                planted = time.perf_counter() - t
            if mode in ("microbatch", "padded", "torch-recompile", "anomaly", "float64", "frozen-grad"):
                planted = time.perf_counter() - tc  # the compute the plant shapes; the fix run measures the saving
            if mode == "periodic-eval" and step < 4:
                t = time.perf_counter()   # a slow start: warming a cache with extra passes
                with torch.no_grad():
                    for _ in range(a.warm_passes):
                        cache.append(model(torch.randn(64, 3, 64, 64)).sum().item())
                extra.setdefault("slow_start_s", {})[step] = time.perf_counter() - t
                planted += time.perf_counter() - t
            if mode == "periodic-eval" and not fix and step % 30 == 29:
                t = time.perf_counter()
                model.eval()
                with torch.no_grad():
                    correct = 0
                    for _ in range(a.eval_batches):
                        xe = torch.randn(64, 3, 64, 64)
                        correct += int((model(xe).argmax(1) == 0).sum())
                extra.setdefault("eval_s", {})[step] = time.perf_counter() - t
                planted += time.perf_counter() - t
            if mode == "gc-pause" and not fix:
                t = time.perf_counter()
                gc.collect()
                planted = time.perf_counter() - t
            if mode == "checkpoint" and not fix and step % 10 == 9:
                t = time.perf_counter()
                with open(a.checkpoint_file, "wb") as f:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": train_state,
                                "step": step}, f)
                    f.flush(); os.fsync(f.fileno())
                extra.setdefault("checkpoint_s", {})[step] = time.perf_counter() - t
                planted = time.perf_counter() - t
            if mode == "print-log":  # the step's logits logged as a tensor (its repr: every element read from Python)
                t = time.perf_counter()
                if fix:
                    log.info("step %d loss %.4f", step, loss.item())
                else:
                    log.info("step %d loss %s logits %s", step, loss, out)
                planted = time.perf_counter() - t
            if mode == "metrics" and (not fix or step % 50 == 49):
                t = time.perf_counter()
                out = out.detach()  # the step's own output (micro == bs here): no extra operator
                rec = {"step": step, "loss": loss.item() * bs / micro,
                       "acc": (out.argmax(1) == y).float().mean().item(),
                       "out_max": out.max().item(), "out_min": out.min().item()}
                params = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
                grads = np.concatenate([p.grad.numpy().ravel() for p in model.parameters()])
                inputs = x.numpy().ravel()
                for _ in range(a.hist_reps):
                    rec["x_hist"] = np.histogram(inputs, bins=64)[0].tolist()
                    rec["w_hist"] = np.histogram(params, bins=64)[0].tolist()
                    rec["g_hist"] = np.histogram(grads, bins=64)[0].tolist()
                    rec["g_pct"] = np.percentile(np.abs(grads), [50, 90, 99]).tolist()
                metrics_file.write(json.dumps(rec) + "\n"); metrics_file.flush(); os.fsync(metrics_file.fileno())
                planted = time.perf_counter() - t
        if mode == "bg-thread":
            planted = time.perf_counter() - t0  # the whole step (its wait for data too): the fix run pays its own
        if prof is not None:
            tp = time.perf_counter()
            prof.step()
            prof_step_s.append(time.perf_counter() - tp)
        step_s.append(time.perf_counter() - t0)
        cpu_s.append(time.process_time() - c0)
        planted_s.append(planted)
        data_s.append(waited)
    loop, loop_cpu = time.perf_counter() - t_loop, time.process_time() - c_loop
    t_loop_end_epoch = time.time()
    if monitor is not None:
        stop.set()
        monitor.join()
    if mode == "history-cat":  # the fix's one cat, after the loop (timed beside it, not in it)
        t = time.perf_counter()
        hist = torch.cat(hist_list) if hist_list else hist
        truth["history_rows"], truth["history_final_cat_s"] = int(hist.shape[0]), time.perf_counter() - t
    if snapshot is not None:
        truth["snapshot_bytes"] = sum(v.numel() * v.element_size() for v in snapshot[0].values()) + \
            sum(v.numel() * v.element_size() for v in snapshot[1])
    stop_s = 0.0
    if prof is not None:
        t = time.perf_counter()
        prof.stop()
        stop_s = time.perf_counter() - t
    if metrics_file:
        metrics_file.close()
    if prof is not None and not a.no_key_averages:  # torch's own per-operator totals of the profiled steps
        truth["key_averages"] = {e.key: {"count": e.count, "self_cpu_us": e.self_cpu_time_total,
                                         "cpu_us": e.cpu_time_total} for e in prof.key_averages()}
    truth.update(loop_s=loop, loop_cpu_s=loop_cpu, steps=steps, step_s=step_s, step_cpu_s=cpu_s,
                 planted_s=planted_s, data_wait_s=data_s,
                 prof_step_s=prof_step_s, profiler_export_s=sum(export) + stop_s, profiler_handler_s=export,
                 profiler_stop_s=stop_s, t_loop_start=t_loop_epoch, t_loop_end=t_loop_end_epoch, **extra)
    if epoch_steps:
        truth["epoch_first_steps"] = list(range(0, steps, epoch_steps))


# ---------------------------------------------------------------- JAX
def run_jax(a, truth):
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    sizes = [64, 40, 48, 56, 24, 32, 60, 44, 52, 36, 28, 62]
    # then every other size from 8 to 63 once (a fixed order): new sizes keep coming for 168 steps, not a cycle of
    # 12 that JAX's cache holds after step 35 (a longer loop would compile only in its first steps)
    sizes += [int(n) for n in np.random.default_rng(1).permutation(np.arange(8, 64)) if n not in sizes]

    def init(k, d_in=512, h=1024):
        k1, k2, k3 = jax.random.split(k, 3)
        return {"w1": jax.random.normal(k1, (d_in, h)) * 0.03, "w2": jax.random.normal(k2, (h, h)) * 0.03,
                "w3": jax.random.normal(k3, (h, 10)) * 0.03}

    def loss_fn(p, x, y, m):
        hid = jax.nn.relu(jax.nn.relu(x @ p["w1"]) @ p["w2"])
        logp = jax.nn.log_softmax(hid @ p["w3"])
        nll = -jnp.take_along_axis(logp, y[:, None], 1)[:, 0]
        return (nll * m).sum() / m.sum()

    @jax.jit
    def train_step(p, x, y, m):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y, m)
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, g), loss

    params = init(jax.random.PRNGKey(0))
    nojit = a.mode == "jax-nojit"
    fix = a.fix or a.mode in ("jax-clean", "jax-nojit")  # one padded shape (jax-nojit: the plant is the missing jit)
    step_fn = train_step.__wrapped__ if nojit and not a.fix else train_step
    step_s, planted_s, shapes = [], [], []
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level, opts.enable_hlo_proto = 0, False  # no Python call tracing, no HLO protos: a small trace
    # the profiled steps: every one, or (--window) steps --wait .. --wait + --active - 1, the trace started and
    # stopped inside the loop as TensorFlow's modes do (stop_trace() at the start of the step after the window)
    first, last = (a.wait, a.wait + a.active) if a.window else (0, a.steps)
    profile, stop_s = not a.no_profile, 0.0
    if profile and not a.window:
        jax.profiler.start_trace(a.trace_dir, profiler_options=opts)
    t_loop_epoch, t_loop, c_loop = time.time(), time.perf_counter(), time.process_time()
    for step in range(a.steps):
        t_step = time.perf_counter()
        if profile and a.window and step == first:
            t = time.perf_counter()
            jax.profiler.start_trace(a.trace_dir, profiler_options=opts)
            truth["profiler_start_s"] = time.perf_counter() - t
        if profile and a.window and step == last:
            t = time.perf_counter()
            jax.profiler.stop_trace()
            stop_s = time.perf_counter() - t
        n = sizes[(step // 3) % len(sizes)]
        x = rng.standard_normal((n, 512), dtype=np.float32)
        y = rng.integers(0, 10, n)
        m = np.ones(n, np.float32)
        if fix:  # pad to one shape; the mask keeps padded rows out of the loss
            x = np.concatenate([x, np.zeros((64 - n, 512), np.float32)])
            y = np.concatenate([y, np.zeros(64 - n, y.dtype)])
            m = np.concatenate([m, np.zeros(64 - n, np.float32)])
        shapes.append(int(x.shape[0]))
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            t0 = time.perf_counter() if not a.window else t_step  # --window: the whole iteration, as tf's modes
            params, loss = step_fn(params, x, y, m)
            loss.block_until_ready()
            step_s.append(time.perf_counter() - t0)
    loop, loop_cpu = time.perf_counter() - t_loop, time.process_time() - c_loop
    t_loop_end_epoch = time.time()
    if profile and not a.window:
        t = time.perf_counter()
        jax.profiler.stop_trace()
        stop_s = time.perf_counter() - t
    if profile and a.window:
        truth["profiler_window"] = [first, last - 1]
        truth["profiler_export_note"] = f"jax.profiler.stop_trace() at the start of step {last}, inside its step_s"
    new_shape = [i for i in range(len(shapes)) if shapes[i] not in shapes[:i]]
    med = median(step_s)
    planted_s = [step_s[i] - med if i in new_shape else 0.0 for i in range(len(step_s))]
    if nojit:  # the whole step, op by op or (--fix) jitted: truth_table.py takes the fix's from it
        planted_s = list(step_s)
    if profile and a.window and planted_s[last]:  # the step after the window holds stop_trace(): the profiler's
        planted_s[last] -= stop_s
    truth.update(loop_s=loop, loop_cpu_s=loop_cpu, steps=a.steps, step_s=step_s, planted_s=planted_s,
                 batch_shapes=shapes,
                 compile_steps=new_shape, compiles=len(new_shape), jit_cache_size=train_step._cache_size(),
                 jit=not nojit or a.fix,
                 profiler_export_s=stop_s, t_loop_start=t_loop_epoch, t_loop_end=t_loop_end_epoch,
                 jax=jax.__version__, batch_size=64, accumulation=1, num_workers=0,
                 planted_note="steps that met a new batch shape: step time minus the median step (compile + first run)")


class JaxWindow:
    """JAX's trace over steps ``--wait`` .. ``--wait + --active - 1`` only: ``start_trace`` before the first,
    ``stop_trace`` (timed, ``stop_s``: the export) at the start of the step after the last, inside its step, or
    after the loop where the window runs to its end; nothing with ``--no-profile``."""

    def __init__(self, a, opts):
        self.first, self.last, self.on = a.wait, a.wait + a.active, not a.no_profile
        self.trace_dir, self.opts, self.stop_s = a.trace_dir, opts, 0.0

    def at_step(self, step):
        if self.on and step == self.first:
            import jax
            jax.profiler.start_trace(self.trace_dir, profiler_options=self.opts)
        elif self.on and step == self.last:
            self._stop()

    def after_loop(self, steps):
        if self.on and steps <= self.last:
            self._stop()

    def _stop(self):
        import jax
        t = time.perf_counter()
        jax.profiler.stop_trace()
        self.stop_s = time.perf_counter() - t


def run_jax_hostmetrics(a, truth):
    """jax-hostmetrics: the jax-clean step (one padded shape, jitted) followed every step by metrics computed on
    the host from its outputs: the loss and accuracy read as Python numbers, the parameters fetched
    (``jax.device_get``) for numpy histograms, norms and maxima, a JSON line written; ``--fix`` does the same every
    50 steps. Only steps ``--wait`` .. ``--wait + --active - 1`` are traced: ``start_trace`` before the first,
    ``stop_trace`` (timed: the export) at the start of the step after the last, inside its ``step_s``."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)

    def init(k, d_in=512, h=1024):
        k1, k2, k3 = jax.random.split(k, 3)
        return {"w1": jax.random.normal(k1, (d_in, h)) * 0.03, "w2": jax.random.normal(k2, (h, h)) * 0.03,
                "w3": jax.random.normal(k3, (h, 10)) * 0.03}

    def loss_fn(p, x, y):
        hid = jax.nn.relu(jax.nn.relu(x @ p["w1"]) @ p["w2"])
        logits = hid @ p["w3"]
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1)[:, 0]
        return nll.mean(), (logits.argmax(-1) == y).mean()

    @jax.jit
    def train_step(p, x, y):
        (loss, acc), g = jax.value_and_grad(loss_fn, has_aux=True)(p, x, y)
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, g), loss, acc

    params = init(jax.random.PRNGKey(0))
    every = 50 if a.fix else 1
    metrics_file = open(a.metrics_file, "w")
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level, opts.enable_hlo_proto = 0, False  # no Python call tracing, no HLO protos: a small trace
    window = JaxWindow(a, opts)  # the traced window: steps first..last-1
    first, last = window.first, window.last
    step_s, cpu_s, planted_s, compiled = [], [], [], None
    t_loop_epoch, t_loop, c_loop = time.time(), time.perf_counter(), time.process_time()
    for step in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        window.at_step(step)
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            x = rng.standard_normal((64, 512), dtype=np.float32)
            y = rng.integers(0, 10, 64)
            params, loss, acc = train_step(params, x, y)
            loss.block_until_ready()  # the step's own computation, outside the metrics' time
            planted = 0.0
            if step % every == 0:  # the metrics, on the host
                t = time.perf_counter()
                rec = {"step": step, "loss": float(np.asarray(loss)), "acc": float(acc)}
                host = jax.device_get(params)
                for name, w in host.items():
                    for _ in range(a.hist_reps):
                        counts, _edges = np.histogram(w, bins=64)
                    rec[name] = {"hist": counts.tolist(), "max": float(np.abs(w).max()),
                                 "norm": float(np.linalg.norm(w))}
                metrics_file.write(json.dumps(rec) + "\n")
                metrics_file.flush()
                planted = time.perf_counter() - t
        step_s.append(time.perf_counter() - t0)
        cpu_s.append(time.process_time() - c0)
        planted_s.append(planted)
        if compiled is None:
            compiled = step_s[-1]
    loop, loop_cpu = time.perf_counter() - t_loop, time.process_time() - c_loop
    t_loop_end_epoch = time.time()
    window.after_loop(a.steps)  # a window that runs to the loop's end stops after it
    stop_s = window.stop_s
    metrics_file.close()
    truth.update(loop_s=loop, loop_cpu_s=loop_cpu, steps=a.steps, step_s=step_s, step_cpu_s=cpu_s,
                 planted_s=planted_s, metrics_every=every, first_step_s=compiled,
                 profiler_export_s=stop_s, jit_cache_size=train_step._cache_size(),
                 t_loop_start=t_loop_epoch, t_loop_end=t_loop_end_epoch, jax=jax.__version__, batch_size=64,
                 accumulation=1, num_workers=0,
                 planted_note="the host metrics block, timed around it (loss and accuracy to Python, device_get, "
                              "numpy histograms, norms and maxima, the JSON line)")
    if not a.no_profile:
        truth["profiler_window"] = [first, last - 1]
        truth["profiler_export_note"] = f"jax.profiler.stop_trace() at the start of step {last}, inside its step_s"


def run_jax_tiny(a, truth):
    """jax-tiny-batch: a jitted MLP step (256-256-256-10, SGD) at batch 8 over in-memory data, one step a call: each
    step's fixed cost (the jitted call's dispatch, its arguments' transfer, the Python loop) outweighs its
    arithmetic. ``--fix`` takes batches of ``--fix-batch`` (256: the same samples in 1/32 of the steps). Steps
    ``--wait`` .. ``--wait + --active - 1`` are traced, ``stop_trace`` (timed: the export) at the start of the next."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    n = a.steps * 8  # the samples: a.steps batches of 8 in the plant, the same samples in the fix
    xs = rng.standard_normal((n, 256)).astype(np.float32)
    ys = rng.integers(0, 10, n).astype(np.int32)
    bs = a.fix_batch if a.fix else 8
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {"w1": jax.random.normal(k1, (256, 256)) * 0.05, "w2": jax.random.normal(k2, (256, 256)) * 0.05,
              "w3": jax.random.normal(k3, (256, 10)) * 0.05}

    def loss_fn(p, x, y):
        logits = jax.nn.relu(jax.nn.relu(x @ p["w1"]) @ p["w2"]) @ p["w3"]
        return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()

    @jax.jit
    def train_step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, g), loss

    steps = n // bs
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level, opts.enable_hlo_proto = 0, False
    window = JaxWindow(a, opts)
    first, last = window.first, window.last
    step_s = []
    params, loss = train_step(params, xs[:bs], ys[:bs])  # compiled before the loop
    loss.block_until_ready()
    t_loop_epoch, t_loop, c_loop = time.time(), time.perf_counter(), time.process_time()
    for step in range(steps):
        t0 = time.perf_counter()
        window.at_step(step)
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, xs[step * bs:(step + 1) * bs], ys[step * bs:(step + 1) * bs])
            loss.block_until_ready()
        step_s.append(round(time.perf_counter() - t0, 6))
    loop, loop_cpu = time.perf_counter() - t_loop, time.process_time() - c_loop
    t_loop_end_epoch = time.time()
    window.after_loop(steps)
    stop_s = window.stop_s
    truth.update(loop_s=loop, loop_cpu_s=loop_cpu, steps=steps, step_s=step_s, planted_s=list(step_s), samples=n,
                 profiler_export_s=stop_s, t_loop_start=t_loop_epoch, t_loop_end=t_loop_end_epoch,
                 jax=jax.__version__, batch_size=bs, accumulation=1, num_workers=0,
                 planted_note="the whole step (planted_s = step_s): truth_table.py takes off what the fix at a "
                              "larger batch pays for the same samples")
    if not a.no_profile and steps > first:
        truth["profiler_window"] = [first, min(last, steps) - 1]
        truth["profiler_export_note"] = f"jax.profiler.stop_trace() at the start of step {last}, inside its step_s"


# ---------------------------------------------------------------- TensorFlow
def run_tf(a, truth):
    import tensorflow as tf
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    pipelined = a.mode in ("tf-pyfunc", "tf-noprefetch-map", "tf-generator")
    bs, hidden = (64 if pipelined else 256), 1024  # tf-pyfunc: 64 py_function calls a step (a small trace)
    eager = a.mode == "tf-eager"
    if eager:  # a small, deep MLP: little compute an op, so running op by op from Python is most of the step
        bs, hidden = 32, 256
        model = tf.keras.Sequential([tf.keras.Input((256,))] + [tf.keras.layers.Dense(hidden, activation="relu")
                                                                for _ in range(8)] + [tf.keras.layers.Dense(10)])
    else:
        model = tf.keras.Sequential([tf.keras.Input((256,)), tf.keras.layers.Dense(hidden, activation="relu"),
                                     tf.keras.layers.Dense(hidden, activation="relu"), tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01)
    lossf = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def eager_step(x, y, lr=None):
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            loss = lossf(y, out)
        grads = tape.gradient(loss, model.trainable_variables)
        if lr is not None:  # tf-retrace: the schedule's rate scales the update
            grads = [g * lr / 0.01 for g in grads]
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss, out

    train_step = eager_step if eager and not a.fix else tf.function(eager_step)
    retrace = a.mode == "tf-retrace"
    if retrace:  # a decaying learning rate, passed as a Python float (--fix: as a tensor): a new trace per value
        inner = train_step
        rate = lambda step: 0.01 * 0.99 ** step
        train_step = ((lambda x, y, step: inner(x, y, tf.constant(rate(step), tf.float32))) if a.fix
                      else (lambda x, y, step: inner(x, y, rate(step))))

    host = a.mode == "tf-hostwork" and not a.fix
    pyfunc = pipelined  # the batch comes from a tf.data pipeline; planted_s is the wait for it
    if pyfunc:  # a tf.data pipeline: each sample "decoded" by Python (the plant) or by TensorFlow ops (the fix)
        def decode(i):
            r = np.random.default_rng(int(i))
            v = r.standard_normal(256).astype(np.float32)
            for _ in range(a.reps):
                v = (v + np.roll(v, 1)) / 2.0
            return v, np.int64(r.integers(0, 10))

        def py_map(i):
            v, lab = tf.py_function(decode, [i], [tf.float32, tf.int64])
            v.set_shape([256]); lab.set_shape([])
            return v, lab

        def tf_map(i):
            v = tf.random.stateless_normal([256], seed=tf.stack([i, tf.constant(0, tf.int64)]))
            for _ in range(a.reps):
                v = (v + tf.roll(v, 1, 0)) / 2.0
            return v, tf.random.stateless_uniform([], seed=tf.stack([i, tf.constant(1, tf.int64)]), minval=0,
                                                  maxval=10, dtype=tf.int64)

        def augment(i):  # tf-noprefetch-map: an image "decoded" and augmented by TensorFlow ops, then downscaled
            seed = tf.stack([i, tf.constant(2, tf.int64)])
            img = tf.random.stateless_uniform([96, 96, 3], seed=seed)
            img = tf.image.stateless_random_flip_left_right(img, seed)
            img = tf.image.stateless_random_brightness(img, 0.2, seed)
            img = tf.image.stateless_random_contrast(img, 0.8, 1.2, seed)
            kernel = tf.ones([5, 5, 3, 1]) / 25.0
            for _ in range(a.reps):  # a blur, a round at a time
                img = tf.nn.depthwise_conv2d(img[None], kernel, [1, 1, 1, 1], "SAME")[0]
            small = tf.image.rgb_to_grayscale(tf.image.resize(img, [16, 16]))
            lab = tf.random.stateless_uniform([], seed=seed, minval=0, maxval=10, dtype=tf.int64)
            return tf.reshape(small, [256]), lab

        def generate():  # tf-generator: each sample made and augmented in numpy by a Python generator
            for i in range((a.steps + 1) * bs):
                yield decode(i)

        n = (a.steps + 1) * bs
        if a.mode == "tf-noprefetch-map":  # sequential map, no prefetch: the step waits on it (--fix: parallel)
            ds = (tf.data.Dataset.range(n).map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(bs).prefetch(2)
                  if a.fix else tf.data.Dataset.range(n).map(augment).batch(bs))
            truth["pipeline"] = ("map(augment in TensorFlow ops, num_parallel_calls=AUTOTUNE).batch(%d).prefetch(2)"
                                 if a.fix else "map(augment in TensorFlow ops).batch(%d), sequential, no prefetch") % bs
        elif a.mode == "tf-generator" and not a.fix:
            ds = (tf.data.Dataset.from_generator(generate, output_signature=(
                tf.TensorSpec([256], tf.float32), tf.TensorSpec([], tf.int64))).batch(bs).prefetch(2))
            truth["pipeline"] = "from_generator(numpy per sample).batch(%d).prefetch(2)" % bs
        else:
            ds = (tf.data.Dataset.range(n).map(tf_map if a.fix else py_map, num_parallel_calls=tf.data.AUTOTUNE)
                  .batch(bs).prefetch(2))
            truth["pipeline"] = ("map(TensorFlow ops" if a.fix else "map(tf.py_function") + \
                ", num_parallel_calls=AUTOTUNE).batch(%d).prefetch(2)" % bs
        batches = iter(ds)
    step_s, cpu_s, planted_s, data_s = [], [], [], []
    warm = next(batches) if pyfunc else (rng.standard_normal((bs, 256)).astype(np.float32), rng.integers(0, 10, bs))
    train_step(*warm, -1) if retrace else train_step(*warm)  # traced before the loop
    first, last = a.wait, a.wait + a.active  # the profiled window: steps first..last-1
    stop_s = 0.0
    t_loop_epoch, t_loop, c_loop = time.time(), time.perf_counter(), time.process_time()
    for step in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        if step == first and not a.no_profile:
            tf.profiler.experimental.start(a.trace_dir)
        if step == last and not a.no_profile:
            t = time.perf_counter()
            tf.profiler.experimental.stop()
            stop_s = time.perf_counter() - t
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            t_data = time.perf_counter()
            if pyfunc:
                x, y = next(batches)
            else:
                x = rng.standard_normal((bs, 256)).astype(np.float32)
                y = rng.integers(0, 10, bs)
            waited = time.perf_counter() - t_data
            t_call = time.perf_counter()
            loss, out = train_step(x, y, step) if retrace else train_step(x, y)
            planted = waited if pyfunc else 0.0  # tf-pyfunc: the wait for the pipeline's next batch
            if retrace:  # the whole call: a trace and a graph built each step, or (--fix) the graph run
                planted = time.perf_counter() - t_call
            if eager:  # the whole step: eagerly, or (--fix) as a graph; truth_table.py takes the fix's from it
                planted = time.perf_counter() - t0
            if host:  # per-step host post-processing of the outputs and weights in numpy
                t = time.perf_counter()
                o = out.numpy()
                w = np.concatenate([v.numpy().ravel() for v in model.trainable_variables])
                for _ in range(a.hist_reps):
                    np.histogram(w, bins=128)
                    np.sort(np.abs(w))[-100:]
                    np.percentile(o, [1, 50, 99], axis=0)
                planted = time.perf_counter() - t
            else:
                float(loss)
        step_s.append(time.perf_counter() - t0)
        cpu_s.append(time.process_time() - c0)
        planted_s.append(planted)
        data_s.append(waited)
    loop, loop_cpu = time.perf_counter() - t_loop, time.process_time() - c_loop
    t_loop_end_epoch = time.time()
    truth.update(loop_s=loop, loop_cpu_s=loop_cpu, steps=a.steps, step_s=step_s, step_cpu_s=cpu_s,
                 planted_s=planted_s, data_wait_s=data_s, profiler_export_s=stop_s, profiler_window=[first, last - 1],
                 profiler_export_note=f"tf.profiler.experimental.stop() at the start of step {last}, inside its step_s",
                 t_loop_start=t_loop_epoch, t_loop_end=t_loop_end_epoch, tensorflow=tf.__version__,
                 batch_size=bs, accumulation=1, num_workers=0, eager=eager and not a.fix)


# ---------------------------------------------------------------- Keras model.fit
def run_keras(a, truth):
    """keras-tiny-batch: ``model.fit`` at batch 8 on a small MLP, one step an execution: Keras's per-step work
    (its Python loop, callbacks, the iterator, the graph's launch) costs more than the step's arithmetic."""
    import tensorflow as tf
    import keras
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    n = a.steps * 8  # the samples: a.steps batches of 8 in the plant, the same samples in every fix
    x = rng.standard_normal((n, 256)).astype(np.float32)
    y = rng.integers(0, 10, n)
    bs, spe = 8, 1
    if a.fix:  # --fix-batch 256: larger batches; --fix-spe 32: 32 steps of 8 in one execution (the same updates)
        bs, spe = a.fix_batch, a.fix_spe
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(bs).prefetch(tf.data.AUTOTUNE)
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(256, activation="relu"),
                              keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=spe)
    first, last = a.wait, a.wait + a.active  # the profiled batches first..last-1 (TensorBoard counts from 1)
    marks, export = [], []

    class Timed(keras.callbacks.Callback):
        """Each executed batch's start: a step is one start to the next, Keras's hooks included."""
        def on_train_batch_begin(self, batch, logs=None):
            marks.append(time.perf_counter())
        def on_train_end(self, logs=None):
            marks.append(time.perf_counter())

    class Profile(keras.callbacks.Callback):
        """What Keras's TensorBoard(profile_batch=...) does (tensorboard is not installed here): the profiler
        started at the window's first batch, one ``Trace("train", step_num=batch)`` a batch, and stopped (the
        export, timed) at the end of its last batch."""
        ctx = None
        def on_train_batch_begin(self, batch, logs=None):
            if batch == first:
                tf.profiler.experimental.start(a.trace_dir)
            if first <= batch < last:
                self.ctx = tf.profiler.experimental.Trace("train", step_num=batch, _r=1)
                self.ctx.__enter__()
        def on_train_batch_end(self, batch, logs=None):
            if self.ctx is not None:
                self.ctx.__exit__(None, None, None)
                self.ctx = None
            if batch == last - 1:
                t = time.perf_counter()
                tf.profiler.experimental.stop()
                export.append(time.perf_counter() - t)

    cbs = [Timed()]
    if not a.no_profile:
        cbs.insert(0, Profile())
    t_loop_epoch, t_loop, c_loop = time.time(), time.perf_counter(), time.process_time()
    model.fit(ds, epochs=1, callbacks=cbs, verbose=0)
    loop, loop_cpu = time.perf_counter() - t_loop, time.process_time() - c_loop
    t_loop_end_epoch = time.time()
    # µs are enough, and no per-step CPU (loop_cpu_s is the CPU): 10,000 steps stay a small file
    step_s = [round(b - e, 6) for e, b in zip(marks, marks[1:])]
    truth.update(loop_s=loop, loop_cpu_s=loop_cpu, steps=len(step_s), step_s=step_s, planted_s=list(step_s), samples=n,
                 profiler_export_s=sum(export), t_loop_start=t_loop_epoch, t_loop_end=t_loop_end_epoch,
                 tensorflow=tf.__version__, keras=keras.__version__, batch_size=bs, steps_per_execution=spe,
                 accumulation=1, num_workers=0,
                 planted_note="the whole step (planted_s = step_s): truth_table.py takes off what the fix at a "
                              "larger batch pays for the same samples")
    if not a.no_profile:
        truth["profiler_window"] = [first, last - 1]
        truth["profiler_export_note"] = f"tf.profiler.experimental.stop() in batch {last - 1}'s on_train_batch_end"


MODES = {"clean": run_torch, "metrics": run_torch, "microbatch": run_torch, "epoch-restart": run_torch,
         "padded": run_torch, "periodic-eval": run_torch, "accum-optimizer": run_torch, "io-latency": run_torch,
         "cpu-loading": run_torch,
         "jax-recompile": run_jax, "jax-clean": run_jax, "jax-nojit": run_jax, "tf-hostwork": run_tf, "tf-clean": run_tf,
         "gc-pause": run_torch, "checkpoint": run_torch, "torch-recompile": run_torch, "tf-eager": run_tf, "tf-retrace": run_tf,
         "ema-loop": run_torch, "anomaly": run_torch, "iter-per-step": run_torch, "float64": run_torch,
         "tf-pyfunc": run_tf, "keras-tiny-batch": run_keras, "print-log": run_torch,
         "history-cat": run_torch, "subprocess-monitor": run_torch, "needless-copy": run_torch,
         "bg-thread": run_torch, "alloc-churn": run_torch, "param-loop": run_torch, "frozen-grad": run_torch,
         "jax-hostmetrics": run_jax_hostmetrics, "jax-tiny-batch": run_jax_tiny, "tf-noprefetch-map": run_tf, "tf-generator": run_tf}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=sorted(MODES))
    ap.add_argument("--fix", action="store_true", help="apply the fix to the planted cost")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--reps", type=int, default=1, help="numpy smoothing rounds a sample (the loader's CPU work)")
    ap.add_argument("--wait", type=int, default=5, help="profiler schedule: steps before the warm-up step")
    ap.add_argument("--active", type=int, default=30, help="profiler schedule: steps profiled")
    ap.add_argument("--fix-workers", type=int, default=1, help="cpu-loading: the fix's num_workers")
    ap.add_argument("--fix-batch", type=int, default=8, help="keras-tiny-batch, jax-tiny-batch: the fix's batch size")
    ap.add_argument("--fix-spe", type=int, default=1, help="keras-tiny-batch: the fix's steps_per_execution")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--window", action="store_true",
                    help="JAX: profile steps --wait .. --wait + --active - 1 only (start_trace / stop_trace inside "
                         "the loop), not every step")
    ap.add_argument("--no-key-averages", action="store_true",
                    help="skip torch's key_averages() after the loop (a minute over 250,000 events: the job's "
                         "shutdown would hold it)")
    ap.add_argument("--hist-reps", type=int, default=1, help="metrics, tf-hostwork: rounds of host numpy work")
    ap.add_argument("--setup-s", type=float, default=0.5, help="epoch-restart: a worker's set-up (s)")
    ap.add_argument("--eval-batches", type=int, default=6, help="periodic-eval: batches of 64 an evaluation")
    ap.add_argument("--warm-passes", type=int, default=4, help="periodic-eval: extra passes in each start-up step")
    ap.add_argument("--metrics-file", default="/tmp/planted-metrics.jsonl")
    ap.add_argument("--bg-period", type=float, default=0.02, help="bg-thread: the monitor's period (s)")
    ap.add_argument("--bg-history", type=int, default=5000, help="bg-thread: the records it re-serialises")
    ap.add_argument("--gc-objects", type=int, default=1_000_000, help="gc-pause: objects in the metadata index")
    ap.add_argument("--checkpoint-file", default="/tmp/planted-checkpoint.pt")
    ap.add_argument("--trace-dir", default="traces")
    ap.add_argument("--out", default="truth.json")
    a = ap.parse_args()
    if a.window and a.wait + a.active >= a.steps:
        ap.error("--window: the profiled steps must end before the loop (--wait + --active < --steps)")
    truth = {"mode": a.mode, "fix": a.fix or a.mode in ("jax-clean", "tf-clean"), "argv": sys.argv[1:],
             "t_script_start": T_SCRIPT_EPOCH, "python": platform.python_version(), "cpu_count": os.cpu_count()}
    MODES[a.mode](a, truth)
    step = truth["step_s"]
    truth["median_step_s"] = median(step)
    truth["planted_total_s"] = sum(truth["planted_s"])
    truth["planted_share_of_loop"] = truth["planted_total_s"] / truth["loop_s"]
    truth["startup_s"] = truth["t_loop_start"] - T_SCRIPT_EPOCH
    truth["t_end"] = time.time()
    truth["shutdown_s"] = truth["t_end"] - truth["t_loop_end"]  # the profiler's export (above) included
    with open(a.out, "w") as f:
        json.dump(truth, f, indent=None if len(step) > 1000 else 1)
    print(a.mode, "fix" if truth["fix"] else "", "loop %.2f s" % truth["loop_s"],
          "median %.4f s" % truth["median_step_s"],
          "planted %.2f s (%.1f %% of loop)" % (truth["planted_total_s"], 100 * truth["planted_share_of_loop"]),
          "export %.2f s" % truth["profiler_export_s"])


if __name__ == "__main__":
    main()
