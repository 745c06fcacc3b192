"""Found by scripts/fuzz.py (shrunk): an arm that only an empty batch takes.

With a dynamic batch, exploration also runs the example at 0 rows. There
`h.sum()` is 0 and `(h > 0.0).all()` holds, so only the empty batch reached
the `elif` arm: its region saw one shape, [0, 4], and was exported for it
(the exporter then even gave `h.sum()` the shape [1, 1]). Forcing the path
that empty batch took on the other sizes gives the region every size.
"""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}}


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        h = self.layers[0](x)
        score = 0.0
        if h.sum().item() > 0.0:
            h = self.layers[0](h)
        elif (h > 0.0).all():
            score = h.sum().item()
        return h, score


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
