"""Save, export and serve from Python; 8 threads train and 8 predict at once."""

import threading

import numpy as np
import pytest

import oar
from test_executor import linear_model


def trained_export(tmp_path):
    main, startup, loss, pred = linear_model()
    scope, exe = oar.Scope(), oar.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(3)
    w = rng.standard_normal((13, 1)).astype(np.float32)
    for _ in range(200):
        x = rng.standard_normal((32, 13)).astype(np.float32)
        exe.run(main, feed={"x": x, "y": x @ w}, fetch_list=[loss], scope=scope)
    oar.io.save_persistables(exe, str(tmp_path / "save"), main, scope)
    oar.io.export_model(str(tmp_path / "export"), str(tmp_path / "save"), main)
    return main, startup, scope, exe, pred, w


def test_exported_model_predicts_what_the_executor_computes(tmp_path):
    main, startup, scope, exe, pred, w = trained_export(tmp_path)
    predictor = oar.Predictor(str(tmp_path / "export"))
    assert predictor.inputs == ["x"]
    x = np.random.default_rng(5).standard_normal((256, 13)).astype(np.float32)
    served = predictor.predict({"x": x})[predictor.outputs[0]]
    want, = exe.run(main.clone(for_test=True), feed={"x": x, "y": np.zeros((256, 1), np.float32)},
                   fetch_list=[pred], scope=scope)
    np.testing.assert_allclose(served, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(oar.Error, match="x.*missing"):
        predictor.predict({})
    with pytest.raises(oar.Error, match="int64"):
        predictor.predict({"x": x.astype(np.int64)})


def test_load_persistables_restores_a_save(tmp_path):
    main, startup, scope, exe, pred, w = trained_export(tmp_path)
    fresh = oar.Scope()
    exe.run(startup, scope=fresh)
    summary = oar.io.load_persistables(exe, str(tmp_path / "save"), main, fresh)
    assert "loaded" in summary
    np.testing.assert_array_equal(fresh.get("fc_0.w_0"), scope.get("fc_0.w_0"))


def test_eight_trainers_and_eight_predictors_at_once(tmp_path):
    main, startup, scope, exe, pred, w = trained_export(tmp_path)
    predictor = oar.Predictor(str(tmp_path / "export"))
    errors = []

    def serve(seed):
        try:
            x = np.random.default_rng(seed).standard_normal((64, 13)).astype(np.float32)
            for _ in range(100):
                predictor.predict({"x": x})
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def train(seed):
        try:
            x = np.random.default_rng(seed).standard_normal((32, 13)).astype(np.float32)
            for _ in range(50):
                exe.run(main, feed={"x": x, "y": x @ w}, scope=scope)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=f, args=(i,)) for i in range(8) for f in (serve, train)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "deadlock: a thread runs after 60 s"
    assert not errors, errors
