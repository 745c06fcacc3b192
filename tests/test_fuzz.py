"""The differential fuzzer (scripts/fuzz.py): a fixed slice of its programs, its comparison, its findings."""
import os
import sys

import numpy as np
import pytest

from conftest import MODELS, ROOT
from dycl.convert import ConvertOptions, convert
from rewrite import ConversionError

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import fuzz  # noqa: E402


def _report(run) -> str:
    if not run.failure:
        return run.summary()
    with open(run.failure_file, encoding="utf-8") as fh:
        return f"{run.summary()}\n{run.failure.kind}: {run.failure.detail}\n{fh.read()}"


@pytest.mark.parametrize("backend, programs", [("onnxruntime", 100), ("tvm", 15)])
def test_fuzz_slice(tmp_path, backend, programs):
    # A fixed seed and no example database: the same programs every run. TVM takes 0.3-3 s per
    # region to compile, so its slice is smaller; scripts/fuzz.py runs thousands (see README).
    # A failure is reported as drawn (shrinking takes minutes): `scripts/fuzz.py --programs N` shrinks it.
    run = fuzz.fuzz(backend, programs, seed=0, out=str(tmp_path), avoid=fuzz.known_bugs(backend), shrink=False)
    assert run.failure is None, _report(run)
    assert run.programs == programs
    assert run.counts["mismatched"] == run.counts["crashed"] == 0
    assert run.counts["matched"] >= programs // 2, run.summary()  # most programs convert


def test_same_compares_nan_aware():
    nan, inf = float("nan"), float("inf")
    a = np.array([[nan, 1.0, inf]], np.float32)
    assert fuzz.same(a, a.copy()) == ""
    assert fuzz.same((a, 3, [True]), (a.copy(), 3, [True])) == ""
    assert fuzz.same(nan, nan) == "" and fuzz.same(1.0, 1.0 + 1e-7) == ""
    assert "NaN" in fuzz.same(a, np.array([[0.0, 1.0, inf]], np.float32))
    assert "infinities" in fuzz.same(a, np.array([[nan, 1.0, -inf]], np.float32))
    assert "differ" in fuzz.same(a, np.array([[nan, 1.1, inf]], np.float32))
    assert fuzz.same(np.array([1, 2]), np.array([1, 3]))
    assert fuzz.same(a, a.astype(np.float64))  # dtypes must agree
    assert fuzz.same((a,), [a])  # and container types
    assert fuzz.same({"n": 1}, {"n": True})  # and scalar types
    assert fuzz.same(nan, 0.0)
    assert fuzz.same({"a": [np.float32(0.0), 0.0]}, {"a": [np.float32(0.0), 1e-3]})
    assert fuzz.same({"a": [np.float32(0.0), 0.0]}, {"a": [np.float32(0.0), 1e-3]}, atol=1e-2) == ""  # nested too


def test_unreached_code_is_a_diagnostic(tmp_path, monkeypatch):
    # Found by the fuzzer: a region no input reaches failed the conversion in step explore, with
    # no diagnostic. It is refused like any unsupported construct, at the code's line.
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(os.path.join(MODELS, "unreached_if.py"), str(tmp_path / "out"), check=4))
    assert info.value.format() == """\
tests/models/unreached_if.py:19:13: error: no input reached this code, even with every decision forced \
[unreached-code]
                h = h + torch.tanh(h[100])
                ^
  Explanation: its region (h_L19) is exported at the shapes seen when the model runs, and no sample input took \
the path to it; forcing each `.item()`/tensor decision both ways did not reach it either, nor did forcing the shape \
tests no run passed (decisions on Python values cannot be forced)
  Hint: add sample_inputs() that take this path, or remove the code if it can never run

1 error: the model cannot be converted as written."""
    assert not (tmp_path / "out").exists()


def test_loop_no_input_enters_converts(converted):
    # The fuzzer's first unreached loop (`while k0 < 1 and score >= 1.0:` with score 0.0): exploration also
    # runs each `while` exactly once and twice, so its body has shapes, and the package agrees with the model.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_unreached_loop.py"), check=4)
    net = dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(3, seed=5):
        with torch.no_grad():
            expected = result.spec.model(x).numpy()
        assert fuzz.same(expected, net(x.numpy())) == ""


def test_unrolled_loop_fuses_each_iteration_apart(converted):
    # Found by the fuzzer: the graphs fused from one stretch of an unrolled loop shared a name,
    # so the last one built replaced the others' artifact.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_unrolled_fusion.py"), check=6)
    assert result.check.passed, result.check.failure
    blocks = [s.name for s in result.signatures if s.fuses]
    assert len(blocks) >= 2 and len(set(blocks)) == len(blocks)
    net = dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(8, seed=3):
        with torch.no_grad():
            expected = result.spec.model(x)[0].numpy()
        np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)


def test_region_behind_two_decisions_gets_the_dynamic_dim(converted):
    # Found by the fuzzer: the region after `elif ...: else:` was reached at one batch size only.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_elif_dims.py"), check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    arms = set()
    for rows in (1, 3, 7):
        for shift in (3.0, -3.0):  # sums far above zero (first arm) and far below (the last else)
            x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(rows)) + shift
            with torch.no_grad():
                arms.add(bool(model.layers[0](x).sum() > 0))
                expected = model(x)[0].numpy()
            np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
    assert arms == {True, False}


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_mean_of_an_empty_batch_is_nan(converted, backend):
    # Found by the fuzzer: ReduceMean over no elements gave 0 where torch gives NaN.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_empty_mean.py"), backend=backend, check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    arms = set()
    for rows, shift in ((0, 0.0), (2, 3.0), (2, -3.0), (5, 3.0)):
        x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(rows)) + shift
        with torch.no_grad():
            arms.add(bool(model.layers[0](x).mean() > 0))
            expected = [t.numpy() for t in model(x)]
        got = net(x.numpy())
        for e, g in zip(expected, got):
            assert fuzz.same(e, g) == "", (rows, shift)
    assert arms == {True, False}
    assert np.isnan(net(np.zeros((0, 4), np.float32))[1]).all()


def test_arm_only_an_empty_batch_takes_gets_every_size(converted):
    # Found by the fuzzer: that arm's region was exported for 0 rows only, and wrongly (the conversion failed).
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_empty_only_arm.py"), check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    arms = set()
    for rows, shift in ((0, 0.0), (3, 3.0), (3, -3.0), (2, 0.0)):
        x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(rows)) + shift
        with torch.no_grad():
            h = model.layers[0](x)
            arms.add("if" if h.sum() > 0 else "elif" if (h > 0).all() else "else")
            expected = [v.numpy() if isinstance(v, torch.Tensor) else v for v in model(x)]
        assert fuzz.same(tuple(expected), net(x.numpy())) == "", (rows, shift)
    assert arms == {"if", "elif", "else"}


def test_fused_stretch_that_computes_nothing_stays_in_the_host(converted):
    # Found by the fuzzer: a fused graph without outputs, which onnxruntime cannot run.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_fused_dead_store.py"), check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    gen = torch.Generator().manual_seed(1)
    arms = set()
    for _ in range(200):
        x = torch.randn(1, 4, generator=gen) * 3
        with torch.no_grad():
            h = model.layers[0](x)
            arms.add((bool(h.sum() > 0), bool(h.sum() > 0 and model.layers[0](h).sum() > 0)))
            expected = model(x)["head"].numpy()
        np.testing.assert_allclose(net(x.numpy())["head"], expected, rtol=1e-4, atol=1e-5)
    assert arms == {(False, False), (True, True), (True, False)}


def test_negated_and_keeps_its_parentheses(converted):
    # Found by the fuzzer: `not (a and b)` was written `not (a) and (b)` in host.py.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_negated_and.py"), check=20, fuse="none")  # the test in host.py
    assert "if not ((s > 0.0) and cond_L21):" in open(os.path.join(result.out, "host.py")).read()
    net = dycl.load(result.out)
    model = result.spec.model
    gen = torch.Generator().manual_seed(1)
    arms = set()
    for _ in range(100):
        x = torch.randn(1, 4, generator=gen) * 3
        with torch.no_grad():
            arms.add((bool(model.layers[0](x).sum() > 0), bool(x.mean() > 0)))
            expected = tuple(v.numpy() if isinstance(v, torch.Tensor) else v for v in model(x))
        assert fuzz.same(expected, net(x.numpy())) == "", x
    assert arms == {(False, False), (False, True), (True, False), (True, True)}


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_reductions_over_an_empty_batch(converted, backend):
    # Found by the fuzzer on TVM: sums over no rows were uninitialised, and an empty array's strides refused.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_tvm_empty_batch.py"), backend=backend, check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    arms = set()
    for x in (torch.zeros(0, 4), torch.rand(3, 4), torch.rand(3, 4) - 3.0, torch.zeros(0, 4) - 1.0):
        with torch.no_grad():
            out, arm = model(x)
        arms.add(arm)
        got = net(x.numpy() if x.numel() else np.zeros((0, 4), np.float32))  # numpy's empty arrays: strides (0, 0)
        assert fuzz.same((out.numpy(), arm), got) == "", x.shape
    assert arms == {1, 3}


def test_tvm_package_replaced_in_place_loads_its_new_code(tmp_path):
    # Found by the fuzzer, which converts every program into one folder: dlopen handed back the
    # library loaded before from the same path, so the second package ran the first one's regions.
    import torch

    import dycl

    out = str(tmp_path / "pkg")
    with open(os.path.join(MODELS, "fuzz_empty_mean.py"), encoding="utf-8") as fh:
        source = fh.read()
    for seed in (0, 1):  # the same regions (and file names), other weights
        path = tmp_path / f"model_{seed}.py"
        path.write_text(source.replace("torch.manual_seed(0)", f"torch.manual_seed({seed})"))
        opts = ConvertOptions(str(path), out, "tvm", check=4)
        opts.jobs = 1
        result = convert(opts)
        x = torch.rand(3, 4)
        with torch.no_grad():
            expected = tuple(v.numpy() if isinstance(v, torch.Tensor) else v for v in result.spec.model(x))
        assert fuzz.same(expected, tuple(dycl.load(out)(x.numpy()))) == "", seed


def test_tvm_takes_empty_arrays_whatever_their_strides(tmp_path):
    # Found by the fuzzer: at 0 rows an array with strides (0, 0) reached a TVM region, which refused it.
    outcome = fuzz.run_program(os.path.join(MODELS, "fuzz_tvm_empty_strides.py"), "tvm", str(tmp_path / "out"))
    assert outcome.kind == "matched", outcome


@pytest.mark.parametrize("fuse", ["none", "all"])
def test_break_after_an_if_that_continues(converted, fuse):
    # Found by the fuzzer: the unrolled loop dropped a `break` that only runs when the `if` holds.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_break_after_continue.py"), check=20, fuse=fuse)
    net = dycl.load(result.out)
    model = result.spec.model
    gen = torch.Generator().manual_seed(2)
    trips = set()
    for _ in range(60):
        x = torch.randn(1, 4, generator=gen) * 3
        with torch.no_grad():
            h, n = model.layers[0](x), 0
            while n < 3:
                n += 1
                if h.sum() > 0:
                    break
                h = model.layers[0](h)
            trips.add(n)
            expected = model(x)[0].numpy()
        np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
    assert len(trips) >= 2


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_region_reached_at_one_size_gets_a_symbolic_dim(converted, backend):
    # Found by the fuzzer (KNOWN_BUGS "wide"): the loop body behind `h.shape[0] > 3` was reached at 5 rows
    # only and kept 5 as a static dim; the package refused 257 rows.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_one_size_region.py"), backend=backend, check=6)
    body = next(s for s in result.signatures if s.name == "layers_0_L35")  # the loop body
    assert body.input_leaves[0].shape == ("batch", 4)
    net = dycl.load(result.out)
    model = result.spec.model
    for rows in (0, 1, 3, 4, 5, 9, 257):  # the loop runs from 4 rows on
        x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(rows))
        with torch.no_grad():
            expected = model(x)[0].numpy()
        assert fuzz.same(expected, net(x.numpy())[0]) == "", rows


def test_arm_only_an_empty_batch_reaches_is_exported_for_every_size(converted):
    # Found by the fuzzer: the `elif` only 0 rows reach was exported for a static [0, 4] input, where the
    # exporter gives `h.sum()` the shape [1, 1]; the conversion failed in step export.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_empty_only_region.py"), check=6)
    net = dycl.load(result.out)
    model = result.spec.model
    for rows in (0, 1, 2, 257):
        x = torch.randn(rows, 4, generator=torch.Generator().manual_seed(rows))
        with torch.no_grad():
            expected = model(x)[0].numpy()
        assert fuzz.same(expected, net(x.numpy())[0]) == "", rows
    outcome = fuzz.run_program(os.path.join(MODELS, "fuzz_empty_only_region.py"), "onnxruntime",
                               os.path.join(os.path.dirname(result.out), "fuzz-empty-only"))
    assert outcome.kind == "matched", outcome  # with the fuzzer's edge inputs: NaN, Inf, 0, 1 and 257 rows


def test_code_that_runs_at_one_size_only_is_a_diagnostic(tmp_path, monkeypatch):
    # Where replaying the path at other sizes fails, dycl cannot tell which dims follow the batch: it refuses.
    # `x.shape[0] == 5` pins x's batch dim, not h's (the region's input, whose rows vary at that test).
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConversionError) as info:
        convert(ConvertOptions(os.path.join(MODELS, "one_size_only.py"), str(tmp_path / "out"), check=4))
    assert info.value.format() == """\
tests/models/one_size_only.py:22:13: error: this code ran at one size of `batch` only [one-size-code]
                h = h.reshape(20)[:4].expand(5, 4)
                ^
  Explanation: its region (h_L22) was reached only with batch = 5, and taking the same decisions at the other \
sizes exploration tried failed, so which of its input dims follow that size cannot be told (a dim fixed at one \
size would refuse the others); the shape test on the way to it fixes `x` dim 0 = 5, but not `h` dim 0
  Hint: add sample_inputs() at other sizes that take this path, or make the code run at every size

1 error: the model cannot be converted as written."""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("model", ["fuzz_tvm_sub_self.py", "fuzz_tvm_maximum_self.py"])
def test_tvm_keeps_nan_from_infinities(tmp_path, model):
    # Found by the fuzzer on TVM: `v - v` folded to 0, and `torch.maximum(h, h)` turning -inf into -3.4e38,
    # answered numbers where torch answers NaN. Repaired for TVM, so the regions stay on TVM.
    import torch

    import dycl

    opts = ConvertOptions(os.path.join(MODELS, model), str(tmp_path / "out"), "tvm", check=4)
    opts.jobs = 1
    result = convert(opts)
    assert result.fallbacks == [] and {s.backend for s in result.signatures if s.artifact} == {"tvm"}
    net = dycl.load(result.out)
    module = fuzz._import(os.path.join(MODELS, model))
    nonfinite = 0
    for inputs in module.sample_inputs(4) + module.edge_inputs():  # edges: NaN, +-inf, all NaN, x1e4
        with torch.no_grad():
            expected = result.spec.model(*inputs)[0].numpy()
        nonfinite += int(np.isnan(expected).any())
        assert fuzz.same(expected, net(*[t.numpy() for t in inputs])[0]) == ""
    assert nonfinite >= 2


def test_tvm_region_wrong_at_nan_runs_on_onnxruntime(tmp_path, monkeypatch):
    # Where TVM's answer for NaN or infinities differs from torch's and no repair covers it, verification on
    # inputs holding them finds it, and the region runs on onnxruntime (said in the summary), not wrongly.
    import torch

    import dycl
    from dycl.backends import tvm_ieee

    monkeypatch.setattr(tvm_ieee, "repair", lambda model: False)  # TVM as it is: `v - v` folded to 0
    opts = ConvertOptions(os.path.join(MODELS, "fuzz_tvm_sub_self.py"), str(tmp_path / "out"), "tvm", check=4)
    opts.jobs = 1
    result = convert(opts)
    assert len(result.fallbacks) == 1 and "on inputs with NaN in the first element" in result.fallbacks[0], \
        result.fallbacks
    x = torch.randn(1, 4)
    x[0, 0] = float("nan")
    with torch.no_grad():
        expected = result.spec.model(x)[0].numpy()
    assert np.isnan(expected).all()
    assert fuzz.same(expected, dycl.load(result.out)(x.numpy())[0]) == ""


@pytest.mark.parametrize("backend, fuse", [("onnxruntime", "none"), ("tvm", "all")])
def test_state_grown_by_a_loop_no_sample_repeats_gets_a_symbolic_dim(tmp_path, backend, fuse):
    # Found by the fuzzer on TVM (KNOWN_BUGS "grow"): exploration could only cap a `while` loop's trips, so
    # the region growing acc saw it one column wide only; a NaN input runs the loop 3 times and was refused.
    import torch

    import dycl

    opts = ConvertOptions(os.path.join(MODELS, "fuzz_grow_loop.py"), str(tmp_path / "out"), backend, check=6)
    opts.fuse, opts.jobs = fuse, 1
    result = convert(opts)
    net = dycl.load(result.out)
    module = fuzz._import(os.path.join(MODELS, "fuzz_grow_loop.py"))
    widths = set()
    for inputs in module.sample_inputs(6, seed=1) + module.edge_inputs():
        with torch.no_grad():
            expected = tuple(t.numpy() for t in result.spec.model(*inputs))
        widths.add(expected[1].shape[1])
        assert fuzz.same(expected, net(*[t.numpy() for t in inputs])) == ""
    assert widths >= {1, 2, 4}  # 0, 1 and 3 trips


def test_shape_test_on_a_grown_tensor_is_not_folded(tmp_path):
    # A shape test that went one way in every run was folded when no input dim was dynamic; on a tensor a
    # loop grows, a longer run takes the other arm, and the package answered from the folded one. It stays a
    # host test; its arm, which no run took, is reached by forcing the test (a last resort for such code),
    # and an input of 1e6, whose loop runs 3 times, takes it in the package as in the model.
    import numpy as np
    import torch

    import dycl

    result = convert(ConvertOptions(os.path.join(MODELS, "grown_shape_test.py"), str(tmp_path / "out"), check=6))
    assert any(d.dclass == "shape" for d in result.program.decisions)
    net = dycl.load(result.out)
    widths = set()
    for scale in (1.0, 1e4, 1e6):
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(3)) * scale
        with torch.no_grad():
            expected = result.spec.model(x)
        got = net(x.numpy())
        widths.add(expected[1].shape[1])
        for a, b in zip(expected, got):
            np.testing.assert_allclose(b, a.numpy(), rtol=1e-4, atol=1e-4)
    assert 4 in widths and min(widths) < 4


@pytest.mark.parametrize("model, reader", [("fuzz_path_grown_width", "layers_0_L33_1"),
                                           ("fuzz_path_grown_elif_chain", "layers_0_L36_1")])
@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_state_grown_under_an_earlier_arm_gets_a_symbolic_dim(tmp_path, backend, model, reader):
    # Found by the fuzzer (2,000 programs on onnxruntime): acc grows under an `elif` in each iteration of an
    # unrolled loop. Forcing one decision at a time showed a later iteration's region acc at one width only;
    # an input taking the growing arm twice was refused by the package.
    import torch

    import dycl

    path = os.path.join(MODELS, f"{model}.py")
    opts = ConvertOptions(path, str(tmp_path / "out"), backend, check=10)
    opts.fuse, opts.jobs = "none", 1
    result = convert(opts)
    net = dycl.load(result.out)
    module = fuzz._import(path)
    outputs = set()
    for inputs in module.sample_inputs(30, seed=1) + module.edge_inputs():
        with torch.no_grad():
            expected = tuple(t.numpy() for t in result.spec.model(*inputs))
        assert fuzz.same(expected, net(*[t.numpy() for t in inputs])) == ""
        outputs.add(expected[0].tobytes())
    assert len(outputs) > 10
    # the region of the second iteration's growing arm reads acc 1 or 2 columns wide: dim 1 follows the path
    assert {sig[1][0][1] for sig in result.exploration.records[reader].examples} == {1, 2}


def test_code_after_arms_that_all_return_once_a_shape_test_folds_is_dropped(converted, tmp_path):
    # Found by the fuzzer: `h.shape[0] > 1` folded to its returning `else`, so nothing after the value
    # decision runs; that dead code still read `feats`, which the host never bound (step fold_shapes failed).
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_fold_dead_tail.py"), check=6)
    host = open(os.path.join(result.out, "host.py")).read()
    assert "feats" not in host and "head_L36" not in host
    net = dycl.load(result.out)
    model = result.spec.model
    arms = set()
    for shift in (3.0, -3.0, 0.0):
        x = torch.randn(1, 4, generator=torch.Generator().manual_seed(1)) + shift
        with torch.no_grad():
            arms.add(bool(model.layers[0](x).sum() > 0))
            expected = model(x)[0].numpy()
        np.testing.assert_allclose(net(x.numpy())[0], expected, rtol=1e-4, atol=1e-5)
    assert arms == {True, False}
    outcome = fuzz.run_program(os.path.join(MODELS, "fuzz_fold_dead_tail.py"), "onnxruntime", str(tmp_path / "fz"))
    assert outcome.kind == "matched", outcome


def test_argmax_of_a_near_tie_is_no_decision(tmp_path):
    # Found by the fuzzer (--seed 21): tanh saturated to 1.0 and 0.9999999 in one row; onnxruntime's argmax
    # picked the other one, and the check failed the conversion with η = 1 at δ = 3e-7.
    from dycl.check import decides_differently

    outcome = fuzz.run_program(os.path.join(MODELS, "fuzz_tanh_tie.py"), "onnxruntime", str(tmp_path / "out"))
    assert outcome.kind == "matched", outcome
    tie = np.array([[1.0, -1.0, 0.9999999, -1.0]], np.float32)
    assert not decides_differently(tie, tie[:, [2, 1, 0, 3]], 1e-4)  # within δ of each other: no decision
    apart = np.array([[1.0, -1.0, 0.999, -1.0]], np.float32)
    assert decides_differently(apart, apart[:, [2, 1, 0, 3]], 1e-4)  # 1e-3 apart: the original decides
    big = np.array([[3000.0, 2999.8]], np.float32)  # relative above 1, as δ is
    assert not decides_differently((big,), (big[:, ::-1].copy(),), 1e-4)
    assert decides_differently({"a": big}, {"a": big[:, ::-1].copy()}, 1e-6)
    assert decides_differently([np.array([1, 2])], [np.array([1, 3])], 1e-4)  # integers decide exactly
    assert not decides_differently((np.zeros((0, 4), np.float32), 3), (np.zeros((0, 4), np.float32), 3), 1e-4)


def test_fused_graph_does_not_take_a_list_an_arm_grew(converted):
    # Found by the fuzzer (--seed 21): the graph fused after `if g: feats.append(h)` took `feats` as one item.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_grown_list_fused.py"), check=6)
    assert not any("feats" in [p.name for p in s.inputs] for s in result.signatures if s.fuses)
    net = dycl.load(result.out)
    model = result.spec.model
    lengths = set()
    for shift in (3.0, -3.0, 0.0, -10.0, -30.0):  # the `if` holds at -10 and below, where no sample goes
        x = torch.randn(1, 4, generator=torch.Generator().manual_seed(2)) * 3 + shift
        with torch.no_grad():
            expected = model(x)[0]
        got = net(x.numpy())[0]
        lengths.add(len(expected))
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-5)
    assert lengths == {1, 2}


def test_graph_fused_in_a_loop_body_gives_back_what_its_next_iteration_reads(converted):
    # Found by the fuzzer (--seed 33): the graph fused before a `continue` did not return `h`, which only
    # its own next run reads, so the second iteration started from the first one's `h`.
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "fuzz_fused_loop_carry.py"), check=6)
    assert result.check.passed, result.check.failure
    fused = [s for s in result.signatures if s.fuses]
    assert fused and "h" in [p.name for p in fused[0].outputs]
    net = dycl.load(result.out)
    for (x,) in result.spec.sample_inputs(6, seed=3):
        with torch.no_grad():
            expected = result.spec.model(x)
        assert fuzz.same(expected, net(x.numpy())) == ""
