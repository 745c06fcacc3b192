"""The conversion pipeline: an explicit ordered list of small steps over one state.

load → rewrite → generate → explore → fold_shapes → export → fuse → speculate →
package → check (`STEPS`; the rewrite runs its own passes, `rewrite.PASS_NAMES`). Each
step's failure is re-raised as `StepFailed` naming the step; the output
directory is written to a temporary folder and renamed into place only when
every step, the final check included, has passed. `ConvertOptions.dump_after`
stops after the step or rewrite pass it names, with the program as text in
`ConversionResult.dump` and no package written (dump_after.py).
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
from .backends import AUTO, BACKENDS, TORCH_REGIONS, artifact_files, backend_class, chosen_backends, get_backend
from .check import check_package
from .compile_pool import compile_all, usable_cores
from .dims import name_dims
from .dump_after import DumpReached, step_dump
from .explore import ListLengthChanged, PythonValueOut, explore
from .generate import step_generate, write_host, write_text
from .explore_diagnostics import list_length_changed, one_size_code, python_value_out, unreached_code
from .export import export_region, torch_region_info, verify_region
from .fold_shapes import constant_shape_decisions
from .shape_deps import shapes_follow_shapes
from .path_shapes import explore_path_shapes
from .modelfile import ModelFileError, load_model_file, observe_dynamic
from .outdir import check_output, make_workdir, remove_created, replace_dir
from .pins import observed_names
from .package import region_loops, write_manifest, write_picture, write_report
from .runtime.signature import GRAPH, INPUT, InputLeaf, OutputLeaf, Port, RegionSignature
from .runtime.verify import sha256_file
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


def step_explore(opts: ConvertOptions, st: ConversionResult) -> None:
    """Run the rewritten program on the example and sample inputs, forcing every decision both ways."""
    try:
        _explore(opts, st)
    except PythonValueOut as exc:
        raise ConversionError([python_value_out(st.program, exc)]) from None
    except ListLengthChanged as exc:
        raise ConversionError([list_length_changed(st.program, exc)]) from None


def step_fold_shapes(opts: ConvertOptions, st: ConversionResult) -> None:
    """Shape decisions that went one way on every run fold like static config: the program is rewritten
    with them fixed, generated and explored again. Then every region must have been reached, at every
    size the program ran at."""
    try:
        constant = constant_shape_decisions(st)
        if constant:
            st.program = rewrite_model(st.spec.model, st.spec.inputs, fixed=constant)
            step_generate(opts, st)
            _explore(opts, st)
    except PythonValueOut as exc:
        raise ConversionError([python_value_out(st.program, exc)]) from None
    except ListLengthChanged as exc:
        raise ConversionError([list_length_changed(st.program, exc)]) from None
    unreached = [r for r in st.program.regions if not st.exploration.records[r.name].examples]
    if unreached:
        raise ConversionError(unreached_code(unreached))
    one_size = one_size_code(st.program.regions, st.exploration, st.pins,
                             lambda region, record: shapes_follow_shapes(region, record, st.regions_module, st.spec.model))
    if one_size:
        raise ConversionError(one_size)


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


def step_export(opts: ConvertOptions, st: ConversionResult) -> None:
    auto = opts.backend == AUTO
    backend = opts.make_backend(backend_class(opts.backend).name)
    fallback = opts.make_backend(backend.fallback) if backend.fallback else None
    os.makedirs(os.path.join(st.workdir, "regions"), exist_ok=True)
    st.compile_seconds = {}
    tuned_before = len(opts.tune.stats) if opts.tune else 0
    st.signatures, st.fallbacks = [], []
    if backend.consumes == TORCH_REGIONS:  # regions run as written: nothing to export, compile or verify
        for region in st.program.regions:
            record = st.exploration.records[region.name]
            info = torch_region_info(record)
            artifact = backend.artifact(region.name) if info["graph_leaves"] else None
            if artifact:
                write_text(os.path.join(st.workdir, artifact), _json({"function": region.name,
                                                                      "in_specs": record.in_specs,
                                                                      "graph_leaves": info["graph_leaves"]}))
            st.signatures.append(_region_signature(region, record, info, artifact, _origin(region), backend.name))
        return
    exported = []
    total = len(st.program.regions)
    for k, region in enumerate(st.program.regions):
        record, fn, origin = st.exploration.records[region.name], getattr(st.regions_module, region.name), _origin(region)
        st.progress("export", f"exporting region {region.name} ({origin})", k, total)
        onnx_path = os.path.join(st.workdir, ".scratch", f"{region.name}.onnx")
        info = export_region(st.spec.model, fn, record, onnx_path, origin)
        if info.get("unsorted_topk"):
            st.unsorted_topk.append(f"{region.name} ({origin})")
        exported.append((region, record, fn, origin, onnx_path, info))
    artifacts = _Artifacts(st.workdir, st.compile_seconds, st.progress, opts.compile_all)
    artifacts.prepare(backend, [(r.name, path) for r, _, _, _, path, info in exported if info["graph_leaves"]], opts.jobs)
    for k, (region, record, fn, origin, onnx_path, info) in enumerate(exported):
        st.progress("export", f"verifying region {region.name} ({origin}) on {backend.name}", k, total)
        artifact, used = None, backend
        if info["graph_leaves"]:
            try:
                artifact = artifacts.get(backend, onnx_path, region.name)
            except Exception as exc:
                if fallback is None:
                    raise RuntimeError(f"{backend.name} cannot compile region {region.name} ({origin}): {exc}") from exc
                reason = (str(exc).strip().splitlines() or [""])[0] or type(exc).__name__
                if not auto:
                    st.fallbacks.append(f"{region.name} ({origin}): {reason}")
                used = fallback
                artifact = artifacts.get(fallback, onnx_path, region.name)
            try:  # TVM's simplifier may assume no NaN or infinities: checked on inputs that hold them
                run = used.load(os.path.join(st.workdir, artifact), st.workdir)
                verify_region(st.spec.model, fn, record, run, info, origin, nonfinite=used.assumes_finite)
            except Exception as exc:  # wrong or failing where the fallback may be right (TVM at 0 rows), or a
                # library TVM cannot load back (a constant with no elements: "Invalid DLTensor file format")
                if fallback is None or used is fallback:
                    raise
                if not auto:
                    st.fallbacks.append(f"{region.name} ({origin}): {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}")
                used = fallback
                artifact = artifacts.get(fallback, onnx_path, region.name)
                run = used.load(os.path.join(st.workdir, artifact), st.workdir)
                verify_region(st.spec.model, fn, record, run, info, origin, nonfinite=used.assumes_finite)
            if auto and used is backend:  # keep whichever compiler runs this region faster
                other = artifacts.get(fallback, onnx_path, region.name)
                other_run = fallback.load(os.path.join(st.workdir, other), st.workdir)
                example = next(iter(record.examples.values()))
                feeds = [example[i].numpy() for i in info["graph_inputs"]]
                if _region_time(other_run, feeds) <= _region_time(run, feeds):
                    artifact, used = other, fallback
                    verify_region(st.spec.model, fn, record, other_run, info, origin, nonfinite=used.assumes_finite)
        st.signatures.append(_region_signature(region, record, info, artifact, origin, used.name))
    st.tuning = opts.tune.stats[tuned_before:] if opts.tune else []
    used_artifacts = {s.artifact for s in st.signatures if s.artifact}
    kept = {path for artifact in used_artifacts for path in artifact_files(os.path.join(st.workdir, artifact))}
    # Measured by --backend auto, or failed verification, then not kept. A library stays while a kept
    # region's weights are bound to it, and goes once however many unused weights name it.
    unused = {path for artifact in artifacts.made() - used_artifacts
              for path in artifact_files(os.path.join(st.workdir, artifact))}
    for path in sorted(unused - kept):
        os.remove(path)
    st.artifacts = len(used_artifacts)
    st.exported = list(st.signatures)


def _origin(region) -> str:
    return f"{region.origin.func} {region.origin.lines}"


def _region_time(run, feeds, repeat: int = 30) -> float:
    """Median seconds of one call (after warm-up), for choosing a backend per region."""
    import statistics

    for _ in range(3):
        run(feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run(feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class _Artifacts:
    """One artifact per distinct graph and backend: identical regions share it, and so does a failure.

    Where the backend lifts weights out of the graphs (TVM), regions whose graphs differ only in their
    weights share one compiled library, and each region's artifact is its own weights file naming it.
    """

    def __init__(self, workdir: str, seconds: dict[str, float], progress: Progress = _quiet, compile=compile_all):
        self.workdir, self.seconds = workdir, seconds  # seconds: per compiled graph, its compiler's time
        self.progress = progress
        self.compile = compile
        self.done: dict[tuple[str, str], str | Exception] = {}  # (backend, ONNX hash) -> artifact or error
        self.libraries: dict[tuple[str, str], str | Exception] = {}  # (backend, graph hash) -> compiled graph
        self.hashes: dict[str, str] = {}  # file -> content hash: each file is read once

    def _hash(self, path: str) -> str:
        if path not in self.hashes:
            self.hashes[path] = sha256_file(path)
        return self.hashes[path]

    def prepare(self, backend, regions: list[tuple[str, str]], processes: int) -> None:
        """Compile the distinct graphs among `(region name, ONNX path)`, `processes` at a time."""
        pending: dict[tuple[str, str], tuple[str, object, tuple[str, str]]] = {}  # region key -> name, weights, graph key
        jobs: dict[tuple[str, str], tuple[str, str]] = {}  # graph key -> (compiled artifact, graph to compile)
        for name, onnx_path in regions:
            key = (backend.name, self._hash(onnx_path))
            if key in self.done or key in pending:
                continue
            graph, weights = backend.split(onnx_path, os.path.join(os.path.dirname(onnx_path), f"{name}.{backend.name}.onnx"))
            graph_key = (backend.name, self._hash(graph))
            if graph_key not in self.libraries:
                jobs.setdefault(graph_key, (backend.artifact(name), graph))
            pending[key] = (name, weights, graph_key)
        names = {os.path.join(self.workdir, a): os.path.basename(a) for a, _ in jobs.values()}

        def compiled(artifact: str, done: int) -> None:
            self.progress("export", f"compiled {names[artifact]} with {backend.name}", done, len(jobs))

        if jobs:
            self.progress("export", f"compiling {len(jobs)} graph(s) for {len(pending)} region(s) with {backend.name}",
                          0, len(jobs))
        results = self.compile(backend, {os.path.join(self.workdir, a): p for a, p in jobs.values()}, processes,
                              on_done=compiled)
        for graph_key, (library, _) in jobs.items():
            result = results[os.path.join(self.workdir, library)]
            if isinstance(result, Exception):
                self.libraries[graph_key] = result
            else:
                self.libraries[graph_key], self.seconds[library] = library, result
        for key, (name, weights, graph_key) in pending.items():
            library = self.libraries[graph_key]
            if weights is None or isinstance(library, Exception):
                self.done[key] = library
                continue
            artifact = backend.weights_artifact(name)
            backend.bind(weights, os.path.basename(library), os.path.join(self.workdir, artifact))
            self.done[key] = artifact

    def get(self, backend, onnx_path: str, name: str) -> str:
        """The artifact of this graph (compiled now if `prepare` did not); raises its compile error."""
        key = (backend.name, self._hash(onnx_path))
        if key not in self.done:
            self.prepare(backend, [(name, onnx_path)], 1)
        result = self.done[key]
        if isinstance(result, Exception):
            raise result
        return result

    def made(self) -> set[str]:
        return {a for a in self.done.values() if isinstance(a, str)}


def _fusing_backend(choice: str) -> str | None:
    """The backend whose graphs run fused host code: the first that `choice` puts regions on and that runs
    control flow (none: every decision stays in the host)."""
    return next((name for name in chosen_backends(choice) if BACKENDS[name].control_flow), None)


def step_fuse(opts: ConvertOptions, st: ConversionResult) -> None:
    """Run stretches of host code as one graph each (see fuse), where correct (and faster)."""
    import onnx

    from .explore import to_numpy
    from .fuse import called_regions, fuse_program
    from .fuse.trial import HostTrial, try_fusion
    from .package import signature

    fusing = _fusing_backend(opts.backend)
    if opts.fuse == "none" or fusing is None:
        return
    scratch = os.path.join(st.workdir, ".scratch")
    regions = {s.name: s for s in st.signatures}
    models = {name: onnx.load(os.path.join(scratch, f"{name}.onnx")) for name, s in regions.items() if s.artifact}
    fusions, st.unfused = fuse_program(st.program, signature(st.spec), regions, models, fusing)
    if not fusions:
        return
    fuser = opts.make_backend(fusing)
    backends = {fusing: fuser}
    inputs = [[to_numpy(v) for v in inp] for inp in st.natural_inputs]
    trial = HostTrial(st, lambda name: backends.setdefault(name, opts.make_backend(name)), inputs,
                      st.exploration.expected)
    for region in regions.values():
        trial.add(region)
    for k, fusion in enumerate(fusions):
        where = f"{fusion.origin.func} {fusion.origin.lines}"
        names = ", ".join(sig.name for _, sig in fusion.parts)
        st.progress("fuse", f"fusion trial {k + 1} of {len(fusions)}: {where} as region"
                    f"{'s' if len(fusion.parts) > 1 else ''} {names}", k,
                    len(fusions))
        try:
            for i, (model, sig) in enumerate(fusion.parts):
                onnx_path = os.path.join(scratch, f"{sig.name}.onnx")
                onnx.save(model, onnx_path)
                sig = sig.with_artifact(fuser.artifact(sig.name))
                fuser.compile(onnx_path, os.path.join(st.workdir, sig.artifact))
                fusion.parts[i] = (model, sig)
        except Exception as exc:  # the backend refuses the fused graph (INVALID_GRAPH): the host keeps the code
            st.unfused.append(f"{where}: {fuser.name} refused the graph: {(str(exc).strip().splitlines() or [''])[0]}")
            continue
        fused_program, why_not = try_fusion(trial, fusion, measure=opts.fuse == "measured")
        if why_not:
            st.unfused.append(f"{where}: {why_not}")
            continue
        st.program = fused_program
        for _, sig in fusion.parts:
            regions[sig.name] = sig
        taken = sorted({d.decision for d in fusion.decided.values()})
        first = f"decision{'s' if len(taken) > 1 else ''} {', '.join(taken)} taken in the host, one region per " \
            "arm: " if taken else ""
        st.fused.append(f"{where}: {first}" + "; ".join(f"region {sig.name} runs {', '.join(sig.fuses)}"
                                                  for _, sig in fusion.parts))
    used = set(called_regions(st.program.body))
    st.signatures = [s for name, s in regions.items() if name in used]
    artifacts = {s.artifact for s in st.signatures if s.artifact}
    kept = {path for artifact in artifacts for path in artifact_files(os.path.join(st.workdir, artifact))}
    for name in os.listdir(os.path.join(st.workdir, "regions")):
        if os.path.join(st.workdir, "regions", name) not in kept:
            os.remove(os.path.join(st.workdir, "regions", name))
    st.artifacts = len(artifacts)
    write_host(st)


def step_speculate(opts: ConvertOptions, st: ConversionResult) -> None:
    """With --speculate: start the host with the dominant path as one graph, where it applies (speculate.py)."""
    from .speculate import speculate

    if not opts.speculate:
        return
    fusing = _fusing_backend(opts.backend)
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


def _region_signature(region, record, info, artifact, origin, backend: str) -> RegionSignature:
    from .runtime.spec import count_leaves

    n_out = sum(count_leaves(s) for s in record.out_specs)
    graph_index = {leaf: k for k, leaf in enumerate(info["graph_leaves"])}
    dims = name_dims(record)
    example = next(iter(record.examples.values()))
    return RegionSignature(
        name=region.name,
        origin=origin,
        artifact=artifact,
        backend=backend,
        inputs=tuple(Port(n, s) for n, s in zip(region.inputs, record.in_specs)),
        outputs=tuple(Port(n, s) for n, s in zip(region.outputs, record.out_specs)),
        input_leaves=tuple(InputLeaf(str(t.numpy().dtype), tuple(dims[k])) for k, t in enumerate(example)),
        graph_inputs=tuple(info["graph_inputs"]),
        output_leaves=tuple(OutputLeaf(GRAPH, graph_index[i]) if i in graph_index
                            else OutputLeaf(INPUT, record.passthrough[i]) for i in range(n_out)),
        source_lines=(region.origin.first, region.origin.last),
    )


def _json(obj) -> str:
    import json

    return json.dumps(obj, indent=2, sort_keys=False) + "\n"


