"""Batch conversion of a folder of model files, each model in a worker of its own (a local process, or a
Ray task: see executors/).

A crash, hang (per-model timeout) or error in one model never stops the
others. Each finished package is renamed into place whole, so an interrupted
run leaves finished packages loadable and no partial one; stale temporary
folders of killed workers are removed. Workers die with the zoo, even when
it is killed by SIGKILL; SIGTERM stops it like Ctrl-C. A model whose sources
(its file, every local module its conversion imported, data files named after
it), options and dycl version are unchanged, and whose package still
verifies, is not converted again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import statistics
import sys
import time
import traceback

from . import __version__
from .outdir import OutputError, check_zoo_output, clean_stale
from .runtime.verify import sha256_file

__all__ = ["ZooOptions", "model_files", "cache_key", "local_sources", "run_zoo", "convert_row", "convert_one",
           "write_report", "tuning_totals"]

CACHE_FILE = "zoo-cache.json"


class ZooOptions:
    __slots__ = ("folder", "out", "backend", "jobs", "timeout", "force", "check", "fuse", "target", "tune",
                 "tune_budget", "executor", "address", "cpus_per_model", "retries")

    def __init__(self, folder: str, out: str, backend: str = "onnxruntime", jobs: int = 1, timeout: float = 600,
                 force: bool = False, check: int = 20):
        self.folder, self.out, self.backend, self.jobs = folder, out, backend, jobs
        self.timeout, self.force, self.check = timeout, force, check
        self.fuse = "measured"  # as dycl convert's --fuse
        self.target: str | None = None  # TVM target (JSON); default: this machine's CPU (required with ray)
        self.tune = 0  # MetaSchedule trials per kernel (0: default schedules)
        self.tune_budget: float | None = None  # seconds of tuning per model
        self.executor = "local"  # "local": worker processes here; "ray": Ray tasks (executors/)
        self.address: str | None = None  # the Ray cluster (default: $RAY_ADDRESS, else a Ray instance started here)
        self.cpus_per_model = 1.0  # CPUs a model's Ray task holds
        self.retries = 2  # times Ray runs a model's task again after its worker or node died

    def convert_options(self) -> dict:
        """What each model's conversion is given (see zoo.convert_row)."""
        return {"backend": self.backend, "check": self.check, "fuse": self.fuse, "target": self.target,
                "tune": self.tune, "tune_budget": self.tune_budget}


def model_files(folder: str) -> list[str]:
    """Model files in `folder`: every .py that defines get_model (helpers start with `_`).

    Files are read as bytes: one that is not UTF-8 or not valid Python is converted (and fails) like any other.
    """
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".py") and not name.startswith("_") and os.path.isfile(path):
            with open(path, "rb") as fh:
                if b"def get_model" in fh.read():
                    found.append(path)
    return found


def cache_key(path: str, opts: ZooOptions) -> str:
    """What a package depends on besides the modules it imports: its file, data files named after the
    model, options, dycl."""
    stem = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.dirname(os.path.abspath(path))
    files = {os.path.abspath(path)} | {os.path.join(folder, f) for f in os.listdir(folder)
                                       if f.startswith(stem + ".") and not f.endswith(".py")}  # e.g. skipnet.pt
    h = hashlib.sha256()
    settings = {"dycl": __version__, "backend": opts.backend, "check": opts.check}
    # Options added later enter the key only when set, so that earlier zoos' caches stay valid. The executor
    # never does: a zoo converted here and on a Ray cluster gives the same packages.
    settings.update({k: v for k, v in (("fuse", opts.fuse), ("target", opts.target), ("tune", opts.tune))
                     if v not in ("measured", None, 0)})
    h.update(json.dumps(settings).encode())
    for f in sorted(files):
        h.update(os.path.basename(f).encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def _library_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")} | set(site.getsitepackages())
    dirs.add(site.getusersitepackages())
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


def local_sources(skip: str) -> dict[str, str]:
    """Every module file this process imported from outside the standard library and site-packages
    (the model file, its helpers and their helpers, however imported), with its SHA-256.

    Files under `skip` (the package being written) are left out.
    """
    libraries, skip = _library_dirs(), os.path.realpath(skip) + os.sep
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        real = os.path.realpath(path)
        if real not in found and not real.startswith(libraries + (skip,)) and os.path.isfile(real):
            found[real] = sha256_file(real)
    return dict(sorted(found.items()))


def _sources_unchanged(sources: dict[str, str]) -> bool:
    for path, digest in sources.items():
        try:
            if sha256_file(path) != digest:
                return False
        except OSError:
            return False
    return True


def _serve_cached(entry: dict | None, key: str, package: str) -> bool:
    """Whether `entry` still describes this model: same key, the same imported sources, and (for a
    converted model) a package that verifies, digest included, and was compiled for this machine."""
    from .backends import TargetMismatch, get_backend
    from .runtime.verify import PackageError, verify_package

    if not entry or entry.get("key") != key or "sources" not in entry or not _sources_unchanged(entry["sources"]):
        return False
    if entry["row"]["status"] != "ok":
        return True
    try:
        manifest = verify_package(package, entry["row"].get("digest") or "")[0]
        if manifest.get("target"):  # code compiled for another CPU (TVM's) may not run here
            for name in sorted({r.get("backend", manifest["backend"]) for r in manifest["regions"]}):
                get_backend(name).check_target(manifest["target"])
    except (PackageError, OSError, TargetMismatch, ValueError):  # ValueError: a backend this dycl lacks
        return False
    return True


def _latency(spec, package: str, n: int = 5, repeat: int = 10) -> tuple[float, float]:
    """Median eager and converted latency (ms), single thread, on a few sample inputs."""
    import torch

    from .compare import to_numpy
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


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM stops the zoo like Ctrl-C does: workers are killed and temporary folders removed."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        before = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def convert_row(path: str, out: str, options: dict, compile_jobs: int = 1, compile_all=None) -> tuple[dict, dict]:
    """Convert one model into the package `out`, compiling `compile_jobs` regions at once; its report row and
    the sources it imported. `options`: backend, check, and optionally fuse, target, tune, tune_budget and
    source (the path the package records). `compile_all` replaces the local compile pool (Ray tasks)."""
    from rewrite import ConversionError

    from .convert import ConvertOptions, StepFailed, convert
    from .package import summary

    start = time.perf_counter()
    row = {"model": os.path.splitext(os.path.basename(path))[0], "status": "ok"}
    try:
        opts = ConvertOptions(path, out, options["backend"], options["check"])
        opts.jobs = compile_jobs
        opts.fuse = options.get("fuse") or opts.fuse
        opts.target = options.get("target")
        opts.source = options.get("source")
        if compile_all is not None:
            opts.compile_all = compile_all
        if options.get("tune"):
            from .backends.tvm_tune import TuneSettings

            opts.tune = TuneSettings(options["tune"], options.get("tune_budget"))
        result = convert(opts)
        row["seconds"] = round(time.perf_counter() - start, 2)
        info = summary(result)
        row.update(regions=info["regions"], decisions=info["decisions"], paths=info["check"]["paths"],
                   delta=info["check"]["delta"], eta=info["check"]["eta"], loops=len(info["loops"]),
                   fallbacks=len(info["fallbacks"]), digest=info["digest"])
        row["costs"] = _costs(result, info)
        if info["tuning"]:
            row["tuning"] = {k: sum(t[k] for t in info["tuning"]) for k in ("kernels", "dynamic", "cached", "tuned",
                                                                             "trials")}
        row["eager_ms"], row["dycl_ms"] = _latency(result.spec, out)
    except ConversionError as exc:
        row.update(status="unsupported", error=exc.format().splitlines()[0])
    except StepFailed as exc:
        row.update(status="failed", error=f"{exc.step}: {(str(exc.error).splitlines() or [''])[0]}")
    except Exception as exc:  # noqa: BLE001 - a worker reports every failure as a row
        row.update(status="failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0],
                   trace=traceback.format_exc(limit=3))
    row.setdefault("seconds", round(time.perf_counter() - start, 2))
    return row, local_sources(out)


def _costs(result, info: dict) -> dict:
    """What the conversion spent, per step and per compiled region (scripts/plan_zoo.py plans with them)."""
    tuned = {t["region"]: t["seconds"] for t in info["tuning"]}
    size = sum(os.path.getsize(os.path.join(where, f)) for where, _, files in os.walk(result.out) for f in files)
    return {"steps": info["seconds"],
            "compile_s": sorted(round(s, 3) for s in result.compile_seconds.values()),
            "tune_s": sorted(tuned.values()), "package_mb": round(size / 1e6, 3)}


def convert_one(path: str, out: str, backend: str, check: int, result_file: str, compile_jobs: int = 1,
                parent: int | None = None, options: dict | None = None) -> None:
    """Worker: convert one model (see convert_row); write its row and sources to `result_file`.

    With `parent` (the zoo's process id), the worker dies with that process.
    """
    if parent is not None:
        from .executors.local import die_with_parent

        die_with_parent(parent)
    row, sources = convert_row(path, out, {**(options or {}), "backend": backend, "check": check}, compile_jobs)
    with open(result_file, "w", encoding="utf-8") as fh:
        json.dump({"row": row, "sources": sources}, fh)


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
    try:
        os.makedirs(opts.out, exist_ok=True)
        _save_cache(opts.out, _load_cache(opts.out))  # fails now, not after converting, where OUT is read-only
    except OSError as exc:
        raise OutputError(f"zoo -o: cannot write in {exc.filename or opts.out}: {exc.strerror}") from None
    clean_stale(opts.out)
    cache = _load_cache(opts.out)
    pending = []
    rows: dict[str, dict] = {}
    for path in model_files(opts.folder):
        name = os.path.splitext(os.path.basename(path))[0]
        key = cache_key(path, opts)
        package = os.path.join(opts.out, name)
        if not opts.force and _serve_cached(cache.get(name), key, package):
            rows[name] = dict(cache[name]["row"], cached=True)
            if on_event:
                on_event("cached", name, rows[name])
            continue
        pending.append((name, path, key, package))
    from .executors import get_executor

    def started(name: str) -> None:
        if on_event:
            on_event("start", name, None)

    keys = {name: key for name, _, key, _ in pending}
    with _sigterm_as_interrupt(), contextlib.closing(
            get_executor(opts.executor).run(opts, [(n, p, pkg) for n, p, _, pkg in pending], started)) as results:
        for name, row, sources in results:
            rows[name] = row
            if _deterministic(row):  # the same next time, unless a source changes
                cache[name] = {"key": keys[name], "sources": sources, "row": row}
            else:  # a timeout or crash may depend on the machine's load: try again next run
                cache.pop(name, None)
            _save_cache(opts.out, cache)
            if on_event:
                on_event("done", name, row)
    return [rows[n] for n in sorted(rows)]


def _deterministic(row: dict) -> bool:
    """A row that converting again would give again: not a timeout or crash (they may depend on the machine's
    load), nor a failure to load the model file (it may import a module that does not exist yet)."""
    return row["status"] in ("ok", "unsupported") or (row["status"] == "failed" and not row["error"].startswith("load:"))


def _decisions(row: dict) -> str:
    d = row.get("decisions") or {}
    return ", ".join(f"{d[k]} {k}" for k in ("value", "shape", "execution", "static") if d.get(k))


def tuning_totals(rows: list[dict]) -> dict | None:
    """Over the zoo's conversions: kernels tuned against kernel uses (static kernels of every region), and
    how many uses found records (tuned earlier, or by another region or model of this run)."""
    tuned = [r["tuning"] for r in rows if r.get("tuning") and not r.get("cached")]
    if not tuned:
        return None
    uses = sum(t["kernels"] - t["dynamic"] for t in tuned)
    return {"kernel_uses": uses, "kernels_tuned": sum(t["tuned"] for t in tuned),
            "from_records": sum(t["cached"] for t in tuned), "trials": sum(t["trials"] for t in tuned)}


def write_report(out: str, rows: list[dict]) -> None:
    """OUT/report.md and OUT/report.json: one row per model."""
    tuning = tuning_totals(rows)
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as fh:
        json.dump({"dycl": __version__, "models": rows, **({"tuning": tuning} if tuning else {})}, fh, indent=1)
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
    if tuning:
        lines.append(f"Tuning: {tuning['kernels_tuned']} kernels tuned for {tuning['kernel_uses']} kernel uses "
                     f"({tuning['from_records']} found records, {tuning['trials']} trials).")
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
