"""`x[picks]` of a list that gets an `int(...)` for each row whose first value is positive: its length
changes with the input, and a region takes one graph input per item."""
import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x):
        picks = []
        for i in range(4):
            if x[i, 0] > 0:
                picks.append(int(x[i, 1] > 0))
        return x[picks].sum(0)


def get_model():
    return M().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 3, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
