"""`dycl zoo --executor local`: each model in its own worker process on this machine, `--jobs` at a time.

Workers are spawned (fresh interpreters, no inherited torch threads) and die with the zoo, even when it is
killed by SIGKILL (Linux); a worker that crashes or runs past the timeout is one failed row.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import time
from typing import Callable, Iterator

from ..compile_pool import usable_cores
from ..outdir import clean_stale

__all__ = ["run", "die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when the zoo that started it dies, even by SIGKILL (Linux)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the zoo kills its workers when it stops normally
        return
    if os.getppid() != parent:  # the zoo died before the request took effect
        os._exit(1)


def run(opts, jobs: list[tuple[str, str, str]], started: Callable[[str], None]) -> Iterator[tuple[str, dict, dict]]:
    """Convert the `(name, model file, package)` jobs, `opts.jobs` at a time, each in a worker that dies with
    this process; yield `(name, row, sources)` as each finishes."""
    from ..zoo import convert_one

    ctx = multiprocessing.get_context("spawn")
    pending = list(jobs)
    running: dict[str, tuple] = {}
    scratch = os.path.join(opts.out, ".zoo-results")
    os.makedirs(scratch, exist_ok=True)
    options = {k: v for k, v in opts.convert_options().items() if k not in ("backend", "check")}
    try:
        while pending or running:
            while pending and len(running) < max(1, opts.jobs):
                name, path, package = pending.pop(0)
                result_file = os.path.join(scratch, f"{name}.json")
                if os.path.exists(result_file):
                    os.remove(result_file)
                compile_jobs = max(1, usable_cores() // max(1, opts.jobs))  # the cores, shared out
                proc = ctx.Process(target=convert_one, args=(path, package, opts.backend, opts.check, result_file,
                                                             compile_jobs, os.getpid(), options), daemon=True)
                proc.start()
                running[name] = (proc, time.monotonic(), result_file)
                started(name)
            time.sleep(0.05)
            for name, (proc, begun, result_file) in list(running.items()):
                elapsed = time.monotonic() - begun
                if proc.is_alive() and elapsed <= opts.timeout:
                    continue
                row, sources = _result(name, proc, elapsed, result_file, opts.timeout)
                del running[name]
                yield name, row, sources
    finally:
        for proc, *_ in running.values():
            proc.kill()
            proc.join()
        clean_stale(opts.out)
        shutil.rmtree(scratch, ignore_errors=True)


def _result(name: str, proc, elapsed: float, result_file: str, timeout: float) -> tuple[dict, dict]:
    """A finished (or overdue, then stopped) worker's row and the sources it imported."""
    if proc.is_alive():
        proc.kill()
        proc.join()
        return {"model": name, "status": "timeout", "seconds": round(elapsed, 1),
                "error": f"no result after {timeout:g} s; the worker was stopped"}, {}
    proc.join()
    if not os.path.exists(result_file):
        return {"model": name, "status": "crashed", "seconds": round(elapsed, 1),
                "error": f"the worker died (exit code {proc.exitcode})"}, {}
    with open(result_file, encoding="utf-8") as fh:
        result = json.load(fh)
    return result["row"], result["sources"]
