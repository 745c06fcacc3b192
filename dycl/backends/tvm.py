"""Apache TVM (Relax): each region compiled to a shared library, run by the Relax VM.

Compile: `from_onnx` (symbolic dims kept) → `tvm.compile` with the default
Relax pipeline for the target (fusion, then legalisation) → `export_library`.
With tuning (`--tune`), the fused kernels with static shapes are scheduled by
MetaSchedule first (see tvm_tune).
The pipeline must be passed to `tvm.compile` as `relax_pipeline`: applying it
by hand and then compiling runs it twice, which crashes TVM 0.27 at run time.

Weights: `split` lifts a region's weights out of its graph as inputs (see
tvm_lift), so that regions of the same shape with different weights compile to
one library; each region's artifact is then its weights file (tvm_params),
which names the library. Computations on the weights alone (a transposed
matrix, a bias reshaped to broadcast, a batch norm's scale) are lifted by
Relax's LiftTransformParams into `main_transform_params`, run once at load, so
what constant folding did at compile time is done then. A region with nothing to
lift has the library itself as its artifact.

Run: arrays cross by DLPack (no copy) both ways where numpy's buffer is
64-byte aligned (TVM's kernels assume it; an unaligned buffer crashes them),
and are copied into TVM memory otherwise. TVM may return an output
that is one of its inputs (a pass-through); such outputs are copied so that
the host never holds an alias of an array it passes on.
"""
from __future__ import annotations

import json
import os

from .base import Backend, RegionFn, TargetMismatch
from .tvm_params import library_of, read_weights, write_weights

__all__ = ["TvmBackend", "default_target", "TargetMismatch"]

_ALIGNMENT = 64


def use_threads(n: int) -> None:
    """Size TVM's process-wide thread pool to `n` threads without pinning the calling thread.

    Configuring the pool binds the calling thread to one core (TVM's "big cores" affinity). Left
    so, `dycl.load` pinned the user's thread, and every thread and process it starts later, to
    core 0: two compile workers started after it shared one core.
    """
    import tvm

    mask = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    tvm.get_global_func("runtime.config_threadpool")(1, n)  # 1: all (big) cores, `n` threads
    if mask is not None:
        os.sched_setaffinity(0, mask)


def default_target() -> dict:
    import tvm

    return {"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu()}


def _target(spec: str | dict | None):
    import tvm

    if spec is None:
        return tvm.target.Target(default_target())
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError:
            raise ValueError(f"--target {spec!r}: give a JSON target such as "
                             '\'{"kind": "llvm", "mcpu": "skylake"}\' (TVM 0.27 rejects "llvm -mcpu=..." strings)') from None
    return tvm.target.Target(spec)


class TvmBackend(Backend):
    name = "tvm"
    suffix = ".so"
    weights_suffix = ".safetensors"
    assumes_finite = True  # TVM's simplifier may assume no NaN or infinities (see tvm_ieee)
    fallback = "onnxruntime"  # at 0 rows, or where TVM cannot compile a region
    options = ("target", "tune")

    def __init__(self, threads: int = 1, target: str | dict | None = None, tune=None):
        super().__init__(threads)
        self.target_spec = target
        self.tune = tune  # tvm_tune.TuneSettings, or None: the default schedules
        self._vms: dict[tuple, object] = {}  # library file (path and stat) -> its Relax VM

    @property
    def target(self) -> dict:
        """The target as recorded in the manifest."""
        if isinstance(self.target_spec, dict):
            return dict(self.target_spec)
        return json.loads(self.target_spec) if self.target_spec else default_target()

    def compile(self, onnx_path: str, artifact_path: str) -> None:
        import onnx
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        from ..torch_nan import TVM_ONLY, repair
        from . import tvm_empty_axis, tvm_ieee
        from .lstm_lowering import lower_lstm
        from .tvm_lift import NUM_INPUT

        target = _target(self.target_spec)
        model = onnx.load(onnx_path)
        num_input = {p.key: p.value for p in model.metadata_props}.get(NUM_INPUT)
        repair(model, TVM_ONLY)  # TVM's max/min/relu/clip/topk drop NaN where torch keeps it
        tvm_ieee.repair(model)  # its max/min start at the largest finite float; it folds v - v and v * 0 to 0
        tvm_empty_axis.repair(model)  # its scans read and write outside their buffers on an empty axis
        lower_lstm(model)  # TVM's ONNX front end has no LSTM
        mod = from_onnx(model, keep_params_in_input=False)
        if num_input is not None and int(num_input) < len(mod["main"].params):
            # The weights' own computations move to main_transform_params, run once at load.
            mod["main"] = mod["main"].with_attr("num_input", int(num_input))
            mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                            relax.transform.CanonicalizeBindings(),
                                            relax.transform.LiftTransformParams()])(mod)
        if self.tune is not None and self.tune.trials > 0:
            from .tvm_tune import tune

            # MetaSchedule plans for `num-cores` threads, the number the regions will run with.
            spec = {**self.target, "num-cores": self.threads}
            target = tvm.target.Target(spec)
            mod = tune(mod, target, spec, self.tune, os.path.splitext(os.path.basename(artifact_path))[0])
        executable = tvm.compile(mod, target=target, relax_pipeline=relax.get_default_pipeline(target))
        executable.export_library(artifact_path)

    def split(self, onnx_path: str, graph_path: str):
        import onnx

        from .tvm_lift import lift_weights

        graph, weights = lift_weights(onnx.load(onnx_path))
        onnx.save(graph, graph_path)
        return graph_path, weights

    def bind(self, weights, library: str, artifact_path: str) -> None:
        write_weights(artifact_path, weights, library)

    @classmethod
    def files(cls, artifact_path: str) -> list[str]:
        if artifact_path.endswith(cls.weights_suffix) and os.path.exists(artifact_path):
            return [artifact_path, library_of(artifact_path)]  # the library even if missing: verify says so
        return super().files(artifact_path)

    def warm_up(self) -> None:
        import onnx  # noqa: F401
        from tvm import relax  # noqa: F401
        from tvm.relax.frontend.onnx import from_onnx  # noqa: F401

    def worker_options(self) -> dict | None:
        # LLVM takes 0.3-3 s per region: worth a worker process. Tuning is not: it times candidates
        # on the whole machine, and keeps its records under one lock.
        if self.tune is not None and self.tune.trials > 0:
            return None
        return {"threads": self.threads, "target": self.target_spec}

    def check_target(self, target: dict) -> None:
        """Refuse a package built for another CPU (its code may not run here)."""
        here = default_target()
        if target.get("kind") == "llvm" and target.get("mcpu") not in (None, here["mcpu"]):
            raise TargetMismatch(f"this package was compiled by TVM for CPU '{target['mcpu']}', but this machine is "
                                 f"'{here['mcpu']}'; reconvert it here, or with --target for this CPU")

    def load(self, artifact_path: str, package_dir: str) -> RegionFn:
        import numpy as np
        import tvm
        import tvm_ffi
        from tvm import relax

        use_threads(self.threads)
        if artifact_path.endswith(self.weights_suffix):
            weights, library = read_weights(artifact_path)
        else:
            weights, library = None, artifact_path
        vm = self._vm(tvm, relax, library)
        main = vm["main"]
        bound = []
        if weights is not None:
            arrays = [tvm.runtime.tensor(a) for a in weights.arrays]
            bound = list(vm["main_transform_params"]([arrays[u] for u in weights.uses]))
        from_dlpack = tvm_ffi.from_dlpack
        to_numpy = np.from_dlpack

        def tensor(a):
            # TVM's kernels assume 64-byte aligned buffers; numpy only promises 16. Zero-copy when
            # the array happens to be aligned, one copy into TVM's own memory otherwise. An empty
            # array always goes through TVM: numpy gives it strides (0, 0), which TVM rejects.
            if a.ctypes.data % _ALIGNMENT == 0 and a.flags.c_contiguous and a.size:
                return from_dlpack(a)
            return tvm.runtime.tensor(a if a.flags.c_contiguous else a.copy(order="C"))

        def call(arrays):
            result = main(*[tensor(a) for a in arrays], *bound)
            outs = [result] if isinstance(result, tvm.runtime.Tensor) else list(result)
            arrays_out = [to_numpy(o) for o in outs]
            return [a.copy() if any(np.may_share_memory(a, i) for i in arrays) else a for a in arrays_out]

        return call

    def _vm(self, tvm, relax, library: str):
        """One Relax VM per library (as the file is now): regions that share a library share its VM."""
        stat = os.stat(library)
        key = (os.path.abspath(library), stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if key not in self._vms:
            self._vms[key] = relax.VirtualMachine(_load_library(tvm, library), tvm.cpu())
        return self._vms[key]


def _load_library(tvm, path: str):
    """Load the library at `path` through a path of its own.

    dlopen hands back a library already loaded from the same path, even when the file was replaced
    since (a package reconverted into the same folder, loaded again in one process), which ran the
    old regions' code. A private copy, removed once loaded, is always the file as it is now.
    """
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="dycl-tvm-")
    try:
        private = os.path.join(folder, os.path.basename(path))
        shutil.copyfile(path, private)
        return tvm.runtime.load_module(private)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
