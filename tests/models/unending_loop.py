"""A data-dependent loop that never ends on the example: its test stays true forever."""

import torch
import torch.nn as nn


class Unending(nn.Module):
    def forward(self, x):
        while x.sum() > -1:
            x = x.abs() + 1
        return x


def get_model():
    return Unending().eval()


def get_inputs():
    return (torch.ones(1, 4),)
