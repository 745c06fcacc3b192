"""Library plumbing that folds when converting (rewrite/closures.py, rewrite/mutables.py, comprehensions,
try, `**kwargs` edits, tensor type tests): tests/models/c_library_state.py and c_library_closures.py
end to end, the arms the configuration rules out reported, and the pieces one by one."""
import os

import libcst as cst
import pytest

from conftest import MODELS
from dycl.modelfile import load_model_file
from rewrite import ConversionError, rewrite_model
from rewrite.mutables import mutated_safely
from rewrite.staticeval import Scope, value_of
from rewrite.values import IS_TENSOR, Pack, Static, Unknown

STATE = os.path.join(MODELS, "c_library_state.py")
CLOSURES = os.path.join(MODELS, "c_library_closures.py")


def _region_code(program) -> str:
    return "\n".join(cst.Module([]).code_for_node(s.node) for r in program.regions for s in r.stmts)


def test_library_state_folds_and_matches(converted):
    result = converted(STATE, check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4
    assert result.check.paths >= 2
    code = _region_code(result.program)
    # registry, hooks, context variable, kwargs plumbing and the try/except all ran when converting
    for gone in ("_REGISTRY", "install_hooks", "_ACTIVE", "call_with", "collected", "kwargs", "tracing"):
        assert gone not in code
    assert "h * 1.0" in code  # scale 0.5, doubled by `kwargs["scale"] = ...`; `unused` popped before the call
    assert not hasattr(result.spec.model, "hooked")  # the `with lock:` arm never ran
    assert sorted(d.dclass for d in result.program.decisions) == ["shape", "value"]


def test_recording_outputs_keeps_the_hooks_and_is_reported():
    # The other arm of `if len(collected) > 0:`: with a flag on, the hooks record outputs the result
    # uses, so installing them under a lock is not dropped: reported.
    spec = load_model_file(STATE)
    model = type(spec.model)(record=True).eval()
    with pytest.raises(ConversionError) as info:
        rewrite_model(model, spec.inputs)
    assert [d.kind for d in info.value.diagnostics] == ["with-block"]


def test_closures_are_inlined_where_called(converted):
    result = converted(CLOSURES, check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4
    code = _region_code(result.program)
    assert "and_fns" not in code and "mask_fn" not in code and "keep_fn" not in code
    assert "k_2 < 5" in code  # the closure's default, fixed when it was defined
    assert [d.dclass for d in result.program.decisions] == ["value"]


def _scope(**env):
    return Scope(env, {}, {}, None, None)


def _value(source, **env):
    return value_of(cst.parse_expression(source), _scope(**env))


def test_comprehensions_fold_with_their_filters():
    flags = Static({"hidden_states": False, "attentions": True})
    assert _value("{k: [] for k, v in flags.items() if v}", flags=flags).value == {"attentions": []}
    assert _value("{k: [] for k, v in flags.items() if not v}", flags=flags).value == {"hidden_states": []}
    assert _value("[i * 2 for i in range(3) if i != 1]").value == [0, 4]
    assert _value("{i % 3 for i in items if -3 <= i < 3}", items=Static([-1, 2, 5])).value == {2}
    assert _value("all(callable(f) for f in fns)", fns=Pack((Static(len), Static(abs)))).value is True
    with pytest.raises(Unknown):
        _value("[v for v in x]", x=IS_TENSOR)  # a run-time value: not folded


def test_tensor_type_tests_fold_on_known_tensors():
    assert _value("isinstance(m, (torch.Tensor, dict))", m=IS_TENSOR, torch=Static(__import__("torch"))).value
    assert _value("isinstance(m, dict)", m=IS_TENSOR).value is False
    assert _value("hasattr(m, 'jax')", m=IS_TENSOR).value is False
    with pytest.raises(Unknown):
        _value("hasattr(m, 'shape')", m=IS_TENSOR)  # True for a tensor, but an instance may differ: not folded


@pytest.mark.parametrize("body, safe", [
    ("d = {}\nd.pop('a', None)\nd['b'] = 1\nreturn len(d)", True),
    ("d = {}\nx = d.pop('a', None)", False),
    ("d = {}\nd['a'] += 1", False),
    ("d = {}\ndel d['a']", False),
])
def test_containers_stay_static_only_while_every_mutation_is_a_statement(body, safe):
    func = cst.parse_module("def f():\n" + "".join(f"    {line}\n" for line in body.splitlines())).body[0]
    assert mutated_safely(func, "d") is safe


def test_flag_set_in_the_arms_of_a_rank_test_folds(converted):
    result = converted(os.path.join(MODELS, "c_shape_flag_in_loop.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4
    # the rank test is fixed by the signature, `if early_exit:` folds after it: only the break stays
    assert [d.dclass for d in result.program.decisions] == ["value"]


def test_container_changed_in_a_run_time_arm_is_reported():
    spec = load_model_file(os.path.join(MODELS, "bad_static_container.py"))
    with pytest.raises(ConversionError) as info:
        rewrite_model(spec.model, spec.inputs)
    assert [d.kind for d in info.value.diagnostics] == ["static-container"]
