"""A Python int computed from a tensor used as a pooling kernel size, which ONNX takes as a constant.

The exported graph would freeze the kernel seen at export and be wrong on
other inputs: conversion must refuse it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FrozenKernel(nn.Module):
    def forward(self, x):
        k = int(x.argmax()) % 4 + 1
        return F.avg_pool1d(x.unsqueeze(0), k).squeeze(0) * 2


def get_model():
    return FrozenKernel().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 8, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
