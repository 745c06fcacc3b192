"""rewrite/syntax.py: the names statements bind, read and write, shared by the passes."""
import libcst as cst
import pytest

from rewrite.cfg import IfNode, LoopNode, Origin, Stmt
from rewrite.names import Namespace
from rewrite.syntax import MUTATORS, MUTATORS_RETURNING_NONE, bound_names, lowered_writes, reads_writes, target_names

_AT = Origin("m.py", 1, 1, 0, "forward")


def _small(src: str) -> cst.BaseSmallStatement:
    return cst.parse_statement(src).body[0]


def test_target_names_unpack_nested_and_starred_targets():
    target = cst.parse_expression("a, (b, *c)")
    assert list(target_names(target)) == ["a", "b", "c"]
    assert list(target_names(cst.parse_expression("x[i]"))) == []


def test_bound_names_of_comprehensions_and_lambdas():
    assert bound_names(cst.parse_expression("[y for x, y in pairs for z in y]")) == {"x", "y", "z"}
    assert bound_names(cst.parse_expression("lambda a, b: a + b")) == {"a", "b"}


def test_reads_writes_in_order_without_comprehension_locals():
    assert reads_writes(_small("h = conv(x) + [i for i in xs][0]")) == (["conv", "x", "xs"], ["h"])
    assert reads_writes(_small("h += w * x")) == (["w", "x", "h"], ["h"])
    assert reads_writes(_small("out[k] = v")) == (["v", "out", "k"], ["out"])  # the rest of `out` lives on
    assert reads_writes(_small("return a, b")) == (["a", "b"], [])


def test_in_place_calls_write_their_receiver():
    assert reads_writes(_small("feats.append(h)"))[1] == ["feats"]
    assert reads_writes(_small("seen.update(new)"))[1] == ["seen"]  # a dict's or set's mutator too
    assert reads_writes(_small("x.add_(1)"))[1] == ["x"]  # torch's in-place methods
    assert reads_writes(_small("x.sum()"))[1] == []


def test_mutator_sets():
    assert {"append", "update", "discard", "popitem"} <= MUTATORS
    assert MUTATORS_RETURNING_NONE == MUTATORS - {"pop", "popitem", "setdefault"}


def test_lowered_writes_include_arms_bodies_and_loop_targets():
    body = [Stmt(_small("h = f(x)"), _AT),
            IfNode(cst.parse_expression("g"), [Stmt(_small("a = 1"), _AT)], [Stmt(_small("b.append(h)"), _AT)], _AT),
            LoopNode("for", [Stmt(_small("c = h"), _AT)], _AT, target=cst.Name("i"), iter=cst.parse_expression("r"))]
    assert lowered_writes(body) == {"h", "a", "b", "c", "i"}


def test_namespace_rollback_hands_out_names_again():
    ns = Namespace({"x"})
    assert ns.fresh("x") == "x_1"
    mark = ns.checkpoint()
    assert ns.fresh("x") == "x_2"
    ns.rollback(mark)
    assert ns.fresh("x") == "x_2"
    assert ns.fresh("list") == "list_1"  # never a builtin


@pytest.mark.parametrize("src, expected", [
    ("int(h[0, 0] > 0)", "(h[0, 0] > 0).to(torch.int64)"),
    ("float(h[0] + 1)", "(h[0] + 1).to(torch.float64)"),
    ("bool(-h[0, 0])", "(-h[0, 0]).bool()"),
    ("len(h + 1)", "(h + 1).shape[0]"),
    ("int(h[0, 0])", "h[0, 0].to(torch.int64)"),
    ("int((h[0, 0] > 0))", "(h[0, 0] > 0).to(torch.int64)"),
])
def test_region_form_keeps_what_a_method_call_reads_in_parentheses(src, expected):
    from rewrite.classify import TENSOR, Kinds
    from rewrite.region_form import to_region

    node = to_region(cst.parse_expression(src), Kinds({"h": TENSOR}), refuse=None)
    assert cst.Module([]).code_for_node(node) == expected
