"""`x[idx.tolist()]` of the rows whose first value is positive: a list whose length changes with the input.

In a region the list's items are graph inputs, one each, so the length is fixed when the model is
converted; the samples give lists of two lengths. Converted from the example and the first sample alone
(both with two such rows), the package refuses an input with three instead of indexing with two.
"""
import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x):
        idx = (x[:, 0] > 0).nonzero().squeeze(1)
        y = x[idx.tolist()]
        return y.sum(0)


def get_model():
    return M().eval()


def sample_inputs(n, seed=0):
    """2, 1, 3, 2, 1, 3, ... rows whose first value is positive."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = torch.randn(6, 6, generator=gen)
        x[:, 0] = -1.0
        x[: (2, 1, 3)[i % 3], 0] = 1.0
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
