"""Every PyTorch fixture reproduced by a model built in Python and trained from a Python loop
over NumPy batches; the program is the C++ recipe's, byte for byte."""

import os

import numpy as np
import pytest

import oar
from model_builders import build_from_recipe, build_in_python, fixture_names, read_fixture, FIXTURES


@pytest.mark.parametrize("name", fixture_names())
def test_python_program_is_the_cpp_program(name):
    spec = read_fixture(name)
    main, startup, _ = build_in_python(spec)
    cpp_main, cpp_startup = build_from_recipe(spec)
    assert main.serialize() == cpp_main.serialize()
    assert startup.serialize() == cpp_startup.serialize()


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_trajectory(name):
    spec = read_fixture(name)
    folder = os.path.join(FIXTURES, name)
    main, startup, loss = build_in_python(spec)
    scope = oar.Scope()
    exe = oar.Executor()
    exe.run(startup, scope=scope)
    for p in spec["params"]:
        scope.set(p, np.load(os.path.join(folder, "init", p + ".npy")))
    x = np.load(os.path.join(folder, "x.npy"))
    y = np.load(os.path.join(folder, "y.npy"))
    if spec["model"] == "lenet":
        x = np.ascontiguousarray(x.reshape(-1, 1, 28, 28))
    xname = "img" if spec["loss"] == "softmax_with_cross_entropy" else "x"
    yname = "label" if spec["loss"] == "softmax_with_cross_entropy" else "y"
    want = np.load(os.path.join(folder, "losses.npy"))
    b, n, got = spec["batch_size"], x.shape[0], []
    for _ in range(spec.get("epochs", 1)):
        for start in range(0, n, b):
            # Row slices of C-contiguous arrays are C-contiguous: fed in place.
            out, = exe.run(main, feed={xname: x[start:start + b], yname: y[start:start + b]},
                           fetch_list=[loss], scope=scope)
            got.append(float(out.reshape(-1)[0]))
    assert len(got) == spec["steps"]
    np.testing.assert_allclose(got, want.reshape(-1), rtol=1e-4)
    for p in spec["params"]:
        np.testing.assert_allclose(scope.get(p), np.load(os.path.join(folder, "final", p + ".npy")),
                                   rtol=1e-3, atol=1e-5, err_msg=p)
