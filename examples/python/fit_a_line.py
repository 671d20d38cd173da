"""Paddle Fluid's fit_a_line dist_train.py (book chapter 1, distributed), ported line for line to
oar: linear regression on UCI housing, planned by a DistributeTranspiler from the PADDLE_*
variables, the pservers serving and the trainers stepping their own loop over DataFeeder
batches. What differs from the seed, and why:
- the rows come from oar's uci_housing feed (FeedReader, each trainer its share, as oar-executor
  reads them) instead of paddle.dataset, which downloads;
- learning rate, passes and batch are those of examples/fit_a_line.cc (0.01, 20, 20), so that
  the job can be checked against oar's C++ one, and the seed's early return at a loss under 10
  is left out for the same reason (every trainer takes the same steps);
- the endpoints are PADDLE_PSERVERS_IP_PORT_LIST and PADDLE_CURRENT_ENDPOINT (Paddle's later
  spelling, which oar-launch sets: on one host each pserver has its own port);
- --save DIR: the params saved there (trainer 0's, at exe.close()), for the checks.
Run: python3 -m oar.launch --server_num=2 --worker_num=2 examples/python/fit_a_line.py
or on one machine: python3 examples/python/fit_a_line.py"""

import argparse
import math
import os
import sys

import oar as fluid

parser = argparse.ArgumentParser()
parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "data",
                                                   "uci_housing", "housing.data"))
parser.add_argument("--batch", type=int, default=20)
parser.add_argument("--passes", type=int, default=20)
parser.add_argument("--save", default="")
args = parser.parse_args()

x = fluid.layers.data(name='x', shape=[13], dtype='float32')
y_predict = fluid.layers.fc(input=x, size=1, act=None)
y = fluid.layers.data(name='y', shape=[1], dtype='float32')
cost = fluid.layers.square_error_cost(input=y_predict, label=y)
avg_cost = fluid.layers.mean(cost)
sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.01)
sgd_optimizer.minimize(avg_cost)

BATCH_SIZE = args.batch
fluid.default_main_program().set_train_feed(format="uci_housing", files=[args.data],
                                            columns=[x, y], batch_size=BATCH_SIZE, epochs=1,
                                            split="train")
place = fluid.CPUPlace()
exe = fluid.Executor(place)

training_role = os.getenv("PADDLE_TRAINING_ROLE", "")
trainer_id = int(os.getenv("PADDLE_TRAINER_ID", "0"))
trainers = int(os.getenv("PADDLE_TRAINERS", "1"))


def train_reader():
    return fluid.io.FeedReader(fluid.default_main_program(), "train", trainer_id, trainers)


def train_loop(main_program):
    exe.run(fluid.default_startup_program())
    PASS_NUM = args.passes
    for pass_id in range(PASS_NUM):
        for data in train_reader():
            avg_loss_value, = exe.run(main_program, feed=data, fetch_list=[avg_cost])
            if math.isnan(float(avg_loss_value)):
                sys.exit("got NaN loss, training failed.")
    print("trainer %d: last loss %.6f" % (trainer_id, float(avg_loss_value)))
    if float(avg_loss_value) > 100.0:
        raise AssertionError("Fit a line cost is too large, {0:2.2}".format(
            float(avg_loss_value)))


if not training_role:  # one machine
    train_loop(fluid.default_main_program())
    if args.save:
        fluid.io.save_persistables(exe, args.save)
    sys.exit(0)

pserver_endpoints = os.getenv("PADDLE_PSERVERS_IP_PORT_LIST")
current_endpoint = os.getenv("PADDLE_CURRENT_ENDPOINT", "")
t = fluid.DistributeTranspiler()
t.transpile(trainer_id, pservers=pserver_endpoints, trainers=trainers)
if training_role == "PSERVER":
    pserver_prog = t.get_pserver_program(current_endpoint)
    pserver_startup = t.get_startup_program(current_endpoint, pserver_prog)
    exe.run(pserver_startup)
    exe.run(pserver_prog)
elif training_role == "TRAINER":
    trainer_prog = t.get_trainer_program()
    train_loop(trainer_prog)
    if args.save:
        fluid.io.save_persistables(exe, args.save, trainer_prog)  # trainer 0's, at close
    exe.close()
