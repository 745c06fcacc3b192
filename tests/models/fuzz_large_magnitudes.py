"""Found by scripts/fuzz.py on onnxruntime (seed 11, program 393), shrunk by hypothesis.

Squaring three times takes values to about 1e8, where float32 keeps 7 digits: onnxruntime and torch
differ by units there, and the check's absolute bound (δ ≤ 1e-4) refused a correct package. δ is now
absolute where |expected| ≤ 1 and relative to it above.
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

    def step0(self, v):
        v = v * v
        return v

    def forward(self, x):
        h = self.layers[0](x)
        for layer0 in self.layers:
            h = self.step0(h)
        return (self.head(h),)


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(0), 1, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1,)
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
