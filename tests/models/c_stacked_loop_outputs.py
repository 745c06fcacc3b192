"""Rows collected in a loop over the batch, stacked, then reduced: `torch.stack(outs, 0).sum(0)`.

The list's length is the batch size, so the host stacks it and the region
gets one array. A data-dependent branch picks the head.
"""

import torch
import torch.nn as nn

DYNAMIC = {"x": {0: "batch"}}


class StackedLoopOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.up = nn.Linear(6, 3)
        self.down = nn.Linear(6, 3)

    def forward(self, x):
        h = self.lin(x)
        outs = []
        for i in range(x.shape[0]):
            outs.append(h[i].max() * h[i])
        pooled = torch.stack(outs, 0).sum(0)
        if pooled.mean() > 0:
            return self.up(pooled)
        return self.down(pooled)


def get_model():
    torch.manual_seed(0)
    return StackedLoopOutputs().eval()


def sample_inputs(n, seed=0):
    """Batches of 4 whose rows are shifted up or down, so the pooled mean takes both signs."""
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 6, generator=gen) + (2.0 if i % 2 else -2.0),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
