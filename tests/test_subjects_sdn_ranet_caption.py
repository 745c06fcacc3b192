"""The rest of the DyCL paper's subjects, unmodified, through their own DyCL methods: a Shallow-Deep
Network (`ResNet_SDN.early_exit_compile`), RANet (`RANet.adaptive_forward_compile`) and the
image-caption model's greedy LSTM decoder with attention (`CaptionModel.forward_compile`).

The adapters in tests/subjects/ import the classes from ../shared/dycl-adnn and only build them
(seeded weights, the classifiers' scales and the models' own thresholds chosen so that sample
inputs leave at different exits). Each must convert on onnxruntime and TVM and match the
original on 50 samples taking several paths.
"""
import os

import pytest

from conftest import ROOT

SUBJECTS = os.path.join(ROOT, "tests", "subjects")
# Distinct paths the natural inputs (example + 50 samples) take, measured: at least this many.
PATHS = {"sdn": 4, "ranet": 5, "caption": 7}


def _assert_matches(result, name):
    check = result.check
    assert check.passed, check.failure
    assert check.samples == 50
    assert check.eta == 0 and check.delta <= 1e-4
    assert check.paths >= PATHS[name]
    assert all(d.dclass == "value" for d in result.program.decisions)


@pytest.mark.parametrize("name", sorted(PATHS))
def test_subject_onnxruntime(converted, name):
    _assert_matches(converted(os.path.join(SUBJECTS, f"{name}.py"), check=50), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATHS))
def test_subject_tvm(converted, name):
    result = converted(os.path.join(SUBJECTS, f"{name}.py"), backend="tvm", check=50)
    _assert_matches(result, name)
    left = {f.split(" ")[0]: f for f in result.fallbacks}
    if name != "ranet":
        assert not left, result.fallbacks  # every region compiles with TVM and keeps torch's NaN/inf results
    else:
        # Open: the two regions holding RANet's fusion blocks (ConvUpNormal) compile, but with +inf in
        # their inputs TVM's answer differs from torch's, so they run on onnxruntime. The op: a bilinear
        # F.interpolate to the size its input already has (ConvUpNormal's `x[1]` when not down-sampling),
        # where torch's kernel gives NaN at an infinity (x0 + 0 * (x1 - x0)) and TVM's Resize does not.
        assert set(left) == {"net_L446_1", "net_L446_2"}, result.fallbacks
        assert all("on inputs with +inf in the first element" in f for f in left.values()), result.fallbacks


def test_caption_stops_at_end_token_after_different_lengths(converted):
    # The decoding loop is unrolled (a static range): one decision per step, on `<end>`.
    result = converted(os.path.join(SUBJECTS, "caption.py"), check=50)
    assert len(result.program.decisions) == 12  # MAX_LENGTH steps


def test_sdn_exits_fold_to_confidence_tests(converted):
    # `if is_output:` on the blocks' `torch.tensor(1)` / `torch.tensor(0)` folds: one decision per
    # internal classifier (three), each its confidence test, and no block without one keeps a test.
    result = converted(os.path.join(SUBJECTS, "sdn.py"), check=50)
    assert len(result.program.decisions) == 3
    assert all("early_exit_compile" in repr(d.origin) for d in result.program.decisions)


def test_ranet_is_one_region_per_stretch_between_exits(converted):
    # RANet's dense and fusion blocks build lists (`res = [x[0], conv(x[0])]`, `output.append(x)`,
    # `inp = [low_feat[i]]`), test them (`if not isinstance(x, list)`, folded) and read sizes
    # (`_, _, h, w = x.size()` for F.interpolate): none of it needs the host. One region runs up to
    # each of the four exits' confidence tests, one returns the logits of the exits before, and one
    # the last exit's when no exit was confident enough.
    result = converted(os.path.join(SUBJECTS, "ranet.py"), check=50)
    assert len(result.program.decisions) == 4
    assert all("adaptive_forward_compile" in repr(d.origin) for d in result.program.decisions)
    assert len(result.program.regions) == 9
