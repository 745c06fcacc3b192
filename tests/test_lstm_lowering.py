"""ONNX LSTM nodes written as primitive ops (for TVM): same outputs as torch, and as onnxruntime's LSTM."""
import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from dycl.backends.lstm_lowering import lower_lstm


class _Lstm(torch.nn.Module):
    def __init__(self, bidirectional=False):
        super().__init__()
        self.rnn = torch.nn.LSTM(5, 4, bidirectional=bidirectional)

    def forward(self, x, h, c):
        out, (h1, c1) = self.rnn(x, (h, c))
        return out, h1, c1


def _export(model, args) -> onnx.ModelProto:
    buf = io.BytesIO()
    torch.onnx.export(model, args, buf, dynamo=False)
    return onnx.load_from_string(buf.getvalue())


def _run(model: onnx.ModelProto, args) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString())
    return session.run(None, {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)})


@pytest.mark.parametrize("steps", [1, 3])
def test_lowered_lstm_matches_torch(steps):
    torch.manual_seed(steps)
    model = _Lstm().eval()
    args = (torch.randn(steps, 2, 5), torch.randn(1, 2, 4), torch.randn(1, 2, 4))
    graph = _export(model, args)
    assert lower_lstm(graph) == 1
    onnx.checker.check_model(graph)
    assert "LSTM" not in {n.op_type for n in graph.graph.node}
    with torch.no_grad():
        expected = [t.numpy() for t in model(*args)]
    for got, want in zip(_run(graph, args), expected):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_bidirectional_lstm_is_left_alone():
    model = _Lstm(bidirectional=True).eval()
    args = (torch.randn(2, 1, 5), torch.randn(2, 1, 4), torch.randn(2, 1, 4))
    graph = _export(model, args)
    assert lower_lstm(graph) == 0
    assert "LSTM" in {n.op_type for n in graph.graph.node}
