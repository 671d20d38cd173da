"""What oar.fleet and oar.DistributeTranspiler share: the node flags python3 -m oar.launch hands
over, and trainers whose steps the script's exe.run drives. A trainer still running when the
script ends is stopped, and its pservers hear that it failed: only stop_worker() (or
exe.close()) ends a trainer as completed."""

import atexit
import os
import sys

from . import _oar
from . import executor as _executor


class _Running:
    def __init__(self, trainer, program):
        self.trainer, self.program, self.save_dir = trainer, program, ""


_running = []


def flags_from_env():
    """oar-launch's flags for this node (OAR_NODE_FLAGS, one a line): keys, threads, --save."""
    return [line for line in os.environ.get("OAR_NODE_FLAGS", "").split("\n") if line]


def start_trainer(flags, program, startup):
    """A trainer of the job, started now; exe.run(program) is then one of its steps."""
    trainer = _oar.TrainerNode(flags, program.desc, startup.desc)
    _running.append(_Running(trainer, program))
    _executor._driven[id(program)] = (program, trainer.run)
    return trainer


def save_when_done(program, dirname):
    """io.save_persistables of a running trainer's program: trainer 0 saves the params to
    `dirname` when it ends, once its last step reached the pservers (GEO: its last sync), as
    oar-executor --save does; other trainers save nothing. False: `program` is no trainer's."""
    for entry in _running:
        if entry.program is program:
            entry.save_dir = dirname
            return True
    return False


def finish_trainer(trainer):
    """Ends `trainer` as completed."""
    for entry in list(_running):
        if entry.trainer is trainer:
            _running.remove(entry)
            _executor._driven.pop(id(entry.program), None)
            trainer.finish(entry.save_dir)


def finish_all():
    """exe.close(): every trainer this process runs ends as completed."""
    for entry in list(_running):
        finish_trainer(entry.trainer)


_script_failure = []  # the exception the script ended with, for the pservers' log
_previous_excepthook = sys.excepthook


def _remember_failure(kind, value, traceback):
    _script_failure[:] = [f"the script ended with {kind.__name__}: {value}"]
    _previous_excepthook(kind, value, traceback)


sys.excepthook = _remember_failure


@atexit.register
def _abandon_unfinished():
    why = _script_failure[0] if _script_failure else "the script ended without stop_worker()"
    for entry in list(_running):
        _executor._driven.pop(id(entry.program), None)
        entry.trainer.abandon(why)
    _running.clear()
