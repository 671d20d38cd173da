"""Data in, models out: the file feeds of the C++ API as batches of arrays, saving and loading
persistable vars (as oar-executor --save and --load), exporting a model and serving it."""

import numpy as np

from . import _oar
from .executor import global_scope
from .framework import Program, Variable, default_main_program

Predictor = _oar.Predictor  # Predictor(export_dir).predict({input: array}) -> {output: array}


class FeedReader:
    """A program's train or test feed (program.set_train_feed(...)) as {var: array} batches:
    csv or tsv with a schema, criteo, slot, libffm, libsvm, npy, mnist_idx, uci_housing."""

    def __init__(self, program=None, which="train", trainer_id=0, trainers=1):
        program = program or default_main_program()
        self._reader = _oar.FeedReader(program.desc, which, trainer_id, trainers)

    @property
    def columns(self):
        return self._reader.columns

    def __iter__(self):
        while True:
            batch = self._reader.next()
            if batch is None:
                return
            yield batch


class DataFeeder:
    """Paddle's DataFeeder: rows (tuples, one item per var of feed_list) into one array per var,
    of the var's dtype and shape. This builds new arrays: it is the one place a feed converts."""

    def __init__(self, feed_list, place=None, program=None):
        self.vars = [v if isinstance(v, Variable) else (program or default_main_program()).var(v)
                     for v in feed_list]

    def feed(self, rows):
        out = {}
        for i, var in enumerate(self.vars):
            row_shape = list(var.shape[1:])
            out[var.name] = np.ascontiguousarray(
                np.array([r[i] for r in rows], dtype=var.dtype).reshape([len(rows)] + row_shape))
        return out


def _main_and_startup(program):
    program = program or default_main_program()
    if program._startup is None:
        raise _oar.Error("the program has no startup program paired with it (program_guard)")
    return program.desc, program._startup.desc


def save_persistables(executor, dirname, main_program=None, scope=None):
    """Every persistable var as dirname/<var>.npy, as oar-executor --save writes them. The
    program of a running trainer of a job: trainer 0 saves its params when it ends (exe.close(),
    fleet.stop_worker()), as oar-executor --save does."""
    program = main_program or default_main_program()
    from . import distributed
    if distributed.save_when_done(program, dirname):
        return
    _oar.save_persistables(program.desc, scope or global_scope(), dirname)


def load_persistables(executor, dirname, main_program=None, scope=None):
    """Sets the vars a save, a checkpoint or an export in `dirname` holds; returns a summary."""
    main, startup = _main_and_startup(main_program)
    return _oar.load_persistables(main, startup, scope or global_scope(), dirname)


def export_model(export_dir, checkpoint, main_program=None, outputs=None):
    """The model with the values `checkpoint` (a save or a checkpoint directory) holds, written
    for serving as oar-export writes it; Predictor(export_dir) serves it."""
    main, startup = _main_and_startup(main_program)
    names = [o.name if isinstance(o, Variable) else o for o in (outputs or [])]
    _oar.export_model(main, startup, checkpoint, export_dir, names)
