"""One path takes nearly every sample: no early exit, the residual block, no rescaling.

Four decisions read values of three kinds: a Python float from `.item()`
(`energy`, also used in the tensor math after it), an int that indexes a table
on the common path only (off it, the index is out of range: a graph of the
common path fails there), a tensor test and a host scalar computed late on
the path. sample_inputs puts 49 of 50 samples (and the example) on the common
path; sample 10 exits early. `path_input(kind)` makes an input for each path,
rare ones included, for tests.
"""

import torch
import torch.nn as nn

DIM = 32


class Dominant(nn.Module):
    def __init__(self, dim=DIM, classes=4):
        super().__init__()
        self.stem = nn.Linear(dim, dim)
        self.block = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.alt = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn(16, dim))
        self.exit_head = nn.Linear(dim, classes)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        energy = x.abs().mean().item()
        if energy < 0.05:
            return self.exit_head(h)
        k = (x[0, 1] * 10).long().item()
        if k < 16:
            h = h + self.table[k]
        if x[:, 0].sum() > 0:
            h = self.block(h) + h
        else:
            h = self.alt(h)
        scale = h.abs().max().item()
        if scale > 1000.0:
            h = h / scale
        return self.head(h) * energy


def get_model():
    torch.manual_seed(0)
    return Dominant().eval()


def path_input(kind: str, seed: int = 0):
    """An input taking one path: "common", "exit" (tiny), "far" (index out of the table), "negative" (first
    feature < 0), "huge" (rescaled)."""
    gen = torch.Generator().manual_seed(seed)
    x = 0.5 + torch.rand(1, DIM, generator=gen)
    if kind == "exit":
        x = x * 0.01
    elif kind == "far":
        x[:, 1] = 3.0
    elif kind == "negative":
        x[:, 0] = -x[:, 0]
    elif kind == "huge":
        x = x * 1e5
    return (x,)


def sample_inputs(n, seed=0):
    return [path_input("exit" if k == 10 else "common", seed * 1000 + k) for k in range(n)]


def get_inputs():
    return path_input("common", 12345)
