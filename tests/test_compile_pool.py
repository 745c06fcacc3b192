"""Regions compile side by side in worker processes; a region that fails fails alone."""
import os
import signal
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dycl.backends import get_backend
from dycl.compile_pool import CompileFailed, compile_all


def _graph(path: str, op: str) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op.lower(), [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.mark.parametrize("processes", [1, 3])
def test_every_region_compiles_and_a_bad_one_fails_alone(tmp_path, processes):
    ops = ["relu", "neg", "abs"]
    for op in ops:
        _graph(str(tmp_path / f"{op}.onnx"), op.capitalize())
    (tmp_path / "broken.onnx").write_bytes(b"not an ONNX model")
    jobs = {str(tmp_path / f"{name}.so"): str(tmp_path / f"{name}.onnx") for name in [*ops, "broken"]}
    backend = get_backend("tvm")

    results = compile_all(backend, jobs, processes)

    assert set(results) == set(jobs)
    assert isinstance(results[str(tmp_path / "broken.so")], Exception)
    x = np.array([[-1.5, 0.0, 2.0], [3.0, -4.0, 0.5]], dtype=np.float32)
    expected = {"relu": np.maximum(x, 0), "neg": -x, "abs": np.abs(x)}
    for name, want in expected.items():
        artifact = str(tmp_path / f"{name}.so")
        assert isinstance(results[artifact], float) and results[artifact] > 0
        (got,) = backend.load(artifact, str(tmp_path))([x])
        np.testing.assert_array_equal(got, want)


def test_backends_that_compile_fast_or_tune_stay_in_process():
    from dycl.backends.tvm_tune import TuneSettings

    assert get_backend("onnxruntime").worker_options() is None
    assert get_backend("tvm", tune=TuneSettings(8)).worker_options() is None
    assert get_backend("tvm", target={"kind": "llvm"}).worker_options() == {"threads": 1, "target": {"kind": "llvm"}}


def test_workers_take_the_regions_the_parent_has_not_reached(tmp_path):
    from dycl.backends.tvm import TvmBackend

    last = tmp_path / "Abs.so"

    class SlowHere(TvmBackend):  # the workers rebuild a plain TvmBackend by name
        here: list = []

        def compile(self, onnx_path, artifact_path):
            self.here.append(artifact_path)
            deadline = time.monotonic() + 60
            while not last.exists() and time.monotonic() < deadline:  # until a worker has taken all the others
                time.sleep(0.05)
            super().compile(onnx_path, artifact_path)

    ops = ["Relu", "Neg", "Abs"]
    for op in ops:
        _graph(str(tmp_path / f"{op}.onnx"), op)
    (tmp_path / "broken.onnx").write_bytes(b"not an ONNX model")
    names = ["Relu", "Neg", "broken", "Abs"]  # the parent holds Relu while a worker does the rest
    jobs = {str(tmp_path / f"{name}.so"): str(tmp_path / f"{name}.onnx") for name in names}
    results = compile_all(SlowHere(), jobs, 2)
    assert SlowHere.here == [str(tmp_path / "Relu.so")]
    assert isinstance(results[str(tmp_path / "broken.so")], CompileFailed)
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    for op, want in zip(ops, [np.maximum(x, 0), -x, np.abs(x)]):
        assert isinstance(results[str(tmp_path / f"{op}.so")], float)
        (got,) = TvmBackend().load(str(tmp_path / f"{op}.so"), str(tmp_path))([x])
        np.testing.assert_array_equal(got, want)


def _compile_workers() -> list[int]:
    pids = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as fh:
            pids += [int(p) for p in fh.read().split()]
    workers = []
    for pid in pids:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"dycl.compile_pool" in fh.read():
                workers.append(pid)
    return workers


def _wait_until_dead(pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":  # a zombie: dead, not yet reaped
                    return
        except FileNotFoundError:  # reaped
            return
        time.sleep(0.01)
    raise AssertionError(f"worker {pid} outlived SIGKILL")


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the worker through /proc (Linux)")
def test_a_worker_that_dies_fails_only_its_region(tmp_path):
    from dycl.backends.tvm import TvmBackend

    hang = tmp_path / "hang.onnx"
    os.mkfifo(hang)  # the worker that takes it blocks reading it, until it is killed there

    class KillsTheWorker(TvmBackend):
        def compile(self, onnx_path, artifact_path):
            if artifact_path.endswith("Relu.so"):  # the parent's first region: the worker holds `hang` meanwhile
                deadline = time.monotonic() + 60
                while True:
                    try:  # succeeds once the worker has the pipe open
                        fd = os.open(hang, os.O_WRONLY | os.O_NONBLOCK)
                        break
                    except OSError:
                        assert time.monotonic() < deadline, "no worker took the region"
                        time.sleep(0.05)
                (pid,) = _compile_workers()
                os.kill(pid, signal.SIGKILL)
                _wait_until_dead(pid)  # not waitid: the pool may reap it first
                os.close(fd)
            super().compile(onnx_path, artifact_path)

    for op in ["Relu", "Neg", "Abs"]:
        _graph(str(tmp_path / f"{op}.onnx"), op)
    names = ["Relu", "hang", "Neg", "Abs"]
    jobs = {str(tmp_path / f"{name}.so"): str(tmp_path / f"{name}.onnx") for name in names}
    results = compile_all(KillsTheWorker(), jobs, 2)

    failure = results[str(tmp_path / "hang.so")]
    assert isinstance(failure, CompileFailed) and "the compiler crashed (exit code -9)" in str(failure)
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    for op, want in zip(["Relu", "Neg", "Abs"], [np.maximum(x, 0), -x, np.abs(x)]):  # the parent did the rest
        assert isinstance(results[str(tmp_path / f"{op}.so")], float)
        (got,) = TvmBackend().load(str(tmp_path / f"{op}.so"), str(tmp_path))([x])
        np.testing.assert_array_equal(got, want)
    assert _compile_workers() == []
