"""In-place updates of an input (directly and through a view) and of a buffer."""

import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        h = self.a(x)
        x += 1
        x[0] = 0
        self.count += 1
        self.count.add_(1)
        rows = x[1:]
        rows.mul_(2)
        return h * self.count + x


def get_model():
    torch.manual_seed(0)
    return M().eval()


def get_inputs():
    return (torch.randn(3, 4),)
