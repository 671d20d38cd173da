"""paddle.static's names for what oar has (Paddle 2.x static-graph scripts): programs, data,
the executor, and nn (the layers)."""

from . import layers as nn  # noqa: F401 (paddle.static.nn.fc, ...)
from .executor import Executor, global_scope  # noqa: F401
from .framework import (Program, data, default_main_program,  # noqa: F401
                        default_startup_program, program_guard)
