"""A NaN in the input must decide as torch does.

torch's argmax returns the index of a NaN, its max/amax and max_pool return
NaN where their window holds one, clamp keeps it. The branch on the argmax
must go the same way in the package for a NaN at any position.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

WIDTH = 16


class NanDecisions(nn.Module):
    def __init__(self):
        super().__init__()
        self.low = nn.Linear(WIDTH, 4)
        self.high = nn.Linear(WIDTH, 4)

    def forward(self, x):
        k = int(torch.argmax(x, dim=1).item())
        clean = torch.nan_to_num(x, nan=0.0)
        if k >= WIDTH // 2:
            y = self.high(clean)
        else:
            y = self.low(clean)
        pooled = F.max_pool1d(x.unsqueeze(1), 4).flatten(1)
        top = torch.topk(x, 3, dim=1)[1]
        return k, y, pooled, torch.amax(x, dim=1), torch.argmin(x, dim=1), torch.relu(x), top


def get_model():
    torch.manual_seed(0)
    return NanDecisions().eval()


def sample_inputs(n, seed=0):
    """The largest value alternates between the low and the high half."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = torch.randn(1, WIDTH, generator=gen)
        x[0, (i * 5) % WIDTH] = 4.0
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]

