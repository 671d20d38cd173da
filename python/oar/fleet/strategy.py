"""fleet.DistributedStrategy: how a job trains, in Paddle's names, as the node flags oar's
transpiler plans by (--mode, --geo-k-steps, ...)."""

from .. import _oar


class DistributedStrategy:
    """Paddle's defaults: a_sync is True (async); a_sync with a_sync_configs["k_steps"] > 0 is
    GEO, syncing every k steps; a_sync = False is sync. fleet.init(is_collective=True) makes a
    collective job (the trainers all-reduce their gradients, no pservers). oar's own: `hybrid`
    (dense params all-reduced among the trainers, the distributed tables on the pservers,
    trained sync or async as a_sync says), and `node_flags`, any other oar-executor flag."""

    def __init__(self):
        self.a_sync = True
        self.a_sync_configs = {"k_steps": -1}
        self.hybrid = False
        self.fuse_grad_size_in_MB = None  # collective jobs' gradient buckets (--bucket-mb)
        self.node_flags = []

    def _mode(self, collective):
        k_steps = int(self.a_sync_configs.get("k_steps", -1))
        unknown = set(self.a_sync_configs) - {"k_steps"}
        if unknown:
            raise _oar.Error(f"a_sync_configs: oar knows k_steps, not {sorted(unknown)}")
        if collective:
            if self.hybrid:
                raise _oar.Error("DistributedStrategy: hybrid jobs have pservers for their "
                                 "tables; fleet.init(is_collective=True) has none")
            return "collective"
        if self.hybrid:
            if self.a_sync and k_steps > 0:
                raise _oar.Error("DistributedStrategy: a hybrid job's tables train sync or "
                                 "async, not GEO (a_sync_configs k_steps)")
            return "hybrid"
        if not self.a_sync:
            if k_steps > 0:
                raise _oar.Error("DistributedStrategy: k_steps is GEO, which needs a_sync = True")
            return "sync"
        return "geo" if k_steps > 0 else "async"

    def flags(self, collective=False):
        """The node flags this strategy plans a job by."""
        mode = self._mode(collective)
        flags = ["--mode=" + mode]
        if mode == "hybrid":
            flags.append("--hybrid-tables=" + ("async" if self.a_sync else "sync"))
        if mode == "geo":
            flags.append("--geo-k-steps=%d" % int(self.a_sync_configs["k_steps"]))
        if self.fuse_grad_size_in_MB is not None:
            flags.append("--bucket-mb=%g" % float(self.fuse_grad_size_in_MB))
        return flags + list(self.node_flags)
