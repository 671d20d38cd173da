"""PyTorch peer of bench_train_step: times the same training step. Prints `ms_per_step <float>`.

Usage: torch_train_step.py MODEL THREADS STEPS   (MODEL: fit_a_line | mlp)
"""
import sys
import time

import torch

model_name, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
if model_name == "fit_a_line":
    batch, model = 20, torch.nn.Linear(13, 1)
    x, y = torch.randn(batch, 13), torch.randn(batch, 1)
    loss_fn = torch.nn.MSELoss()
else:
    batch = 128
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    x, y = torch.rand(batch, 784) * 2 - 1, torch.randint(0, 10, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def step():
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


for _ in range(20):
    step()
start = time.perf_counter()
for _ in range(steps):
    step()
print("ms_per_step", (time.perf_counter() - start) * 1000 / steps)
