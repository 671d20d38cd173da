"""Paddle Fleet's calls over oar's nodes. fleet.init() asks oar where the environment's launch
convention puts this process (PADDLE_*, TF_CONFIG, MS_*, DMLC_*, MPI or Slurm ranks, and the
flags python3 -m oar.launch hands over in OAR_NODE_FLAGS); distributed_optimizer(...).minimize
builds the single-machine program, which each node transpiles for its role as oar-executor
does; a server runs to the job's end in run_server(); a worker's exe.run(main) steps a trainer
that init_worker() started and stop_worker() ends. With no role anywhere it trains on one
machine, the same script unchanged."""

import os
import sys

from .. import _oar
from .. import distributed
from ..framework import Program, default_main_program, default_startup_program
from .strategy import DistributedStrategy

_ROLE_MAKER_ROLES = ("PaddleCloudRoleMaker", "UserDefinedRoleMaker")


class Fleet:
    def __init__(self):
        self._place = None
        self._flags = []
        self._collective = False
        self._strategy = None
        self._main = self._startup = None
        self._load_dir = ""
        self._trainer = None

    # --- where this process stands ----------------------------------------------------------
    def init(self, role_maker=None, is_collective=False, strategy=None, flags=None):
        """Takes this process's role from the environment (and `flags`, oar-executor's node
        flags, over it). A scheduler serves the job here and the script ends (SystemExit), as
        MindSpore's scheduler does in init()."""
        if role_maker is not None and type(role_maker).__name__ not in _ROLE_MAKER_ROLES:
            raise _oar.Error("fleet.init(role_maker): oar reads the role from the environment")
        self._flags = distributed.flags_from_env() + list(flags or [])
        self._collective = bool(is_collective or getattr(role_maker, "is_collective", False))
        self._strategy = strategy
        self._place = _oar.place_node(self._flags)
        if self._place["role"] == "scheduler":
            empty = _oar.ProgramDesc()
            _oar.run_node(self._flags, empty, empty)
            sys.exit(0)
        return self

    def _where(self):
        if self._place is None:
            raise _oar.Error("call fleet.init() first")
        return self._place

    def is_server(self):
        return self._where()["role"] == "pserver"

    def is_worker(self):
        return self._where()["role"] in ("trainer", "")

    def is_first_worker(self):
        return self.is_worker() and self.worker_index() == 0

    def worker_index(self):
        if self._trainer is not None:
            return self._trainer.trainer_id
        return self._where()["trainer_id"] if self._where()["role"] == "trainer" else 0

    def worker_num(self):
        place = self._where()
        return max(int(place["trainers"]), 1) if place["role"] else 1

    def server_num(self):
        place = self._where()
        return len(place["pservers"]) or int(place["pserver_count"])

    def server_index(self):
        place = self._where()
        if place["endpoint"] in place["pservers"]:
            return place["pservers"].index(place["endpoint"])
        return -1

    def server_endpoints(self, to_string=False):
        eps = list(self._where()["pservers"])
        return ",".join(eps) if to_string else eps

    # --- the program ------------------------------------------------------------------------
    def distributed_optimizer(self, optimizer, strategy=None):
        """`optimizer`, whose minimize builds the single-machine program that every node then
        transpiles for its role with `strategy`."""
        self._where()
        if strategy is not None:
            self._strategy = strategy
        if self._strategy is None:
            self._strategy = DistributedStrategy()
        return _DistributedOptimizer(self, optimizer)

    def _node_flags(self):
        flags = list(self._flags)
        if self._where()["role"]:
            _check_launch_layout(self._strategy._mode(self._collective))
            flags += self._strategy.flags(self._collective)
        return flags

    def _programs(self):
        if self._main is None:
            raise _oar.Error("fleet: call fleet.distributed_optimizer(opt, strategy).minimize("
                             "loss) before starting a node")
        return self._main.desc, self._startup.desc

    @property
    def main_program(self):
        return self._main or default_main_program()

    @property
    def startup_program(self):
        return self._startup or default_startup_program()

    # --- servers ----------------------------------------------------------------------------
    def init_server(self, dirname=None, **_):
        """A pserver's start: from the params `dirname` holds (a save or a checkpoint) when
        given, else from its startup program."""
        if not self.is_server():
            raise _oar.Error("fleet.init_server() on a %s" % (self._where()["role"] or
                                                              "single-machine run"))
        self._load_dir = dirname or ""

    def run_server(self):
        """Serves until every trainer completed (or one failed), then saves as --save says."""
        if not self.is_server():
            raise _oar.Error("fleet.run_server() on a %s" % (self._where()["role"] or
                                                             "single-machine run"))
        programs = self._programs()
        flags = self._node_flags()
        if self._load_dir:
            flags += ["--load=" + self._load_dir]
        _oar.run_node(flags, *programs)

    # --- workers ----------------------------------------------------------------------------
    def init_worker(self, scopes=None):
        """Starts this trainer: it connects (or meets the other trainers), runs its startup,
        which fetches the params from the pservers, and then takes each exe.run of the main
        program as one step. On one machine: nothing to start."""
        if not self._where()["role"]:
            return
        if self._where()["role"] != "trainer":
            raise _oar.Error("fleet.init_worker() on a %s" % self._where()["role"])
        if self._trainer is not None:
            raise _oar.Error("fleet.init_worker(): this trainer runs already")
        self._programs()
        self._trainer = distributed.start_trainer(self._node_flags(), self._main, self._startup)

    def save_persistables(self, executor, dirname, main_program=None, mode=0):
        """Worker 0 saves the params (as oar-executor --save) when it stops, once its last step
        reached the pservers (GEO: its last sync); other workers save nothing. On one machine:
        now."""
        if not self._where()["role"]:
            from .. import io
            io.save_persistables(executor, dirname, main_program or self.main_program)
            return
        if self._trainer is None or not distributed.save_when_done(self._main, dirname):
            raise _oar.Error("fleet.save_persistables(): on a worker between init_worker() and "
                             "stop_worker()")

    def stop_worker(self):
        """Ends this trainer as after its last batch: the pservers hear it completed."""
        if self._trainer is None:
            return
        trainer, self._trainer = self._trainer, None
        distributed.finish_trainer(trainer)

    def barrier_worker(self):
        raise _oar.Error("fleet.barrier_worker(): oar's sync steps are the trainers' barrier; "
                         "there is no separate one")


def _check_launch_layout(mode):
    """python3 -m oar.launch --mode lays the job out (collective: no pservers; collective and
    hybrid: the trainers' rendezvous); sync, async and geo share one layout."""
    launched = os.environ.get("OAR_LAUNCH_MODE")
    layouts = {"collective": "collective", "hybrid": "hybrid"}
    if launched and layouts.get(launched, "ps") != layouts.get(mode, "ps"):
        raise _oar.Error(f"the script's DistributedStrategy plans its job as {mode}, but "
                         f"oar.launch laid the job out for {launched}: launch it with "
                         f"--mode={mode}")


class _DistributedOptimizer:
    def __init__(self, fleet, optimizer):
        self._fleet = fleet
        self._inner = optimizer

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if parameter_list is not None:
            raise _oar.Error("minimize(parameter_list): oar trains every parameter")
        result = self._inner.minimize(loss, startup_program, no_grad_set)
        main = loss.program if isinstance(loss.program, Program) else default_main_program()
        self._fleet._main, self._fleet._startup = main, main.startup_program()
        return result
