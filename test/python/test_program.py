"""Programs from Python: layers' errors, save and load, text, clone for test."""

import numpy as np
import pytest

import oar


def test_a_layer_on_an_undeclared_var_raises_naming_it():
    main = oar.Program()
    with oar.program_guard(main, oar.Program()):
        with pytest.raises(oar.Error, match="nothere"):
            oar.layers.fc("nothere", 4)


def test_save_load_and_text(tmp_path):
    main, startup = oar.Program(), oar.Program()
    with oar.program_guard(main, startup):
        x = oar.data("x", [3])
        oar.layers.fc(x, 2, act="relu")
    main.save(str(tmp_path / "main.pb"))
    again = oar.load_program(str(tmp_path / "main.pb"))
    assert again.serialize() == main.serialize()
    assert "fc_0.w_0" in main.to_string()
    assert main.global_block().var("fc_0.w_0").shape == (3, 2)
    with pytest.raises(oar.Error, match="no var"):
        main.global_block().var("fc_9.w_0")


def test_clone_for_test_keeps_forward_ops_only():
    main, startup = oar.Program(), oar.Program()
    with oar.program_guard(main, startup):
        x = oar.data("x", [3])
        y = oar.data("y", [1])
        pred = oar.layers.dropout(oar.layers.fc(x, 1), 0.5)
        oar.optimizer.SGD(0.1).minimize(oar.layers.mean(oar.layers.square_error_cost(pred, y)))
    test = main.clone(for_test=True)
    assert "sgd" in main.global_block().ops
    assert "sgd" not in test.global_block().ops
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    xs = np.ones((4, 3), np.float32)
    ys = np.zeros((4, 1), np.float32)
    a, = exe.run(test, feed={"x": xs, "y": ys}, fetch_list=[pred], scope=scope)
    b, = exe.run(test, feed={"x": xs, "y": ys}, fetch_list=[pred], scope=scope)
    np.testing.assert_array_equal(a, b)  # no dropout in a test program
