"""Tracer warnings at export: a literal `torch.tensor` is a constant; a tensor or shape made into one is refused."""
import textwrap

import pytest

from dycl.convert import ConvertOptions, StepFailed, convert

MODEL = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            y = y + {data}
        return y


def get_model():
    return Net()


def get_inputs():
    return (torch.ones(1, 4),)


def sample_inputs(n, seed=0):
    return [(torch.full((1, 4), float(k - n // 2)),) for k in range(n)]
"""


def _convert(tmp_path, data: str):
    path = tmp_path / "net.py"
    path.write_text(textwrap.dedent(MODEL.format(data=data)))
    return convert(ConvertOptions(str(path), str(tmp_path / "out"), "onnxruntime", 6))


def test_tensor_from_a_run_time_value_is_refused(tmp_path):
    with pytest.raises(StepFailed) as info:
        _convert(tmp_path, "torch.tensor(y[0, 0])")
    assert info.value.step == "export"
    assert "turns a tensor into a Python value, which tracing would freeze into the graph" in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("data", ["torch.tensor([y.shape[1]]) * torch.tensor([1.0])",
                                  "torch.tensor([y[0, 0].item(), -1.0, 0.0, 2.0])"])
def test_tensor_from_a_list_of_run_time_values_stacks_them(tmp_path, data):
    """A list of Python values made at run time becomes the tensor of its items (rewrite/list_index.py),
    not a constant: the package follows the value on every input and arm."""
    result = _convert(tmp_path, data)
    assert result.check.passed and result.check.eta == 0 and result.check.paths == 2


def test_tensor_from_literals_is_a_constant(tmp_path):
    result = _convert(tmp_path, "torch.tensor([[1.0, -2.0, 0.5, 3]]) * torch.tensor(2.0)")
    assert result.check.passed and result.check.paths == 2
