"""exe.run over NumPy: feeds read in place, refused feeds named, Ctrl-C within a second, threads."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import oar


def linear_model(width=13, seed=1):
    main, startup = oar.Program(seed), oar.Program()
    with oar.program_guard(main, startup):
        x = oar.data("x", [None, width])
        y = oar.data("y", [None, 1])
        pred = oar.layers.fc(x, 1)
        loss = oar.layers.mean(oar.layers.square_error_cost(pred, y))
        oar.add_prediction(pred)
        oar.optimizer.SGD(0.01).minimize(loss)
    return main, startup, loss, pred


def test_a_contiguous_f32_feed_is_read_in_place():
    main, startup, loss, _ = linear_model()
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    x = np.random.default_rng(1).standard_normal((32, 13)).astype(np.float32)
    y = np.zeros((32, 1), np.float32)
    exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    assert scope.address("x") == x.__array_interface__["data"][0]
    view = x[8:24]  # a row slice is still C-contiguous: no copy either
    exe.run(main, feed={"x": view, "y": y[8:24]}, fetch_list=[loss], scope=scope)
    assert scope.address("x") == view.__array_interface__["data"][0]


@pytest.mark.parametrize("feed,words", [
    ({"x": np.zeros((4, 13), np.float64)}, ["x", "float64", "f32"]),
    ({"x": np.zeros((4, 12), np.float32)}, ["x", "[4,12]", "[-1,13]"]),
    ({"x": np.zeros((13, 4), np.float32).T}, ["x", "C-contiguous"]),
    ({"x": [[0.0] * 13]}, ["x", "list", "NumPy"]),
    ({"nope": np.zeros((4, 13), np.float32)}, ["nope", "no var"]),
])
def test_a_wrong_feed_is_an_error_naming_it(feed, words):
    main, startup, loss, _ = linear_model()
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    full = {"x": np.zeros((4, 13), np.float32), "y": np.zeros((4, 1), np.float32)}
    full.update(feed)
    with pytest.raises(oar.Error) as err:
        exe.run(main, feed=full, fetch_list=[loss], scope=scope)
    for w in words:
        assert w in str(err.value)
    assert isinstance(err.value, RuntimeError)


def test_a_missing_feed_is_an_error_naming_the_var():
    main, startup, loss, _ = linear_model()
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    with pytest.raises(oar.Error, match=r"\(y\) has no value"):
        exe.run(main, feed={"x": np.zeros((4, 13), np.float32)}, fetch_list=[loss], scope=scope)


def test_ctrl_c_raises_within_a_second_and_oar_stays_usable():
    main, startup = oar.Program(), oar.Program()
    with oar.program_guard(main, startup):
        h = oar.data("x", [None, 256])
        for _ in range(400):  # one run of about 10 s on 2 cores
            h = oar.layers.fc(h, 256, act="relu")
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    x = np.ones((4096, 256), np.float32)
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        exe.run(main, feed={"x": x}, fetch_list=[h], scope=scope)
    raised = time.monotonic()
    timer.join()
    assert sent and raised - sent[0] < 1.0, f"raised {raised - sent[0]:.2f} s after SIGINT"
    assert raised - start < 5
    small = np.ones((2, 256), np.float32)
    out, = exe.run(main, feed={"x": small}, fetch_list=[h], scope=scope)
    assert out.shape == (2, 256) and np.isfinite(out).all()


def test_eight_threads_run_one_executor_at_once():
    main, startup, loss, _ = linear_model()
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    errors, done = [], []

    def train(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(50):
                x = rng.standard_normal((16, 13)).astype(np.float32)
                out, = exe.run(main, feed={"x": x, "y": x[:, :1].copy()}, fetch_list=[loss],
                               scope=scope)
                assert np.isfinite(out).all()
            done.append(seed)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=train, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread is still running after 60 s"
    assert not errors and len(done) == 8
