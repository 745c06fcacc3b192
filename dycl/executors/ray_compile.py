"""Regions compiled (and tuned) as Ray tasks: `--executor ray` for `dycl convert`, and in `dycl zoo`'s tasks.

Each distinct region graph is one task (1 CPU): its ONNX bytes go out, the compiled library's bytes and
the tuning statistics come back, and the caller writes the artifact where a local compile would have. A
compile error is a value (the region falls back to onnxruntime as it does here); a worker or node that
dies has its task retried, then the region fails like a crashed compile worker. Tuned regions share one
`RecordsKeeper` (see backends/tvm_records), so a kernel is tuned once across regions and models. Only TVM
is sent out: onnxruntime compiles a region in milliseconds, which a task's round trip would exceed.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time

from ..compile_pool import CompileFailed, compile_all as compile_here

__all__ = ["RayCompiler", "compile_region", "start_records", "on_cluster", "RETRIES"]

RETRIES = 2


def start_records(ray, target: str | dict, threads: int = 1):
    """The records keeper for `target` (regions run on `threads` threads), on this (the driver's) node,
    holding this machine's records folder."""
    import json

    from ..backends.tvm_records import RecordsKeeper
    from ..backends.tvm_tune import TuneSettings, records_dir
    from .cluster import on_this_node

    spec = json.loads(target) if isinstance(target, str) else dict(target)
    spec = {**spec, "num-cores": threads}  # as TvmBackend.compile tunes
    return on_this_node(ray, RecordsKeeper, max_concurrency=64).remote(records_dir(TuneSettings(0), spec), spec)


@contextlib.contextmanager
def on_cluster(address: str | None):
    """A RayCompiler's compile_all on the cluster at `address`; its records keeper is stopped afterwards."""
    from .cluster import connect

    with connect(address):
        compiler = RayCompiler()
        try:
            yield compiler.compile_all
        finally:
            compiler.close()


class RayCompiler:
    """`compile_all` with the same signature and results as compile_pool's, its regions compiled as Ray tasks."""

    def __init__(self, records=None):
        self.records = records  # a RecordsKeeper actor; started on first tuned compile when None
        self.started_records = False

    def compile_all(self, backend, jobs: dict[str, str], processes: int, on_done=None) -> dict:
        if backend.name != "tvm":
            return compile_here(backend, jobs, processes, on_done)
        import ray

        tune = backend.tune if backend.tune is not None and backend.tune.trials > 0 else None
        tuning = None
        if tune is not None:
            if self.records is None:
                self.records, self.started_records = start_records(ray, backend.target, backend.threads), True
            if tune.deadline is None and tune.budget_s is not None:
                tune.deadline = time.monotonic() + tune.budget_s
            # The budget ends at one moment for every region, however long a task waits for a CPU: sent as
            # wall-clock time, which the nodes share (their monotonic clocks are their own).
            ends = None if tune.deadline is None else time.time() + max(0.0, tune.deadline - time.monotonic())
            tuning = {"trials": tune.trials, "ends": ends}
        options = {"threads": backend.threads, "target": backend.target_spec}
        task = ray.remote(compile_region).options(num_cpus=1, max_retries=RETRIES)
        refs = {}
        for artifact, onnx_path in jobs.items():
            with open(onnx_path, "rb") as fh:
                refs[task.remote(fh.read(), os.path.basename(artifact), options, tuning, self.records)] = artifact
        results, stats = {}, {}
        try:
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1)
                for ref in ready:
                    artifact = refs.pop(ref)
                    results[artifact], stats[artifact] = _received(ray, ref, artifact)
                    if on_done:
                        on_done(artifact, len(results))
        finally:
            for ref in refs:
                ray.cancel(ref, force=True)
        if tune is not None:
            tune.stats.extend(s for artifact in jobs for s in stats.get(artifact, []))
        return results

    def close(self) -> None:
        """Stop the records keeper this compiler started (its records are in the driver's folder)."""
        if self.started_records:
            import ray

            ray.kill(self.records)
            self.records, self.started_records = None, False


def _received(ray, ref, artifact: str) -> tuple:
    """A finished task's compile time (its library written to `artifact`) or error, and tuning statistics."""
    try:
        result = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        return CompileFailed((str(exc.cause if exc.cause is not None else exc).strip().splitlines() or [""])[0]), []
    except ray.exceptions.RayError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return CompileFailed(f"the compiler crashed ({RETRIES + 1} attempts): {first}"), []
    if "error" in result:
        return CompileFailed(result["error"]), result["tuning"]
    folder = os.path.dirname(artifact)
    for name, data in result["files"].items():
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(data)
    return result["seconds"], result["tuning"]


def compile_region(onnx: bytes, artifact_name: str, options: dict, tuning: dict | None, records) -> dict:
    """Ray task: compile one region graph with TVM (tuning its kernels when `tuning`); the library as bytes."""
    from ..backends import artifact_files
    from ..backends.tvm import TvmBackend, default_target

    folder = tempfile.mkdtemp(prefix="dycl-region-")
    settings = None
    try:
        if tuning is not None:
            from ..backends.tvm_records import SharedRecords
            from ..backends.tvm_tune import TuneSettings

            settings = TuneSettings(tuning["trials"])
            if tuning["ends"] is not None:
                settings.deadline = time.monotonic() + max(0.0, tuning["ends"] - time.time())
            settings.records = SharedRecords(records)
        backend = TvmBackend(options["threads"], options["target"], settings)
        mcpu, here = backend.target.get("mcpu"), default_target()["mcpu"]
        if settings is not None and mcpu and mcpu != here:
            return {"error": f"this node's CPU is {here}: it cannot time kernels for --target mcpu {mcpu}",
                    "tuning": []}
        onnx_path = os.path.join(folder, os.path.splitext(artifact_name)[0] + ".onnx")
        with open(onnx_path, "wb") as fh:
            fh.write(onnx)
        artifact = os.path.join(folder, artifact_name)
        start = time.perf_counter()
        try:
            backend.compile(onnx_path, artifact)
        except Exception as exc:  # noqa: BLE001 - a compile error is a value; the caller falls back
            return {"error": (str(exc).strip().splitlines() or [type(exc).__name__])[0],
                    "tuning": settings.stats if settings else []}
        seconds = time.perf_counter() - start
        files = {}
        for path in artifact_files(artifact):
            with open(path, "rb") as fh:
                files[os.path.basename(path)] = fh.read()
        return {"files": files, "seconds": seconds, "tuning": settings.stats if settings else []}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if settings is not None:
            shutil.rmtree(settings.records.work_dir, ignore_errors=True)
