"""Constant tensors updated in place: `scale.mul_(2)` and `offset[0] = 3.0` make them run-time tensors
(folding would lose the update), `count += 1` on an int tensor keeps its dtype."""

import torch
import torch.nn as nn


class ConstantInplace(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(2, 2)

    def forward(self, x):
        scale = torch.tensor([1.0, 2.0])
        scale.mul_(2)
        offset = torch.tensor([0.5, 0.5])
        offset[0] = 3.0
        count = torch.tensor(1, dtype=torch.int32)
        count += 2
        return self.body(x) * scale + offset, count


def get_model():
    torch.manual_seed(0)
    return ConstantInplace().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 2, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
