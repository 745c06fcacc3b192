"""`while True:` whose only `break` sits under a branch folded away: forward never returns."""

import torch
import torch.nn as nn


class Endless(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = nn.Linear(4, 4)
        self.stop_early = False

    def forward(self, x):
        while True:
            x = torch.tanh(self.step(x))
            if self.stop_early:
                break
        return x


def get_model():
    return Endless().eval()


def get_inputs():
    return (torch.randn(1, 4),)
