"""oar.fleet: Paddle Fleet's parameter-server and collective training over oar's nodes
(fleet.init, DistributedStrategy, distributed_optimizer, is_server / init_server / run_server,
init_worker / stop_worker). docs/python.md says how each call maps onto oar."""

from .fleet import Fleet
from .strategy import DistributedStrategy

_fleet = Fleet()

init = _fleet.init
is_server = _fleet.is_server
is_worker = _fleet.is_worker
is_first_worker = _fleet.is_first_worker
worker_index = _fleet.worker_index
worker_num = _fleet.worker_num
server_num = _fleet.server_num
server_index = _fleet.server_index
server_endpoints = _fleet.server_endpoints
distributed_optimizer = _fleet.distributed_optimizer
init_server = _fleet.init_server
run_server = _fleet.run_server
init_worker = _fleet.init_worker
stop_worker = _fleet.stop_worker
save_persistables = _fleet.save_persistables
barrier_worker = _fleet.barrier_worker


def __getattr__(name):  # fleet.main_program, fleet.startup_program, as Paddle's
    if name in ("main_program", "startup_program"):
        return getattr(_fleet, name)
    raise AttributeError(name)


class PaddleCloudRoleMaker:
    """Paddle's role maker: oar reads the role from the environment in fleet.init()."""

    def __init__(self, is_collective=False, **_):
        self.is_collective = is_collective


class UserDefinedRoleMaker(PaddleCloudRoleMaker):
    pass


__all__ = ["Fleet", "DistributedStrategy", "PaddleCloudRoleMaker", "UserDefinedRoleMaker",
           "init", "is_server", "is_worker", "is_first_worker", "worker_index", "worker_num",
           "server_num", "server_index", "server_endpoints", "distributed_optimizer",
           "init_server", "run_server", "init_worker", "stop_worker", "save_persistables",
           "barrier_worker"]
