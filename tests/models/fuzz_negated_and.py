"""Found by scripts/fuzz.py (shrunk): an `if a and b:` whose arm is all dead stores.

The host writes `if c: pass` + `else: ...` as `if not c: ...`, and wrote
`if not (s > 0.0) and (x.mean() > 0.0):`, which Python reads as
`(not a) and b`: inputs with `a` true and `b` false skipped the `else:`.
Exploration runs an instrumented host that kept the `else:`, so it matched;
the samples never took that path, and the package answered wrong.
"""
import torch
from torch import nn


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x):
        h = self.layers[0](x)
        s = h.sum().item()
        if (s > 0.0) and (x.mean() > 0.0):
            h = h * 0.5  # dead: nothing reads h on this path
        else:
            h = self.layers[1](h)
            return h, s
        return x, s


def get_model():
    torch.manual_seed(0)
    return Fuzzed().eval()


def get_inputs():
    return (torch.randn(1, 4, generator=torch.Generator().manual_seed(0)),)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 4, generator=gen) * 3,) for _ in range(n)]
