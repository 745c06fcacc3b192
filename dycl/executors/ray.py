"""`dycl zoo --executor ray`: each model converted as a Ray task, its results back as values.

The driver packs the model folder once (`ray.put`) and submits one task per model (`--cpus-per-model`,
1 CPU by default). The task unpacks the folder on its node, converts the model into a folder of its own
and returns the report row, the sources the conversion imported and the package's files as bytes; the
driver writes the package into OUT, whole, as a local conversion does. No shared filesystem is assumed.

Each task runs in a fresh worker process (`max_calls=1`), as a local worker does. A worker or node that
dies has its task run again (`--retries`, on another node when its node is gone); a task that still
fails is a `crashed` row. The per-model timeout counts from the task's start, reported by a small actor
on the driver's node, and a task past it is cancelled (its worker killed). Paths the node saw (its copy
of the folder) are written back as the driver's, so rows, cache entries and packages are those a local
run gives.
"""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import time
from typing import Callable, Iterator

from .. import __version__
from ..backends import takes_option
from ..outdir import OutputError, check_output, clean_stale, make_workdir, remove_created, replace_dir

__all__ = ["run", "pack_folder", "convert_model"]


class _Events:
    """Which model's task started where (an actor on the driver's node); the driver takes them as they come."""

    def __init__(self):
        self.events: list[tuple[str, str]] = []

    def started(self, name: str, node: str) -> None:
        self.events.append((name, node))

    def take(self) -> list[tuple[str, str]]:
        events, self.events = self.events, []
        return events


def pack_folder(folder: str, skip: str | None = None) -> bytes:
    """The model folder as a gzipped tar: every file but caches, hidden entries and `skip` (the zoo's OUT)."""
    skip = os.path.realpath(skip) if skip else None
    buffer = io.BytesIO()

    def keep(info: tarfile.TarInfo):
        parts = info.name.split("/")
        if any(p.startswith(".") and p != "." or p == "__pycache__" for p in parts):
            return None
        if skip and os.path.realpath(os.path.join(folder, info.name)) == skip:
            return None
        return None if info.issym() or info.islnk() else info

    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".", filter=keep)
    return buffer.getvalue()


def _layout(folder: str) -> dict:
    """Where the driver has the folder: its absolute path, and the path diagnostics show (relative to the
    working directory, when the folder lies below it)."""
    absolute = os.path.abspath(folder)
    shown = os.path.relpath(absolute)
    return {"folder": absolute, "shown": None if shown.startswith("..") else shown}


def convert_model(archive: bytes, layout: dict, model: str, settings: dict, events, records) -> dict:
    """Ray task: convert `model` (a file of the packed folder) and return its row, sources and package files."""
    import ray

    from ..zoo import convert_row

    name = os.path.splitext(model)[0]
    events.started.remote(name, ray.get_runtime_context().get_node_id())
    if settings["dycl"] != __version__:
        return {"row": {"model": name, "status": "failed", "error": f"this node runs dycl {__version__}, the "
                        f"driver dycl {settings['dycl']}: install the same dycl on every node"},
                "sources": {}, "files": {}}
    root = tempfile.mkdtemp(prefix="dycl-zoo-")
    try:
        # The working directory and the folder placed as on the driver (the folder below it, or elsewhere), so
        # that diagnostics print the same relative paths; absolute ones are the node's, written back below.
        work = os.path.join(root, "work")
        shown = layout["shown"]
        folder = os.path.normpath(os.path.join(work, shown) if shown else
                                  os.path.join(root, "models", os.path.basename(layout["folder"])))
        os.makedirs(work, exist_ok=True)
        os.makedirs(folder, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+: refuse links and paths out of it
                tar.extractall(folder, filter="data")
            else:
                tar.extractall(folder)
        os.chdir(work)
        out = os.path.join(root, "package", name)
        compile_all = None
        if takes_option(settings["backend"], "target"):  # compiled for a machine: as Ray tasks too (and tuned)
            from .ray_compile import RayCompiler

            compile_all = RayCompiler(records).compile_all
        from ..compile_pool import usable_cores

        options = {**settings, "source": os.path.join(layout["folder"], model)}
        row, sources = convert_row(os.path.join(folder, model), out, options, usable_cores(), compile_all)
        files = {}
        if row["status"] == "ok":
            for where, _, names in os.walk(out):
                for file in names:
                    full = os.path.join(where, file)
                    with open(full, "rb") as fh:
                        files[os.path.relpath(full, out).replace(os.sep, "/")] = fh.read()

        def driver_path(text: str) -> str:
            return text.replace(folder + os.sep, layout["folder"] + os.sep)

        for field in ("error", "trace"):
            if field in row:
                row[field] = driver_path(row[field])
        return {"row": row, "sources": {driver_path(p): h for p, h in sources.items()}, "files": files}
    finally:
        os.chdir(tempfile.gettempdir())
        shutil.rmtree(root, ignore_errors=True)


def _write_package(package: str, files: dict[str, bytes]) -> None:
    """Put the package's files at `package`, whole: built beside it and renamed into place."""
    target = check_output(package)
    workdir, created = make_workdir(target)
    try:
        for rel, data in sorted(files.items()):
            path = os.path.normpath(os.path.join(workdir, rel))
            if os.path.isabs(rel) or not path.startswith(workdir + os.sep):
                raise OutputError(f"a task returned a file outside its package: {rel!r}")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        replace_dir(workdir, target)
    finally:
        if os.path.exists(workdir):
            shutil.rmtree(workdir, ignore_errors=True)
            remove_created(target, created)


def _finish(ray, ref, name: str, package: str, attempts: int, seconds: float) -> tuple[dict, dict]:
    """A finished task's row and sources, its package written into OUT (`attempts`: the task's runs allowed)."""
    try:
        result = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:  # the task itself raised (outside the conversion)
        cause = exc.cause if getattr(exc, "cause", None) is not None else exc
        return {"model": name, "status": "failed", "seconds": round(seconds, 1),
                "error": (f"{type(cause).__name__}: {cause}".splitlines() or [""])[0]}, {}
    except ray.exceptions.RayError as exc:  # its worker or node died on every attempt
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return {"model": name, "status": "crashed", "seconds": round(seconds, 1),
                "error": f"the worker died ({attempts} attempt{'s' * (attempts != 1)}): {first}"}, {}
    row = result["row"]
    if result["files"]:
        try:
            _write_package(package, result["files"])
        except (OutputError, OSError) as exc:
            row = {"model": name, "status": "failed", "seconds": row.get("seconds", 0),
                   "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    # Sources outside the model folder are the node's: keep those the driver has too (then they are the same
    # files, as on one machine); the cache cannot watch the others.
    return row, {p: h for p, h in result["sources"].items() if os.path.isfile(p)}


def run(opts, jobs: list[tuple[str, str, str]], started: Callable[[str], None]) -> Iterator[tuple[str, dict, dict]]:
    """Convert the `(name, model file, package)` jobs as Ray tasks; yield `(name, row, sources)` as each finishes."""
    from . import ExecutorError
    from .cluster import connect, largest_node_cpus, on_this_node

    if not jobs:  # every model was served from the cache
        return
    with connect(opts.address) as ray:
        if opts.cpus_per_model > largest_node_cpus(ray):
            raise ExecutorError(f"--cpus-per-model {opts.cpus_per_model:g}: no node of the cluster has that many "
                                f"CPUs (the largest has {largest_node_cpus(ray):g})")
        archive = ray.put(pack_folder(opts.folder, opts.out))
        events = on_this_node(ray, _Events).remote()
        records = None
        if opts.tune:
            from .ray_compile import start_records

            records = start_records(ray, opts.target)
        task = ray.remote(max_calls=1)(convert_model).options(num_cpus=opts.cpus_per_model, max_retries=opts.retries)
        settings = {**opts.convert_options(), "dycl": __version__}
        layout = _layout(opts.folder)
        running = {task.remote(archive, layout, os.path.relpath(path, opts.folder), settings, events, records):
                   (name, package) for name, path, package in jobs}
        begun: dict[str, float] = {}  # when each model's latest attempt started (a retry starts the clock again)
        submitted = time.monotonic()
        try:
            while running:
                ready, _ = ray.wait(list(running), num_returns=len(running), timeout=0.2)
                for name, _node in ray.get(events.take.remote()):
                    if name not in begun:
                        started(name)
                    begun[name] = time.monotonic()
                for ref in ready:
                    name, package = running.pop(ref)
                    if name not in begun:
                        started(name)
                    seconds = time.monotonic() - begun.get(name, submitted)
                    yield (name, *_finish(ray, ref, name, package, opts.retries + 1, seconds))
                now = time.monotonic()
                for ref, (name, package) in list(running.items()):
                    if name in begun and now - begun[name] > opts.timeout:
                        ray.cancel(ref, force=True)
                        del running[ref]
                        yield name, {"model": name, "status": "timeout", "seconds": round(now - begun[name], 1),
                                     "error": f"no result after {opts.timeout:g} s; the task was cancelled"}, {}
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
            clean_stale(opts.out)
            ray.kill(events)
            if records is not None:
                ray.kill(records)
