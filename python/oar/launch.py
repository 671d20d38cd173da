"""python3 -m oar.launch [oar-launch flags] train.py [its arguments]: the nodes of a job on this
host, each running train.py (Paddle's python -m paddle.distributed.launch --server_num=1
--worker_num=2 train.py). oar-launch starts them: CURVE keys made for the launch, a job id, the
held ports, the node's flags in OAR_NODE_FLAGS for oar.fleet.init(), fail-fast, and its exit
status. Paddle's spellings (--server_num, --worker_num) and oar-launch's (--server-num, ...)
both work; oar-launch --help lists the rest."""

import os
import sys

from . import _tools

_SWITCHES = {"curve", "scheduler", "help"}


def _split(args):
    """(launcher flags, [script, its args]): the script is the first argument that is neither
    a flag nor a flag's value."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[:i], args[i + 1:]
        if not a.startswith("-"):
            return args[:i], args[i:]
        if "=" not in a and a.lstrip("-").replace("_", "-") not in _SWITCHES:
            i += 1  # its value
        i += 1
    return args, []


def _mode_of(flags):
    for i, f in enumerate(flags):
        name = f.lstrip("-").split("=")[0]
        if name == "mode":
            return f.split("=", 1)[1] if "=" in f else (flags[i + 1] if i + 1 < len(flags)
                                                          else "")
    return "sync"  # oar-launch's default


def main(argv=None):
    flags, command = _split(list(sys.argv[1:] if argv is None else argv))
    launcher = os.environ.get("OAR_LAUNCH") or os.path.join(_tools.TOOLS_DIR, "oar-launch")
    if not command and "--help" not in flags and "-help" not in flags:
        sys.stderr.write("oar.launch: error: name the script: python3 -m oar.launch "
                         "--server_num=1 --worker_num=2 train.py\n")
        return 2
    # The launch's mode sets its layout (collective: no pservers; collective and hybrid: the
    # trainers' rendezvous): fleet.init() checks the script's strategy against it.
    os.environ["OAR_LAUNCH_MODE"] = _mode_of(flags)
    if not os.access(launcher, os.X_OK):
        sys.stderr.write(f"oar.launch: error: {launcher}: oar-launch not found (set OAR_LAUNCH)\n")
        return 2
    os.execv(launcher, [launcher] + flags +
             ["--script-interpreter=" + sys.executable] + command)


if __name__ == "__main__":
    sys.exit(main())
