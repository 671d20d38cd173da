"""oar-model's built-in models (linear, mlp, lenet, wide_deep, deepfm) built by the C++ recipes,
with settings named as its flags (in_ for --in, test_data for --test-data)."""

from . import _oar
from .framework import Program, _pair


def build(**settings):
    """(main, startup) Programs of the recipe; the CTR models take oar-model's defaults."""
    builder = _oar.build_recipe(**settings)
    main, startup = Program(settings.get("seed", 1)), Program()
    main._builder = builder
    _pair(main, startup)
    return main, startup


LrSchedule = _oar.LrSchedule
