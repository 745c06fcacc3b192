"""Sizes read after tensor math (`_, c, h, w = y.size()`), used in the same stretch of tensor code
and after a decision.

`h, w` feed an `F.interpolate` right away: read in the region that computes `y`. `c` is used after
the confidence test, when `y` has been reassigned: the host reads it (a region cannot hand the host
a Python number). Samples take both arms.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SizeReads(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        y = self.conv(x)
        _, c, h, w = y.size()
        y = torch.relu(y) + F.interpolate(x[:, :1], size=(h, w), mode="bilinear", align_corners=False)
        logits = self.head(y.mean((2, 3)))
        if logits.softmax(-1).max() > 0.7:
            return logits
        return logits / c


def get_model():
    torch.manual_seed(0)
    model = SizeReads().eval()
    with torch.no_grad():
        model.head.weight.mul_(6.0)
    return model


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [((2 * torch.rand(1, 3, 1, 1, generator=gen) - 1) + 0.5 * torch.randn(1, 3, 8, 8, generator=gen),)
            for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
