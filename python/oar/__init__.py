"""oar from Python: build a model in the names of Paddle's static graph, run it from your own loop
over NumPy arrays, save, export and serve it. Every call goes to oar's C++ library (the _oar
module); nothing here computes. docs/python.md is the guide."""

from ._oar import Error
from .framework import (Program, Variable, program_guard, default_main_program,
                        default_startup_program, data, add_metric, add_prediction, load_program)
from .executor import Executor, Scope, global_scope, CPUPlace, CUDAPlace
from .io import Predictor, FeedReader, DataFeeder
from .transpiler import DistributeTranspiler, DistributeTranspilerConfig
from . import initializer, layers, optimizer, regularizer, clip, io, recipes, fleet, static


def enable_static():
    """Paddle 2.x's paddle.enable_static(): oar's programs are static graphs already."""

__all__ = [
    "Error", "Program", "Variable", "program_guard", "default_main_program",
    "default_startup_program", "data", "add_metric", "add_prediction", "load_program",
    "Executor", "Scope", "global_scope", "CPUPlace", "CUDAPlace", "Predictor", "FeedReader",
    "DataFeeder", "DistributeTranspiler", "DistributeTranspilerConfig", "fleet", "static", "enable_static", "initializer", "layers", "optimizer", "regularizer", "clip", "io", "recipes",
]
