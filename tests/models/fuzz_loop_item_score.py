"""Found by scripts/fuzz.py on onnxruntime (2,000-program run, seed 0, program 1361), shrunk by hypothesis.

`score = h.mean().item()` is set inside a `while` loop, and `if not (score >= 2.0):` reads it after the
loop. The builder built the loop's body on a copy of the variables' kinds and dropped what the body
made of them, so after the loop `score` was still the literal `0.0` it held before: the test was
classified shape-determined, went one way in every run, and was folded. An input whose score went the
other way got the folded arm's answer (wrong by up to 14). After a loop a name now holds what it held
before it or what the body left in it.
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

    def forward(self, x, y):
        h = self.layers[0](x) + y
        g = torch.tanh(x)
        n = 0
        flag = False
        score = 0.0
        acc = x[:, :1]
        g = self.layers[0](h)
        k0 = 0
        while k0 < 2:
            k0 += 1
            flag = True
            score = h.mean().item()
            n += 1
        for t1 in range(4):
            if (h > 0.0).all():
                n += 1
            elif g.sum().item() > 0.0:
                n += 1
                continue
            if not (score >= 2.0):
                acc = torch.cat([acc, h[:, :1]], dim=1)
                h = g * 1.0 + 0.0
                g = y + x
                return (g,)
            elif h.shape[0] > 1:
                flag = True
            return (g,)
        return (g,)


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(2))


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
