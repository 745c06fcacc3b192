"""onnxruntime: regions optimised at conversion time, run with low-latency options.

Each artifact is a graph `x.onnx` and its weights beside it in `x.weights`.
Weights inside the graph were read three times over at load (file, parsed
model, session): BlockDrop-110's fused graph, 6.7 MB of weights, took 31 MB
to load, and 14 MB less with its weights apart.
"""
from __future__ import annotations

import os

from .base import Backend, RegionFn

__all__ = ["OnnxRuntimeBackend"]


def _weights(artifact_path: str) -> str:
    return os.path.splitext(artifact_path)[0] + ".weights"


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
        so.log_severity_level = 3
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

    @classmethod
    def files(cls, artifact_path: str) -> list[str]:
        return [p for p in (artifact_path, _weights(artifact_path)) if os.path.exists(p)]

    def load(self, artifact_path: str, package_dir: str) -> RegionFn:
        import onnxruntime as ort

        # Layout optimisations (NCHWc) depend on the CPU: applied at load time.
        session = ort.InferenceSession(artifact_path, self._options(ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                                       providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        outputs = [o.name for o in session.get_outputs()]
        # The binding under InferenceSession.run: skips a per-call re-validation of the
        # feed names, which are fixed here (a few microseconds per region call).
        run = getattr(getattr(session, "_sess", None), "run", None)
        if run is None:
            run = session.run

        if len(names) == 1:  # a one-entry dict: about 40 ns, where dict(zip(...)) takes 250
            (name,) = names

            def call(arrays):
                return run(outputs, {name: arrays[0]}, None)
        else:
            def call(arrays):
                return run(outputs, dict(zip(names, arrays)), None)

        return call
