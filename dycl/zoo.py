"""Batch conversion of a folder of model files, one worker process per model.

A crash, hang (per-model timeout) or error in one model never stops the
others. Each finished package is renamed into place whole, so an interrupted
run leaves finished packages loadable and no partial one; stale temporary
folders of killed workers are removed. A model whose source (its file, the
local modules it imports, data files named after it), options and dycl
version are unchanged is not converted again.
"""
from __future__ import annotations

import ast
import hashlib
import json
import multiprocessing
import os
import shutil
import statistics
import time
import traceback

from . import __version__
from .compile_pool import usable_cores
from .outdir import check_zoo_output, clean_stale

__all__ = ["ZooOptions", "model_files", "cache_key", "run_zoo", "convert_one"]

CACHE_FILE = "zoo-cache.json"


class ZooOptions:
    __slots__ = ("folder", "out", "backend", "jobs", "timeout", "force", "check")

    def __init__(self, folder: str, out: str, backend: str = "onnxruntime", jobs: int = 1, timeout: float = 600,
                 force: bool = False, check: int = 20):
        self.folder, self.out, self.backend, self.jobs = folder, out, backend, jobs
        self.timeout, self.force, self.check = timeout, force, check


def model_files(folder: str) -> list[str]:
    """Model files in `folder`: every .py that defines get_model (helpers start with `_`)."""
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".py") and not name.startswith("_") and os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                if "def get_model" in fh.read():
                    found.append(path)
    return found


def _local_imports(path: str, seen: set[str]) -> None:
    """`path` and the modules beside it that it imports, transitively."""
    if path in seen or not os.path.exists(path):
        return
    seen.add(path)
    folder = os.path.dirname(path)
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        for name in names:
            candidate = os.path.join(folder, name.split(".")[0] + ".py")
            _local_imports(candidate, seen)


def cache_key(path: str, opts: ZooOptions) -> str:
    """What a package depends on: sources, data files named after the model, options, dycl."""
    files: set[str] = set()
    _local_imports(os.path.abspath(path), files)
    stem = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.dirname(os.path.abspath(path))
    files |= {os.path.join(folder, f) for f in os.listdir(folder)
              if f.startswith(stem + ".") and not f.endswith(".py")}  # e.g. skipnet.pt
    h = hashlib.sha256()
    h.update(json.dumps({"dycl": __version__, "backend": opts.backend, "check": opts.check}).encode())
    for f in sorted(files):
        h.update(os.path.basename(f).encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def _latency(spec, package: str, n: int = 5, repeat: int = 10) -> tuple[float, float]:
    """Median eager and converted latency (ms), single thread, on a few sample inputs."""
    import torch

    from .explore import to_numpy
    from .runtime import load

    torch.set_num_threads(1)
    net = load(package, threads=1)
    eager, compiled = [], []
    with torch.no_grad():
        for inp in spec.sample_inputs(n):
            args = [to_numpy(v) for v in inp]
            for _ in range(2):
                spec.model(*inp)
                net(*args)
            for fn, a, out in ((spec.model, inp, eager), (net, args, compiled)):
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    fn(*a)
                    times.append(time.perf_counter() - start)
                out.append(statistics.median(times))
    return statistics.median(eager) * 1e3, statistics.median(compiled) * 1e3


def convert_one(path: str, out: str, backend: str, check: int, result_file: str, compile_jobs: int = 1) -> None:
    """Worker: convert one model, compiling `compile_jobs` regions at once; write its row to `result_file`."""
    from rewrite import ConversionError

    from .convert import ConvertOptions, StepFailed, convert
    from .package import summary

    start = time.perf_counter()
    row = {"model": os.path.splitext(os.path.basename(path))[0], "status": "ok"}
    try:
        opts = ConvertOptions(path, out, backend, check)
        opts.jobs = compile_jobs
        result = convert(opts)
        row["seconds"] = round(time.perf_counter() - start, 2)
        info = summary(result)
        row.update(regions=info["regions"], decisions=info["decisions"], paths=info["check"]["paths"],
                   delta=info["check"]["delta"], eta=info["check"]["eta"], loops=len(info["loops"]),
                   fallbacks=len(info["fallbacks"]))
        row["eager_ms"], row["dycl_ms"] = _latency(result.spec, out)
    except ConversionError as exc:
        row.update(status="unsupported", error=exc.format().splitlines()[0])
    except StepFailed as exc:
        row.update(status="failed", error=f"{exc.step}: {(str(exc.error).splitlines() or [''])[0]}")
    except Exception as exc:  # noqa: BLE001 - a worker reports every failure as a row
        row.update(status="failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0],
                   trace=traceback.format_exc(limit=3))
    row.setdefault("seconds", round(time.perf_counter() - start, 2))
    with open(result_file, "w", encoding="utf-8") as fh:
        json.dump(row, fh)


def _load_cache(out: str) -> dict:
    try:
        with open(os.path.join(out, CACHE_FILE), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError):
        return {}


def _save_cache(out: str, cache: dict) -> None:
    tmp = os.path.join(out, f".{CACHE_FILE}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(cache, fh, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out, CACHE_FILE))


def run_zoo(opts: ZooOptions, on_event=None) -> list[dict]:
    """Convert every model file; returns one row per model. `on_event(kind, name, row)` reports progress.

    Raises OutputError, before converting anything, when `opts.out` is neither missing, empty nor an
    earlier zoo's output.
    """
    check_zoo_output(opts.out)
    os.makedirs(opts.out, exist_ok=True)
    clean_stale(opts.out)
    cache = _load_cache(opts.out)
    ctx = multiprocessing.get_context("spawn")
    pending = []
    rows: dict[str, dict] = {}
    for path in model_files(opts.folder):
        name = os.path.splitext(os.path.basename(path))[0]
        key = cache_key(path, opts)
        package = os.path.join(opts.out, name)
        entry = cache.get(name)
        converted = os.path.exists(os.path.join(package, "manifest.json"))
        if not opts.force and entry and entry.get("key") == key and (converted or entry["row"]["status"] != "ok"):
            rows[name] = dict(entry["row"], cached=True)
            if on_event:
                on_event("cached", name, rows[name])
            continue
        pending.append((name, path, key, package))
    running: dict[str, tuple] = {}
    scratch = os.path.join(opts.out, ".zoo-results")
    os.makedirs(scratch, exist_ok=True)
    try:
        while pending or running:
            while pending and len(running) < max(1, opts.jobs):
                name, path, key, package = pending.pop(0)
                result_file = os.path.join(scratch, f"{name}.json")
                if os.path.exists(result_file):
                    os.remove(result_file)
                compile_jobs = max(1, usable_cores() // max(1, opts.jobs))  # the cores, shared out
                proc = ctx.Process(target=convert_one, args=(path, package, opts.backend, opts.check, result_file,
                                                             compile_jobs), daemon=True)
                proc.start()
                running[name] = (proc, time.monotonic(), key, result_file)
                if on_event:
                    on_event("start", name, None)
            time.sleep(0.05)
            for name, (proc, started, key, result_file) in list(running.items()):
                elapsed = time.monotonic() - started
                if proc.is_alive() and elapsed <= opts.timeout:
                    continue
                if proc.is_alive():
                    proc.kill()
                    proc.join()
                    row = {"model": name, "status": "timeout", "seconds": round(elapsed, 1),
                           "error": f"no result after {opts.timeout:g} s; the worker was stopped"}
                else:
                    proc.join()
                    if os.path.exists(result_file):
                        with open(result_file, encoding="utf-8") as fh:
                            row = json.load(fh)
                    else:
                        row = {"model": name, "status": "crashed", "seconds": round(elapsed, 1),
                               "error": f"the worker died (exit code {proc.exitcode})"}
                del running[name]
                rows[name] = row
                if row["status"] in ("ok", "unsupported", "failed"):  # deterministic: the same next time
                    cache[name] = {"key": key, "row": row}
                else:  # a timeout or crash may depend on the machine's load: try again next run
                    cache.pop(name, None)
                _save_cache(opts.out, cache)
                if on_event:
                    on_event("done", name, row)
    finally:
        for proc, *_ in running.values():
            proc.kill()
            proc.join()
        clean_stale(opts.out)
        shutil.rmtree(scratch, ignore_errors=True)
    return [rows[n] for n in sorted(rows)]


def _decisions(row: dict) -> str:
    d = row.get("decisions") or {}
    return ", ".join(f"{d[k]} {k}" for k in ("value", "shape", "execution", "static") if d.get(k))


def write_report(out: str, rows: list[dict]) -> None:
    """OUT/report.md and OUT/report.json: one row per model."""
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as fh:
        json.dump({"dycl": __version__, "models": rows}, fh, indent=1)
        fh.write("\n")
    lines = ["# dycl zoo report", "",
             "| model | status | regions | decisions | paths | δ | η | convert (s) | eager (ms) | dycl (ms) | speed-up |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["status"] == "ok":
            speed = r["eager_ms"] / r["dycl_ms"] if r.get("dycl_ms") else 0
            lines.append(f"| {r['model']} | ok{' (cached)' if r.get('cached') else ''} | {r['regions']} | {_decisions(r)} | {r['paths']} | "
                         f"{r['delta']:.2g} | {r['eta']} | {r['seconds']:.1f} | {r['eager_ms']:.3f} | "
                         f"{r['dycl_ms']:.3f} | {speed:.2f}x |")
        else:
            lines.append(f"| {r['model']} | **{r['status']}**: {r.get('error', '')} | | | | | | "
                         f"{r.get('seconds', 0):.1f} | | | |")
    failed = [r for r in rows if r["status"] != "ok"]
    lines += ["", f"{len(rows) - len(failed)} of {len(rows)} models converted"
              + (f"; failed: {', '.join(r['model'] for r in failed)}" if failed else "") + "."]
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
