"""Found by scripts/fuzz.py (shrunk): the `else:` of an `elif` seen at one batch size only.

The batch is dynamic. The samples reach the last `else:` (both sums <= 0)
at batch 1 only; exploration forced each decision alone on the resized
inputs, never both at once, so the region after that `else:` kept batch 1 as
a static dim and the package failed on a batch of 3 that took that path.
"""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}}


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = self.layers[0](x)
        if h.sum().item() > 0.0:
            h = self.layers[0](h)
        elif h.sum().item() > 0.0:
            h = self.layers[0](h)
        return (self.head(h),)


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(1, 4, generator=torch.Generator().manual_seed(0)),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1, 1, 3)
    return [(torch.randn(rows[k % 3], 4, generator=gen) * scales[k % 4] + shifts[k % 5],) for k in range(n)]
