"""Compile regions side by side: the converting process and `processes - 1` worker processes.

Untuned TVM spends 0.3-3 s per region in LLVM, so a model with twenty regions
waited a minute on one core. Regions compile independently. The converting
process starts compiling at once; each worker takes regions only once it is
ready (it imports TVM first, about 2 s), so a model with a few quick regions
is never slower than compiling alone. Workers are fresh interpreters
(`python -m dycl.compile_pool`), not forks: they never re-run the user's
script nor inherit torch's threads. A worker that crashes fails only the
region it held, which the caller handles like any other compile error.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from .backends import Backend, get_backend

__all__ = ["compile_all", "CompileFailed", "usable_cores"]


def usable_cores() -> int:
    """The cores this process may run on: fewer than the machine's under taskset or a container's cpuset, and
    in a Ray task the CPUs Ray granted it (so that compile pools nested in tasks do not oversubscribe a node)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    granted = _ray_granted_cpus()
    return max(1, min(cores, granted)) if granted is not None else cores


def _ray_granted_cpus() -> int | None:
    """The CPUs of the Ray task (or actor) this process is running, or None outside one (a driver, no Ray)."""
    ray = sys.modules.get("ray")  # a process that never imported Ray is not a Ray worker
    if ray is None or not ray.is_initialized():
        return None
    context = ray.get_runtime_context()
    if context.worker.mode != ray.WORKER_MODE:
        return None
    cpus = context.get_assigned_resources().get("CPU")
    return int(-(-cpus // 1)) if cpus else None  # a fraction of a CPU is one core


class CompileFailed(RuntimeError):
    """A worker could not compile a region; carries the worker's first error line."""


def compile_all(backend: Backend, jobs: dict[str, str], processes: int,
                on_done=None) -> dict[str, float | Exception]:
    """Compile each `artifact path: ONNX path`; per artifact, the seconds it took or the error.

    `on_done(artifact, finished)` hears of each artifact as it is done (from the thread that compiled it).
    """
    queue = _Queue(jobs, on_done)
    options = backend.worker_options()
    workers = [] if options is None else [_Worker(backend.name, options, queue)
                                          for _ in range(min(processes, len(jobs)) - 1)]
    try:
        while (job := queue.take()) is not None:
            artifact, onnx_path = job
            queue.put(artifact, _timed_compile(backend, onnx_path, artifact))
    finally:
        queue.close()  # no region is handed out any more; on an interrupt, workers finish the one they hold
        queue.wait_for_workers()
        for worker in workers:
            worker.stop()
    return queue.results


def _timed_compile(backend: Backend, onnx_path: str, artifact: str) -> float | Exception:
    start = time.perf_counter()
    try:
        backend.compile(onnx_path, artifact)
    except Exception as exc:
        return exc
    return time.perf_counter() - start


class _Queue:
    """The regions nobody holds yet, and what came of the others."""

    def __init__(self, jobs: dict[str, str], on_done=None):
        self.pending = list(reversed(jobs.items()))  # pop() hands them out in order
        self.on_done = on_done
        self.results: dict[str, float | Exception] = {}
        self.held = 0  # regions that workers hold
        self.cond = threading.Condition()

    def take(self, worker: bool = False):
        with self.cond:
            if not self.pending:
                return None
            self.held += worker
            return self.pending.pop()

    def put(self, artifact: str, result, worker: bool = False) -> None:
        with self.cond:
            self.results[artifact] = result
            self.held -= worker
            self.cond.notify_all()
            if self.on_done:
                self.on_done(artifact, len(self.results))

    def close(self) -> None:
        with self.cond:
            self.pending.clear()

    def wait_for_workers(self) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.held == 0)


class _Worker:
    """One compile process and the thread that feeds it regions from the queue."""

    def __init__(self, name: str, options: dict, queue: _Queue):
        self.queue = queue
        self.log = tempfile.TemporaryFile("w+")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this dycl, even if not installed
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", "dycl.compile_pool", name, json.dumps(options)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env)
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        if self.proc.stdout.readline() != "ready\n":  # failed to start, or stopped: the others do its share
            return
        while (job := self.queue.take(worker=True)) is not None:
            artifact, onnx_path = job
            alive = True
            try:
                self.proc.stdin.write(json.dumps([onnx_path, artifact]) + "\n")
                self.proc.stdin.flush()
                reply = self.proc.stdout.readline()
                if reply:
                    ok, value = json.loads(reply)
                    result = value if ok else CompileFailed(value)
                else:  # the worker died on this region
                    alive = False
                    result = CompileFailed(f"the compiler crashed (exit code {self.proc.wait()}){self._last_error()}")
            except Exception as exc:
                alive, result = False, CompileFailed(f"lost the compile worker: {exc}")
            self.queue.put(artifact, result, worker=True)
            if not alive:
                return

    def _last_error(self) -> str:
        self.log.seek(0)
        lines = [line for line in self.log.read().splitlines() if line.strip()]
        return f": {lines[-1]}" if lines else ""

    def stop(self) -> None:
        """Called once the worker holds no region: end its process, even one still starting."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.thread.join()
        for stream in (self.proc.stdin, self.proc.stdout, self.log):
            try:
                stream.close()
            except OSError:
                pass


def _serve(name: str, options: str) -> None:
    """Worker: compile each `[onnx, artifact]` line from stdin, answer `[true, seconds]` or `[false, error]`."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the compiler prints goes to the log, never into the replies
    backend = get_backend(name, **json.loads(options))
    backend.warm_up()
    replies.write("ready\n")
    replies.flush()
    for line in sys.stdin:
        result = _timed_compile(backend, *json.loads(line))
        reply = [True, result] if isinstance(result, float) else \
            [False, (str(result).strip().splitlines() or [type(result).__name__])[0]]
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
