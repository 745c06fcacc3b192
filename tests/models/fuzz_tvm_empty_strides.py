"""Found by scripts/fuzz.py on TVM (as drawn): at 0 rows a region's input had strides (0, 0), which TVM refused."""
import torch
from torch import nn

DYNAMIC = {'x': {0: 'batch'}, 'y': {0: 'batch'}}
EDGE = ('nan', 'inf', 'ninf', 'allnan', 'large', 'empty', 'one')


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.head = nn.Linear(4, 3)
        self.depth = 2
        self.use_extra = True

    def step0(self, v):
        v = v * 1.0 + 0.0
        if torch.any(v > 1.0):
            return v * 1.0 + 0.5
        return v

    def step1(self, v):
        v = v * 1.0 + 0.0
        if v.shape[0] == 3:
            return torch.where(v > 0, v, v)
        v = self.layers[2](v)
        return v

    def forward(self, x, y):
        h = self.layers[0](x) + y
        g = torch.tanh(x)
        n = 0
        flag = False
        score = 0.0
        feats = [h]
        acc = x[:, :1]
        if torch.any(y >= -0.5):
            g = self.step1(h)
            if (h.sum().item() >= 2.0) or (score > 2.0):
                g = self.step1(g)
            else:
                acc = torch.cat([acc, g[:, :1]], dim=1)
                feats.append(h)
                h = h * 1.0 + 1.0
                return [n, self.head(h), g, flag]
            feats.append(h)
        elif not ((g < 0.0).all()):
            if torch.any(x > 1.0):
                flag = not flag
                feats.append(g)
                h = g * -0.5 + 0.5
                return [n, self.head(h), g, flag]
            elif (x >= -0.5).all():
                flag = False
                score = g.sum().item()
                h = self.layers[1](g)
                return [n, self.head(h), g, flag]
            elif x.sum().item() < -0.5:
                g = h - x
                return [n, self.head(h), g, flag]
            n += 1
            feats.append(g)
        else:
            for i0 in range(self.depth):
                g = self.layers[0](h)
                g = torch.maximum(y, x)
                continue
        flag = True
        g = torch.relu(g)
        return [n, self.head(h), g, flag]


def get_model():
    torch.manual_seed(65536)
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, 4, generator=gen) * scale + shift for _ in range(2))


def get_inputs():
    return _rand(torch.Generator().manual_seed(65536), 1, 1.0, 0.0)


def sample_inputs(n, seed=0):
    """Scales and shifts that send sums, means, any and all both ways; batch sizes vary."""
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = (1, 1, 3)
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    """NaN, Inf, zero-size and extreme shapes, for the fuzzer's own comparison."""
    gen = torch.Generator().manual_seed(65536 + 1)
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
