"""Adaptive computation: a `while` on an accumulated halting probability and a step counter,
with a `continue` inside; the counter is a host int returned to the caller."""
import torch
from torch import nn

class ACT(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.cell = nn.GRUCell(d, d)
        self.halt = nn.Linear(d, 1)
        self.out = nn.Linear(d, 3)
        self.eps = 0.01
        self.max_steps = 6

    def forward(self, x):
        h = torch.zeros_like(x)
        halting = torch.zeros(1)
        acc = torch.zeros_like(x)
        n = 0
        while halting.item() < 1 - self.eps and n < self.max_steps:
            h = self.cell(x, h)
            p = torch.sigmoid(self.halt(h)).reshape(1)
            n += 1
            if n == 2 and p.item() < 0.45:
                continue
            acc = acc + p * h
            halting = halting + p
        return self.out(acc), n

def get_model():
    torch.manual_seed(0)
    return ACT().eval()

def get_inputs():
    return (torch.randn(1, 8),)

def sample_inputs(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 8, generator=g) * 3,) for _ in range(n)]
