"""The peer of bench/collective_mlp.sh: PyTorch DistributedDataParallel on the gloo backend.

N processes on 127.0.0.1 train the MLP 784-512-256-10 with SGD, batch 128 a process, one thread
a process. Each takes rows i, i+N, ... of Fashion-MNIST, as oar's trainers do; DDP averages the
gradients by all-reduce during backward (its buckets: 1 MiB first, then 25 MiB). Prints
`aggregate_samples_per_sec <float>` (steps after the first, summed over processes).

Usage: torch_ddp_mlp.py --trainers 2 --threads 1 --batch 128 --steps 200 --port 29500
                        --images FILE.gz --labels FILE.gz
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch_rpc_ps import read_idx  # the same Fashion-MNIST reader (bench/ is on sys.path)


def run(rank, args, rates):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.trainers)
    x, y = read_idx(args.images, args.labels)
    x, y = x[rank::args.trainers], y[rank::args.trainers]
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = x.shape[0] // args.batch
    rows, start = 0, None
    for step in range(args.steps):
        b = step % batches
        xb, yb = x[b * args.batch:(b + 1) * args.batch], y[b * args.batch:(b + 1) * args.batch]
        opt.zero_grad()
        loss_fn(ddp(xb), yb).backward()
        opt.step()
        if step == 0:
            start = time.perf_counter()
        else:
            rows += xb.shape[0]
    rates[rank] = rows / (time.perf_counter() - start)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--port", type=int, default=29500)
    p.add_argument("--images", required=True)
    p.add_argument("--labels", required=True)
    args = p.parse_args()
    rates = mp.Manager().dict()
    mp.spawn(run, args=(args, rates), nprocs=args.trainers, join=True)
    print("aggregate_samples_per_sec", sum(rates.values()), flush=True)
