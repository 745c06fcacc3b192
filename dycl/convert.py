"""The conversion pipeline: an explicit ordered list of small steps over one state.

load → rewrite → generate → explore → fold_shapes → export → fuse → speculate →
package → check (`STEPS`; the rewrite runs its own passes, `rewrite.PASS_NAMES`). Each
step's failure is re-raised as `StepFailed` naming the step; the output
directory is written to a temporary folder and renamed into place only when
every step, the final check included, has passed. `ConvertOptions.dump_after`
stops after the step or rewrite pass it names, with the program as text in
`ConversionResult.dump` and no package written (dump_after.py).

The longer steps live beside this file: generate.py, export_step.py and fuse_step.py; fold_shapes.py
says which shape decisions fold and explore_diagnostics.py what exploration found that cannot be
converted.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from typing import Callable

from rewrite import PASS_NAMES, ConversionError, rewrite_model

from . import __version__
from ._torch_regions import import_regions
from .backends import AUTO, TORCH_REGIONS, backend_class, get_backend
from .check import check_package
from .compile_pool import compile_all, usable_cores
from .dump_after import DumpReached, step_dump
from .compare import RewriteMismatch
from .explore import explore
from .explore_diagnostics import length_check_failed, list_length_changed, one_size_code, python_value_out, unreached_code
from .export_step import step_export
from .fold_shapes import constant_shape_decisions
from .fuse_step import fusing_backend, step_fuse
from .generate import step_generate, write_host
from .modelfile import ModelFileError, load_model_file, observe_dynamic
from .outdir import check_output, make_workdir, remove_created, replace_dir
from .package import region_loops, write_manifest, write_picture, write_report
from .path_shapes import explore_path_shapes
from .pins import observed_names
from .recording import ListLengthChanged, PythonValueOut
from .runtime.signature import RegionSignature
from .shape_deps import shapes_follow_shapes
from .sizes import edge_inputs, fix_sizes, resized_variants, symbol_sizes
from .topk_order import UNSORTED_HINT

__all__ = ["ConvertOptions", "ConversionResult", "StepFailed", "TimedOut", "convert", "STEPS", "Progress"]

# on_progress(step, detail, done, total): what a step is working on, e.g.
# ("export", "region gate_L42 (forward L42-44)", 3, 12); the CLI draws it.
Progress = Callable[[str, str, int, int], None]


def _quiet(step: str, detail: str, done: int, total: int) -> None:
    return None


class ConvertOptions:
    __slots__ = ("model_file", "out", "backend", "check", "model", "inputs", "seed", "dynamic", "fixed_sizes",
                 "target", "fuse", "speculate", "tune", "jobs", "timeout", "source", "compile_all",
                 "dump_after")

    def __init__(self, model_file: str, out: str, backend: str = "onnxruntime", check: int = 50,
                 model: str | None = None, inputs: list[str] | None = None, seed: int = 0,
                 dynamic: list[str] | None = None):
        self.model_file, self.out, self.backend, self.check = model_file, out, backend, check
        self.model, self.inputs, self.seed, self.dynamic = model, inputs, seed, dynamic
        self.fixed_sizes: dict[str, int] = {}  # convert for these sizes of the dynamic symbols only
        self.target: str | None = None  # TVM target (JSON); default: this machine's CPU
        # onnxruntime runs decisions and loops inside graphs where it can: "measured" keeps each such graph
        # where it is faster than the host, "all" wherever it is correct (deterministic), "none" nowhere.
        self.fuse = "measured"
        # onnxruntime: where one path covers at least 95% of the natural inputs, run it first as one graph and
        # keep its answer where its decisions agree (speculate.py). Off by default: a miss costs that graph.
        self.speculate = False
        self.tune = None  # backends.tvm_tune.TuneSettings: MetaSchedule for TVM regions
        self.jobs = usable_cores()  # processes compiling regions at once, where the backend is slow to compile
        self.timeout: float | None = None  # seconds the whole conversion may take (main thread only)
        # The model file's path as the package records it (default: the file converted). A Ray task converts a
        # copy of the driver's folder and records the driver's path, so the package does not depend on the node.
        self.source: str | None = None
        # How regions are compiled: compile_pool.compile_all (worker processes here) or, with `--executor ray`,
        # executors.ray_compile.RayCompiler.compile_all (Ray tasks); the same signature and results.
        self.compile_all = compile_all
        self.dump_after: str | None = None  # a step or rewrite pass: stop after it, the program in result.dump

    def make_backend(self, name: str | None = None):
        """The backend `name` (default: the one chosen; None for auto), with the options it takes."""
        name = name or self.backend
        if name == AUTO:
            return None
        return get_backend(name, **{option: getattr(self, option) for option in backend_class(name).options})


class ConversionResult:
    """What a successful conversion produced, for the CLI summary and the report."""

    def __init__(self):
        self.spec = None
        self.program = None
        self.exploration = None
        self.forced_runs = 0
        self.signatures: list[RegionSignature] = []  # the package's regions, as the manifest records them
        self.fallbacks: list[str] = []  # regions the chosen backend could not compile
        self.fused: list[str] = []  # host code run as one graph, and why other code stayed in the host
        self.unfused: list[str] = []
        self.exported: list[RegionSignature] = []  # every region export compiled, before fusion inlined some
        self.speculation = ""  # with --speculate: the speculative region made, or why none
        self.unsorted_topk: list[str] = []  # regions whose topk(sorted=False) the package computes sorted
        self.natural_inputs: list[tuple] = []
        self.pins: dict = {}  # region -> pins.RegionPins: the shape tests that fix dims on the way to it
        self.observed_dynamic: list[dict] = []  # input dims the samples varied, made dynamic (not declared)
        self.tuning: list[dict] = []  # MetaSchedule statistics per TVM region
        self.artifacts = 0
        self.compile_seconds: dict[str, float] = {}  # per artifact: its compiler's time (tuning included)
        self.check = None
        self.timings: dict[str, float] = {}
        self.workdir = ""
        self.out = ""
        self.progress: Progress = _quiet
        self.digest = ""  # the package digest: SHA-256 of manifest.json, which lists every file's SHA-256
        self.dump = ""  # with ConvertOptions.dump_after: the program after that step, as text (no package)


class TimedOut(BaseException):
    """The conversion ran past `ConvertOptions.timeout`. A BaseException, like KeyboardInterrupt, so that
    the model's own `except Exception` cannot swallow it."""

    def __init__(self, seconds: float):
        super().__init__(f"stopped after {seconds:g} s (--timeout {seconds:g}); the model may loop forever "
                         "(a `while True:` with no reachable break) or need a longer --timeout")


class ModelExited(Exception):
    """The model's own code called sys.exit() (or raised SystemExit) while dycl ran it."""

    def __init__(self, code):
        super().__init__(f"the model's code called sys.exit({code!r}); dycl runs get_model(), get_inputs(), "
                         "sample_inputs() and forward (every path, forced ones too) while converting, so none "
                         "of them may exit")


class StepFailed(Exception):
    def __init__(self, step: str, error: BaseException):
        self.step, self.error = step, error
        super().__init__(f"failed in step {step}: {error}")


# -- steps -------------------------------------------------------------------


def step_load(opts: ConvertOptions, st: ConversionResult) -> None:
    st.spec = load_model_file(opts.model_file, opts.model, opts.inputs, opts.dynamic)
    if opts.source:
        st.spec.path = opts.source
    if opts.fixed_sizes:
        fix_sizes(st.spec, opts.fixed_sizes)
    unknown = set(st.spec.dynamic) - set(st.spec.params)
    if unknown:
        raise ModelFileError(f"DYNAMIC names {', '.join(sorted(unknown))}, which forward does not take "
                             f"(its inputs: {', '.join(st.spec.params)})")
    # Dims the samples vary become dynamic too, rather than failing the final check.
    st.observed_dynamic = observe_dynamic(st.spec, st.spec.sample_inputs(max(opts.check, 1), seed=opts.seed))


def step_rewrite(opts: ConvertOptions, st: ConversionResult) -> None:
    st.program = rewrite_model(st.spec.model, st.spec.inputs, on_pass=_pass_dumper(opts))


def _pass_dumper(opts: ConvertOptions):
    """Stop after the rewrite pass `opts.dump_after` names, if it names one."""
    if opts.dump_after not in PASS_NAMES:
        return None

    def on_pass(name: str, state) -> None:
        if name == opts.dump_after:
            raise DumpReached(name, f"# dycl --dump-after {name} (a pass of the rewrite)\n" + state.dump())
    return on_pass


@contextlib.contextmanager
def _exploration_errors(st: ConversionResult):
    """What running the rewritten program raises, as the diagnostics it stands for."""
    try:
        yield
    except PythonValueOut as exc:
        raise ConversionError([python_value_out(st.program, exc)]) from None
    except ListLengthChanged as exc:
        raise ConversionError([list_length_changed(st.program, exc)]) from None
    except (ValueError, RewriteMismatch) as exc:
        _length_check(st, exc)
        raise


def step_explore(opts: ConvertOptions, st: ConversionResult) -> None:
    """Run the rewritten program on the example and sample inputs, forcing every decision both ways."""
    with _exploration_errors(st):
        _explore(opts, st)


def step_fold_shapes(opts: ConvertOptions, st: ConversionResult) -> None:
    """Shape decisions that went one way on every run fold like static config: the program is rewritten
    with them fixed, generated and explored again. Then every region must have been reached, at every
    size the program ran at."""
    with _exploration_errors(st):
        constant = constant_shape_decisions(st)
        if constant:
            st.program = rewrite_model(st.spec.model, st.spec.inputs, fixed=constant)
            step_generate(opts, st)
            _explore(opts, st)
    unreached = [r for r in st.program.regions if not st.exploration.records[r.name].examples]
    if unreached:
        raise ConversionError(unreached_code(unreached))
    one_size = one_size_code(st.program.regions, st.exploration, st.pins,
                             lambda region, record: shapes_follow_shapes(region, record, st.regions_module, st.spec.model))
    if one_size:
        raise ConversionError(one_size)


def _length_check(st: ConversionResult, exc: BaseException) -> None:
    """A sample input that fails a host length check (a zip shorter than its unrolled loop) is a diagnostic."""
    diagnostic = length_check_failed(st.program, exc)
    if diagnostic is not None:
        raise ConversionError([diagnostic]) from None


def _explore(opts: ConvertOptions, st: ConversionResult) -> None:
    from .runtime import import_host

    scratch = os.path.join(st.workdir, ".scratch")
    st.regions_module = import_regions(os.path.join(st.workdir, "regions_torch.py"), st.program.globals)
    host = import_host(os.path.join(scratch, "host_explore.py"))
    inputs = [st.spec.inputs] + st.spec.sample_inputs(max(opts.check, 1), seed=opts.seed)
    st.natural_inputs = inputs
    resized = resized_variants(st.spec)
    st.exploration, st.forced_runs = explore(st.spec.model, host, st.regions_module,
                                             [r.name for r in st.program.regions], inputs,
                                             region_loops=region_loops(st.program), resized=resized,
                                             symbols_of=lambda inp: symbol_sizes(st.spec, inp),
                                             on_run=lambda detail, done, total: st.progress("explore", detail,
                                                                                            done, total),
                                             loop_origins={lp.decision: lp.origin for lp in st.program.loops},
                                             observed=observed_names(st.pins))
    st.forced_runs += explore_path_shapes(st.exploration, st.program, inputs, resized)


def step_speculate(opts: ConvertOptions, st: ConversionResult) -> None:
    """With --speculate: start the host with the dominant path as one graph, where it applies (speculate.py)."""
    from .speculate import speculate

    if not opts.speculate:
        return
    fusing = fusing_backend(opts.backend)
    if fusing is None:
        st.speculation = f"not speculated: {opts.backend} runs no regions on onnxruntime"
        return
    backends = {fusing: opts.make_backend(fusing)}
    st.speculation = speculate(st, backends[fusing], lambda name: backends.setdefault(name, opts.make_backend(name)))
    st.artifacts = len({s.artifact for s in st.signatures if s.artifact})
    write_host(st)


def step_package(opts: ConvertOptions, st: ConversionResult) -> None:
    shutil.rmtree(os.path.join(st.workdir, ".scratch"), ignore_errors=True)
    if backend_class(opts.backend).consumes != TORCH_REGIONS:
        os.remove(os.path.join(st.workdir, "regions_torch.py"))
    write_picture(st.workdir, st.program)
    # What the regions' code was compiled for (one target: only TVM's code depends on the machine).
    targets = (opts.make_backend(name).target for name in sorted({s.backend for s in st.signatures}))
    write_manifest(st.workdir, st, opts.backend, next((t for t in targets if t is not None), None), __version__)


def step_check(opts: ConvertOptions, st: ConversionResult) -> None:
    st.check = check_package(st.workdir, st.spec, st.exploration, opts.check, opts.seed, edges=edge_inputs(st.spec),
                             progress=lambda done, total: st.progress("check", f"sample {done + 1} of {total}",
                                                                      done, total))
    write_report(st.workdir, st)
    if not st.check.passed:
        hint = UNSORTED_HINT.format(regions=", ".join(st.unsorted_topk)) if st.unsorted_topk else ""
        raise RuntimeError("\n".join(filter(None, [st.check.failure, hint])))


STEPS: list[tuple[str, Callable]] = [
    ("load", step_load),
    ("rewrite", step_rewrite),
    ("generate", step_generate),
    ("explore", step_explore),
    ("fold_shapes", step_fold_shapes),
    ("export", step_export),
    ("fuse", step_fuse),
    ("speculate", step_speculate),
    ("package", step_package),
    ("check", step_check),
]


def convert(opts: ConvertOptions, on_step: Callable[[str, str], None] | None = None,
            on_progress: Progress | None = None) -> ConversionResult:
    """Run every step; on success the package is at `opts.out`, otherwise nothing is left behind.

    Raises OutputError, before any work, when `opts.out` is neither missing, empty nor a dycl package.
    `on_step(step, "start" | "done")` brackets each step; `on_progress` says what inside it is running.
    With `opts.dump_after`, returns after that step with the program in `result.dump` and no package.
    """
    st = ConversionResult()
    st.progress = on_progress or _quiet
    out = check_output(opts.out)
    st.workdir, created = make_workdir(out)
    try:
        with _one_torch_thread(), _deadline(opts.timeout):
            _run_steps(opts, st, on_step)
        replace_dir(st.workdir, out)
        st.out = out
        return st
    except DumpReached as stop:
        st.dump = stop.text
        return st
    finally:
        if os.path.exists(st.workdir):
            shutil.rmtree(st.workdir, ignore_errors=True)
        if not st.out:
            remove_created(out, created)


@contextlib.contextmanager
def _deadline(seconds: float | None):
    """Raise TimedOut in this (the main) thread once `seconds` have passed."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        raise ValueError("a conversion timeout works only in the main thread")

    def expire(signum, frame):
        raise TimedOut(seconds)

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


@contextlib.contextmanager
def _one_torch_thread():
    """Torch runs on one thread while converting, as the regions and the check do.

    Exploration and the check run the model eagerly hundreds of times on small
    tensors, where torch's thread pool only adds synchronisation: on two busy
    cores a GRU decoder's exploration spent 92% of its time waiting in the
    pool (20 s against 1.6 s on one thread).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run_steps(opts: ConvertOptions, st: ConversionResult, on_step) -> None:
    for name, step in STEPS:
        if on_step:
            on_step(name, "start")
        start = time.perf_counter()
        try:
            step(opts, st)
        except (ConversionError, KeyboardInterrupt, DumpReached):
            raise
        except SystemExit as exc:  # else `dycl convert` would end with the model's exit code, saying nothing
            raise StepFailed(name, ModelExited(exc.code)) from None
        except (Exception, TimedOut) as exc:
            raise StepFailed(name, exc) from exc
        st.timings[name] = time.perf_counter() - start
        if on_step:
            on_step(name, "done")
        if opts.dump_after == name:
            raise DumpReached(name, step_dump(name, st))
