"""Found by scripts/fuzz.py (shrunk, `--seed 33`): a graph fused in a loop body lost what it carried.

The `continue` ending the outer loop's body stays in the host, so the rest of the body (the
`.item()`, the layer and the inner loop) ran as one fused graph per iteration. That graph gave
back only what code outside it reads (`k0`, `score`); `h`, which only the graph itself reads on the
next iteration, stayed at its first value, and `score` came out wrong (δ = 5.2 in the check).
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
        score = 0.0
        k0 = 0
        while k0 < 2:
            k0 += 1
            score = h.sum().item()
            h = self.layers[0](h)
            k1 = 0
            while k1 < 1:
                k1 += 1
                h = self.layers[0](h)
            continue
        return (score,)


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
