"""onnxruntime: regions optimised at conversion time, run with low-latency options."""
from __future__ import annotations

from .base import Backend, RegionFn

__all__ = ["OnnxRuntimeBackend"]


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"
    suffix = ".onnx"

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
        ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])

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

        def call(arrays):
            return run(outputs, dict(zip(names, arrays)), None)

        return call
