"""A Python float set from a tensor on one arm and left at its initial constant on the other: the
constant is written out on the arm that keeps it, so `score` is bound on every path."""
import torch
from torch import nn


class Scored(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        score = 0.0
        if h.sum().item() > 0:
            score = h.mean().item()
        return h, score


def get_model():
    torch.manual_seed(0)
    return Scored().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(3 * torch.randn(1, 4, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
