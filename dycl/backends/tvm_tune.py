"""MetaSchedule tuning of a region's kernels, in this process, with records cached by content.

TVM's LocalBuilder and LocalRunner start a fresh worker process per batch, and
each worker imports `tvm.s_tir.tensor_intrin`, which builds the TVMScript
intrinsics of every GPU and CPU family: 40-50 s on a small machine, longer than
the builder's timeout, so tuning never gets past its first batch. Here
candidates are built and timed in the calling process instead, and for x86
targets the intrinsics of other families are never imported.

Records go to a JSONDatabase per target under the cache folder, keyed by each
kernel's structure: a region (or another model) with the same kernels reuses
them and tunes only what is new. A file lock keeps parallel conversions
(`dycl zoo --jobs`) from writing one database at once. On a Ray cluster the
records are shared through one keeper actor instead (see tvm_records), so that
concurrent tasks tune each kernel once.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import itertools
import json
import logging
import os
import sys
import time
import types
from contextlib import contextmanager
from typing import Callable

from .tvm_records import FileRecords

__all__ = ["TuneSettings", "tune", "records_dir", "skip_foreign_intrinsics"]

_ARTIFACTS: dict = {}
_COUNTER = itertools.count()
_DATABASES: dict[str, tuple] = {}  # records folder -> (its files' stamp, the JSONDatabase read from them)


class TuneSettings:
    """`trials` measured candidates per kernel on average; all tuning stops `budget_s` seconds after it started.

    `progress(region, done, total)` is called after each measured batch; `cache` holds the records.
    """

    def __init__(self, trials: int, budget_s: float | None = None, cache: str | None = None,
                 progress: Callable[[str, int, int], None] | None = None):
        self.trials, self.budget_s = trials, budget_s
        self.deadline: float | None = None  # time.monotonic() at which tuning stops, set when it starts
        self.cache = cache or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                           "dycl", "tvm-tuning")
        self.progress = progress
        self.stats: list[dict] = []  # one entry per tuned region
        self.records = None  # tvm_records.SharedRecords on a Ray cluster; None: FileRecords of `cache`


def records_dir(settings: TuneSettings, target: dict) -> str:
    key = hashlib.sha256(json.dumps(target, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(settings.cache, f"{target.get('mcpu', target.get('kind'))}-{key}")


def skip_foreign_intrinsics() -> None:
    """Never import the CUDA/ROCm/Hexagon/ARM/RISC-V/Metal tensor intrinsics (x86 targets cannot use them)."""
    package = "tvm.s_tir.tensor_intrin"
    if package in sys.modules:
        return
    for family in ("cuda", "rocm", "hexagon", "arm_cpu", "riscv_cpu", "metal"):
        sys.modules.setdefault(f"{package}.{family}", types.ModuleType(f"{package}.{family}"))


def _stamp(directory: str) -> tuple:
    stats = [os.stat(path) if os.path.exists(path) else None
             for path in (os.path.join(directory, f"database_{kind}.json") for kind in ("workload", "tuning_record"))]
    return tuple(None if st is None else (st.st_mtime_ns, st.st_size) for st in stats)


def _database(directory: str):
    """The records in `directory`, read once per process while no other process adds to them.

    Reading replays every record's schedule: seconds for a few thousand records, which BlockDrop-110's
    109 regions paid each, for 20 minutes of a tuned conversion. Call with the folder locked.
    """
    from tvm.s_tir import meta_schedule as ms

    stamp, database = _DATABASES.get(directory, (None, None))
    if database is None or stamp != _stamp(directory):
        database = ms.database.JSONDatabase(work_dir=directory)
    return database


def _keep(directory: str, database) -> None:
    """Remember `database` as what the folder holds now (after this process added to it)."""
    _DATABASES[directory] = (_stamp(directory), database)


@contextmanager
def _locked(directory: str):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _cores() -> int:
    from ..compile_pool import usable_cores

    return usable_cores()


def _static(prim_func) -> bool:
    """MetaSchedule tunes kernels whose buffers all have constant shapes."""
    import tvm

    for param in prim_func.params:
        shape = getattr(param, "shape", None)
        if shape is None or not all(isinstance(d, (int, tvm.tirx.IntImm)) for d in shape):
            return False
    return True


@functools.lru_cache(maxsize=None)
def _callbacks():
    """MetaSchedule classes, defined once, on first use (importing meta_schedule is slow)."""
    import tvm
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner
    from tvm.s_tir.meta_schedule.runner.local_runner import LocalRunnerFuture
    from tvm.s_tir.meta_schedule.runner.utils import alloc_argument_common, run_evaluator_common

    @derived_object
    class InProcessBuilder(PyBuilder):
        """Builds the candidates here, one thread per core, and keeps them in memory (no worker process)."""

        def build(self, build_inputs):
            from concurrent.futures import ThreadPoolExecutor

            from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

            def one(inp):
                try:
                    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(inp.mod)
                    built = tvm.tirx.build(mod, target=inp.target)
                    if isinstance(built, tvm.runtime.Executable):
                        built = built.jit()
                    built.get_function(built.entry_name)  # LLVM's JIT compiles here, in this thread
                    key = f"inproc://{next(_COUNTER)}"
                    _ARTIFACTS[key] = built
                    return BuilderResult(key, None)
                except Exception as exc:  # a candidate that does not build is recorded as failed
                    return BuilderResult(None, f"build failed: {exc}")

            # LLVM releases the GIL: candidates build side by side, all built before any is timed.
            with ThreadPoolExecutor(_cores()) as pool:
                return list(pool.map(one, build_inputs))

    @derived_object
    class InProcessRunner(PyRunner):
        """Times each built candidate here."""

        def __init__(self):
            super().__init__()
            self.config = EvaluatorConfig._normalized(EvaluatorConfig(number=3, repeat=1, min_repeat_ms=40))

        def run(self, runner_inputs):
            fill = tvm.get_global_func("tvm.contrib.random.random_fill_for_measure")
            futures = []
            for inp in runner_inputs:
                built = _ARTIFACTS.pop(str(inp.artifact_path), None)
                try:
                    device = tvm.runtime.device(str(inp.device_type), 0)
                    args = alloc_argument_common(fill, device, [a.as_json() for a in inp.args_info], 1)
                    futures.append(LocalRunnerFuture(res=run_evaluator_common(built, device, self.config, args)))
                except Exception as exc:
                    futures.append(LocalRunnerFuture(error_message=f"run failed: {exc}"))
            return futures

    @derived_object
    class Progress(ms.measure_callback.PyMeasureCallback):
        """Reports measured trials; stops every task once the deadline has passed (after saving the batch)."""

        def __init__(self, settings: TuneSettings, region: str, total: int, tasks: int, heartbeat=None):
            self.settings, self.region, self.total, self.tasks = settings, region, total, tasks
            self.heartbeat = heartbeat  # tells the records keeper this tuner is alive (shared records)
            self.done, self.stopped = 0, False

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            self.done += len(measure_candidates)
            if self.heartbeat:
                self.heartbeat()
            if self.settings.progress:
                self.settings.progress(self.region, min(self.done, self.total), self.total)
            deadline = self.settings.deadline
            if not self.stopped and deadline is not None and time.monotonic() >= deadline:
                self.stopped = True
                for task in range(self.tasks):
                    try:
                        task_scheduler.terminate_task(task)
                    except Exception:  # already finished
                        pass

    return InProcessBuilder, InProcessRunner, Progress


def _without_weight_transforms(mod):
    """`mod` less the functions that transform weights once at load (tvm_lift): not worth a trial."""
    import tvm

    return tvm.IRModule({gv: f for gv, f in mod.functions.items() if not gv.name_hint.endswith("_transform_params")})


def tune(mod, target, target_spec: dict, settings: TuneSettings, name: str):
    """`mod` (from_onnx) fused and with its static kernels tuned: ready for `tvm.compile`."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from .tvm import use_threads

    if target.kind.name == "llvm" and "mtriple" not in target.attrs \
            and tvm.target.codegen.llvm_get_system_triple().startswith("x86_64"):
        skip_foreign_intrinsics()
    # What MetaSchedule tunes: fused TIR kernels (it finds no tasks in the graph from_onnx gives).
    # Weight prepacking (AttachAttrLayoutFreeBuffers, then SplitLayoutRewritePreproc and FoldConstant)
    # was tried: MetaSchedule timed its convolutions 15% faster, but whole BranchyNet regions ran
    # 1.3-2.2x slower, so weights keep their layout.
    with target:
        mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                        relax.transform.CanonicalizeBindings(), relax.get_pipeline("zero")])(mod)
    # MetaSchedule logs every batch to stdout and to files; dycl shows its own progress instead. Each
    # tuning run re-lists the logger's handlers by name, which fails once one without a name is
    # attached (pytest does): start from none.
    logger = logging.getLogger("tvm.s_tir.meta_schedule")
    logger.setLevel(logging.WARNING)
    logger.handlers.clear()
    # Candidates are timed with the threads the regions will run with (TVM's pool is process-wide).
    use_threads(int(target_spec.get("num-cores", 1)))
    if settings.deadline is None and settings.budget_s is not None:
        settings.deadline = time.monotonic() + settings.budget_s
    records = settings.records or FileRecords(records_dir(settings, target_spec))
    stat = {"region": name, "kernels": 0, "dynamic": 0, "cached": 0, "tuned": 0, "trials": 0, "seconds": 0.0,
            "stopped_by_budget": False}
    start = time.monotonic()
    with records.session(target) as session:
        database = session.database
        tasks = ms.relax_integration.extract_tasks(_without_weight_transforms(mod), target)
        stat["kernels"] = len(tasks)
        static = [t for t in tasks if _static(t.dispatched[0]["main"])]
        stat["dynamic"] = len(tasks) - len(static)
        todo = session.claim(static)  # the others have records, or another task is tuning them
        stat["cached"] = len(static) - len(todo)
        expired = settings.deadline is not None and time.monotonic() >= settings.deadline
        try:
            if todo and settings.trials > 0 and not expired:
                _tune_tasks(todo, records.work_dir, database, settings, name, stat,
                            getattr(session, "heartbeat", None))
        finally:
            session.finish(todo)
        with target, database:
            mod = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
    stat["seconds"] = round(time.monotonic() - start, 1)
    settings.stats.append(stat)
    return mod


def _tune_tasks(todo: list, work_dir: str, database, settings: TuneSettings, name: str, stat: dict,
                heartbeat=None) -> None:
    from tvm.s_tir import meta_schedule as ms

    builder, runner, progress = _callbacks()
    contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
        todo, work_dir=work_dir, seed=0, num_threads=_cores(),
        strategy=ms.search_strategy.EvolutionarySearch(population_size=256, genetic_num_iters=3))
    # Trials count per kernel, as MetaSchedule's own tune_relax does: a region of nine kernels
    # given a region-wide count measured too few candidates of each to find a good schedule.
    # The scheduler gives them to the kernels that gain most, up to 4x TRIALS each; a kernel
    # with a small search space leaves its share to them. On BranchyNet at 32 per kernel this
    # ran 0.128 ms against 0.169 ms with each kernel held to 32 (644 trials against 508).
    total = settings.trials * len(contexts)
    watch = progress(settings, name, total, len(contexts), heartbeat)
    try:
        ms.tune.tune_tasks(
            tasks=contexts, task_weights=weights, work_dir=work_dir,
            max_trials_global=total, max_trials_per_task=4 * settings.trials,
            num_trials_per_iter=min(16, settings.trials), builder=builder(), runner=runner(),
            database=database, cost_model="xgb",
            measure_callbacks=[ms.measure_callback.AddToDatabase(), ms.measure_callback.UpdateCostModel(), watch],
            task_scheduler="gradient")
    finally:
        _ARTIFACTS.clear()
    stat.update(tuned=len(todo), trials=watch.done, stopped_by_budget=watch.stopped)
