"""A Python int computed from a tensor feeds torch.roll, whose ONNX form takes the shift as a constant.

The exported graph would freeze the shift seen at export and be wrong on
every other input: conversion must refuse it. The second output is empty
for every input (a zero-size float array), which the check must handle.
"""

import torch
import torch.nn as nn


class FrozenShift(nn.Module):
    def forward(self, x):
        k = int(x.argmax()) % 4 + 1
        return torch.roll(x, k, 1) * 2, x[:, :0]


def get_model():
    return FrozenShift().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 8, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
