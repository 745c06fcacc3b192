"""A shape test on a tensor a loop grows, which no exploration run passes: refused, not folded.

`if acc.shape[1] > 3:` after a loop that samples run at most once, and
exploration 2 times: acc is never 4 wide there, so the test went one way in
every run, and dycl folded it like static config (there is no dynamic input
dim). An input of 1e6 runs the loop 3 times, and the package silently took
the wrong arm. A test is now folded only where no region saw a dim vary;
here the arm no run reached is `[unreached-code]`.
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

    def forward(self, x):
        h = self.layers[0](x)
        acc = x[:, :1]
        k0 = 0
        while k0 < 3 and (not (h.abs().sum() < 10.0)):
            k0 += 1
            acc = torch.cat([acc, h[:, :1]], dim=1)
            h = h * 0.01
        if acc.shape[1] > 3:
            h = -h
        return (self.head(h), acc)


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(1))


def get_inputs():
    return _rand(torch.Generator().manual_seed(0), 2, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts: the loop runs 0 or 1 times."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (2,)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    """NaN, Inf and extreme values, for the fuzzer's own comparison."""
    gen = torch.Generator().manual_seed(1)
    out = []
    for kind in EDGE:
        xs = _rand(gen, 2, 1.0, 0.0)
        for t in xs:
            if kind == "nan":
                t[0, 0] = float("nan")
            elif kind == "inf":
                t[0, 1] = float("inf")
            elif kind == "ninf":
                t[-1, 0] = float("-inf")
            elif kind == "allnan":
                t.fill_(float("nan"))
            elif kind == "large":
                t.mul_(1e4)
        out.append(xs)
    return out
