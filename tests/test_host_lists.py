"""Lists of tensors built in regions, decisions that never change folded into the code around them
(rewrite/host_lists.py, Builder._fixed_arm, dycl/shape_deps.py), on tests/models/c_dense_lists.py:
a DenseNet/RANet-style block whose list plumbing, type tests and width tests leave nothing for the
host to decide before the early exit."""
import os

from conftest import MODELS

from rewrite.cfg import HostStmt, If, RegionCall

DENSE = os.path.join(MODELS, "c_dense_lists.py")


def _code(node) -> str:
    import libcst as cst

    return cst.Module([]).code_for_node(node.node)


def test_type_and_width_tests_fold_in_every_call(converted):
    # The layer runs three times: with a tensor, with a list whose second part comes in pieces, and
    # with a list whose narrower part comes first. Each call's `isinstance` and width tests fold, the
    # width test included although `F.interpolate(..., size=(h, w))` upstream takes host numbers, and
    # the nested `elif`s of the arm only lists take keep their ids (the tensor call skips them).
    result = converted(DENSE, check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-5
    assert result.check.paths == 3
    assert [d.dclass for d in result.program.decisions] == ["value", "value"]
    assert result.program.static_decisions >= 6


def test_list_plumbing_stays_in_the_region(converted):
    # Before the early exit: the block's layers, their `[x[0], f(x[0])]` joins, `outputs.append`,
    # `outputs[-1]`, `_, _, h, w = x.size()` (read in the region), `x = [x]` + `x.append(...)` +
    # `torch.cat(x)` and the `(x, outputs)` it returns, and the exit's confidence: one region.
    result = converted(DENSE, check=20, fuse="none")  # as built: fusion would put it all in one graph
    body = result.program.body
    first_if = next(i for i, n in enumerate(body) if isinstance(n, If))
    assert [type(n) for n in body[:first_if]] == [RegionCall], [_code(n) for n in body[:first_if]
                                                                if isinstance(n, HostStmt)]


def test_list_grown_in_a_runtime_branch_is_a_host_list(converted):
    # `kept` gets a different tensor in each arm of a run-time decision and is joined after the `if`:
    # the host builds it and counts it.
    result = converted(DENSE, check=20)
    host = open(os.path.join(result.out, "host.py")).read()
    assert "kept = []" in host and "kept.append(h)" in host and "np.concatenate(kept, axis=1)" in host
    assert "len(kept)" in host


def test_a_size_used_after_a_decision_is_read_by_the_host(converted):
    # `_, c, h, w = y.size()` first goes into the region computing `y`; `c` is needed after the
    # decision, when `y` has been reassigned, so a region would return a Python number: the front end
    # builds again with that read in the host. The region after it gets `y` and reads `h, w` itself.
    result = converted(os.path.join(MODELS, "c_size_reads.py"), check=20, fuse="none")
    assert result.check.passed and result.check.eta == 0 and result.check.paths == 2
    host = [_code(n) for n in result.program.body if isinstance(n, HostStmt)]
    assert "_, c, h, w = y.shape" in host
    regions = {r.name: r for r in result.program.regions}
    assert not [r.name for r in regions.values() if {"h", "w"} & set(r.inputs)]
    assert any("c" in r.inputs for r in regions.values())
