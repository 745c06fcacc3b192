"""Unrolled static loops rolled back up in host.py (hostgen/reroll.py): unit tests on host statements, and
the zoo's BlockDrop-110 end to end (its 54 blocks as one loop; both arms of each decision checked)."""
import os

import libcst as cst
import numpy as np
import pytest
import torch

from conftest import ROOT
from hostgen.reroll import reroll


def _rolled(source: str) -> str:
    stmts = list(cst.parse_module(source).body)
    body, tables = reroll(stmts)
    return cst.Module(tables + body).code


CHAIN = """\
h, c_1 = regions.a(h, c)
if c_1:
    h, c_2 = regions.b(h)
else:
    h, c_2 = regions.b_else(h)
if c_2:
    h, c_3 = regions.b_1(h)
else:
    h, c_3 = regions.b_else_1(h)
if c_3:
    h, c_4 = regions.b_2(h)
else:
    h, c_4 = regions.b_else_2(h)
if c_4:
    h, c_5 = regions.b_3(h)
else:
    h, c_5 = regions.b_else_3(h)
out = h, c_5
"""


def _chain_regions(calls: list):
    def step(name, k, arm):
        def region(h):
            calls.append(name)
            return h * 2 + k if arm else h - k, (h + k) % 3 == 0
        return staticmethod(region)
    regions = {"a": staticmethod(lambda h, c: (h + 1, c))}
    for k, suffix in enumerate(["", "_1", "_2", "_3"]):
        regions[f"b{suffix}"] = step(f"b{suffix}", k, True)
        regions[f"b_else{suffix}"] = step(f"b_else{suffix}", k, False)
    return type("Regions", (), regions)


def _forward(module_source: str, params: str):
    """`module_source`'s top-level statements as a host function: tables at module level, the rest its body."""
    lines = module_source.splitlines()
    tables = [line for line in lines if line[:1].isupper() or line.startswith(("    '", ")"))]
    body = [line for line in lines if line not in tables]
    namespace = {}
    exec(compile("\n".join(tables) + f"\ndef forward(regions, {params}):\n"
                 + "".join(f"    {line}\n" for line in body) + "    return out\n", "<host>", "exec"), namespace)
    return namespace["forward"]


def test_a_chain_of_decisions_becomes_a_loop_over_region_tables():
    rolled = _rolled(CHAIN)
    assert "for k in range(4):" in rolled
    assert "B = ('b', 'b_1', 'b_2', 'b_3')" in rolled and "getattr(regions, B[k])(h)" in rolled
    assert "out = h, c_1" in rolled  # the last condition, read after the loop, takes the loop's name
    unrolled, loop = _forward(CHAIN, "h, c"), _forward(rolled, "h, c")
    paths = set()
    for h in range(12):
        for c in (True, False):
            calls, loop_calls = [], []
            assert loop(_chain_regions(loop_calls), h, c) == unrolled(_chain_regions(calls), h, c)
            assert loop_calls == calls
            paths.add(tuple(calls))
    assert len(paths) > 4 and {"b_1", "b_else_1"} <= {name for path in paths for name in path}


def test_an_index_that_steps_with_the_iteration_becomes_the_loop_index():
    source = "".join(f"if p[0, {2 * k + 1}] > 0:\n    x = regions.f{k}(x)\nelse:\n    x = regions.g{k}(x)\n"
                     for k in range(4))
    assert "p[0, 2 * k + 1]" in _rolled(source)


@pytest.mark.parametrize("after, loop", [
    ("out = c_3", None),  # a condition of a middle iteration is read after the loop: nothing rolls
    ("out = h, c_1", "for k in range(3):"),  # the first condition: only the three stretches after it roll
])
def test_rolls_only_where_every_name_keeps_its_value(after, loop):
    source = CHAIN.replace("out = h, c_5", after)
    rolled = _rolled(source)
    assert (loop in rolled) if loop else "for k" not in rolled
    for h in range(12):
        for c in (True, False):
            assert _forward(rolled, "h, c")(_chain_regions([]), h, c) == _forward(source, "h, c")(_chain_regions([]), h, c)


def test_no_roll_where_an_iteration_reads_another_iterations_value():
    source = "a = regions.f(x)\nb = regions.f_1(a)\nc = regions.f_2(a)\nd = regions.f_3(c)\n"
    assert "for k" not in _rolled(source)


def test_no_roll_of_an_index_that_does_not_step_evenly():
    source = "".join(f"if p[{i}] > 0:\n    x = regions.f{k}(x)\n" for k, i in enumerate([0, 1, 3, 4]))
    assert "for k" not in _rolled(source)


def test_two_stretches_stay_unrolled():
    source = "\n".join(CHAIN.splitlines()[:9]) + "\nout = h, c_3\n"
    assert "for k" not in _rolled(source)


def test_blockdrop110_host_is_a_loop_and_matches(converted):
    import dycl

    result = converted(os.path.join(ROOT, "models_zoo", "blockdrop110.py"), check=20, fuse="none")
    assert result.check.passed and result.check.eta == 0, result.check.failure
    with open(os.path.join(result.out, "host.py"), encoding="utf-8") as fh:
        host = fh.read()
    assert len(host.splitlines()) < 80
    assert "for k in range(53):" in host and "policy[0, k].item() == 1" in host
    net = dycl.load(result.out)
    gen = torch.Generator().manual_seed(5)
    arms = set()
    for _ in range(6):
        x = torch.randn(1, 3, 32, 32, generator=gen)
        with torch.no_grad():
            expected = result.spec.model(x)
            policy = expected[1]
        arms |= set(policy.flatten().tolist())
        got = net(x.numpy())
        np.testing.assert_allclose(got[0], expected[0].numpy(), rtol=1e-4, atol=1e-4)
    assert arms == {0.0, 1.0}  # blocks both run and skipped


def test_skipnet38_host_is_three_loops_named_for_its_blocks(converted):
    result = converted(os.path.join(ROOT, "models_zoo", "skipnet38.py"), check=20, fuse="none")
    assert result.check.passed and result.check.eta == 0 and result.check.paths >= 3, result.check.failure
    with open(os.path.join(result.out, "host.py"), encoding="utf-8") as fh:
        host = fh.read()
    assert len(host.splitlines()) < 60
    assert host.count("for k in range(") == 3
    # regions named for the block they run, spelled from the loop index
    assert 'getattr(regions, f"groups_0_{k}_L36")' in host and "regions.ds_layers_group2_ds0_L141(" in host
