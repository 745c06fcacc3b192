"""Objects created in forward whose methods grow tensors they hold (rewrite/objects.py): the object is
built when converting, its tensors are variables the host loop carries, its methods are inlined; what
the package cannot follow is reported as [object-state]."""
import os

import numpy as np
import pytest
import torch

from conftest import MODELS, ROOT
from dycl.modelfile import load_model_file
from rewrite import ConversionError, rewrite_model
from rewrite.cfg import Loop, code, host_nodes

MODEL = os.path.join(MODELS, "c_forward_objects.py")


def _steps(model_module, x) -> int:
    """How many rows the eager model's History holds at the end (the generation length)."""
    seen = {}
    original = model_module.History.update

    def update(self, h):
        rows = original(self, h)
        seen["rows"] = rows.shape[1]
        return rows

    model_module.History.update = update
    try:
        with torch.no_grad():
            model_module.get_model()(x)
    finally:
        model_module.History.update = original
    return seen["rows"]


def test_object_state_is_a_loop_carried_variable():
    spec = load_model_file(MODEL)
    program = rewrite_model(spec.model, spec.inputs)
    # The first update creates the rows (configuration changes: `started`), so that iteration is unrolled;
    # the rest is one host loop whose body carries `history_rows`, grown by torch.cat.
    loops = [n for n in host_nodes(program.body) if isinstance(n, Loop)]
    assert len(loops) == 1 and loops[0].kind == "for"
    body_regions = [r for r in program.regions if "history_rows" in r.inputs and "history_rows" in r.outputs]
    assert body_regions, [(r.name, r.inputs, r.outputs) for r in program.regions]
    assert any("history_rows = torch.cat([history_rows" in code(s.node) for r in body_regions for s in r.stmts)


def test_both_arms_of_the_break_match(converted):
    import importlib
    import sys

    import dycl

    result = converted(MODEL, check=20)
    assert result.check.passed, result.check.failure
    assert result.check.eta == 0 and result.check.delta <= 1e-5
    sys.path.insert(0, MODELS)
    module = importlib.import_module("c_forward_objects")
    net = dycl.load(result.out)
    lengths = set()
    for (x,) in module.sample_inputs(30, seed=7):
        lengths.add(_steps(module, x))
        with torch.no_grad():
            summary, h = result.spec.model(x)
        got_summary, got_h = net(x.numpy())
        np.testing.assert_allclose(got_summary, summary.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got_h, h.numpy(), rtol=1e-5, atol=1e-5)
    # a break on the first step (the unrolled one), a break inside the host loop, and no break at all
    assert 1 in lengths and module.STEPS in lengths and lengths - {1, module.STEPS}, lengths


EXPECTED = """\
tests/models/bad_object_state.py:18:13: error: an object forward created changes its configuration on one path \
of a run-time decision [object-state]
                log.mode = "high"
                ^
  Explanation: the object is built when converting and its configuration must be the same on every path the \
package can take; only tensors it holds can differ, as variables of their own
  Hint: compute the value in forward and pass it to the object where it is created

tests/models/bad_object_state.py:20:13: error: an attribute of an object forward created starts to hold a \
run-time value on one path of a run-time decision [object-state]
                log.peak = x.max()
                ^
  Explanation: the object is built when converting and its configuration must be the same on every path the \
package can take; only tensors it holds can differ, as variables of their own
  Hint: give the attribute a value where the object is created, or update it on every path

tests/models/bad_object_state.py:21:23: error: `log`, an object forward created, is used as a run-time value \
[object-state]
            return x * 2, log
                          ^
  Explanation: the object exists only when converting: the package holds the tensors it keeps, as variables, \
never the object itself
  Hint: use the tensors it holds, or what its methods return, instead

3 errors: the model cannot be converted as written."""


def test_what_the_package_cannot_follow_is_reported(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = load_model_file(os.path.join(MODELS, "bad_object_state.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert info.value.format() == EXPECTED
