"""What bench.py compares dycl with: the oracle, torch.compile, TorchScript → ONNX, memory.

- oracle: the exact path one input takes, traced as one static ONNX graph and
  run by onnxruntime — the best any split-and-compile approach can do. Inputs
  that take the same path (the same sequence of region calls) share one graph.
  The values the path's decisions read (`.item()`, `bool(t)`, ...) are outputs
  of that graph: any approach that takes the decisions must compute them. A
  plain trace turns them into constants, and onnxruntime then drops the work
  behind them (BranchyNet's side branches on the paths that do not exit
  there, SkipNet's gates): that graph is kept as `Oracle(decisions=False)`,
  "oracle without decision work" in the tables. `Oracle(nan_exact=True)` adds
  the repairs dycl makes where onnxruntime's NaN handling differs from torch's
  (argmax, max pools and reductions): what any approach exact on NaN pays.
- torch.compile (inductor) on the original model.
- TorchScript: torch.jit.script, exported to ONNX with If/Loop in the graph,
  run by onnxruntime, where that works.
- peak memory (max RSS) of a production process (load + run, torch blocked)
  and of an eager process running the same inputs.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnxruntime as ort
import torch

__all__ = ["Oracle", "compiled_model", "torchscript_session", "peak_memory_mb", "path_of", "raw_runner",
           "optimised_counts"]


def _session(model_bytes: bytes) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def _tensor_leaves(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensor_leaves(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensor_leaves(v)]
    return []


_DECIDING = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__")


class _Leaves(torch.nn.Module):
    """The model with its output flattened to tensors (Python values on the path are constants).

    With `decisions`, every tensor the path turns into a Python value is an output too.
    """

    def __init__(self, model, decisions: bool):
        super().__init__()
        self.model, self.decisions = model, decisions

    def forward(self, *inputs):
        if not self.decisions:
            return tuple(_tensor_leaves(self.model(*inputs)))
        read: list = []
        originals = {name: getattr(torch.Tensor, name) for name in _DECIDING}

        def reading(name):
            def method(tensor, *args, **kwargs):
                read.append(tensor)
                return originals[name](tensor, *args, **kwargs)
            return method

        try:
            for name in _DECIDING:
                setattr(torch.Tensor, name, reading(name))
            outputs = _tensor_leaves(self.model(*inputs))
        finally:
            for name, method in originals.items():
                setattr(torch.Tensor, name, method)
        return tuple(outputs) + tuple(read)


def path_of(net, args) -> tuple:
    """The sequence of regions one input runs through in a loaded package."""
    calls = []
    for name, region in vars(net.regions).items():
        fn = region.fn
        if fn is None or getattr(fn, "_dycl_traced", False):
            continue

        def traced(arrays, fn=fn, name=name):
            calls.append(name)
            return fn(arrays)

        traced._dycl_traced = True
        region.fn = traced
    try:
        net(*args)
    finally:
        for region in vars(net.regions).values():
            if getattr(region.fn, "_dycl_traced", False):
                region.fn = region.fn.__defaults__[0]
    return tuple(calls)


class Oracle:
    """One traced onnxruntime graph per distinct path, computing the values its decisions read.

    `nan_exact`: with dycl's repairs of the ops whose NaN handling differs from torch's (torch_nan: argmax,
    max reductions and pools, mean of nothing), as every correct package must have them.
    """

    def __init__(self, model, decisions: bool = True, nan_exact: bool = False):
        self.wrapper = _Leaves(model, decisions).eval()
        self.nan_exact = nan_exact
        self.sessions: dict[tuple, ort.InferenceSession | None] = {}
        self.graphs: dict[tuple, bytes] = {}  # each path's ONNX model

    def session(self, path: tuple, inputs: tuple):
        if path not in self.sessions:
            buf = io.BytesIO()
            try:
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(self.wrapper, inputs, buf, dynamo=False)
                self.graphs[path] = buf.getvalue()
                if self.nan_exact:
                    import onnx

                    from dycl.torch_nan import COMMON, repair

                    graph = onnx.load_from_string(self.graphs[path])
                    if repair(graph, COMMON):
                        self.graphs[path] = graph.SerializeToString()
                self.sessions[path] = _session(self.graphs[path])
            except Exception as exc:  # noqa: BLE001 - reported as "fails" in the table
                print(f"    oracle export failed: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
                self.sessions[path] = None
        return self.sessions[path]

    def runner(self, path: tuple, inputs: tuple):
        sess = self.session(path, inputs)
        if sess is None:
            return None
        return raw_runner(sess, [v.numpy() for v in inputs])


def raw_runner(sess: ort.InferenceSession, arrays: list):
    """A zero-argument call of `sess` on `arrays` through the binding dycl's onnxruntime backend uses.

    Like dycl's regions: the raw `_sess.run` with fixed feed and output names, a fresh feed dict per call.
    """
    names = [i.name for i in sess.get_inputs()]
    outputs = [o.name for o in sess.get_outputs()]
    run = getattr(getattr(sess, "_sess", None), "run", None) or sess.run
    return lambda: run(outputs, dict(zip(names, arrays)), None)


_COUNTED = {"If": "ifs", "ReorderInput": "reorders", "ReorderOutput": "reorders", "Identity": "identities"}


def _count_nodes(graph, counts: dict) -> None:
    for node in graph.node:
        key = _COUNTED.get(node.op_type)
        if key:
            counts[key] += 1
        for attr in node.attribute:
            if attr.type == attr.GRAPH:
                _count_nodes(attr.g, counts)
            for sub in attr.graphs:
                _count_nodes(sub, counts)


def optimised_counts(onnx_paths: list) -> dict[str, int]:
    """Ifs, layout reorders and Identities in the graphs onnxruntime runs, subgraphs included: a package's
    layout variant for this machine as it is, any other graph (a path or a model's bytes) optimised at level ALL."""
    import onnx

    from dycl.backends.onnxruntime import graph_to_run

    counts = {"ifs": 0, "reorders": 0, "identities": 0}
    with tempfile.TemporaryDirectory(prefix="dycl-opt-") as tmp:
        for k, path in enumerate(onnx_paths):
            if isinstance(path, str):
                graph, optimise = graph_to_run(path)
                if not optimise:
                    _count_nodes(onnx.load(graph, load_external_data=False).graph, counts)
                    continue
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.log_severity_level = 3
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.optimized_model_filepath = os.path.join(tmp, f"{k}.onnx")
            so.add_session_config_entry("session.optimized_model_external_initializers_file_name", f"{k}.weights")
            ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])  # a path or a model's bytes
            _count_nodes(onnx.load(so.optimized_model_filepath, load_external_data=False).graph, counts)
    return counts


def compiled_model(model):
    """torch.compile (inductor); the first call, timed by the caller, compiles."""
    return torch.compile(model)


def torchscript_session(model, inputs: tuple):
    """TorchScript → ONNX (If/Loop in the graph) → onnxruntime, or the reason it fails."""
    try:
        scripted = torch.jit.script(model)
        buf = io.BytesIO()
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(scripted, inputs, buf, dynamo=False)
        sess = _session(buf.getvalue())
        with torch.no_grad():
            expected = [t.numpy() for t in _tensor_leaves(model(*inputs))]
        got = sess.run(None, {i.name: v.numpy() for i, v in zip(sess.get_inputs(), inputs)})
        if len(got) != len(expected) or not all(np.allclose(g, e, atol=1e-4) for g, e in zip(got, expected)):
            return None, "exports, but gives different outputs"
        return sess, ""
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"


_PRODUCTION = """
import sys
sys.modules["torch"] = None
import numpy as np, dycl
net = dycl.load(sys.argv[1], threads=1)
data = np.load(sys.argv[2], allow_pickle=True)
for args in data:
    net(*args)
print(peak())
"""

_EAGER = """
import sys, importlib.util
import numpy as np, torch
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec)
sys.path.insert(0, __import__("os").path.dirname(sys.argv[1])); spec.loader.exec_module(m)
model = m.get_model()
data = np.load(sys.argv[2], allow_pickle=True)
with torch.no_grad():
    for args in data:
        model(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args])
print(peak())
"""

# VmHWM, not getrusage: Linux carries ru_maxrss across fork+exec, so a child of a
# large parent would report the parent's size.
_PEAK = """
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
"""


def peak_memory_mb(model_file: str, package: str, np_inputs: list) -> tuple[float, float]:
    """(production peak MB, eager peak MB), each in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "inputs.npy")
        arr = np.empty(len(np_inputs), dtype=object)
        arr[:] = [tuple(a) for a in np_inputs]
        np.save(data, arr, allow_pickle=True)
        out = []
        for code, target in ((_PRODUCTION, package), (_EAGER, model_file)):
            proc = subprocess.run([sys.executable, "-c", _PEAK + code, target, data], capture_output=True, text=True)
            out.append(int(proc.stdout.strip().splitlines()[-1]) / 1024 if proc.returncode == 0 else float("nan"))
    return out[0], out[1]


def first_call_seconds(fn, args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start
