"""`--executor ray`: the zoo on a two-node Ray cluster (two raylets on this machine) gives the rows and the
byte-identical packages `local` gives; a node killed mid-run costs no model; crashes, hangs and failures are
rows; tuned kernels are shared across models.

One cluster serves the whole file (1 CPU per node, no dashboard, no usage stats) and is shut down after it.
"""
import json
import os
import shutil

import numpy as np
import pytest

from conftest import MODELS

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

CRASH = '''
import os
import torch


def get_model():
    os.abort()


def get_inputs():
    return (torch.zeros(1),)
'''

HANG = '''
import time
import torch


def get_model():
    time.sleep(600)


def get_inputs():
    return (torch.zeros(1),)
'''

TIMING = {"seconds", "eager_ms", "dycl_ms", "costs"}


@pytest.fixture(scope="module")
def cluster():
    import ray
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        second = nodes.add_node(num_cpus=1)
        ray.init(address=nodes.address, log_to_driver=False)
        yield nodes, second
    finally:
        ray.shutdown()
        nodes.shutdown()


def _zoo(folder, out, executor, on_event=None, **options):
    from dycl import zoo

    opts = zoo.ZooOptions(str(folder), str(out), check=options.pop("check", 4))
    opts.fuse, opts.executor = "all", executor  # "all": the same packages every time
    for key, value in options.items():
        setattr(opts, key, value)
    rows = zoo.run_zoo(opts, on_event)
    zoo.write_report(str(out), rows)
    return {r["model"]: r for r in rows}


def _package_files(package) -> dict[str, bytes]:
    """Every file the manifest covers, and the manifest (report.json holds timings)."""
    files = {"manifest.json": (package / "manifest.json").read_bytes()}
    for rel in json.loads(files["manifest.json"])["files"]:
        files[rel] = (package / rel).read_bytes()
    return files


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    zoo = tmp_path_factory.mktemp("zoo")
    for name in ("c_if_else.py", "c_elif_chain.py", "bad_constructs.py"):
        shutil.copy(os.path.join(MODELS, name), zoo / name)
    return zoo


@pytest.fixture(scope="module")
def local(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "out"
    return out, _zoo(folder, out, "local", jobs=2)


def test_the_zoo_on_two_nodes_gives_the_same_report_and_packages(cluster, folder, local, tmp_path):
    local_out, local_rows = local
    out = tmp_path / "ray"
    rows = _zoo(folder, out, "ray")
    assert {n: r["status"] for n, r in rows.items()} == {"c_if_else": "ok", "c_elif_chain": "ok",
                                                        "bad_constructs": "unsupported"}
    for name, row in rows.items():  # the diagnostic's path too: the driver's, not the node's copy
        assert {k: v for k, v in row.items() if k not in TIMING} == \
               {k: v for k, v in local_rows[name].items() if k not in TIMING}
    for name in ("c_if_else", "c_elif_chain"):
        assert _package_files(out / name) == _package_files(local_out / name)
    # The same cache: a rerun (a driver that died, run again) converts nothing, and neither does ray on
    # the local zoo's output.
    assert all(r.get("cached") for r in _zoo(folder, out, "ray").values())
    assert all(r.get("cached") for r in _zoo(folder, local_out, "ray").values())


def test_a_node_killed_mid_run_loses_no_model(cluster, folder, local, tmp_path):
    import dycl

    nodes, second = cluster
    local_out, _ = local
    started = []

    def on_event(kind, name, row):
        if kind == "start":
            started.append(name)
            if len(started) == 2:  # one model runs on each node (1 CPU each): kill the second node
                nodes.remove_node(second, allow_graceful=False)

    try:
        rows = _zoo(folder, tmp_path / "out", "ray", on_event)
    finally:
        if second in nodes.worker_nodes:
            nodes.remove_node(second)
        cluster_nodes = nodes.add_node(num_cpus=1)  # for the tests after this one
        assert cluster_nodes
    assert second not in nodes.worker_nodes
    assert {n: r["status"] for n, r in rows.items()} == {"c_if_else": "ok", "c_elif_chain": "ok",
                                                        "bad_constructs": "unsupported"}
    for name in ("c_if_else", "c_elif_chain"):
        assert _package_files(tmp_path / "out" / name) == _package_files(local_out / name)
    net = dycl.load(str(tmp_path / "out" / "c_if_else"))
    reference = dycl.load(str(local_out / "c_if_else"))
    for sign in (1, -1):  # both arms of its branch
        x = np.full((1, 32), 0.8 * sign, np.float32)
        np.testing.assert_array_equal(net(x), reference(x))


def test_crashes_hangs_and_failing_tasks_are_rows(cluster, tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "crash.py").write_text(CRASH)
    (zoo / "hang.py").write_text(HANG)
    (zoo / "broken.py").write_text("def get_model(:\n    pass\n")
    # 60 s: on a loaded 2-core machine a fresh Ray worker took over 30 s to import torch and fail
    rows = _zoo(zoo, tmp_path / "out", "ray", timeout=60, retries=1)
    assert {n: r["status"] for n, r in rows.items()} == {"crash": "crashed", "hang": "timeout", "broken": "failed"}
    assert rows["crash"]["error"].startswith("the worker died (2 attempts): ")
    assert rows["hang"]["error"] == "no result after 60 s; the task was cancelled"
    assert rows["broken"]["error"].startswith("load: ") and "SyntaxError" in rows["broken"]["error"]
    assert rows["broken"]["error"].count(str(zoo / "broken.py")) == 1  # the driver's path, not the node's
    assert "2 attempts" in (tmp_path / "out" / "report.md").read_text()


def test_usable_cores_are_the_cpus_ray_granted(cluster):
    import ray

    from dycl.compile_pool import usable_cores

    @ray.remote(num_cpus=1)
    def cores():
        from dycl.compile_pool import usable_cores

        return usable_cores()

    assert ray.get(cores.remote()) == 1
    assert usable_cores() == len(os.sched_getaffinity(0))  # the driver holds no grant


def test_a_task_needing_more_cpus_than_any_node_is_refused(cluster, folder, tmp_path):
    from dycl.executors import ExecutorError

    with pytest.raises(ExecutorError, match="--cpus-per-model 4: no node of the cluster has that many CPUs"):
        _zoo(folder, tmp_path / "out", "ray", cpus_per_model=4)


TINY = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_model():
    torch.manual_seed({seed})
    return Net().eval()


def get_inputs():
    return (torch.randn(1, 8),)
'''


@pytest.mark.slow
def test_tuning_records_are_shared_across_models(cluster, tmp_path, monkeypatch):
    """Two models with the same layer shape (other weights): their kernels are tuned once, by one of them."""
    import tvm

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the driver's records folder
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for seed in (1, 2):
        (zoo / f"tiny{seed}.py").write_text(TINY.format(seed=seed))
    target = json.dumps({"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu()})
    options = {"backend": "tvm", "target": target, "tune": 1}
    rows = _zoo(zoo, tmp_path / "out", "ray", **options)
    assert {n: r["status"] for n, r in rows.items()} == {"tiny1": "ok", "tiny2": "ok"}
    tuning = json.loads((tmp_path / "out" / "report.json").read_text())["tuning"]
    kernels = rows["tiny1"]["tuning"]["kernels"]
    assert kernels >= 1 and rows["tiny2"]["tuning"]["kernels"] == kernels
    assert tuning["kernel_uses"] == 2 * kernels
    assert tuning["kernels_tuned"] == kernels and tuning["from_records"] == kernels
    assert f"Tuning: {kernels} kernels tuned for {2 * kernels} kernel uses" in (tmp_path / "out" / "report.md").read_text()
    # Every record landed in the driver's folder: converting again tunes nothing.
    again = _zoo(zoo, tmp_path / "out", "ray", force=True, **options)
    assert all(r["tuning"]["tuned"] == 0 and r["tuning"]["cached"] == kernels for r in again.values())


@pytest.mark.parametrize("command", ["convert", "zoo"])
def test_ray_compiles_tvm_only_for_an_explicit_target(command, tmp_path):
    from click.testing import CliRunner

    from dycl.cli import main

    source = os.path.join(MODELS, "c_if_else.py") if command == "convert" else MODELS
    result = CliRunner().invoke(main, [command, source, "-o", str(tmp_path / "out"), "--backend", "tvm",
                                       "--executor", "ray"])
    assert result.exit_code == 2
    assert "--executor ray compiles TVM code on other nodes: give --target" in result.output
    assert not (tmp_path / "out").exists()
