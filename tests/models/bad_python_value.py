"""A test on `torch.equal`: a Python bool computed from tensors, which no compiled graph returns."""
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)

    def forward(self, x):
        h = self.a(x)
        if torch.equal(torch.relu(h), h):
            return h * 2
        return h


def get_model():
    torch.manual_seed(0)
    return M().eval()


def get_inputs():
    return (torch.ones(1, 2),)
