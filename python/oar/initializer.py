"""How a parameter starts: the initialisers of api/layers.h, in Paddle's names."""

from . import _oar


def Xavier():
    return _oar.Initializer.xavier()


def Constant(value=0.0):
    return _oar.Initializer.constant(float(value))


def Uniform(low=-1.0, high=1.0):
    return _oar.Initializer.uniform(float(low), float(high))


def Normal(loc=0.0, scale=1.0):
    return _oar.Initializer.normal(float(loc), float(scale))


class ParamAttr:
    """Paddle's ParamAttr, for the part oar has: the initializer (the name is oar's own)."""

    def __init__(self, initializer=None, name=None):
        if name is not None:
            raise _oar.Error("ParamAttr(name=...): oar names parameters itself (fc_0.w_0, ...)")
        self.initializer = initializer


def resolve(attr):
    """The Initializer an fc or embedding's param_attr gives (Xavier when none)."""
    if attr is None:
        return _oar.Initializer.xavier()
    if isinstance(attr, ParamAttr):
        return attr.initializer if attr.initializer is not None else _oar.Initializer.xavier()
    if isinstance(attr, _oar.Initializer):
        return attr
    raise _oar.Error(f"param_attr: a ParamAttr or an initializer, not {type(attr).__name__}")
