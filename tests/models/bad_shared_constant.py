"""`b = a` shares a constant tensor; `a += 1` then changes both, which folding cannot follow."""

import torch
import torch.nn as nn


class SharedConstant(nn.Module):
    def forward(self, x):
        a = torch.tensor(1.0)
        b = a
        a += 1
        return x * b


def get_model():
    return SharedConstant().eval()


def get_inputs():
    return (torch.randn(1, 2),)
