"""Found by scripts/fuzz.py (shrunk): a region reached at one size of the dynamic batch only.

The loop body runs only where `h.shape[0] > 3`, which of the sizes exploration
tries only the resized example's 5 rows reach. That region kept 5 as a static
dim, and the package failed at 257 rows (`Got invalid dimensions for input`).
Exploration now replays the decisions that reached it at the other sizes, so
its batch dim varies, becomes symbolic and is verified at each size.
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

    def forward(self, x):
        h = self.layers[0](x)
        g = torch.tanh(x)
        n = 0
        flag = False
        score = 0.0
        feats = [h]
        acc = x[:, :1]
        k0 = 0
        while k0 < 1 and (h.shape[0] > 3):
            k0 += 1
            h = self.layers[0](h)
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
