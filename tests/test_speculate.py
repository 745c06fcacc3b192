"""--speculate: the dominant path as one graph, its answer kept only where every decision agrees."""
import importlib.util
import os

import libcst as cst
import pytest
import torch

import dycl
from conftest import MODELS
from dycl.convert import ConvertOptions, convert
from dycl.compare import compare, to_numpy
from dycl.speculate import NoSpeculation, dominant_path, path_run
from rewrite.cfg import HostStmt, If, Loop, Origin
from rewrite.kinds import DecisionClass, LoopKind

DOMINANT = os.path.join(MODELS, "speculate_dominant.py")


@pytest.fixture(scope="module")
def speculating(tmp_path_factory):
    """speculate_dominant with --speculate, the general program fused as tests fuse it (all)."""
    opts = ConvertOptions(DOMINANT, str(tmp_path_factory.mktemp("spec") / "pkg"))
    opts.fuse, opts.speculate = "all", True
    return convert(opts)


def _model_file(path: str):
    spec = importlib.util.spec_from_file_location("model_file", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _count_calls(net) -> list:
    """Region names called from now on, in order."""
    calls = []
    for name, region in list(vars(net.regions).items()):
        def counted(*args, _region=region, _name=name):
            calls.append(_name)
            return _region(*args)
        setattr(net.regions, name, counted)
    return calls


def test_speculation_is_exact_on_every_path(speculating):
    """Inputs on the dominant path return the speculative answer; inputs taking the other arm of each
    decision miss and get the general program's, as the original model computes it, also where the
    path's graph fails off the path ("far": the index it gathers with is out of range)."""
    assert speculating.check.passed and speculating.check.eta == 0
    assert speculating.speculation == "region speculate_L28 runs the path of 50 of 51 natural inputs " \
                                      "(L31 else, L34 then, L36 then, L41 else)"
    module = _model_file(DOMINANT)
    model = module.get_model()
    net = dycl.load(speculating.out)
    calls = _count_calls(net)
    for kind in ("common", "exit", "far", "negative", "huge"):
        for seed in range(3):
            inputs = module.path_input(kind, 100 + seed)
            with torch.no_grad():
                expected = to_numpy(model(*inputs))
            del calls[:]
            got = net(*[to_numpy(v) for v in inputs])
            assert compare(expected, got, kind) <= 1e-4
            assert calls[0] == "speculate_L28"
            assert (len(calls) == 1) == (kind == "common"), (kind, calls)  # a miss runs the general program


def test_host_tests_each_decision_as_the_general_host_does(speculating):
    host = open(os.path.join(speculating.out, "host.py")).read()
    assert "    # Speculation (--speculate): 50 of 51 sample inputs (98%) took one path: L31 else, L34 then, " \
           "L36 then, L41 else.\n" in host
    assert "    try:\n" \
           "        spec_energy, spec_k, spec_cond_L36, spec_scale, spec_result = regions.speculate_L28(x)\n" \
           "    except Exception:  # failed off the path (say, an index only the path keeps in range)\n" \
           "        pass\n" \
           "    else:\n" \
           "        if not spec_energy < 0.05 and spec_k < 16 and spec_cond_L36 and not spec_scale > 1000.0:\n" \
           "            return spec_result\n" in host
    # the general program follows unchanged: it reads `energy`, never the speculation's values
    assert "spec_" not in host.split("return spec_result\n")[1]
    report = open(os.path.join(speculating.out, "report.md")).read()
    assert "## Speculation (--speculate)\n\nregion speculate_L28 runs the path" in report
    assert "| part of `block_L29` and `speculate_L28` |" in report  # the general program's graph and the path's
    dot = open(os.path.join(speculating.out, "cfg.dot")).read()
    assert 'label="every decision agrees"' in dot


def test_no_speculation_where_no_path_dominates(tmp_path):
    """c_nested_if's samples spread over five paths: no speculative region, and the report says why."""
    opts = ConvertOptions(os.path.join(MODELS, "c_nested_if.py"), str(tmp_path / "pkg"), check=20)
    opts.fuse, opts.speculate = "none", True
    result = convert(opts)
    assert result.check.passed and result.check.eta == 0
    assert result.speculation == "not speculated: the most common path covers 7 of 21 natural inputs (33%), " \
                                 "under 95%"
    assert "speculate" not in open(os.path.join(result.out, "host.py")).read()
    assert result.speculation in open(os.path.join(result.out, "report.md")).read()


def test_a_dominant_path_needs_95_percent_of_at_least_20_inputs():
    assert ConvertOptions("m.py", "out").speculate is False  # and only with --speculate
    common, rare = (("L1", True),), (("L1", False),)
    assert dominant_path([common] * 19 + [rare]) == (common, 19)
    with pytest.raises(NoSpeculation, match="the most common path covers 18 of 20 natural inputs"):
        dominant_path([common] * 18 + [rare] * 2)
    with pytest.raises(NoSpeculation, match="19 natural inputs; speculation needs at least 20"):
        dominant_path([common] * 19)


def _stmt(text: str) -> HostStmt:
    return HostStmt(cst.parse_statement(text).body[0], Origin("m.py", 1, 1, 0, "forward"))


def test_the_path_run_takes_each_arm_and_refuses_loops():
    origin = Origin("m.py", 2, 2, 0, "forward")
    early = _stmt("return a")
    tree = [_stmt("a = 1"), If(cst.parse_expression("c"), [early], [], origin, "L2", DecisionClass.VALUE),
            _stmt("return b")]
    run, decisions = path_run(tree, (("L2", True),))
    assert run == [tree[0], early] and decisions == [(tree[1], True, 1)]
    run, _ = path_run(tree, (("L2", False),))
    assert run == [tree[0], tree[2]]
    with pytest.raises(NoSpeculation, match="does not follow the program at decision L2"):
        path_run(tree, (("L9", True),))
    looping = [Loop(LoopKind.WHILE, [_stmt("a = 2")], origin, "L3", test=cst.parse_expression("c"))] + tree
    with pytest.raises(NoSpeculation, match="the path runs loop L3 .forward L2., whose trip count depends"):
        path_run(looping, (("L3", True), ("L3", False), ("L2", True)))
