"""onnxruntime: regions optimised at conversion time, run with low-latency options.

Each artifact is a graph `x.onnx` and its weights beside it in `x.weights`.
Weights inside the graph were read three times over at load (file, parsed
model, session): BlockDrop-110's fused graph, 6.7 MB of weights, took 31 MB
to load, and 14 MB less with its weights apart.

Where a graph holds convolutions across If borders, the artifact also has a
layout variant for the converting machine's CPU: `x.nchwc` (with
`x.nchwc.weights`), onnxruntime's level-ALL graph with blocked tensors
flowing across the borders (see ort_layout.py), and `x.nchwc.json`, the CPU
and onnxruntime it was made for. It is loaded, unoptimised, only on a
matching machine; anywhere else the portable graph is optimised at load.
"""
from __future__ import annotations

import json
import os
import platform
import warnings

from .base import Backend, RegionFn

__all__ = ["OnnxRuntimeBackend", "graph_to_run", "machine_key"]


def _weights(artifact_path: str) -> str:
    return os.path.splitext(artifact_path)[0] + ".weights"


def _layout(artifact_path: str) -> tuple[str, str, str]:
    """The layout variant's graph, weights and key files."""
    base = os.path.splitext(artifact_path)[0] + ".nchwc"
    return base, base + ".weights", base + ".json"


def machine_key() -> dict:
    """What onnxruntime's layout optimisations depend on here: its version, the architecture, the CPU's features."""
    import onnxruntime as ort

    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as features
    return {"onnxruntime": ort.__version__, "machine": platform.machine(),
            "cpu": sorted(name for name, present in features.items() if present)}


def graph_to_run(artifact_path: str) -> tuple[str, bool]:
    """The graph a session runs here, and whether onnxruntime optimises it at load: the layout variant made
    for this machine as it is, else the portable graph, optimised here (NCHWc layout depends on the CPU)."""
    graph, _, key = _layout(artifact_path)
    if os.path.exists(key):
        with open(key, encoding="utf-8") as fh:
            if json.load(fh) == machine_key():
                return graph, False
    return artifact_path, True


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"
    suffix = ".onnx"
    control_flow = True

    def _options(self, level):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = level
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 4  # errors reach the caller as exceptions; a speculative miss prints nothing
        return so

    def compile(self, onnx_path: str, artifact_path: str) -> None:
        """Run the portable graph optimisations once and save the result."""
        import onnxruntime as ort

        so = self._options(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        so.optimized_model_filepath = artifact_path
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                    os.path.basename(_weights(artifact_path)))
        so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        self._compile_layout(onnx_path, artifact_path)

    def _compile_layout(self, onnx_path: str, artifact_path: str) -> None:
        """Write the layout variant where blocked tensors can cross If borders (nothing where none can)."""
        import tempfile

        import onnx
        import onnxruntime as ort

        from .ort_layout import cross_borders

        compiled = onnx.load(artifact_path, load_external_data=False)
        if not any(node.op_type in ("If", "Loop", "Scan") for node in compiled.graph.node):
            return  # no borders: onnxruntime lays out a branch-free graph as well at load
        graph, weights, key = _layout(artifact_path)
        with tempfile.TemporaryDirectory(prefix="dycl-layout-") as tmp:
            so = self._options(ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
            so.optimized_model_filepath = os.path.join(tmp, "all.onnx")
            so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "all.weights")
            so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
            ort.InferenceSession(artifact_path, so, providers=["CPUExecutionProvider"])
            optimised = onnx.load(so.optimized_model_filepath)
        if not cross_borders(optimised, onnx.load(onnx_path)):
            return
        onnx.save(optimised, graph, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(weights), size_threshold=1024)
        os.chmod(weights, os.stat(artifact_path).st_mode & 0o777)
        with open(key, "w", encoding="utf-8") as fh:
            json.dump(machine_key(), fh, indent=1, sort_keys=True)

    @classmethod
    def files(cls, artifact_path: str) -> list[str]:
        return [p for p in (artifact_path, _weights(artifact_path), *_layout(artifact_path)) if os.path.exists(p)]

    def _session(self, graph: str, optimise: bool):
        import onnxruntime as ort

        level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimise else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(graph, self._options(level), providers=["CPUExecutionProvider"])
        # The binding under InferenceSession.run: skips a per-call re-validation of the
        # feed names, which are fixed here (a few microseconds per region call).
        run = getattr(getattr(session, "_sess", None), "run", None)
        return [i.name for i in session.get_inputs()], [o.name for o in session.get_outputs()], run or session.run

    def load(self, artifact_path: str, package_dir: str) -> RegionFn:
        graph, optimise = graph_to_run(artifact_path)
        names, outputs, run = self._session(graph, optimise)

        def portable(arrays, exc):
            """A layout variant that fails (a fused sum whose operands' shapes differ after all: onnxruntime
            checks) gives way to the portable graph, for good; the portable graph's own failure is the error."""
            nonlocal names, outputs, run, optimise
            if optimise:
                raise exc
            warnings.warn(f"{artifact_path}: the layout variant failed ({str(exc).splitlines()[0][:200]}); "
                          "running the portable graph from now on", RuntimeWarning, stacklevel=3)
            names, outputs, run = self._session(artifact_path, True)
            optimise = True
            return run(outputs, dict(zip(names, arrays)), None)

        if len(names) == 1:  # a one-entry dict: about 40 ns, where dict(zip(...)) takes 250
            (name,) = names

            def call(arrays):
                try:
                    return run(outputs, {name: arrays[0]}, None)
                except Exception as exc:  # noqa: BLE001 - onnxruntime's errors share no base class
                    return portable(arrays, exc)
        else:
            def call(arrays):
                try:
                    return run(outputs, dict(zip(names, arrays)), None)
                except Exception as exc:  # noqa: BLE001 - onnxruntime's errors share no base class
                    return portable(arrays, exc)

        return call
