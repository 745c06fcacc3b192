"""Tensors indexed by lists of Python values in region code (rewrite/list_index.py).

torch turns a list of Python ints into an index tensor; a region holds a host list's items as 0-d
tensors, and torch reads a list of tensors as a tuple, one index per dimension. Here: the packages
index as the original does on inputs of other sizes and paths, a list whose length changes is the
`[varying-list]` diagnostic, and a package refuses a list of another length than it was converted for.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import MODELS, ROOT
from dycl.modelfile import load_model_file
from rewrite import ConversionError, rewrite_model
from rewrite.list_index import dycl_index, dycl_tensor


def test_tensor_indexed_by_lists_selects_what_the_original_does(converted):
    import dycl

    result = converted(os.path.join(MODELS, "c_tolist_index.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4, result.check.failure
    model, net = result.spec.model, dycl.load(result.out)
    arms = set()
    for (x,) in result.spec.sample_inputs(16, seed=7):
        with torch.no_grad():
            expected = model(x).numpy()
            rows = model.mix(x)[x[:, 0].topk(2).indices]
        arms.add(bool(rows[0, 1] > rows[1, 1]))
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-5)
    assert arms == {True, False}


def test_tensor_indexed_by_lists_built_by_appends_selects_what_the_original_does(converted):
    # `picks` (host-built, in arms), `tops` and `more` (region-built, by `.item()`, `+=`, `extend`, `insert`)
    import dycl

    result = converted(os.path.join(MODELS, "c_appended_index.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4, result.check.failure
    model, net = result.spec.model, dycl.load(result.out)
    picked = set()
    for (x,) in result.spec.sample_inputs(16, seed=7):
        with torch.no_grad():
            expected = model(x).numpy()
            h = model.mix(x)
        picked.add(tuple(int(h[i, 1] > 0) if gate(h[i]).item() > 0 else i + 1 for i, gate in enumerate(model.gates)))
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-5)
    assert len(picked) >= 3


def test_python_functions_of_lists_compare_python_values(converted):
    # sorted/min/max/sum of `.tolist()`'s list, of a host list grown in arms and of one grown by `.item()`s run
    # in the host; torch.tensor of them stacks the items in the region
    import dycl

    result = converted(os.path.join(MODELS, "c_host_list_calls.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4, result.check.failure
    model, net = result.spec.model, dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(16, seed=7):
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(net(x.numpy()), expected, rtol=1e-5, atol=1e-5)
    host = open(os.path.join(result.out, "host.py")).read()
    for call in ("sorted(sizes)", "max(picks)", "min(tops)", "sum(picks)", "tops.append("):
        assert call in host, call


@pytest.mark.parametrize("data, dtype", [
    ([0, 2], None), ([1, 2.5], None), ([True, False], None), ([True, 3], None), ([], None), ([[1, 2], [3, 4]], None),
    ([[], []], None), ([1, 2], torch.float64), ([0.5, 1.5], torch.int64)])
def test_dycl_tensor_is_the_tensor_torch_makes_of_python_values(data, dtype):
    def held(v):  # as a region holds the items: 0-d tensors, a computed float in float64
        if isinstance(v, list):
            return [held(item) for item in v]
        return torch.tensor(v, dtype=torch.float64) if isinstance(v, float) else torch.tensor(v)

    expected = torch.tensor(data, dtype=dtype)
    for given in (data, held(data)):
        made = dycl_tensor(given, dtype=dtype)
        assert made.dtype == expected.dtype and made.shape == expected.shape and torch.equal(made, expected)


def test_index_list_given_python_values_and_tensors_is_a_diagnostic(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(os.path.join(MODELS, "bad_mixed_list.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == """\
tests/models/bad_mixed_list.py:19:18: error: a tensor indexed by `picks`, a list given Python values and tensors \
[mixed-list]
            return x[picks]
                     ^
  Explanation: torch reads a list index that holds a tensor as one index per dimension (`x[[t, 1]]` is `x[t, 1]`) \
and a list of Python numbers as the positions to select; `picks` gets Python values in one place and tensors in \
another, and in a compiled region every item is a tensor, so which reading the original makes cannot be told
  Hint: append Python numbers only (`int(t)`, `t.item()`) to select positions, or index with a tuple \
(`x[tuple(picks)]`) to take one index per dimension

1 error: the model cannot be converted as written."""


@pytest.mark.parametrize("items", [[0, 2], [4, -1, 4], [], [True, False, True, False, False, True],
                                   [i % 6 for i in range(40)], [5]])
def test_dycl_index_is_the_index_torch_makes_of_python_values(items):
    x = torch.arange(36.0).reshape(6, 6)
    as_tensors = [torch.tensor(v) for v in items]
    assert torch.equal(x[dycl_index(as_tensors)], x[items])
    assert torch.equal(x[:, dycl_index(as_tensors)], x[:, items])
    assert torch.equal(x[dycl_index(items)], x[items])
    assert dycl_index(3) == 3 and dycl_index((1, 2)) == (1, 2)


def test_dycl_index_refuses_a_list_of_lists():
    with pytest.raises(IndexError, match=r"list of lists .*index with the tensor itself \(`x\[idx\]`"):
        dycl_index([[torch.tensor(0), torch.tensor(1)], [torch.tensor(2), torch.tensor(3)]])


def test_index_list_whose_length_changes_is_a_diagnostic(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "dycl.cli", "convert", "tests/models/bad_tolist_index_length.py",
                           "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert """\
tests/models/bad_tolist_index_length.py:14:15: error: tensor code that reads `idx.tolist()`, a list whose length \
changes between runs [varying-list]
            y = x[idx.tolist()]
                  ^
""" in proc.stderr
    assert "`idx.tolist()` had 2 items on one run and 1 on another" in proc.stderr
    assert "Hint: keep the values in a tensor for tensor code (`x[idx]` rather than `x[idx.tolist()]`" in proc.stderr
    assert not out.exists()


def test_appended_index_list_whose_length_changes_is_a_diagnostic(tmp_path, monkeypatch):
    from dycl.convert import ConvertOptions, convert

    monkeypatch.chdir(ROOT)
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(os.path.join("tests", "models", "bad_appended_length.py"), str(tmp_path / "out"),
                               "onnxruntime", 5))
    assert info.value.format() == """\
tests/models/bad_appended_length.py:13:18: error: tensor code that reads `picks`, a list whose length changes between \
runs [varying-list]
            return x[picks].sum(0)
                     ^
  Explanation: region out_L13 takes the list item by item, one graph input per item, and a compiled graph has a \
fixed number of inputs; `picks` had 3 items on one run and 2 on another (`.tolist()` of a tensor whose size varies \
gives such a list, and so do appends under a run-time `if`)
  Hint: keep the values in a tensor for tensor code (`x[idx]` rather than `x[idx.tolist()]`, a mask rather than \
appended positions), or use the list only in Python (`for`, `len`, `sum`)

1 error: the model cannot be converted as written."""
    assert not (tmp_path / "out").exists()


def test_package_refuses_a_list_of_another_length(converted):
    import dycl
    from dycl.runtime.region import RegionError

    result = converted(os.path.join(MODELS, "bad_tolist_index_length.py"), check=1)  # two rows on every run
    model, net = result.spec.model, dycl.load(result.out)
    two, one, three = (x for (x,) in result.spec.sample_inputs(3))
    np.testing.assert_allclose(net(two.numpy()), model(two).numpy(), rtol=1e-6)
    for x, n in ((one, 1), (three, 3)):
        with pytest.raises(RegionError, match=rf"input 'list_L14' is a list of {n} items where the compiled graph "
                                              r"takes 2: .*`x\[idx\]` rather than `x\[idx.tolist\(\)\]`"):
            net(x.numpy())


def test_torch_tensor_of_a_list_of_tensors_is_a_diagnostic(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(os.path.join(MODELS, "bad_tensor_of_tensors.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == """\
tests/models/bad_tensor_of_tensors.py:15:24: error: `torch.tensor(best)` of a list that holds tensors \
[tensor-of-tensors]
            return x[:2] * torch.tensor(best)[:, None]
                           ^
  Explanation: tracing records the tensor `torch.tensor` makes as a constant of the graph, which would keep the \
values of the example inputs; a list of Python values is stacked instead, but of tensors `torch.tensor` keeps their \
dtypes by rules a stack does not follow
  Hint: stack the tensors (`torch.stack(best)` of 0-d tensors), or put Python numbers in the list (`int(t)`, \
`t.item()`)

1 error: the model cannot be converted as written."""
