"""Counters and masks built with `torch.tensor(<literal>)` inside the gated code (SkipNet's DyCL method).

A gate reads the input; `count = torch.tensor([0])` starts a counter that an
open gate replaces with `torch.tensor([1])` and then increments, and each arm
builds its own mask from a literal, negative numbers and nested lists
included. Tracing registers each such tensor as a constant, which is right
for literal data.
"""

import torch
import torch.nn as nn


class LiteralCounter(nn.Module):
    def __init__(self, width=6):
        super().__init__()
        self.gate = nn.Linear(width, 2)
        self.body = nn.Linear(width, width)

    def forward(self, x):
        count = torch.tensor([0])
        scores = torch.softmax(self.gate(x), dim=1)
        if scores[:, 1] > 0.5:
            count = torch.tensor([1])
            mask = torch.tensor([[1.0, -0.5, 2.0, 1.0, 1.0, 0.25]])
            x = self.body(x) * mask
            count = count + 1
        else:
            mask = torch.tensor([[0.5] * 6], dtype=torch.float32)
            x = x * mask
        return x, count


def get_model():
    torch.manual_seed(0)
    model = LiteralCounter()
    with torch.no_grad():  # the gate opens when feature 0 is positive
        model.gate.weight.zero_()
        model.gate.bias.zero_()
        model.gate.weight[1, 0] = 3.0
    return model.eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = torch.randn(1, 6, generator=gen)
        x[0, 0] = (1.0 if i % 2 else -1.0) * (0.5 + torch.rand(1, generator=gen).item())
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
