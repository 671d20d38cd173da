#!/usr/bin/env python3
"""torch.distributed's gloo all-reduce, the peer of bench_allreduce: RANK of RANKS sums float32
tensors of each size in place, timed as bench_allreduce times its own (2 warm-ups, then runs for
0.5 s, at least 5; the median). Rank 0 prints "bytes algbw busbw" per size.
Usage: torch_allreduce.py RANK RANKS PORT SIZE_BYTES..."""
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank, ranks, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    sizes = [int(s) for s in sys.argv[4:]]
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks)
    for size in sizes:
        data = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(2):
            dist.all_reduce(data)
        start = time.perf_counter()
        dist.all_reduce(data)
        once = time.perf_counter() - start
        count = torch.tensor([min(max(0.5 / max(once, 1e-6), 5.0), 500.0)], dtype=torch.float64)
        dist.broadcast(count, 0)  # every rank runs as many, as rank 0 decided
        times = []
        for _ in range(int(count.item())):
            start = time.perf_counter()
            dist.all_reduce(data)
            times.append(time.perf_counter() - start)
        t = statistics.median_low(times)
        algbw = size / t / 1e9
        if rank == 0:
            print(size, f"{algbw:.3f}", f"{algbw * 2 * (ranks - 1) / ranks:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
