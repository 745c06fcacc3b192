"""The rest of the DyCL paper's subjects, unmodified, through their own DyCL methods: a Shallow-Deep
Network (`ResNet_SDN.early_exit_compile`) and the image-caption model's greedy LSTM decoder with
attention (`CaptionModel.forward_compile`).

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
PATHS = {"sdn": 4, "caption": 7}


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
    assert not result.fallbacks  # every region compiles with TVM and keeps torch's NaN/inf results


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
