"""Found by scripts/fuzz.py (shrunk): an `elif` only an empty batch reaches.

`elif h.sum().item() > 0.0:` after `if h.shape[0] > 0:` runs only at 0 rows,
so its region was exported for a static [0, 4] input, where the exporter gives
`h.sum()` the shape [1, 1]: the conversion failed in step export. Replayed at
the other sizes, the region gets a symbolic batch, and it is traced at an
example without zero-size dims.
"""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}}
EDGE = ('nan', 'inf', 'ninf', 'allnan', 'large', 'empty', 'one')


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)
        self.depth = 2
        self.use_extra = False

    def forward(self, x):
        h = self.layers[0](x)
        g = torch.tanh(x)
        n = 0
        h = self.layers[0](h)
        if h.shape[0] > 0:
            h = self.layers[0](h)
        elif h.sum().item() > 0.0:
            g = self.layers[0](h)
            n += 1
        return (self.head(h),)


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(0), 1, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways; batch sizes vary."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1, 1, 3)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    """NaN, Inf, zero-size and extreme shapes, for the fuzzer's own comparison."""
    gen = torch.Generator().manual_seed(0 + 1)
    out = []
    for kind in EDGE:
        rows = {"empty": 0, "one": 1, "wide": 257}.get(kind, 1)
        xs = _rand(gen, rows, 1.0, 0.0)
        for t in xs:
            if kind == "nan":
                t[0, 0] = float("nan")
            elif kind == "inf":
                t[0, 1 % 4] = float("inf")
            elif kind == "ninf":
                t[-1, 0] = float("-inf")
            elif kind == "allnan":
                t.fill_(float("nan"))
            elif kind == "large":
                t.mul_(1e4)
        out.append(xs)
    return out
