"""torch.roll by shifts computed from tensor values: in the host (`k`) and inside a region (`int(j)`).

The exporter writes roll's shifts as constants; the package must still roll
by each input's own shift.
"""

import torch
import torch.nn as nn


class RolledByValue(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        k = int(x.argmax()) % 5
        j = self.lin(x).argmin() % 3
        y = torch.roll(x, k, 1) + x.roll(shifts=int(j), dims=-1)
        return torch.roll(y, -k) * 2


def get_model():
    torch.manual_seed(0)
    return RolledByValue().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 8, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
