"""The export step: every region exported to ONNX, compiled and verified, on the backend chosen.

One artifact per distinct graph and backend (`_Artifacts`); a region the backend cannot compile or
gets wrong falls back to the backend's fallback, and `--backend auto` keeps whichever of the two runs
each region faster (`_region_time`). Each region's `RegionSignature` is what the manifest records.
With the torch backend the regions run as written: nothing is exported, compiled or verified.
"""
from __future__ import annotations

import os
import time
from typing import Callable

from .backends import AUTO, TORCH_REGIONS, artifact_files, backend_class
from .dims import name_dims
from .export import export_region, torch_region_info, verify_region
from .generate import write_text
from .runtime.signature import GRAPH, INPUT, InputLeaf, OutputLeaf, Port, RegionSignature
from .runtime.verify import sha256_file

__all__ = ["step_export"]


def step_export(opts, st) -> None:
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

    def __init__(self, workdir: str, seconds: dict[str, float], progress: Callable[[str, str, int, int], None],
                 compile):
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
