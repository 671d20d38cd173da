"""Running programs from your own loop: exe.run(program, feed={name: ndarray}, fetch_list=[...])
returns NumPy arrays. Feeds of the var's dtype in C layout are read in place; anything else is an
oar.Error naming the var (no silent conversion). The GIL is released while oar computes."""

from . import _oar
from .framework import Program, Variable, default_main_program

Scope = _oar.Scope
_global_scope = _oar.Scope()
# Programs whose runs are a distributed trainer's steps (oar.fleet.init_worker puts the main
# program here): id(program) -> (program, the trainer's run(feed, fetch_names)). The program is
# kept, so that its id names no other program meanwhile.
_driven = {}


def global_scope():
    """The scope exe.run uses when given none (Paddle's fluid.global_scope())."""
    return _global_scope


def CPUPlace():
    return "cpu"


def CUDAPlace(index=0):
    return f"cuda:{index}"


class Executor:
    def __init__(self, place=None):
        self.place = place or "cpu"
        self._exe = _oar.Executor(self.place)

    def run(self, program=None, feed=None, fetch_list=None, scope=None, return_numpy=True):
        """Runs block 0 of `program` (the default main program when None) once."""
        if not return_numpy:
            raise _oar.Error("exe.run(return_numpy=False): oar returns NumPy arrays")
        if program is None:
            program = default_main_program()
        desc = program.desc if isinstance(program, Program) else program
        names = [v.name if isinstance(v, Variable) else str(v) for v in (fetch_list or [])]
        program_and_step = _driven.get(id(program))
        step = program_and_step[1] if program_and_step and program_and_step[0] is program else None
        if step is not None:  # a trainer of a job: its scope is the trainer's own
            if scope is not None:
                raise _oar.Error("exe.run(scope=...): a fleet worker's main program runs in its "
                                 "trainer's scope")
            return step(feed or {}, names)
        return self._exe.run(desc, scope if scope is not None else _global_scope,
                             feed or {}, names)

    def close(self):
        """Paddle's exe.close(): a trainer of a job this process runs (DistributeTranspiler's,
        fleet's) ends as completed, and its pservers hear it; else nothing to release."""
        from . import distributed
        distributed.finish_all()
