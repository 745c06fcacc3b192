"""Found by scripts/fuzz.py on TVM (shrunk): `torch.maximum(h, h)` and infinities.

With an +inf in x, h holds +inf and -inf; torch's head(h) is NaN. TVM wrote
the Max as a reduction starting at -3.4e38, so max(-inf, -inf) was -3.4e38,
and head(h) +inf. dycl lowers Max for TVM as `Where` (`dycl/backends/tvm_ieee.py`).
"""
import torch
from torch import nn

DYNAMIC = {}
EDGE = ('nan', 'inf', 'ninf', 'allnan', 'large')


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)
        self.depth = 2
        self.use_extra = False

    def forward(self, x):
        h = self.layers[0](x)
        h = torch.maximum(h, h)
        return (self.head(h),)


def get_model():
    torch.manual_seed(1)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(1), 1, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1,)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    """NaN, Inf, zero-size and extreme shapes, for the fuzzer's own comparison."""
    gen = torch.Generator().manual_seed(1 + 1)
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
