"""Found by scripts/fuzz.py (shrunk, `--seed 21`): an argmax over a near-tie counted as a decision.

No decision at all: `-tanh(layers[0](x))`. At shift -3, scale 10 tanh saturates, and one sample's row
held 1.0 and 0.9999999 as its two largest values; onnxruntime's tanh rounds one of them the other way, so
the argmax of that row moved, and the check counted η = 1 and failed the conversion although δ was
3e-7. The original model does not decide between values that close: a flip within what δ allows is
no decision (`dycl.check.decides_differently`).
"""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}}
EDGE = ('nan', 'inf', 'ninf', 'allnan', 'large', 'empty', 'one', 'wide')


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)
        self.depth = 2
        self.use_extra = False

    def step0(self, v):
        v = torch.tanh(v)
        v = -v
        return v

    def forward(self, x):
        h = self.layers[0](x)
        h = self.step0(h)
        return (h,)


def get_model():
    torch.manual_seed(452)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(452), 3, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways; batch sizes vary."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (3, 1, 5)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    """NaN, Inf, zero-size and extreme shapes, for the fuzzer's own comparison."""
    gen = torch.Generator().manual_seed(452 + 1)
    out = []
    for kind in EDGE:
        rows = {"empty": 0, "one": 1, "wide": 257}.get(kind, 3)
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
