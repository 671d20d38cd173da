"""The MNIST MLP trained from a Python loop over NumPy batches: with oar (exe.run on the program
oar-model wrote) or with PyTorch (the same model, layout and batches). The batches are read once
through oar.FeedReader from the program's own feed before the clock starts, so both loops get the
same arrays. Prints `samples_per_sec <float>`.

Usage: python_loop.py oar|torch PROGRAM_DIR THREADS
"""
import os
import sys
import time

import numpy as np

import oar

mode, program_dir, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
main = oar.load_program(os.path.join(program_dir, "main.pb"))
startup = oar.load_program(os.path.join(program_dir, "startup.pb"))
batches = list(oar.FeedReader(main))
rows = sum(b["img"].shape[0] for b in batches)

if mode == "oar":
    exe, scope = oar.Executor(), oar.Scope()
    exe.run(startup, scope=scope)
    loss = main.desc.loss
    exe.run(main, feed=batches[0], fetch_list=[loss], scope=scope)  # warm-up, as the CLI's first step
    start = time.perf_counter()
    for b in batches[1:]:
        exe.run(main, feed=b, fetch_list=[loss], scope=scope)
else:
    import torch
    torch.set_num_threads(threads)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(b):
        x = torch.from_numpy(b["img"]).reshape(-1, 784)  # the arrays' own memory
        y = torch.from_numpy(b["label"]).reshape(-1)
        opt.zero_grad()
        out = loss_fn(model(x), y)
        out.backward()
        opt.step()
        return out.item()

    step(batches[0])
    start = time.perf_counter()
    for b in batches[1:]:
        step(b)
elapsed = time.perf_counter() - start
print(f"samples_per_sec {(rows - batches[0]['img'].shape[0]) / elapsed:.0f}")
