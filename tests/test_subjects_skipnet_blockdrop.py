"""The DyCL paper's own subjects, unmodified, through their own DyCL methods: SkipNet-38 with the
recurrent gate (`ResNetRecurrentGateRL.adaptive_forward_compile`), SkipNet-38 with feed-forward gates
(`ResNetFeedForwardSP.adaptive_forward_compile`) and BlockDrop-110 with its policy network
(`MyFlatResNet32.adaptive_forward_compile`).

The adapters in tests/subjects/ import the classes from ../shared/dycl-adnn
and only build them (seeded weights; the residual branches' last batch-norm
scale set small so 18-54 blocks stay near unit scale). Each must convert on
onnxruntime and TVM and match the original on 50 samples taking many paths.
"""
import os

import pytest

from conftest import MODELS, ROOT

SUBJECTS = os.path.join(ROOT, "tests", "subjects")
# Distinct paths the natural inputs (example + 50 samples) take, measured: at least this many.
PATHS = {"skipnet_rnn": 20, "skipnet_ff": 10, "blockdrop": 30}


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
    # The recurrent gate's `torch.zeros([1, batch_size, hidden_dim])` reads the batch size inside its
    # region (a shape the exporter sees) since size reads stay in regions: every region compiles with TVM.
    assert not result.fallbacks, result.fallbacks


def test_policy_log_fused_blocks_get_their_own_graphs(converted):
    result = converted(os.path.join(MODELS, "policy_log.py"), check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4
    gates = [d for d in result.program.decisions if "forward" in repr(d.origin)]
    assert len(gates) == 4
    for gate in gates:
        arms = {taken for d, taken in result.exploration.natural_arms if d == gate.decision}
        assert arms == {True, False}, f"gate {gate.decision} only went {arms}"
    blocks = [s for s in result.signatures if s.name.startswith("block_")]
    assert len(blocks) >= 2  # runs between the asserts, each starting on the policy helper's line
    assert len({s.name for s in blocks}) == len(blocks)
    assert len({s.artifact for s in blocks}) == len(blocks)


def test_policy_log_bookkeeping_on_the_model_leaves_no_host_code(converted):
    result = converted(os.path.join(MODELS, "policy_log.py"), check=20)
    with open(os.path.join(result.out, "host.py"), encoding="utf-8") as fh:
        host = fh.read()
    assert ".append(" not in host


def test_policy_log_lstm_compiles_on_tvm(converted):
    # TVM's ONNX front end has no LSTM: dycl writes it as MatMul/Sigmoid/Tanh steps (backends/lstm_lowering).
    result = converted(os.path.join(MODELS, "policy_log.py"), backend="tvm", check=20)
    assert result.check.passed and result.check.eta == 0 and result.check.delta <= 1e-4
    assert result.check.paths >= 4
    assert not result.fallbacks, result.fallbacks


def test_region_with_control_flow_of_its_own_is_fused(converted):
    import numpy as np
    import torch

    import dycl

    result = converted(os.path.join(MODELS, "c_gated_maxpool.py"), check=20)
    assert result.check.passed and result.check.paths == 2
    assert not [u for u in result.unfused if "control flow of its own" in u], result.unfused
    assert any("runs" in f for f in result.fused), result.unfused
    x = torch.randn(1, 3, 8, 8) + 1.0
    x[0, 1, 2, 3] = float("nan")  # the MaxPool's NaN guard takes its other arm inside the fused graph
    with torch.no_grad():
        expected = result.spec.model(x).numpy()
    got = dycl.load(result.out)(x.numpy())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(expected), atol=1e-5)
