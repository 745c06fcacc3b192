"""Found by scripts/fuzz.py on onnxruntime (2,000-program run, seed 0, program 1818, after the fix kept in
fuzz_path_grown_width.py), shrunk by hypothesis.

acc grows in the third arm of an `if`/`elif`/`elif` chain in each iteration of an unrolled loop, and again
after it. The region of the second iteration's growing arm was reached only through the first
iteration's growing arm, so it saw acc two columns wide only: forcing each region's path through the
arm that writes acc is not enough, each decision that shapes acc must be forced both ways on the way to
the regions that read it.
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
        g = torch.tanh(x)
        acc = x[:, :1]
        h = self.layers[0](h)
        for t0 in range(2):
            if x.sum().item() > 0.0:
                h = self.layers[0](h)
            elif g.sum().item() > 0.0:
                g = self.layers[0](h)
            elif x.sum().item() < -0.5:
                h = self.layers[0](h)
                acc = torch.cat([acc, h[:, :1]], dim=1)
        if h.sum().item() > 0.0:
            h = self.layers[0](h)
        else:
            acc = torch.cat([acc, h[:, :1]], dim=1)
        return (self.head(h),)


def get_model():
    torch.manual_seed(2)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(2), 1, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1,)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    """NaN, Inf, zero-size and extreme shapes, for the fuzzer's own comparison."""
    gen = torch.Generator().manual_seed(2 + 1)
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
