"""Which shape decisions fold like static config: those that went one way on every run of exploration.

Where no input dim is dynamic and no region saw a dim vary, a shape-determined decision that every run
took the same way is fixed and the program rewritten without it (`step_fold_shapes` in convert.py).
Tests of dtypes, ranks and Python types fold whatever the dims do; a test of a shape that input values
change (`sel.shape[0] > 2` of `sel = h[mask]`) never folds.
"""
from __future__ import annotations

import libcst as cst

from rewrite.kinds import DecisionClass
from rewrite.walk import find

from .shape_deps import names_in, value_shaped_names

__all__ = ["constant_shape_decisions"]


def _dtype_test(test) -> bool:
    """A test that reads dtypes and no sizes (`x.dtype != torch.float32`): the signature fixes it."""
    attrs = {a.attr.value for a in find(test, cst.Attribute)}
    return "dtype" in attrs and not attrs & {"shape", "ndim", "size", "dim", "numel"} \
        and not any(isinstance(c.func, cst.Name) and c.func.value == "len" for c in find(test, cst.Call))


def _type_test(test) -> bool:
    """`isinstance(x, list)` and nothing else: no size changes it."""
    calls = find(test, cst.Call)
    return bool(calls) and all(isinstance(c.func, cst.Name) and c.func.value == "isinstance" for c in calls) \
        and not find(test, cst.Attribute)


def _rank_test(test) -> bool:
    """A test that reads ranks and no sizes (`len(mask.shape) == 4`, `mask.ndim == 2`, `x.dim() > 3`): no dim
    that varies changes it."""
    ranks = set()
    for call in find(test, cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1 \
                and isinstance(call.args[0].value, cst.Attribute) and call.args[0].value.attr.value == "shape":
            ranks.add(id(call.args[0].value))
        elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "dim" and not call.args:
            ranks.add(id(call.func))
        else:
            return False
    attrs = find(test, cst.Attribute)
    return bool(attrs) and all(id(a) in ranks or a.attr.value == "ndim" for a in attrs)


def constant_shape_decisions(st) -> dict[str, bool]:
    """Shape-determined decisions that went one way on every run, when no input dim is dynamic and no
    region saw a dim vary (a tensor a loop grows: a NaN input may run the loop longer than any sample),
    and those on dtypes alone, which no dim changes."""
    varied = any(None in dims for record in st.exploration.records.values() if record.examples
                 for dims in record.dims())
    fixed = {}
    for d in st.program.decisions:
        if (st.spec.dynamic or varied) and not _dtype_test(d.test) and not _type_test(d.test) \
                and not _rank_test(d.test):
            continue
        arms = {taken for decision, taken in st.exploration.arms if decision == d.decision}
        if d.dclass == DecisionClass.SHAPE and len(arms) == 1:
            fixed[d.decision] = arms.pop()
    return _shapes_of_shapes(st, fixed)


def _shapes_of_shapes(st, fixed: dict[str, bool]) -> dict[str, bool]:
    """Of `fixed`, the decisions whose shapes follow from the (static) input shapes: not `sel.shape[0] > 2`
    of `sel = h[mask]`, which other input values change however the samples went. Tests of dtypes, of ranks
    and of Python types (`isinstance(x, list)`) read no shape that values change."""
    tests = {d.decision: d.test for d in st.program.decisions
             if d.decision in fixed and not _dtype_test(d.test) and not _type_test(d.test) and not _rank_test(d.test)}
    while tests:  # each decision kept unfolded brings its other arm back, which may make more names value-shaped
        value_shaped = value_shaped_names(st.program, st.exploration, st.regions_module, st.spec.model, fixed)
        kept = {k for k, test in tests.items() if names_in(test) & value_shaped}
        if not kept:
            break
        fixed = {k: v for k, v in fixed.items() if k not in kept}
        tests = {k: t for k, t in tests.items() if k not in kept}
    return fixed
