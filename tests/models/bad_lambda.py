"""A lambda that branches on a tensor."""

import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        f = lambda t: t * 2 if t.sum() > 0 else t - 1
        return f(self.a(x))


def get_model():
    torch.manual_seed(0)
    return M().eval()


def get_inputs():
    return (torch.randn(3, 4),)
