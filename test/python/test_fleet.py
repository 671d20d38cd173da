"""Distributed from Python: the seeds' two scripts (examples/python/) run as jobs by
python3 -m oar.launch and under PADDLE_* variables set by hand. fit_a_line's sync job ends with
the C++ job's params and with one machine's at twice the batch; the Fleet wide & deep runs
async and GEO; a trainer that fails mid-job fails the launch, naming it."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar import _tools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples", "python")
HOUSING = os.path.join(REPO, "data", "uci_housing", "housing.data")
TOOLS = _tools.TOOLS_DIR
LIMIT = 240  # seconds for any one job


def env_for_child(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(oar.__file__))
    env.setdefault("OMP_NUM_THREADS", "1")
    for k in [k for k in env if k.startswith(("PADDLE_", "OAR_NODE_FLAGS", "TF_CONFIG"))]:
        del env[k]
    env.update(extra)
    return env


def launch(script, *args, servers=2, workers=2, mode="sync"):
    cmd = [sys.executable, "-m", "oar.launch", f"--server_num={servers}",
           f"--worker_num={workers}", f"--mode={mode}", script, *args]
    return subprocess.run(cmd, env=env_for_child(), capture_output=True, text=True,
                          timeout=LIMIT)


def params(directory, names=("fc_0.w_0", "fc_0.b_0")):
    return {n: np.load(os.path.join(directory, n + ".npy")) for n in names}


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def fit_a_line(*args):
    return [os.path.join(EXAMPLES, "fit_a_line.py"), "--data", HOUSING, *args]


@pytest.fixture(scope="module")
def sync_job(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit_a_line")
    run = launch(*fit_a_line("--save", str(out / "python")))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "all 4 nodes finished" in run.stdout
    return out


def test_fit_a_line_sync_job_has_the_cxx_jobs_params(sync_job):
    model = sync_job / "cxx_model"
    subprocess.run([os.path.join(TOOLS, "example_fit_a_line"), str(model), HOUSING], check=True,
                   capture_output=True, timeout=LIMIT)
    run = subprocess.run([os.path.join(TOOLS, "oar-launch"), "--server-num=2", "--worker-num=2",
                          "--mode=sync", str(model), "--save", str(sync_job / "cxx")],
                         env=env_for_child(), capture_output=True, text=True, timeout=LIMIT)
    assert run.returncode == 0, run.stdout[-3000:]
    python, cxx = params(sync_job / "python"), params(sync_job / "cxx")
    for name in python:
        np.testing.assert_allclose(python[name], cxx[name], rtol=1e-6, atol=0, err_msg=name)


def test_fit_a_line_sync_job_is_one_machine_at_twice_the_batch(sync_job, tmp_path):
    run = subprocess.run([sys.executable, *fit_a_line("--batch", "40", "--save",
                                                      str(tmp_path / "one"))],
                         env=env_for_child(), capture_output=True, text=True, timeout=LIMIT)
    assert run.returncode == 0, run.stderr[-3000:]
    job, one = params(sync_job / "python"), params(tmp_path / "one")
    for name in job:
        np.testing.assert_allclose(job[name], one[name], rtol=1e-4, atol=0, err_msg=name)
    assert not np.array_equal(job["fc_0.w_0"], np.zeros_like(job["fc_0.w_0"]))


def start_by_hand(argv, pservers, trainers, extra_env=None):
    """The seed's way: each node a process with its PADDLE_* variables, no launcher."""
    eps = ",".join(f"127.0.0.1:{p}" for p in pservers)
    common = {"PADDLE_PSERVERS_IP_PORT_LIST": eps, "PADDLE_TRAINERS": str(trainers),
              "PADDLE_PSERVER_IPS": "127.0.0.1", **(extra_env or {})}
    procs = []
    for p in pservers:
        procs.append(subprocess.Popen(
            [sys.executable, *argv], env=env_for_child(
                PADDLE_TRAINING_ROLE="PSERVER", PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{p}",
                PADDLE_PSERVER_PORT=str(p), PADDLE_CURRENT_IP="127.0.0.1", **common),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for i in range(trainers):
        procs.append(subprocess.Popen(
            [sys.executable, *argv], env=env_for_child(
                PADDLE_TRAINING_ROLE="TRAINER", PADDLE_TRAINER_ID=str(i), **common),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=LIMIT)
            outputs.append((proc.returncode, out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs


def test_fit_a_line_under_paddle_variables_by_hand(sync_job, tmp_path):
    outputs = start_by_hand(fit_a_line("--save", str(tmp_path / "by_hand")), free_ports(2), 2)
    for rc, out in outputs:
        assert rc == 0, out[-3000:]
    by_hand, launched = params(tmp_path / "by_hand"), params(sync_job / "python")
    for name in by_hand:  # the same job, started another way: the same bits
        np.testing.assert_array_equal(by_hand[name], launched[name], err_msg=name)


@pytest.fixture(scope="module")
def clicks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ctr")
    subprocess.run([os.path.join(TOOLS, "oar-gen-ctr"), "-o", str(out), "--train-lines=6000",
                    "--test-lines=100"], check=True, capture_output=True, timeout=LIMIT)
    return str(out / "train.txt")


def wide_deep(clicks, mode, save):
    return [os.path.join(EXAMPLES, "wide_deep_fleet.py"), "--train", clicks, "--mode", mode,
            "--k-steps", "3", "--batch", "250", "--save", save]


def first_and_last_loss(output):
    line = [l for l in output.splitlines() if "mean loss of the first tenth" in l][0]
    first, last = line.split("first tenth ")[1].split(", of the last ")
    return float(first), float(last)


@pytest.mark.parametrize("mode", ["async", "geo", "hybrid"])
def test_fleet_wide_deep_trains_as_a_job(clicks, mode, tmp_path):
    run = launch(*wide_deep(clicks, mode, str(tmp_path / "save")), mode=mode)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    # a job, not four nodes training alone: the pservers served both trainers to the end
    assert "all 4 nodes finished" in run.stdout
    assert run.stdout.count("all trainers completed") == 2, run.stdout[-3000:]
    first, last = first_and_last_loss(run.stdout)
    assert last < first, run.stdout[-2000:]
    saved = params(tmp_path / "save", names=("fc_4.w_0", "fc_0.w_0"))
    assert all(np.isfinite(v).all() for v in saved.values())


def test_fleet_wide_deep_under_paddle_variables_by_hand(clicks, tmp_path):
    outputs = start_by_hand(wide_deep(clicks, "async", str(tmp_path / "save")),
                            free_ports(1), 2)
    for rc, out in outputs:
        assert rc == 0, out[-3000:]
    assert "all trainers completed" in outputs[0][1], outputs[0][1][-3000:]
    assert os.path.exists(tmp_path / "save" / "fc_4.w_0.npy")


def test_a_strategy_that_does_not_fit_the_launch_is_refused(clicks, tmp_path):
    run = launch(*wide_deep(clicks, "async", str(tmp_path / "save")), mode="hybrid")
    assert run.returncode != 0
    assert "launch it with --mode=async" in run.stderr, run.stderr[-2000:]


def test_fleet_script_runs_alone_on_one_machine(clicks, tmp_path):
    run = subprocess.run([sys.executable, *wide_deep(clicks, "async", str(tmp_path / "save"))],
                         env=env_for_child(), capture_output=True, text=True, timeout=LIMIT)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "worker 0: 24 steps" in run.stdout, run.stdout[-2000:]


FAILING = """
import numpy as np, oar
from oar import fleet
fleet.init()
x = oar.data("x", [4]); loss = oar.layers.mean(oar.layers.fc(x, 1))
s = fleet.DistributedStrategy(); s.a_sync = False
fleet.distributed_optimizer(oar.optimizer.SGD(0.1), s).minimize(loss)
if fleet.is_server():
    fleet.init_server(); fleet.run_server()
else:
    exe = oar.Executor(); fleet.init_worker()
    for step in range(3):
        exe.run(feed={"x": np.ones([2, 4], "float32")}, fetch_list=[loss])
    if fleet.worker_index() == 1:
        exe.run(feed={"x": np.ones([2, 5], "float32")}, fetch_list=[loss])
    fleet.stop_worker()
"""


def test_a_failing_worker_fails_the_launch_naming_it(tmp_path):
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    run = launch(str(script), servers=1)
    assert run.returncode != 0
    # oar-launch names the node that ended first: trainer 1, or trainer 0 refused a step
    # because trainer 1 left; the pserver heard why: the script's own error.
    assert "trainer.1 failed" in run.stderr or "trainer 1 left after an error" in run.stderr
    assert 'trainer 1 left after an error' in run.stdout, run.stdout[-3000:]
    assert 'the script ended with Error: feed "x"' in run.stdout, run.stdout[-3000:]


def test_fleet_refuses_half_a_convention(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
    monkeypatch.delenv("PADDLE_TRAINING_ROLE", raising=False)
    with pytest.raises(oar.Error, match="PADDLE"):
        oar.fleet.Fleet().init()


def test_strategy_names_the_mode():
    s = oar.fleet.DistributedStrategy()
    assert s.flags()[0] == "--mode=async"
    s.a_sync_configs = {"k_steps": 100}
    assert s.flags()[:2] == ["--mode=geo", "--geo-k-steps=100"]
    s.a_sync = False
    with pytest.raises(oar.Error, match="GEO"):
        s.flags()
    s.a_sync_configs = {"k_steps": -1}
    assert s.flags() == ["--mode=sync"]
    assert s.flags(collective=True) == ["--mode=collective"]


COLLECTIVE = """
import sys
import numpy as np, oar
from oar import fleet
fleet.init(is_collective=True)
x = oar.data("x", [4]); y = oar.data("y", [1])
loss = oar.layers.mean(oar.layers.square_error_cost(oar.layers.fc(x, 1), y))
fleet.distributed_optimizer(oar.optimizer.SGD(0.1)).minimize(loss)
exe = oar.Executor(); exe.run(oar.default_startup_program()); fleet.init_worker()
rng = np.random.default_rng(fleet.worker_index())
for step in range(5):
    exe.run(feed={"x": rng.random((8, 4), dtype=np.float32),
                  "y": rng.random((8, 1), dtype=np.float32)}, fetch_list=[loss])
fleet.save_persistables(exe, sys.argv[1])
fleet.stop_worker()
"""


def test_fleet_collective_job_is_one_machine_over_both_workers_rows(tmp_path):
    script = tmp_path / "collective.py"
    script.write_text(COLLECTIVE)
    run = launch(str(script), str(tmp_path / "save"), servers=0, mode="collective")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    main, startup = oar.Program(), oar.Program()
    with oar.program_guard(main, startup):
        x, y = oar.data("x", [4]), oar.data("y", [1])
        loss = oar.layers.mean(oar.layers.square_error_cost(oar.layers.fc(x, 1), y))
        oar.optimizer.SGD(0.1).minimize(loss)
    exe, scope = oar.Executor(), oar.Scope()
    exe.run(startup, scope=scope)
    rngs = [np.random.default_rng(i) for i in range(2)]
    for _ in range(5):  # the mean over 16 rows is the mean of the two workers' means over 8
        rows = [(r.random((8, 4), dtype=np.float32), r.random((8, 1), dtype=np.float32))
                for r in rngs]
        exe.run(main, scope=scope, feed={"x": np.concatenate([a for a, _ in rows]),
                                         "y": np.concatenate([b for _, b in rows])},
                fetch_list=[loss])
    job = params(tmp_path / "save")
    for name in job:
        np.testing.assert_allclose(job[name], scope.get(name), rtol=1e-5, atol=1e-7,
                                   err_msg=name)


SERVER = """
import oar
from oar import fleet
fleet.init()
x = oar.data("x", [4]); loss = oar.layers.mean(oar.layers.fc(x, 1))
s = fleet.DistributedStrategy(); s.a_sync = False
fleet.distributed_optimizer(oar.optimizer.SGD(0.1), s).minimize(loss)
fleet.init_server(); fleet.run_server()
"""


def test_ctrl_c_stops_a_server_waiting_for_its_trainers(tmp_path):
    import signal
    import time
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    port, = free_ports(1)
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env_for_child(
            PADDLE_TRAINING_ROLE="PSERVER", PADDLE_PSERVERS_IP_PORT_LIST=f"127.0.0.1:{port}",
            PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{port}", PADDLE_TRAINERS="1"))
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until it serves (a line a node always prints)
            line = proc.stdout.readline()
            lines.append(line)
            if "serving" in line or not line:
                break
        assert any("serving" in l for l in lines), "".join(lines)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, _ = proc.communicate(timeout=30)
        assert time.monotonic() - sent < 5, "the server took too long to stop"
        assert proc.returncode != 0
        assert "KeyboardInterrupt" in out, out[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
