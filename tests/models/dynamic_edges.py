"""A dynamic batch at its edges: `n = len(x)`, a branch on the batch, and `h[:n // 2 + 1]`.

The `else` arm runs only for batches of at most 3, so a region behind it is
reached at sizes other than the example's only when exploration tries the
smallest sizes (0, 1, 2) as well.
"""

import torch
import torch.nn as nn

DYNAMIC = {"x": {0: "batch"}}


class Edges(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        n = len(x)
        h = self.lin(x)
        if x.shape[0] > 3:
            h = h * 2
        else:
            h = h - 1
        return h[:n // 2 + 1]


def get_model():
    torch.manual_seed(0)
    return Edges().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 6, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
