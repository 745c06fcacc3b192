"""Unsupported code is reported like a compiler does, all at once, and nothing is written."""
import os
import subprocess
import sys

import pytest
import torch
from torch._higher_order_ops import while_loop

from conftest import MODELS, ROOT
from dycl.modelfile import load_model_file
from rewrite import ConversionError, rewrite_model

BAD = os.path.join(MODELS, "bad_constructs.py")

EXPECTED = """\
tests/models/bad_constructs.py:14:9: error: `global` in forward [global-state]
            global STEPS
            ^
  Explanation: a compiled package cannot read or write Python globals at run time
  Hint: pass the value as an input or store it on the model as a constant

tests/models/bad_constructs.py:15:9: error: `with` block in forward [with-block]
            with open("log.txt") as fh:
            ^
  Explanation: only `torch.no_grad()` / `torch.inference_mode()` contexts can be dropped safely
  Hint: move the context manager outside the model

tests/models/bad_constructs.py:17:25: error: loop over a value known only at run time [dynamic-loop]
            for row, col in zip(x, x.t()):
                            ^
  Explanation: a loop's items must be fixed by the model (a ModuleList, a ModuleDict, a zip with one of them), a range of integers, or the rows of one tensor or list; zip, enumerate and dict views of run-time values only have no index the host can step
  Hint: loop over `range(len(x))` and index each value

tests/models/bad_constructs.py:19:9: error: `try` around tensor code [try-block]
            try:
            ^
  Explanation: exceptions raised inside compiled regions cannot be caught by the host
  Hint: remove the try/except or handle the error outside the model

4 errors: the model cannot be converted as written."""


def test_every_unsupported_construct_is_reported_together(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(BAD)
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert [d.kind for d in info.value.diagnostics] == ["global-state", "with-block", "dynamic-loop", "try-block"]
    assert info.value.format() == EXPECTED


def test_cli_prints_diagnostics_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "bad"
    proc = subprocess.run([sys.executable, "-m", "dycl.cli", "convert", "tests/models/bad_constructs.py",
                           "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert EXPECTED in proc.stderr
    assert not out.exists()
    assert os.listdir(tmp_path) == []  # no temporary folder left either


def test_module_key_matching_no_key_is_reported(tmp_path, monkeypatch):
    src = tmp_path / "dyn_index.py"
    src.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.experts = nn.ModuleDict({'a': nn.Linear(4, 4), 'b': nn.Linear(4, 4)})\n\n"
        "    def forward(self, x):\n"
        "        k = int(x.argmax().item()) % 2\n"
        "        return self.experts[f'expert_{k}'](x)\n\n\n"
        "def get_model():\n    return M()\n\n\n"
        "def get_inputs():\n    return (torch.randn(1, 4),)\n")
    monkeypatch.chdir(tmp_path)
    spec = load_model_file(str(src))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    text = info.value.format()
    assert text.startswith("dyn_index.py:12:16: error: module chosen by a run-time key that matches none of "
                           "the container's keys [dynamic-module]")
    assert "Hint: index with an int (`self.experts[k]`) or a key spelt `f\"name_{k}\"`" in text


def test_while_true_without_a_reachable_break_is_reported(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(os.path.join(MODELS, "endless_loop.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == """\
tests/models/endless_loop.py:14:9: error: loop that never ends [endless-loop]
            while True:
            ^
  Explanation: the loop condition is always true and no `break`, `return` or `raise` in its body can be reached, \
so forward never returns
  Hint: add a reachable `break`, or bound the loop (`for _ in range(max_steps):`)

1 error: the model cannot be converted as written."""


def test_loop_that_does_not_end_stops_exploration_at_the_loop(monkeypatch, tmp_path):
    import dycl.recording
    from dycl.convert import ConvertOptions, convert

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(dycl.recording, "MAX_ITERATIONS", 1000)
    opts = ConvertOptions(os.path.join(MODELS, "unending_loop.py"), str(tmp_path / "out"), check=2)
    with pytest.raises(ConversionError) as info:
        convert(opts)
    assert info.value.format() == """\
tests/models/unending_loop.py:9:15: error: loop that does not end [endless-loop]
            while x.sum() > -1:
                  ^
  Explanation: exploration ran this loop on the example and it did not end after 1000 iterations; \
a package would hang the same way
  Hint: make sure the loop's condition changes, or bound it (`for _ in range(max_steps):` with a `break`)

1 error: the model cannot be converted as written."""
    assert os.listdir(tmp_path) == []


# Constructs that needed Python inside a traced region, or state a package cannot keep: each was
# an exit-1 crash in the exporter or a numeric mismatch before it was a diagnostic.
RUNTIME_PYTHON = [
    ("bad_comprehension", """\
tests/models/bad_comprehension.py:15:37: error: comprehension filtered by a run-time value [comprehension-branch]
            rows = [r * 2 for r in x if r.sum() > 0]
                                        ^
  Explanation: the filter runs in Python while the region is traced, so the graph would keep the elements chosen at export
  Hint: write the loop out with an `if` statement, or mask with torch.where

1 error: the model cannot be converted as written."""),
    ("bad_lambda", """\
tests/models/bad_lambda.py:15:32: error: lambda that branches on a run-time value [lambda-branch]
            f = lambda t: t * 2 if t.sum() > 0 else t - 1
                                   ^
  Explanation: a lambda's body is traced into one graph, which keeps only the branch taken at export
  Hint: write the branch as an `if` statement in forward (or in a method)

1 error: the model cannot be converted as written."""),
    ("bad_getattr", """\
tests/models/bad_getattr.py:16:30: error: attribute of the model chosen by a run-time name [dynamic-attribute]
            return getattr(self, name)(x)
                                 ^
  Explanation: each compiled region calls fixed modules; this name is only known at run time
  Hint: choose with if/else (`y = self.a(x) if c else self.b(x)`)

1 error: the model cannot be converted as written."""),
    ("bad_numpy", """\
tests/models/bad_numpy.py:15:16: error: tensor converted to a NumPy array in forward [numpy-in-forward]
            return x.detach().numpy() * 2
                   ^
  Explanation: compiled regions compute tensors only; a NumPy array would be a constant of the graph
  Hint: keep the computation in torch (`torch.*` ops on the tensor)

1 error: the model cannot be converted as written."""),
    ("bad_inplace", """\
tests/models/bad_inplace.py:16:9: error: forward changes its input `x` in place [input-mutation]
            x += 1
            ^
  Explanation: the package works on a copy of each input, so the caller would not see the change
  Hint: compute into a new tensor (`x = x + ...`) instead

tests/models/bad_inplace.py:17:9: error: forward changes its input `x` in place [input-mutation]
            x[0] = 0
            ^
  Explanation: the package works on a copy of each input, so the caller would not see the change
  Hint: compute into a new tensor (`x = x + ...`) instead

tests/models/bad_inplace.py:18:9: error: forward updates the model's state in place [module-state]
            self.count += 1
            ^
  Explanation: the compiled package has no mutable model state
  Hint: keep the value in a local variable and return it

tests/models/bad_inplace.py:19:9: error: forward updates the model's state in place [module-state]
            self.count.add_(1)
            ^
  Explanation: the compiled package has no mutable model state
  Hint: keep the value in a local variable and return it

tests/models/bad_inplace.py:21:9: error: forward changes its input `x` in place (through `rows`, which shares its storage) [input-mutation]
            rows.mul_(2)
            ^
  Explanation: the package works on a copy of each input, so the caller would not see the change
  Hint: compute into a new tensor (`rows = rows + ...`) instead

5 errors: the model cannot be converted as written."""),
]


@pytest.mark.parametrize("name,expected", RUNTIME_PYTHON, ids=[n for n, _ in RUNTIME_PYTHON])
def test_runtime_python_in_regions_is_reported(monkeypatch, name, expected):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(os.path.join(MODELS, f"{name}.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == expected


def test_runtime_python_exits_2_from_the_cli(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dycl.cli", "convert", "tests/models/bad_lambda.py",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert RUNTIME_PYTHON[1][1] in proc.stderr


class _UnreadableHigherOrder(torch.nn.Module):
    def forward(self, x):
        ops = (x,)
        y = torch.cond(x.sum() > 0, self.double, self.double, ops)
        n, z = while_loop(lambda h: h.sum() > 1, lambda i, h: (i + 1, h / 2), (torch.zeros(()), y))
        return z

    def double(self, x):
        return x * 2


def test_higher_order_ops_in_forms_dycl_cannot_read():
    import inspect

    with pytest.raises(ConversionError) as info:
        rewrite_model(_UnreadableHigherOrder(), (torch.ones(3),))
    first = inspect.getsourcelines(_UnreadableHigherOrder.forward)[1]
    assert [(d.kind, d.loc.line, d.loc.col) for d in info.value.diagnostics] == [
        ("higher-order-op", first + 2, 12), ("higher-order-op", first + 3, 15)]
    text = info.value.format()
    assert "error: `cond` called in a form dycl cannot read [higher-order-op]" in text
    assert "Hint: pass the branch functions and a tuple literal of operands, e.g. `(x, h)`" in text
    assert "error: a lambda given to `while_loop` does not take its operands [higher-order-op]" in text


def test_run_time_value_stored_on_the_model_is_reported(tmp_path, monkeypatch):
    src = tmp_path / "cache_state.py"
    src.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n"
        "        self.input_dtype = x.dtype\n"
        "        self.cache = self.fc(x)\n"
        "        return self.cache.to(self.input_dtype)\n\n\n"
        "def get_model():\n    return M()\n\n\n"
        "def get_inputs():\n    return (torch.randn(1, 4),)\n")
    monkeypatch.chdir(tmp_path)
    spec = load_model_file(str(src))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert [d.kind for d in info.value.diagnostics] == ["module-state"]  # the dtype is accepted
    assert info.value.format().startswith(
        "cache_state.py:12:9: error: forward stores a run-time value on the model [module-state]\n"
        "            self.cache = self.fc(x)\n"
        "            ^\n")


def test_python_value_computed_by_tensor_code_is_a_diagnostic(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "dycl.cli", "convert", "tests/models/bad_python_value.py",
                           "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert """\
tests/models/bad_python_value.py:13:12: error: tensor code that computes a Python value, not a tensor [python-value]
            if torch.equal(torch.relu(h), h):
               ^
  Explanation: region a_L12 would return it, and a compiled graph can only compute tensors (`torch.equal`, \
`torch.allclose` and `.tolist()` give Python values)
  Hint: compute a tensor instead (`(a == b).all()`, `torch.isclose(a, b).all()`); a test on it is then decided at \
run time

1 error: the model cannot be converted as written.""" in proc.stderr
    assert not out.exists()


def test_a_conversion_error_always_has_a_diagnostic():
    with pytest.raises(ValueError, match="at least one diagnostic"):
        ConversionError([])


def test_forward_without_source_says_so():
    import operator

    class Built(torch.nn.Module):
        forward = operator.neg  # a builtin: no Python source to read

    with pytest.raises(TypeError, match=r"cannot read the source of .*Built.forward: dycl rewrites forward's Python "
                                        r"source, so the model class must be defined in a \.py file"):
        rewrite_model(Built(), (torch.ones(1),))


def test_function_chosen_at_run_time_is_reported(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(os.path.join(MODELS, "bad_static_merge.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == """\
tests/models/bad_static_merge.py:25:19: error: `fn` holds a different function, module or object on each path of \
a run-time decision before this [static-merge]
            y = apply(fn, x)
                      ^
  Explanation: such values exist only when converting, so which one this code uses would have to be decided at \
run time
  Hint: make the decision static (pass the arguments that fix it), or give each path its own call

tests/models/bad_static_merge.py:26:9: error: `try` around tensor code [try-block]
            try:
            ^
  Explanation: exceptions raised inside compiled regions cannot be caught by the host
  Hint: remove the try/except or handle the error outside the model

2 errors: the model cannot be converted as written."""
