"""The peer of bench/ctr.sh: wide & deep in PyTorch, the model oar-model --model=wide_deep builds.

26 categorical slots folded into a table of --vocab rows (nn.Embedding with sparse gradients,
width 10 for the deep part and 1 for the wide part), 13 dense features (sign(x) log(1 + |x|)), an
MLP 273-400-400-400-1 on the embeddings and dense features, a linear term on the dense features,
logistic loss, Adagrad (sparse rows for the tables) at batch 1000. The lines are parsed before the
clock starts, so the figure is the training steps alone (oar's includes reading the text).
Prints `samples_per_sec <float>` over the steps after the first.

Usage: torch_wide_deep.py --data train.txt --lines 200000 --threads 1
"""
import argparse
import math
import time
import zlib

import torch

SLOTS, DENSE = 26, 13


def parse(path, lines, vocab):
    labels, dense, keys = [], [], []
    with open(path) as f:
        for i, line in enumerate(f):
            if i >= lines:
                break
            fields = line.rstrip("\n").split("\t")
            labels.append(float(fields[0]))
            row = []
            for v in fields[1:1 + DENSE]:
                x = float(v) if v else 0.0
                row.append(math.copysign(math.log1p(abs(x)), x))
            dense.append(row)
            keys.append([zlib.crc32(f"{s}:{v}".encode()) % vocab
                         for s, v in enumerate(fields[1 + DENSE:1 + DENSE + SLOTS])])
    return (torch.tensor(labels).view(-1, 1), torch.tensor(dense),
            torch.tensor(keys, dtype=torch.int64))


class WideDeep(torch.nn.Module):
    def __init__(self, vocab, width, hidden):
        super().__init__()
        self.wide = torch.nn.Embedding(vocab, 1, sparse=True)
        self.deep = torch.nn.Embedding(vocab, width, sparse=True)
        torch.nn.init.zeros_(self.wide.weight)
        torch.nn.init.uniform_(self.deep.weight, -0.05, 0.05)
        self.dense_linear = torch.nn.Linear(DENSE, 1)
        layers, size = [], SLOTS * width + DENSE
        for h in hidden:
            layers += [torch.nn.Linear(size, h), torch.nn.ReLU()]
            size = h
        layers.append(torch.nn.Linear(size, 1))
        self.mlp = torch.nn.Sequential(*layers)

    def forward(self, dense, keys):
        wide = self.wide(keys).sum(dim=1) + self.dense_linear(dense)
        deep_in = torch.cat([self.deep(keys).flatten(1), dense], dim=1)
        return wide + self.mlp(deep_in)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--lines", type=int, default=200000)
    p.add_argument("--vocab", type=int, default=1 << 22)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    labels, dense, keys = parse(a.data, a.lines, a.vocab)
    model = WideDeep(a.vocab, 10, [400, 400, 400])
    opt = torch.optim.Adagrad(model.parameters(), lr=a.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    steps = labels.shape[0] // a.batch
    start = None
    for s in range(steps):
        b = slice(s * a.batch, (s + 1) * a.batch)
        opt.zero_grad()
        loss = loss_fn(model(dense[b], keys[b]), labels[b])
        loss.backward()
        opt.step()
        if s == 0:
            start = time.perf_counter()
    elapsed = time.perf_counter() - start
    print(f"last_loss {loss.item():.6f}")
    print(f"samples_per_sec {(steps - 1) * a.batch / elapsed:.1f}")


if __name__ == "__main__":
    main()
