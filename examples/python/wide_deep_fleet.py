"""Paddle Fleet's parameter-server quick start (wide & deep for CTR), ported line for line to
oar: fleet.init() takes the role from the environment, a DistributedStrategy picks async
(a_sync), GEO (a_sync_configs k_steps) or sync, distributed_optimizer(...).minimize plans the
job, the servers serve and the workers step their own loop over batches of a Criteo-format
click log (oar-gen-ctr writes one). What differs from the seed, and why:
- the rows come from oar's criteo feed (FeedReader, each worker its share) instead of the seed's
  own reader of its downloaded files;
- the model is examples/wide_deep.cc's (hashed ids folded into 2^18 rows, a wide part and a
  3-layer deep part, Adagrad), small enough for a test;
- --mode sync|async|geo|hybrid and --k-steps set the strategy from the command line, so one script runs
  in each mode (hybrid is oar's own: launch it with --mode=hybrid too); --save DIR: worker 0 saves the params there when it stops;
- GEO: oar's distributed tables train sync or async only, so in GEO the tables are ordinary
  (is_distributed=False) params of 2^18 rows whose changes each trainer pushes every k steps.
Run: oar-gen-ctr -o /tmp/ctr --train-lines=20000 --test-lines=2000
     python3 -m oar.launch --server_num=2 --worker_num=2 examples/python/wide_deep_fleet.py \\
         --train /tmp/ctr/train.txt --mode geo"""

import argparse

import numpy as np

import oar as paddle
from oar import fleet

parser = argparse.ArgumentParser()
parser.add_argument("--train", required=True)
parser.add_argument("--mode", default="async", choices=["sync", "async", "geo", "hybrid"])
parser.add_argument("--k-steps", type=int, default=100)
parser.add_argument("--batch", type=int, default=500)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--save", default="")
args = parser.parse_args()

paddle.enable_static()
fleet.init()

SLOTS, WIDTH, ROWS = 26, 10, 1 << 18
DISTRIBUTED = args.mode != "geo"  # see above: GEO has no distributed tables in oar


class WideDeepModel:
    def net(self):
        self.sparse = paddle.static.data(name="sparse", shape=[None, SLOTS], dtype="int64")
        self.dense = paddle.static.data(name="dense", shape=[None, 13], dtype="float32")
        self.label = paddle.static.data(name="label", shape=[None, 1], dtype="float32")
        ids = paddle.layers.hash_mod(self.sparse, ROWS)
        weights = paddle.layers.embedding(
            ids, size=[ROWS, 1], is_sparse=True, is_distributed=DISTRIBUTED,
            param_attr=paddle.initializer.Constant(0.0))
        wide = paddle.layers.elementwise_add(
            paddle.layers.reduce_sum(paddle.layers.reshape(weights, [-1, SLOTS]), dim=1,
                                     keep_dim=True),
            paddle.layers.fc(self.dense, 1))
        vectors = paddle.layers.embedding(
            ids, size=[ROWS, WIDTH], is_sparse=True, is_distributed=DISTRIBUTED,
            param_attr=paddle.initializer.Uniform(-0.05, 0.05))
        h = paddle.layers.concat([paddle.layers.reshape(vectors, [-1, SLOTS * WIDTH]),
                                  self.dense])
        for _ in range(3):
            h = paddle.layers.fc(h, 400, act="relu")
        logit = paddle.layers.elementwise_add(wide, paddle.layers.fc(h, 1))
        self.cost = paddle.layers.mean(
            paddle.layers.sigmoid_cross_entropy_with_logits(logit, self.label))
        self.click = paddle.layers.sigmoid(logit)
        self.auc = paddle.layers.auc(self.click, self.label)


model = WideDeepModel()
model.net()
paddle.static.default_main_program().set_train_feed(
    format="criteo", files=[args.train], columns=[model.label, model.dense, model.sparse],
    batch_size=args.batch, epochs=1)

strategy = fleet.DistributedStrategy()
strategy.a_sync = args.mode != "sync"
strategy.hybrid = args.mode == "hybrid"  # oar's: dense params all-reduced, tables on pservers
if args.mode == "geo":
    strategy.a_sync_configs = {"k_steps": args.k_steps}
optimizer = paddle.optimizer.Adagrad(learning_rate=0.02)
optimizer = fleet.distributed_optimizer(optimizer, strategy)
optimizer.minimize(model.cost)


def reader():
    return paddle.io.FeedReader(paddle.static.default_main_program(), "train",
                                fleet.worker_index(), fleet.worker_num())


def distributed_training(exe, model):
    losses = []
    for epoch_id in range(args.epochs):
        for batch_id, data in enumerate(reader()):
            loss_val, auc_val = exe.run(paddle.static.default_main_program(), feed=data,
                                        fetch_list=[model.cost.name, model.auc])
            losses.append(float(loss_val))
            if batch_id % 10 == 0:
                print("worker %d epoch %d batch %d: loss %.5f auc %.4f"
                      % (fleet.worker_index(), epoch_id, batch_id, float(loss_val),
                         float(auc_val)), flush=True)
    if not losses or not np.isfinite(losses).all():
        raise SystemExit("worker %d: no finite loss" % fleet.worker_index())
    print("worker %d: %d steps, mean loss of the first tenth %.5f, of the last %.5f"
          % (fleet.worker_index(), len(losses), np.mean(losses[:max(1, len(losses) // 10)]),
             np.mean(losses[-max(1, len(losses) // 10):])), flush=True)


if fleet.is_server():
    fleet.init_server()
    fleet.run_server()

if fleet.is_worker():
    place = paddle.CPUPlace()
    exe = paddle.static.Executor(place)
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    distributed_training(exe, model)
    if args.save:
        fleet.save_persistables(exe, args.save)
    fleet.stop_worker()
