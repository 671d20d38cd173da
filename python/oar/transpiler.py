"""Paddle Fluid's DistributeTranspiler over oar's nodes: transpile() records the plan (the
pservers, the trainers, sync or async) as the node flags oar's transpiler plans by; the programs
it hands back run as nodes. exe.run(pserver program) serves until every trainer completed;
exe.run(pserver startup) is part of that (the node runs its own startup); each
exe.run(trainer program) is one step of this trainer, started at the first (connected, its params
fetched from the pservers); exe.close() ends it as completed."""

from . import _oar
from . import distributed
from . import executor as _executor
from .framework import Program, default_main_program


class DistributeTranspilerConfig:
    """The plan's knobs in Paddle's names: slice_var_up, min_block_size, split_method
    ("round_robin" or "hash_name"), and geo_sgd_mode with geo_sgd_need_push_nums (GEO's k)."""

    def __init__(self):
        self.slice_var_up = True
        self.min_block_size = 8192
        self.split_method = "round_robin"
        self.geo_sgd_mode = False
        self.geo_sgd_need_push_nums = 100

    def flags(self):
        return ["--slice-var-up=" + ("true" if self.slice_var_up else "false"),
                "--min-block-size=%d" % int(self.min_block_size),
                "--split-method=" + self.split_method]


class DistributeTranspiler:
    def __init__(self, config=None):
        self.config = config or DistributeTranspilerConfig()
        self._flags = None

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1,
                  sync_mode=True, startup_program=None, current_endpoint="127.0.0.1:6174"):
        self._main = program or default_main_program()
        self._startup = startup_program or self._main.startup_program()
        if self.config.geo_sgd_mode:
            mode = ["--mode=geo", "--geo-k-steps=%d" % int(self.config.geo_sgd_need_push_nums)]
        else:
            mode = ["--mode=" + ("sync" if sync_mode else "async")]
        self._trainer_id = int(trainer_id)
        self._flags = (distributed.flags_from_env() + mode + self.config.flags() +
                       ["--pservers=" + pservers, "--trainers=%d" % int(trainers)])

    def _planned(self):
        if self._flags is None:
            raise _oar.Error("DistributeTranspiler: call transpile() first")
        return self._flags

    def _runs_as(self, desc, run):
        program = Program(_desc=desc)
        _executor._driven[id(program)] = (program, run)
        return program

    def get_trainer_program(self, wait_port=True):
        """A program whose every exe.run is a step of this trainer."""
        flags = self._planned() + ["--role=trainer", "--trainer-id=%d" % self._trainer_id]
        holder = {}

        def first_step(feed, fetch):
            trainer = distributed.start_trainer(flags, holder["program"], self._startup)
            return trainer.run(feed, fetch)

        holder["program"] = self._runs_as(self._main.desc, first_step)
        return holder["program"]

    def get_pserver_program(self, endpoint):
        """A program whose exe.run is the pserver at `endpoint`, to the job's end."""
        flags = self._planned() + ["--role=pserver", "--endpoint=" + endpoint]

        def serve(feed, fetch):
            _oar.run_node(flags, self._main.desc, self._startup.desc)
            return []

        return self._runs_as(self._main.desc, serve)

    def get_startup_program(self, endpoint, pserver_program=None, startup_program=None):
        """The pserver's startup: the pserver node runs it itself, so exe.run of it does
        nothing."""
        self._planned()
        return self._runs_as(self._startup.desc, lambda feed, fetch: [])

    def get_pserver_programs(self, endpoint):
        return self.get_pserver_program(endpoint), self.get_startup_program(endpoint)
