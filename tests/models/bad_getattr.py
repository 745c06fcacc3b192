"""A submodule picked by a name computed from a tensor."""

import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        name = "a" if x.sum() > 0 else "b"
        return getattr(self, name)(x)


def get_model():
    torch.manual_seed(0)
    return M().eval()


def get_inputs():
    return (torch.randn(3, 4),)
