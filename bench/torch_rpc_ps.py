"""The peer of bench/dist_mlp.sh: a synchronous parameter server on torch.distributed.rpc.

One server process and N trainer processes on 127.0.0.1 train the MLP 784-512-256-10 with SGD.
Each step a trainer computes its gradients on its own batch and makes one RPC to the server with
them; the server averages the N trainers' gradients, applies SGD once, and answers every trainer
with the new parameters (the reply of that same RPC). Trainers take rows i, i+N, ... of the data,
as oar's trainers do. Prints `aggregate_samples_per_sec <float>` (steps after the first, summed
over trainers).

TensorPipe moves the tensors over TCP (`--transport tcp`), or over what it picks by default
(`--transport default`: on one host, shared memory and cross-memory attach where they work),
as oar uses its same-host path by default.

Usage: torch_rpc_ps.py --trainers 2 --threads 1 --batch 128 --steps 200 --port 29500
                       --transport tcp|default --images FILE.gz --labels FILE.gz
"""
import argparse
import gzip
import os
import struct
import threading
import time

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
from torch.futures import Future


def read_idx(images_path, labels_path):
    with gzip.open(images_path, "rb") as f:
        _, n, rows, cols = struct.unpack(">IIII", f.read(16))
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).float()
    with gzip.open(labels_path, "rb") as f:
        struct.unpack(">II", f.read(8))
        y = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()
    return x.view(n, rows * cols) / 255.0 * 2 - 1, y


def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


class Server:
    """Holds the parameters; one SGD update per step once every trainer's gradients are in."""

    def __init__(self, trainers, lr):
        self.params = [p.detach().clone() for p in make_model().parameters()]
        self.trainers, self.lr = trainers, lr
        self.lock = threading.Lock()
        self.pending, self.sums = 0, None
        self.future = Future()

    @staticmethod
    @rpc.functions.async_execution
    def push_pull(server_rref, grads):
        self = server_rref.local_value()
        with self.lock:
            if self.sums is None:
                self.sums = [g.clone() for g in grads]
            else:
                for s, g in zip(self.sums, grads):
                    s.add_(g)
            self.pending += 1
            future = self.future
            if self.pending == self.trainers:  # the last gradient of this step: update, answer all
                for p, s in zip(self.params, self.sums):
                    p.add_(s, alpha=-self.lr / self.trainers)
                self.pending, self.sums = 0, None
                self.future = Future()
                future.set_result([p.clone() for p in self.params])
        return future


def trainer(rank, args, server_rref):
    torch.set_num_threads(args.threads)
    x, y = read_idx(args.images, args.labels)
    tid = rank - 1
    x, y = x[tid::args.trainers], y[tid::args.trainers]
    model = make_model()
    loss_fn = torch.nn.CrossEntropyLoss()
    rows = 0
    start = None
    batches = x.shape[0] // args.batch
    for step in range(args.steps):
        b = step % batches
        xb, yb = x[b * args.batch:(b + 1) * args.batch], y[b * args.batch:(b + 1) * args.batch]
        model.zero_grad()
        loss_fn(model(xb), yb).backward()
        grads = [p.grad for p in model.parameters()]
        new = rpc.rpc_sync("ps", Server.push_pull, args=(server_rref, grads))
        with torch.no_grad():
            for p, v in zip(model.parameters(), new):
                p.copy_(v)
        if step == 0:
            start = time.perf_counter()
        else:
            rows += xb.shape[0]
    return rows / (time.perf_counter() - start)


def run(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(args.threads)
    world = args.trainers + 1
    pinned = {"_transports": ["uv"]} if args.transport == "tcp" else {}
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=300, **pinned)
    if rank == 0:
        rpc.init_rpc("ps", rank=0, world_size=world, rpc_backend_options=opts)
        server_rref = rpc.RRef(Server(args.trainers, args.lr))
        futures = [rpc.rpc_async(f"trainer{t}", trainer, args=(t, args, server_rref))
                   for t in range(1, world)]
        rates = [f.wait() for f in futures]
        print("aggregate_samples_per_sec", sum(rates), flush=True)
    else:
        rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world, rpc_backend_options=opts)
    rpc.shutdown()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--port", type=int, default=29500)
    p.add_argument("--transport", choices=["tcp", "default"], default="tcp")
    p.add_argument("--images", required=True)
    p.add_argument("--labels", required=True)
    args = p.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.trainers + 1, join=True)
