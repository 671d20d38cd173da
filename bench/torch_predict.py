"""The exported wide & deep in PyTorch, for bench/predict.sh: built from the export's files (its
dense params and its tables, whose keys must be every row: a model trained on one machine), in
eval mode under torch.inference_mode, on the rows bench_predict dumped. Prints the same lines as
bench_predict: with --latency, latency p50/p99 at batch 1 and 256 and how far its scores are from
oar's; then rows/s at batch 256 with --threads intra-op threads (one caller; run it with
OPENBLAS_NUM_THREADS set to the same)."""
import argparse
import glob
import os
import threading
import time

import numpy as np
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--export", required=True)
ap.add_argument("--rows", required=True, help="the directory bench_predict --dump wrote")
ap.add_argument("--vocab", type=int, required=True)
ap.add_argument("--seconds", type=float, default=3)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--latency", action="store_true")
ap.add_argument("--bf16", action="store_true",
                help="the MLP's weights and inputs in bfloat16 (oneDNN's AMX kernels under "
                     "torch.nn.Linear where the CPU has them), as oar-predict --bf16 runs it; the "
                     "fastest of the bf16 forms tried (autocast ran a fifth slower)")
ap.add_argument("--callers", type=int, default=1,
                help="Python threads calling the model at once (each op releases the GIL), "
                     "as oar's callers of predict() do; with --threads 1 each")
args = ap.parse_args()


def param(name):
    return torch.from_numpy(np.load(os.path.join(args.export, "params", name + ".npy")).astype(np.float32))


def table(name):
    keys = np.load(os.path.join(args.export, "tables", name, "keys.npy"))
    values = np.load(os.path.join(args.export, "tables", name, "values.npy")).astype(np.float32)
    assert len(keys) == args.vocab and (keys == np.arange(args.vocab)).all(), \
        "the export's table must hold every row (train the model on one machine)"
    return torch.nn.Embedding.from_pretrained(torch.from_numpy(values), freeze=True)


class WideDeep(torch.nn.Module):
    """oar's wide_deep recipe: a weight per key summed with a linear term of the dense features,
    plus an MLP on the keys' embeddings and the dense features; sigmoid of the sum."""

    def __init__(self):
        super().__init__()
        self.wide = table("embedding_0.w_0")
        self.emb = table("embedding_1.w_0")
        self.linear = torch.nn.Linear(13, 1)
        self.linear.weight.data = param("fc_0.w_0").t().contiguous()
        self.linear.bias.data = param("fc_0.b_0")
        layers = []
        i = 1
        while os.path.exists(os.path.join(args.export, "params", f"fc_{i}.w_0.npy")):
            w = param(f"fc_{i}.w_0")
            fc = torch.nn.Linear(w.shape[0], w.shape[1])
            fc.weight.data = w.t().contiguous()
            fc.bias.data = param(f"fc_{i}.b_0")
            layers += [fc, torch.nn.ReLU()]
            i += 1
        self.deep = torch.nn.Sequential(*layers[:-1])  # no activation after the last

    def forward(self, sparse, dense):
        ids = sparse % args.vocab
        wide = self.wide(ids).view(-1, 26).sum(1, keepdim=True) + self.linear(dense)
        deep = torch.cat([self.emb(ids).view(-1, 260), dense], 1)
        deep = self.deep(deep.to(torch.bfloat16)).float() if args.bf16 else self.deep(deep)
        return torch.sigmoid(wide + deep)


sparse = torch.from_numpy(np.load(os.path.join(args.rows, "sparse.npy")))
dense = torch.from_numpy(np.load(os.path.join(args.rows, "dense.npy")))
oar_scores = np.load(os.path.join(args.rows, "scores.npy"))
n = sparse.shape[0]
model = WideDeep().eval()
if args.bf16:
    model.deep.to(torch.bfloat16)
who = "torch bf16" if args.bf16 else "torch"
with torch.inference_mode():
    torch.set_num_threads(args.threads)
    if args.latency:
        ours = model(sparse[:256], dense[:256]).numpy()
        print(f"{who}: largest difference from oar's f32 scores: {np.abs(ours - oar_scores).max():.3g}")
        for size in (1, 256):
            calls = 4000 if size == 1 else 400
            us = []
            for i in range(calls + calls // 10):
                b = (i * size) % (n - size + 1)
                s, d = sparse[b:b + size], dense[b:b + size]
                start = time.perf_counter()
                model(s, d)
                if i >= calls // 10:
                    us.append((time.perf_counter() - start) * 1e6)
            print(f"{who} latency batch {size}: p50 {np.percentile(us, 50):.1f} us, "
                  f"p99 {np.percentile(us, 99):.1f} us")
    batches = [(sparse[b:b + 256], dense[b:b + 256]) for b in range(0, n - 255, 256)]
    for _ in range(3):
        model(*batches[0])
    counts = [0] * args.callers

    def call(c):
        with torch.inference_mode():
            i, start = c, time.perf_counter()
            while time.perf_counter() - start < args.seconds:
                model(*batches[i % len(batches)])
                counts[c] += 256
                i += args.callers

    start = time.perf_counter()
    if args.callers == 1:
        # On the main thread: the same model called from a Python thread ran a quarter slower
        # here (about 78k against 104k rows/s), which would favour oar.
        call(0)
    else:
        callers = [threading.Thread(target=call, args=(c,)) for c in range(args.callers)]
        for t in callers:
            t.start()
        for t in callers:
            t.join()
    label = args.threads if args.callers == 1 else args.callers
    how = "intra-op" if args.callers == 1 else "callers"
    print(f"{who} rows/s batch 256, {label} thread(s) ({how}): "
          f"{sum(counts) / (time.perf_counter() - start):.0f}")
