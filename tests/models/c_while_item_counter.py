"""A `while` on a Python float from `.item()` and a counter, with a list of per-step values and a
`break` at the end of the body: the loop runs zero times on some inputs, stops on its test, on the
`break` or at the cap on others."""
import torch
from torch import nn


class Halting(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = nn.Linear(8, 8)
        self.score = nn.Linear(8, 1)
        self.cap = 6

    def forward(self, x):
        h = x
        total = torch.sigmoid(self.score(h)).sum()
        n = 0
        outs = [x.sum(-1)]
        while total.item() < 2.5 and n < self.cap:
            h = torch.tanh(self.step(h) * 1.5)
            total = total + 0.33 * torch.sigmoid(self.score(h)).mean()
            n += 1
            outs.append(h.sum(-1))
            if h.abs().max() > 0.99:
                break
        return h, n, torch.stack(outs, 1)


def get_model():
    torch.manual_seed(0)
    return Halting().eval()


def get_inputs():
    return (torch.randn(4, 8),)


def sample_inputs(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 8, generator=g) * (0.05, 0.2, 0.5, 2.0, 4.0, 6.0)[i % 6],) for i in range(n)]
