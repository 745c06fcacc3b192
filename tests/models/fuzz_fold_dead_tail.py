"""Found by scripts/fuzz.py (shrunk): code left after an `if` whose arms all return once a shape test folds.

Every input has one row, so `h.shape[0] > 1` went one way on every run and fold_shapes rewrote the
program with its `else` arm, which returns: both arms of the value decision return, and
`feats.append(h)` after them can never run. That dead region still read `feats` (a list the
live code never reads, so the host never bound it), and the conversion failed in step
fold_shapes: "region head_L36 reads feats before the host binds it".
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
        self.use_extra = True

    def forward(self, x):
        h = self.layers[0](x)
        n = 0
        feats = [h]
        if h.sum().item() > 0.0:
            n += 1
            return (self.head(h),)
        elif h.shape[0] > 1:
            h = self.layers[0](h)
        elif self.use_extra:
            h = self.layers[0](h)
            return (self.head(h),)
        feats.append(h)
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
